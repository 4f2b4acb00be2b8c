/* step.c — one optimizer step of a policy (see step.h). */
#include "train/step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fault.h"
#include "base/log.h"
#include "distributed/comm_device.h"
#include "policy/precision.h"
#include "tensor/profile.h"

/* The gradient-ready hook's state: parameter i is bucket tensor bucket_of[i]
 * (its index among the trainable parameters), -1 when frozen. */
typedef struct {
    vla_grad_buckets *gb;
    const int64_t *bucket_of;
    vla_status st; /* a failed mark_ready inside the hook, reported after backward */
} ready_state;

/* The policy's gradient-ready hook: parameters [first, end) are final. */
static void on_grads_ready(void *user, int64_t first, int64_t end) {
    ready_state *r = user;
    for (int64_t i = first; i < end; i++)
        if (r->bucket_of[i] >= 0 && r->st == VLA_OK) r->st = vla_grad_buckets_mark_ready(r->gb, (int)r->bucket_of[i]);
}

/* The source over an array of micro-batches. */
typedef struct {
    const vla_batch *b;
    int64_t n, next;
} batch_array;

static vla_status array_next(void *user, const vla_batch **batch, bool *last, double *wait_s) {
    batch_array *a = user;
    *batch = &a->b[a->next++];
    *last = a->next == a->n;
    *wait_s = 0;
    return VLA_OK;
}

/* Forward and backward of every micro-batch of the step; gradients add up
 * in the policy's buffer, the loss sums in the backend's (policy->loss_sum),
 * *real gets Σ real entries. */
static vla_status forward_backward(const vla_train_step_in *in, vla_train_step_source src, ready_state *ready,
                                   double *real, vla_train_step_out *out) {
    vla_policy *p = in->policy;
    vla_policy_zero_grad(p);
    if (in->buckets) VLA_TRY(vla_grad_buckets_begin(in->buckets));
    for (bool last = false; !last;) {
        const vla_batch *b = NULL;
        double w = 0;
        VLA_TRY(src.next(src.user, &b, &last, &w));
        out->wait_s += w;
        vla_batch mb = *b;
        mb.loss_divisor = 1; /* the sum: divided by the global count after the all-reduce */
        vla_loss_info info;
        vla_profile_phase("forward");
        vla_status st = vla_policy_loss(p, &mb, true, &info);
        vla_profile_phase("backward");
        /* the last micro-batch's backward starts each bucket's all-reduce as its gradients become final */
        bool hook = last && in->buckets;
        p->grad_ready = hook ? on_grads_ready : NULL;
        p->grad_ready_user = hook ? ready : NULL;
        if (st == VLA_OK) st = vla_policy_backward(p);
        p->grad_ready = NULL, p->grad_ready_user = NULL;
        if (st == VLA_OK && ready->st != VLA_OK) st = ready->st;
        out->samples += mb.n_samples;
        out->micro_batches++, out->tokens += mb.n_tokens;
        if (src.release) src.release(src.user, b);
        if (st != VLA_OK) return vla_error_context(st, "step %lld", (long long)in->step + 1);
        *real += (double)info.real_entries;
        out->flops += info.flops;
    }
    return VLA_OK;
}

/* The NaN/Inf guard's verdict: a non-finite loss or gradient stops before
 * the update (cs, VLA_ERR_NUMERIC), or with skip_nonfinite skips the step. */
static vla_status verdict(const vla_train_step_in *in, vla_status cs, vla_train_step_out *out) {
    if (cs != VLA_ERR_NUMERIC) return cs;
    if (!in->skip_nonfinite) {
        char why[512];
        snprintf(why, sizeof why, "%s", vla_error_message());
        return vla_error(VLA_ERR_NUMERIC,
                         "step %lld: non-finite loss or gradients (%s); stopping before the update so nothing "
                         "non-finite reaches a checkpoint (pass --skip_nonfinite=true to skip such steps)",
                         (long long)in->step + 1, why);
    }
    out->skipped = true;
    return VLA_OK;
}

/* Tests' fault point: NaN into the gradients before the update. */
static vla_status poison_grads(const vla_train_step_in *in) {
    vla_policy *p = in->policy;
    if (vla_fault_at(VLA_FAULT_TRAIN_GRADS, in->step + 1) == VLA_FAULT_POISON && p->n_grad_floats > 0) {
        if (in->buckets) VLA_TRY(vla_grad_buckets_wait_all(in->buckets));
        const float nan = NAN;
        p->tops->to_device(p->grads, &nan, sizeof nan);
    }
    return VLA_OK;
}

/* The verdict of a queued step from its sums (out->sums: Σ err², Σg²). */
static vla_status queued_result(const vla_train_step_in *in, vla_train_step_out *out) {
    double real_entries = out->real_entries;
    out->loss = real_entries > 0 ? out->sums[0] / real_entries : 0;
    bool loss_ok = isfinite(out->sums[0]); /* what the backend's guard checked (clip_coef's `also`) */
    vla_status cs = vla_train_opt_step_result(in->opt, out->sums[1], loss_ok, &out->grad_norm);
    if (!loss_ok) {
        out->grad_norm = NAN;
        cs = vla_error(VLA_ERR_NUMERIC, "loss is %g", out->loss);
    }
    return verdict(in, cs, out);
}

/* The optimizer step queued on the backend: the loss sum and
 * Σg² meet the guard there, and the host reads both once, after the update
 * has been issued — the step's only wait; with defer_result not even then:
 * their read is queued and the step returns pending. */
static vla_status update_queued(const vla_train_step_in *in, double *sums_dev, double real_entries, double grad_mul,
                                vla_train_step_out *out) {
    vla_policy *p = in->policy;
    VLA_TRY(poison_grads(in));
    VLA_TRY(vla_train_opt_step_queued(in->opt, p->weights, p->grads, in->lr, grad_mul, in->buckets));
    out->real_entries = real_entries;
    if (in->defer_result && !in->skip_nonfinite) { /* read later, while the next step runs */
        out->pending = true, out->loss = NAN; /* (grad_norm is NaN already) */
        out->ticket = vla_ops_read_later(p->tops, out->sums, sums_dev, sizeof out->sums);
        return VLA_OK;
    }
    p->tops->to_host(out->sums, sums_dev, sizeof out->sums);
    return queued_result(in, out);
}

/* After the update: every rank's amaxes of the step reduced (MAX) where
 * they live — NCCL on the device, MPI on host memory; one rank has nothing
 * to reduce unless VLA_NCCL=1 runs the one-rank device path
 * (distributed/comm_device.h) — then the delayed-scaling update, so every
 * rank computes the same scales. A skipped step's amaxes are dropped: the
 * step leaves no trace. */
static vla_status fp8_after_step(const vla_train_step_in *in, bool skipped) {
    vla_policy *p = in->policy;
    int64_t n;
    float *amax = vla_policy_fp8_amax(p, &n);
    if (n == 0) return VLA_OK;
    if (skipped) {
        vla_policy_fp8_discard_step(p);
        return VLA_OK;
    }
    const vla_ops *ops = p->tops;
    if (in->comm) VLA_TRY(vla_comm_allreduce_backend(in->comm, ops, amax, n, VLA_COMM_F32, VLA_COMM_MAX));
    int rank = in->comm ? vla_comm_rank(in->comm) : 0, world = in->comm ? vla_comm_world(in->comm) : 1;
    if (vla_fault_at(VLA_FAULT_TRAIN_FP8_AMAX, in->step + 1) == VLA_FAULT_POISON && rank == world - 1) {
        float a0; /* tests: this rank's scales go their own way */
        ops->to_host(&a0, amax, sizeof a0);
        a0 = 2.0f * a0 + 1.0f;
        ops->to_device(amax, &a0, sizeof a0);
    }
    vla_policy_fp8_update(p);
    return VLA_OK;
}

int64_t *vla_train_step_bucket_map(const vla_policy *p) {
    int64_t *m = malloc((size_t)(p->specs.n > 0 ? p->specs.n : 1) * sizeof *m);
    if (!m) return NULL;
    int64_t n = 0;
    for (int64_t i = 0; i < p->specs.n; i++) m[i] = p->params[i].grad ? n++ : -1;
    return m;
}

static vla_status step(const vla_train_step_in *in, vla_train_step_out *out);

/* The step, its ops in phases for a profile (tensor/profile.h): zero_grad, forward, backward, update. */
vla_status vla_train_step(const vla_train_step_in *in, vla_train_step_out *out) {
    vla_profile_phase("zero_grad"); /* until the first forward: gradients zeroed, the sums reset */
    vla_status st = step(in, out);
    vla_profile_phase(NULL);
    return st;
}

vla_status vla_train_step_finish(const vla_train_step_in *in, vla_train_step_out *out) {
    if (!out->pending) return VLA_OK;
    out->pending = false;
    vla_ops_read_collect(in->policy->tops, out->ticket, out->sums);
    out->ticket = -1;
    return queued_result(in, out);
}

void vla_train_step_abandon(const vla_train_step_in *in, vla_train_step_out *out) {
    if (!out->pending) return;
    out->pending = false;
    vla_ops_read_collect(in->policy->tops, out->ticket, out->sums);
    out->ticket = -1;
}

static vla_status step(const vla_train_step_in *in, vla_train_step_out *out) {
    *out = (vla_train_step_out){.grad_norm = NAN, .ticket = -1};
    batch_array arr = {in->batches, in->n_batches, 0};
    vla_train_step_source src = in->source;
    if (!src.next) {
        if (in->n_batches < 1) return vla_error(VLA_ERR_INVALID_ARG, "train step: no micro-batches");
        src = (vla_train_step_source){array_next, NULL, &arr};
    }
    if (in->buckets && !in->bucket_of)
        return vla_error(VLA_ERR_INVALID_ARG, "train step: gradient buckets without their parameter map");
    ready_state ready = {in->buckets, in->bucket_of, VLA_OK};
    int world = in->comm ? vla_comm_world(in->comm) : 1;
    /* the loss sum stays on the backend until the update has been issued (and after: defer_result) */
    double *sums_dev = vla_train_opt_step_sums(in->opt);
    if (!sums_dev) return vla_error(VLA_ERR_NOMEM, "train step: the step's sums");
    const double zero[2] = {0, 0};
    in->policy->tops->to_device(sums_dev, zero, sizeof zero);
    double sums[2] = {0, 0}; /* Σ real entries, ranks interrupted (host values) */
    in->policy->loss_sum = sums_dev;
    vla_policy_weights_hold(in->policy); /* released before the update changes them */
    /* the copies the update made stale, cast now: the step's captured regions find them current
     * (policy/groot.c, "a training step's captured regions") */
    vla_policy_weights_refresh(in->policy);
    vla_status st = forward_backward(in, src, &ready, &sums[0], out);
    vla_profile_phase("update");
    vla_policy_weights_release(in->policy);
    in->policy->loss_sum = NULL;
    VLA_TRY(st);
    /* an interrupt (a per-process flag) rides on the real entries' all-reduce, host values both: every
     * rank stops after the same step. The loss sum is all-reduced where it lives (NCCL on a device). */
    out->signal = in->interrupt ? (int)*in->interrupt : 0;
    sums[1] = out->signal ? 1 : 0;
    if (world > 1) {
        VLA_TRY(vla_comm_allreduce(in->comm, sums, sums, 2, VLA_COMM_F64, VLA_COMM_SUM));
        VLA_TRY(vla_comm_allreduce_backend(in->comm, in->policy->tops, sums_dev, 1, VLA_COMM_F64, VLA_COMM_SUM));
    }
    out->interrupted = sums[1] > 0;
    double grad_mul = (double)world / (sums[0] > 0 ? sums[0] : 1);
    VLA_TRY(update_queued(in, sums_dev, sums[0], grad_mul, out));
    vla_policy_trainable_changed(in->policy); /* copies a caller's outer hold made are stale now (not frozen ones) */
    return fp8_after_step(in, out->skipped);
}
