/* ops_cpu_attention.c — the CPU backend's tiled (flash-attention style)
 * multi-head attention over packed batches with GQA and group masks (the
 * contract is nn/attention.h's); forward with online softmax,
 * FA2 backward that recomputes scores from Q, K and the saved LSE. The
 * tiles, the pairs the mask skips and MQA folding are the shared plan's
 * (tensor/attn_plan.h), which the cuda kernels walk too.
 *
 * MQA folding, what it gained here: a q-tile of bq tokens becomes one tile
 * of bq·H rows, so one QKᵀ, PV, dS·K, dSᵀQ, PᵀdO product per tile for all
 * heads instead of one per head, K and V packed once instead of H times.
 * pi05-small's LM (4 heads, 1 KV head) runs 64×64×64 tile products as
 * 256×64×64: attention was ~17% of its training step, for ~8% of its
 * multiply-adds, with the per-head products. */
#include "tensor/cpu/ops_cpu_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/attn_plan.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vecmath.h"

/* The backward's form (see the AUTO rule in vla_attention_backward): fused
 * from this many (sample, kv head) items, or when the tile work is at most
 * VLA_ATTN_TWO_PASS_WORK (too small for two-pass to pay); shapes alone decide. */
#define VLA_ATTN_FUSED_MIN_ITEMS 4
#define VLA_ATTN_TWO_PASS_WORK ((int64_t)1 << 27)

typedef struct {
    const float *k, *v;
    const int32_t *group;
} kv_src;

typedef vla_attn_tile tile; /* the shared plan's */

/* The shared plan's tiles (sizes, heads and rows after folding: t.H, t.bq)
 * and the tensors they index. */
typedef struct {
    vla_attn_plan t;
    const vla_ops *ops;
    const float *q;
    const int32_t *group_q; /* per plan row (vla_attn_plan_group_q) */
    kv_src src[VLA_ATTN_MAX_SRC];
} plan;

/* The plan over n_src key sources (their K and V in k[i], v[i]), and its
 * statistics. */
static vla_status plan_make(plan *p, const vla_attn_config *cfg, const float *q, const vla_attn_seqs *qs, int n_src,
                            const vla_attn_seqs *const *ks, const float *const *k, const float *const *v,
                            vla_attn_stats *stats) {
    memset(p, 0, sizeof(*p));
    VLA_TRY(vla_attn_plan_make(&p->t, cfg, 0, 0, VLA_ATTN_FOLD_TOKENS, qs, n_src, ks));
    p->ops = vla_cpu_backend_table();
    p->q = q;
    p->group_q = vla_attn_plan_group_q(&p->t, qs);
    for (int i = 0; i < n_src; i++) p->src[i] = (kv_src){k[i], v[i], ks[i]->group};
    vla_attn_plan_stats(&p->t, stats);
    return VLA_OK;
}

static void plan_free(plan *p) { vla_attn_plan_free(&p->t); }

/* Scores S = scale·Q_tile·K_tileᵀ (row stride bk), masked entries −inf. */
static void tile_scores(const plan *p, const tile *qt, const tile *kt, int cls, int32_t h, float *S) {
    const kv_src *sr = &p->src[kt->src];
    int32_t kvh = h / p->t.rep;
    const float *Q = p->q + ((int64_t)qt->start * p->t.H + h) * p->t.d;
    const float *K = sr->k + ((int64_t)kt->start * p->t.Hkv + kvh) * p->t.d;
    p->ops->sgemm(false, true, qt->len, kt->len, p->t.d, p->t.scale, Q, (int64_t)p->t.H * p->t.d, K,
                  (int64_t)p->t.Hkv * p->t.d, 0.0f, S, p->t.bk);
    if (cls != VLA_TILE_PARTIAL) return;
    const int32_t *kg = sr->group ? sr->group + kt->start : NULL; /* NULL: every key is in group 0 */
    for (int32_t r = 0; r < qt->len; r++) {
        int32_t gi = p->group_q ? p->group_q[qt->start + r] : 0;
        float *srow = S + (int64_t)r * p->t.bk;
        if (!kg) {
            if (0 > gi)
                for (int32_t c = 0; c < kt->len; c++) srow[c] = -INFINITY;
            continue;
        }
#pragma omp simd
        for (int32_t c = 0; c < kt->len; c++) srow[c] = kg[c] > gi ? -INFINITY : srow[c];
    }
}

/* P = exp(S − lse) from the saved log-sum-exp (rows that saw no key: 0). */
static void tile_probs(const plan *p, const tile *qt, const tile *kt, int cls, int32_t h, const float *lse,
                       float *P) {
    tile_scores(p, qt, kt, cls, h, P);
    for (int32_t r = 0; r < qt->len; r++) {
        float L = lse[(int64_t)(qt->start + r) * p->t.H + h];
        float *row = P + (int64_t)r * p->t.bk;
        if (L == -INFINITY) {
            for (int32_t c = 0; c < kt->len; c++) row[c] = 0.0f;
            continue;
        }
#pragma omp simd
        for (int32_t c = 0; c < kt->len; c++) row[c] = vla_expf(row[c] - L);
    }
}

/* Row kernels of the online softmax, written as LANES independent partial
 * results so that GCC vectorises them without reassociating anything: the
 * combination order is fixed, so results depend only on the row length. */
#define LANES 16

static inline float row_max(const float *x, int32_t n) {
    float part[LANES];
    for (int j = 0; j < LANES; j++) part[j] = -INFINITY;
    int32_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int j = 0; j < LANES; j++) part[j] = x[c + j] > part[j] ? x[c + j] : part[j];
    float mx = -INFINITY;
    for (int j = 0; j < LANES; j++) mx = part[j] > mx ? part[j] : mx;
    for (; c < n; c++) mx = x[c] > mx ? x[c] : mx;
    return mx;
}

/* x = exp(x − m) in place; returns the sum */
static inline float row_exp_sum(float *x, int32_t n, float m) {
    float part[LANES] = {0};
    int32_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int j = 0; j < LANES; j++) {
            float e = vla_expf(x[c + j] - m);
            x[c + j] = e;
            part[j] += e;
        }
    float sum = 0.0f;
    for (; c < n; c++) {
        x[c] = vla_expf(x[c] - m);
        sum += x[c];
    }
    for (int j = 0; j < LANES; j++) sum += part[j];
    return sum;
}

/* Small problems run on the calling thread: a fork/join costs more than they
 * do (tensor/cpu/parallel.h). */
static int64_t tile_work(const plan *p) { return p->t.n_qt * p->t.H * (int64_t)p->t.bq * p->t.bk * p->t.d; }
static int parallel_worth_it(const plan *p) { return tile_work(p) > VLA_PAR_MIN_ATTN; }

static vla_status scratch_alloc(const plan *p, int64_t *per_thread, float **buf) {
    int64_t bmax = p->t.bq > p->t.bk ? p->t.bq : p->t.bk;
    *per_thread = 2 * (int64_t)p->t.bq * p->t.bk + 2 * bmax * p->t.d + 2 * (int64_t)p->t.bq;
    int nt = omp_get_max_threads();
    *buf = malloc((size_t)(*per_thread * nt) * sizeof(float));
    if (!*buf) return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate scratch for %d threads", nt);
    return VLA_OK;
}

static vla_status attention_forward_plan(const plan *p, float *out, float *lse) {
    int64_t per;
    float *scratch;
    VLA_TRY(scratch_alloc(p, &per, &scratch));
    int64_t n_items = p->t.n_qt * p->t.H;
    const int32_t d = p->t.d, bk = p->t.bk;
#pragma omp parallel if (parallel_worth_it(p))
    {
        float *S = scratch + per * omp_get_thread_num();
        float *acc = S + (int64_t)p->t.bq * p->t.bk, *m = acc + (int64_t)p->t.bq * d, *l = m + p->t.bq;
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < n_items; it++) {
            const tile *qt = &p->t.qt[it / p->t.H];
            int32_t h = (int32_t)(it % p->t.H), kvh = h / p->t.rep;
            for (int32_t r = 0; r < qt->len; r++) {
                m[r] = -INFINITY;
                l[r] = 0.0f;
            }
            memset(acc, 0, (size_t)qt->len * d * sizeof(float));
            for (int64_t j = p->t.k_first[qt->seg]; j < p->t.k_first[qt->seg + 1]; j++) {
                const tile *kt = &p->t.kt[j];
                int cls = vla_attn_tile_class(qt, kt);
                if (cls == VLA_TILE_SKIP) continue;
                tile_scores(p, qt, kt, cls, h, S);
                for (int32_t r = 0; r < qt->len; r++) {
                    float *srow = S + (int64_t)r * bk;
                    float mx = row_max(srow, kt->len);
                    if (mx == -INFINITY) { /* this row sees no key in this tile */
                        for (int32_t c = 0; c < kt->len; c++) srow[c] = 0.0f;
                        continue;
                    }
                    float mnew = m[r] > mx ? m[r] : mx;
                    float corr = vla_expf(m[r] - mnew);
                    float sum = row_exp_sum(srow, kt->len, mnew);
                    l[r] = l[r] * corr + sum;
                    if (corr != 1.0f) {
                        float *arow = acc + (int64_t)r * d;
#pragma omp simd
                        for (int32_t c = 0; c < d; c++) arow[c] *= corr;
                    }
                    m[r] = mnew;
                }
                const float *V = p->src[kt->src].v + ((int64_t)kt->start * p->t.Hkv + kvh) * d;
                p->ops->sgemm(false, false, qt->len, d, kt->len, 1.0f, S, bk, V, (int64_t)p->t.Hkv * d, 1.0f, acc, d);
            }
            for (int32_t r = 0; r < qt->len; r++) {
                int64_t row = (int64_t)(qt->start + r) * p->t.H + h;
                float *o = out + row * d;
                if (l[r] == 0.0f) {
                    memset(o, 0, (size_t)d * sizeof(float));
                    if (lse) lse[row] = -INFINITY;
                    continue;
                }
                float inv = 1.0f / l[r];
                const float *arow = acc + (int64_t)r * d;
#pragma omp simd
                for (int32_t c = 0; c < d; c++) o[c] = arow[c] * inv;
                if (lse) lse[row] = m[r] + logf(l[r]);
            }
        }
    }
    free(scratch);
    return VLA_OK;
}

vla_status vla_cpu_attention_forward(const vla_attn_config *cfg, float *out, float *lse,
                                 const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                 const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready) {
    plan p;
    const vla_attn_seqs *srcs[1] = {ks};
    const float *kk[1] = {k}, *vv[1] = {v};
    VLA_TRY(plan_make(&p, cfg, q, qs, 1, srcs, kk, vv, stats));
    vla_status st = attention_forward_plan(&p, out, lse);
    plan_free(&p);
    if (st == VLA_OK && out_ready) /* the o-projection's copy (ops.h) */
        vla_cpu_bf16_ready(out_ready, out, (int64_t)qs->cu_seqlens[qs->n_seg] * cfg->n_heads * cfg->head_dim);
    return st;
}

vla_status vla_cpu_attention_forward_cached(const vla_attn_config *cfg, float *out, float *lse,
                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                        const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
                                        const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats) {
    plan p;
    const vla_attn_seqs *srcs[2] = {cs, ns};
    const float *kk[2] = {k_cache, k_new}, *vv[2] = {v_cache, v_new};
    VLA_TRY(plan_make(&p, cfg, q, qs, 2, srcs, kk, vv, stats));
    vla_status st = attention_forward_plan(&p, out, lse);
    plan_free(&p);
    return st;
}

/* dS = P ⊙ (dP − D_row), in place in dP. */
static void tile_dscores(const plan *p, const tile *qt, const tile *kt, int32_t h, const float *P, float *dP,
                         const float *D) {
    for (int32_t r = 0; r < qt->len; r++) {
        float Dr = D[(int64_t)(qt->start + r) * p->t.H + h];
        const float *prow = P + (int64_t)r * p->t.bk;
        float *drow = dP + (int64_t)r * p->t.bk;
#pragma omp simd
        for (int32_t c = 0; c < kt->len; c++) drow[c] = prow[c] * (drow[c] - Dr);
    }
}

/* dK, dV rows of one (k-tile, kv head) += the work item's accumulators. */
static void add_rows(float *dk, float *dv, const float *acc_k, const float *acc_v, const tile *kt, int32_t kvh,
                     int64_t ldk, int32_t d) {
    for (int32_t r = 0; r < kt->len; r++) {
        float *dkr = dk + (int64_t)(kt->start + r) * ldk + (int64_t)kvh * d;
        float *dvr = dv + (int64_t)(kt->start + r) * ldk + (int64_t)kvh * d;
        for (int32_t c = 0; c < d; c++) {
            dkr[c] += acc_k[(int64_t)r * d + c];
            dvr[c] += acc_v[(int64_t)r * d + c];
        }
    }
}

/* What every backward work item reads and writes. */
typedef struct {
    const plan *p;
    const vla_ops *ops;
    float *dq, *dk, *dv;
    const float *d_out, *q, *k, *v, *lse, *D;
    int64_t ldq, ldk;
} bwd_ctx;

/* One thread's tile buffers inside the backward scratch. */
typedef struct {
    float *P, *dP, *acc1, *acc2;
} bwd_bufs;

/* The probabilities and score gradients of one (q-tile, k-tile, head):
 * acc_dv += Pᵀ·dO, dP = dO·Vᵀ → dS; returns with dP holding dS. */
static void bwd_tile(const bwd_ctx *c, const tile *qt, const tile *kt, int cls, int32_t h, const float *V,
                     float *acc_dv, const bwd_bufs *b) {
    const plan *p = c->p;
    const float *dO = c->d_out + (int64_t)qt->start * c->ldq + (int64_t)h * p->t.d;
    tile_probs(p, qt, kt, cls, h, c->lse, b->P);
    if (acc_dv)
        c->ops->sgemm(true, false, kt->len, p->t.d, qt->len, 1.0f, b->P, p->t.bk, dO, c->ldq, 1.0f, acc_dv, p->t.d);
    c->ops->sgemm(false, true, qt->len, kt->len, p->t.d, 1.0f, dO, c->ldq, V, c->ldk, 0.0f, b->dP, p->t.bk);
    tile_dscores(p, qt, kt, h, b->P, b->dP, c->D);
}

/* FUSED: one work item per (sample, kv head) owns dK/dV of the kv head and
 * dQ of the group's query heads over the sample. */
static void bwd_fused_item(const bwd_ctx *c, int64_t it, const bwd_bufs *b) {
    const plan *p = c->p;
    int32_t d = p->t.d, seg = (int32_t)(it / p->t.Hkv), kvh = (int32_t)(it % p->t.Hkv);
    for (int64_t j = p->t.k_first[seg]; j < p->t.k_first[seg + 1]; j++) {
        const tile *kt = &p->t.kt[j];
        memset(b->acc1, 0, (size_t)kt->len * d * sizeof(float));
        memset(b->acc2, 0, (size_t)kt->len * d * sizeof(float));
        const float *K = c->k + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        for (int32_t hh = 0; hh < p->t.rep; hh++) {
            int32_t h = kvh * p->t.rep + hh;
            for (int64_t i = p->t.q_first[seg]; i < p->t.q_first[seg + 1]; i++) {
                const tile *qt = &p->t.qt[i];
                int cls = vla_attn_tile_class(qt, kt);
                if (cls == VLA_TILE_SKIP) continue;
                const float *Q = c->q + (int64_t)qt->start * c->ldq + (int64_t)h * d;
                bwd_tile(c, qt, kt, cls, h, V, b->acc2, b);
                c->ops->sgemm(true, false, kt->len, d, qt->len, p->t.scale, b->dP, p->t.bk, Q, c->ldq, 1.0f, b->acc1,
                              d);
                c->ops->sgemm(false, false, qt->len, d, kt->len, p->t.scale, b->dP, p->t.bk, K, c->ldk, 1.0f,
                              c->dq + (int64_t)qt->start * c->ldq + (int64_t)h * d, c->ldq);
            }
        }
        add_rows(c->dk, c->dv, b->acc1, b->acc2, kt, kvh, c->ldk, d);
    }
}

/* TWO_PASS, pass 1: dK, dV — one work item owns the rows of one (kv head,
 * k-tile) and sums over the query heads of its group and the q-tiles in order. */
static void bwd_dkdv_item(const bwd_ctx *c, int64_t it, const bwd_bufs *b) {
    const plan *p = c->p;
    int32_t d = p->t.d;
    const tile *kt = &p->t.kt[it / p->t.Hkv];
    int32_t kvh = (int32_t)(it % p->t.Hkv);
    memset(b->acc1, 0, (size_t)kt->len * d * sizeof(float));
    memset(b->acc2, 0, (size_t)kt->len * d * sizeof(float));
    const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
    for (int32_t hh = 0; hh < p->t.rep; hh++) {
        int32_t h = kvh * p->t.rep + hh;
        for (int64_t i = p->t.q_first[kt->seg]; i < p->t.q_first[kt->seg + 1]; i++) {
            const tile *qt = &p->t.qt[i];
            int cls = vla_attn_tile_class(qt, kt);
            if (cls == VLA_TILE_SKIP) continue;
            const float *Q = c->q + (int64_t)qt->start * c->ldq + (int64_t)h * d;
            bwd_tile(c, qt, kt, cls, h, V, b->acc2, b);
            c->ops->sgemm(true, false, kt->len, d, qt->len, p->t.scale, b->dP, p->t.bk, Q, c->ldq, 1.0f, b->acc1, d);
        }
    }
    add_rows(c->dk, c->dv, b->acc1, b->acc2, kt, kvh, c->ldk, d);
}

/* TWO_PASS, pass 2: dQ — one work item owns the rows of one (head, q-tile). */
static void bwd_dq_item(const bwd_ctx *c, int64_t it, const bwd_bufs *b) {
    const plan *p = c->p;
    int32_t d = p->t.d;
    const tile *qt = &p->t.qt[it / p->t.H];
    int32_t h = (int32_t)(it % p->t.H), kvh = h / p->t.rep;
    memset(b->acc1, 0, (size_t)qt->len * d * sizeof(float));
    for (int64_t j = p->t.k_first[qt->seg]; j < p->t.k_first[qt->seg + 1]; j++) {
        const tile *kt = &p->t.kt[j];
        int cls = vla_attn_tile_class(qt, kt);
        if (cls == VLA_TILE_SKIP) continue;
        const float *K = c->k + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        bwd_tile(c, qt, kt, cls, h, V, NULL, b);
        c->ops->sgemm(false, false, qt->len, d, kt->len, p->t.scale, b->dP, p->t.bk, K, c->ldk, 1.0f, b->acc1, d);
    }
    for (int32_t r = 0; r < qt->len; r++) {
        float *dqr = c->dq + (int64_t)(qt->start + r) * c->ldq + (int64_t)h * d;
        for (int32_t col = 0; col < d; col++) dqr[col] += b->acc1[(int64_t)r * d + col];
    }
}

vla_status vla_cpu_attention_backward(const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                  const float *d_out, const float *q, const float *k, const float *v,
                                  const float *out, const float *lse, const vla_attn_seqs *qs,
                                  const vla_attn_seqs *ks, vla_attn_stats *stats) {
    plan p;
    const vla_attn_seqs *srcs[1] = {ks};
    const float *kk[1] = {k}, *vv[1] = {v};
    VLA_TRY(plan_make(&p, cfg, q, qs, 1, srcs, kk, vv, stats));
    const int32_t H = p.t.H, Hkv = p.t.Hkv, d = p.t.d, bq = p.t.bq, bk = p.t.bk;
    int64_t nq = (int64_t)qs->cu_seqlens[qs->n_seg] * p.t.fold; /* query rows of the plan's H heads */
    int64_t per;
    float *scratch = NULL;
    float *D = malloc((size_t)(nq * H > 0 ? nq * H : 1) * sizeof(float));
    vla_status st = D ? scratch_alloc(&p, &per, &scratch)
                      : vla_error(VLA_ERR_NOMEM, "attention backward: cannot allocate %lld floats", (long long)(nq * H));
    if (st != VLA_OK) {
        free(D);
        plan_free(&p);
        return st;
    }
    /* D = rowsum(dO ⊙ O) per (token, head) */
#pragma omp parallel for if (nq * H * d > VLA_PAR_MIN_ELEMS)
    for (int64_t row = 0; row < nq * H; row++) {
        double s = 0.0;
        for (int32_t c = 0; c < d; c++) s += (double)d_out[row * d + c] * (double)out[row * d + c];
        D[row] = (float)s;
    }
    const bwd_ctx ctx = {&p, vla_cpu_backend_table(), dq, dk, dv, d_out, q, k, v, lse, D, (int64_t)H * d, (int64_t)Hkv * d};
    /* AUTO: fused (5 GEMMs and one exp per tile) unless a problem big enough
     * for a team has fewer than 4 (sample, kv head) items; decided from
     * shapes alone, never from the thread count, so results stay bitwise
     * thread-independent. Two-pass costs ~25% more work (π0.5's shape, `vla
     * bench attention --bwd`), so it is kept for what fused cannot split at
     * all; 4 items already feed 2–4 cores, and training batches give 32+. */
    int fused = cfg->bwd_mode == VLA_ATTN_BWD_FUSED ||
                (cfg->bwd_mode == VLA_ATTN_BWD_AUTO &&
                 ((int64_t)p.t.n_seg * Hkv >= VLA_ATTN_FUSED_MIN_ITEMS || tile_work(&p) <= VLA_ATTN_TWO_PASS_WORK));
#pragma omp parallel if (parallel_worth_it(&p))
    {
        bwd_bufs b;
        b.P = scratch + per * omp_get_thread_num();
        b.dP = b.P + (int64_t)bq * bk;
        b.acc1 = b.dP + (int64_t)bq * bk;
        b.acc2 = b.acc1 + (int64_t)(bq > bk ? bq : bk) * d;
        if (fused) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < (int64_t)p.t.n_seg * Hkv; it++) bwd_fused_item(&ctx, it, &b);
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < p.t.n_kt * Hkv; it++) bwd_dkdv_item(&ctx, it, &b);
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < p.t.n_qt * H; it++) bwd_dq_item(&ctx, it, &b);
        }
    }
    free(scratch);
    free(D);
    plan_free(&p);
    return VLA_OK;
}
