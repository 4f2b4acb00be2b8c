/* zero1.h — ZeRO stage 1: AdamW whose moments are sharded across ranks.
 *
 * The parameters are one flat f32 vector of `numel` elements, replicated on
 * every rank. Rank r owns the contiguous shard [numel·r/N, numel·(r+1)/N) and
 * holds AdamW's exp_avg and exp_avg_sq only for it, so optimizer memory per
 * rank is 8·numel/N bytes instead of 8·numel. (With bf16 model weights the
 * shard would also hold the fp32 master copy; today parameters are f32 and
 * are their own master.) A step is:
 *   1. the averaged gradient of the shard: either already there (the gradient
 *      buckets all-reduced the whole buffer, overlapped with backward — the
 *      default) or reduce-scatter of the local gradients (MEAN);
 *   2. the global gradient norm: each rank's Σg² over its shard, all-reduced
 *      in f64, so every rank computes the same clip factor;
 *   3. AdamW on the shard (PyTorch's torch.optim.AdamW: decoupled weight
 *      decay p ← p − lr·wd·p, bias-corrected moments);
 *   4. all-gather of the updated shards into every rank's parameter vector.
 *
 * Why all-reduce buckets + local shard update by default, rather than
 * reduce-scatter: the buckets start during backward and hide behind it, and
 * with them the optimizer of rank r only has to wait for the buckets that
 * overlap its shard (vla_grad_buckets_wait_range). Reduce-scatter moves half
 * the bytes of an all-reduce but can start only once the whole gradient is
 * final; it is kept (VLA_ZERO1_REDUCE_SCATTER) for bandwidth-bound runs where
 * backward is too short to hide anything.
 *
 * State on disk: each rank writes <dir>/zero1-rank<r>.safetensors with
 * tensors exp_avg and exp_avg_sq (its shard) and metadata format, rank,
 * world, offset, count, numel, step. The loader of rank r' in a world of M
 * opens only the files whose [offset, offset+count) meets its new shard and
 * copies the overlap — the shards are re-cut for any M. */
#ifndef VLA_DIST_ZERO1_H
#define VLA_DIST_ZERO1_H

#include <stdint.h>

#include "base/status.h"
#include "dist/comm.h"
#include "dist/grad_buckets.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float max_grad_norm; /* ≤ 0: no clipping */
} vla_adamw_hparams;

typedef enum {
    VLA_ZERO1_GRADS_AVERAGED, /* grads already hold the mean over ranks (buckets) */
    VLA_ZERO1_REDUCE_SCATTER, /* grads are this rank's; reduce-scatter (MEAN) them */
} vla_zero1_grad_mode;

typedef struct vla_zero1 vla_zero1;

vla_status vla_zero1_create(vla_comm *comm, int64_t numel, vla_zero1 **out);
void vla_zero1_free(vla_zero1 *z);

/* This rank's shard [lo, hi). */
void vla_zero1_shard(const vla_zero1 *z, int64_t *lo, int64_t *hi);
/* Shard of rank r of `world` over numel elements (the cut used everywhere). */
void vla_zero1_shard_of(int64_t numel, int r, int world, int64_t *lo, int64_t *hi);
/* Optimizer-state bytes held by this rank. */
size_t vla_zero1_state_bytes(const vla_zero1 *z);
int64_t vla_zero1_step_count(const vla_zero1 *z);

/* Elements in [lo[i], hi[i]) of the flat vector get no weight decay (biases,
 * norm scales: see train/optimizer.h's rule). Replaces any earlier call. */
vla_status vla_zero1_set_no_decay(vla_zero1 *z, const int64_t *lo, const int64_t *hi, int n);

/* One optimizer step. `buckets` (may be NULL) are waited for as needed in
 * GRADS_AVERAGED mode; they are always fully completed on return.
 * grad_norm (may be NULL) receives the global norm before clipping. */
vla_status vla_zero1_step(vla_zero1 *z, float *params, float *grads, vla_zero1_grad_mode mode,
                          const vla_adamw_hparams *hp, vla_grad_buckets *buckets, double *grad_norm);

/* Write this rank's shard; returns VLA_OK on every rank only when every
 * rank's file was written. */
vla_status vla_zero1_save(vla_zero1 *z, const char *dir);
/* Read shards written by any world size and re-cut them for this one. */
vla_status vla_zero1_load(vla_zero1 *z, const char *dir);

#endif
