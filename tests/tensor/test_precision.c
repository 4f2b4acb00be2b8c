/* test_precision.c — the op table's mixed-precision slots against
 * independent references (ops.h, "mixed precision"):
 *   - sgemm_q reads every FP8 code's value (each code, the midpoints between
 *     neighbours and ±1 ulp around them, under several scales) as the
 *     nearest-code search over tools/gen_dtype_goldens.py's exact decoding
 *     table says, saturating; and every bf16 neighbourhood as a
 *     two-candidate search says; amax is max |x| over the operand;
 *   - sgemm_q on random shapes (two of them large enough for the native
 *     bf16 path on CPUs that have it: ops_cpu_precision.c), transposes,
 *     leading dimensions (NaN in the
 *     padding, which must never be read), alpha and beta, equals a naive
 *     float64 triple loop over operands quantised by those references;
 *   - fp8_scale_update follows a sequence derived by hand from
 *     TransformerEngine's rule (history window, most_recent, margin, amax
 *     0 / Inf / NaN keeping the scale, an overflowing scale → FLT_MAX,
 *     the history moving one row older per update).
 * Run on the cpu table with host buffers and again through `checked` on
 * its own memory (the wrapper's pointer translation of the FP8 operands). */
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "tensor/backend.h"

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* ---- independent references ------------------------------------------------------ */

static float table[2][256]; /* E4M3, E5M2: every code's value (exact rational decoding, generated in Python) */

static void load_tables(void) {
    static int done;
    if (done) return;
    FILE *f = fopen(test_source_path("tests/base/data/dtype_goldens.txt"), "r");
    assert_non_null(f);
    char line[128], kind[32];
    unsigned a, b;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%31s %x %x", kind, &a, &b) != 3) continue;
        if (!strcmp(kind, "decode_e4m3")) table[0][a] = bits_f32(b), n++;
        if (!strcmp(kind, "decode_e5m2")) table[1][a] = bits_f32(b), n++;
    }
    fclose(f);
    assert_int_equal(n, 512);
    done = 1;
}

/* The value FP8 format fmt (0 E4M3, 1 E5M2) stores for x: the nearest
 * finite code, ties to the even code, saturating at the largest; NaN stays NaN. */
static float ref_fp8(int fmt, float x) {
    if (isnan(x)) return x;
    float max = fmt == 0 ? 448.0f : 57344.0f;
    double ax = fabs((double)x);
    if (ax > max) ax = max;
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < 128; c++) {
        float v = table[fmt][c];
        if (!isfinite(v)) continue;
        double d = fabs((double)v - ax);
        if (d < bd || (d == bd && (c & 1) == 0)) bd = d, best = c;
    }
    float v = table[fmt][best];
    return signbit(x) ? -v : v;
}

/* What an FP8 operand with scale s reads for x: the stored code's value × (1/s). */
static float ref_read_fp8(int fmt, float s, float x) { return ref_fp8(fmt, x * s) * (1.0f / s); }

/* bf16: of the two bf16 values around x (truncation and one up), the
 * nearer, ties to the even one; overflow to ±Inf; NaN stays NaN. */
static float ref_bf16(float x) {
    if (isnan(x) || isinf(x)) return x;
    uint32_t u = f32_bits(x), lo = u & 0xffff0000u, hi = lo + 0x10000u;
    double dl = fabs((double)bits_f32(lo) - x), dh = fabs((double)bits_f32(hi) - x);
    if ((hi & 0x7f800000u) == 0x7f800000u) dh = fabs(ldexp(1.0, 128) - fabs((double)x)); /* hi is ±Inf: 2^128 */
    if (dl < dh || (dl == dh && !(lo & 0x10000u))) return bits_f32(lo);
    return bits_f32(hi);
}

/* ---- the backend under test: cpu on host memory, then checked ---------------------- */

static const vla_ops *ops;

static float *dev(const float *h, int64_t n) { return test_dev_copy(ops, h, n); }

/* One element read through sgemm_q: C[i] = 1·A[i]·B with B = [1] read
 * exactly (scale 1 for E4M3/E5M2, 1 exact in bf16). Returns C and amax. */
static void read_through_gemm(vla_precision mode, vla_fp8_format fmt, float scale, const float *x, int64_t n,
                              float *out, float *amax_out) {
    float one = 1.0f, s1 = 1.0f, a0 = 0.0f, b0 = 0.0f;
    float *dx = dev(x, n), *dc = dev(x, n), *done = dev(&one, 1), *ds = dev(&scale, 1), *ds1 = dev(&s1, 1);
    float *damax = dev(&a0, 1), *dbmax = dev(&b0, 1);
    vla_gemm_q q = {mode, {fmt, ds, damax}, {VLA_FP8_E4M3, ds1, dbmax}, NULL, NULL};
    ops->sgemm_q(&q, false, false, n, 1, 1, 1.0f, dx, 1, done, 1, 0.0f, dc, 1);
    test_dev_read(ops, out, dc, n);
    test_dev_read(ops, amax_out, damax, 1);
    float bm;
    test_dev_read(ops, &bm, dbmax, 1);
    if (mode == VLA_PREC_FP8) assert_true(bm == 1.0f);
    float *all[] = {dx, dc, done, ds, ds1, damax, dbmax};
    for (int i = 0; i < 7; i++) ops->free(all[i]);
}

static void test_fp8_every_code(void **state) {
    (void)state;
    load_tables();
    const float scales[] = {1.0f, 0.125f, 3.7f, 1000.5f, 1.0f / 448.0f};
    float *x = malloc(sizeof(float) * 128 * 8 * 2), *got = malloc(sizeof(float) * 128 * 8 * 2);
    for (int fmt = 0; fmt < 2; fmt++)
        for (size_t si = 0; si < sizeof scales / sizeof *scales; si++) {
            float s = scales[si];
            int64_t n = 0;
            /* each code's value, the midpoints (ties), ±1 ulp of them, negated; beyond the range; NaN last */
            for (int c = 0; c < 127; c++) {
                float a = table[fmt][c], b = table[fmt][c + 1];
                if (!isfinite(a) || !isfinite(b)) continue;
                float mid = (float)(((double)a + b) / 2);
                float xs[] = {a, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid, -a};
                for (int i = 0; i < 6; i++) x[n++] = xs[i] / s;
            }
            x[n++] = (fmt == 0 ? 500.0f : 60000.0f) / s;
            x[n++] = -1e30f;
            float amax;
            read_through_gemm(VLA_PREC_FP8, fmt ? VLA_FP8_E5M2 : VLA_FP8_E4M3, s, x, n, got, &amax);
            float want_amax = 0;
            for (int64_t i = 0; i < n; i++) {
                float want = ref_read_fp8(fmt, s, x[i]);
                if (!(got[i] == want || (isnan(got[i]) && isnan(want)))) /* ±0 equal: the GEMM's sum starts at +0 */
                    fail_msg("%s scale %g: x = %a read as %a, want %a", fmt ? "E5M2" : "E4M3", s, x[i], got[i], want);
                if (fabsf(x[i]) > want_amax) want_amax = fabsf(x[i]);
            }
            assert_true(amax == want_amax);
            /* a NaN operand: read as NaN, and amax +Inf (a non-finite amax keeps the scale) */
            float nan = NAN;
            read_through_gemm(VLA_PREC_FP8, fmt ? VLA_FP8_E5M2 : VLA_FP8_E4M3, s, &nan, 1, got, &amax);
            assert_true(isnan(got[0]));
            assert_true(isinf(amax) && amax > 0);
        }
    free(x), free(got);
}

static void test_bf16_neighbourhoods(void **state) {
    (void)state;
    int64_t n = 0, cap = 200000;
    float *x = malloc(sizeof(float) * cap), *got = malloc(sizeof(float) * cap);
    vla_rng r = vla_rng_stream(3, 0);
    /* every bf16 exponent: a representable value, the midpoint to the next (a tie), ±1 ulp, random */
    for (int e = -133; e < 128 && n + 8 < cap; e++)
        for (int k = 0; k < 40 && n + 8 < cap; k++) {
            uint32_t m = (uint32_t)vla_rng_int(&r, 0, 127) << 16;
            float v = ldexpf(1.0f + (float)m / 8388608.0f, e);
            uint32_t u = f32_bits(v) & 0xffff0000u;
            float a = bits_f32(u), mid = bits_f32(u | 0x8000u);
            float xs[] = {a, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid, bits_f32(u | (vla_rng_u32(&r) & 0xffff))};
            for (int i = 0; i < 6; i++) x[n++] = xs[i];
        }
    x[n++] = FLT_MAX, x[n++] = -FLT_MAX, x[n++] = 0.0f, x[n++] = -0.0f, x[n++] = 1e-45f;
    float amax;
    read_through_gemm(VLA_PREC_BF16, VLA_FP8_E4M3, 1.0f, x, n, got, &amax);
    for (int64_t i = 0; i < n; i++) {
        float want = ref_bf16(x[i]);
        if (f32_bits(got[i]) != f32_bits(want) && !(got[i] == 0 && want == 0))
            fail_msg("bf16: x = %a read as %a, want %a", x[i], got[i], want);
    }
    assert_true(amax == 0.0f); /* bf16 records no amax */
    free(x), free(got);
}

/* ---- random GEMMs against a float64 triple loop ---------------------------------------- */

static void ref_gemm(vla_precision mode, const float sa[2], int fa, int fb, bool ta, bool tb, int64_t m, int64_t n,
                     int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc, double *bound) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                float av = ta ? a[p * lda + i] : a[i * lda + p], bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                if (mode == VLA_PREC_BF16) av = ref_bf16(av), bv = ref_bf16(bv);
                if (mode == VLA_PREC_FP8) av = ref_read_fp8(fa, sa[0], av), bv = ref_read_fp8(fb, sa[1], bv);
                sum += (double)av * bv, mag += fabs((double)av * bv);
            }
            double old = c[i * ldc + j];
            c[i * ldc + j] = (float)(alpha * sum + beta * old);
            /* f32 accumulation of k products and the α/β update: (k + 3)·2⁻²⁴ of the magnitudes */
            bound[i * n + j] = (double)(k + 3) * 0x1p-24 * (fabs((double)alpha) * mag + fabs(beta * old)) + 1e-30;
        }
}

static void test_random_gemms(void **state) {
    (void)state;
    load_tables();
    vla_rng r = vla_rng_stream(11, 0);
    for (int iter = 0; iter < 60; iter++) {
        vla_precision mode = iter % 3 == 0 ? VLA_PREC_BF16 : VLA_PREC_FP8;
        bool ta = vla_rng_u32(&r) & 1, tb = vla_rng_u32(&r) & 1;
        int64_t m = vla_rng_int(&r, 1, 40), n = vla_rng_int(&r, 1, 40), k = vla_rng_int(&r, 1, 70);
        if (iter % 10 == 0) /* bf16 from 128³ multiply-adds up: oneDNN's bf16 kernels where the CPU has them */
            m = vla_rng_int(&r, 130, 200), n = vla_rng_int(&r, 130, 200), k = vla_rng_int(&r, 130, 200);
        int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        int64_t lda = ac + vla_rng_int(&r, 0, 3), ldb = bc + vla_rng_int(&r, 0, 3), ldc = n + vla_rng_int(&r, 0, 2);
        float *a = malloc(sizeof(float) * ar * lda), *b = malloc(sizeof(float) * br * ldb);
        float *c = malloc(sizeof(float) * m * ldc), *want = malloc(sizeof(float) * m * ldc);
        double *bound = malloc(sizeof(double) * m * n);
        float amag = ldexpf(1.0f, (int)vla_rng_int(&r, -12, 8)), bmag = ldexpf(1.0f, (int)vla_rng_int(&r, -20, 4));
        float true_amax[2] = {0, 0};
        for (int64_t i = 0; i < ar * lda; i++) {
            bool pad = i % lda >= ac;
            a[i] = pad ? NAN : amag * (float)vla_rng_normal(&r);
            if (!pad && fabsf(a[i]) > true_amax[0]) true_amax[0] = fabsf(a[i]);
        }
        for (int64_t i = 0; i < br * ldb; i++) {
            bool pad = i % ldb >= bc;
            b[i] = pad ? NAN : bmag * (float)vla_rng_normal(&r);
            if (!pad && fabsf(b[i]) > true_amax[1]) true_amax[1] = fabsf(b[i]);
        }
        for (int64_t i = 0; i < m * ldc; i++) c[i] = (float)vla_rng_normal(&r);
        float alpha = iter % 4 == 1 ? -0.5f : 1.0f, beta = iter % 5 == 2 ? 0.75f : iter % 2 ? 1.0f : 0.0f;
        /* scales: well chosen (448/amax), too small (underflow), too large (saturation) */
        float sel[3] = {1.0f, 1.0f / 64, 64.0f};
        int fa = (int)(vla_rng_u32(&r) & 1), fb = 0;
        float s[2] = {(fa ? 57344.0f : 448.0f) / true_amax[0] * sel[iter % 3], 448.0f / true_amax[1]};
        memcpy(want, c, sizeof(float) * m * ldc);
        ref_gemm(mode, s, fa, fb, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc, bound);
        float prior[2] = {true_amax[0] * 0.5f, true_amax[1] * 2.0f}; /* amax accumulates: max(prior, |op|) */
        float *da = dev(a, ar * lda), *db = dev(b, br * ldb), *dc = dev(c, m * ldc), *dsa = dev(&s[0], 1),
              *dsb = dev(&s[1], 1), *dma = dev(&prior[0], 1), *dmb = dev(&prior[1], 1);
        vla_gemm_q q = {mode, {fa ? VLA_FP8_E5M2 : VLA_FP8_E4M3, dsa, dma}, {VLA_FP8_E4M3, dsb, dmb}, NULL, NULL};
        ops->sgemm_q(&q, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
        test_dev_read(ops, c, dc, m * ldc);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                if (!(fabs((double)c[i * ldc + j] - want[i * ldc + j]) <= bound[i * n + j]))
                    fail_msg("iter %d (%s, %c%c, %lldx%lldx%lld): C[%lld,%lld] = %.9g, want %.9g", iter,
                             mode == VLA_PREC_BF16 ? "bf16" : "fp8", ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m,
                             (long long)n, (long long)k, (long long)i, (long long)j, c[i * ldc + j],
                             want[i * ldc + j]);
        for (int64_t j = n; j < ldc; j++) /* C's padding untouched */
            assert_true(f32_bits(c[j]) == f32_bits(want[j]));
        float got_amax[2];
        test_dev_read(ops, &got_amax[0], dma, 1);
        test_dev_read(ops, &got_amax[1], dmb, 1);
        if (mode == VLA_PREC_FP8) {
            assert_true(got_amax[0] == true_amax[0]);  /* the prior was smaller */
            assert_true(got_amax[1] == prior[1]);      /* the prior was larger */
        } else {
            assert_true(got_amax[0] == prior[0] && got_amax[1] == prior[1]);
        }
        float *all[] = {da, db, dc, dsa, dsb, dma, dmb};
        for (int i = 0; i < 7; i++) ops->free(all[i]);
        free(a), free(b), free(c), free(want), free(bound);
    }
}

/* FP32 (and a NULL q) is sgemm, bit for bit. */
static void test_fp32_is_sgemm(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(5, 0);
    int64_t m = 33, n = 17, k = 29;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c0 = calloc(m * n, sizeof(float));
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)vla_rng_normal(&r);
    for (int64_t i = 0; i < k * n; i++) b[i] = (float)vla_rng_normal(&r);
    float *da = dev(a, m * k), *db = dev(b, k * n), *c1 = dev(c0, m * n), *c2 = dev(c0, m * n), *c3 = dev(c0, m * n);
    vla_gemm_q q = {VLA_PREC_FP32, {0}, {0}, NULL, NULL};
    ops->sgemm(false, false, m, n, k, 1.0f, da, k, db, n, 0.0f, c1, n);
    ops->sgemm_q(NULL, false, false, m, n, k, 1.0f, da, k, db, n, 0.0f, c2, n);
    ops->sgemm_q(&q, false, false, m, n, k, 1.0f, da, k, db, n, 0.0f, c3, n);
    float *h1 = test_dev_dup(ops, c1, m * n), *h2 = test_dev_dup(ops, c2, m * n), *h3 = test_dev_dup(ops, c3, m * n);
    assert_memory_equal(h1, h2, sizeof(float) * m * n);
    assert_memory_equal(h1, h3, sizeof(float) * m * n);
    ops->free(da), ops->free(db), ops->free(c1), ops->free(c2), ops->free(c3);
    free(a), free(b), free(c0), free(h1), free(h2), free(h3);
}

/* ---- the delayed-scaling update --------------------------------------------------------- */

enum { NT = 4, L = 3, STEPS = 5 };

/* Each step writes row 0 (this step's amaxes), updates, and compares the
 * scales with what TE's rule gives, worked out by hand below. Tensors:
 * 0 E4M3 with a shrinking amax; 1 E4M3 through 0 and +Inf; 2 E5M2 with a
 * NaN; 3 E4M3 with an amax so small the scale overflows. */
static const float AMAX[STEPS][NT] = {
    {2.0f, 0.0f, 4096.0f, 1e-40f},
    {1.0f, INFINITY, 8192.0f, 1e-40f},
    {0.5f, 7.0f, NAN, 0.0f},
    {0.25f, 7.0f, 1024.0f, 0.0f},
    {0.25f, 14.0f, 1024.0f, 0.0f},
};

static void run_updates(float margin, bool most_recent, const float want[STEPS][NT]) {
    const float fmt_max[NT] = {448.0f, 448.0f, 57344.0f, 448.0f};
    float ones[NT] = {1, 1, 1, 1}, zeros[L * NT] = {0};
    float *scale = dev(ones, NT), *hist = dev(zeros, L * NT);
    for (int s = 0; s < STEPS; s++) {
        ops->to_device(hist, AMAX[s], sizeof AMAX[s]); /* row 0 */
        ops->fp8_scale_update(hist, scale, NT, L, fmt_max, margin, most_recent);
        float got[NT], h[L * NT];
        test_dev_read(ops, got, scale, NT);
        test_dev_read(ops, h, hist, L * NT);
        for (int i = 0; i < NT; i++)
            if (got[i] != want[s][i])
                fail_msg("margin %g %s, step %d, tensor %d: scale %.9g, want %.9g", margin,
                         most_recent ? "most_recent" : "max", s + 1, i, got[i], want[s][i]);
        /* the history: row 0 restarted, row j holds step s+1−j's amaxes (the oldest dropped) */
        for (int i = 0; i < NT; i++) {
            assert_true(h[i] == 0.0f);
            for (int j = 1; j < L; j++) {
                float w = s + 1 - j >= 0 ? AMAX[s + 1 - j][i] : 0.0f;
                assert_true(f32_bits(h[j * NT + i]) == f32_bits(w));
            }
        }
    }
    ops->free(scale), ops->free(hist);
}

static void test_scale_update_sequence(void **state) {
    (void)state;
    const float M = FLT_MAX;
    /* "max" over a window of L = 3 steps, margin 0:
     *   t0 windows {2} {1,2} {.5,1,2} {.25,.5,1} {.25,.25,.5}: 448/2, /2, /2, /1, /.5
     *   t1: 0 keeps 1; +Inf in the window keeps the scale until it drops out at step 5: 448/14
     *   t2: 57344/4096, then /8192 while 8192 is in the window (the NaN is passed over, as fmaxf does),
     *       then {1024, 1024, NaN} → /1024
     *   t3: 448/1e-40 overflows → FLT_MAX, kept while the window's max is 1e-40, then 0 keeps it */
    const float want_max[STEPS][NT] = {{224, 1, 14, M}, {224, 1, 7, M}, {224, 1, 7, M}, {448, 1, 7, M},
                                       {896, 32, 56, M}};
    run_updates(0.0f, false, want_max);
    /* most_recent: this step's amax alone (0, Inf and NaN keep the scale) */
    const float want_recent[STEPS][NT] = {{224, 1, 14, M}, {448, 1, 7, M}, {896, 64, 7, M}, {1792, 64, 56, M},
                                          {1792, 32, 56, M}};
    run_updates(0.0f, true, want_recent);
    /* margin 2: every finite scale ÷ 4 (FLT_MAX stays: 112/1e-40 still overflows) */
    const float want_m2[STEPS][NT] = {{56, 1, 3.5f, M}, {56, 1, 1.75f, M}, {56, 1, 1.75f, M}, {112, 1, 1.75f, M},
                                      {224, 8, 14, M}};
    run_updates(2.0f, false, want_m2);
}

/* A history of one step is most_recent by another name. */
static void test_history_of_one(void **state) {
    (void)state;
    const float fmt_max[2] = {448.0f, 57344.0f};
    float ones[2] = {1, 1}, row[2] = {3.5f, 0.0f};
    float *scale = dev(ones, 2), *hist = dev(row, 2);
    ops->fp8_scale_update(hist, scale, 2, 1, fmt_max, 0.0f, false);
    float got[2], h[2];
    test_dev_read(ops, got, scale, 2);
    test_dev_read(ops, h, hist, 2);
    assert_true(got[0] == 128.0f && got[1] == 1.0f);
    assert_true(h[0] == 0.0f && h[1] == 0.0f);
    ops->free(scale), ops->free(hist);
}

static int on_cpu(void **state) {
    (void)state;
    ops = test_cpu_backend();
    return 0;
}

static int on_checked(void **state) {
    (void)state;
    return vla_backend_get("checked", &ops) == VLA_OK ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fp8_every_code, on_cpu),
        cmocka_unit_test_setup(test_bf16_neighbourhoods, on_cpu),
        cmocka_unit_test_setup(test_random_gemms, on_cpu),
        cmocka_unit_test_setup(test_fp32_is_sgemm, on_cpu),
        cmocka_unit_test_setup(test_scale_update_sequence, on_cpu),
        cmocka_unit_test_setup(test_history_of_one, on_cpu),
        cmocka_unit_test_setup(test_fp8_every_code, on_checked),
        cmocka_unit_test_setup(test_random_gemms, on_checked),
        cmocka_unit_test_setup(test_scale_update_sequence, on_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
