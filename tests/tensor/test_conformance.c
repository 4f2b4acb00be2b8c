/* test_conformance.c — one conformance suite for every backend: each slot of
 * the op table of every backend compiled in (checked; cuda when built with
 * CUDA=1) run against the cpu backend on the same random inputs — random
 * shapes, padded strides, ragged packed batches with empty samples,
 * prefix-LM/causal/random attention groups, GQA/MQA, cross and cached
 * attention, every activation, norm, dtype and flow convention — and the
 * results compared with a tolerance per kind of op. A backend that declares
 * rtol 0 (checked) must match bit for bit; the others get the tolerance of
 * what they compute differently (cuda: summation orders, CUDA's expf, bf16
 * operands in BF16 attention), documented in docs/cuda.md. The suite also
 * asserts that it exercised every slot of the table.
 *
 * A backend that cannot run here (cuda on a machine without a GPU) is
 * skipped with its reason ("skipping backend cuda: …"); scripts/gpu_check.sh
 * runs this binary on the GPU. VLA_CONFORMANCE=name runs one backend.
 *
 * Every backend, cpu included, runs the suite a second time through the
 * profiling table (tensor/profile.h) with profiling on ("profiled:NAME"):
 * the wrapper must forward every slot unchanged (the same bits as the
 * backend itself), time every call, and run captured regions op by op. */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/attn_plan.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#include "tensor/profile.h"
#include "tensor/step_guard.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pair of backends and the data on both ------------------------------------ */

typedef struct {
    const vla_ops *ref, *dut;
    bool exact; /* dut declares rtol 0 */
    bool profiling; /* dut is the profiling table, profiling on: regions run op by op */
    vla_rng rng;
    bool covered[sizeof(vla_ops) / sizeof(void (*)(void))];
} ctx;

static ctx C;

#define COVER(slot) (C.covered[offsetof(vla_ops, slot) / sizeof(void (*)(void))] = true)

/* the same data for both: h on the cpu backend (host memory), d on the backend under test */
typedef struct {
    float *h, *d;
    int64_t n;
} tens;

static tens t_new(int64_t n) {
    tens t = {calloc((size_t)(n > 0 ? n : 1), sizeof(float)), C.dut->alloc(sizeof(float) * (size_t)(n > 0 ? n : 1)), n};
    if (!t.h || !t.d) fail_msg("out of memory for %lld floats", (long long)n);
    if (n > 0) C.dut->to_device(t.d, t.h, sizeof(float) * (size_t)n);
    return t;
}

static tens t_rand(int64_t n, float scale) {
    tens t = t_new(n);
    for (int64_t i = 0; i < n; i++) t.h[i] = scale * (float)vla_rng_normal(&C.rng);
    if (n > 0) C.dut->to_device(t.d, t.h, sizeof(float) * (size_t)n);
    return t;
}

static void t_free(tens t) {
    free(t.h);
    C.dut->free(t.d);
}

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(vla_rng_uniform(&C.rng) * (double)(hi - lo + 1)); }

/* Compare: elementwise |a − b| <= tol·max(1, |b|) (NaN only against NaN) */
static void t_check(tens t, double tol, const char *what) {
    float *got = malloc(sizeof(float) * (size_t)(t.n > 0 ? t.n : 1));
    if (t.n > 0) C.dut->to_host(got, t.d, sizeof(float) * (size_t)t.n);
    if (C.exact) tol = 0;
    for (int64_t i = 0; i < t.n; i++) {
        float a = got[i], b = t.h[i];
        if (isnan(a) || isnan(b)) {
            if (!(isnan(a) && isnan(b))) fail_msg("%s [%s]: element %lld is %g, cpu %g", what, C.dut->name, (long long)i, a, b);
            continue;
        }
        if (C.exact ? memcmp(&a, &b, 4) != 0 : fabs((double)a - b) > tol * fmax(1.0, fabs((double)b)))
            fail_msg("%s [%s]: element %lld of %lld is %.9g, cpu %.9g (tol %g)", what, C.dut->name, (long long)i,
                     (long long)t.n, a, b, tol);
    }
    free(got);
}

/* Normwise: ‖a − b‖₂ <= tol·‖b‖₂ (GEMMs, attention) */
static void t_check_norm(tens t, double tol, const char *what) {
    float *got = malloc(sizeof(float) * (size_t)(t.n > 0 ? t.n : 1));
    if (t.n > 0) C.dut->to_host(got, t.d, sizeof(float) * (size_t)t.n);
    double num = 0, den = 0;
    for (int64_t i = 0; i < t.n; i++) {
        if (C.exact && memcmp(&got[i], &t.h[i], 4) != 0)
            fail_msg("%s [%s]: element %lld is %.9g, cpu %.9g (bit-exact backend)", what, C.dut->name, (long long)i,
                     got[i], t.h[i]);
        if (isnan(got[i]) != isnan(t.h[i])) fail_msg("%s [%s]: NaN at %lld", what, C.dut->name, (long long)i);
        if (isnan(t.h[i])) continue;
        double d = (double)got[i] - t.h[i];
        num += d * d, den += (double)t.h[i] * t.h[i];
    }
    if (!C.exact && sqrt(num) > tol * sqrt(den) + 1e-30)
        fail_msg("%s [%s]: relative error %.3g > %g over %lld values", what, C.dut->name, sqrt(num / (den > 0 ? den : 1)),
                 tol, (long long)t.n);
    free(got);
}

static void check_scalar(double got, double want, double tol, const char *what) {
    if (C.exact ? got != want && !(isnan(got) && isnan(want)) : fabs(got - want) > tol * fmax(1.0, fabs(want)))
        fail_msg("%s [%s]: %.17g, cpu %.17g", what, C.dut->name, got, want);
}

/* tolerances of a non-exact backend, by kind of computation (docs/cuda.md) */
#define TOL_ULP 1e-6   /* elementwise with libm-level differences (expf, sincos) */
#define TOL_ROW 2e-5   /* row statistics and their gradients, softmax */
#define TOL_GEMM 1e-5  /* normwise, f32 accumulation in another order */
#define TOL_BF16_ATTN 3e-2
#define TOL_SUM 1e-9   /* double accumulations (relative to the sum of magnitudes) */

/* ---- memory -------------------------------------------------------------------------- */

static void t_memory(void) {
    COVER(alloc), COVER(free), COVER(to_device), COVER(to_host), COVER(copy_bytes);
    tens a = t_rand(1000, 1.0f), b = t_new(1000);
    C.dut->copy_bytes(b.d + 10, a.d + 20, 500 * sizeof(float));
    memcpy(b.h + 10, a.h + 20, 500 * sizeof(float));
    C.dut->copy_bytes(b.d, a.d, 0);
    float x = 0;
    C.dut->to_host(&x, a.d + 999, sizeof x);
    assert_true(x == a.h[999]);
    float y = 42.5f;
    C.dut->to_device(b.d + 999, &y, sizeof y);
    b.h[999] = y;
    C.exact = true; /* copies are exact on every backend */
    t_check(b, 0, "copy_bytes");
    C.exact = C.dut->rtol == 0;
    t_free(a), t_free(b);
    if (C.dut->sync) C.dut->sync();
}

/* ---- GEMM ------------------------------------------------------------------------------ */

static void t_gemm(void) {
    COVER(sgemm), COVER(sgemm_strided_batched);
    for (int trial = 0; trial < 24; trial++) {
        bool ta = trial & 1, tb = trial & 2;
        int64_t m = rnd(1, 70), n = rnd(1, 70), k = trial == 5 ? 0 : rnd(1, 90), batch = trial & 4 ? rnd(2, 4) : 1;
        int64_t lda = (ta ? m : k) + rnd(0, 3), ldb = (tb ? k : n) + rnd(0, 3), ldc = n + rnd(0, 3);
        int64_t sa = (ta ? k : m) * lda + rnd(0, 5), sb = (tb ? n : k) * ldb, sc = m * ldc + rnd(0, 2);
        tens a = t_rand(sa * batch, 1), b = t_rand(sb * batch, 1), c = t_rand(sc * batch, 1);
        float alpha = (float)vla_rng_normal(&C.rng), beta = trial % 3 == 0 ? 0.0f : 0.5f;
        if (batch == 1) {
            C.ref->sgemm(ta, tb, m, n, k, alpha, a.h, lda, b.h, ldb, beta, c.h, ldc);
            C.dut->sgemm(ta, tb, m, n, k, alpha, a.d, lda, b.d, ldb, beta, c.d, ldc);
        } else {
            C.ref->sgemm_strided_batched(ta, tb, m, n, k, alpha, a.h, lda, sa, b.h, ldb, sb, beta, c.h, ldc, sc, batch);
            C.dut->sgemm_strided_batched(ta, tb, m, n, k, alpha, a.d, lda, sa, b.d, ldb, sb, beta, c.d, ldc, sc, batch);
        }
        t_check_norm(c, TOL_GEMM, batch == 1 ? "sgemm" : "sgemm_strided_batched");
        t_check(c, 1e-3, "sgemm (elementwise)"); /* padding untouched, no element far off */
        t_free(a), t_free(b), t_free(c);
    }
}

/* sgemm_q in bf16 and FP8 (every format pair), with the scales and amaxes in backend memory */
static void t_gemm_q(void) {
    COVER(sgemm_q), COVER(fp8_scale_update);
    for (int trial = 0; trial < 20; trial++) {
        bool ta = trial & 1, tb = trial & 2;
        int64_t m = rnd(1, 64), n = trial % 5 == 0 ? 32 : rnd(1, 64), k = rnd(1, 80);
        int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
        tens a = t_rand((ta ? k : m) * lda, 2), b = t_rand((tb ? n : k) * ldb, 0.5f), c = t_rand(m * ldc, 1);
        tens sc = t_new(4); /* scale a, scale b, amax a, amax b */
        sc.h[0] = 32.0f, sc.h[1] = 256.0f, sc.h[2] = 0.25f, sc.h[3] = 0.0f;
        C.dut->to_device(sc.d, sc.h, 4 * sizeof(float));
        vla_gemm_q qh = {.mode = trial % 3 == 0 ? VLA_PREC_BF16 : VLA_PREC_FP8}, qd;
        qh.a = (vla_fp8_operand){trial % 4 == 1 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, sc.h, sc.h + 2};
        qh.b = (vla_fp8_operand){trial % 4 >= 2 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, sc.h + 1, sc.h + 3};
        qd = qh;
        qd.a.scale = sc.d, qd.a.amax = sc.d + 2, qd.b.scale = sc.d + 1, qd.b.amax = sc.d + 3;
        C.ref->sgemm_q(&qh, ta, tb, m, n, k, 0.75f, a.h, lda, b.h, ldb, 0.5f, c.h, ldc);
        C.dut->sgemm_q(&qd, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, 0.5f, c.d, ldc);
        t_check_norm(c, TOL_GEMM, qh.mode == VLA_PREC_BF16 ? "sgemm_q bf16" : "sgemm_q fp8");
        bool was = C.exact;
        C.exact = true; /* scales untouched, amaxes are maxima: exact everywhere */
        t_check(sc, 0, "sgemm_q scales and amaxes");
        C.exact = was;
        t_free(a), t_free(b), t_free(c), t_free(sc);
    }
    /* the delayed-scaling update */
    for (int trial = 0; trial < 6; trial++) {
        int64_t n = rnd(1, 9), L = rnd(1, 16);
        tens hist = t_new(n * L), scale = t_new(n);
        float *fm = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n * L; i++) {
            double u = vla_rng_uniform(&C.rng);
            hist.h[i] = u < 0.1 ? 0.0f : u < 0.13 ? NAN : u < 0.16 ? INFINITY : (float)(vla_rng_uniform(&C.rng) * 100);
        }
        for (int64_t i = 0; i < n; i++) scale.h[i] = (float)(1 + i), fm[i] = i % 2 ? VLA_E5M2_MAX : VLA_E4M3_MAX;
        C.dut->to_device(hist.d, hist.h, sizeof(float) * (size_t)(n * L));
        C.dut->to_device(scale.d, scale.h, sizeof(float) * (size_t)n);
        C.ref->fp8_scale_update(hist.h, scale.h, n, L, fm, (float)(trial % 3), trial % 2);
        C.dut->fp8_scale_update(hist.d, scale.d, n, L, fm, (float)(trial % 3), trial % 2);
        bool was = C.exact;
        C.exact = true; /* the same arithmetic (base/numfmt.h) */
        t_check(hist, 0, "fp8_scale_update history"), t_check(scale, 0, "fp8_scale_update scale");
        C.exact = was;
        free(fm), t_free(hist), t_free(scale);
    }
}

/* The bytes of n×dim values' bf16 ready copy on the dut, as prepare_operand makes it (ops.h): where the
 * backend keeps no copies (cpu: ready_bytes 0) its f32 rounded layout, which its prepare_operand writes. */
static size_t ready_size(int64_t n, int64_t dim) {
    vla_gemm_q q = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    size_t b = C.dut->ready_bytes(&q, n, dim);
    return b ? b : sizeof(float) * (size_t)(n * dim);
}

/* 0 when the dut's bytes at a and b (bytes long) are equal */
static int dut_memcmp(const void *a, const void *b, size_t bytes) {
    unsigned char *ha = malloc(bytes), *hb = malloc(bytes);
    C.dut->to_host(ha, a, bytes), C.dut->to_host(hb, b, bytes);
    int r = memcmp(ha, hb, bytes);
    free(ha), free(hb);
    return r;
}

/* writing a ready copy leaves the op's own output as it was: a and b (nd floats) equal */
static void check_unchanged(const float *a, const float *b, int64_t nd, const char *what, int trial) {
    if (dut_memcmp(a, b, sizeof(float) * (size_t)nd))
        fail_msg("%s [%s] trial %d: writing the ready copy changes the op's output", what, C.dut->name, trial);
}

/* a ready buffer of rb bytes filled with a value no copy has, so a pad left unwritten shows */
static void ready_poison(void *buf, size_t rb) { C.dut->fill((float *)buf, -7.0f, (int64_t)(rb / sizeof(float))); }

/* ready (rb bytes) is prepare_operand's bf16 copy of val [n][dim] (stride ld), byte for byte; scratch: rb bytes */
static void check_ready(const void *ready, const float *val, int64_t n, int64_t dim, int64_t ld, void *scratch,
                        size_t rb, const char *what, int trial) {
    const vla_gemm_q bf = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    ready_poison(scratch, rb);
    C.dut->prepare_operand(&bf, true, n, dim, val, ld, scratch);
    if (dut_memcmp(scratch, ready, rb))
        fail_msg("%s [%s] trial %d (%lld × %lld): the ready copy differs from prepare_operand's", what, C.dut->name,
                 trial, (long long)n, (long long)dim);
}

/* an FP8 ready copy's size on the dut for [n][dim] (cpu: its cast's f32 layout) */
static size_t ready_size_fp8(int64_t n, int64_t dim) {
    vla_gemm_q q = {VLA_PREC_FP8, {0}, {VLA_FP8_E4M3, NULL, NULL}, NULL, NULL};
    size_t b = C.dut->ready_bytes(&q, n, dim);
    return b ? b : sizeof(float) * (size_t)(n * dim);
}

/* ready (rb bytes, poisoned before the op wrote it) is the FP8 copy prepare_operand makes of val [n][dim]
 * (stride ld) with op8's format and scale, byte for byte (1/s included), and *op8->amax (0 before the op)
 * is that cast's amax */
static void check_ready_fp8(const void *ready, size_t rb, const float *val, int64_t n, int64_t dim, int64_t ld,
                            const vla_fp8_operand *op8, const char *what, int trial) {
    float *am = C.dut->alloc(sizeof(float));
    void *ref = C.dut->alloc(rb);
    C.dut->fill(am, 0.0f, 1);
    ready_poison(ref, rb);
    const vla_gemm_q q8 = {VLA_PREC_FP8, {0}, {op8->fmt, op8->scale, am}, NULL, NULL};
    C.dut->prepare_operand(&q8, true, n, dim, val, ld, ref);
    if (dut_memcmp(ref, ready, rb))
        fail_msg("%s [%s] trial %d (%lld × %lld, %s): the FP8 copy differs from prepare_operand's", what, C.dut->name,
                 trial, (long long)n, (long long)dim, op8->fmt == VLA_FP8_E5M2 ? "E5M2" : "E4M3");
    if (dut_memcmp(am, op8->amax, sizeof(float)))
        fail_msg("%s [%s] trial %d: the FP8 copy's amax differs from prepare_operand's", what, C.dut->name, trial);
    C.dut->free(am), C.dut->free(ref);
}

/* an FP8 copy's operand for a test: a scale that is no power of two (the product rounds), the amax zeroed */
static vla_fp8_operand fp8_for_test(float *scale_amax, int trial) {
    const float s[2] = {37.3f + (float)trial, 0.0f};
    C.dut->to_device(scale_amax, s, sizeof s);
    return (vla_fp8_operand){trial % 3 == 2 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, scale_amax, scale_amax + 1};
}

/* prepare_operand_pair (ops.h): both FP8 copies of one stored matrix in one pass — byte for byte what the two
 * prepare_operand casts write (1/s and both pads included), and their amax; ragged shapes cross the tile
 * and pad edges, a huge value saturates, a NaN reads as an infinite amax */
static void t_cast_pair(void) {
    COVER(prepare_operand_pair);
    for (int trial = 0; trial < 12; trial++) {
        int64_t rows = trial == 11 ? rnd(600, 700) : rnd(1, 90), cols = rnd(1, 90), ld = cols + rnd(0, 5);
        tens b = t_rand(rows * ld, 3);
        if (trial % 4 == 1) b.h[rnd(0, rows * ld - 1)] = 1e6f;
        if (trial % 4 == 3) b.h[rnd(0, rows * ld - 1)] = NAN;
        C.dut->to_device(b.d, b.h, sizeof(float) * (size_t)(rows * ld));
        float *sc = C.dut->alloc(3 * sizeof(float)); /* the scale, the pair's amax, the two casts' */
        vla_fp8_operand op = fp8_for_test(sc, trial);
        C.dut->fill(sc + 2, 0.0f, 1);
        vla_gemm_q q = {VLA_PREC_FP8, {0}, op, NULL, NULL}, q2 = q;
        q2.b.amax = sc + 2;
        size_t bn = C.dut->ready_bytes(&q, rows, cols), bt = C.dut->ready_bytes(&q, cols, rows);
        if (!bn) bn = bt = sizeof(float) * (size_t)(rows * cols); /* cpu: its casts' f32 layout */
        void *pn = C.dut->alloc(bn), *pt = C.dut->alloc(bt), *rn = C.dut->alloc(bn), *rt = C.dut->alloc(bt);
        ready_poison(pn, bn), ready_poison(rn, bn), ready_poison(pt, bt), ready_poison(rt, bt);
        C.dut->prepare_operand_pair(&q, rows, cols, b.d, ld, pn, pt);
        C.dut->prepare_operand(&q2, true, rows, cols, b.d, ld, rn);
        C.dut->prepare_operand(&q2, false, cols, rows, b.d, ld, rt);
        if (dut_memcmp(pn, rn, bn) || dut_memcmp(pt, rt, bt))
            fail_msg("prepare_operand_pair [%s] trial %d (%lld × %lld, ld %lld, %s): a copy differs from "
                     "prepare_operand's (%s)", C.dut->name, trial, (long long)rows, (long long)cols, (long long)ld,
                     op.fmt == VLA_FP8_E5M2 ? "E5M2" : "E4M3", dut_memcmp(pn, rn, bn) ? "as stored" : "transposed");
        if (dut_memcmp(sc + 1, sc + 2, sizeof(float)))
            fail_msg("prepare_operand_pair [%s] trial %d: the amax differs from the casts'", C.dut->name, trial);
        C.dut->free(sc), C.dut->free(pn), C.dut->free(pt), C.dut->free(rn), C.dut->free(rt);
        t_free(b);
    }
}

/* GEMM-ready operands: where a backend keeps them (ready_bytes > 0), a
 * GEMM reading prepare_operand's copy of B (and of A) gives the bits of the
 * same GEMM casting them itself — and the same amaxes */
static void t_gemm_ready(void) {
    COVER(ready_bytes), COVER(prepare_operand);
    for (int trial = 0; trial < 12; trial++) {
        bool ta = trial & 1, tb = trial & 2;
        vla_precision mode = trial % 3 == 0 ? VLA_PREC_BF16 : VLA_PREC_FP8;
        int64_t m = rnd(1, 40), n = trial % 4 == 0 ? 32 : rnd(1, 48), k = rnd(1, 70);
        int64_t lda = ta ? m : k, ldb = (tb ? k : n) + (trial % 5 == 0 ? 3 : 0), ldc = n;
        tens a = t_rand((ta ? k : m) * lda, 2), b = t_rand((tb ? n : k) * ldb, 0.5f);
        tens c1 = t_rand(m * ldc, 1), sc = t_new(6); /* scale a, scale b, amax a, amax b (twice) */
        sc.h[0] = 32.0f, sc.h[1] = 128.0f;
        C.dut->to_device(sc.d, sc.h, 6 * sizeof(float));
        float *c2 = C.dut->alloc(sizeof(float) * (size_t)(m * ldc));
        C.dut->copy(c2, c1.d, m * ldc);
        vla_gemm_q q1 = {mode, {VLA_FP8_E4M3, sc.d, sc.d + 2}, {VLA_FP8_E4M3, sc.d + 1, sc.d + 3}, NULL, NULL}, q2 = q1;
        q2.a.amax = sc.d + 4, q2.b.amax = sc.d + 5;
        size_t bytes = C.dut->ready_bytes(&q2, n, k);
        if (C.dut->ready_bytes(NULL, n, k) != 0) fail_msg("ready_bytes [%s]: an f32 GEMM has nothing to prepare", C.dut->name);
        void *ready = bytes ? C.dut->alloc(bytes) : NULL;
        if (ready) {
            C.dut->prepare_operand(&q2, tb, n, k, b.d, ldb, ready);
            q2.b_ready = ready;
        }
        /* from trial 6 on, op(A) ready too: prepared as the B of a GEMM with B = A (ops.h, a_ready) */
        vla_gemm_q qa = {mode, {0}, q2.a, NULL, NULL};
        size_t bytes_a = trial >= 6 ? C.dut->ready_bytes(&qa, m, k) : 0;
        void *ready_a = bytes_a ? C.dut->alloc(bytes_a) : NULL;
        if (ready_a) {
            C.dut->prepare_operand(&qa, !ta, m, k, a.d, lda, ready_a);
            q2.a_ready = ready_a;
        }
        C.dut->sgemm_q(&q1, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, 0.5f, c1.d, ldc);
        C.dut->sgemm_q(&q2, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, 0.5f, c2, ldc);
        float *h1 = malloc(sizeof(float) * (size_t)(m * ldc)), *h2 = malloc(sizeof(float) * (size_t)(m * ldc)), s6[6];
        C.dut->to_host(h1, c1.d, sizeof(float) * (size_t)(m * ldc));
        C.dut->to_host(h2, c2, sizeof(float) * (size_t)(m * ldc));
        C.dut->to_host(s6, sc.d, sizeof s6);
        if (memcmp(h1, h2, sizeof(float) * (size_t)(m * ldc)))
            fail_msg("sgemm_q [%s] trial %d: a ready B (%zu bytes), A (%zu) changes the result", C.dut->name, trial,
                     bytes, bytes_a);
        if (mode == VLA_PREC_FP8 && (s6[2] != s6[4] || s6[3] != s6[5]))
            fail_msg("sgemm_q [%s] trial %d: a ready B changes the amaxes (%g/%g vs %g/%g)", C.dut->name, trial, s6[2],
                     s6[3], s6[4], s6[5]);
        if (mode == VLA_PREC_BF16 && ready) { /* kept copies (ops.h): the f32 operands gone, their copies read */
            C.dut->copy(c2, c1.d, m * ldc);
            C.dut->sgemm_q(&q1, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, 0.5f, c1.d, ldc);
            C.dut->sgemm_q(&q2, ta, tb, m, n, k, 0.75f, ready_a ? NULL : a.d, lda, NULL, ldb, 0.5f, c2, ldc);
            C.dut->to_host(h1, c1.d, sizeof(float) * (size_t)(m * ldc));
            C.dut->to_host(h2, c2, sizeof(float) * (size_t)(m * ldc));
            if (memcmp(h1, h2, sizeof(float) * (size_t)(m * ldc)))
                fail_msg("sgemm_q [%s] trial %d: B%s given only as its bf16 copy changes the result", C.dut->name,
                         trial, ready_a ? " and A" : "");
        }
        free(h1), free(h2);
        if (ready) C.dut->free(ready);
        if (ready_a) C.dut->free(ready_a);
        C.dut->free(c2);
        t_free(a), t_free(b), t_free(c1), t_free(sc);
    }
    /* cpu keeps none; its prepare_operand (which checked runs) still makes the rounded copy */
    vla_gemm_q qb = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    if (C.ref->ready_bytes(&qb, 4, 4) != 0) fail_msg("ready_bytes [cpu]: the cpu backend keeps no copies");
}

/* sgemm_epi: the GEMM, then bias, pre and activation — against those steps
 * done one by one on the cpu backend (the cpu's own sgemm_epi must give
 * their bits exactly; the others within the GEMM's tolerance). */
static void t_gemm_epi(void) {
    COVER(sgemm_epi);
    static const vla_act acts[4] = {VLA_ACT_IDENTITY, VLA_ACT_GELU_TANH, VLA_ACT_SILU, VLA_ACT_RELU};
    for (int trial = 0; trial < 24; trial++) {
        bool ta = trial & 1, tb = trial & 2, with_bias = trial % 5 != 0, with_pre = trial % 3 != 0;
        vla_act act = acts[trial % 4];
        vla_precision mode = trial % 6 < 2 ? VLA_PREC_FP32 : trial % 6 < 4 ? VLA_PREC_BF16 : VLA_PREC_FP8;
        int64_t m = rnd(1, 64), n = rnd(1, 64), k = rnd(1, 80), ldc = n + (trial % 4 == 3 ? rnd(1, 3) : 0);
        int64_t lda = ta ? m : k, ldb = tb ? k : n;
        float beta = trial % 7 == 0 ? 0.5f : 0.0f;
        tens a = t_rand((ta ? k : m) * lda, 1), b = t_rand((tb ? n : k) * ldb, 0.5f), c = t_rand(m * ldc, 1);
        tens bias = t_rand(n, 1), pre = t_rand(m * ldc, 1), sc = t_new(4);
        sc.h[0] = 32.0f, sc.h[1] = 128.0f;
        C.dut->to_device(sc.d, sc.h, 4 * sizeof(float));
        vla_gemm_q qh = {.mode = mode}, qd;
        qh.a = (vla_fp8_operand){VLA_FP8_E4M3, sc.h, sc.h + 2}, qh.b = (vla_fp8_operand){VLA_FP8_E4M3, sc.h + 1, sc.h + 3};
        qd = qh;
        qd.a.scale = sc.d, qd.a.amax = sc.d + 2, qd.b.scale = sc.d + 1, qd.b.amax = sc.d + 3;
        const vla_gemm_q *q_h = mode == VLA_PREC_FP32 && trial % 2 ? NULL : &qh, *q_d = q_h ? &qd : NULL;
        vla_gemm_epilogue eh = {with_bias ? bias.h : NULL, act, with_pre ? pre.h : NULL, NULL, NULL};
        vla_gemm_epilogue ed = {with_bias ? bias.d : NULL, act, with_pre ? pre.d : NULL, NULL, NULL};
        /* the cpu's own, then the reference's steps one by one on copies */
        float *c0 = malloc(sizeof(float) * (size_t)(m * ldc)), *p0 = malloc(sizeof(float) * (size_t)(m * ldc));
        memcpy(c0, c.h, sizeof(float) * (size_t)(m * ldc)), memcpy(p0, pre.h, sizeof(float) * (size_t)(m * ldc));
        C.ref->sgemm_epi(q_h, &eh, ta, tb, m, n, k, 0.75f, a.h, lda, b.h, ldb, beta, c.h, ldc);
        C.ref->sgemm_q(q_h, ta, tb, m, n, k, 0.75f, a.h, lda, b.h, ldb, beta, c0, ldc);
        for (int64_t r = 0; r < m; r++) {
            float *row = c0 + r * ldc;
            if (with_bias)
                for (int64_t j = 0; j < n; j++) row[j] += bias.h[j];
            if (act != VLA_ACT_IDENTITY && with_pre) memcpy(p0 + r * ldc, row, sizeof(float) * (size_t)n);
            if (act != VLA_ACT_IDENTITY) C.ref->act_forward(act, row, row, n);
        }
        if (memcmp(c0, c.h, sizeof(float) * (size_t)(m * ldc)) || memcmp(p0, pre.h, sizeof(float) * (size_t)(m * ldc)))
            fail_msg("sgemm_epi [cpu]: trial %d is not its steps' bits", trial);
        free(c0), free(p0);
        C.dut->sgemm_epi(q_d, &ed, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, beta, c.d, ldc);
        t_check_norm(c, TOL_GEMM, "sgemm_epi");
        t_check_norm(pre, TOL_GEMM, "sgemm_epi pre");
        t_check(c, 1e-3, "sgemm_epi (elementwise: the padding untouched)");
        { /* the ready copy: prepare_operand's of the dut's own C (packed, whatever ldc), byte for byte, the pad
           * written */
            size_t rb = ready_size(m, n);
            void *r1 = C.dut->alloc(rb), *r2 = C.dut->alloc(rb);
            ready_poison(r2, rb);
            vla_gemm_epilogue er = ed;
            er.ready = r2;
            float *c2 = C.dut->alloc(sizeof(float) * (size_t)(m * ldc));
            C.dut->to_device(c2, c.h, sizeof(float) * (size_t)(m * ldc)); /* any start: beta reads it */
            float *c3 = C.dut->alloc(sizeof(float) * (size_t)(m * ldc));
            C.dut->copy(c3, c2, m * ldc);
            C.dut->sgemm_epi(q_d, &ed, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, beta, c3, ldc);
            C.dut->sgemm_epi(q_d, &er, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, beta, c2, ldc);
            check_unchanged(c2, c3, m * ldc, "sgemm_epi ready", trial);
            check_ready(r2, c2, m, n, ldc, r1, rb, "sgemm_epi ready", trial);
            if (act != VLA_ACT_IDENTITY && with_pre && beta == 0.0f) {
                /* kept (ops.h, KEPT COPIES): no C — t into pre and act(t) the copy alone: that copy and pre
                 * byte for byte those of the run with C (pre.d now), pre's padding columns left alone */
                size_t pb = sizeof(float) * (size_t)(m * ldc);
                float *p3 = C.dut->alloc(pb), *pw = C.dut->alloc(pb);
                void *r3 = C.dut->alloc(rb);
                C.dut->fill(p3, -7.0f, m * ldc), C.dut->fill(pw, -7.0f, m * ldc), ready_poison(r3, rb);
                for (int64_t r = 0; r < m; r++) C.dut->copy(pw + r * ldc, pre.d + r * ldc, n);
                vla_gemm_epilogue ek = er;
                ek.pre = p3, ek.ready = r3;
                C.dut->sgemm_epi(q_d, &ek, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, 0.0f, NULL, ldc);
                if (dut_memcmp(p3, pw, pb) || dut_memcmp(r3, r2, rb))
                    fail_msg("sgemm_epi [%s] trial %d: with no C (a kept copy) pre or the copy differ", C.dut->name,
                             trial);
                C.dut->free(p3), C.dut->free(pw), C.dut->free(r3);
            }
            /* the FP8 copy (ready_fp8): the down projection's input cast of a GELU MLP */
            size_t rb8 = ready_size_fp8(m, n);
            float *sc8 = C.dut->alloc(2 * sizeof(float));
            void *r8 = C.dut->alloc(rb8);
            vla_fp8_operand op8 = fp8_for_test(sc8, trial);
            ready_poison(r8, rb8);
            er.ready = r8, er.ready_fp8 = &op8;
            C.dut->to_device(c2, c.h, sizeof(float) * (size_t)(m * ldc)); /* the start c3 had */
            C.dut->sgemm_epi(q_d, &er, ta, tb, m, n, k, 0.75f, a.d, lda, b.d, ldb, beta, c2, ldc);
            check_unchanged(c2, c3, m * ldc, "sgemm_epi ready_fp8", trial);
            check_ready_fp8(r8, rb8, c2, m, n, ldc, &op8, "sgemm_epi ready_fp8", trial);
            C.dut->free(sc8), C.dut->free(r8);
            C.dut->free(r1), C.dut->free(r2), C.dut->free(c2), C.dut->free(c3);
        }
        t_free(a), t_free(b), t_free(c), t_free(bias), t_free(pre), t_free(sc);
    }
    /* no epilogue: sgemm_q */
    tens a = t_rand(6 * 5, 1), b = t_rand(5 * 4, 1), c = t_new(6 * 4);
    C.ref->sgemm_epi(NULL, NULL, false, false, 6, 4, 5, 1.0f, a.h, 5, b.h, 4, 0.0f, c.h, 4);
    C.dut->sgemm_epi(NULL, NULL, false, false, 6, 4, 5, 1.0f, a.d, 5, b.d, 4, 0.0f, c.d, 4);
    t_check_norm(c, TOL_GEMM, "sgemm_epi (none)");
    t_free(a), t_free(b), t_free(c);
}

/* the per-segment linear: packed segments (some empty) with their own
 * matrices, bias or not, every subset of the backward's outputs */
static void t_segment_linear(void) {
    COVER(segment_linear_forward), COVER(segment_linear_backward);
    for (int trial = 0; trial < 10; trial++) {
        int32_t n_seg = (int32_t)rnd(0, 9), n_mat = (int32_t)rnd(1, 4);
        int64_t in = rnd(1, 90), out = trial % 3 == 0 ? 64 : rnd(1, 150);
        int32_t cu[10], ids[9];
        cu[0] = 0;
        for (int32_t s = 0; s < n_seg; s++) {
            cu[s + 1] = cu[s] + (int32_t)(rnd(0, 4) == 0 ? 0 : rnd(1, 40)); /* GR00T: 16 rows, or 1 */
            ids[s] = (int32_t)rnd(0, n_mat - 1);
        }
        int64_t n = cu[n_seg];
        tens x = t_rand(n * in, 1), w = t_rand(n_mat * in * out, 0.3f), b = t_rand(n_mat * out, 1);
        tens y = t_rand(n * out, 1), dy = t_rand(n * out, 1), dx = t_rand(n * in, 1);
        tens dw = t_rand(n_mat * in * out, 1), db = t_rand(n_mat * out, 1);
        const bool with_b = trial % 2 == 0;
        C.ref->segment_linear_forward(y.h, x.h, w.h, with_b ? b.h : NULL, ids, cu, n_seg, in, out);
        C.dut->segment_linear_forward(y.d, x.d, w.d, with_b ? b.d : NULL, ids, cu, n_seg, in, out);
        t_check_norm(y, TOL_GEMM, "segment_linear_forward");
        bool gx = trial % 4 != 1, gw = trial % 4 != 2, gb = trial % 4 != 3;
        if (gx) C.dut->fill(dx.d, NAN, cu[n_seg] * in); /* dx is written, not added to (ops.h) */
        C.ref->segment_linear_backward(gx ? dx.h : NULL, gw ? dw.h : NULL, gb ? db.h : NULL, dy.h, x.h, w.h, ids, cu,
                                       n_seg, in, out);
        C.dut->segment_linear_backward(gx ? dx.d : NULL, gw ? dw.d : NULL, gb ? db.d : NULL, dy.d, x.d, w.d, ids, cu,
                                       n_seg, in, out);
        t_check_norm(dx, TOL_GEMM, "segment_linear_backward dx");
        t_check_norm(dw, TOL_GEMM, "segment_linear_backward dw");
        t_check_norm(db, TOL_GEMM, "segment_linear_backward db");
        t_check(dw, 1e-3, "segment_linear_backward dw (elementwise: matrices no segment uses untouched)");
        t_free(x), t_free(w), t_free(b), t_free(y), t_free(dy), t_free(dx), t_free(dw), t_free(db);
    }
}

/* ---- elementwise ------------------------------------------------------------------------- */

static void t_elementwise(void) {
    COVER(fill), COVER(copy), COVER(add), COVER(sub), COVER(mul), COVER(axpy), COVER(scale), COVER(affine);
    COVER(scale_to), COVER(add_row_vector), COVER(adamw), COVER(ema);
    int64_t n = rnd(1000, 5000), rows = 37, cols = 29;
    tens x = t_rand(n, 1), y = t_rand(n, 1), z = t_new(n), w = t_rand(rows * cols, 1), bias = t_rand(cols, 1);
    C.ref->fill(z.h, -1.5f, n), C.dut->fill(z.d, -1.5f, n), t_check(z, 0, "fill");
    C.ref->copy(z.h, x.h, n), C.dut->copy(z.d, x.d, n), t_check(z, 0, "copy");
    C.ref->copy(z.h + 1, z.h, n - 1), C.dut->copy(z.d + 1, z.d, n - 1), t_check(z, 0, "copy (overlapping)");
    C.ref->add(z.h, x.h, y.h, n), C.dut->add(z.d, x.d, y.d, n), t_check(z, 0, "add");
    C.ref->sub(z.h, x.h, y.h, n), C.dut->sub(z.d, x.d, y.d, n), t_check(z, 0, "sub");
    C.ref->mul(z.h, z.h, y.h, n), C.dut->mul(z.d, z.d, y.d, n), t_check(z, 0, "mul (aliased)");
    C.ref->axpy(z.h, 0.3f, x.h, n), C.dut->axpy(z.d, 0.3f, x.d, n), t_check(z, 0, "axpy");
    C.ref->scale(z.h, -2.5f, n), C.dut->scale(z.d, -2.5f, n), t_check(z, 0, "scale");
    C.ref->affine(z.h, x.h, 0.7f, 0.1f, n), C.dut->affine(z.d, x.d, 0.7f, 0.1f, n), t_check(z, 0, "affine");
    C.ref->scale_to(z.h, x.h, 1.0 / 3.0, n), C.dut->scale_to(z.d, x.d, 1.0 / 3.0, n), t_check(z, 0, "scale_to");
    C.ref->add_row_vector(w.h, bias.h, rows, cols), C.dut->add_row_vector(w.d, bias.d, rows, cols);
    t_check(w, 0, "add_row_vector");
    /* AdamW with and without decay, then EMA */
    tens g = t_rand(n, 0.1f), m = t_rand(n, 0.01f), v = t_new(n);
    for (int64_t i = 0; i < n; i++) v.h[i] = (float)fabs(vla_rng_normal(&C.rng)) * 1e-3f;
    C.dut->to_device(v.d, v.h, sizeof(float) * (size_t)n);
    vla_adamw_scalars s = {0.9f, 0.1f, 0.999f, 0.001f, 0.0447f, 1e-8f, -1e-3f, 0.9999f, 0.8f, NULL};
    for (int dec = 0; dec < 2; dec++) {
        C.ref->adamw(x.h, g.h, m.h, v.h, n, &s, dec), C.dut->adamw(x.d, g.d, m.d, v.d, n, &s, dec);
        t_check(x, TOL_ULP, "adamw w"), t_check(m, TOL_ULP, "adamw m"), t_check(v, TOL_ULP, "adamw v");
    }
    C.ref->ema(y.h, x.h, 0.99f, 0.01f, n, NULL), C.dut->ema(y.d, x.d, 0.99f, 0.01f, n, NULL), t_check(y, TOL_ULP, "ema");
    { /* many tensors at once: each the bits of its own adamw / ema on this backend (here, against the per-tensor
       * calls made on copies), with and without decay, and a NaN guard leaving all of them untouched */
        COVER(adamw_multi), COVER(ema_multi);
        enum { NT = 5 };
        const int64_t ns[NT] = {3, 0, 70000, 1, 131073};
        tens tw[NT], tg[NT], tm[NT], tv[NT], tw2[NT], tm2[NT], tv2[NT], te[NT], te2[NT];
        float *pw[NT], *pm[NT], *pv[NT], *pe[NT];
        const float *pg[NT], *pwc[NT];
        bool dec[NT] = {true, false, true, false, true};
        for (int i = 0; i < NT; i++) {
            tw[i] = t_rand(ns[i], 1), tg[i] = t_rand(ns[i], 0.1f), tm[i] = t_rand(ns[i], 0.01f), tv[i] = t_new(ns[i]);
            te[i] = t_rand(ns[i], 1);
            for (int64_t k = 0; k < ns[i]; k++) tv[i].h[k] = 1e-4f * (float)(k % 7);
            if (ns[i]) C.dut->to_device(tv[i].d, tv[i].h, sizeof(float) * (size_t)ns[i]);
            tw2[i] = t_new(ns[i]), tm2[i] = t_new(ns[i]), tv2[i] = t_new(ns[i]), te2[i] = t_new(ns[i]);
            C.dut->copy(tw2[i].d, tw[i].d, ns[i]), C.dut->copy(tm2[i].d, tm[i].d, ns[i]);
            C.dut->copy(tv2[i].d, tv[i].d, ns[i]), C.dut->copy(te2[i].d, te[i].d, ns[i]);
            pw[i] = tw[i].d, pg[i] = tg[i].d, pm[i] = tm[i].d, pv[i] = tv[i].d, pe[i] = te[i].d, pwc[i] = tw[i].d;
        }
        float *guard = C.dut->alloc(sizeof(float));
        const float nan = NAN;
        C.dut->to_device(guard, &nan, sizeof nan);
        vla_adamw_scalars sg = s;
        sg.guard = guard;
        C.dut->adamw_multi(NT, pw, pg, pm, pv, ns, dec, &sg); /* skipped */
        C.dut->ema_multi(NT, pe, pwc, ns, 0.99f, 0.01f, guard);
        C.dut->adamw_multi(NT, pw, pg, pm, pv, ns, dec, &s);
        C.dut->ema_multi(NT, pe, pwc, ns, 0.99f, 0.01f, NULL);
        for (int i = 0; i < NT; i++) {
            C.dut->adamw(tw2[i].d, tg[i].d, tm2[i].d, tv2[i].d, ns[i], &s, dec[i]);
            C.dut->ema(te2[i].d, tw2[i].d, 0.99f, 0.01f, ns[i], NULL);
            const tens *pairs[4][2] = {{&tw[i], &tw2[i]}, {&tm[i], &tm2[i]}, {&tv[i], &tv2[i]}, {&te[i], &te2[i]}};
            for (int q = 0; q < 4; q++) {
                float *hx = malloc(sizeof(float) * (size_t)(ns[i] + 1)), *hy = malloc(sizeof(float) * (size_t)(ns[i] + 1));
                if (ns[i]) {
                    C.dut->to_host(hx, pairs[q][0]->d, sizeof(float) * (size_t)ns[i]);
                    C.dut->to_host(hy, pairs[q][1]->d, sizeof(float) * (size_t)ns[i]);
                }
                if (memcmp(hx, hy, sizeof(float) * (size_t)ns[i]))
                    fail_msg("%s [%s]: tensor %d (n %lld, part %d) differs from its own per-tensor call",
                             q == 3 ? "ema_multi" : "adamw_multi", C.dut->name, i, (long long)ns[i], q);
                free(hx), free(hy);
            }
        }
        C.dut->free(guard);
        for (int i = 0; i < NT; i++) {
            t_free(tw[i]), t_free(tg[i]), t_free(tm[i]), t_free(tv[i]), t_free(te[i]);
            t_free(tw2[i]), t_free(tm2[i]), t_free(tv2[i]), t_free(te2[i]);
        }
    }
    { /* the step's guard in backend memory: a finite one is grad_scale; a NaN one leaves everything untouched */
        float *guard = C.dut->alloc(sizeof(float));
        const float gv[2] = {0.8f, NAN};
        for (int k = 0; k < 2; k++) {
            C.dut->to_device(guard, &gv[k], sizeof(float));
            vla_adamw_scalars sg = s;
            sg.grad_scale = 123.0f, sg.guard = guard; /* ignored while the guard is set */
            if (k == 0) C.ref->adamw(x.h, g.h, m.h, v.h, n, &s, true);
            C.dut->adamw(x.d, g.d, m.d, v.d, n, &sg, true);
            t_check(x, TOL_ULP, k ? "adamw w (NaN guard)" : "adamw w (guard)");
            t_check(m, TOL_ULP, "adamw m (guard)"), t_check(v, TOL_ULP, "adamw v (guard)");
            if (k == 0) C.ref->ema(y.h, x.h, 0.99f, 0.01f, n, NULL);
            C.dut->ema(y.d, x.d, 0.99f, 0.01f, n, guard);
            t_check(y, TOL_ULP, k ? "ema (NaN guard)" : "ema (guard)");
        }
        C.dut->free(guard);
    }
    t_free(x), t_free(y), t_free(z), t_free(w), t_free(bias), t_free(g), t_free(m), t_free(v);
}

static void t_activations(void) {
    COVER(act_forward), COVER(act_backward), COVER(glu_forward), COVER(glu_backward);
    int64_t n = 3001;
    tens x = t_rand(n, 3), up = t_rand(n, 1), dy = t_rand(n, 1), o = t_new(n), d1 = t_rand(n, 1), d2 = t_new(n);
    x.h[0] = 0.0f, x.h[1] = -20.0f, x.h[2] = 20.0f, x.h[3] = -100.0f;
    C.dut->to_device(x.d, x.h, 4 * sizeof(float));
    const vla_act acts[] = {VLA_ACT_GELU_TANH, VLA_ACT_SILU, VLA_ACT_RELU, VLA_ACT_IDENTITY};
    for (int a = 0; a < 4; a++) {
        C.ref->act_forward(acts[a], o.h, x.h, n), C.dut->act_forward(acts[a], o.d, x.d, n);
        t_check(o, TOL_ROW, "act_forward");
        /* OVERWRITTEN (ops.h): the dut's d_in starts as NaNs, the reference's as other values */
        C.dut->fill(d1.d, NAN, n);
        C.ref->act_backward(acts[a], d1.h, dy.h, x.h, n, 1, NULL), C.dut->act_backward(acts[a], d1.d, dy.d, x.d, n, 1, NULL);
        t_check(d1, TOL_ROW, "act_backward");
        if (acts[a] == VLA_ACT_IDENTITY) continue;
        C.ref->glu_forward(acts[a], o.h, x.h, up.h, n, 1, NULL, NULL), C.dut->glu_forward(acts[a], o.d, x.d, up.d, n, 1, NULL, NULL);
        t_check(o, TOL_ROW, "glu_forward");
        C.ref->glu_backward(acts[a], d1.h, d2.h, dy.h, x.h, up.h, n, 1, NULL, NULL);
        C.dut->glu_backward(acts[a], d1.d, d2.d, dy.d, x.d, up.d, n, 1, NULL, NULL);
        t_check(d1, TOL_ROW, "glu_backward dgate"), t_check(d2, TOL_ROW, "glu_backward dup");
    }
    t_free(x), t_free(up), t_free(dy), t_free(o), t_free(d1), t_free(d2);
}

/* ---- layout ----------------------------------------------------------------------------------- */

static void t_layout(void) {
    COVER(copy_rows), COVER(add_rows), COVER(copy2d), COVER(im2col), COVER(col2im_add), COVER(convert);
    int64_t rows = 50, w = 13, ld = 17, n = 80;
    tens src = t_rand(rows * ld, 1), dst = t_rand(rows * ld + 3, 1);
    int32_t *si = malloc(sizeof(int32_t) * (size_t)n), *di = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) si[i] = (int32_t)rnd(0, rows - 1), di[i] = (int32_t)rnd(0, rows - 1);
    int32_t perm[50];
    for (int i = 0; i < 50; i++) perm[i] = (i * 7) % 50; /* distinct destinations */
    C.ref->copy_rows(dst.h, ld, perm, src.h, ld, si, 50, w, 1.0f);
    C.dut->copy_rows(dst.d, ld, perm, src.d, ld, si, 50, w, 1.0f);
    t_check(dst, 0, "copy_rows");
    C.ref->copy_rows(dst.h + 2, ld, NULL, src.h, ld, NULL, rows, w, -0.5f);
    C.dut->copy_rows(dst.d + 2, ld, NULL, src.d, ld, NULL, rows, w, -0.5f);
    t_check(dst, 0, "copy_rows (identity, alpha)");
    C.ref->add_rows(dst.h, ld, di, src.h, ld, si, n, w, 1.0f), C.dut->add_rows(dst.d, ld, di, src.d, ld, si, n, w, 1.0f);
    t_check(dst, 0, "add_rows (repeated destinations)");
    C.ref->add_rows(dst.h, ld, perm, src.h, ld, NULL, 50, w, 0.25f);
    C.dut->add_rows(dst.d, ld, perm, src.d, ld, NULL, 50, w, 0.25f);
    t_check(dst, 0, "add_rows (distinct)");
    C.ref->add_rows(dst.h, ld, NULL, src.h, ld, NULL, rows, w, 2.0f);
    C.dut->add_rows(dst.d, ld, NULL, src.d, ld, NULL, rows, w, 2.0f);
    t_check(dst, 0, "add_rows (identity)");
    C.ref->copy2d(dst.h + 1, ld, src.h + 3, ld, 20, 9), C.dut->copy2d(dst.d + 1, ld, src.d + 3, ld, 20, 9);
    t_check(dst, 0, "copy2d");
    free(si), free(di), t_free(src), t_free(dst);
    /* ViT patches */
    int64_t ni = 3, Ch = 3, H = 12, W = 8, p = 4, np = ni * (H / p) * (W / p) * Ch * p * p;
    tens img = t_rand(ni * Ch * H * W, 1), pat = t_new(np), dpat = t_rand(np, 1);
    C.ref->im2col(pat.h, img.h, ni, Ch, H, W, p), C.dut->im2col(pat.d, img.d, ni, Ch, H, W, p);
    t_check(pat, 0, "im2col");
    C.ref->col2im_add(img.h, dpat.h, ni, Ch, H, W, p), C.dut->col2im_add(img.d, dpat.d, ni, Ch, H, W, p);
    t_check(img, 0, "col2im_add");
    t_free(img), t_free(pat), t_free(dpat);
    /* convert: every dtype pair (through raw bytes) */
    const int64_t cn = 777;
    tens f = t_rand(cn, 100);
    f.h[0] = NAN, f.h[1] = INFINITY, f.h[2] = -1e9f, f.h[3] = 300.5f, f.h[4] = -0.0f;
    C.dut->to_device(f.d, f.h, 5 * sizeof(float));
    for (int dt = 0; dt < VLA_DTYPE_COUNT; dt++)
        for (int st = 0; st < VLA_DTYPE_COUNT; st++) {
            size_t ds = vla_dtype_size((vla_dtype)dt), ss = vla_dtype_size((vla_dtype)st);
            void *hs = calloc((size_t)cn, ss), *hd = calloc((size_t)cn, ds), *got = calloc((size_t)cn, ds);
            void *ds_ = C.dut->alloc((size_t)cn * ss), *dd = C.dut->alloc((size_t)cn * ds);
            C.ref->convert(hs, (vla_dtype)st, f.h, VLA_F32, cn); /* a source of type st */
            C.dut->to_device(ds_, hs, (size_t)cn * ss);
            C.ref->convert(hd, (vla_dtype)dt, hs, (vla_dtype)st, cn);
            C.dut->convert(dd, (vla_dtype)dt, ds_, (vla_dtype)st, cn);
            C.dut->to_host(got, dd, (size_t)cn * ds);
            for (int64_t i = 0; i < cn; i++) {
                const char *a = (const char *)got + i * ds, *b = (const char *)hd + i * ds;
                bool nan_both = dt == VLA_F32 && isnan(((float *)got)[i]) && isnan(((float *)hd)[i]);
                if (memcmp(a, b, ds) && !nan_both)
                    fail_msg("convert %s → %s [%s]: element %lld differs", vla_dtype_name((vla_dtype)st),
                             vla_dtype_name((vla_dtype)dt), C.dut->name, (long long)i);
            }
            free(hs), free(hd), free(got), C.dut->free(ds_), C.dut->free(dd);
        }
    t_free(f);
}

/* ---- reductions and softmax -------------------------------------------------------------------- */

static void t_reductions(void) {
    COVER(sum), COVER(dot), COVER(sum_squares), COVER(max_abs), COVER(count_nonfinite), COVER(find_nonfinite);
    COVER(sum_rows), COVER(softmax_rows), COVER(softmax_rows_backward);
    const int64_t sizes[] = {1, 7, 4096, 4097, 100003, 2000000};
    for (unsigned si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        tens a = t_rand(n, 1), b = t_rand(n, 1);
        double mag = 0;
        for (int64_t i = 0; i < n; i++) mag += fabs(a.h[i]) * (1 + fabs(b.h[i]));
        double tol = TOL_SUM * mag;
        check_scalar(C.dut->sum(a.d, n), C.ref->sum(a.h, n), tol, "sum");
        check_scalar(C.dut->dot(a.d, b.d, n), C.ref->dot(a.h, b.h, n), tol, "dot");
        check_scalar(C.dut->sum_squares(a.d, n), C.ref->sum_squares(a.h, n), tol * 10, "sum_squares");
        check_scalar(C.dut->max_abs(a.d, n), C.ref->max_abs(a.h, n), 0, "max_abs");
        check_scalar((double)C.dut->count_nonfinite(a.d, n), (double)C.ref->count_nonfinite(a.h, n), 0, "count_nonfinite");
        check_scalar((double)C.dut->find_nonfinite(a.d, n), (double)C.ref->find_nonfinite(a.h, n), 0, "find_nonfinite");
        if (n > 100) { /* non-finite values: NaN counts as +Inf in max_abs, the first index is found */
            float bad[3] = {INFINITY, NAN, -INFINITY};
            C.dut->to_device(a.d + n / 2, &bad[0], 4), a.h[n / 2] = bad[0];
            C.dut->to_device(a.d + n / 3, &bad[1], 4), a.h[n / 3] = bad[1];
            C.dut->to_device(a.d + n - 1, &bad[2], 4), a.h[n - 1] = bad[2];
            check_scalar(C.dut->max_abs(a.d, n), C.ref->max_abs(a.h, n), 0, "max_abs (non-finite)");
            check_scalar((double)C.dut->count_nonfinite(a.d, n), 3, 0, "count_nonfinite (3)");
            check_scalar((double)C.dut->find_nonfinite(a.d, n), (double)(n / 3), 0, "find_nonfinite");
        }
        t_free(a), t_free(b);
    }
    { /* many vectors in one call (the gradient norm): each the bits of its own sum_squares on this backend */
        COVER(sum_squares_multi);
        enum { NV = 7 };
        const int64_t ns[NV] = {0, 1, 7, 4096, 4097, 100003, 3};
        tens v[NV];
        const float *xd[NV];
        double got[NV];
        for (int i = 0; i < NV; i++) v[i] = t_rand(ns[i], 2), xd[i] = v[i].d;
        C.dut->sum_squares_multi(NV, xd, ns, got);
        for (int i = 0; i < NV; i++) {
            double one = C.dut->sum_squares(v[i].d, ns[i]);
            if (memcmp(&got[i], &one, sizeof one))
                fail_msg("sum_squares_multi [%s]: vector %d (n %lld) gives %.17g, its sum_squares %.17g", C.dut->name, i,
                         (long long)ns[i], got[i], one);
            double mag = 0;
            for (int64_t k = 0; k < ns[i]; k++) mag += (double)v[i].h[k] * v[i].h[k];
            check_scalar(got[i], C.ref->sum_squares(v[i].h, ns[i]), TOL_SUM * 10 * mag, "sum_squares_multi");
        }
        C.dut->sum_squares_multi(0, xd, ns, got); /* nothing to do: no call into the device, no crash */
        /* the same sums added up on the backend, in order: the host's total bit for bit */
        COVER(sum_squares_total), COVER(clip_coef);
        double *dd = C.dut->alloc(3 * sizeof(double)), total = 0, back[3];
        float *guard = C.dut->alloc(sizeof(float)), gh;
        for (int i = 0; i < NV; i++) total += got[i];
        C.dut->sum_squares_total(NV, xd, ns, dd);
        C.dut->sum_squares_total(0, xd, ns, dd + 1);
        C.dut->to_host(back, dd, 2 * sizeof(double));
        if (memcmp(&back[0], &total, sizeof total) || back[1] != 0.0)
            fail_msg("sum_squares_total [%s]: %.17g (and %g for none), the multi's total %.17g", C.dut->name, back[0],
                     back[1], total);
        /* the guard: the clip factor, 1, or NaN for a non-finite norm or `also` — vla_step_guard's bits */
        const struct { double ss, also, max; bool with_also; } gc[] = {
            {4.0, 0, 1.0, false}, {4.0, 0, 0.0, false}, {4.0, 0, 10.0, false}, {0.0, 0, 1.0, false},
            {2.9e7, 1.5, 0.5, true}, {INFINITY, 0, 1.0, false}, {NAN, 0, 1.0, false}, {4.0, NAN, 1.0, true},
            {4.0, INFINITY, 0.0, true},
        };
        for (unsigned i = 0; i < sizeof gc / sizeof gc[0]; i++) {
            double in[2] = {gc[i].ss, gc[i].also};
            C.dut->to_device(dd + 1, in, sizeof in);
            C.dut->clip_coef(guard, dd + 1, gc[i].with_also ? dd + 2 : NULL, gc[i].max);
            C.dut->to_host(&gh, guard, sizeof gh);
            float want = vla_step_guard(gc[i].ss, gc[i].with_also, gc[i].also, gc[i].max);
            if (memcmp(&gh, &want, sizeof gh) && !(isnan(gh) && isnan(want)))
                fail_msg("clip_coef [%s]: case %u gives %.9g, want %.9g", C.dut->name, i, gh, want);
        }
        /* none of the queued slots waits for the backend; a reduction does, once */
        if (C.dut->host_waits) {
            int64_t w0 = C.dut->host_waits();
            C.dut->sum_squares_total(NV, xd, ns, dd);
            C.dut->clip_coef(guard, dd, NULL, 1.0);
            if (C.dut->host_waits() != w0) fail_msg("[%s]: sum_squares_total/clip_coef waited on the host", C.dut->name);
            (void)C.dut->sum(xd[3], ns[3]);
            if (C.dut->host_waits() != w0 + 1) fail_msg("[%s]: a sum counted %lld host waits, not 1", C.dut->name,
                                                        (long long)(C.dut->host_waits() - w0));
        }
        C.dut->free(dd), C.dut->free(guard);
        for (int i = 0; i < NV; i++) t_free(v[i]);
    }
    for (int trial = 0; trial < 6; trial++) {
        int64_t rows = rnd(0, 3000), cols = rnd(1, 300);
        tens x = t_rand(rows * cols, 1), y = t_rand(cols, 1);
        float beta = trial % 2 ? 0.5f : 0.0f;
        C.ref->sum_rows(y.h, x.h, rows, cols, beta), C.dut->sum_rows(y.d, x.d, rows, cols, beta);
        t_check(y, TOL_ROW, "sum_rows");
        t_free(x), t_free(y);
    }
    int64_t rows = 40, cols = 77;
    tens x = t_rand(rows * cols, 3), y = t_new(rows * cols), dy = t_rand(rows * cols, 1), dx = t_new(rows * cols);
    for (int64_t c = 0; c < cols; c++) x.h[3 * cols + c] = -INFINITY; /* a fully masked row */
    for (int64_t c = 0; c < cols; c += 2) x.h[5 * cols + c] = -INFINITY;
    C.dut->to_device(x.d, x.h, sizeof(float) * (size_t)(rows * cols));
    C.ref->softmax_rows(y.h, x.h, rows, cols), C.dut->softmax_rows(y.d, x.d, rows, cols);
    t_check(y, TOL_ROW, "softmax_rows");
    C.ref->softmax_rows_backward(dx.h, y.h, dy.h, rows, cols);
    C.dut->softmax_rows_backward(dx.d, y.d, dy.d, rows, cols);
    t_check(dx, TOL_ROW, "softmax_rows_backward");
    t_free(x), t_free(y), t_free(dy), t_free(dx);
}

/* ---- packed batches ------------------------------------------------------------------------------ */

typedef struct {
    int32_t n_seg, *cu, *group;
} seqs;

/* ragged samples (some empty), groups by mode: 0 none, 1 prefix-LM, 2 causal, 3 random */
static seqs seqs_make(int32_t n_seg, int32_t maxlen, int mode) {
    seqs s = {n_seg, malloc(sizeof(int32_t) * (size_t)(n_seg + 1)), NULL};
    s.cu[0] = 0;
    for (int32_t i = 0; i < n_seg; i++) s.cu[i + 1] = s.cu[i] + (vla_rng_uniform(&C.rng) < 0.15 ? 0 : (int32_t)rnd(1, maxlen));
    int32_t n = s.cu[n_seg];
    if (mode) {
        s.group = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        for (int32_t i = 0; i < n_seg; i++)
            for (int32_t t = s.cu[i]; t < s.cu[i + 1]; t++) {
                int32_t pos = t - s.cu[i], len = s.cu[i + 1] - s.cu[i];
                s.group[t] = mode == 1 ? pos >= len - len / 4 : mode == 2 ? pos : (int32_t)rnd(0, 3);
            }
    }
    return s;
}

static void seqs_free(seqs s) { free(s.cu), free(s.group); }
static vla_attn_seqs as(seqs s) { return (vla_attn_seqs){s.n_seg, s.cu, s.group}; }

static void t_norms(void) {
    COVER(layernorm_forward), COVER(layernorm_backward), COVER(rmsnorm_forward), COVER(rmsnorm_backward);
    COVER(adaln_forward), COVER(adaln_backward), COVER(adarms_forward), COVER(adarms_backward);
    COVER(gated_residual_forward), COVER(gated_residual_backward);
    for (int trial = 0; trial < 8; trial++) {
        seqs s = seqs_make((int32_t)rnd(1, 5), 40, 0);
        int64_t n = s.cu[s.n_seg], dim = trial < 4 ? rnd(3, 70) : rnd(100, 1100);
        tens x = t_rand(n * dim, 2), w = t_rand(dim, 1), b = t_rand(dim, 1), y = t_new(n * dim), mean = t_new(n);
        tens rstd = t_new(n), dy = t_rand(n * dim, 1), dx = t_rand(n * dim, 1), dw = t_rand(dim, 1);
        tens db = t_rand(dim, 1), mod = t_rand(s.n_seg * 3 * dim, 0.3f), dmod = t_rand(s.n_seg * 3 * dim, 1);
        tens y2 = t_rand(n * dim, 1), dy2 = t_rand(n * dim, 1);
        bool nw = trial % 3 == 2; /* without affine weights */
        C.ref->layernorm_forward(y.h, mean.h, rstd.h, x.h, nw ? NULL : w.h, nw ? NULL : b.h, n, dim, 1e-5f, NULL);
        C.dut->layernorm_forward(y.d, mean.d, rstd.d, x.d, nw ? NULL : w.d, nw ? NULL : b.d, n, dim, 1e-5f, NULL);
        t_check(y, TOL_ROW, "layernorm_forward"), t_check(mean, TOL_ROW, "layernorm mean"), t_check(rstd, TOL_ROW, "layernorm rstd");
        C.ref->layernorm_backward(dx.h, dw.h, db.h, dy.h, x.h, nw ? NULL : w.h, mean.h, rstd.h, n, dim);
        C.dut->layernorm_backward(dx.d, dw.d, db.d, dy.d, x.d, nw ? NULL : w.d, mean.d, rstd.d, n, dim);
        t_check(dx, TOL_ROW, "layernorm_backward dx"), t_check(dw, TOL_ROW, "layernorm dw"), t_check(db, TOL_ROW, "layernorm db");
        bool op = trial % 2;
        C.ref->rmsnorm_forward(y.h, rstd.h, x.h, nw ? NULL : w.h, op, n, dim, 1e-6f, NULL);
        C.dut->rmsnorm_forward(y.d, rstd.d, x.d, nw ? NULL : w.d, op, n, dim, 1e-6f, NULL);
        t_check(y, TOL_ROW, "rmsnorm_forward"), t_check(rstd, TOL_ROW, "rmsnorm rstd");
        C.ref->rmsnorm_backward(dx.h, dw.h, dy.h, x.h, nw ? NULL : w.h, op, rstd.h, n, dim);
        C.dut->rmsnorm_backward(dx.d, dw.d, dy.d, x.d, nw ? NULL : w.d, op, rstd.d, n, dim);
        t_check(dx, TOL_ROW, "rmsnorm_backward dx"), t_check(dw, TOL_ROW, "rmsnorm dw");
        C.ref->adaln_forward(y.h, mean.h, rstd.h, x.h, mod.h, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
        C.dut->adaln_forward(y.d, mean.d, rstd.d, x.d, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
        t_check(y, TOL_ROW, "adaln_forward");
        C.ref->adaln_backward(dx.h, dmod.h, dy.h, x.h, mod.h, mean.h, rstd.h, s.cu, s.n_seg, n, dim);
        C.dut->adaln_backward(dx.d, dmod.d, dy.d, x.d, mod.d, mean.d, rstd.d, s.cu, s.n_seg, n, dim);
        t_check(dx, TOL_ROW, "adaln_backward dx"), t_check(dmod, TOL_ROW, "adaln_backward dmod");
        C.ref->adarms_forward(y.h, rstd.h, x.h, mod.h, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
        C.dut->adarms_forward(y.d, rstd.d, x.d, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
        t_check(y, TOL_ROW, "adarms_forward");
        C.ref->adarms_backward(dx.h, dmod.h, dy.h, x.h, mod.h, rstd.h, s.cu, s.n_seg, n, dim);
        C.dut->adarms_backward(dx.d, dmod.d, dy.d, x.d, mod.d, rstd.d, s.cu, s.n_seg, n, dim);
        t_check(dx, TOL_ROW, "adarms_backward dx"), t_check(dmod, TOL_ROW, "adarms_backward dmod");
        C.ref->gated_residual_forward(y.h, x.h, y2.h, mod.h, s.cu, s.n_seg, n, dim);
        C.dut->gated_residual_forward(y.d, x.d, y2.d, mod.d, s.cu, s.n_seg, n, dim);
        t_check(y, 0, "gated_residual_forward");
        C.dut->fill(dy2.d, NAN, n * dim); /* d_y is written, not added to (ops.h) */
        C.ref->gated_residual_backward(dx.h, dy2.h, dmod.h, dy.h, y2.h, mod.h, s.cu, s.n_seg, n, dim);
        C.dut->gated_residual_backward(dx.d, dy2.d, dmod.d, dy.d, y2.d, mod.d, s.cu, s.n_seg, n, dim);
        t_check(dx, 0, "gated_residual_backward dx"), t_check(dy2, 0, "gated_residual_backward dy");
        t_check(dmod, TOL_ROW, "gated_residual_backward dmod");
        tens all[] = {x, w, b, y, mean, rstd, dy, dx, dw, db, mod, dmod, y2, dy2};
        for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) t_free(all[i]);
        seqs_free(s);
    }
}

/* A norm's vla_norm_fuse (ops.h) on the dut against the separate ops on the dut, bit for bit: `add`, the
 * norm, prepare_operand of its output — with the sum written apart and over the input itself; then the
 * GLU's ready copy against prepare_operand of h. Rows whose width is no multiple of 8 exercise the copy's
 * pad (cuda: rows of 16 bytes). */
static void t_norm_fuse(void) {
    for (int trial = 0; trial < 8; trial++) {
        seqs s = seqs_make((int32_t)rnd(1, 4), 30, 0);
        int64_t n = s.cu[s.n_seg], dim = trial < 4 ? rnd(3, 70) : rnd(100, 700), nd = n * dim;
        size_t rb = ready_size(n, dim);
        tens x = t_rand(nd, 2), r = t_rand(nd, 1), w = t_rand(dim, 1), b = t_rand(dim, 1);
        tens mod = t_rand(s.n_seg * 3 * dim, 0.3f), stats = t_new(4 * n);
        float *sum1 = C.dut->alloc(sizeof(float) * (size_t)nd), *sum2 = C.dut->alloc(sizeof(float) * (size_t)nd);
        float *y1 = C.dut->alloc(sizeof(float) * (size_t)nd), *y2 = C.dut->alloc(sizeof(float) * (size_t)nd);
        void *rd1 = C.dut->alloc(rb), *rd2 = C.dut->alloc(rb);
        size_t rb8 = ready_size_fp8(n, dim);
        float *sc8 = C.dut->alloc(2 * sizeof(float)); /* an FP8 copy's scale and amax */
        void *r8 = C.dut->alloc(rb8);
        for (int kind = 0; kind < 4; kind++) {
            bool in_place = (trial + kind) % 2;
            float *m1 = stats.d, *r1 = stats.d + n, *m2 = stats.d + 2 * n, *r2 = stats.d + 3 * n;
            /* the separate ops */
            C.dut->add(sum1, x.d, r.d, nd);
            /* the fused: the sum over the input itself, or apart */
            C.dut->copy(sum2, x.d, nd);
            vla_norm_fuse f = {r.d, sum2, rd2, NULL};
            const float *in2 = in_place ? sum2 : x.d;
            ready_poison(rd2, rb); /* the pad must be written, not left */
            switch (kind) {
            case 0:
                C.dut->layernorm_forward(y1, m1, r1, sum1, w.d, b.d, n, dim, 1e-5f, NULL);
                C.dut->layernorm_forward(y2, m2, r2, in2, w.d, b.d, n, dim, 1e-5f, &f);
                break;
            case 1:
                C.dut->rmsnorm_forward(y1, r1, sum1, w.d, trial % 2, n, dim, 1e-6f, NULL);
                C.dut->rmsnorm_forward(y2, r2, in2, w.d, trial % 2, n, dim, 1e-6f, &f);
                break;
            case 2:
                C.dut->adaln_forward(y1, m1, r1, sum1, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
                C.dut->adaln_forward(y2, m2, r2, in2, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f);
                break;
            default:
                C.dut->adarms_forward(y1, r1, sum1, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, NULL);
                C.dut->adarms_forward(y2, r2, in2, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f);
                break;
            }
            static const char *names[] = {"layernorm_forward fuse", "rmsnorm_forward fuse", "adaln_forward fuse",
                                          "adarms_forward fuse"};
            if (dut_memcmp(sum1, sum2, sizeof(float) * (size_t)nd))
                fail_msg("%s [%s] trial %d: the sum differs from add's", names[kind], C.dut->name, trial);
            if (dut_memcmp(y1, y2, sizeof(float) * (size_t)nd))
                fail_msg("%s [%s] trial %d: the output differs from add then the norm", names[kind], C.dut->name, trial);
            if (dut_memcmp(m1, m2, sizeof(float) * (size_t)(2 * n)))
                fail_msg("%s [%s] trial %d: the statistics differ", names[kind], C.dut->name, trial);
            check_ready(rd2, y1, n, dim, dim, rd1, rb, names[kind], trial);
            /* kept (ops.h): no output, the bf16 copy alone — the same copy, sum and statistics */
            C.dut->copy(sum2, x.d, nd);
            ready_poison(rd2, rb);
            C.dut->fill(m2, -1.0f, 2 * n);
            switch (kind) {
            case 0: C.dut->layernorm_forward(NULL, m2, r2, in2, w.d, b.d, n, dim, 1e-5f, &f); break;
            case 1: C.dut->rmsnorm_forward(NULL, r2, in2, w.d, trial % 2, n, dim, 1e-6f, &f); break;
            case 2: C.dut->adaln_forward(NULL, m2, r2, in2, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f); break;
            default: C.dut->adarms_forward(NULL, r2, in2, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f); break;
            }
            if (dut_memcmp(sum1, sum2, sizeof(float) * (size_t)nd) ||
                dut_memcmp(kind % 2 ? r1 : m1, kind % 2 ? r2 : m2, sizeof(float) * (size_t)(kind % 2 ? n : 2 * n)))
                fail_msg("%s [%s] trial %d: with no output (a kept copy) the sum or statistics differ", names[kind],
                         C.dut->name, trial);
            check_ready(rd2, y1, n, dim, dim, rd1, rb, names[kind], trial);
            /* the FP8 copy (vla_norm_fuse.fp8) of the same output: prepare_operand's, and its amax */
            vla_fp8_operand op8 = fp8_for_test(sc8, trial + kind);
            ready_poison(r8, rb8);
            vla_norm_fuse f8 = {NULL, NULL, r8, &op8};
            switch (kind) {
            case 0: C.dut->layernorm_forward(y2, m2, r2, sum1, w.d, b.d, n, dim, 1e-5f, &f8); break;
            case 1: C.dut->rmsnorm_forward(y2, r2, sum1, w.d, trial % 2, n, dim, 1e-6f, &f8); break;
            case 2: C.dut->adaln_forward(y2, m2, r2, sum1, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f8); break;
            default: C.dut->adarms_forward(y2, r2, sum1, mod.d, s.cu, s.n_seg, n, dim, 1e-6f, &f8); break;
            }
            check_unchanged(y1, y2, nd, names[kind], trial);
            check_ready_fp8(r8, rb8, y1, n, dim, dim, &op8, names[kind], trial);
        }
        /* the GLU's copy of h, its backward's of dgate and dup, the activation backward's */
        for (int a = 0; a < 2; a++) {
            vla_act act = a ? VLA_ACT_SILU : VLA_ACT_GELU_TANH;
            ready_poison(rd2, rb);
            C.dut->glu_forward(act, y1, x.d, r.d, n, dim, NULL, NULL);
            C.dut->glu_forward(act, y2, x.d, r.d, n, dim, rd2, NULL);
            check_unchanged(y1, y2, nd, "glu_forward ready", trial);
            check_ready(rd2, y1, n, dim, dim, rd1, rb, "glu_forward ready", trial);
            ready_poison(rd2, rb);
            C.dut->glu_forward(act, NULL, x.d, r.d, n, dim, rd2, NULL); /* kept: the copy alone (ops.h) */
            check_ready(rd2, y1, n, dim, dim, rd1, rb, "glu_forward kept copy", trial);
            vla_fp8_operand op8 = fp8_for_test(sc8, trial + a);
            ready_poison(r8, rb8);
            C.dut->glu_forward(act, y2, x.d, r.d, n, dim, r8, &op8);
            check_unchanged(y1, y2, nd, "glu_forward ready_fp8", trial);
            check_ready_fp8(r8, rb8, y1, n, dim, dim, &op8, "glu_forward ready_fp8", trial);
            /* the backward's: dgate's and dup's copies (the gate and up linears' dy) */
            float *dg = C.dut->alloc(sizeof(float) * (size_t)nd), *du = C.dut->alloc(sizeof(float) * (size_t)nd);
            void *rg = C.dut->alloc(rb), *ru = C.dut->alloc(rb);
            ready_poison(rg, rb), ready_poison(ru, rb);
            C.dut->glu_backward(act, y1, y2, r.d, x.d, r.d, n, dim, NULL, NULL);
            C.dut->glu_backward(act, dg, du, r.d, x.d, r.d, n, dim, rg, ru);
            check_unchanged(y1, dg, nd, "glu_backward ready dgate", trial);
            check_unchanged(y2, du, nd, "glu_backward ready dup", trial);
            check_ready(rg, dg, n, dim, dim, rd1, rb, "glu_backward ready dgate", trial);
            check_ready(ru, du, n, dim, dim, rd1, rb, "glu_backward ready dup", trial);
            /* the activation's backward (it writes d_in): the copy of what it wrote */
            C.dut->copy(dg, x.d, nd), C.dut->copy(du, x.d, nd);
            ready_poison(rg, rb);
            C.dut->act_backward(act, dg, r.d, x.d, n, dim, NULL);
            C.dut->act_backward(act, du, r.d, x.d, n, dim, rg);
            check_unchanged(dg, du, nd, "act_backward ready", trial);
            check_ready(rg, dg, n, dim, dim, rd1, rb, "act_backward ready", trial);
            C.dut->free(dg), C.dut->free(du), C.dut->free(rg), C.dut->free(ru);
        }
        C.dut->free(sum1), C.dut->free(sum2), C.dut->free(y1), C.dut->free(y2), C.dut->free(rd1), C.dut->free(rd2);
        C.dut->free(sc8), C.dut->free(r8);
        tens all[] = {x, r, w, b, mod, stats};
        for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) t_free(all[i]);
        seqs_free(s);
    }
}

static void t_positions(void) {
    COVER(rope_forward), COVER(rope_backward), COVER(time_embedding_forward), COVER(time_embedding_backward);
    int64_t n = 97, heads = 3, hd = 16;
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) pos[i] = (int32_t)(i % 40 + (i > 60 ? 1000 : 0));
    tens x = t_rand(n * heads * hd, 1), y = t_new(n * heads * hd), dx = t_rand(n * heads * hd, 1);
    C.ref->rope_forward(y.h, x.h, pos, n, heads, hd, 10000.0), C.dut->rope_forward(y.d, x.d, pos, n, heads, hd, 10000.0);
    t_check(y, TOL_ULP, "rope_forward");
    C.ref->rope_forward(x.h, x.h, pos, n, heads, hd, 1e6), C.dut->rope_forward(x.d, x.d, pos, n, heads, hd, 1e6);
    t_check(x, TOL_ULP, "rope_forward (in place)");
    C.dut->fill(dx.d, NAN, n * heads * hd); /* written, not added (ops.h) */
    C.ref->rope_backward(dx.h, y.h, pos, n, heads, hd, 10000.0), C.dut->rope_backward(dx.d, y.d, pos, n, heads, hd, 10000.0);
    t_check(dx, TOL_ULP, "rope_backward");
    /* in place (a block rotates its q/k gradients so) */
    C.ref->rope_backward(y.h, y.h, pos, n, heads, hd, 10000.0), C.dut->rope_backward(y.d, y.d, pos, n, heads, hd, 10000.0);
    t_check(y, TOL_ULP, "rope_backward (in place)");
    for (int64_t i = 0; i < n * heads * hd; i++)
        if (y.h[i] != dx.h[i]) fail_msg("rope_backward [cpu]: in place differs from out of place at %lld", (long long)i);
    free(pos), t_free(x), t_free(y), t_free(dx);
    const vla_temb_config cfgs[] = {{VLA_TEMB_LOG, 32, 0, 10000, 1, true}, {VLA_TEMB_PERIODS, 64, 4e-3, 4.0, 0, false}};
    for (int c = 0; c < 2; c++) {
        int64_t m = 9, dim = cfgs[c].dim;
        tens t = t_rand(m, 0.4f), o = t_new(m * dim), dout = t_rand(m * dim, 1), dt = t_rand(m, 1);
        C.ref->time_embedding_forward(&cfgs[c], o.h, t.h, m), C.dut->time_embedding_forward(&cfgs[c], o.d, t.d, m);
        t_check(o, TOL_ULP, "time_embedding_forward");
        C.ref->time_embedding_backward(&cfgs[c], dt.h, dout.h, t.h, m);
        C.dut->time_embedding_backward(&cfgs[c], dt.d, dout.d, t.d, m);
        t_check(dt, TOL_ROW, "time_embedding_backward");
        t_free(t), t_free(o), t_free(dout), t_free(dt);
    }
}

static void t_flow(void) {
    COVER(flow_interpolate), COVER(masked_mse);
    int64_t S = 5, H = 7, D = 6, per = H * D;
    tens a = t_rand(S * per, 1), z = t_rand(S * per, 1), x = t_new(S * per), u = t_new(S * per), dp = t_rand(S * per, 1);
    float t[5] = {0.0f, 1.0f, 0.3f, 0.77f, 0.5f};
    for (int conv = 0; conv < 2; conv++) {
        vla_flow_convention cv = conv ? VLA_FLOW_GROOT : VLA_FLOW_PI05;
        C.ref->flow_interpolate(cv, x.h, u.h, a.h, z.h, t, S, per), C.dut->flow_interpolate(cv, x.d, u.d, a.d, z.d, t, S, per);
        t_check(x, 0, "flow_interpolate x_t"), t_check(u, 0, "flow_interpolate target");
        C.ref->flow_interpolate(cv, NULL, u.h, x.h, z.h, t, S, per), C.dut->flow_interpolate(cv, NULL, u.d, x.d, z.d, t, S, per);
        t_check(u, 0, "flow_interpolate (target only)");
    }
    uint8_t pad[35];
    int32_t rd[5] = {6, 3, 0, 6, 9};
    for (int i = 0; i < 35; i++) pad[i] = i % 5 == 4;
    for (int variant = 0; variant < 4; variant++) {
        const uint8_t *pp = variant & 1 ? pad : NULL;
        const int32_t *rr = variant & 2 ? rd : NULL;
        vla_mse_reduction red = variant % 3 ? VLA_MSE_MEAN_REAL : VLA_MSE_MEAN_ALL;
        double div = variant == 3 ? 17.0 : 0.0;
        double l1 = C.ref->masked_mse(x.h, u.h, S, H, D, pp, rr, red, div, dp.h);
        double l2 = C.dut->masked_mse(x.d, u.d, S, H, D, pp, rr, red, div, dp.d);
        check_scalar(l2, l1, 1e-12, "masked_mse");
        t_check(dp, 0, "masked_mse gradient");
        check_scalar(C.dut->masked_mse(x.d, u.d, S, H, D, pp, rr, red, div, NULL), l1, 1e-12, "masked_mse (no gradient)");
        /* added on the backend instead: the dut's own loss added to what was there, bit for bit, and no wait */
        COVER(masked_mse_acc);
        double *acc = C.dut->alloc(sizeof(double)), start = 1.5, back;
        C.dut->to_device(acc, &start, sizeof start);
        int64_t w0 = C.dut->host_waits ? C.dut->host_waits() : 0;
        C.dut->fill(dp.d, 7.0f, S * per);
        C.dut->masked_mse_acc(x.d, u.d, S, H, D, pp, rr, red, div, dp.d, acc);
        C.dut->masked_mse_acc(x.d, u.d, S, H, D, pp, rr, red, div, NULL, acc);
        if (C.dut->host_waits && C.dut->host_waits() != w0) fail_msg("masked_mse_acc [%s] waited on the host", C.dut->name);
        C.dut->to_host(&back, acc, sizeof back);
        double want = start + l2 + l2;
        if (memcmp(&back, &want, sizeof back)) fail_msg("masked_mse_acc [%s]: %.17g, want 1.5 + 2·%.17g", C.dut->name, back, l2);
        t_check(dp, 0, "masked_mse_acc gradient");
        C.dut->free(acc);
    }
    t_free(a), t_free(z), t_free(x), t_free(u), t_free(dp);
}

/* ---- attention ------------------------------------------------------------------------------------- */

static void t_attention_mask(void) {
    COVER(attention_mask);
    seqs q = seqs_make(4, 20, 1), k = seqs_make(4, 15, 2);
    int64_t nq = q.cu[4], nk = k.cu[4];
    tens m = t_new(nq * nk > 0 ? nq * nk : 1);
    vla_attn_seqs qs = as(q), ks = as(k);
    if (nq * nk > 0) {
        C.ref->attention_mask(m.h, &qs, &ks), C.dut->attention_mask(m.d, &qs, &ks);
        m.n = nq * nk;
        t_check(m, 0, "attention_mask");
    }
    t_free(m), seqs_free(q), seqs_free(k);
}

/* One attention problem on both backends: forward (self/cross or cached) and backward. */
static void attention_case(int trial, int d, vla_precision prec) {
    int H = 1 + (int)rnd(0, 3) * (trial % 2 ? 2 : 1), Hkv = trial % 3 == 0 ? 1 : (H % 2 == 0 ? 2 : 1);
    if (H % Hkv) Hkv = 1;
    int kind = trial % 3; /* 0 self, 1 cross, 2 cached */
    int32_t n_seg = (int32_t)rnd(1, 5);
    seqs q = seqs_make(n_seg, 70, trial % 4), k0 = kind == 0 ? q : seqs_make(n_seg, 90, (trial + 1) % 4);
    seqs k1 = kind == 2 ? seqs_make(n_seg, 30, 3) : (seqs){0};
    int64_t nq = q.cu[n_seg], nk0 = k0.cu[n_seg], nk1 = kind == 2 ? k1.cu[n_seg] : 0;
    /* every fourth problem asks for the fused backward (cuda: dQ by atomics), the rest leave it to the backend */
    vla_attn_config cfg = {.n_heads = H, .n_kv_heads = Hkv, .head_dim = d, .precision = prec,
                           .bwd_mode = trial % 4 == 1 ? VLA_ATTN_BWD_FUSED : VLA_ATTN_BWD_AUTO};
    vla_attn_seqs qs = as(q), s0 = as(k0), s1 = kind == 2 ? as(k1) : (vla_attn_seqs){0};
    tens Q = t_rand(nq * H * d, 1), K = t_rand(nk0 * Hkv * d, 1), V = t_rand(nk0 * Hkv * d, 1);
    tens K1 = t_rand(nk1 * Hkv * d, 1), V1 = t_rand(nk1 * Hkv * d, 1);
    tens O = t_new(nq * H * d), L = t_new(nq * H);
    vla_attn_stats st1, st2;
    double tol = prec == VLA_PREC_FP32 ? TOL_GEMM : TOL_BF16_ATTN;
    if (kind == 2) {
        assert_int_equal(C.ref->attention_forward_cached(&cfg, O.h, L.h, Q.h, &qs, K.h, V.h, &s0, K1.h, V1.h, &s1, &st1), VLA_OK);
        assert_int_equal(C.dut->attention_forward_cached(&cfg, O.d, L.d, Q.d, &qs, K.d, V.d, &s0, K1.d, V1.d, &s1, &st2), VLA_OK);
    } else {
        assert_int_equal(C.ref->attention_forward(&cfg, O.h, L.h, Q.h, K.h, V.h, &qs, &s0, &st1, NULL), VLA_OK);
        assert_int_equal(C.dut->attention_forward(&cfg, O.d, L.d, Q.d, K.d, V.d, &qs, &s0, &st2, NULL), VLA_OK);
    }
    t_check_norm(O, tol, kind == 2 ? "attention_forward_cached out" : "attention_forward out");
    if (kind != 2 && C.dut->stat && C.dut->stat(VLA_STAT_ATTN_PLAN_BUILDS) >= 0) {
        /* the same layout again: its plan comes from the backend's cache (tensor/attn_plan.h, "PLAN CACHE") */
        int64_t b0 = C.dut->stat(VLA_STAT_ATTN_PLAN_BUILDS);
        assert_int_equal(C.dut->attention_forward(&cfg, O.d, L.d, Q.d, K.d, V.d, &qs, &s0, &st2, NULL), VLA_OK);
        if (C.dut->stat(VLA_STAT_ATTN_PLAN_BUILDS) != b0) fail_msg("[%s]: a repeated attention layout rebuilt its plan", C.dut->name);
    }
    t_check(L, prec == VLA_PREC_FP32 ? TOL_ROW : 2e-2, "attention lse");
    if (kind != 2) { /* out's bf16 copy for the o-projection (ops.h): prepare_operand's bytes, out as without it */
        size_t rb = ready_size(nq, (int64_t)H * d);
        void *r1 = C.dut->alloc(rb), *r2 = C.dut->alloc(rb);
        float *O2 = C.dut->alloc(sizeof(float) * (size_t)(nq * H * d)), *L2 = C.dut->alloc(sizeof(float) * (size_t)(nq * H));
        ready_poison(r2, rb);
        assert_int_equal(C.dut->attention_forward(&cfg, O.d, L.d, Q.d, K.d, V.d, &qs, &s0, &st2, NULL), VLA_OK);
        assert_int_equal(C.dut->attention_forward(&cfg, O2, L2, Q.d, K.d, V.d, &qs, &s0, &st2, r2), VLA_OK);
        check_unchanged(O.d, O2, nq * H * d, "attention_forward ready", kind);
        check_ready(r2, O2, nq, (int64_t)H * d, (int64_t)H * d, r1, rb, "attention_forward ready", kind);
        C.dut->free(r1), C.dut->free(r2), C.dut->free(O2), C.dut->free(L2);
    }
    if (C.exact) assert_memory_equal(&st1, &st2, sizeof st1);
    else assert_true(st2.tiles_computed <= st2.tiles_total && st2.tiles_unmasked <= st2.tiles_computed);
    if (kind != 2) {
        tens dO = t_rand(nq * H * d, 1), dQ = t_rand(nq * H * d, 1), dK = t_rand(nk0 * Hkv * d, 1);
        tens dV = t_rand(nk0 * Hkv * d, 1);
        /* the backward reads the forward's out and lse: give both backends the cpu's */
        C.dut->to_device(O.d, O.h, sizeof(float) * (size_t)O.n), C.dut->to_device(L.d, L.h, sizeof(float) * (size_t)L.n);
        assert_int_equal(C.ref->attention_backward(&cfg, dQ.h, dK.h, dV.h, dO.h, Q.h, K.h, V.h, O.h, L.h, &qs, &s0, NULL), VLA_OK);
        assert_int_equal(C.dut->attention_backward(&cfg, dQ.d, dK.d, dV.d, dO.d, Q.d, K.d, V.d, O.d, L.d, &qs, &s0, NULL), VLA_OK);
        t_check_norm(dQ, tol, "attention_backward dq");
        t_check_norm(dK, tol, "attention_backward dk");
        t_check_norm(dV, tol, "attention_backward dv");
        int64_t parts = C.dut->stat ? C.dut->stat(VLA_STAT_ATTN_LAST_KV_SPLITS) : -1;
        if (parts != -1 && (parts < 1 || parts > VLA_ATTN_MAX_SPLITS))
            fail_msg("[%s]: the backward reports %lld dK/dV parts", C.dut->name, (long long)parts);
        t_free(dO), t_free(dQ), t_free(dK), t_free(dV);
    }
    t_free(Q), t_free(K), t_free(V), t_free(K1), t_free(V1), t_free(O), t_free(L);
    seqs_free(q);
    if (kind != 0) seqs_free(k0);
    if (kind == 2) seqs_free(k1);
}

static void t_attention(void) {
    COVER(attention_forward), COVER(attention_backward), COVER(attention_forward_cached);
    static const int dims[] = {8, 16, 48, 64, 72, 128, 256};
    int trial = 0;
    for (unsigned di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int rep = 0; rep < (dims[di] >= 128 ? 3 : 6); rep++, trial++) {
            attention_case(trial, dims[di], VLA_PREC_FP32);
            attention_case(trial, dims[di], VLA_PREC_BF16);
        }
    /* errors are the cpu backend's */
    int32_t cu[3] = {0, 4, 9};
    vla_attn_seqs s = {2, cu, NULL}, s1 = {1, cu, NULL};
    vla_attn_config bad = {.n_heads = 3, .n_kv_heads = 2, .head_dim = 8};
    tens x = t_new(9 * 3 * 8);
    assert_int_equal(C.dut->attention_forward(&bad, x.d, NULL, x.d, x.d, x.d, &s, &s, NULL, NULL), VLA_ERR_INVALID_ARG);
    bad.n_heads = 4;
    assert_int_equal(C.dut->attention_forward(&bad, x.d, NULL, x.d, x.d, x.d, &s, &s1, NULL, NULL), VLA_ERR_INVALID_ARG);
    t_free(x);
}

/* t's values on the device one float past a 16-byte boundary (off[-1] is the allocation) */
static float *t_misaligned(tens t) {
    float *base = C.dut->alloc(sizeof(float) * (size_t)(t.n + 1));
    if (!base) fail_msg("out of memory for %lld floats", (long long)t.n);
    if (t.n > 0) C.dut->to_device(base + 1, t.h, sizeof(float) * (size_t)t.n);
    return base + 1;
}

/* what the backend wrote at off, checked as t against the cpu's t.h */
static void t_check_misaligned(tens t, const float *off, double tol, const char *what) {
    float *tmp = malloc(sizeof(float) * (size_t)t.n);
    C.dut->to_host(tmp, off, sizeof(float) * (size_t)t.n);
    C.dut->to_device(t.d, tmp, sizeof(float) * (size_t)t.n);
    free(tmp);
    t_check_norm(t, tol, what);
}

/* One bf16 problem with every tensor a float off a 16-byte boundary, against the cpu: on cuda the operands'
 * bf16 copies are cast from any alignment (attention.cu), VLA_CUDA_ATTN_STAGING=f32 stages from the
 * misaligned f32 tensors themselves, and the fused backward adds dQ one element an atomic (its float2
 * atomics need dq 8-byte aligned) */
static void attention_misaligned(vla_attn_bwd_mode mode) {
    const int H = 4, Hkv = 1, d = 64;
    seqs q = seqs_make(3, 70, 1);
    int64_t n = q.cu[3], nq = n * H * d, nk = n * Hkv * d;
    if (n == 0) {
        seqs_free(q);
        return;
    }
    vla_attn_config cfg = {.n_heads = H, .n_kv_heads = Hkv, .head_dim = d, .precision = VLA_PREC_BF16, .bwd_mode = mode};
    vla_attn_seqs qs = as(q);
    tens Q = t_rand(nq, 1), K = t_rand(nk, 1), V = t_rand(nk, 1), O = t_new(nq), L = t_new(n * H);
    tens dO = t_rand(nq, 1), dQ = t_rand(nq, 1), dK = t_rand(nk, 1), dV = t_rand(nk, 1);
    float *q_ = t_misaligned(Q), *k_ = t_misaligned(K), *v_ = t_misaligned(V), *o_ = t_misaligned(O);
    float *l_ = t_misaligned(L), *do_ = t_misaligned(dO), *dq_ = t_misaligned(dQ), *dk_ = t_misaligned(dK);
    float *dv_ = t_misaligned(dV);
    assert_int_equal(C.ref->attention_forward(&cfg, O.h, L.h, Q.h, K.h, V.h, &qs, &qs, NULL, NULL), VLA_OK);
    assert_int_equal(C.dut->attention_forward(&cfg, o_, l_, q_, k_, v_, &qs, &qs, NULL, NULL), VLA_OK);
    t_check_misaligned(O, o_, TOL_BF16_ATTN, "attention_forward out (misaligned)");
    /* the backward reads the forward's out and lse: give both backends the cpu's */
    C.dut->to_device(o_, O.h, sizeof(float) * (size_t)nq), C.dut->to_device(l_, L.h, sizeof(float) * (size_t)(n * H));
    assert_int_equal(C.ref->attention_backward(&cfg, dQ.h, dK.h, dV.h, dO.h, Q.h, K.h, V.h, O.h, L.h, &qs, &qs, NULL),
                     VLA_OK);
    assert_int_equal(C.dut->attention_backward(&cfg, dq_, dk_, dv_, do_, q_, k_, v_, o_, l_, &qs, &qs, NULL), VLA_OK);
    t_check_misaligned(dQ, dq_, TOL_BF16_ATTN, "attention_backward dq (misaligned)");
    t_check_misaligned(dK, dk_, TOL_BF16_ATTN, "attention_backward dk (misaligned)");
    t_check_misaligned(dV, dv_, TOL_BF16_ATTN, "attention_backward dv (misaligned)");
    float *offs[] = {q_, k_, v_, o_, l_, do_, dq_, dk_, dv_};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) C.dut->free(offs[i] - 1);
    t_free(Q), t_free(K), t_free(V), t_free(O), t_free(L), t_free(dO), t_free(dQ), t_free(dK), t_free(dV);
    seqs_free(q);
}

static void t_attention_misaligned(void) {
    attention_misaligned(VLA_ATTN_BWD_TWO_PASS);
    attention_misaligned(VLA_ATTN_BWD_FUSED);
}

/* ---- the driver ----------------------------------------------------------------------------------- */

/* ---- captured regions (run_captured: CUDA graphs on cuda) ------------------------------------------- */

/* One region of several kinds of op — an upload, a GEMM reading a ready copy, an index-map gather, a
 * packed attention, an in-place update — run five times with one key: every call's result equals
 * the cpu's, replays included, and inputs rewritten outside the region between calls (backend memory
 * it reads) are read at the next replay. A backend that counts its replays (stat) has replayed. */
typedef struct {
    const vla_ops *ops;
    float *x, *w, *y, *g, *q, *k, *v, *o, *lse;
    const float *up;      /* host: uploaded inside */
    const int32_t *rows;  /* host: the gather's map */
    const vla_attn_seqs *qs;
    const vla_attn_config *ac;
} cap_region;

static vla_status cap_body(void *vc) {
    const cap_region *r = vc;
    const vla_ops *o = r->ops;
    o->to_device(r->y, r->up, 8 * sizeof(float));
    o->sgemm(false, true, 12, 8, 16, 1.0f, r->x, 16, r->w, 16, 1.0f, r->y, 8); /* y (first row uploaded) += x·wᵀ */
    o->copy_rows(r->g, 8, NULL, r->y, 8, r->rows, 6, 8, 1.0f); /* g[i] = y[rows[i]] */
    VLA_TRY(o->attention_forward(r->ac, r->o, r->lse, r->q, r->k, r->v, r->qs, r->qs, NULL, NULL));
    o->axpy(r->g, 0.5f, r->o, 48);
    return VLA_OK;
}

static void t_captured(void) {
    int32_t cu[3] = {0, 5, 12}, rows[6] = {11, 0, 3, 3, 7, 1};
    vla_attn_seqs qs = {2, cu, NULL};
    vla_attn_config ac = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
    float up[8] = {1, -2, 3, -4, 5, -6, 7, -8};
    tens x = t_rand(12 * 16, 1), w = t_rand(8 * 16, 1), y = t_rand(12 * 8, 1), g = t_rand(6 * 8, 1);
    tens q = t_rand(12 * 8, 1), k = t_rand(12 * 4, 1), v = t_rand(12 * 4, 1), o = t_new(12 * 8), lse = t_new(12 * 2);
    cap_region rh = {C.ref, x.h, w.h, y.h, g.h, q.h, k.h, v.h, o.h, lse.h, up, rows, &qs, &ac};
    cap_region rd = {C.dut, x.d, w.d, y.d, g.d, q.d, k.d, v.d, o.d, lse.d, up, rows, &qs, &ac};
    int64_t r0 = C.dut->stat ? C.dut->stat(VLA_STAT_CAPTURED_REPLAYS) : -1;
    static const char key[] = "conformance: captured region";
    for (int call = 0; call < 5; call++) {
        if (call == 3) { /* new inputs in backend memory, written outside the region */
            for (int64_t i = 0; i < x.n; i++) x.h[i] = -0.5f * x.h[i] + 0.25f;
            C.dut->to_device(x.d, x.h, sizeof(float) * (size_t)x.n);
        }
        assert_int_equal(cap_body(&rh), VLA_OK);
        assert_int_equal(vla_ops_run_captured(C.dut, key, sizeof key, cap_body, &rd), VLA_OK);
        char what[64];
        snprintf(what, sizeof what, "captured region, call %d: the GEMM", call + 1);
        t_check_norm(y, TOL_GEMM, what);
        snprintf(what, sizeof what, "captured region, call %d: the result", call + 1);
        t_check_norm(g, TOL_GEMM, what);
    }
    if (r0 >= 0) {
        int64_t replays = C.dut->stat(VLA_STAT_CAPTURED_REPLAYS) - r0;
        if (!C.profiling && replays < 2)
            fail_msg("captured region [%s]: %lld of 5 calls replayed", C.dut->name, (long long)replays);
        if (C.profiling && replays != 0) /* profile.h: a profiled region runs op by op, so its ops are timed */
            fail_msg("captured region [profiled %s]: %lld calls replayed", C.dut->name, (long long)replays);
    }
    t_free(x), t_free(w), t_free(y), t_free(g), t_free(q), t_free(k), t_free(v), t_free(o), t_free(lse);
}

/* the attention slots: alone with VLA_CONFORMANCE_ONLY=attention (scripts/gpu_check.sh runs them once per
 * way the cuda kernels stage their tiles, and under compute-sanitizer's racecheck) */
static void t_attention_slots(void) {
    t_attention_mask();
    t_attention();
    t_attention_misaligned();
}

static void run_suite(const char *name) {
    const char *part = getenv("VLA_CONFORMANCE_ONLY");
    if (part && !strcmp(part, "attention")) {
        t_attention_slots();
        fprintf(stderr, "test_conformance: backend %s conforms in attention (%s)\n", name,
                C.exact ? "bit for bit" : "within tolerance");
        return;
    }
    t_memory();
    t_gemm();
    t_gemm_q();
    t_gemm_epi();
    t_gemm_ready();
    t_cast_pair();
    t_segment_linear();
    t_elementwise();
    t_activations();
    t_layout();
    t_reductions();
    t_norms();
    t_norm_fuse();
    t_positions();
    t_flow();
    t_attention_slots();
    t_captured();
    /* every slot from alloc to the end was run */
    const size_t first = offsetof(vla_ops, alloc) / sizeof(void (*)(void)), last = sizeof(vla_ops) / sizeof(void (*)(void));
    for (size_t i = first; i < last; i++)
        if (!C.covered[i]) fail_msg("the conformance suite does not run the slot at byte %zu of vla_ops", i * sizeof(void (*)(void)));
    fprintf(stderr, "test_conformance: backend %s conforms (%s)\n", name, C.exact ? "bit for bit" : "within tolerance");
}

static void run_backend(void **state) {
    const char *name = *state;
    const char *only = getenv("VLA_CONFORMANCE");
    bool profiled = !strncmp(name, "profiled:", 9);
    const char *base = profiled ? name + 9 : name;
    if (only && *only && strcmp(only, base)) skip();
    const char *part = getenv("VLA_CONFORMANCE_ONLY");
    if (profiled && part && *part) skip(); /* the profiling table's checks need the whole suite */
    vla_status st = vla_backend_probe(base);
    if (st != VLA_OK) {
        fprintf(stderr, "test_conformance: skipping backend %s: %s\n", name, vla_error_message());
        skip();
    }
    memset(&C, 0, sizeof C);
    C.ref = vla_backend_find("cpu");
    C.dut = vla_backend_find(base);
    C.exact = C.dut->rtol == 0;
    C.rng = vla_rng_stream(20260101, 0);
    if (!profiled) {
        run_suite(name);
        return;
    }
    const vla_ops *prof = NULL;
    assert_int_equal(vla_profile_wrap(C.dut, &prof), VLA_OK);
    assert_string_equal(prof->name, C.dut->name);
    assert_true(prof->rtol == C.dut->rtol && prof->device == C.dut->device && prof->host_memory == C.dut->host_memory);
    C.dut = prof;
    C.profiling = true;
    vla_profile_start();
    run_suite(name);
    vla_profile p;
    assert_int_equal(vla_profile_stop(&p), VLA_OK);
    /* every call timed, on the backend's clock where it has one, the ops inside the span */
    assert_true(p.calls > 1000);
    assert_int_equal(p.unmarked + p.dropped, 0);
    assert_true(p.device_clock == (vla_backend_find(base)->mark != NULL));
    int64_t in_rows = 0;
    double gemm_flops = 0;
    for (int i = 0; i < p.n_rows; i++) {
        in_rows += p.rows[i].calls;
        if (!strncmp(p.rows[i].op, "sgemm", 5)) gemm_flops += p.rows[i].flops;
        if (i > 0 && p.rows[i].ms > p.rows[i - 1].ms) fail_msg("profile rows out of order at %d", i);
    }
    assert_int_equal(in_rows, p.calls);
    assert_true(gemm_flops > 0);
    if (p.op_ms > p.span_ms + 1e-3 * (double)p.calls)
        fail_msg("profiled %s: the ops' %.3f ms exceed their span %.3f ms", base, p.op_ms, p.span_ms);
    vla_profile_free(&p);
    vla_profile_unwrap();
}

int main(void) {
    static const char *names[16];
    struct CMUnitTest tests[16];
    int n = 0;
    static char profiled[8][48];
    for (int i = 0; i < vla_backend_count() && n < 16; i++) {
        if (!strcmp(vla_backend_name(i), "cpu")) continue;
        names[n] = vla_backend_name(i);
        tests[n] = (struct CMUnitTest){names[n], run_backend, NULL, NULL, (void *)names[n]};
        n++;
    }
    for (int i = 0; i < vla_backend_count() && i < 8 && n < 16; i++) { /* each backend again, profiled */
        snprintf(profiled[i], sizeof profiled[i], "profiled:%s", vla_backend_name(i));
        names[n] = profiled[i];
        tests[n] = (struct CMUnitTest){names[n], run_backend, NULL, NULL, (void *)names[n]};
        n++;
    }
    return _cmocka_run_group_tests("test_conformance", tests, (size_t)n, NULL, NULL);
}
