/* ops_cpu_attention.c — the CPU backend's tiled (flash-attention style)
 * multi-head attention over packed batches with GQA and group masks (the
 * contract is nn/attention.h's); forward with online softmax,
 * FA2 backward that recomputes scores from Q, K and the saved LSE.
 *
 * MQA FOLDING. With one KV head every query head reads the same K and V,
 * and the layout [tokens, heads, head_dim] puts a token's H query heads in
 * H consecutive rows of width head_dim. So Q, O, dQ, dO and the LSE are
 * read as N·H "pseudo-token" rows of a single head, each pseudo-token
 * carrying its token's sample and group, and a q-tile of bq tokens becomes
 * one tile of bq·H rows: one QKᵀ, PV, dS·K, dSᵀQ, PᵀdO product per tile
 * for all heads instead of one per head, K and V packed once instead of H
 * times. pi05-small's LM (4 heads, 1 KV head) runs 64×64×64 tile products
 * as 256×64×64: attention was ~17% of its training step, for ~8% of its
 * multiply-adds, with the per-head products. Tiles cover the same tokens,
 * so masks, skipped tiles and statistics are those of the per-head form. */
#include "tensor/cpu/ops_cpu_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/seqlens.h"
#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vecmath.h"

#define MAX_SRC 2
/* Default tile edge: 64, or 128 for heads of <= 32 dims, whose 64-wide tile
 * GEMMs are so small (64·64·16) that call overhead dominates: pi05-tiny
 * (head_dim 16) trains ~7% faster with 128; and 128 for heads of >= 128
 * dims, whose tile GEMMs (64·64·256) spend their time packing operands:
 * π0.5's full shape (head_dim 256, `vla bench attention`) runs forward and
 * backward ~13% faster with 128. */
#define DEFAULT_TILE 64
#define DEFAULT_TILE_SMALL_HEAD 128
#define DEFAULT_TILE_LARGE_HEAD 128

/* The backward's form (see the AUTO rule in vla_attention_backward): fused
 * from this many (sample, kv head) items, or when the tile work is at most
 * VLA_ATTN_TWO_PASS_WORK (too small for two-pass to pay); shapes alone decide. */
#define VLA_ATTN_FUSED_MIN_ITEMS 4
#define VLA_ATTN_TWO_PASS_WORK ((int64_t)1 << 27)

enum { TILE_SKIP = 0, TILE_FULL = 1, TILE_PARTIAL = 2 };

typedef struct {
    const float *k, *v;
    const int32_t *cu, *group;
} kv_src;

typedef struct {
    int32_t seg, start, len, src;
    int32_t gmin, gmax; /* range of attention groups inside the tile */
} tile;

typedef struct {
    const vla_ops *ops;
    int32_t H, Hkv, d, rep, bq, bk, n_seg;
    float scale;
    const float *q;
    const int32_t *group_q;
    kv_src src[MAX_SRC];
    int n_src;
    tile *qt, *kt;
    int64_t n_qt, n_kt;
    int64_t *qt_first, *kt_first; /* [n_seg + 1]: tiles of sample s are [first[s], first[s+1]) */
    int32_t fold;                 /* query heads folded into rows (MQA folding above), else 1 */
    int32_t *fold_cu, *fold_group; /* the query side in pseudo-tokens when folded */
} plan;

static void plan_free(plan *p) {
    free(p->qt);
    free(p->kt);
    free(p->qt_first);
    free(p->kt_first);
    free(p->fold_cu);
    free(p->fold_group);
}

/* MQA folding (top of file): the query side as N·H pseudo-tokens of one
 * head. Leaves the plan unfolded when it does not apply. */
static vla_status fold_queries(plan *p, const vla_attn_config *cfg, const vla_attn_seqs *qs) {
    p->fold = 1;
    int64_t nq = qs->cu_seqlens[qs->n_seg], F = p->H;
    if (cfg->no_mqa_fold || p->Hkv != 1 || F < 2 || nq * F > INT32_MAX || (int64_t)p->bq * F > INT32_MAX)
        return VLA_OK;
    p->fold_cu = malloc((size_t)(qs->n_seg + 1) * sizeof(int32_t));
    if (qs->group) p->fold_group = malloc((size_t)(nq * F > 0 ? nq * F : 1) * sizeof(int32_t));
    if (!p->fold_cu || (qs->group && !p->fold_group))
        return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate the folded query layout (%lld rows)",
                         (long long)(nq * F));
    for (int32_t s = 0; s <= qs->n_seg; s++) p->fold_cu[s] = (int32_t)(qs->cu_seqlens[s] * F);
    if (qs->group)
        for (int64_t t = 0; t < nq; t++)
            for (int64_t h = 0; h < F; h++) p->fold_group[t * F + h] = qs->group[t];
    p->fold = (int32_t)F;
    p->H = 1;
    p->rep = 1;
    p->bq *= (int32_t)F;
    p->group_q = p->fold_group;
    return VLA_OK;
}

static void tile_groups(tile *t, const int32_t *group) {
    t->gmin = t->gmax = 0;
    if (!group || t->len == 0) return;
    t->gmin = t->gmax = group[t->start];
    for (int32_t i = 1; i < t->len; i++) {
        int32_t g = group[t->start + i];
        if (g < t->gmin) t->gmin = g;
        if (g > t->gmax) t->gmax = g;
    }
}

/* Tiles of the given sides, sample-major (and source-major inside a sample). */
static vla_status make_tiles(int32_t n_seg, int n_side, const int32_t *const *cu, const int32_t *const *group,
                             int32_t b, tile **out, int64_t *n_out, int64_t **first_out) {
    int64_t n = 0;
    for (int32_t s = 0; s < n_seg; s++)
        for (int i = 0; i < n_side; i++) n += (cu[i][s + 1] - cu[i][s] + b - 1) / b;
    tile *t = malloc((size_t)(n > 0 ? n : 1) * sizeof(tile));
    int64_t *first = malloc((size_t)(n_seg + 1) * sizeof(int64_t));
    if (!t || !first) {
        free(t);
        free(first);
        return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate %lld tiles", (long long)n);
    }
    int64_t k = 0;
    for (int32_t s = 0; s < n_seg; s++) {
        first[s] = k;
        for (int i = 0; i < n_side; i++)
            for (int32_t st = cu[i][s]; st < cu[i][s + 1]; st += b) {
                tile *x = &t[k++];
                x->seg = s;
                x->start = st;
                x->len = cu[i][s + 1] - st < b ? cu[i][s + 1] - st : b;
                x->src = i;
                tile_groups(x, group[i]);
            }
    }
    first[n_seg] = k;
    *out = t;
    *n_out = n;
    *first_out = first;
    return VLA_OK;
}

static vla_status plan_make(plan *p, const vla_ops *ops, const vla_attn_config *cfg, const float *q,
                            const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks) {
    memset(p, 0, sizeof(*p));
    if (cfg->n_heads <= 0 || cfg->n_kv_heads <= 0 || cfg->head_dim <= 0 || cfg->n_heads % cfg->n_kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "attention: %d heads, %d kv heads, head_dim %d: need positive sizes "
                         "and heads a multiple of kv heads", cfg->n_heads, cfg->n_kv_heads, cfg->head_dim);
    if (cfg->tile_q < 0 || cfg->tile_k < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "attention: negative tile size");
    VLA_TRY(vla_seqlens_check(qs->cu_seqlens, qs->n_seg, -1, "attention queries"));
    for (int i = 0; i < n_src; i++) {
        VLA_TRY(vla_seqlens_check(ks[i]->cu_seqlens, ks[i]->n_seg, -1, "attention keys"));
        if (ks[i]->n_seg != qs->n_seg)
            return vla_error(VLA_ERR_INVALID_ARG, "attention: %d query samples but %d key samples", qs->n_seg,
                             ks[i]->n_seg);
    }
    p->ops = ops;
    p->H = cfg->n_heads;
    p->Hkv = cfg->n_kv_heads;
    p->d = cfg->head_dim;
    p->rep = p->H / p->Hkv;
    int32_t dflt = cfg->head_dim <= 32 ? DEFAULT_TILE_SMALL_HEAD
                   : cfg->head_dim >= 128 ? DEFAULT_TILE_LARGE_HEAD
                                          : DEFAULT_TILE;
    p->bq = cfg->tile_q ? cfg->tile_q : dflt;
    p->bk = cfg->tile_k ? cfg->tile_k : dflt;
    p->scale = cfg->scale != 0.0f ? cfg->scale : (float)(1.0 / sqrt((double)cfg->head_dim));
    p->n_seg = qs->n_seg;
    p->q = q;
    p->group_q = qs->group;
    p->n_src = n_src;
    const int32_t *cu_q[1] = {qs->cu_seqlens}, *g_q[1] = {qs->group};
    const int32_t *cu_k[MAX_SRC], *g_k[MAX_SRC];
    for (int i = 0; i < n_src; i++) {
        p->src[i].cu = cu_k[i] = ks[i]->cu_seqlens;
        p->src[i].group = g_k[i] = ks[i]->group;
    }
    vla_status st = fold_queries(p, cfg, qs);
    if (st == VLA_OK && p->fold > 1) cu_q[0] = p->fold_cu, g_q[0] = p->fold_group;
    if (st == VLA_OK) st = make_tiles(p->n_seg, 1, cu_q, g_q, p->bq, &p->qt, &p->n_qt, &p->qt_first);
    if (st == VLA_OK) st = make_tiles(p->n_seg, n_src, cu_k, g_k, p->bk, &p->kt, &p->n_kt, &p->kt_first);
    if (st != VLA_OK) plan_free(p);
    return st;
}

static inline int classify(const tile *qt, const tile *kt) {
    if (kt->gmin > qt->gmax) return TILE_SKIP;
    if (kt->gmax <= qt->gmin) return TILE_FULL;
    return TILE_PARTIAL;
}

static void plan_stats(const plan *p, vla_attn_stats *stats) {
    if (!stats) return;
    memset(stats, 0, sizeof(*stats));
    for (int64_t i = 0; i < p->n_qt; i++) {
        const tile *qt = &p->qt[i];
        for (int64_t j = p->kt_first[qt->seg]; j < p->kt_first[qt->seg + 1]; j++) {
            int c = classify(qt, &p->kt[j]);
            stats->tiles_total += p->H * p->fold; /* a folded tile is one tile per head */
            if (c != TILE_SKIP) stats->tiles_computed += p->H * p->fold;
            if (c == TILE_FULL) stats->tiles_unmasked += p->H * p->fold;
        }
    }
}

/* Scores S = scale·Q_tile·K_tileᵀ (row stride bk), masked entries −inf. */
static void tile_scores(const plan *p, const tile *qt, const tile *kt, int cls, int32_t h, float *S) {
    const kv_src *sr = &p->src[kt->src];
    int32_t kvh = h / p->rep;
    const float *Q = p->q + ((int64_t)qt->start * p->H + h) * p->d;
    const float *K = sr->k + ((int64_t)kt->start * p->Hkv + kvh) * p->d;
    p->ops->sgemm(false, true, qt->len, kt->len, p->d, p->scale, Q, (int64_t)p->H * p->d, K,
                  (int64_t)p->Hkv * p->d, 0.0f, S, p->bk);
    if (cls != TILE_PARTIAL) return;
    const int32_t *kg = sr->group ? sr->group + kt->start : NULL; /* NULL: every key is in group 0 */
    for (int32_t r = 0; r < qt->len; r++) {
        int32_t gi = p->group_q ? p->group_q[qt->start + r] : 0;
        float *srow = S + (int64_t)r * p->bk;
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
        float L = lse[(int64_t)(qt->start + r) * p->H + h];
        float *row = P + (int64_t)r * p->bk;
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
static int64_t tile_work(const plan *p) { return p->n_qt * p->H * (int64_t)p->bq * p->bk * p->d; }
static int parallel_worth_it(const plan *p) { return tile_work(p) > VLA_PAR_MIN_ATTN; }

static vla_status scratch_alloc(const plan *p, int64_t *per_thread, float **buf) {
    int64_t bmax = p->bq > p->bk ? p->bq : p->bk;
    *per_thread = 2 * (int64_t)p->bq * p->bk + 2 * bmax * p->d + 2 * (int64_t)p->bq;
    int nt = omp_get_max_threads();
    *buf = malloc((size_t)(*per_thread * nt) * sizeof(float));
    if (!*buf) return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate scratch for %d threads", nt);
    return VLA_OK;
}

static vla_status attention_forward_plan(const plan *p, float *out, float *lse) {
    int64_t per;
    float *scratch;
    VLA_TRY(scratch_alloc(p, &per, &scratch));
    int64_t n_items = p->n_qt * p->H;
    const int32_t d = p->d, bk = p->bk;
#pragma omp parallel if (parallel_worth_it(p))
    {
        float *S = scratch + per * omp_get_thread_num();
        float *acc = S + (int64_t)p->bq * p->bk, *m = acc + (int64_t)p->bq * d, *l = m + p->bq;
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < n_items; it++) {
            const tile *qt = &p->qt[it / p->H];
            int32_t h = (int32_t)(it % p->H), kvh = h / p->rep;
            for (int32_t r = 0; r < qt->len; r++) {
                m[r] = -INFINITY;
                l[r] = 0.0f;
            }
            memset(acc, 0, (size_t)qt->len * d * sizeof(float));
            for (int64_t j = p->kt_first[qt->seg]; j < p->kt_first[qt->seg + 1]; j++) {
                const tile *kt = &p->kt[j];
                int cls = classify(qt, kt);
                if (cls == TILE_SKIP) continue;
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
                const float *V = p->src[kt->src].v + ((int64_t)kt->start * p->Hkv + kvh) * d;
                p->ops->sgemm(false, false, qt->len, d, kt->len, 1.0f, S, bk, V, (int64_t)p->Hkv * d, 1.0f, acc, d);
            }
            for (int32_t r = 0; r < qt->len; r++) {
                int64_t row = (int64_t)(qt->start + r) * p->H + h;
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
                                 const vla_attn_seqs *ks, vla_attn_stats *stats) {
    plan p;
    const vla_attn_seqs *srcs[1] = {ks};
    VLA_TRY(plan_make(&p, vla_cpu_backend_table(), cfg, q, qs, 1, srcs));
    p.src[0].k = k;
    p.src[0].v = v;
    plan_stats(&p, stats);
    vla_status st = attention_forward_plan(&p, out, lse);
    plan_free(&p);
    return st;
}

vla_status vla_cpu_attention_forward_cached(const vla_attn_config *cfg, float *out, float *lse,
                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                        const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
                                        const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats) {
    plan p;
    const vla_attn_seqs *srcs[2] = {cs, ns};
    VLA_TRY(plan_make(&p, vla_cpu_backend_table(), cfg, q, qs, 2, srcs));
    p.src[0].k = k_cache;
    p.src[0].v = v_cache;
    p.src[1].k = k_new;
    p.src[1].v = v_new;
    plan_stats(&p, stats);
    vla_status st = attention_forward_plan(&p, out, lse);
    plan_free(&p);
    return st;
}

/* dS = P ⊙ (dP − D_row), in place in dP. */
static void tile_dscores(const plan *p, const tile *qt, const tile *kt, int32_t h, const float *P, float *dP,
                         const float *D) {
    for (int32_t r = 0; r < qt->len; r++) {
        float Dr = D[(int64_t)(qt->start + r) * p->H + h];
        const float *prow = P + (int64_t)r * p->bk;
        float *drow = dP + (int64_t)r * p->bk;
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
    const float *dO = c->d_out + (int64_t)qt->start * c->ldq + (int64_t)h * p->d;
    tile_probs(p, qt, kt, cls, h, c->lse, b->P);
    if (acc_dv) c->ops->sgemm(true, false, kt->len, p->d, qt->len, 1.0f, b->P, p->bk, dO, c->ldq, 1.0f, acc_dv, p->d);
    c->ops->sgemm(false, true, qt->len, kt->len, p->d, 1.0f, dO, c->ldq, V, c->ldk, 0.0f, b->dP, p->bk);
    tile_dscores(p, qt, kt, h, b->P, b->dP, c->D);
}

/* FUSED: one work item per (sample, kv head) owns dK/dV of the kv head and
 * dQ of the group's query heads over the sample. */
static void bwd_fused_item(const bwd_ctx *c, int64_t it, const bwd_bufs *b) {
    const plan *p = c->p;
    int32_t d = p->d, seg = (int32_t)(it / p->Hkv), kvh = (int32_t)(it % p->Hkv);
    for (int64_t j = p->kt_first[seg]; j < p->kt_first[seg + 1]; j++) {
        const tile *kt = &p->kt[j];
        memset(b->acc1, 0, (size_t)kt->len * d * sizeof(float));
        memset(b->acc2, 0, (size_t)kt->len * d * sizeof(float));
        const float *K = c->k + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        for (int32_t hh = 0; hh < p->rep; hh++) {
            int32_t h = kvh * p->rep + hh;
            for (int64_t i = p->qt_first[seg]; i < p->qt_first[seg + 1]; i++) {
                const tile *qt = &p->qt[i];
                int cls = classify(qt, kt);
                if (cls == TILE_SKIP) continue;
                const float *Q = c->q + (int64_t)qt->start * c->ldq + (int64_t)h * d;
                bwd_tile(c, qt, kt, cls, h, V, b->acc2, b);
                c->ops->sgemm(true, false, kt->len, d, qt->len, p->scale, b->dP, p->bk, Q, c->ldq, 1.0f, b->acc1, d);
                c->ops->sgemm(false, false, qt->len, d, kt->len, p->scale, b->dP, p->bk, K, c->ldk, 1.0f,
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
    int32_t d = p->d;
    const tile *kt = &p->kt[it / p->Hkv];
    int32_t kvh = (int32_t)(it % p->Hkv);
    memset(b->acc1, 0, (size_t)kt->len * d * sizeof(float));
    memset(b->acc2, 0, (size_t)kt->len * d * sizeof(float));
    const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
    for (int32_t hh = 0; hh < p->rep; hh++) {
        int32_t h = kvh * p->rep + hh;
        for (int64_t i = p->qt_first[kt->seg]; i < p->qt_first[kt->seg + 1]; i++) {
            const tile *qt = &p->qt[i];
            int cls = classify(qt, kt);
            if (cls == TILE_SKIP) continue;
            const float *Q = c->q + (int64_t)qt->start * c->ldq + (int64_t)h * d;
            bwd_tile(c, qt, kt, cls, h, V, b->acc2, b);
            c->ops->sgemm(true, false, kt->len, d, qt->len, p->scale, b->dP, p->bk, Q, c->ldq, 1.0f, b->acc1, d);
        }
    }
    add_rows(c->dk, c->dv, b->acc1, b->acc2, kt, kvh, c->ldk, d);
}

/* TWO_PASS, pass 2: dQ — one work item owns the rows of one (head, q-tile). */
static void bwd_dq_item(const bwd_ctx *c, int64_t it, const bwd_bufs *b) {
    const plan *p = c->p;
    int32_t d = p->d;
    const tile *qt = &p->qt[it / p->H];
    int32_t h = (int32_t)(it % p->H), kvh = h / p->rep;
    memset(b->acc1, 0, (size_t)qt->len * d * sizeof(float));
    for (int64_t j = p->kt_first[qt->seg]; j < p->kt_first[qt->seg + 1]; j++) {
        const tile *kt = &p->kt[j];
        int cls = classify(qt, kt);
        if (cls == TILE_SKIP) continue;
        const float *K = c->k + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        const float *V = c->v + (int64_t)kt->start * c->ldk + (int64_t)kvh * d;
        bwd_tile(c, qt, kt, cls, h, V, NULL, b);
        c->ops->sgemm(false, false, qt->len, d, kt->len, p->scale, b->dP, p->bk, K, c->ldk, 1.0f, b->acc1, d);
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
    VLA_TRY(plan_make(&p, vla_cpu_backend_table(), cfg, q, qs, 1, srcs));
    p.src[0].k = k;
    p.src[0].v = v;
    plan_stats(&p, stats);
    const int32_t H = p.H, Hkv = p.Hkv, d = p.d, bq = p.bq, bk = p.bk;
    int64_t nq = (int64_t)qs->cu_seqlens[qs->n_seg] * p.fold; /* query rows of the plan's H heads */
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
                 ((int64_t)p.n_seg * Hkv >= VLA_ATTN_FUSED_MIN_ITEMS || tile_work(&p) <= VLA_ATTN_TWO_PASS_WORK));
#pragma omp parallel if (parallel_worth_it(&p))
    {
        bwd_bufs b;
        b.P = scratch + per * omp_get_thread_num();
        b.dP = b.P + (int64_t)bq * bk;
        b.acc1 = b.dP + (int64_t)bq * bk;
        b.acc2 = b.acc1 + (int64_t)(bq > bk ? bq : bk) * d;
        if (fused) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < (int64_t)p.n_seg * Hkv; it++) bwd_fused_item(&ctx, it, &b);
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < p.n_kt * Hkv; it++) bwd_dkdv_item(&ctx, it, &b);
#pragma omp for schedule(dynamic, 1)
            for (int64_t it = 0; it < p.n_qt * H; it++) bwd_dq_item(&ctx, it, &b);
        }
    }
    free(scratch);
    free(D);
    plan_free(&p);
    return VLA_OK;
}
