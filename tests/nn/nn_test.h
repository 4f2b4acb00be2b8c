/* nn_test.h — helpers shared by the nn tests (header-only: each test_*.c is
 * its own executable): PyTorch golden files written by
 * tools/gen_nn_goldens.py, closeness checks, random fills, and a central-
 * difference gradient check along random directions and coordinates. */
#ifndef VLA_TESTS_NN_TEST_H
#define VLA_TESTS_NN_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "test_util.h"

/* ---- allocations: everything the helpers hand out is freed by nn_free_all()
 * at the end of each test, so LeakSanitizer stays quiet ---- */

#define NN_MAX_ALLOCS 4096
static void *nn_allocs[NN_MAX_ALLOCS];
static int nn_nallocs;

static inline void *nn_alloc(size_t bytes) {
    assert_true(nn_nallocs < NN_MAX_ALLOCS);
    void *p = calloc(1, bytes > 0 ? bytes : 1);
    assert_non_null(p);
    nn_allocs[nn_nallocs++] = p;
    return p;
}

static inline void nn_free_all(void) {
    while (nn_nallocs > 0) free(nn_allocs[--nn_nallocs]);
}

/* ---- golden files: b"VLAGOLD1", u32 count, {u32 len, name, u32 dtype, u32 ndim, i64 shape[], data}* ---- */

typedef struct {
    char name[64];
    int dtype; /* 0 f32, 1 i32 */
    int64_t numel;
    void *data;
} golden_tensor;

typedef struct {
    int count;
    golden_tensor t[64];
} golden;

static inline golden *golden_load(const char *layer) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/nn/goldens/%s.bin", layer);
    FILE *f = fopen(test_source_path(rel), "rb");
    if (!f) fail_msg("cannot open golden %s (run /usr/bin/python3 tools/gen_nn_goldens.py)", rel);
    golden *g = nn_alloc(sizeof(golden));
    char magic[8];
    uint32_t count;
    assert_int_equal(fread(magic, 1, 8, f), 8);
    assert_memory_equal(magic, "VLAGOLD1", 8);
    assert_int_equal(fread(&count, 4, 1, f), 1);
    assert_true(count <= 64);
    for (uint32_t i = 0; i < count; i++) {
        golden_tensor *t = &g->t[i];
        uint32_t len, dtype, ndim;
        assert_int_equal(fread(&len, 4, 1, f), 1);
        assert_true(len < sizeof t->name);
        assert_int_equal(fread(t->name, 1, len, f), len);
        t->name[len] = 0;
        assert_int_equal(fread(&dtype, 4, 1, f), 1);
        assert_int_equal(fread(&ndim, 4, 1, f), 1);
        t->dtype = (int)dtype;
        t->numel = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            int64_t s;
            assert_int_equal(fread(&s, 8, 1, f), 1);
            t->numel *= s;
        }
        t->data = nn_alloc((size_t)t->numel * 4);
        assert_int_equal(fread(t->data, 4, (size_t)t->numel, f), (size_t)t->numel);
    }
    g->count = (int)count;
    fclose(f);
    return g;
}

static inline golden_tensor *golden_get(golden *g, const char *name, int64_t numel) {
    for (int i = 0; i < g->count; i++)
        if (!strcmp(g->t[i].name, name)) {
            if (numel >= 0 && g->t[i].numel != numel)
                fail_msg("golden tensor %s has %lld elements, expected %lld", name, (long long)g->t[i].numel,
                         (long long)numel);
            return &g->t[i];
        }
    fail_msg("golden tensor %s missing", name);
    return NULL;
}

/* Mutable copies (tests perturb inputs for finite differences). */
static inline float *golden_f32(golden *g, const char *name, int64_t numel) {
    golden_tensor *t = golden_get(g, name, numel);
    assert_int_equal(t->dtype, 0);
    float *p = nn_alloc((size_t)t->numel * sizeof(float));
    memcpy(p, t->data, (size_t)t->numel * sizeof(float));
    return p;
}

static inline int32_t *golden_i32(golden *g, const char *name, int64_t numel) {
    golden_tensor *t = golden_get(g, name, numel);
    assert_int_equal(t->dtype, 1);
    int32_t *p = nn_alloc((size_t)t->numel * sizeof(int32_t));
    memcpy(p, t->data, (size_t)t->numel * sizeof(int32_t));
    return p;
}

/* Releases everything this test allocated through the helpers (goldens included). */
static inline void golden_free(golden *g) {
    (void)g;
    nn_free_all();
}

/* ---- closeness: |got − want| <= atol + rtol·|want| elementwise ---- */

static inline void check_close(const char *what, const float *got, const float *want, int64_t n, double rtol,
                               double atol) {
    double worst = 0.0;
    int64_t worst_i = -1;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)want[i]);
        double excess = err - (atol + rtol * fabs((double)want[i]));
        if (!(excess <= worst) || isnan(err)) {
            worst = isnan(err) ? INFINITY : excess;
            worst_i = i;
        }
    }
    if (worst_i >= 0)
        fail_msg("%s: element %lld is %.9g, expected %.9g (rtol %g, atol %g)", what, (long long)worst_i,
                 (double)got[worst_i], (double)want[worst_i], rtol, atol);
}

static inline float *fzeros(int64_t n) { return nn_alloc((size_t)n * sizeof(float)); }

static inline float *frandn(int64_t n, uint64_t seed, double scale) {
    float *p = nn_alloc((size_t)n * sizeof(float));
    vla_rng r = vla_rng_stream(seed, 77);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(scale * vla_rng_normal(&r));
    return p;
}

static inline double dot_f32(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* ---- finite differences ----
 * loss(ctx) runs the forward and returns L = Σ out·dy in double. For random
 * ±1 directions u and a few unit coordinates, compares the analytic change
 * Σ grad·(p⁺ − p⁻) with L(p⁺) − L(p⁻) for p± = p ± eps·u (rounded to f32;
 * the actual rounded steps are used on the analytic side). With f32
 * forwards, the error is O(eps²) truncation plus f32 rounding of L divided
 * by the step; tol is relative to the directional derivative plus a floor
 * proportional to the size of the loss terms (abs_scale). */
typedef double (*fd_loss_fn)(void *ctx);

static inline void fd_check(const char *what, fd_loss_fn loss, void *ctx, float *param, const float *grad,
                            int64_t n, uint64_t seed, double eps, double rtol, double abs_scale) {
    vla_rng r = vla_rng_stream(seed, 991);
    float *orig = nn_alloc((size_t)n * sizeof(float));
    float *plus = nn_alloc((size_t)n * sizeof(float)), *minus = nn_alloc((size_t)n * sizeof(float));
    memcpy(orig, param, (size_t)n * sizeof(float));
    for (int trial = 0; trial < 6; trial++) {
        int64_t coord = trial >= 3 ? vla_rng_int(&r, 0, n) : -1;
        for (int64_t i = 0; i < n; i++) {
            double u = coord >= 0 ? (i == coord ? 1.0 : 0.0) : (vla_rng_u32(&r) & 1 ? 1.0 : -1.0);
            double h = eps * (1.0 + fabs((double)orig[i]));
            plus[i] = (float)((double)orig[i] + h * u);
            minus[i] = (float)((double)orig[i] - h * u);
        }
        double analytic = 0.0;
        for (int64_t i = 0; i < n; i++) analytic += (double)grad[i] * ((double)plus[i] - (double)minus[i]);
        memcpy(param, plus, (size_t)n * sizeof(float));
        double lp = loss(ctx);
        memcpy(param, minus, (size_t)n * sizeof(float));
        double lm = loss(ctx);
        memcpy(param, orig, (size_t)n * sizeof(float));
        double numeric = lp - lm;
        double tol = rtol * fabs(analytic) + 2e-6 * abs_scale;
        if (!(fabs(numeric - analytic) <= tol))
            fail_msg("%s: finite differences (trial %d, coord %lld): numeric %.9g vs analytic %.9g (tol %.3g)", what,
                     trial, (long long)coord, numeric, analytic, tol);
    }
}

/* Σ |out·dy|, the scale of the loss terms (for fd_check's rounding floor). */
static inline double abs_dot(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += fabs((double)a[i] * (double)b[i]);
    return s;
}

#endif
