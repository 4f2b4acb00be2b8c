/* profile.c — the profiling op table (profile.h): one forwarding wrapper
 * per slot, timed while profiling is on, and the sums by op. */
#include "tensor/profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/timer.h"
#include "tensor/attn_plan.h"

/* One timed call: its op, the precision variant (-1: none), its FLOPs and bytes, its start and end
 * (mark handles on the backend's timeline, or host seconds), its launches and its thread's phase. */
typedef struct {
    const char *name;
    int variant;
    double flops, bytes;
    int64_t ha, hb;
    double ta, tb;
    int64_t launches; /* the backend's launches during the call (ops.h, launches; 0: not counted) */
    const char *phase; /* the calling thread's (vla_profile_phase) */
} prof_rec;

static _Thread_local const char *cur_phase;

void vla_profile_phase(const char *name) { cur_phase = name; }

/* A profiled run of a few steps makes tens of thousands of calls; past this
 * many the rest are counted as dropped rather than grow without bound. */
#define PROF_MAX_RECORDS (1 << 22)

static struct {
    const vla_ops *in;
    vla_ops table;
    atomic_int on;
    atomic_bool whole_regions; /* this profile times captured regions whole (vla_profile_start_whole_regions) */
    pthread_mutex_t lock;
    prof_rec *rec;
    int64_t n, cap, dropped, unmarked;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

typedef struct {
    int64_t h;
    double t;
    int64_t launches;
} prof_mark;

static prof_mark mark_now(void) {
    prof_mark m = {-1, 0, P.in->launches ? P.in->launches() : 0};
    if (P.in->mark) m.h = P.in->mark();
    else m.t = vla_now_s();
    return m;
}

/* What a call costs, from its arguments: FLOPs (GEMMs, attention) and the bytes it must move at least
 * (each array it reads or writes touched once, 4 bytes a float: a memory-bound op's floor). */
typedef struct {
    double flops, bytes;
} prof_cost;
#define COST(f, b) ((prof_cost){(double)(f), (double)(b)})

static double total_n(int count, const int64_t *n) {
    double t = 0;
    for (int i = 0; i < count; i++) t += (double)n[i];
    return t;
}

static void record(const char *name, int variant, prof_cost c, prof_mark a, prof_mark b) {
    pthread_mutex_lock(&P.lock);
    if (P.in->mark && (a.h < 0 || b.h < 0)) {
        P.unmarked++;
    } else {
        if (P.n == P.cap && P.cap < PROF_MAX_RECORDS) {
            int64_t cap = P.cap ? 2 * P.cap : 4096;
            prof_rec *r = realloc(P.rec, sizeof *r * (size_t)cap);
            if (r) P.rec = r, P.cap = cap;
        }
        if (P.n < P.cap)
            P.rec[P.n++] =
                (prof_rec){name, variant, c.flops, c.bytes, a.h, b.h, a.t, b.t, b.launches - a.launches, cur_phase};
        else P.dropped++;
    }
    pthread_mutex_unlock(&P.lock);
}

/* Inside a region timed whole (vla_profile_start_whole_regions): its ops are the region's, not rows. */
static _Thread_local bool in_whole_region;

#define ON() (atomic_load_explicit(&P.on, memory_order_relaxed) && !in_whole_region)

/* A wrapper for a slot returning nothing, and one for a slot returning
 * `type`: forwards, and while profiling times the call as op `name` with
 * precision variant `var` and cost `fl` (COST(flops, bytes): expressions of
 * the arguments). */
#define PROF_VOID(name, var, fl, params, args)     \
    static void pr_##name params {                 \
        if (!ON()) {                               \
            P.in->name args;                       \
            return;                                \
        }                                          \
        prof_mark a_ = mark_now();                 \
        P.in->name args;                           \
        record(#name, (var), fl, a_, mark_now());  \
    }
#define PROF_RET(type, name, var, fl, params, args) \
    static type pr_##name params {                  \
        if (!ON()) return P.in->name args;          \
        prof_mark a_ = mark_now();                  \
        type r_ = P.in->name args;                  \
        record(#name, (var), fl, a_, mark_now());  \
        return r_;                                  \
    }

#define NOV (-1) /* no precision variant */
static int qmode(const vla_gemm_q *q) { return q ? (int)q->mode : (int)VLA_PREC_FP32; }
static double mnk2(int64_t m, int64_t n, int64_t k) { return 2.0 * (double)m * (double)n * (double)k; }
static double seg_rows(const int32_t *cu, int32_t n_seg) { return n_seg > 0 && cu ? (double)(cu[n_seg] - cu[0]) : 0; }

/* FLOPs of attention over `pairs`: the forward's two products (QKᵀ, PV), 2 FLOPs per multiply-add,
 * 4·pairs·heads·head_dim; the backward's five (S again, dV, dP, dQ, dK): 10·pairs·heads·head_dim —
 * FlashAttention's counting (its backward is 2.5 forwards), so TFLOP/s compare with its figures. */
static double attn_flops(const vla_attn_config *cfg, double pairs, double products) {
    return 2.0 * products * pairs * (double)cfg->n_heads * (double)cfg->head_dim;
}

/* ---- memory -------------------------------------------------------------------------------- */
PROF_RET(void *, alloc, NOV, COST(0, 0), (size_t bytes), (bytes))
PROF_VOID(free, NOV, COST(0, 0), (void *p), (p))
PROF_VOID(to_device, NOV, COST(0, (double)bytes), (void *dst, const void *src, size_t bytes), (dst, src, bytes))
PROF_VOID(to_host, NOV, COST(0, (double)bytes), (void *dst, const void *src, size_t bytes), (dst, src, bytes))
PROF_VOID(copy_bytes, NOV, COST(0, 2.0 * (double)bytes), (void *dst, const void *src, size_t bytes), (dst, src, bytes))

/* ---- GEMM ---------------------------------------------------------------------------------- */
PROF_VOID(sgemm, VLA_PREC_FP32, COST(mnk2(m, n, k), 0),
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
           const float *b, int64_t ldb, float beta, float *c, int64_t ldc),
          (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
PROF_VOID(sgemm_strided_batched, VLA_PREC_FP32, COST(mnk2(m, n, k) * (double)batch, 0),
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, int64_t sa,
           const float *b, int64_t ldb, int64_t sb, float beta, float *c, int64_t ldc, int64_t sc, int64_t batch),
          (ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch))
PROF_VOID(sgemm_q, qmode(q), COST(mnk2(m, n, k), 0),
          (const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc),
          (q, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
PROF_VOID(prepare_operand, qmode(q), COST(0, 6.0 * (double)n * (double)k),
          (const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb, void *dst),
          (q, tb, n, k, b, ldb, dst))
/* f32 in, two FP8 copies out */
PROF_VOID(prepare_operand_pair, qmode(q), COST(0, 6.0 * (double)rows * (double)cols),
          (const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb, void *dst_n, void *dst_t),
          (q, rows, cols, b, ldb, dst_n, dst_t))
PROF_VOID(sgemm_epi, qmode(q), COST(mnk2(m, n, k), 0),
          (const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc),
          (q, epi, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
PROF_VOID(fp8_scale_update, NOV, COST(0, 0),
          (float *history, float *scale, int64_t n, int64_t hist_len, const float *fmt_max, float margin,
           bool most_recent),
          (history, scale, n, hist_len, fmt_max, margin, most_recent))

/* ---- elementwise ---------------------------------------------------------------------------- */
PROF_VOID(fill, NOV, COST(0, 4.0 * n), (float *y, float value, int64_t n), (y, value, n))
PROF_VOID(copy, NOV, COST(0, 8.0 * n), (float *y, const float *x, int64_t n), (y, x, n))
PROF_VOID(add, NOV, COST(0, 12.0 * n), (float *y, const float *a, const float *b, int64_t n), (y, a, b, n))
PROF_VOID(sub, NOV, COST(0, 12.0 * n), (float *y, const float *a, const float *b, int64_t n), (y, a, b, n))
PROF_VOID(mul, NOV, COST(0, 12.0 * n), (float *y, const float *a, const float *b, int64_t n), (y, a, b, n))
PROF_VOID(axpy, NOV, COST(0, 12.0 * n), (float *y, float alpha, const float *x, int64_t n), (y, alpha, x, n))
PROF_VOID(scale, NOV, COST(0, 8.0 * n), (float *y, float alpha, int64_t n), (y, alpha, n))
PROF_VOID(affine, NOV, COST(0, 8.0 * n),
          (float *y, const float *x, float alpha, float beta, int64_t n), (y, x, alpha, beta, n))
PROF_VOID(scale_to, NOV, COST(0, 8.0 * n), (float *y, const float *x, double alpha, int64_t n), (y, x, alpha, n))
PROF_VOID(add_row_vector, NOV, COST(0, 8.0 * (double)rows * (double)cols),
          (float *y, const float *bias, int64_t rows, int64_t cols), (y, bias, rows, cols))

/* ---- layout --------------------------------------------------------------------------------- */
PROF_VOID(copy_rows, NOV, COST(0, 8.0 * (double)n * (double)w),
          (float *dst, int64_t ldd, const int32_t *di, const float *src, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float alpha),
          (dst, ldd, di, src, lds, si, n, w, alpha))
PROF_VOID(add_rows, NOV, COST(0, 12.0 * (double)n * (double)w),
          (float *dst, int64_t ldd, const int32_t *di, const float *src, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float alpha),
          (dst, ldd, di, src, lds, si, n, w, alpha))
PROF_VOID(copy2d, NOV, COST(0, 8.0 * (double)rows * (double)cols),
          (float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols),
          (dst, ldd, src, lds, rows, cols))
PROF_VOID(im2col, NOV, COST(0, 8.0 * (double)n_img * C * H * W),
          (float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p),
          (patches, images, n_img, C, H, W, p))
PROF_VOID(col2im_add, NOV, COST(0, 12.0 * (double)n_img * C * H * W),
          (float *images, const float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p),
          (images, patches, n_img, C, H, W, p))

/* ---- per-segment weights -------------------------------------------------------------------- */
PROF_VOID(segment_linear_forward, NOV, COST(2.0 * seg_rows(cu, n_seg) * (double)in_dim * (double)out_dim, 0),
          (float *y, const float *x, const float *w, const float *b, const int32_t *ids, const int32_t *cu,
           int32_t n_seg, int64_t in_dim, int64_t out_dim),
          (y, x, w, b, ids, cu, n_seg, in_dim, out_dim))
PROF_VOID(segment_linear_backward, NOV,
          COST(2.0 * seg_rows(cu, n_seg) * (double)in_dim * (double)out_dim * ((dx != NULL) + (dw != NULL)), 0),
          (float *dx, float *dw, float *db, const float *dy, const float *x, const float *w, const int32_t *ids,
           const int32_t *cu, int32_t n_seg, int64_t in_dim, int64_t out_dim),
          (dx, dw, db, dy, x, w, ids, cu, n_seg, in_dim, out_dim))

/* ---- reductions ----------------------------------------------------------------------------- */
PROF_RET(double, sum, NOV, COST(0, 4.0 * n), (const float *x, int64_t n), (x, n))
PROF_RET(double, dot, NOV, COST(0, 8.0 * n), (const float *a, const float *b, int64_t n), (a, b, n))
PROF_RET(double, sum_squares, NOV, COST(0, 4.0 * n), (const float *x, int64_t n), (x, n))
PROF_VOID(sum_squares_multi, NOV, COST(0, 4.0 * total_n(count, n)),
          (int count, const float *const *x, const int64_t *n, double *out),
          (count, x, n, out))
PROF_VOID(sum_squares_total, NOV, COST(0, 4.0 * total_n(count, n)),
          (int count, const float *const *x, const int64_t *n, double *total),
          (count, x, n, total))
PROF_RET(float, max_abs, NOV, COST(0, 4.0 * n), (const float *x, int64_t n), (x, n))
PROF_RET(int64_t, count_nonfinite, NOV, COST(0, 4.0 * n), (const float *x, int64_t n), (x, n))
PROF_RET(int64_t, find_nonfinite, NOV, COST(0, 4.0 * n), (const float *x, int64_t n), (x, n))
PROF_VOID(sum_rows, NOV, COST(0, 4.0 * (double)rows * (double)cols),
          (float *y, const float *x, int64_t rows, int64_t cols, float beta),
          (y, x, rows, cols, beta))

/* ---- softmax, activations, norms ------------------------------------------------------------ */
PROF_VOID(softmax_rows, NOV, COST(0, 8.0 * (double)rows * (double)cols),
          (float *y, const float *x, int64_t rows, int64_t cols), (y, x, rows, cols))
PROF_VOID(softmax_rows_backward, NOV, COST(0, 12.0 * (double)rows * (double)cols),
          (float *dx, const float *y, const float *dy, int64_t rows, int64_t cols),
          (dx, y, dy, rows, cols))
PROF_VOID(attention_mask, NOV, COST(0, 0),
          (float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks), (mask, qs, ks))
PROF_VOID(act_forward, NOV, COST(0, 8.0 * n), (vla_act act, float *out, const float *in, int64_t n), (act, out, in, n))
PROF_VOID(act_backward, NOV, COST(0, (12.0 + (ready ? 2.0 : 0.0)) * (double)rows * (double)cols), /* d_out, in; d_in */
          (vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows, int64_t cols, void *ready),
          (act, d_in, d_out, in, rows, cols, ready))
PROF_VOID(glu_forward, NOV, COST(0, (12.0 + (ready ? (ready_fp8 ? 1.0 : 2.0) : 0.0)) * (double)rows * (double)cols),
          (vla_act act, float *h, const float *gate, const float *up, int64_t rows, int64_t cols, void *ready,
           const vla_fp8_operand *ready_fp8),
          (act, h, gate, up, rows, cols, ready, ready_fp8))
PROF_VOID(glu_backward, NOV,
          COST(0, (20.0 + (ready_dgate ? 2.0 : 0.0) + (ready_dup ? 2.0 : 0.0)) * (double)rows * (double)cols),
          (vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up, int64_t rows,
           int64_t cols, void *ready_dgate, void *ready_dup),
          (act, dgate, dup, dh, gate, up, rows, cols, ready_dgate, ready_dup))
/* a norm's bytes per element: x in, y out, and what vla_norm_fuse adds (res in, the sum out; the bf16 or
 * FP8 copy) */
static double norm_bytes(const vla_norm_fuse *f) {
    return 8.0 + (f && f->res ? 8.0 : 0.0) + (f && f->ready ? (f->fp8 ? 1.0 : 2.0) : 0.0);
}
PROF_VOID(layernorm_forward, NOV, COST(0, norm_bytes(fuse) * (double)n * (double)dim),
          (float *out, float *mean, float *rstd, const float *in, const float *w, const float *b, int64_t n,
           int64_t dim, float eps, const vla_norm_fuse *fuse),
          (out, mean, rstd, in, w, b, n, dim, eps, fuse))
PROF_VOID(layernorm_backward, NOV, COST(0, 12.0 * (double)n * (double)dim),
          (float *d_in, float *d_w, float *d_b, const float *d_out, const float *in, const float *w,
           const float *mean, const float *rstd, int64_t n, int64_t dim),
          (d_in, d_w, d_b, d_out, in, w, mean, rstd, n, dim))
PROF_VOID(rmsnorm_forward, NOV, COST(0, norm_bytes(fuse) * (double)n * (double)dim),
          (float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n, int64_t dim, float eps,
           const vla_norm_fuse *fuse),
          (out, rstd, in, w, one_plus, n, dim, eps, fuse))
PROF_VOID(rmsnorm_backward, NOV, COST(0, 12.0 * (double)n * (double)dim),
          (float *d_in, float *d_w, const float *d_out, const float *in, const float *w, bool one_plus,
           const float *rstd, int64_t n, int64_t dim),
          (d_in, d_w, d_out, in, w, one_plus, rstd, n, dim))
PROF_VOID(adaln_forward, NOV, COST(0, norm_bytes(fuse) * (double)n * (double)dim),
          (float *out, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu, int32_t n_seg,
           int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse),
          (out, mean, rstd, in, mod, cu, n_seg, n, dim, eps, fuse))
PROF_VOID(adaln_backward, NOV, COST(0, 12.0 * (double)n * (double)dim),
          (float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod, const float *mean,
           const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim),
          (d_in, d_mod, d_out, in, mod, mean, rstd, cu, n_seg, n, dim))
PROF_VOID(adarms_forward, NOV, COST(0, norm_bytes(fuse) * (double)n * (double)dim),
          (float *out, float *rstd, const float *in, const float *mod, const int32_t *cu, int32_t n_seg, int64_t n,
           int64_t dim, float eps, const vla_norm_fuse *fuse),
          (out, rstd, in, mod, cu, n_seg, n, dim, eps, fuse))
PROF_VOID(adarms_backward, NOV, COST(0, 12.0 * (double)n * (double)dim),
          (float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod, const float *rstd,
           const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim),
          (d_in, d_mod, d_out, in, mod, rstd, cu, n_seg, n, dim))
PROF_VOID(gated_residual_forward, NOV, COST(0, 12.0 * (double)n * (double)dim),
          (float *out, const float *x, const float *y, const float *mod, const int32_t *cu, int32_t n_seg, int64_t n,
           int64_t dim),
          (out, x, y, mod, cu, n_seg, n, dim))
PROF_VOID(gated_residual_backward, NOV, COST(0, 16.0 * (double)n * (double)dim),
          (float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y, const float *mod,
           const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim),
          (d_x, d_y, d_mod, d_out, y, mod, cu, n_seg, n, dim))

/* ---- positions and time --------------------------------------------------------------------- */
PROF_VOID(rope_forward, NOV, COST(0, 8.0 * (double)n * (double)heads * (double)head_dim),
          (float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim, double theta),
          (out, in, pos, n, heads, head_dim, theta))
PROF_VOID(rope_backward, NOV, COST(0, 8.0 * (double)n * (double)heads * (double)head_dim), /* d_out; d_in */
          (float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
           double theta),
          (d_in, d_out, pos, n, heads, head_dim, theta))
PROF_VOID(time_embedding_forward, NOV, COST(0, 4.0 * (double)n * (double)cfg->dim),
          (const vla_temb_config *cfg, float *out, const float *t, int64_t n),
          (cfg, out, t, n))
PROF_VOID(time_embedding_backward, NOV, COST(0, 4.0 * (double)n * (double)cfg->dim),
          (const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t, int64_t n),
          (cfg, d_t, d_out, t, n))

/* ---- attention ------------------------------------------------------------------------------ */
PROF_RET(vla_status, attention_forward, (int)cfg->precision, COST(attn_flops(cfg, vla_attn_pairs(qs, ks), 2), 0),
         (const vla_attn_config *cfg, float *out, float *lse, const float *q, const float *k, const float *v,
          const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready),
         (cfg, out, lse, q, k, v, qs, ks, stats, out_ready))
PROF_RET(vla_status, attention_backward, (int)cfg->precision, COST(attn_flops(cfg, vla_attn_pairs(qs, ks), 5), 0),
         (const vla_attn_config *cfg, float *dq, float *dk, float *dv, const float *d_out, const float *q,
          const float *k, const float *v, const float *out, const float *lse, const vla_attn_seqs *qs,
          const vla_attn_seqs *ks, vla_attn_stats *stats),
         (cfg, dq, dk, dv, d_out, q, k, v, out, lse, qs, ks, stats))
PROF_RET(vla_status, attention_forward_cached, (int)cfg->precision,
         COST(attn_flops(cfg, vla_attn_pairs(qs, cs) + vla_attn_pairs(qs, ns), 2), 0),
         (const vla_attn_config *cfg, float *out, float *lse, const float *q, const vla_attn_seqs *qs,
          const float *k_cache, const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
          const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats),
         (cfg, out, lse, q, qs, k_cache, v_cache, cs, k_new, v_new, ns, stats))

/* ---- flow matching, optimizer, conversion --------------------------------------------------- */
PROF_VOID(flow_interpolate, NOV, COST(0, 16.0 * (double)S * (double)per),
          (vla_flow_convention conv, float *x_t, float *target, const float *actions, const float *noise,
           const float *t, int64_t S, int64_t per),
          (conv, x_t, target, actions, noise, t, S, per))
PROF_RET(double, masked_mse, NOV, COST(0, (d_pred ? 12.0 : 8.0) * (double)S * (double)H * (double)D),
         (const float *pred, const float *target, int64_t S, int64_t H, int64_t D, const uint8_t *is_pad,
          const int32_t *real_dims, vla_mse_reduction red, double divisor, float *d_pred),
         (pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred))
PROF_VOID(masked_mse_acc, NOV, COST(0, (d_pred ? 12.0 : 8.0) * (double)S * (double)H * (double)D),
          (const float *pred, const float *target, int64_t S, int64_t H, int64_t D, const uint8_t *is_pad,
           const int32_t *real_dims, vla_mse_reduction red, double divisor, float *d_pred, double *loss_sum),
          (pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred, loss_sum))
PROF_VOID(adamw, NOV, COST(0, 28.0 * n),
          (float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool decay),
          (w, g, m, v, n, s, decay))
PROF_VOID(ema, NOV, COST(0, 12.0 * n), (float *e, const float *w, float d, float omd, int64_t n, const float *guard),
          (e, w, d, omd, n, guard))
PROF_VOID(adamw_multi, NOV, COST(0, 28.0 * total_n(count, n)),
          (int count, float *const *w, const float *const *g, float *const *m, float *const *v, const int64_t *n,
           const bool *decay, const vla_adamw_scalars *s),
          (count, w, g, m, v, n, decay, s))
PROF_VOID(ema_multi, NOV, COST(0, 12.0 * total_n(count, n)),
          (int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
           const float *guard),
          (count, e, w, n, d, omd, guard))
PROF_VOID(clip_coef, NOV, COST(0, 0), (float *guard, const double *sumsq, const double *also, double max_norm),
          (guard, sumsq, also, max_norm))
PROF_VOID(convert, NOV, COST(0, (double)n * (double)(vla_dtype_size(dt) + vla_dtype_size(st))),
          (void *dst, vla_dtype dt, const void *src, vla_dtype st, int64_t n), (dst, dt, src, st, n))

/* A captured region: forwarded when not profiling; while profiling, the
 * body runs op by op so that its ops are timed (profile.h). */
static vla_status pr_run_captured(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx) {
    if (!ON()) return P.in->run_captured(key, key_bytes, body, ctx);
    if (!atomic_load(&P.whole_regions)) return body(ctx);
    /* timed whole: the backend's own way (cuda: a graph replay, once recorded), one row per call */
    prof_mark a = mark_now();
    in_whole_region = true;
    vla_status st = P.in->run_captured(key, key_bytes, body, ctx);
    in_whole_region = false;
    record("run_captured", NOV, COST(0, 0), a, mark_now());
    return st;
}

/* ---- the table ------------------------------------------------------------------------------ */

vla_status vla_profile_wrap(const vla_ops *inner, const vla_ops **out) {
    if (!inner) return vla_error(VLA_ERR_INVALID_ARG, "profile: no table to wrap");
    if (P.in == inner) {
        *out = &P.table;
        return VLA_OK;
    }
    if (P.in)
        return vla_error(VLA_ERR_INVALID_ARG, "profile: backend %s is already profiled; one backend at a time",
                         P.in->name);
    P.in = inner;
    P.table = *inner; /* name, device, memory rule, tolerance; the slots it lacks stay NULL */
#define WRAP(slot) \
    if (inner->slot) P.table.slot = pr_##slot
    WRAP(run_captured);
    WRAP(alloc);
    WRAP(free);
    WRAP(to_device);
    WRAP(to_host);
    WRAP(copy_bytes);
    WRAP(sgemm);
    WRAP(sgemm_strided_batched);
    WRAP(sgemm_q);
    WRAP(prepare_operand);
    WRAP(prepare_operand_pair);
    WRAP(sgemm_epi);
    WRAP(fp8_scale_update);
    WRAP(fill);
    WRAP(copy);
    WRAP(add);
    WRAP(sub);
    WRAP(mul);
    WRAP(axpy);
    WRAP(scale);
    WRAP(affine);
    WRAP(scale_to);
    WRAP(add_row_vector);
    WRAP(copy_rows);
    WRAP(add_rows);
    WRAP(copy2d);
    WRAP(im2col);
    WRAP(col2im_add);
    WRAP(segment_linear_forward);
    WRAP(segment_linear_backward);
    WRAP(sum);
    WRAP(dot);
    WRAP(sum_squares);
    WRAP(sum_squares_multi);
    WRAP(sum_squares_total);
    WRAP(max_abs);
    WRAP(count_nonfinite);
    WRAP(find_nonfinite);
    WRAP(sum_rows);
    WRAP(softmax_rows);
    WRAP(softmax_rows_backward);
    WRAP(attention_mask);
    WRAP(act_forward);
    WRAP(act_backward);
    WRAP(glu_forward);
    WRAP(glu_backward);
    WRAP(layernorm_forward);
    WRAP(layernorm_backward);
    WRAP(rmsnorm_forward);
    WRAP(rmsnorm_backward);
    WRAP(adaln_forward);
    WRAP(adaln_backward);
    WRAP(adarms_forward);
    WRAP(adarms_backward);
    WRAP(gated_residual_forward);
    WRAP(gated_residual_backward);
    WRAP(rope_forward);
    WRAP(rope_backward);
    WRAP(time_embedding_forward);
    WRAP(time_embedding_backward);
    WRAP(attention_forward);
    WRAP(attention_backward);
    WRAP(attention_forward_cached);
    WRAP(flow_interpolate);
    WRAP(masked_mse);
    WRAP(masked_mse_acc);
    WRAP(adamw);
    WRAP(ema);
    WRAP(adamw_multi);
    WRAP(ema_multi);
    WRAP(clip_coef);
    WRAP(convert);
#undef WRAP
    /* not timed: queries and waits (sync, host_waits, launches, stat,
     * ready_bytes) and the marks themselves are the wrapped table's own */
    *out = &P.table;
    return VLA_OK;
}

static void drop_records(void) {
    pthread_mutex_lock(&P.lock);
    P.n = 0, P.dropped = 0, P.unmarked = 0;
    pthread_mutex_unlock(&P.lock);
    if (P.in && P.in->marks_reset) P.in->marks_reset();
}

void vla_profile_unwrap(void) {
    atomic_store(&P.on, 0);
    drop_records();
    pthread_mutex_lock(&P.lock);
    free(P.rec);
    P.rec = NULL, P.cap = 0;
    pthread_mutex_unlock(&P.lock);
    P.in = NULL;
}

static void start(bool whole_regions) {
    atomic_store(&P.on, 0);
    if (!P.in) return;
    vla_ops_sync(P.in); /* marks placed from here on time this run's ops alone */
    drop_records();
    atomic_store(&P.whole_regions, whole_regions);
    atomic_store(&P.on, 1);
}

void vla_profile_start(void) { start(false); }
void vla_profile_start_whole_regions(void) { start(true); }

static const char *variant_name(int v) {
    switch (v) {
    case VLA_PREC_FP32: return ".fp32";
    case VLA_PREC_BF16: return ".bf16";
    case VLA_PREC_FP8: return ".fp8";
    default: return "";
    }
}

static int row_cmp(const void *a, const void *b) {
    double x = ((const vla_profile_row *)a)->ms, y = ((const vla_profile_row *)b)->ms;
    return x < y ? 1 : x > y ? -1 : strcmp(((const vla_profile_row *)a)->op, ((const vla_profile_row *)b)->op);
}

vla_status vla_profile_stop(vla_profile *out) {
    memset(out, 0, sizeof *out);
    atomic_store(&P.on, 0);
    if (!P.in) return vla_error(VLA_ERR_INVALID_ARG, "profile: no profiled backend");
    vla_ops_sync(P.in);
    pthread_mutex_lock(&P.lock);
    out->device_clock = P.in->mark != NULL;
    out->calls = P.n + P.dropped + P.unmarked;
    out->dropped = P.dropped, out->unmarked = P.unmarked;
    /* at most one row per (slot, variant): about 75 slots, 3 variants for a few */
    int cap = 256;
    out->rows = calloc((size_t)cap, sizeof *out->rows);
    if (!out->rows) {
        pthread_mutex_unlock(&P.lock);
        return vla_error(VLA_ERR_NOMEM, "profile: out of memory for the table");
    }
    for (int64_t i = 0; i < P.n; i++) {
        const prof_rec *r = &P.rec[i];
        double ms = out->device_clock ? P.in->mark_ms(r->ha, r->hb) : (r->tb - r->ta) * 1e3;
        if (ms < 0) ms = 0;
        char op[48];
        snprintf(op, sizeof op, "%s%s", r->name, variant_name(r->variant));
        int j = 0;
        while (j < out->n_rows && strcmp(out->rows[j].op, op)) j++;
        if (j == out->n_rows) {
            if (j == cap) continue; /* cannot happen: fewer (slot, variant) pairs exist */
            snprintf(out->rows[j].op, sizeof out->rows[j].op, "%s", op);
            out->n_rows++;
        }
        out->rows[j].calls++, out->rows[j].ms += ms, out->rows[j].flops += r->flops, out->rows[j].bytes += r->bytes;
        out->rows[j].launches += r->launches;
        out->launches += r->launches;
        const char *ph = r->phase ? r->phase : "(none)";
        int q = 0;
        while (q < out->n_phases && strcmp(out->phases[q].name, ph)) q++;
        if (q == out->n_phases) {
            if (q == VLA_PROFILE_MAX_PHASES) q--; /* more phases than room: the last row sums the rest */
            else out->phases[out->n_phases++].name = ph;
        }
        out->phases[q].calls++, out->phases[q].launches += r->launches, out->phases[q].ms += ms;
        out->op_ms += ms;
    }
    if (P.n > 0) {
        const prof_rec *a = &P.rec[0], *b = &P.rec[P.n - 1];
        out->span_ms = out->device_clock ? P.in->mark_ms(a->ha, b->hb) : (b->tb - a->ta) * 1e3;
    }
    pthread_mutex_unlock(&P.lock);
    drop_records();
    qsort(out->rows, (size_t)out->n_rows, sizeof *out->rows, row_cmp);
    return VLA_OK;
}

void vla_profile_free(vla_profile *p) {
    free(p->rows);
    memset(p, 0, sizeof *p);
}

/* "between ops": the span less the ops' time (never negative: ops from two
 * threads may overlap on the host's clock) */
static double between_ms(const vla_profile *p) { return p->span_ms > p->op_ms ? p->span_ms - p->op_ms : 0; }

void vla_profile_print_table(FILE *f, const vla_profile *p, double per, const char *per_what, int top) {
    if (per <= 0) per = 1;
    fprintf(f, "where the time goes, per %s (%s clock; %lld op calls over %.3g %s%s):\n", per_what,
            p->device_clock ? "the device's" : "the host's", (long long)p->calls, per, per_what, per == 1 ? "" : "s");
    fprintf(f, "  %-34s %9s %9s %11s %7s %10s %9s %9s\n", "op", "calls", "launches", "ms", "share", "us/call",
            "TFLOP/s", "GB/s");
    double rest_ms = 0, rest_calls = 0, rest_launches = 0;
    for (int i = 0; i < p->n_rows; i++) {
        const vla_profile_row *r = &p->rows[i];
        if (i >= top) {
            rest_ms += r->ms, rest_calls += (double)r->calls, rest_launches += (double)r->launches;
            continue;
        }
        fprintf(f, "  %-34s %9.1f %9.1f %11.4f %6.1f%% %10.2f", r->op, (double)r->calls / per,
                (double)r->launches / per, r->ms / per,
                p->op_ms > 0 ? 100.0 * r->ms / p->op_ms : 0.0, r->calls ? 1e3 * r->ms / (double)r->calls : 0.0);
        if (r->flops > 0 && r->ms > 0) fprintf(f, " %9.2f", r->flops / (r->ms * 1e-3) * 1e-12);
        else if (r->bytes > 0) fprintf(f, " %9s", "");
        if (r->bytes > 0 && r->ms > 0) fprintf(f, " %9.1f", r->bytes / (r->ms * 1e-3) * 1e-9);
        fprintf(f, "\n");
    }
    if (rest_calls > 0)
        fprintf(f, "  %-34s %9.1f %9.1f %11.4f %6.1f%%\n", "(the other ops)", rest_calls / per, rest_launches / per,
                rest_ms / per,
                p->op_ms > 0 ? 100.0 * rest_ms / p->op_ms : 0.0);
    fprintf(f, "  ops %.4f ms, between ops %.4f ms (%s), span %.4f ms; %.1f launches\n", p->op_ms / per,
            between_ms(p) / per, p->device_clock ? "the device idle, waiting for the host" : "the host's own work",
            p->span_ms / per, (double)p->launches / per);
    if (p->n_phases > 1 || (p->n_phases == 1 && strcmp(p->phases[0].name, "(none)"))) {
        fprintf(f, "  phases:");
        for (int i = 0; i < p->n_phases; i++)
            fprintf(f, "%s %s %.4f ms (%.1f calls)", i ? "," : "", p->phases[i].name, p->phases[i].ms / per,
                    (double)p->phases[i].calls / per);
        fprintf(f, "\n");
    }
    if (p->unmarked || p->dropped)
        fprintf(f, "  not timed: %lld calls without a mark, %lld past the record cap\n", (long long)p->unmarked,
                (long long)p->dropped);
}

void vla_profile_print_json_members(FILE *f, const vla_profile *p, double per, int top) {
    if (per <= 0) per = 1;
    fprintf(f, "\"clock\":\"%s\",\"calls_per\":%.2f,\"launches_per\":%.2f,\"op_ms_per\":%.5f,"
               "\"between_ops_ms_per\":%.5f,\"span_ms_per\":%.5f,\"unmarked\":%lld,\"dropped\":%lld,\"ops\":[",
            p->device_clock ? "device" : "host", (double)p->calls / per, (double)p->launches / per, p->op_ms / per,
            between_ms(p) / per, p->span_ms / per, (long long)p->unmarked, (long long)p->dropped);
    for (int i = 0; i < p->n_rows && i < top; i++) {
        const vla_profile_row *r = &p->rows[i];
        fprintf(f, "%s{\"op\":\"%s\",\"calls\":%.2f,\"ms\":%.5f,\"share\":%.4f,\"launches\":%.2f", i ? "," : "",
                r->op, (double)r->calls / per, r->ms / per, p->op_ms > 0 ? r->ms / p->op_ms : 0.0,
                (double)r->launches / per);
        if (r->flops > 0 && r->ms > 0) fprintf(f, ",\"tflops\":%.3f", r->flops / (r->ms * 1e-3) * 1e-12);
        if (r->bytes > 0 && r->ms > 0) fprintf(f, ",\"gbps\":%.2f", r->bytes / (r->ms * 1e-3) * 1e-9);
        fprintf(f, "}");
    }
    fprintf(f, "],\"phases\":[");
    for (int i = 0; i < p->n_phases; i++)
        fprintf(f, "%s{\"phase\":\"%s\",\"calls\":%.2f,\"ms\":%.5f,\"launches\":%.2f}", i ? "," : "",
                p->phases[i].name, (double)p->phases[i].calls / per, p->phases[i].ms / per,
                (double)p->phases[i].launches / per);
    fprintf(f, "]");
}
