/* test_ops.c — the CPU op table against naive double-precision references:
 * GEMM in all transpose combinations with padded leading dimensions, batched
 * GEMM, elementwise ops, deterministic reductions, softmax and its backward
 * (checked by finite differences), and the checked tensor-level matmul. */
#include "test_util.h"
#include "gemm_ref.h"
#include "tensor/ops.h"
#include "tensor/cpu/parallel.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static void test_sgemm_all_transposes(void **state) {
    const vla_ops *ops = test_cpu_backend();
    int sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 48, 80}, {128, 130, 96}, {5, 1, 300}};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            int m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
            int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
            int arows = ta ? k : m, brows = tb ? n : k;
            float *a = malloc(sizeof(float) * arows * lda), *b = malloc(sizeof(float) * brows * ldb);
            float *c = malloc(sizeof(float) * m * ldc);
            double *ref = malloc(sizeof(double) * m * ldc);
            randn(a, (int64_t)arows * lda, 1 + s);
            randn(b, (int64_t)brows * ldb, 100 + s);
            randn(c, (int64_t)m * ldc, 200 + s);
            for (int i = 0; i < m * ldc; i++) ref[i] = c[i];
            ops->sgemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, 0.25f, c, ldc);
            naive_gemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, 0.25f, ref, ldc);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < ldc; j++) {
                    double tol = j < n ? 1e-5 * sqrt((double)k) + 1e-6 : 0; /* padding untouched */
                    if (fabs(c[i * ldc + j] - ref[i * ldc + j]) > tol)
                        fail_msg("gemm %dx%dx%d ta=%d tb=%d at (%d,%d): %g vs %g", m, n, k, ta, tb, i, j,
                                 c[i * ldc + j], ref[i * ldc + j]);
                }
            free(a), free(b), free(c), free(ref);
        }
}

/* Shapes big enough that the op table cuts C into tiles (≥ 2^24 multiply-adds):
 * against the double reference (every tile written once, edges right), and the
 * same bits at 1, 2, 3 and 4 threads with a team for every call. */
static void test_sgemm_tiled_thread_independent(void **state) {
    const vla_ops *ops = test_cpu_backend();
    int sizes[][3] = {{257, 263, 300}, {40, 1100, 700}, {1030, 48, 520}, {512, 512, 128}, {96, 96, 4000}};
    int saved = omp_get_max_threads();
    vla_parallel_always = 1;
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            int m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
            int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 3, ldc = n + 2;
            int arows = ta ? k : m, brows = tb ? n : k;
            float *a = malloc(sizeof(float) * arows * lda), *b = malloc(sizeof(float) * brows * ldb);
            float *c0 = malloc(sizeof(float) * m * ldc), *c = malloc(sizeof(float) * m * ldc);
            randn(a, (int64_t)arows * lda, 31 + s);
            randn(b, (int64_t)brows * ldb, 41 + s);
            randn(c0, (int64_t)m * ldc, 51 + s);
            float *first = NULL;
            for (int threads = 1; threads <= 4; threads++) {
                omp_set_num_threads(threads);
                memcpy(c, c0, sizeof(float) * m * ldc);
                ops->sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.5f, c, ldc);
                if (!first) {
                    first = malloc(sizeof(float) * m * ldc);
                    memcpy(first, c, sizeof(float) * m * ldc);
                    if (t == 0 || s == 0) { /* the reference is O(mnk): a few combinations */
                        double *ref = malloc(sizeof(double) * m * ldc);
                        for (int i = 0; i < m * ldc; i++) ref[i] = c0[i];
                        naive_gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.5f, ref, ldc);
                        for (int i = 0; i < m; i++)
                            for (int j = 0; j < ldc; j++) {
                                double tol = j < n ? 1e-5 * sqrt((double)k) + 1e-6 : 0;
                                if (fabs(c[i * ldc + j] - ref[i * ldc + j]) > tol)
                                    fail_msg("tiled gemm %dx%dx%d ta=%d tb=%d at (%d,%d): %g vs %g", m, n, k, ta, tb,
                                             i, j, c[i * ldc + j], ref[i * ldc + j]);
                            }
                        free(ref);
                    }
                } else if (memcmp(first, c, sizeof(float) * m * ldc) != 0) {
                    fail_msg("gemm %dx%dx%d ta=%d tb=%d: %d threads differ from 1", m, n, k, ta, tb, threads);
                }
            }
            free(a), free(b), free(c0), free(c), free(first);
        }
    vla_parallel_always = 0;
    omp_set_num_threads(saved);
}

static void test_sgemm_batched(void **state) {
    const vla_ops *ops = test_cpu_backend();
    for (int big = 0; big < 2; big++) {
        int m = big ? 96 : 7, n = big ? 64 : 5, k = big ? 200 : 3, batch = 6;
        int64_t sa = (int64_t)k * m + 11, sb = (int64_t)k * n + 3, sc = (int64_t)m * n + 1;
        float *a = malloc(sizeof(float) * sa * batch), *b = malloc(sizeof(float) * sb * batch);
        float *c = calloc((size_t)(sc * batch), sizeof(float));
        double *ref = calloc((size_t)(sc * batch), sizeof(double));
        randn(a, sa * batch, 5);
        randn(b, sb * batch, 6);
        ops->sgemm_strided_batched(true, false, m, n, k, 1.0f, a, m, sa, b, n, sb, 0.0f, c, n, sc, batch);
        for (int i = 0; i < batch; i++)
            naive_gemm(true, false, m, n, k, 1.0f, a + i * sa, m, b + i * sb, n, 0.0f, ref + i * sc, n);
        for (int64_t i = 0; i < sc * batch; i++) assert_true(fabs(c[i] - ref[i]) < 1e-4);
        free(a), free(b), free(c), free(ref);
    }
}

static void test_elementwise_and_reductions(void **state) {
    const vla_ops *ops = test_cpu_backend();
    int64_t n = 100003; /* above the parallel threshold, odd length */
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    randn(a, n, 1);
    randn(b, n, 2);
    ops->add(y, a, b, n);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == a[i] + b[i]);
    ops->sub(y, a, b, n);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == a[i] - b[i]);
    ops->mul(y, a, b, n);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == a[i] * b[i]);
    ops->copy(y, a, n);
    ops->axpy(y, 2.0f, b, n);
    for (int64_t i = 0; i < n; i++) assert_true(y[i] == a[i] + 2.0f * b[i]);
    ops->scale(y, 0.5f, n);
    ops->fill(y, 3.0f, 17);
    assert_true(y[16] == 3.0f);

    double s = 0, d = 0, q = 0;
    float mx = 0;
    for (int64_t i = 0; i < n; i++) {
        s += a[i], d += (double)a[i] * b[i], q += (double)a[i] * a[i];
        if (fabsf(a[i]) > mx) mx = fabsf(a[i]);
    }
    assert_true(fabs(ops->sum(a, n) - s) < 1e-9 * n);
    assert_true(fabs(ops->dot(a, b, n) - d) < 1e-9 * n);
    assert_true(fabs(ops->sum_squares(a, n) - q) < 1e-9 * n);
    assert_true(ops->max_abs(a, n) == mx);
    /* same answer whatever the thread count (fixed blocks, ordered combine) */
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    double s1 = ops->sum(a, n);
    omp_set_num_threads(2);
    double s2 = ops->sum(a, n);
    omp_set_num_threads(saved);
    assert_true(s1 == s2);

    assert_int_equal(ops->count_nonfinite(a, n), 0);
    a[5] = NAN, a[n - 1] = -INFINITY;
    assert_int_equal(ops->count_nonfinite(a, n), 2);
    assert_true(isinf(ops->max_abs(a, n)));

    /* row-vector add and column sums */
    int64_t rows = 300, cols = 130;
    float *m = malloc(sizeof(float) * rows * cols), bias[130], colsum[130];
    randn(m, rows * cols, 9);
    randn(bias, cols, 10);
    for (int c = 0; c < cols; c++) colsum[c] = 1.0f;
    ops->sum_rows(colsum, m, rows, cols, 2.0f);
    for (int c = 0; c < cols; c++) {
        double ref = 2.0;
        for (int r = 0; r < rows; r++) ref += m[r * cols + c];
        assert_true(fabs(colsum[c] - ref) < 1e-4);
    }
    float first = m[3 * cols + 7];
    ops->add_row_vector(m, bias, rows, cols);
    assert_true(m[3 * cols + 7] == first + bias[7]);
    free(a), free(b), free(y), free(m);
}

static void test_softmax_and_backward(void **state) {
    const vla_ops *ops = test_cpu_backend();
    int rows = 4, cols = 9;
    float x[36], y[36], dy[36], dx[36];
    randn(x, 36, 3);
    randn(dy, 36, 4);
    x[0] = 1000.0f; /* stability: no overflow */
    for (int c = 0; c < cols; c++) x[3 * cols + c] = -INFINITY; /* fully masked row */
    ops->softmax_rows(y, x, rows, cols);
    for (int r = 0; r < 3; r++) {
        double mx = -INFINITY, z = 0;
        for (int c = 0; c < cols; c++) mx = fmax(mx, x[r * cols + c]);
        for (int c = 0; c < cols; c++) z += exp(x[r * cols + c] - mx);
        for (int c = 0; c < cols; c++) assert_true(fabs(y[r * cols + c] - exp(x[r * cols + c] - mx) / z) < 1e-6);
    }
    for (int c = 0; c < cols; c++) assert_true(y[3 * cols + c] == 0.0f);
    /* backward vs central differences of L = Σ dy·softmax(x) on rows 1–2 */
    ops->softmax_rows_backward(dx, y, dy, rows, cols);
    for (int i = cols; i < 3 * cols; i++) {
        float xp[36], xm[36], yp[36], ym[36];
        memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
        float h = 1e-2f;
        xp[i] += h, xm[i] -= h;
        ops->softmax_rows(yp, xp, rows, cols);
        ops->softmax_rows(ym, xm, rows, cols);
        double lp = 0, lm = 0;
        for (int j = cols; j < 3 * cols; j++) lp += (double)dy[j] * yp[j], lm += (double)dy[j] * ym[j];
        double fd = (lp - lm) / (2 * h);
        if (fabs(fd - dx[i]) > 2e-3 * (1 + fabs(fd))) fail_msg("softmax grad %d: %g vs fd %g", i, dx[i], fd);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgemm_all_transposes), cmocka_unit_test(test_sgemm_tiled_thread_independent),
        cmocka_unit_test(test_sgemm_batched),
        cmocka_unit_test(test_elementwise_and_reductions), cmocka_unit_test(test_softmax_and_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
