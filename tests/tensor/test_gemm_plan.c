/* test_gemm_plan.c — tensor/cuda/gemm_plan.h, how the cuda backend hands GEMMs to
 * cuBLASLt, checked on the CPU by executing each plan:
 *   - every row-major GEMM (all transposes, padded leading dimensions,
 *     strided batches) run as the column-major product the plan describes
 *     (its A is the caller's B, op(X)(i, j) read through the stored layout)
 *     equals the row-major definition;
 *   - the quantized plans: the copies of A and B made as the cast kernel
 *     makes them (FP8: K-major, transposing where the plan says, K
 *     zero-padded to kp; bf16: the stored layouts, rows padded) and
 *     multiplied as the plan's product (TN for FP8) equal the GEMM on the
 *     rounded operands; a bf16 copy is one layout for every role that reads
 *     it; kp and the cuBLASLt/emulation decision follow the
 *     FP8 rules (E5M2 × E5M2 unsupported, C alignment), FAST_ACCUM only
 *     without a gradient operand;
 *   - the workspace rule, the alignment classes, and the descriptor cache
 *     (hits, replacement, eviction with destruction). */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/cuda/gemm_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* element (i, j) of op(X), X stored column-major as rows × cols with ld */
static double colmajor_op(const float *x, bool trans, int64_t ld, int64_t i, int64_t j) {
    return trans ? x[i * ld + j] : x[j * ld + i];
}

/* D = α·op(A)·op(B) + β·C, column-major, batched, per the plan */
static void run_lt(const vla_lt_gemm *g, float alpha, const float *A, const float *B, float beta, float *C) {
    for (int64_t bt = 0; bt < g->batch; bt++) {
        const float *a = A + bt * g->stride_a, *b = B + bt * g->stride_b;
        float *c = C + bt * g->stride_c;
        /* stored shapes must be what the layouts say */
        assert_true(g->a_rows == (g->trans_a ? g->k : g->m) && g->a_cols == (g->trans_a ? g->m : g->k));
        assert_true(g->b_rows == (g->trans_b ? g->n : g->k) && g->b_cols == (g->trans_b ? g->k : g->n));
        assert_true(g->c_rows == g->m && g->c_cols == g->n);
        assert_true(g->lda >= g->a_rows && g->ldb >= g->b_rows && g->ldc >= g->c_rows);
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double s = 0;
                for (int64_t p = 0; p < g->k; p++)
                    s += colmajor_op(a, g->trans_a, g->lda, i, p) * colmajor_op(b, g->trans_b, g->ldb, p, j);
                c[j * g->ldc + i] = (float)(alpha * s + beta * c[j * g->ldc + i]);
            }
    }
}

static void rowmajor_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, double *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
        }
}

static float *randf(int64_t n, vla_rng *r) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (float)vla_rng_normal(r);
    return x;
}

static void test_rowmajor_mapping(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(11, 0);
    const int64_t sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {16, 48, 80}, {5, 1, 30}, {1, 7, 2}};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 8; t++) {
            bool ta = t & 1, tb = t & 2;
            int64_t batch = t & 4 ? 3 : 1, m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
            int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
            int64_t sa = (ta ? k : m) * lda + 5, sb = (tb ? n : k) * ldb + 1, sc = m * ldc + 2;
            float *a = randf(sa * batch, &r), *b = randf(sb * batch, &r), *c = randf(sc * batch, &r);
            double *ref = malloc(sizeof(double) * (size_t)(sc * batch));
            for (int64_t i = 0; i < sc * batch; i++) ref[i] = c[i];
            for (int64_t bt = 0; bt < batch; bt++)
                rowmajor_ref(ta, tb, m, n, k, 0.5f, a + bt * sa, lda, b + bt * sb, ldb, -0.25f, ref + bt * sc, ldc);
            vla_lt_gemm g = vla_lt_from_rowmajor(ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc);
            run_lt(&g, 0.5f, b, a, -0.25f, c); /* cuBLASLt's A is the caller's B */
            for (int64_t bt = 0; bt < batch; bt++)
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < ldc; j++) {
                        int64_t o = bt * sc + i * ldc + j;
                        double tol = j < n ? 1e-5 * (1 + fabs(ref[o])) : 0; /* padding untouched */
                        if (fabs(c[o] - ref[o]) > tol)
                            fail_msg("%lldx%lldx%lld ta %d tb %d batch %lld at (%lld,%lld): %g vs %g", (long long)m,
                                     (long long)n, (long long)k, ta, tb, (long long)batch, (long long)i, (long long)j,
                                     c[o], ref[o]);
                    }
            free(a), free(b), free(c), free(ref);
        }
}

/* the cast kernel's copy: dst[rows][kp] ← rows of X (of Xᵀ when transpose), K values each, zero-padded; `round` as the GEMM reads */
static float *kmajor_copy(const float *x, int64_t ld, int64_t rows, int64_t K, int64_t kp, bool transpose,
                          float (*round)(float)) {
    float *d = calloc((size_t)(rows * kp), sizeof(float));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < K; c++) d[r * kp + c] = round(transpose ? x[c * ld + r] : x[r * ld + c]);
    return d;
}

static float bf16_round(float x) { return vla_bf16_to_f32(vla_f32_to_bf16(x)); }

static float no_round(float x) { return x; }

/* Each quantized plan executed as the cuda backend does: the copies made as
 * the cast kernel makes them (the plan's rows, columns, row stride and
 * transpose; bf16 rounded), then the plan's product over them — against
 * the row-major GEMM on the rounded operands. Also: the ready copy of an
 * operand (a plan's B, prepare_operand) is, in bf16, one layout whatever
 * role or transposition reads it (ops.h, a_ready). */
static void test_quantized_plans(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(12, 0);
    const int64_t sizes[][3] = {{4, 8, 16}, {3, 5, 7}, {17, 12, 33}, {32, 16, 24}};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 8; t++) {
            bool ta = t & 1, tb = t & 2, fp8 = t & 4;
            int64_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
            int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n;
            float *a = randf((ta ? k : m) * lda, &r), *b = randf((tb ? n : k) * ldb, &r), *c = calloc((size_t)(m * ldc), 4);
            vla_gemm_q q = {.mode = fp8 ? VLA_PREC_FP8 : VLA_PREC_BF16};
            float (*rnd)(float) = fp8 ? no_round : bf16_round; /* FP8: the layouts only (its rounding: test_precision) */
            vla_q_plan p = vla_q_plan_make(&q, ta, tb, m, n, k, ldc, 256);
            if (fp8) {
                assert_true(p.kp % 16 == 0 && p.kp >= k && p.kp < k + 16);
                assert_true(p.a_rows == m && p.a_cols == k && p.a_ld == p.kp && p.b_rows == n && p.b_ld == p.kp);
                assert_true(p.a_transpose == ta && p.b_transpose == !tb);
                assert_true(p.lt.trans_a && !p.lt.trans_b); /* TN */
            } else {
                assert_true(p.use_lt && p.a_type == VLA_LT_BF16 && p.b_type == VLA_LT_BF16);
                assert_true(!p.a_transpose && !p.b_transpose); /* stored layouts, no transposing cast */
                assert_true(p.a_rows == (ta ? k : m) && p.a_cols == (ta ? m : k));
                assert_true(p.b_rows == (tb ? n : k) && p.b_cols == (tb ? k : n));
                assert_true(p.a_ld % 8 == 0 && p.a_ld >= p.a_cols && p.a_ld < p.a_cols + 8);
                assert_true(p.b_ld % 8 == 0 && p.b_ld >= p.b_cols && p.b_ld < p.b_cols + 8);
                assert_true(p.lt.trans_a == tb && p.lt.trans_b == ta); /* the caller's transposes */
                /* A's copy is the copy a GEMM reading A as its B would prepare (any role, any transpose) */
                vla_q_plan pb = vla_q_plan_make(&q, false, !ta, 1, m, k, m, 256);
                assert_true(pb.b_rows == p.a_rows && pb.b_cols == p.a_cols && pb.b_ld == p.a_ld && !pb.b_transpose);
                vla_q_plan pt = vla_q_plan_make(&q, !ta, false, k, 1, m, 1, 256); /* A read transposed, as op(A) */
                assert_true(pt.a_rows == p.a_rows && pt.a_cols == p.a_cols && pt.a_ld == p.a_ld);
            }
            float *aq = kmajor_copy(a, lda, p.a_rows, p.a_cols, p.a_ld, p.a_transpose, rnd);
            float *bq = kmajor_copy(b, ldb, p.b_rows, p.b_cols, p.b_ld, p.b_transpose, rnd);
            run_lt(&p.lt, 1.0f, bq, aq, 0.0f, c);
            /* reference: the GEMM on the rounded operands */
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double ref = 0;
                    for (int64_t pp = 0; pp < k; pp++)
                        ref += (double)rnd(ta ? a[pp * lda + i] : a[i * lda + pp]) *
                               rnd(tb ? b[j * ldb + pp] : b[pp * ldb + j]);
                    assert_true(fabs(c[i * ldc + j] - ref) <= 1e-5 * (1 + fabs(ref)));
                }
            free(a), free(b), free(c), free(aq), free(bq);
        }
}

static void test_fp8_decisions(void **state) {
    (void)state;
    vla_gemm_q q = {.mode = VLA_PREC_FP8, .a = {VLA_FP8_E4M3, NULL, NULL}, .b = {VLA_FP8_E4M3, NULL, NULL}};
    vla_q_plan p = vla_q_plan_make(&q, false, true, 64, 32, 100, 32, 4096);
    assert_true(p.use_lt && p.kp == 112 && p.fast_accum && p.a_type == VLA_LT_E4M3);
    assert_false(p.a_transpose); /* y = x·Wᵀ is already TN */
    assert_false(p.b_transpose);
    q.b.fmt = VLA_FP8_E5M2; /* a gradient: split accumulation */
    p = vla_q_plan_make(&q, true, false, 64, 32, 64, 32, 4096);
    assert_true(p.use_lt && !p.fast_accum && p.b_type == VLA_LT_E5M2 && p.a_transpose && p.b_transpose);
    q.a.fmt = VLA_FP8_E5M2; /* E5M2 × E5M2: not in cuBLASLt's table */
    p = vla_q_plan_make(&q, false, true, 64, 32, 64, 32, 4096);
    assert_false(p.use_lt);
    q.a.fmt = VLA_FP8_E4M3;
    assert_false(vla_q_plan_make(&q, false, true, 64, 30, 64, 30, 4096).use_lt); /* rows of 30 floats */
    assert_false(vla_q_plan_make(&q, false, true, 64, 32, 64, 34, 4096).use_lt); /* ldc */
    assert_false(vla_q_plan_make(&q, false, true, 64, 32, 64, 32, 4104).use_lt); /* C not 16-byte aligned */
    assert_true(vla_q_plan_make(&q, false, true, 64, 32, 64, 32, 4112).use_lt);
}

static void test_workspace_and_alignment(void **state) {
    (void)state;
    assert_int_equal(vla_lt_workspace_bytes(9), 32 << 20);
    assert_int_equal(vla_lt_workspace_bytes(10), 32 << 20);
    assert_int_equal(vla_lt_workspace_bytes(8), 4 << 20);
    assert_int_equal(vla_lt_alignment(0x1000), 256);
    assert_int_equal(vla_lt_alignment(0x1010), 16);
    assert_int_equal(vla_lt_alignment(0x1004), 4);
    assert_int_equal(vla_lt_alignment(0x1001), 1);
}

static int destroyed;
static void destroy(void *p) {
    destroyed++;
    free(p);
}

static void test_cache(void **state) {
    (void)state;
    destroyed = 0;
    vla_lt_cache *c = vla_lt_cache_new(8, destroy);
    assert_non_null(c);
    vla_lt_gemm g = vla_lt_from_rowmajor(false, true, 4, 8, 16, 16, 16, 8, 1, 0, 0, 0);
    vla_lt_key keys[20];
    for (int i = 0; i < 20; i++) {
        g.m = 4 + i;
        keys[i] = vla_lt_key_make(&g, VLA_LT_BF16, VLA_LT_BF16, VLA_LT_F32, 0, 256, 256, 16, false);
    }
    for (int i = 0; i < 8; i++) vla_lt_cache_put(c, &keys[i], malloc(4));
    assert_int_equal(vla_lt_cache_count(c), 8);
    for (int i = 0; i < 8; i++) assert_non_null(vla_lt_cache_get(c, &keys[i]));
    assert_null(vla_lt_cache_get(c, &keys[8]));
    /* a different alignment is a different key */
    vla_lt_key other = vla_lt_key_make(&g, VLA_LT_BF16, VLA_LT_BF16, VLA_LT_F32, 0, 256, 16, 16, false);
    assert_null(vla_lt_cache_get(c, &other));
    /* replacing a payload destroys the old one */
    vla_lt_cache_put(c, &keys[0], malloc(4));
    assert_int_equal(destroyed, 1);
    assert_int_equal(vla_lt_cache_count(c), 8);
    /* full: the next put evicts everything */
    vla_lt_cache_put(c, &keys[8], malloc(4));
    assert_int_equal(destroyed, 9);
    assert_int_equal(vla_lt_cache_count(c), 1);
    assert_null(vla_lt_cache_get(c, &keys[0]));
    assert_non_null(vla_lt_cache_get(c, &keys[8]));
    vla_lt_cache_free(c);
    assert_int_equal(destroyed, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rowmajor_mapping),     cmocka_unit_test(test_quantized_plans),
        cmocka_unit_test(test_fp8_decisions),        cmocka_unit_test(test_workspace_and_alignment),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
