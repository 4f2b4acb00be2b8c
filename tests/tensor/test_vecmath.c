/* test_vecmath.c — the vectorisable kernels of tensor/cpu/vecmath.h against libm:
 * vla_expf within 2 ulp of expf over its whole finite range (every 97th
 * float bit pattern in [−103, 88.7], plus the special values), the GELU and
 * SiLU forms against their tanh/exp definitions in double, and bitwise
 * agreement between a vectorised loop and scalar calls. */
#include "test_util.h"
#include "tensor/cpu/vecmath.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t ulp_distance(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    int64_t d = (int64_t)ia - (int64_t)ib;
    return d < 0 ? -d : d;
}

static void test_expf_ulp(void **state) {
    (void)state;
    int64_t worst = 0;
    float worst_x = 0;
    /* walk bit patterns: positive floats up to 88.7, negative down to −103 */
    for (int sign = 0; sign < 2; sign++) {
        float lim = sign ? 103.0f : 88.7f;
        for (uint32_t u = 0;; u += 97) {
            float x;
            memcpy(&x, &u, 4);
            if (x > lim) break;
            if (sign) x = -x;
            float ref = expf(x);
            if (ref < FLT_MIN) continue; /* subnormal results: checked below, loosely */
            int64_t d = ulp_distance(vla_expf(x), ref);
            if (d > worst) worst = d, worst_x = x;
        }
    }
    if (worst > 2) fail_msg("vla_expf is %lld ulp from expf at x = %.9g", (long long)worst, (double)worst_x);
    /* subnormal range: relative error small against the value, zero at the end */
    for (float x = -87.5f; x > -103.0f; x -= 0.37f) {
        double ref = exp((double)x);
        assert_true(fabs((double)vla_expf(x) - ref) <= 1e-2 * ref + 1.5e-45);
    }
    assert_true(vla_expf(-INFINITY) == 0.0f);
    assert_true(vla_expf(-104.0f) == 0.0f);
    assert_true(vla_expf(-1000.0f) == 0.0f);
    assert_true(vla_expf(0.0f) == 1.0f);
    assert_true(isinf(vla_expf(89.0f)) && vla_expf(89.0f) > 0);
    assert_true(isinf(vla_expf(INFINITY)));
    assert_true(isnan(vla_expf(NAN)));
    assert_true(vla_expf(88.7f) < INFINITY);
}

static void test_gelu_silu(void **state) {
    (void)state;
    double worst_v = 0, worst_g = 0, worst_s = 0;
    for (double x = -30.0; x <= 30.0; x += 1.0 / 1024) {
        float xf = (float)x;
        double xd = xf;
        double u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
        double th = tanh(u), du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * xd * xd);
        /* the sigmoid form in double (1 + tanh u cancels where u << 0) ... */
        double e = exp(-2.0 * u), sg = 1.0 / (1.0 + e);
        double v = xd * sg;
        double g = sg + 2.0 * xd * sg * (e * sg) * du;
        /* ... is the tanh definition where that is accurate */
        if (fabs(u) < 3.0) {
            assert_true(fabs(v - 0.5 * xd * (1.0 + th)) <= 1e-12 * (1 + fabs(v)));
            assert_true(fabs(g - (0.5 * (1.0 + th) + 0.5 * xd * (1.0 - th * th) * du)) <= 1e-12 * (1 + fabs(g)));
        }
        double s = xd / (1.0 + exp(-xd));
        /* u itself is rounded in f32, and e^{−2u} turns its relative error
         * into |2u| times that: compare per unit of (1 + |2u|) */
        double cond = 1.0 + fabs(2.0 * u);
        double ev = fabs(vla_gelu_tanhf(xf) - v) / (fabs(v) + 1e-30) / cond;
        /* the derivative crosses 0 near x = −0.75 by cancellation of its two
         * terms: measure against their magnitudes */
        double gmag = sg + fabs(2.0 * xd * sg * (e * sg) * du);
        double eg = fabs(vla_gelu_tanh_gradf(xf) - g) / (gmag + 1e-30) / cond;
        double es = fabs(xf * vla_sigmoidf(xf) - s) / (fabs(s) + 1e-30);
        if (fabs(v) > 1e-36 && ev > worst_v) worst_v = ev;
        if (gmag > 1e-36 && eg > worst_g) worst_g = eg;
        if (fabs(s) > 1e-36 && es > worst_s) worst_s = es;
    }
    if (worst_v > 1e-6) fail_msg("gelu: relative error %g", worst_v);
    if (worst_g > 1e-6) fail_msg("gelu grad: relative error %g", worst_g);
    if (worst_s > 1e-6) fail_msg("silu: relative error %g", worst_s);
    assert_true(vla_gelu_tanhf(-100.0f) == 0.0f);
    assert_true(vla_gelu_tanhf(100.0f) == 100.0f);
    assert_true(isfinite(vla_gelu_tanh_gradf(-1e4f)) && isfinite(vla_gelu_tanh_gradf(1e4f)));
}

/* a loop the compiler vectorises gives the same bits as one call per element */
static void test_vector_equals_scalar(void **state) {
    (void)state;
    enum { N = 1003 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    for (int i = 0; i < N; i++) x[i] = -110.0f + 200.0f * (float)i / N;
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = vla_expf(x[i]);
    for (int i = 0; i < N; i++) {
        volatile float xi = x[i];
        float s = vla_expf(xi);
        assert_memory_equal(&s, &y[i], sizeof s);
    }
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = vla_gelu_tanh_gradf(x[i] / 10);
    for (int i = 0; i < N; i++) {
        volatile float xi = x[i] / 10;
        float s = vla_gelu_tanh_gradf(xi);
        assert_memory_equal(&s, &y[i], sizeof s);
    }
    for (int i = 0; i < N; i++) { /* the fused value+gradient gives the same bits as the two calls */
        float xi = x[i] / 10, v, g = vla_gelu_tanh_value_gradf(xi, &v);
        float v1 = vla_gelu_tanhf(xi), g1 = vla_gelu_tanh_gradf(xi);
        assert_memory_equal(&v, &v1, sizeof v);
        assert_memory_equal(&g, &g1, sizeof g);
    }
    free(x);
    free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expf_ulp),
        cmocka_unit_test(test_gelu_silu),
        cmocka_unit_test(test_vector_equals_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
