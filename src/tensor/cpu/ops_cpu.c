/* ops_cpu.c — the CPU backend of the op table: memory, GEMMs cut into
 * tiles by shape (each tile by oneDNN or OpenBLAS, tensor/cpu/gemm.h),
 * elementwise work and reductions with OpenMP, the optimizer's kernels, and the table itself (the other kernels live in
 * ops_cpu_norm.c, ops_cpu_pointwise.c, ops_cpu_layout.c,
 * ops_cpu_attention.c and ops_cpu_flow.c).
 *
 * WHEN TO USE THREADS (tensor/cpu/parallel.h holds the numbers; nn/ uses them too)
 * libgomp's default wait policy spins a while, then sleeps. `vla bench
 * threads` on the quiet 2-core box: an empty region costs ~1 µs back to
 * back, ~3 µs after 1 ms of serial work, 60–80 µs (p90 ~240) after 10 ms;
 * on a loaded box (load 3–6) ~7 ms, because the sleeping worker waits for
 * a CPU. The first thresholds (16–32k elements, every GEMM above 2^18
 * multiply-adds threaded by OpenBLAS) ran pi05-tiny at 5–47 samples/s on
 * 2 threads against ~120 on 1 (60% of the time spinning in libgomp); the
 * next (2^21 elements, 2^25 GEMM multiply-adds, 2^27 attention work) kept
 * tiny policies serial but left mid-size ones at 1.5× on two cores, the
 * small ops between GEMMs running on one. The present ones (2^16, 2^22,
 * 2^22) are the smallest measured to keep one thread as fast (tiny presets
 * within noise) while pi05-small/groot-small reach 1.85–1.9× on two cores
 * and the tiny ones gain 17–30%. Designs weighed: a persistent team that
 * spins before sleeping is what libgomp already is (GOMP_SPINCOUNT); dynamic
 * teams (omp_set_dynamic / OMP_DYNAMIC=true) were rejected: libgomp then
 * sizes teams from the 15-minute load average, which counts our own
 * threads, and `vla bench policy --threads 2` hung in its first threaded
 * OpenBLAS GEMM. Coarse work per region is the lever we own. The wait
 * policy needs the environment before libgomp starts, so it stays the
 * user's choice (OMP_WAIT_POLICY=passive helps a loaded machine).
 *
 * Reductions accumulate in double per thread and combine in a fixed order,
 * so results do not depend on scheduling. */
#include "tensor/cpu/ops_cpu_internal.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"
#include "tensor/step_guard.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN VLA_PAR_MIN_ELEMS

int vla_parallel_always = 0;

static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0) return NULL;
    return p;
}

static void cpu_free(void *p) { free(p); }
static void cpu_copy_bytes(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }

/* ---- GEMM: our own split of the output, one single-threaded BLAS call per tile ----
 *
 * OpenBLAS's own threading is never used. Its threaded GEMM cuts the
 * problem differently for each thread count, and with some kernels (seen
 * with OpenBLAS's Haswell kernel) that changes the rounding of the result,
 * so a loss came out 0.93346474064994567 on 1 thread and 0.93346474723713913
 * on 2. Instead the output C is cut into tiles by a rule that looks at the
 * shape (m, n, k) alone, never at the thread count; each tile is one
 * single-threaded GEMM call (oneDNN or OpenBLAS) over the whole of K (a
 * reduction over K is never split), and threads only decide who computes
 * which tile. So every element of C comes from the same call with the same
 * arguments whatever the thread count, and results are bit-identical for 1,
 * 2 or N threads with either library and any of its kernels. docs/design.md
 * states the rule. */

/* Multiply-adds per tile the split aims for: 2^23 (~0.1 ms on one core).
 * Each tile packs its own slices of A and B, which costs one core 5–10% at
 * mid-size shapes against one whole-matrix call (bench gemm, 1 thread,
 * Haswell kernel); bigger tiles cost less but leave fewer to balance. */
#define GEMM_TILE_MACS ((int64_t)1 << 23)
/* At most 8 tiles per product. The split halves the longer side, so the
 * big products (tokens × 1024 × 256 of an MLP) were cut along the tokens
 * into 32 slabs of ~176 rows, each packing the whole weight again: the
 * LM's main shapes at batch 32 ran 82–83 GFLOP/s on one thread and
 * 155–160 on two; with 8 tiles 86–87 and 170–173, and pi05-small and
 * groot-small train 1–8% faster at 1 and 2 threads (interleaved runs). The
 * price: one product keeps at most 8 threads busy — on machines with more
 * cores, run more ranks (docs/train.md, MPI). The cap is a constant, not
 * the core count, so results stay the same wherever the thread count or
 * CPU affinity varies. */
#define GEMM_MAX_TILES 8
/* Tile area (tm·tn) the split does not go below: each tile packs k·(tm+tn)
 * floats for k·tm·tn multiply-adds, and below ~128×128 the packing copies
 * cost more than a quarter of the kernel's time. Matters for the large-k
 * products of weight gradients (k = tokens in the batch), where the MAC
 * target alone would cut 256×1024 outputs into 64×128 tiles. */
#define GEMM_MIN_TILE_AREA ((int64_t)128 * 128)
/* ...except that a product worth two tiles of work is always cut in two,
 * whatever its area: the weight gradients of narrow projections (a k or v
 * projection's 64×256 output over k = 5,632 tokens, 2.1 ms) would
 * otherwise run on one core while the other waits. Two 64×128 tiles: 1.07
 * ms on two threads, within 4% of one tile on one (bench of the shape,
 * OpenBLAS Zen kernel). Four cost one thread 3–10%. */
#define GEMM_MIN_TILES 2
/* tile edges are multiples of this (OpenBLAS's micro-kernels work in
 * 4/8/16-wide strips; a ragged edge only in the last tile; no tile edge
 * is cut below it) */
#define GEMM_TILE_ALIGN 32

typedef struct {
    int64_t tm, tn;   /* tile rows, tile columns */
    int64_t nm, nn;   /* tiles along m and along n */
} gemm_split;

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The split of an m×n×k product: a function of the shape only. The tile
 * count is a power of two (so 2, 4 or 8 threads get equal shares); each
 * halving goes to the longer side, in units of GEMM_TILE_ALIGN. */
static gemm_split gemm_split_for(int64_t m, int64_t n, int64_t k) {
    gemm_split s = {m, n, 1, 1};
    int64_t by_work = (m * n * k) / GEMM_TILE_MACS, by_area = (m * n) / GEMM_MIN_TILE_AREA;
    int64_t want = by_work < by_area ? by_work : by_area;
    if (want < GEMM_MIN_TILES && by_work >= GEMM_MIN_TILES) want = GEMM_MIN_TILES;
    int64_t tiles = 1;
    while (tiles * 2 <= want && tiles * 2 <= GEMM_MAX_TILES) tiles *= 2;
    int64_t um = div_up(m, GEMM_TILE_ALIGN), un = div_up(n, GEMM_TILE_ALIGN); /* sides in units */
    int64_t pm = 1, pn = 1;
    for (int64_t t = 1; t < tiles; t *= 2) {
        bool can_m = um >= pm * 2, can_n = un >= pn * 2;
        if (!can_m && !can_n) break;
        if (can_m && (!can_n || div_up(um, pm) >= div_up(un, pn))) pm *= 2;
        else pn *= 2;
    }
    s.tm = div_up(um, pm) * GEMM_TILE_ALIGN;
    s.tn = div_up(un, pn) * GEMM_TILE_ALIGN;
    if (s.tm > m) s.tm = m;
    if (s.tn > n) s.tn = n;
    s.nm = div_up(m, s.tm);
    s.nn = div_up(n, s.tn);
    return s;
}

/* One single-threaded call of the GEMM library in use (oneDNN, or OpenBLAS
 * with VLA_GEMM=openblas: tensor/cpu/gemm.h). */
static void blas_sgemm_1thread(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                               int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    vla_gemm_tile(vla_gemm_lib_active(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Tile `i` of split s: C[r0:r0+tm, c0:c0+tn] from rows r0.. of op(A) and
 * columns c0.. of op(B) — its size and the element offsets of its operands. */
typedef struct {
    int64_t rm, cn, a, b, c;
} gemm_tile_at;

static gemm_tile_at tile_at(const gemm_split *s, int64_t i, bool ta, bool tb, int64_t m, int64_t n, int64_t lda,
                            int64_t ldb, int64_t ldc) {
    int64_t r0 = (i / s->nn) * s->tm, c0 = (i % s->nn) * s->tn;
    gemm_tile_at t = {m - r0 < s->tm ? m - r0 : s->tm, n - c0 < s->tn ? n - c0 : s->tn, 0, 0, r0 * ldc + c0};
    t.a = ta ? r0 : r0 * lda; /* op(A) rows r0.. : columns of A when transposed */
    t.b = tb ? c0 * ldb : c0; /* op(B) columns c0.. : rows of B when transposed */
    return t;
}

static void gemm_tile(const gemm_split *s, int64_t i, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc) {
    gemm_tile_at t = tile_at(s, i, ta, tb, m, n, lda, ldb, ldc);
    blas_sgemm_1thread(ta, tb, t.rm, t.cn, k, alpha, a + t.a, lda, b + t.b, ldb, beta, c + t.c, ldc);
}

/* bf16 operands through oneDNN's bf16 tile, cut by the same split as
 * cpu_sgemm (so the result does not depend on the thread count); m, n, k
 * > 0 and vla_gemm_bf16_native() (ops_cpu_precision.c decides). A oneDNN
 * failure here is out of memory or a broken install: it aborts, as the
 * emulation's scratch allocation does. */
void vla_cpu_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a,
                       int64_t lda, const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    gemm_split s = gemm_split_for(m, n, k);
    int64_t tiles = s.nm * s.nn;
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : failed) \
    if (tiles > 1 && !omp_in_parallel() && m * n * k >= VLA_PAR_MIN_GEMM)
    for (int64_t i = 0; i < tiles; i++) {
        gemm_tile_at t = tile_at(&s, i, ta, tb, m, n, lda, ldb, ldc);
        failed |= vla_gemm_bf16_tile(ta, tb, t.rm, t.cn, k, alpha, a + t.a, lda, b + t.b, ldb, beta, c + t.c, ldc,
                                     NULL) != VLA_OK;
    }
    if (failed) {
        fprintf(stderr, "vla: oneDNN's bf16 GEMM failed (%lldx%lldx%lld): %s\n", (long long)m, (long long)n,
                (long long)k, vla_error_message());
        abort();
    }
}

static void cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) { /* BLAS may not touch C when k == 0; define it as C = beta·C */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
    gemm_split s = gemm_split_for(m, n, k);
    int64_t tiles = s.nm * s.nn;
    if (tiles == 1) {
        blas_sgemm_1thread(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* a team only for work worth waking it (tensor/cpu/parallel.h); the split is the same either way */
#pragma omp parallel for schedule(dynamic, 1) if (!omp_in_parallel() && m * n * k >= VLA_PAR_MIN_GEMM)
    for (int64_t i = 0; i < tiles; i++) gemm_tile(&s, i, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_sgemm_strided_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                      const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                                      int64_t sb, float beta, float *c, int64_t ldc, int64_t sc, int64_t batch) {
    /* Many small products: one per thread, when together they are worth a
     * team; few large ones: each product splits its own output. Each
     * product is computed the same way in both cases. */
    int64_t macs = m * n * k;
    if (batch >= 2 && macs < VLA_PAR_MIN_GEMM) {
#pragma omp parallel for schedule(static) if (!omp_in_parallel() && macs * batch >= VLA_PAR_MIN_GEMM)
        for (int64_t i = 0; i < batch; i++)
            cpu_sgemm(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
    } else {
        for (int64_t i = 0; i < batch; i++)
            cpu_sgemm(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
    }
}

static void cpu_fill(float *y, float v, int64_t n) {
    if (v == 0.0f && !signbit(v) && n <= PAR_MIN) { /* zeroing gradients: the most common fill */
        if (n > 0) memset(y, 0, (size_t)n * sizeof(float));
        return;
    }
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = v;
}

static void cpu_copy(float *y, const float *x, int64_t n) {
    if (y != x) memmove(y, x, (size_t)n * sizeof(float));
}

static void cpu_affine(float *y, const float *x, float alpha, float beta, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta;
}

static void cpu_scale_to(float *y, const float *x, double alpha, int64_t n) {
    /* the product of two floats is exact in double: one rounding, as a
     * caller pre-scaling by a float would get */
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * alpha);
}

static void cpu_add(float *y, const float *a, const float *b, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

static void cpu_sub(float *y, const float *a, const float *b, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] - b[i];
}

static void cpu_mul(float *y, const float *a, const float *b, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}

static void cpu_axpy(float *y, float alpha, const float *x, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

static void cpu_scale(float *y, float alpha, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] *= alpha;
}

static void cpu_add_row_vector(float *y, const float *bias, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) yr[c] += bias[c];
    }
}

/* Deterministic parallel reduction: fixed blocks summed in double, blocks
 * combined in index order. */
#define RED_BLOCK 8192
#define DEFINE_REDUCTION(fname, params, expr)                                   \
    static double fname params {                                                \
        int64_t nblocks = (n + RED_BLOCK - 1) / RED_BLOCK;                      \
        if (nblocks <= 1) {                                                     \
            double s = 0;                                                       \
            for (int64_t i = 0; i < n; i++) s += (expr);                        \
            return s;                                                           \
        }                                                                       \
        double *partial = malloc((size_t)nblocks * sizeof(double));             \
        if (!partial) abort();                                                  \
        _Pragma("omp parallel for if (n > PAR_MIN)")                            \
        for (int64_t blk = 0; blk < nblocks; blk++) {                           \
            int64_t lo = blk * RED_BLOCK, hi = lo + RED_BLOCK < n ? lo + RED_BLOCK : n; \
            double s = 0;                                                       \
            for (int64_t i = lo; i < hi; i++) s += (expr);                      \
            partial[blk] = s;                                                   \
        }                                                                       \
        double total = 0;                                                       \
        for (int64_t blk = 0; blk < nblocks; blk++) total += partial[blk];      \
        free(partial);                                                          \
        return total;                                                           \
    }

DEFINE_REDUCTION(cpu_sum, (const float *x, int64_t n), (double)x[i])
DEFINE_REDUCTION(cpu_dot, (const float *a, const float *b, int64_t n), (double)a[i] * (double)b[i])
DEFINE_REDUCTION(cpu_sum_squares, (const float *x, int64_t n), (double)x[i] * (double)x[i])

static void cpu_sum_squares_multi(int count, const float *const *x, const int64_t *n, double *out) {
    for (int i = 0; i < count; i++) out[i] = cpu_sum_squares(x[i], n[i]);
}

static void cpu_sum_squares_total(int count, const float *const *x, const int64_t *n, double *total) {
    double t = 0;
    for (int i = 0; i < count; i++) t += cpu_sum_squares(x[i], n[i]);
    *total = t;
}

static void cpu_clip_coef(float *guard, const double *sumsq, const double *also, double max_norm) {
    *guard = vla_step_guard(*sumsq, also != NULL, also ? *also : 0.0, max_norm);
}

static float cpu_max_abs(const float *x, int64_t n) {
    float m = 0.0f;
#pragma omp parallel for reduction(max : m) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        if (v > m || v != v) m = v != v ? INFINITY : v;
    }
    return m;
}

static int64_t cpu_count_nonfinite(const float *x, int64_t n) {
    int64_t count = 0;
#pragma omp parallel for reduction(+ : count) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) count += !isfinite(x[i]);
    return count;
}

static int64_t cpu_find_nonfinite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

static void cpu_sum_rows(float *y, const float *x, int64_t rows, int64_t cols, float beta) {
    /* parallel over columns; each column's sum runs over rows in order */
#pragma omp parallel for if (rows * cols > PAR_MIN)
    for (int64_t c0 = 0; c0 < cols; c0 += 64) {
        int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols;
        double acc[64] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols + c0;
#pragma omp simd
            for (int64_t c = 0; c < c1 - c0; c++) acc[c] += xr[c];
        }
        for (int64_t c = c0; c < c1; c++) y[c] = (beta == 0.0f ? 0.0f : beta * y[c]) + (float)acc[c - c0];
    }
}

static void cpu_softmax_rows(float *y, const float *x, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = -INFINITY;
        for (int64_t c = 0; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
        if (mx == -INFINITY) { /* a fully masked row: define its softmax as 0 */
            for (int64_t c = 0; c < cols; c++) yr[c] = 0.0f;
            continue;
        }
        double s = 0;
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = expf(xr[c] - mx);
            s += yr[c];
        }
        float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; c++) yr[c] *= inv;
    }
}

static void cpu_softmax_rows_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        float *dxr = dx + r * cols;
        double dot = 0;
        for (int64_t c = 0; c < cols; c++) dot += (double)dyr[c] * yr[c];
        for (int64_t c = 0; c < cols; c++) dxr[c] = yr[c] * (dyr[c] - (float)dot);
    }
}

static void cpu_convert(void *dst, vla_dtype dt, const void *src, vla_dtype st, int64_t n) {
    if (n <= PAR_MIN) {
        vla_convert(dst, dt, src, st, (size_t)n);
        return;
    }
    size_t ds = vla_dtype_size(dt), ss = vla_dtype_size(st);
    int64_t nblocks = (n + RED_BLOCK - 1) / RED_BLOCK;
#pragma omp parallel for
    for (int64_t b = 0; b < nblocks; b++) {
        int64_t lo = b * RED_BLOCK, cnt = lo + RED_BLOCK < n ? RED_BLOCK : n - lo;
        vla_convert((char *)dst + (size_t)lo * ds, dt, (const char *)src + (size_t)lo * ss, st, (size_t)cnt);
    }
}

static void cpu_adamw(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s,
                      bool decay) {
    const float b1 = s->beta1, omb1 = s->one_minus_beta1, b2 = s->beta2, omb2 = s->one_minus_beta2;
    const float bc2s = s->bias_correction2_sqrt, eps = s->eps, neg_step = s->neg_step;
    /* multiplying by 1 is exact, so the flags become factors and the loop
     * has no branch to keep it from vectorising */
    if (s->guard && !isfinite(*s->guard)) return; /* the skipped step */
    const float decay_mul = decay ? s->decay_mul : 1.0f, scale = s->guard ? *s->guard : s->grad_scale;
#pragma omp parallel for simd schedule(static) if (parallel : n > VLA_PAR_MIN_ELEMS)
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i] * decay_mul;
        float gi = g[i] * scale;
        float mi = m[i] * b1 + gi * omb1;
        float vi = v[i] * b2 + omb2 * gi * gi;
        w[i] = wi + neg_step * (mi / (sqrtf(vi) / bc2s + eps));
        m[i] = mi;
        v[i] = vi;
    }
}

static void cpu_ema(float *e, const float *w, float d, float omd, int64_t n, const float *guard) {
    if (guard && !isfinite(*guard)) return;
#pragma omp parallel for simd schedule(static) if (parallel : n > VLA_PAR_MIN_ELEMS)
    for (int64_t i = 0; i < n; i++) e[i] = d * e[i] + omd * w[i];
}

static void cpu_adamw_multi(int count, float *const *w, const float *const *g, float *const *m, float *const *v,
                            const int64_t *n, const bool *decay, const vla_adamw_scalars *s) {
    for (int i = 0; i < count; i++) cpu_adamw(w[i], g[i], m[i], v[i], n[i], s, decay[i]);
}

static void cpu_ema_multi(int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
                          const float *guard) {
    for (int i = 0; i < count; i++) cpu_ema(e[i], w[i], d, omd, n[i], guard);
}

/* the cpu's own figures (ops.h, vla_ops_stat): its operand casts; nothing else applies */
static int64_t cpu_stat(vla_ops_stat what) { return what == VLA_STAT_OPERAND_CASTS ? vla_cpu_operand_casts() : -1; }

static const vla_ops cpu_ops = {
    .name = "cpu",
    .device = VLA_DEVICE_CPU,
    .host_memory = true,
    .rtol = 0.0,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .to_device = cpu_copy_bytes,
    .to_host = cpu_copy_bytes,
    .copy_bytes = cpu_copy_bytes,
    .sgemm = cpu_sgemm,
    .sgemm_strided_batched = cpu_sgemm_strided_batched,
    .sgemm_q = vla_cpu_sgemm_q,
    .sgemm_epi = vla_cpu_sgemm_epi,
    .ready_bytes = vla_cpu_ready_bytes,
    .prepare_operand = vla_cpu_prepare_operand,
    .prepare_operand_pair = vla_cpu_prepare_operand_pair,
    .stat = cpu_stat,
    .fp8_scale_update = vla_cpu_fp8_scale_update,
    .fill = cpu_fill,
    .copy = cpu_copy,
    .add = cpu_add,
    .sub = cpu_sub,
    .mul = cpu_mul,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .affine = cpu_affine,
    .scale_to = cpu_scale_to,
    .add_row_vector = cpu_add_row_vector,
    .copy_rows = vla_cpu_copy_rows,
    .add_rows = vla_cpu_add_rows,
    .copy2d = vla_cpu_copy2d,
    .im2col = vla_cpu_im2col,
    .col2im_add = vla_cpu_col2im_add,
    .sum = cpu_sum,
    .dot = cpu_dot,
    .sum_squares = cpu_sum_squares,
    .segment_linear_forward = vla_cpu_segment_linear_forward,
    .segment_linear_backward = vla_cpu_segment_linear_backward,
    .sum_squares_multi = cpu_sum_squares_multi,
    .sum_squares_total = cpu_sum_squares_total,
    .max_abs = cpu_max_abs,
    .count_nonfinite = cpu_count_nonfinite,
    .find_nonfinite = cpu_find_nonfinite,
    .sum_rows = cpu_sum_rows,
    .softmax_rows = cpu_softmax_rows,
    .softmax_rows_backward = cpu_softmax_rows_backward,
    .attention_mask = vla_cpu_attention_mask,
    .act_forward = vla_cpu_act_forward,
    .act_backward = vla_cpu_act_backward,
    .glu_forward = vla_cpu_glu_forward,
    .glu_backward = vla_cpu_glu_backward,
    .layernorm_forward = vla_cpu_layernorm_forward,
    .layernorm_backward = vla_cpu_layernorm_backward,
    .rmsnorm_forward = vla_cpu_rmsnorm_forward,
    .rmsnorm_backward = vla_cpu_rmsnorm_backward,
    .adaln_forward = vla_cpu_adaln_forward,
    .adaln_backward = vla_cpu_adaln_backward,
    .adarms_forward = vla_cpu_adarms_forward,
    .adarms_backward = vla_cpu_adarms_backward,
    .gated_residual_forward = vla_cpu_gated_residual_forward,
    .gated_residual_backward = vla_cpu_gated_residual_backward,
    .rope_forward = vla_cpu_rope_forward,
    .rope_backward = vla_cpu_rope_backward,
    .time_embedding_forward = vla_cpu_time_embedding_forward,
    .time_embedding_backward = vla_cpu_time_embedding_backward,
    .attention_forward = vla_cpu_attention_forward,
    .attention_backward = vla_cpu_attention_backward,
    .attention_forward_cached = vla_cpu_attention_forward_cached,
    .flow_interpolate = vla_cpu_flow_interpolate,
    .masked_mse = vla_cpu_masked_mse,
    .masked_mse_acc = vla_cpu_masked_mse_acc,
    .adamw = cpu_adamw,
    .ema = cpu_ema,
    .adamw_multi = cpu_adamw_multi,
    .ema_multi = cpu_ema_multi,
    .clip_coef = cpu_clip_coef,
    .convert = cpu_convert,
};

const vla_ops *vla_cpu_backend_table(void) { return &cpu_ops; }
