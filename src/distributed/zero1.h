/* zero1.h — ZeRO stage 1: AdamW whose moments (and EMA) are sharded across
 * ranks. It is the product's only AdamW: at world 1 the one shard holds
 * everything.
 *
 * Flat optimizer space. The optimizer sees the trainable tensors as segments:
 * segment i covers params[offset_i, offset_i + numel_i) in the parameter
 * buffer (parameter layout; gaps between segments are frozen tensors that get
 * no state) and grads[flat_i, flat_i + numel_i) in the gradient buffer, where
 * flat_i = Σ_{j<i} numel_j (gradients are compact). The flat space of
 * numel = Σ numel_i elements is what is sharded: rank r owns
 * [numel·r/N, numel·(r+1)/N) and holds exp_avg, exp_avg_sq (and the EMA) only
 * for it, so optimizer memory per rank is 8·numel/N bytes (12 with EMA)
 * instead of 8·numel. Parameters are replicated on every rank (f32; they are
 * their own master copy). A step is:
 *   1. the averaged gradient of the shard: either already there (the gradient
 *      buckets all-reduced the whole buffer, overlapped with backward — the
 *      default) or reduce-scatter of the local gradients (MEAN);
 *   2. multiplication by grad_mul (global loss normalisation);
 *   3. the global gradient norm: each rank's Σg² over its shard with a fixed
 *      blocking (thread-count invariant), all-reduced in f64, so every rank
 *      computes the same clip factor — and every rank skips a non-finite step;
 *   4. AdamW on the shard, exactly torch.optim.AdamW 1.13 (single-tensor
 *      path): scalars formed in double and rounded to f32 once,
 *        p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *        p ← p − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
 *      with weight decay only on segments whose decay flag is set, then the
 *      EMA ema ← d·ema + (1−d)·p when enabled (openpi);
 *   5. all-gather of the updated shards into every rank's parameters (in
 *      place when there is one segment at offset 0; otherwise through a flat
 *      scratch of numel floats, scattered back by segment).
 *
 * Why all-reduce buckets + local shard update by default, rather than
 * reduce-scatter: the buckets start during backward and hide behind it, and
 * with them the optimizer of rank r only has to wait for the buckets that
 * overlap its shard (vla_grad_buckets_wait_range). Reduce-scatter moves half
 * the bytes of an all-reduce but can start only once the whole gradient is
 * final; it is kept (VLA_ZERO1_REDUCE_SCATTER) for bandwidth-bound runs where
 * backward is too short to hide anything.
 *
 * State on disk: each rank writes <dir>/zero1-rank<r>.safetensors (atomic)
 * with tensors exp_avg, exp_avg_sq and, with EMA on, ema (its shard), and
 * metadata format, rank, world, offset, count, numel, step, layout (a hash of
 * the segments). The loader of rank r' in a world of M opens only the files
 * whose [offset, offset+count) meets its new shard and copies the overlap —
 * the shards are re-cut for any M. */
#ifndef VLA_DISTRIBUTED_ZERO1_H
#define VLA_DISTRIBUTED_ZERO1_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "distributed/grad_buckets.h"
#include "tensor/ops.h"

/* Scalars are double where torch forms them in double from Python floats (lr,
 * weight decay, betas, eps: 1 − β and the bias corrections are computed in
 * double, then rounded to f32 once, which is what makes world 1 match torch
 * bit for bit). */
typedef struct {
    double lr;
    double beta1, beta2, eps;
    double weight_decay;
    float max_grad_norm; /* ≤ 0: no clipping */
    double grad_mul;     /* gradients are multiplied by it first; 0 is treated as 1 */
} vla_adamw_hparams;

/* Segment i: params[offset, offset + numel) in parameter layout; its gradient is
 * grads[flat_i, flat_i + numel) with flat_i = Σ_{j<i} numel_j. */
typedef struct {
    int64_t offset, numel;
    int decay; /* 1: weight decay applies */
} vla_zero1_segment;

typedef enum {
    VLA_ZERO1_GRADS_AVERAGED, /* grads already hold the mean over ranks (buckets) */
    VLA_ZERO1_REDUCE_SCATTER, /* grads are this rank's; reduce-scatter (MEAN) them */
} vla_zero1_grad_mode;

typedef struct vla_zero1 vla_zero1;

/* Segments must not overlap in the parameter buffer; they are copied.
 * Parameters, gradients, moments and the EMA live in `ops`'s memory and
 * are updated through its slots (adamw, ema, sum_squares, …); the MPI
 * collectives run on that memory directly when the backend's memory is
 * the host's; with the cuda backend the reduce-scatter and all-gather are
 * NCCL's on the device (distributed/comm_device.h, nccl_plan.h: equal
 * padded blocks); another backend off the host stages through host buffers. */
vla_status vla_zero1_create_segments(vla_comm *comm, const vla_ops *ops, const vla_zero1_segment *seg, int n_seg,
                                     vla_zero1 **out);
/* = one segment {0, numel, decay 1}: parameters and gradients share the flat layout. */
vla_status vla_zero1_create(vla_comm *comm, const vla_ops *ops, int64_t numel, vla_zero1 **out);
void vla_zero1_free(vla_zero1 *z);

/* Flat size Σ numel_i. */
int64_t vla_zero1_numel(const vla_zero1 *z);
/* This rank's shard [lo, hi) of the flat space. */
void vla_zero1_shard(const vla_zero1 *z, int64_t *lo, int64_t *hi);
/* Shard of rank r of `world` over numel elements (the cut used everywhere). */
void vla_zero1_shard_of(int64_t numel, int r, int world, int64_t *lo, int64_t *hi);
/* Optimizer-state bytes held by this rank (moments, and the EMA when on). */
size_t vla_zero1_state_bytes(const vla_zero1 *z);
int64_t vla_zero1_step_count(const vla_zero1 *z);

/* EMA of the parameters over this rank's shard, updated after every successful
 * step: ema ← d·ema + (1−d)·p (openpi), initialised from `params` (parameter
 * layout, backend memory). decay in (0, 1). Enable before vla_zero1_load to
 * resume an EMA. */
vla_status vla_zero1_ema_enable(vla_zero1 *z, double decay, const float *params);
double vla_zero1_ema_decay(const vla_zero1 *z); /* 0: none */
/* Collective: every rank receives the whole EMA, written into `out` — HOST
 * memory in parameter layout (what a checkpoint writes; only the segments'
 * elements are written, gaps untouched). */
vla_status vla_zero1_ema_gather(vla_zero1 *z, float *out);
/* Collective NaN/Inf guard before a checkpoint: the moments and EMA of every
 * shard must be finite; VLA_ERR_NUMERIC (on every rank) names the rank, the
 * flat index, the segment and the element. */
vla_status vla_zero1_check_finite(vla_zero1 *z);

/* Backend memory one rank's optimizer holds for numel trained parameters over `world` ranks: the two
 * moments, the EMA (ema), and the gradient shard the update scales into when grad_mul ≠ 1 — every
 * training step, whose loss is normalised by its count — what a memory budget adds beside the policy's
 * own (policy/memory.h: vla train's and vla bench policy's checks, vla plan). NCCL's padded buffers
 * (several ranks on a device) are not counted. */
double vla_zero1_budget_bytes(int64_t numel, int world, bool ema);

/* One optimizer step (collective). grads are flat/compact, params in parameter
 * layout; grads are not modified (a scratch shard is used when grad_mul ≠ 1 or
 * in REDUCE_SCATTER mode). `buckets` (may be NULL) are waited for as needed in
 * GRADS_AVERAGED mode; they are always fully completed on return. grad_norm
 * (may be NULL) receives the global norm of grad_mul·g before clipping. A
 * non-finite norm returns VLA_ERR_NUMERIC on every rank without changing
 * params, moments, EMA or the step count. Bad hyper-parameters are
 * VLA_ERR_INVALID_ARG. */
vla_status vla_zero1_step(vla_zero1 *z, float *params, float *grads, vla_zero1_grad_mode mode,
                          const vla_adamw_hparams *hp, vla_grad_buckets *buckets, double *grad_norm);

/* The same step with nothing read back (GRADS_AVERAGED): Σg² is summed on
 * the backend into *sumsq (backend memory, one double; at several ranks
 * all-reduced where it lives — NCCL on a device, MPI on host memory; the
 * same bits as vla_zero1_step's), the clip factor and the NaN/Inf check
 * become the backend's guard (ops->clip_coef, which also checks *also —
 * backend memory, NULL: nothing — for finiteness: the step's loss, the
 * same value on every rank), and
 * AdamW and the EMA read the guard there, so a non-finite step changes no
 * parameter, moment or EMA value. The step count advances; the caller reads
 * *sumsq (and *also) when it reads its step's results and passes them to
 * vla_zero1_step_queued_result, which takes the count back and returns
 * VLA_ERR_NUMERIC when the guard was not finite. A device backend runs
 * the whole step without a host wait. */
vla_status vla_zero1_step_queued(vla_zero1 *z, float *params, float *grads, const vla_adamw_hparams *hp,
                                 vla_grad_buckets *buckets, const double *also, double *sumsq);
/* grad_norm = sqrt(sumsq) (may be NULL); see vla_zero1_step_queued. */
vla_status vla_zero1_step_queued_result(vla_zero1 *z, double sumsq, bool also_finite, double *grad_norm);

/* File name of rank r's shard relative to the save directory
 * ("zero1-rank00003.safetensors"). */
void vla_zero1_shard_file(int rank, char *buf, size_t cap);
/* Write this rank's shard (refused if it holds NaN/Inf); returns VLA_OK on
 * every rank only when every rank's file was written. */
vla_status vla_zero1_save(vla_zero1 *z, const char *dir);
/* Read shards written by any world size and re-cut them for this one. With the
 * EMA on, the files must hold it (the error names the file). */
vla_status vla_zero1_load(vla_zero1 *z, const char *dir);

#endif
