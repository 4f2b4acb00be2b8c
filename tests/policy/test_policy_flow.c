/* test_policy_flow.c — flow matching without a network: Beta time draws
 * (moments, ranges, keyed determinism) in both conventions, the
 * interpolant's velocity, the masked MSE and its gradient by finite
 * differences, and Euler integration against analytic endpoints. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/flow.h"

static vla_flow make(vla_flow_convention conv, int steps) {
    vla_flow f = {conv, 1.5, 1.0, 0.999, steps, 1000};
    return f;
}

static void test_time_moments(void **state) {
    enum { N = 20000 };
    /* Beta(1.5, 1): mean 0.6, variance 1.5/(2.5²·3.5) = 0.0685714 */
    const double bm = 0.6, bv = 1.5 / (2.5 * 2.5 * 3.5);
    for (int conv = 0; conv < 2; conv++) {
        vla_flow f = make((vla_flow_convention)conv, 10);
        double s = 0, ss = 0, lo = 1e9, hi = -1e9;
        for (int i = 0; i < N; i++) {
            double t = vla_flow_sample_time(&f, 42, (uint64_t)i);
            s += t, ss += t * t;
            lo = fmin(lo, t), hi = fmax(hi, t);
        }
        double mean = s / N, var = ss / N - mean * mean;
        double em = conv == VLA_FLOW_PI05 ? 0.999 * bm + 0.001 : (0.999 - bm) / 0.999;
        double ev = conv == VLA_FLOW_PI05 ? 0.999 * 0.999 * bv : bv / (0.999 * 0.999);
        double se = sqrt(ev / N);
        if (fabs(mean - em) > 5 * se) fail_msg("conv %d: mean %g, expected %g", conv, mean, em);
        if (fabs(var - ev) > 0.05 * ev) fail_msg("conv %d: var %g, expected %g", conv, var, ev);
        if (conv == VLA_FLOW_PI05) {
            assert_true(lo >= 0.001 - 1e-7 && hi <= 1.0); /* t = 1 is noise; never exactly 0 */
        } else {
            assert_true(lo >= -0.001 / 0.999 - 1e-7 && hi <= 1.0); /* t = 1 is data */
        }
    }
    /* keyed: the same (seed, key) gives the same t in any order; other keys differ */
    vla_flow f = make(VLA_FLOW_PI05, 10);
    float a = vla_flow_sample_time(&f, 42, 123456789);
    (void)vla_flow_sample_time(&f, 42, 5);
    assert_true(vla_flow_sample_time(&f, 42, 123456789) == a);
    assert_true(vla_flow_sample_time(&f, 43, 123456789) != a);
    assert_true(vla_flow_sample_time(&f, 42, 123456790) != a);
    /* the noise stream does not move with the time stream */
    float n1[8], n2[8];
    vla_flow_sample_noise(42, 9, VLA_FLOW_RNG_NOISE, n1, 8);
    (void)vla_flow_sample_time(&f, 42, 9);
    vla_flow_sample_noise(42, 9, VLA_FLOW_RNG_NOISE, n2, 8);
    assert_memory_equal(n1, n2, sizeof n1);
    vla_flow_sample_noise(42, 9, VLA_FLOW_RNG_SAMPLING, n2, 8);
    assert_true(memcmp(n1, n2, sizeof n1) != 0);
    /* standard normal noise */
    enum { M = 40000 };
    float *z = malloc(M * sizeof *z);
    vla_flow_sample_noise(1, 2, VLA_FLOW_RNG_NOISE, z, M);
    double zs = 0, zss = 0;
    for (int i = 0; i < M; i++) zs += z[i], zss += (double)z[i] * z[i];
    assert_true(fabs(zs / M) < 0.025);
    assert_true(fabs(zss / M - 1) < 0.04);
    free(z);
}

/* the backend's interpolant for one sample at time t (host buffers: the CPU backend) */
static void interp(vla_flow_convention conv, float t, const float *a, const float *n, float *x, float *u, int64_t count) {
    test_cpu_backend()->flow_interpolate(conv, x, u, a, n, &t, 1, count);
}

static void test_interpolant(void **state) {
    float a[3] = {0.5f, -1.0f, 2.0f}, n[3] = {-0.3f, 0.7f, 1.1f}, x0[3], x1[3], u[3];
    for (int conv = 0; conv < 2; conv++) {
        vla_flow f = make((vla_flow_convention)conv, 10);
        interp(f.conv, 1.0f, a, n, x1, u, 3);
        interp(f.conv, 0.0f, a, n, x0, NULL, 3);
        for (int i = 0; i < 3; i++) {
            if (conv == VLA_FLOW_PI05) {
                assert_true(x1[i] == n[i] && x0[i] == a[i]); /* t = 1 noise, t = 0 data */
                assert_true(u[i] == n[i] - a[i]);
            } else {
                assert_true(x1[i] == a[i] && x0[i] == n[i]); /* t = 1 data */
                assert_true(u[i] == a[i] - n[i]);
            }
        }
        /* the target is dx_t/dt */
        float xa[3], xb[3];
        interp(f.conv, 0.30f, a, n, xa, NULL, 3);
        interp(f.conv, 0.40f, a, n, xb, NULL, 3);
        for (int i = 0; i < 3; i++) assert_true(fabs((xb[i] - xa[i]) / 0.1 - u[i]) < 1e-5);
    }
    vla_flow g = make(VLA_FLOW_GROOT, 4);
    assert_int_equal(vla_flow_time_bucket(&g, 0.9999f), 999);
    assert_int_equal(vla_flow_time_bucket(&g, 0.25f), 250);
    assert_int_equal(vla_flow_time_bucket(&g, -0.0005f), 0); /* int() truncates toward zero */
}

static void test_masked_mse(void **state) {
    /* by hand: S=1, H=2, D=2, step 1 padded, real dim 1 → only entry (0,0) counts */
    float p[4] = {3, 5, 7, 9}, t[4] = {1, 0, 0, 0}, g[4];
    uint8_t pad1[2] = {0, 1};
    int32_t rd1[1] = {1};
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, pad1, rd1, VLA_MSE_MEAN_REAL, 0, g, NULL) == 4.0);
    assert_true(g[0] == 4.0f && g[1] == 0 && g[2] == 0 && g[3] == 0);
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, pad1, rd1, VLA_MSE_MEAN_ALL, 0, g, NULL) == 1.0);
    assert_true(g[0] == 1.0f);
    /* an explicit divisor replaces either reduction's: Σ err² / 1, ∂ = 2·err / 1 */
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, pad1, rd1, VLA_MSE_MEAN_REAL, 1.0, g, NULL) == 4.0);
    assert_true(g[0] == 4.0f && g[1] == 0 && g[3] == 0);
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, NULL, NULL, VLA_MSE_MEAN_ALL, 2.0, g, NULL) == 159.0 / 2);
    assert_true(g[0] == 2.0f && g[3] == 9.0f);
    /* no masks: plain mean over 4 entries: (4 + 25 + 49 + 81)/4 */
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, NULL, NULL, VLA_MSE_MEAN_REAL, 0, NULL, NULL) == 159.0 / 4);
    /* everything padded: 0 and a zero gradient, no division by zero */
    uint8_t all[2] = {1, 1};
    assert_true(vla_flow_masked_mse(test_cpu_backend(), p, t, 1, 2, 2, all, NULL, VLA_MSE_MEAN_REAL, 0, g, NULL) == 0.0);
    assert_true(g[0] == 0 && g[3] == 0);

    /* finite differences on a larger case, both reductions */
    enum { S = 2, H = 3, D = 4, N = S * H * D };
    float pred[N], tgt[N], grad[N];
    vla_rng r = vla_rng_stream(5, 0);
    for (int i = 0; i < N; i++) pred[i] = (float)vla_rng_normal(&r), tgt[i] = (float)vla_rng_normal(&r);
    uint8_t pad[S * H] = {0, 0, 1, 0, 0, 0};
    int32_t rd[S] = {4, 2};
    for (int red = 0; red < 2; red++) {
        vla_flow_masked_mse(test_cpu_backend(), pred, tgt, S, H, D, pad, rd, (vla_mse_reduction)red, 0, grad, NULL);
        for (int i = 0; i < N; i++) {
            float keep = pred[i];
            const float h = 1e-2f;
            pred[i] = keep + h;
            double lp = vla_flow_masked_mse(test_cpu_backend(), pred, tgt, S, H, D, pad, rd, (vla_mse_reduction)red, 0, NULL, NULL);
            pred[i] = keep - h;
            double lm = vla_flow_masked_mse(test_cpu_backend(), pred, tgt, S, H, D, pad, rd, (vla_mse_reduction)red, 0, NULL, NULL);
            pred[i] = keep;
            double fd = (lp - lm) / (2.0 * h);
            if (fabs(fd - grad[i]) > 1e-4 * (1 + fabs(fd)))
                fail_msg("red %d entry %d: fd %g, analytic %g", red, i, fd, grad[i]);
            int s = i / (H * D), hh = (i / D) % H, d = i % D;
            if (pad[s * H + hh] || d >= rd[s]) assert_true(grad[i] == 0.0f);
        }
    }
}

typedef struct {
    const float *a, *n; /* straight-path field */
    float k;            /* linear field v = k·x when a is NULL */
    float ts[64];
    int calls;
} field;

static vla_status velocity(void *ctx, float t, const float *x, float *v, int64_t n) {
    field *f = ctx;
    if (f->calls < 64) f->ts[f->calls] = t;
    f->calls++;
    for (int64_t i = 0; i < n; i++) v[i] = f->a ? f->n[i] - f->a[i] : f->k * x[i];
    return VLA_OK;
}

static vla_status groot_velocity(void *ctx, float t, const float *x, float *v, int64_t n) {
    field *f = ctx;
    if (f->calls < 64) f->ts[f->calls] = t;
    f->calls++;
    for (int64_t i = 0; i < n; i++) v[i] = f->a ? f->a[i] - f->n[i] : f->k * x[i];
    return VLA_OK;
}

static void test_euler(void **state) {
    float a[3] = {0.5f, -1.0f, 2.0f}, n[3] = {-0.3f, 0.7f, 1.1f}, x[3], v[3];
    /* π0.5: from noise at t = 1, the straight-path velocity noise − a lands on a */
    vla_flow f = make(VLA_FLOW_PI05, 10);
    field fl = {a, n, 0, {0}, 0};
    memcpy(x, n, sizeof x);
    assert_int_equal(vla_flow_euler(test_cpu_backend(), &f, velocity, &fl, x, v, 3), VLA_OK);
    for (int i = 0; i < 3; i++) assert_true(fabs(x[i] - a[i]) < 1e-5);
    assert_int_equal(fl.calls, 10);
    assert_true(fl.ts[0] == 1.0f);
    for (int k = 0; k < 10; k++) assert_true(fabs(fl.ts[k] - (1.0 - k / 10.0)) < 1e-6);
    /* GR00T: from noise at t = 0, 4 steps at t = 0, .25, .5, .75 */
    vla_flow g = make(VLA_FLOW_GROOT, 4);
    fl = (field){a, n, 0, {0}, 0};
    memcpy(x, n, sizeof x);
    assert_int_equal(vla_flow_euler(test_cpu_backend(), &g, groot_velocity, &fl, x, v, 3), VLA_OK);
    for (int i = 0; i < 3; i++) assert_true(fabs(x[i] - a[i]) < 1e-6);
    assert_int_equal(fl.calls, 4);
    for (int k = 0; k < 4; k++) {
        assert_true(fl.ts[k] == k * 0.25f);
        assert_int_equal(vla_flow_time_bucket(&g, fl.ts[k]), 250 * k);
    }

    /* linear field v = k·x: Euler gives the exact discrete product and
     * approaches the ODE's exp(∓k) as steps grow */
    const float kk = 0.7f;
    for (int steps = 10; steps <= 1000; steps *= 10) {
        f = make(VLA_FLOW_PI05, steps);
        g = make(VLA_FLOW_GROOT, steps);
        fl = (field){NULL, NULL, kk, {0}, 0};
        float y = 1.5f, yv;
        assert_int_equal(vla_flow_euler(test_cpu_backend(), &f, velocity, &fl, &y, &yv, 1), VLA_OK);
        double prod = 1.5 * pow(1.0 - kk / steps, steps); /* dt = −1/steps */
        assert_true(fabs(y - prod) < 1e-5 * steps);
        fl = (field){NULL, NULL, kk, {0}, 0};
        float w = 1.5f;
        assert_int_equal(vla_flow_euler(test_cpu_backend(), &g, groot_velocity, &fl, &w, &yv, 1), VLA_OK);
        assert_true(fabs(w - 1.5 * pow(1.0 + kk / steps, steps)) < 1e-5 * steps);
        if (steps == 1000) {
            assert_true(fabs(y - 1.5 * exp(-kk)) < 1e-3);
            assert_true(fabs(w - 1.5 * exp(kk)) < 3e-3);
        }
    }
    f = make(VLA_FLOW_PI05, 0);
    assert_int_equal(vla_flow_euler(test_cpu_backend(), &f, velocity, &fl, x, v, 3), VLA_ERR_INVALID_ARG);
}

static void test_from_config(void **state) {
    vla_policy_config c;
    vla_flow f;
    assert_int_equal(vla_policy_config_load("pi05-nano", &c), VLA_OK);
    vla_flow_from_config(&f, &c);
    assert_int_equal(f.conv, VLA_FLOW_PI05);
    assert_int_equal(f.steps, 10);
    assert_true(f.beta_alpha == 1.5 && f.beta_beta == 1.0 && f.time_scale == 0.999);
    assert_int_equal(vla_policy_config_load("groot-n1.5", &c), VLA_OK);
    vla_flow_from_config(&f, &c);
    assert_int_equal(f.conv, VLA_FLOW_GROOT);
    assert_int_equal(f.steps, 4);
    assert_int_equal(f.timestep_buckets, 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_moments),
        cmocka_unit_test(test_interpolant),
        cmocka_unit_test(test_masked_mse),
        cmocka_unit_test(test_euler),
        cmocka_unit_test(test_from_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
