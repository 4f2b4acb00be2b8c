/* test_rng.c — Philox-4x32-10 against Random123's published known-answer
 * vectors; stream independence from thread count; distribution moments. */
#include "test_util.h"
#include "base/rng.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

static void test_philox_known_answers(void **state) {
    /* Random123 kat_vectors, philox4x32_10 */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        vla_philox4x32_10(kat[i], kat[i] + 4, out);
        for (int j = 0; j < 4; j++) assert_int_equal(out[j], kat[i][6 + j]);
    }
}

/* Each "sample" draws from its own stream: results must not depend on how
 * many threads share the work or in which order samples are visited. */
static void fill_samples(double *out, int n, int threads) {
    omp_set_num_threads(threads);
#pragma omp parallel for schedule(dynamic, 3)
    for (int i = n - 1; i >= 0; i--) {
        vla_rng r = vla_rng_stream(42, (uint64_t)i);
        double acc = 0;
        for (int k = 0; k < 5 + i % 7; k++) acc += vla_rng_normal(&r) + vla_rng_beta(&r, 1.5, 1.0);
        out[i] = acc;
    }
}

static void test_streams_independent_of_threads(void **state) {
    double a[257], b[257];
    int saved = omp_get_max_threads();
    fill_samples(a, 257, 1);
    fill_samples(b, 257, 2);
    omp_set_num_threads(saved);
    for (int i = 0; i < 257; i++) assert_true(a[i] == b[i]);
    vla_rng r1 = vla_rng_stream(42, 1), r2 = vla_rng_stream(42, 2), r3 = vla_rng_stream(43, 1);
    uint32_t x1 = vla_rng_u32(&r1), x2 = vla_rng_u32(&r2), x3 = vla_rng_u32(&r3);
    assert_true(x1 != x2 && x1 != x3);
}

static void test_distributions(void **state) {
    vla_rng r = vla_rng_stream(1, 0);
    const int n = 200000;
    double su = 0, sn = 0, sn2 = 0, sb = 0, sg = 0;
    int counts[10] = {0};
    for (int i = 0; i < n; i++) {
        float u = vla_rng_uniform(&r);
        assert_true(u >= 0.0f && u < 1.0f);
        su += u;
        double z = vla_rng_normal(&r);
        sn += z, sn2 += z * z;
        double bt = vla_rng_beta(&r, 1.5, 1.0);
        assert_true(bt >= 0 && bt <= 1);
        sb += bt;
        sg += vla_rng_gamma(&r, 0.5);
        int64_t k = vla_rng_int(&r, -3, 7);
        assert_true(k >= -3 && k < 7);
        counts[k + 3]++;
    }
    /* tolerances ≈ 5 standard errors */
    assert_true(fabs(su / n - 0.5) < 5 * 0.2887 / sqrt(n));
    assert_true(fabs(sn / n) < 5 / sqrt(n));
    assert_true(fabs(sn2 / n - 1.0) < 5 * sqrt(2.0 / n));
    assert_true(fabs(sb / n - 0.6) < 5 * 0.2 / sqrt(n)); /* Beta(1.5,1): mean 0.6, sd 0.2 */
    assert_true(fabs(sg / n - 0.5) < 5 * sqrt(0.5 / n));  /* Gamma(0.5): mean 0.5, var 0.5 */
    double chi2 = 0;
    for (int i = 0; i < 10; i++) chi2 += pow(counts[i] - n / 10.0, 2) / (n / 10.0);
    assert_true(chi2 < 33.7); /* 9 dof, p = 1e-4 */
    int64_t perm[100];
    for (int i = 0; i < 100; i++) perm[i] = i;
    vla_rng_shuffle_i64(&r, perm, 100);
    int seen[100] = {0}, moved = 0;
    for (int i = 0; i < 100; i++) seen[perm[i]]++, moved += perm[i] != i;
    for (int i = 0; i < 100; i++) assert_int_equal(seen[i], 1);
    assert_true(moved > 80);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_streams_independent_of_threads),
        cmocka_unit_test(test_distributions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
