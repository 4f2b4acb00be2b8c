/* step.h — one optimizer step of a policy, the one every caller runs: `vla
 * train`'s loop (trainer.c), `vla bench policy` and `vla bench packing`.
 *
 * In order (docs/design.md "One training step, as data"):
 *   zero the gradients; per micro-batch the loss (its masked squared-error
 *   sum, loss_divisor 1) and backward adding into the one gradient buffer —
 *   the last micro-batch's backward starts each gradient bucket's all-reduce
 *   as its gradients become final (the policy's gradient-ready hook);
 *   the global loss normalisation: Σ err² and Σ real entries all-reduced
 *   (Σ err² where it lives — NCCL on a device; Σ real entries on the host,
 *   with this rank's pending signal riding along), loss = their ratio, and
 *   the gradient scaled once by world / Σ real entries (the buckets average,
 *   so this is Σ gradients / global count: N ranks at B/N equal one rank at
 *   B, and accumulation equals one big batch);
 *   the NaN/Inf guard (a non-finite loss or gradient stops before the update,
 *   or with skip_nonfinite skips the step);
 *   the update (vla_train_opt_step_queued: ZeRO-1 AdamW, clipping, EMA) with
 *   the loss sum, Σg² (all-reduced where it lives at several ranks), the
 *   clip factor and the guard on the backend — AdamW and the EMA skip a
 *   non-finite step there — and the host reading the loss sum and Σg² once,
 *   after the update was issued: the step's one wait on a device backend;
 *   the bits are the host-decided path's (vla_train_opt_step, kept as the
 *   tests' reference);
 *   with defer_result (no skip_nonfinite) not even that: the two
 *   sums are read later (ops.h, read_later) and the step returns with its
 *   loss, norm and verdict pending, for vla_train_step_finish — called
 *   once the next step has been issued, the device never waits for the
 *   host (docs/train.md, "A step without the host");
 *   FP8's amaxes all-reduced (MAX) through the comm backend — NCCL on the
 *   device for cuda, MPI on host memory — and the delayed-scaling update, so
 *   every rank computes the same scales; a skipped step's amaxes are dropped
 *   (docs/precision.md).
 *
 * Every call is collective over comm's ranks. Fault points (base/fault.h),
 * counted by step + 1: VLA_FAULT_TRAIN_GRADS poisons the gradients before
 * the update; VLA_FAULT_TRAIN_FP8_AMAX poisons the last rank's reduced amaxes
 * (its scales go their own way, which the checkpoint's check must catch). */
#ifndef VLA_TRAIN_STEP_H
#define VLA_TRAIN_STEP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "distributed/grad_buckets.h"
#include "policy/policy.h"
#include "train/trainer_opt.h"

/* Where a step's micro-batches come from, one at a time: next gives
 * *batch (valid until release), *last when it is the step's last, and the
 * seconds it waited for it; release (may be NULL) hands it back after its
 * backward. */
typedef struct {
    vla_status (*next)(void *user, const vla_batch **batch, bool *last, double *wait_s);
    void (*release)(void *user, const vla_batch *batch);
    void *user;
} vla_train_step_source;

typedef struct {
    vla_policy *policy;
    vla_train_opt *opt;
    /* NULL: no buckets (one rank). Else over the policy's trainable
     * parameters in parameter order, as vla_train_opt_create_for_policy
     * lays them out. */
    vla_grad_buckets *buckets;
    /* with buckets: parameter i is bucket tensor bucket_of[i], -1 when
     * frozen (vla_train_step_bucket_map, made once per run) */
    const int64_t *bucket_of;
    vla_comm *comm;             /* NULL: one process */
    /* The micro-batches: an array (source.next NULL), or a source. */
    const vla_batch *batches;
    int64_t n_batches;
    vla_train_step_source source;
    double lr;
    int64_t step;               /* 0-based; messages and fault points say step + 1 */
    bool skip_nonfinite;
    /* Return before the step's results are back (above), unless skip_nonfinite — whether a step is
     * skipped decides the next step's learning rate and bias correction, so a run that skips steps
     * reads each step's verdict before the next (the results are there at return). */
    bool defer_result;
    /* NULL, or this rank's pending signal (0: none), read after the
     * micro-batches and told to every rank with the loss sums */
    const volatile sig_atomic_t *interrupt;
} vla_train_step_in;

typedef struct {
    double loss;                /* Σ err² / Σ real entries over every rank and micro-batch */
    double grad_norm;           /* before clipping; NaN when the step was skipped */
    bool skipped;               /* non-finite, skip_nonfinite: no update, FP8 amaxes dropped */
    bool interrupted;           /* some rank had a signal */
    int signal;                 /* this rank's, as read (0: none) */
    int64_t samples, tokens, micro_batches; /* this rank's */
    double flops;               /* model FLOPs of this rank's forwards (vla_loss_info.flops) */
    double wait_s;              /* seconds this rank waited for its micro-batches */
    /* defer_result: loss, grad_norm and the verdict are not here yet (vla_train_step_finish) */
    bool pending;
    int ticket;                 /* the sums' deferred read (ops.h), -1: read already */
    double sums[2], real_entries;
} vla_train_step_out;

/* Collective: one optimizer step (above). A non-finite step without
 * skip_nonfinite is VLA_ERR_NUMERIC and changes no weight. */
/* The parameter → bucket tensor map of `buckets` (each parameter's index
 * among the trainable ones, -1 when frozen), malloc'ed; NULL when out of
 * memory. */
int64_t *vla_train_step_bucket_map(const vla_policy *p);

vla_status vla_train_step(const vla_train_step_in *in, vla_train_step_out *out);
/* A deferred step's results (out->pending): waits for its sums only (the
 * ops issued since go on), then fills loss and grad_norm and gives the
 * verdict vla_train_step would have given — VLA_ERR_NUMERIC for a
 * non-finite step (its update was skipped on the backend; a step issued
 * after it has run). in: the step's own. Nothing to do when not pending. */
vla_status vla_train_step_finish(const vla_train_step_in *in, vla_train_step_out *out);
/* A pending step given up on an error path: its deferred read closed, no verdict. */
void vla_train_step_abandon(const vla_train_step_in *in, vla_train_step_out *out);

#endif
