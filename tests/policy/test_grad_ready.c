/* test_grad_ready.c — what the data-parallel trainer relies on from a
 * policy's backward (policy.h), for pi05 and groot:
 *   - the gradient-ready hook: every trainable parameter reported exactly
 *     once per backward, its gradient at report time equal bit for bit to
 *     the final one, more than one report (so all-reduce can overlap the
 *     rest of backward), every report on the backward's thread outside
 *     OpenMP regions, and gradients bit-identical with and without a hook;
 *   - vla_batch.loss_divisor: with divisor 1 the loss is the default loss ×
 *     real_entries and every gradient entry scales by real_entries. */
#include "test_util.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "policy/policy.h"
#include "tensor/cpu/parallel.h"

static float *step(vla_policy *p, const vla_batch *b, vla_loss_info *info) {
    vla_policy_zero_grad(p);
    if (vla_policy_loss(p, b, true, info) != VLA_OK) fail_msg("loss: %s", vla_error_message());
    if (vla_policy_backward(p) != VLA_OK) fail_msg("backward: %s", vla_error_message());
    return test_grads_get(p);
}

/* ---- the gradient-ready hook ------------------------------------------------ */

typedef struct {
    vla_policy *p;
    pthread_t thread;
    int *count;     /* [specs.n] reports per parameter */
    float *snap;    /* like p->grads: each parameter's gradient when it was reported */
    int reports, bad_thread, in_parallel, bad_range, out_of_order;
    int64_t last_first;
} hook_rec;

static void hook(void *user, int64_t first, int64_t end) {
    hook_rec *h = user;
    vla_policy *p = h->p;
    h->reports++;
    if (!pthread_equal(pthread_self(), h->thread)) h->bad_thread++;
    if (omp_in_parallel()) h->in_parallel++;
    if (first < 0 || end > p->specs.n || first >= end) {
        h->bad_range++;
        return;
    }
    if (h->reports > 1 && first > h->last_first) h->out_of_order++;
    h->last_first = first;
    if (getenv("VLA_GRAD_READY_TRACE"))
        print_message("    ready [%lld, %lld) %s .. %s\n", (long long)first, (long long)end, p->specs.items[first].name,
                      p->specs.items[end - 1].name);
    for (int64_t i = first; i < end; i++) {
        h->count[i]++;
        const vla_param *pr = &p->params[i];
        if (pr->grad) /* through the backend: the hook runs on the host */
            p->tops->to_host(h->snap + (pr->grad - p->grads), pr->grad, (size_t)pr->spec->numel * sizeof(float));
    }
}

/* One backward with the hook; returns the number of reports. */
static int hooked_backward(vla_policy *p, const vla_batch *b, const float *want) {
    hook_rec h = {0};
    h.p = p;
    h.thread = pthread_self();
    h.count = calloc((size_t)p->specs.n, sizeof(int));
    h.snap = calloc((size_t)(p->n_grad_floats > 0 ? p->n_grad_floats : 1), sizeof(float));
    p->grad_ready = hook;
    p->grad_ready_user = &h;
    vla_loss_info info;
    float *g = step(p, b, &info);
    p->grad_ready = NULL;
    p->grad_ready_user = NULL;
    assert_int_equal(h.bad_range, 0);
    assert_int_equal(h.bad_thread, 0);
    assert_int_equal(h.in_parallel, 0);
    int64_t trainable = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        if (p->params[i].grad) {
            trainable++;
            if (h.count[i] != 1)
                fail_msg("%s: trainable %s reported %d times", p->cfg.name, p->specs.items[i].name, h.count[i]);
        } else if (h.count[i] > 1) {
            fail_msg("%s: frozen %s reported %d times", p->cfg.name, p->specs.items[i].name, h.count[i]);
        }
    }
    /* the snapshot at report time is the final gradient */
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param *pr = &p->params[i];
        if (!pr->grad) continue;
        int64_t o = pr->grad - p->grads;
        if (memcmp(h.snap + o, g + o, (size_t)pr->spec->numel * sizeof(float)) != 0)
            fail_msg("%s: %s changed after it was reported ready", p->cfg.name, pr->spec->name);
    }
    /* nothing changes with a hook */
    if (want) assert_memory_equal(g, want, (size_t)p->n_grad_floats * sizeof(float));
    assert_true(trainable > 0);
    assert_true(h.reports > 1);
    print_message("  %s: %d reports per backward (%lld parameters, %lld trainable), %d out of descending order\n",
                  p->cfg.name, h.reports, (long long)p->specs.n, (long long)trainable, h.out_of_order);
    free(g), free(h.count), free(h.snap);
    return h.reports;
}

static void hook_check(const char *preset, bool all_trainable, int S) {
    vla_policy *p = test_policy_make(preset, all_trainable, 0.1);
    test_policy_batch t;
    test_policy_batch_make(p, S, &t);
    vla_loss_info info;
    float *g0 = step(p, &t.b, &info);
    /* parallel regions in every kernel, so a report from inside one would show */
    int saved = omp_get_max_threads();
    vla_parallel_always = 1;
    omp_set_num_threads(2);
    float *g2 = step(p, &t.b, &info);
    int r1 = hooked_backward(p, &t.b, g2);
    int r2 = hooked_backward(p, &t.b, g2); /* again: the bookkeeping restarts each backward */
    omp_set_num_threads(saved);
    vla_parallel_always = 0;
    assert_int_equal(r1, r2);
    hooked_backward(p, &t.b, g0);
    free(g0), free(g2);
    test_policy_batch_free(&t);
    vla_policy_free(p);
}

static void test_hook_pi05_nano(void **state) {
    (void)state;
    hook_check("pi05-nano", false, 3);
}

static void test_hook_groot_nano(void **state) {
    (void)state;
    hook_check("groot-nano", false, 3); /* published freezing: backbone frozen */
    hook_check("groot-nano", true, 3);  /* everything trains: ViT, LM, VL adapter report too */
}

static void test_hook_tiny(void **state) {
    (void)state;
    hook_check("pi05-tiny", false, 2);
    hook_check("groot-tiny", false, 2);
}

/* ---- loss divisor ------------------------------------------------------------ */

static void divisor_check(const char *preset, bool all_trainable) {
    vla_policy *p = test_policy_make(preset, all_trainable, 0.1);
    test_policy_batch t;
    test_policy_batch_make(p, 3, &t);
    vla_loss_info i0, i1;
    float *g0 = step(p, &t.b, &i0);
    t.b.loss_divisor = 1.0;
    float *g1 = step(p, &t.b, &i1);
    double n = (double)i0.real_entries;
    assert_true(i0.real_entries > 0);
    assert_true((i0.real_entries & (i0.real_entries - 1)) != 0); /* × a power of two would be exact */
    assert_true(i1.real_entries == i0.real_entries); /* still the count of real entries */
    int64_t full = (int64_t)t.b.n_samples * p->cfg.action.horizon * p->cfg.action.action_dim;
    assert_true(i0.real_entries < full); /* the batch has padded steps and dims */
    if (!(fabs(i1.loss - i0.loss * n) <= 1e-9 * fabs(i0.loss * n)))
        fail_msg("%s: loss with divisor 1 is %.17g, default × %g = %.17g", preset, i1.loss, n, i0.loss * n);
    /* Every entry scales, to 1e-5 of its own size plus 1e-5 of its tensor's
     * largest entry: f32 rounding of the sums behind an entry is relative to
     * their larger terms, so an entry that cancels to near zero (deep in the
     * ViT) keeps their absolute error. Each tensor also within 1e-5 in L2.
     * Tensors whose gradient is zero up to rounding (k_proj.bias: softmax is
     * shift-invariant) hold noise: 1e-7 of the largest gradient entry floors
     * all. (A divisor ignored or misapplied is off by a factor, far outside.) */
    int64_t nonzero = 0;
    double worst_rel = 0, worst_l2 = 0, gmax = 0;
    for (int64_t k = 0; k < p->n_grad_floats; k++) gmax = fmax(gmax, fabs((double)g0[k] * n));
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param *pr = &p->params[i];
        if (!pr->grad) continue;
        int64_t o = pr->grad - p->grads, ne = pr->spec->numel;
        double big = 0, d2 = 0, w2 = 0;
        for (int64_t k = 0; k < ne; k++) big = fmax(big, fabs((double)g0[o + k] * n));
        for (int64_t k = 0; k < ne; k++) {
            double want = (double)g0[o + k] * n, got = g1[o + k];
            if (!(fabs(got - want) <= 1e-5 * (fabs(want) + big) + 1e-7 * gmax))
                fail_msg("%s: %s[%lld] is %.9g with divisor 1, default × %g = %.9g (tensor max %.3g)", preset,
                         pr->spec->name, (long long)k, got, n, want, big);
            if (big > 1e-5 * gmax && fabs(want) > 1e-2 * big) worst_rel = fmax(worst_rel, fabs(got - want) / fabs(want));
            d2 += (got - want) * (got - want), w2 += want * want;
            nonzero += g0[o + k] != 0;
        }
        if (big > 1e-5 * gmax && w2 > 0) {
            double rel = sqrt(d2 / w2);
            if (!(rel <= 1e-5)) fail_msg("%s: %s off by %.3g (relative L2) with divisor 1", preset, pr->spec->name, rel);
            worst_l2 = fmax(worst_l2, rel);
        }
    }
    assert_true(nonzero > p->n_grad_floats / 2);
    /* a divisor of 2·n halves the default */
    t.b.loss_divisor = 2.0 * n;
    vla_loss_info i2;
    float *g2 = step(p, &t.b, &i2);
    assert_true(fabs(i2.loss - 0.5 * i0.loss) <= 1e-9 * i0.loss);
    free(g2);
    /* bad divisors are refused, not crashed on */
    t.b.loss_divisor = -1.0;
    assert_int_equal(vla_policy_loss(p, &t.b, true, &i2), VLA_ERR_INVALID_ARG);
    t.b.loss_divisor = NAN;
    assert_int_equal(vla_policy_loss(p, &t.b, true, &i2), VLA_ERR_INVALID_ARG);
    print_message("  %s: real entries %lld of %lld, loss %.6g → %.6g with divisor 1; gradient rel. error: "
                  "worst entry (of non-noise tensors, above 1%% of its tensor's max) %.2g, worst tensor (L2) %.2g\n",
                  preset, (long long)i0.real_entries, (long long)full, i0.loss, i1.loss, worst_rel, worst_l2);
    free(g0), free(g1);
    test_policy_batch_free(&t);
    vla_policy_free(p);
}

static void test_divisor_pi05(void **state) {
    (void)state;
    divisor_check("pi05-nano", false);
}

static void test_divisor_groot(void **state) {
    (void)state;
    divisor_check("groot-nano", true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_pi05_nano), cmocka_unit_test(test_hook_groot_nano),
        cmocka_unit_test(test_hook_tiny),      cmocka_unit_test(test_divisor_pi05),
        cmocka_unit_test(test_divisor_groot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
