/* grad_buckets.h — gradient all-reduce in buckets that overlap backward.
 *
 * The model's gradients live in one flat f32 buffer; parameter i occupies
 * [offset_i, offset_i + size_i) with offset_0 = 0 and parameters laid end to
 * end in forward order. Buckets are cut in *reverse* parameter order (the
 * order backward produces gradients), each about `bucket_bytes`, so every
 * bucket is one contiguous range of the buffer and one MPI_Iallreduce.
 *
 * Per step:
 *   vla_grad_buckets_begin(b);                // new step, nothing ready
 *   ... backward of the last layer ...
 *   vla_grad_buckets_mark_ready(b, i);        // grad of param i is final
 *   ... (each mark may start a bucket's all-reduce; it also polls the ones in
 *        flight, which is what makes OpenMPI's non-blocking collectives
 *        progress while we compute: call vla_grad_buckets_progress() between
 *        long kernels too)
 *   vla_grad_buckets_wait_all(b);             // or wait_range for one shard
 *   optimizer step
 *
 * A bucket is started once all its parameters are ready *and* every earlier
 * bucket has started, so all ranks issue the collectives in the same order
 * (MPI requires that) even if backward marks parameters out of order.
 * Results are averaged (sum / world), which makes N ranks at batch B/N equal
 * one rank at batch B when the loss is a per-sample mean.
 *
 * Gradient accumulation: call mark_ready only on the last micro-batch (the
 * earlier ones just accumulate into the buffer), or call begin + wait_all
 * with no marks — wait_all starts whatever was not started. */
#ifndef VLA_DISTRIBUTED_GRAD_BUCKETS_H
#define VLA_DISTRIBUTED_GRAD_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "tensor/ops.h"

typedef struct vla_grad_buckets vla_grad_buckets;

typedef struct {
    int n_buckets;
    int64_t total_elems;
    /* last step */
    int started_before_wait;   /* buckets started before wait_all/wait_range was called */
    int completed_before_wait; /* buckets whose reduction finished before then (true overlap) */
    double exposed_s;          /* time blocked waiting in wait_* (communication not hidden) */
    double comm_s;             /* Σ over buckets of start → observed completion */
    double first_start_s, wait_begin_s; /* vla_now_s() of the first bucket start and of wait_* */
    /* accumulated over all steps since create (or reset_stats) */
    double total_exposed_s;
    int64_t steps;
} vla_grad_buckets_stats;

/* `grads` (in `ops`'s memory) is not owned. bucket_bytes 0 picks 25 MiB.
 * With the cuda backend the buckets are all-reduced by NCCL in place on the
 * device (distributed/comm_device.h). Another backend whose memory is not
 * the host's stages each bucket: copied to a host buffer when it starts and
 * back when its MPI all-reduce completes. */
vla_status vla_grad_buckets_create(vla_comm *comm, const vla_ops *ops, float *grads, const int64_t *param_sizes,
                                   int n_params, size_t bucket_bytes, vla_grad_buckets **out);
void vla_grad_buckets_free(vla_grad_buckets *b);

int vla_grad_buckets_count(const vla_grad_buckets *b);
/* Element range [lo, hi) of bucket k (bucket 0 holds the last parameters). */
void vla_grad_buckets_range(const vla_grad_buckets *b, int k, int64_t *lo, int64_t *hi);

vla_status vla_grad_buckets_begin(vla_grad_buckets *b);
vla_status vla_grad_buckets_mark_ready(vla_grad_buckets *b, int param_index);
/* Poll buckets in flight (MPI_Test), never blocks. */
vla_status vla_grad_buckets_progress(vla_grad_buckets *b);
/* Start everything not started, wait for all, averaged. */
vla_status vla_grad_buckets_wait_all(vla_grad_buckets *b);
/* Start everything not started; wait only for the buckets that overlap the
 * element range [lo, hi) (a ZeRO-1 shard). wait_all must still follow before
 * the gradient buffer is reused. */
vla_status vla_grad_buckets_wait_range(vla_grad_buckets *b, int64_t lo, int64_t hi);

vla_grad_buckets_stats vla_grad_buckets_get_stats(const vla_grad_buckets *b);
void vla_grad_buckets_reset_stats(vla_grad_buckets *b);

#endif
