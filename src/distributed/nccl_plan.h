/* nccl_plan.h — ZeRO-1's unequal shards on NCCL's equal blocks (plain C,
 * tested on the CPU: tests/distributed/test_nccl_plan.c).
 *
 * vla_zero1_shard_of cuts numel elements into world shards whose sizes
 * differ by at most one. ncclReduceScatter and ncclAllGather move equal
 * blocks, so the device path lays the flat space out padded: rank r's shard
 * [lo_r, hi_r) sits at r·block of a buffer of world·block elements, block =
 * ceil(numel / world), the tail of each block zero (zeros reduce to zeros
 * and are never copied back). A reduce-scatter packs the gradient into that
 * layout (one device copy per rank's range), reduces into this rank's block
 * and keeps its first hi − lo elements; an all-gather puts this rank's
 * updated shard at rank·block and unpacks every other rank's block. */
#ifndef VLA_DISTRIBUTED_NCCL_PLAN_H
#define VLA_DISTRIBUTED_NCCL_PLAN_H

#include <stdint.h>

typedef struct {
    int64_t numel, block;
    int world;
} vla_nccl_shards;

vla_nccl_shards vla_nccl_shards_make(int64_t numel, int world);
/* rank r's range of the flat space, and where it sits in the padded buffer */
void vla_nccl_shard(const vla_nccl_shards *s, int r, int64_t *lo, int64_t *hi, int64_t *padded_at);
/* elements of the padded buffer (world·block) */
int64_t vla_nccl_padded_count(const vla_nccl_shards *s);

#endif
