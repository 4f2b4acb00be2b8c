/* nccl_plan.c — padded NCCL blocks for ZeRO-1's shards (nccl_plan.h). */
#include "distributed/nccl_plan.h"

#include "distributed/zero1.h"

vla_nccl_shards vla_nccl_shards_make(int64_t numel, int world) {
    vla_nccl_shards s = {numel, 0, world < 1 ? 1 : world};
    s.block = (numel + s.world - 1) / s.world;
    if (s.block < 1) s.block = 1;
    return s;
}

void vla_nccl_shard(const vla_nccl_shards *s, int r, int64_t *lo, int64_t *hi, int64_t *padded_at) {
    vla_zero1_shard_of(s->numel, r, s->world, lo, hi);
    *padded_at = (int64_t)r * s->block;
}

int64_t vla_nccl_padded_count(const vla_nccl_shards *s) { return (int64_t)s->world * s->block; }
