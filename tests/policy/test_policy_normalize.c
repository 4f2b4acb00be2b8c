/* test_policy_normalize.c — normalisation modes against hand-computed
 * values, round trips, degenerate statistics (std 0, min == max, q01 ==
 * q99) in LeRobot's and openpi's epsilon styles, rejected statistics, and
 * action chunks with pooled or per-step statistics in a padded layout. */
#include "test_util.h"

#include <math.h>
#include <string.h>

#include "base/rng.h"
#include "policy/normalize.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static void test_values(void **state) {
    vla_normalizer n;
    /* MEAN_STD: (x − mean)/(std + 1e-8) */
    float mean[2] = {1, -2}, sd[2] = {2, 0.5f};
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 2, mean, sd, 0), VLA_OK);
    float x[4] = {3, -2, 1, -1}, y[4];
    vla_normalize(&n, y, x, 2);
    NEAR(y[0], 1.0, 1e-6);
    NEAR(y[1], 0.0, 1e-6);
    NEAR(y[2], 0.0, 1e-6);
    NEAR(y[3], 2.0, 1e-6);
    vla_normalizer_free(&n);

    /* MIN_MAX: 2(x − min)/(max − min) − 1 */
    float lo[2] = {0, -1}, hi[2] = {10, 1};
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, 2, lo, hi, 0), VLA_OK);
    float m[6] = {5, 1, 0, -1, 10, 0.5f}, my[6];
    vla_normalize(&n, my, m, 3);
    NEAR(my[0], 0.0, 1e-7);
    NEAR(my[1], 1.0, 1e-7);
    NEAR(my[2], -1.0, 1e-7);
    NEAR(my[3], -1.0, 1e-7);
    NEAR(my[4], 1.0, 1e-7);
    NEAR(my[5], 0.5, 1e-7);
    vla_normalizer_free(&n);

    /* QUANTILES: 2(x − q01)/(q99 − q01) − 1, no clipping outside [q01, q99] */
    float q01[1] = {-2}, q99[1] = {2};
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_QUANTILES, VLA_NORM_EPS_LEROBOT, 1, q01, q99, 0), VLA_OK);
    float q[3] = {0, 3, -2}, qy[3];
    vla_normalize(&n, qy, q, 3);
    NEAR(qy[0], 0.0, 1e-7);
    NEAR(qy[1], 1.5, 1e-7);
    NEAR(qy[2], -1.0, 1e-7);
    vla_normalizer_free(&n);

    /* openpi style: the range gets +1e-6 always */
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_QUANTILES, VLA_NORM_EPS_OPENPI, 1, q01, q99, 0), VLA_OK);
    vla_normalize(&n, qy, q, 3);
    NEAR(qy[1], 2.0 * 5.0 / (4.0 + 1e-6) - 1.0, 1e-6);
    assert_true(qy[1] < 1.5f); /* strictly smaller than the LeRobot value */
    vla_normalizer_free(&n);

    /* IDENTITY needs no stats; in place */
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_IDENTITY, VLA_NORM_EPS_LEROBOT, 2, NULL, NULL, 0), VLA_OK);
    float id[2] = {7, -8};
    vla_normalize(&n, id, id, 1);
    assert_true(id[0] == 7 && id[1] == -8);
    vla_normalizer_free(&n);
}

static void test_degenerate(void **state) {
    vla_normalizer n;
    /* std 0: the constant maps to 0 and back */
    float mean[1] = {5}, sd[1] = {0};
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 1, mean, sd, 0), VLA_OK);
    float x[2] = {5, 5.5f}, y[2], z[2];
    vla_normalize(&n, y, x, 2);
    assert_true(y[0] == 0.0f);
    assert_true(isfinite(y[1]) && y[1] > 1e6f); /* 0.5/1e-8: large but finite */
    vla_unnormalize(&n, z, y, 2);
    assert_true(z[0] == 5.0f);
    NEAR(z[1], 5.5, 1e-5);
    vla_normalizer_free(&n);

    /* min == max and q01 == q99, both styles: the constant maps to −1 and back */
    for (int style = 0; style < 2; style++)
        for (int mode = VLA_NORM_MIN_MAX; mode <= VLA_NORM_QUANTILES; mode++) {
            float c[2] = {3, -4};
            assert_int_equal(vla_normalizer_init(&n, (vla_norm_mode)mode, (vla_norm_eps_style)style, 2, c, c, 0),
                             VLA_OK);
            float v[2] = {3, -4}, w[2], back[2];
            vla_normalize(&n, w, v, 1);
            assert_true(w[0] == -1.0f && w[1] == -1.0f);
            vla_unnormalize(&n, back, w, 1);
            assert_true(back[0] == 3.0f && back[1] == -4.0f);
            vla_normalizer_free(&n);
        }
}

static void test_round_trips(void **state) {
    enum { D = 5, R = 64 };
    vla_rng r = vla_rng_stream(3, 0);
    float a[D], b[D], x[R * D], y[R * D], z[R * D];
    for (int mode = VLA_NORM_IDENTITY; mode <= VLA_NORM_QUANTILES; mode++)
        for (int style = 0; style < 2; style++) {
            for (int d = 0; d < D; d++) {
                a[d] = (float)(vla_rng_normal(&r) * 10);
                b[d] = mode == VLA_NORM_MEAN_STD ? (float)(0.1 + vla_rng_uniform(&r) * 5)
                                                 : a[d] + (float)(0.1 + vla_rng_uniform(&r) * 20);
            }
            for (int i = 0; i < R * D; i++) x[i] = (float)(vla_rng_normal(&r) * 12);
            vla_normalizer n;
            assert_int_equal(vla_normalizer_init(&n, (vla_norm_mode)mode, (vla_norm_eps_style)style, D, a, b, 0),
                             VLA_OK);
            vla_normalize(&n, y, x, R);
            vla_unnormalize(&n, z, y, R);
            for (int i = 0; i < R * D; i++) NEAR(z[i], x[i], 2e-5 * (1 + fabs(x[i])));
            /* in place gives the same */
            memcpy(z, x, sizeof z);
            vla_normalize(&n, z, z, R);
            for (int i = 0; i < R * D; i++) assert_true(z[i] == y[i]);
            vla_normalizer_free(&n);
        }
}

static void test_bad_stats(void **state) {
    vla_normalizer n;
    float a[2] = {0, 1}, neg[2] = {1, -1}, nan_[2] = {0, NAN};
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 2, a, neg, 0),
                     VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "channel 1: std -1 is negative"));
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, 2, a, neg, 0),
                     VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "channel 1: max -1 is below min 1"));
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_QUANTILES, VLA_NORM_EPS_LEROBOT, 2, a, nan_, 0),
                     VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "channel 1"));
    assert_int_equal(vla_normalizer_init(&n, VLA_NORM_QUANTILES, VLA_NORM_EPS_LEROBOT, 2, a, NULL, 0),
                     VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "'q01' and 'q99' are required"));
}

/* A chunk of H = 3 steps of 2 channels stored with stride 3 (a padded
 * policy width): per-step MEAN_STD statistics normalise step h with its own
 * mean/std (values by hand), pooled ones every step alike; the padding
 * column is never touched; unnormalising gives the chunk back. */
static void test_chunks(void **state) {
    (void)state;
    vla_normalizer per, pooled;
    float mean[6] = {0, 1, 10, 20, -4, 4}, sd[6] = {1, 2, 5, 10, 2, 4};
    assert_int_equal(vla_normalizer_init(&per, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 6, mean, sd, 0), VLA_OK);
    assert_int_equal(vla_normalizer_init(&pooled, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 2, mean + 2, sd + 2, 0),
                     VLA_OK);
    const float x[9] = {1, 5, 99, 20, 40, 99, 0, 0, 99};
    float y[9], z[9];
    memcpy(y, x, sizeof x);
    vla_normalize_chunk(&per, y, 3, 2, 3);
    const float want[9] = {1, 2, 99, 2, 2, 99, 2, -1, 99};
    for (int i = 0; i < 9; i++) NEAR(y[i], want[i], 1e-6);
    vla_unnormalize_chunk(&per, y, 3, 2, 3);
    for (int i = 0; i < 9; i++) NEAR(y[i], x[i], 1e-5);
    memcpy(z, x, sizeof x);
    vla_normalize_chunk(&pooled, z, 3, 2, 3);
    const float want_pooled[9] = {-1.8f, -1.5f, 99, 2, 2, 99, -2, -2, 99};
    for (int i = 0; i < 9; i++) NEAR(z[i], want_pooled[i], 1e-6);
    /* statistics of another width are not applied */
    memcpy(z, x, sizeof x);
    vla_normalize_chunk(&per, z, 2, 2, 3);
    assert_memory_equal(z, x, sizeof x);
    vla_normalizer_free(&per), vla_normalizer_free(&pooled);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_bad_stats),
        cmocka_unit_test(test_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
