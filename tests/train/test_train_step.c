/* test_train_step.c — vla_train_step (train/step.h), the one training step
 * the trainer and the benchmarks run, on pi05-nano at one rank (the queued step on groot-nano too):
 *   - micro-batches from an array and from a source give the same step bit
 *     for bit; the counts it returns are the micro-batches'; its loss is the
 *     policy's own mean loss (Σ err² / Σ real entries) for one micro-batch;
 *   - the NaN/Inf guard: poisoned gradients stop the step with
 *     VLA_ERR_NUMERIC, or with skip_nonfinite skip it; either way no weight,
 *     optimizer count or FP8 state changes;
 *   - at one rank the step is queued on the backend (the loss sum and the
 *     gradient norm's guard stay there): the same bits as the host-decided
 *     path it replaced (loss, norm and weights of two steps), and a single
 *     host wait per step on a backend that counts them (checked);
 *   - a deferred step (defer_result) returns pending and its results come
 *     while the next step is queued: the same loss, norm and weights as the
 *     host-decided path, no host wait at all on checked; a non-finite step's
 *     verdict comes one step late and names it, its update skipped; with
 *     skip_nonfinite nothing is deferred;
 *   - FP8: a step updates the scales from its amaxes, and the amax poison
 *     fault point (which the multi-rank tests use to make ranks diverge)
 *     moves them somewhere else. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "distributed/comm.h"
#include "policy/precision.h"
#include "train/step.h"
#include "train/trainer_opt.h"

typedef struct {
    vla_policy *p;
    vla_train_opt *opt;
    vla_comm *comm;
    test_policy_batch mb[2];
    vla_batch batches[2];
} rig;

static void rig_make_preset(rig *r, const char *preset, vla_precision prec) {
    memset(r, 0, sizeof *r);
    r->p = test_policy_make(preset, true, 0.1);
    if (vla_policy_set_precision(r->p, prec, NULL) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, &r->comm), VLA_OK);
    vla_train_opt_overrides ov = {1e-3, -1, -1, 0};
    if (vla_train_opt_create_for_policy(r->comm, r->p, &ov, &r->opt) != VLA_OK) fail_msg("%s", vla_error_message());
    test_policy_batch_make(r->p, 3, &r->mb[0]);
    test_policy_batch_make(r->p, 2, &r->mb[1]);
    r->batches[0] = r->mb[0].b, r->batches[1] = r->mb[1].b;
}

static void rig_make(rig *r, vla_precision prec) { rig_make_preset(r, "pi05-nano", prec); }

static void rig_free(rig *r) {
    for (int i = 0; i < 2; i++) test_policy_batch_free(&r->mb[i]);
    vla_train_opt_free(r->opt);
    vla_policy_free(r->p);
    vla_comm_finalize(r->comm);
}

static vla_train_step_in step_in(rig *r, int64_t n_batches) {
    return (vla_train_step_in){.policy = r->p, .opt = r->opt, .comm = r->comm, .batches = r->batches,
                               .n_batches = n_batches, .lr = 1e-3};
}

/* The source: the rig's micro-batches in turn, counting releases. */
typedef struct {
    rig *r;
    int next, released;
} source_state;

static vla_status src_next(void *user, const vla_batch **b, bool *last, double *wait_s) {
    source_state *s = user;
    *b = &s->r->batches[s->next++];
    *last = s->next == 2;
    *wait_s = 0.25;
    return VLA_OK;
}

static void src_release(void *user, const vla_batch *b) {
    source_state *s = user;
    assert_ptr_equal(b, &s->r->batches[s->released]);
    s->released++;
}

static void test_array_and_source(void **state) {
    (void)state;
    rig a, b;
    rig_make(&a, VLA_PREC_FP32);
    rig_make(&b, VLA_PREC_FP32);
    vla_train_step_in ia = step_in(&a, 2), ib = step_in(&b, 0);
    source_state ss = {&b, 0, 0};
    ib.batches = NULL;
    ib.source = (vla_train_step_source){src_next, src_release, &ss};
    vla_train_step_out oa, ob;
    for (int64_t step = 0; step < 2; step++) {
        ia.step = ib.step = step;
        ss.next = ss.released = 0;
        if (vla_train_step(&ia, &oa) != VLA_OK) fail_msg("%s", vla_error_message());
        if (vla_train_step(&ib, &ob) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_int_equal(ss.released, 2);
        assert_true(oa.loss == ob.loss && oa.grad_norm == ob.grad_norm);
        assert_true(isfinite(oa.loss) && oa.loss > 0 && isfinite(oa.grad_norm));
        assert_false(oa.skipped || oa.interrupted);
        assert_int_equal(oa.micro_batches, 2);
        assert_int_equal(oa.samples, 5);
        assert_int_equal(oa.tokens, a.batches[0].n_tokens + a.batches[1].n_tokens);
        assert_true(oa.flops > 0);
        assert_true(oa.wait_s == 0 && ob.wait_s == 0.5);
    }
    assert_int_equal(vla_train_opt_updates(a.opt), 2);
    float *wa = test_weights_get(a.p), *wb = test_weights_get(b.p);
    assert_memory_equal(wa, wb, (size_t)a.p->n_weight_floats * sizeof *wa);
    free(wa), free(wb);

    /* one micro-batch: the step's loss is the policy's mean loss of it */
    vla_loss_info info;
    if (vla_policy_loss(a.p, &a.batches[0], true, &info) != VLA_OK) fail_msg("%s", vla_error_message());
    ia = step_in(&a, 1);
    ia.step = 2;
    if (vla_train_step(&ia, &oa) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(fabs(oa.loss - info.loss) <= 1e-6 * fabs(info.loss));
    rig_free(&a), rig_free(&b);
}

/* The host-decided step the queued one replaced: losses read per micro-batch,
 * the norm read back and the clip factor formed on the host
 * (vla_train_opt_step). */
static void host_step(rig *r, int64_t n_batches, double *loss, double *norm) {
    vla_policy *p = r->p;
    vla_policy_zero_grad(p);
    double sum = 0, real = 0;
    for (int64_t i = 0; i < n_batches; i++) {
        vla_batch mb = r->batches[i];
        mb.loss_divisor = 1;
        vla_loss_info info;
        if (vla_policy_loss(p, &mb, true, &info) != VLA_OK || vla_policy_backward(p) != VLA_OK)
            fail_msg("%s", vla_error_message());
        sum += info.loss, real += (double)info.real_entries;
    }
    *loss = sum / real;
    if (vla_train_opt_step(r->opt, p->weights, p->grads, 1e-3, 1.0 / real, NULL, norm) != VLA_OK)
        fail_msg("%s", vla_error_message());
}

static void test_queued_step(void **state) {
    const char *preset = *state;
    rig a, b;
    rig_make_preset(&a, preset, VLA_PREC_FP32);
    rig_make_preset(&b, preset, VLA_PREC_FP32);
    vla_train_step_in ia = step_in(&a, 2);
    const vla_ops *ops = a.p->tops;
    for (int64_t step = 0; step < 2; step++) {
        vla_train_step_out oa;
        double lb, nb;
        ia.step = step;
        int64_t w0 = ops->host_waits ? ops->host_waits() : 0;
        if (vla_train_step(&ia, &oa) != VLA_OK) fail_msg("%s", vla_error_message());
        if (ops->host_waits) /* the loss sum and Σg², read together after the update was issued */
            assert_int_equal(ops->host_waits() - w0, 1);
        host_step(&b, 2, &lb, &nb);
        assert_memory_equal(&oa.loss, &lb, sizeof lb);
        assert_memory_equal(&oa.grad_norm, &nb, sizeof nb);
    }
    float *wa = test_weights_get(a.p), *wb = test_weights_get(b.p);
    assert_memory_equal(wa, wb, (size_t)a.p->n_weight_floats * sizeof *wa);
    free(wa), free(wb);
    assert_int_equal(vla_train_opt_updates(a.opt), 2);
    rig_free(&a), rig_free(&b);
}

static void test_deferred_step(void **state) {
    (void)state;
    rig a, b;
    rig_make(&a, VLA_PREC_FP32);
    rig_make(&b, VLA_PREC_FP32);
    const vla_ops *ops = a.p->tops;
    vla_train_step_in in[3];
    vla_train_step_out out[3];
    int64_t w0 = ops->host_waits ? ops->host_waits() : 0;
    for (int64_t step = 0; step < 3; step++) {
        in[step] = step_in(&a, 2);
        in[step].step = step, in[step].defer_result = true;
        if (vla_train_step(&in[step], &out[step]) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_true(out[step].pending && isnan(out[step].loss));
        /* the step before, now that this one is queued behind it */
        if (step > 0 && vla_train_step_finish(&in[step - 1], &out[step - 1]) != VLA_OK)
            fail_msg("%s", vla_error_message());
    }
    if (vla_train_step_finish(&in[2], &out[2]) != VLA_OK) fail_msg("%s", vla_error_message());
    if (ops->host_waits) assert_int_equal(ops->host_waits() - w0, 0); /* checked: the device never drained */
    for (int step = 0; step < 3; step++) {
        double lb, nb;
        host_step(&b, 2, &lb, &nb);
        assert_false(out[step].pending);
        assert_memory_equal(&out[step].loss, &lb, sizeof lb);
        assert_memory_equal(&out[step].grad_norm, &nb, sizeof nb);
    }
    float *wa = test_weights_get(a.p), *wb = test_weights_get(b.p);
    assert_memory_equal(wa, wb, (size_t)a.p->n_weight_floats * sizeof *wa);
    free(wa), free(wb);

    /* a non-finite step 5: its verdict after step 6 was issued, its update skipped on the backend */
    float *before = test_weights_get(a.p);
    for (int64_t step = 3; step < 6; step++) {
        in[step % 3] = step_in(&a, 2);
        in[step % 3].step = step, in[step % 3].defer_result = true;
    }
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 5, 5);
    for (int64_t step = 3; step < 5; step++)
        if (vla_train_step(&in[step % 3], &out[step % 3]) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_fault_clear();
    assert_int_equal(vla_train_step_finish(&in[0], &out[0]), VLA_OK); /* step 4 */
    if (vla_train_step(&in[2], &out[2]) != VLA_OK) fail_msg("%s", vla_error_message()); /* step 6 */
    assert_int_equal(vla_train_step_finish(&in[1], &out[1]), VLA_ERR_NUMERIC);      /* step 5 */
    assert_non_null(strstr(vla_error_message(), "step 5: non-finite loss or gradients"));
    assert_null(strstr(vla_error_message(), "step 6")); /* read a step late: no later step named in it */
    assert_int_equal(vla_train_step_finish(&in[2], &out[2]), VLA_OK);
    assert_int_equal(vla_train_opt_updates(a.opt), 5); /* 1–4 and 6 */
    float *after = test_weights_get(a.p);
    for (int64_t i = 0; i < a.p->n_weight_floats; i++) assert_true(isfinite(after[i]));
    assert_true(memcmp(before, after, (size_t)a.p->n_weight_floats * sizeof *after) != 0);
    free(before), free(after);

    /* skip_nonfinite: each verdict decides the next step's lr and bias correction, so none is deferred */
    vla_train_step_in s = step_in(&a, 2);
    s.defer_result = true, s.skip_nonfinite = true, s.step = 6;
    vla_train_step_out so;
    if (vla_train_step(&s, &so) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_false(so.pending);
    assert_true(isfinite(so.loss));
    rig_free(&a), rig_free(&b);
}

static void test_nonfinite_guard(void **state) {
    (void)state;
    rig r;
    rig_make(&r, VLA_PREC_FP8);
    float *w0 = test_weights_get(r.p);
    int64_t n0, n1;
    float *fp0 = vla_policy_fp8_state_to_host(r.p, &n0);
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 1, 1);
    vla_train_step_in in = step_in(&r, 2);
    vla_train_step_out out;
    assert_int_equal(vla_train_step(&in, &out), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "step 1: non-finite loss or gradients"));
    in.skip_nonfinite = true;
    assert_int_equal(vla_train_step(&in, &out), VLA_OK);
    vla_fault_clear();
    assert_true(out.skipped && isnan(out.grad_norm) && isfinite(out.loss));
    assert_int_equal(vla_train_opt_updates(r.opt), 0);
    float *w1 = test_weights_get(r.p), *fp1 = vla_policy_fp8_state_to_host(r.p, &n1);
    assert_memory_equal(w0, w1, (size_t)r.p->n_weight_floats * sizeof *w0);
    assert_int_equal(n0, n1);
    assert_memory_equal(fp0, fp1, (size_t)n0 * sizeof *fp0); /* the skipped step's amaxes dropped */
    free(w0), free(w1), free(fp0), free(fp1);
    rig_free(&r);
}

static void test_fp8_amax(void **state) {
    (void)state;
    rig a, b;
    rig_make(&a, VLA_PREC_FP8);
    rig_make(&b, VLA_PREC_FP8);
    int64_t n, na, nb;
    float *fp0 = vla_policy_fp8_state_to_host(a.p, &n);
    vla_train_step_in ia = step_in(&a, 2), ib = step_in(&b, 2);
    vla_train_step_out out;
    if (vla_train_step(&ia, &out) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_fault_set(VLA_FAULT_TRAIN_FP8_AMAX, VLA_FAULT_POISON, 1, 1);
    vla_status st = vla_train_step(&ib, &out);
    vla_fault_clear();
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    float *fa = vla_policy_fp8_state_to_host(a.p, &na), *fb = vla_policy_fp8_state_to_host(b.p, &nb);
    assert_int_equal(na, n);
    assert_int_equal(nb, n);
    assert_true(memcmp(fp0, fa, (size_t)n * sizeof *fa) != 0); /* the scales moved */
    assert_true(memcmp(fa, fb, (size_t)n * sizeof *fa) != 0);  /* and the poisoned ones elsewhere */
    free(fp0), free(fa), free(fb);
    rig_free(&a), rig_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_array_and_source),
        cmocka_unit_test_prestate(test_queued_step, "pi05-nano"),
        cmocka_unit_test_prestate(test_queued_step, "groot-nano"),
        cmocka_unit_test(test_deferred_step),
        cmocka_unit_test(test_nonfinite_guard),
        cmocka_unit_test(test_fp8_amax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
