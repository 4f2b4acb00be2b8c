/* attn_plan.c — tiles, MQA folding, work order and statistics of packed
 * attention, for the cpu and cuda kernels alike (attn_plan.h). */
#include "tensor/attn_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/seqlens.h"

/* Default tile edge: 64, or 128 for heads of <= 32 dims, whose 64-wide tile
 * GEMMs are so small (64·64·16) that call overhead dominates: pi05-tiny
 * (head_dim 16) trains ~7% faster with 128; and 128 for heads of >= 128
 * dims, whose tile GEMMs (64·64·256) spend their time packing operands:
 * π0.5's full shape (head_dim 256, `vla bench attention`) runs forward and
 * backward ~13% faster with 128. Measured on the cpu backend, whose tiles
 * these are; the cuda kernels pass their own. */
#define DEFAULT_TILE 64
#define DEFAULT_TILE_SMALL_HEAD 128
#define DEFAULT_TILE_LARGE_HEAD 128

int32_t vla_attn_default_tile(int32_t head_dim) {
    return head_dim <= 32 ? DEFAULT_TILE_SMALL_HEAD : head_dim >= 128 ? DEFAULT_TILE_LARGE_HEAD : DEFAULT_TILE;
}

static void tile_groups(vla_attn_tile *t, const int32_t *group) {
    t->gmin = t->gmax = 0;
    if (!group || t->len == 0) return;
    t->gmin = t->gmax = group[t->start];
    for (int32_t i = 1; i < t->len; i++) {
        int32_t g = group[t->start + i];
        if (g < t->gmin) t->gmin = g;
        if (g > t->gmax) t->gmax = g;
    }
}

/* Tiles of the given sides, sample-major (and source-major inside a sample);
 * first[s] = index of sample s's first tile. */
static vla_status make_tiles(int32_t n_seg, int n_side, const int32_t *const *cu, const int32_t *const *group,
                             int32_t b, vla_attn_tile **out, int64_t *n_out, int32_t *first) {
    int64_t n = 0;
    for (int32_t s = 0; s < n_seg; s++)
        for (int i = 0; i < n_side; i++) n += (cu[i][s + 1] - cu[i][s] + b - 1) / b;
    if (n > INT32_MAX) return vla_error(VLA_ERR_INVALID_ARG, "attention: %lld tiles", (long long)n);
    vla_attn_tile *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (!t) return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate %lld tiles", (long long)n);
    int64_t k = 0;
    for (int32_t s = 0; s < n_seg; s++) {
        first[s] = (int32_t)k;
        for (int i = 0; i < n_side; i++)
            for (int32_t st = cu[i][s]; st < cu[i][s + 1]; st += b) {
                vla_attn_tile *x = &t[k++];
                x->seg = s;
                x->start = st;
                x->len = cu[i][s + 1] - st < b ? cu[i][s + 1] - st : b;
                x->src = i;
                tile_groups(x, group[i]);
            }
    }
    first[n_seg] = (int32_t)k;
    *out = t;
    *n_out = n;
    return VLA_OK;
}

/* heaviest first; ties by index (a stable, metadata-only order) */
typedef struct {
    int64_t work;
    int32_t idx;
} order_item;

static int cmp_order(const void *a, const void *b) {
    const order_item *x = a, *y = b;
    if (x->work != y->work) return x->work > y->work ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static vla_status order_by_work(const int64_t *work, int64_t n, int32_t **out) {
    order_item *it = malloc((size_t)(n > 0 ? n : 1) * sizeof *it);
    int32_t *o = malloc((size_t)(n > 0 ? n : 1) * sizeof *o);
    if (!it || !o) {
        free(it), free(o);
        return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate the work order of %lld tiles", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) it[i] = (order_item){work[i], (int32_t)i};
    qsort(it, (size_t)n, sizeof *it, cmp_order);
    for (int64_t i = 0; i < n; i++) o[i] = it[i].idx;
    free(it);
    *out = o;
    return VLA_OK;
}

void vla_attn_plan_free(vla_attn_plan *p) {
    free(p->qt), free(p->kt), free(p->q_order), free(p->k_order);
    free(p->q_first), free(p->k_first), free(p->fold_group);
    memset(p, 0, sizeof *p);
}

vla_status vla_attn_check(const vla_attn_config *cfg, const vla_attn_seqs *qs, int n_src,
                          const vla_attn_seqs *const *ks) {
    if (cfg->n_heads <= 0 || cfg->n_kv_heads <= 0 || cfg->head_dim <= 0 || cfg->n_heads % cfg->n_kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "attention: %d heads, %d kv heads, head_dim %d: need positive sizes "
                         "and heads a multiple of kv heads", cfg->n_heads, cfg->n_kv_heads, cfg->head_dim);
    if (cfg->tile_q < 0 || cfg->tile_k < 0) return vla_error(VLA_ERR_INVALID_ARG, "attention: negative tile size");
    VLA_TRY(vla_seqlens_check(qs->cu_seqlens, qs->n_seg, -1, "attention queries"));
    for (int i = 0; i < n_src; i++) {
        VLA_TRY(vla_seqlens_check(ks[i]->cu_seqlens, ks[i]->n_seg, -1, "attention keys"));
        if (ks[i]->n_seg != qs->n_seg)
            return vla_error(VLA_ERR_INVALID_ARG, "attention: %d query samples but %d key samples", qs->n_seg,
                             ks[i]->n_seg);
    }
    return VLA_OK;
}

/* MQA folding (attn_plan.h): the query side as nq·H pseudo-tokens of one
 * head. Leaves the plan unfolded when it does not apply. */
static vla_status fold_queries(vla_attn_plan *p, const vla_attn_config *cfg, const vla_attn_seqs *qs,
                               vla_attn_fold_tile fold_tile, int32_t **fold_cu) {
    int64_t F = p->H, bq = fold_tile == VLA_ATTN_FOLD_TOKENS ? (int64_t)p->bq * F : p->bq;
    if (cfg->no_mqa_fold || p->Hkv != 1 || F < 2 || p->nq * F > INT32_MAX || bq > INT32_MAX) return VLA_OK;
    int32_t *cu = malloc((size_t)(qs->n_seg + 1) * sizeof *cu);
    if (qs->group) p->fold_group = malloc((size_t)(p->nq * F > 0 ? p->nq * F : 1) * sizeof *p->fold_group);
    if (!cu || (qs->group && !p->fold_group)) {
        free(cu);
        return vla_error(VLA_ERR_NOMEM, "attention: cannot allocate the folded query layout (%lld rows)",
                         (long long)(p->nq * F));
    }
    for (int32_t s = 0; s <= qs->n_seg; s++) cu[s] = (int32_t)(qs->cu_seqlens[s] * F);
    if (qs->group)
        for (int64_t t = 0; t < p->nq; t++)
            for (int64_t h = 0; h < F; h++) p->fold_group[t * F + h] = qs->group[t];
    p->fold = (int32_t)F;
    p->H = p->rep = 1;
    p->bq = (int32_t)bq;
    p->nq *= F;
    *fold_cu = cu;
    return VLA_OK;
}

vla_status vla_attn_plan_make(vla_attn_plan *p, const vla_attn_config *cfg, int32_t bq, int32_t bk,
                              vla_attn_fold_tile fold_tile, const vla_attn_seqs *qs, int n_src,
                              const vla_attn_seqs *const *ks) {
    memset(p, 0, sizeof *p);
    if (bq < 0 || bk < 0 || n_src < 1 || n_src > VLA_ATTN_MAX_SRC)
        return vla_error(VLA_ERR_INVALID_ARG, "attention plan: tiles %d×%d, %d key sources", bq, bk, n_src);
    VLA_TRY(vla_attn_check(cfg, qs, n_src, ks));
    p->n_seg = qs->n_seg, p->H = cfg->n_heads, p->Hkv = cfg->n_kv_heads, p->d = cfg->head_dim;
    p->rep = p->H / p->Hkv, p->n_src = n_src, p->fold = 1;
    p->bq = bq ? bq : cfg->tile_q ? cfg->tile_q : vla_attn_default_tile(cfg->head_dim);
    p->bk = bk ? bk : cfg->tile_k ? cfg->tile_k : vla_attn_default_tile(cfg->head_dim);
    p->scale = cfg->scale != 0.0f ? cfg->scale : (float)(1.0 / sqrt((double)cfg->head_dim));
    p->nq = qs->cu_seqlens[qs->n_seg];
    for (int i = 0; i < n_src; i++) p->nk[i] = ks[i]->cu_seqlens[ks[i]->n_seg];
    int32_t *fold_cu = NULL;
    vla_status st = fold_queries(p, cfg, qs, fold_tile, &fold_cu);
    if (st != VLA_OK) {
        vla_attn_plan_free(p);
        return st;
    }
    p->q_first = malloc(sizeof(int32_t) * (size_t)(p->n_seg + 1));
    p->k_first = malloc(sizeof(int32_t) * (size_t)(p->n_seg + 1));
    if (!p->q_first || !p->k_first) {
        free(fold_cu);
        vla_attn_plan_free(p);
        return vla_error(VLA_ERR_NOMEM, "attention: out of memory for %d samples", qs->n_seg);
    }
    const int32_t *cu_q[1] = {fold_cu ? fold_cu : qs->cu_seqlens}, *g_q[1] = {vla_attn_plan_group_q(p, qs)};
    const int32_t *cu_k[VLA_ATTN_MAX_SRC], *g_k[VLA_ATTN_MAX_SRC];
    for (int i = 0; i < n_src; i++) cu_k[i] = ks[i]->cu_seqlens, g_k[i] = ks[i]->group;
    st = make_tiles(p->n_seg, 1, cu_q, g_q, p->bq, &p->qt, &p->n_qt, p->q_first);
    free(fold_cu);
    if (st == VLA_OK) st = make_tiles(p->n_seg, n_src, cu_k, g_k, p->bk, &p->kt, &p->n_kt, p->k_first);
    int64_t *qwork = NULL, *kwork = NULL;
    if (st == VLA_OK) {
        qwork = calloc((size_t)(p->n_qt > 0 ? p->n_qt : 1), sizeof *qwork);
        kwork = calloc((size_t)(p->n_kt > 0 ? p->n_kt : 1), sizeof *kwork);
        if (!qwork || !kwork) st = vla_error(VLA_ERR_NOMEM, "attention: out of memory for the tile work");
    }
    if (st == VLA_OK) {
        const int32_t *kfirst = p->k_first, *qfirst = p->q_first;
        for (int64_t i = 0; i < p->n_qt; i++) {
            vla_attn_tile *q = &p->qt[i];
            q->first = kfirst[q->seg], q->n = kfirst[q->seg + 1] - kfirst[q->seg];
            for (int32_t j = q->first; j < q->first + q->n; j++) {
                vla_attn_tile *k = &p->kt[j];
                int c = vla_attn_tile_class(q, k);
                if (c == VLA_TILE_SKIP) continue;
                int64_t w = (int64_t)q->len * k->len;
                qwork[i] += w, kwork[j] += w;
                p->pairs_computed += w * p->H;
            }
        }
        for (int64_t j = 0; j < p->n_kt; j++) {
            vla_attn_tile *k = &p->kt[j];
            k->first = qfirst[k->seg], k->n = qfirst[k->seg + 1] - qfirst[k->seg];
        }
        st = order_by_work(qwork, p->n_qt, &p->q_order);
        if (st == VLA_OK) st = order_by_work(kwork, p->n_kt, &p->k_order);
    }
    free(qwork), free(kwork);
    if (st != VLA_OK) vla_attn_plan_free(p);
    return st;
}

/* ---- plan keys and the plan cache ---------------------------------------------------- */

static int64_t key_side(const vla_attn_seqs *s, int32_t *out, int64_t w) {
    int64_t tokens = s->cu_seqlens[s->n_seg];
    if (out) {
        out[w] = s->n_seg, out[w + 1] = s->group != NULL;
        memcpy(out + w + 2, s->cu_seqlens, sizeof(int32_t) * (size_t)(s->n_seg + 1));
        if (s->group) memcpy(out + w + 3 + s->n_seg, s->group, sizeof(int32_t) * (size_t)tokens);
    }
    return w + 3 + s->n_seg + (s->group ? tokens : 0);
}

int64_t vla_attn_plan_key(const vla_attn_config *cfg, int32_t bq, int32_t bk, vla_attn_fold_tile fold_tile,
                          const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks, int32_t *out) {
    int32_t scale_bits;
    memcpy(&scale_bits, &cfg->scale, sizeof scale_bits);
    const int32_t head[] = {cfg->n_heads, cfg->n_kv_heads, cfg->head_dim, scale_bits, cfg->tile_q, cfg->tile_k,
                            bq, bk, (int32_t)fold_tile, cfg->no_mqa_fold, n_src};
    int64_t w = (int64_t)(sizeof head / sizeof head[0]);
    if (out) memcpy(out, head, sizeof head);
    w = key_side(qs, out, w);
    for (int i = 0; i < n_src; i++) w = key_side(ks[i], out, w);
    return w;
}

int32_t vla_attn_walk_splits(int64_t blocks, int64_t max_walk, int64_t target_blocks) {
    if (blocks <= 0 || max_walk < 4 || blocks >= target_blocks) return 1;
    int64_t s = (target_blocks + blocks - 1) / blocks, by_walk = max_walk / 2;
    if (s > by_walk) s = by_walk;
    if (s > VLA_ATTN_MAX_SPLITS) s = VLA_ATTN_MAX_SPLITS;
    return s < 1 ? 1 : (int32_t)s;
}

int64_t vla_attn_plan_max_kv_walk(const vla_attn_plan *p) {
    int64_t m = 0;
    for (int64_t j = 0; j < p->n_kt; j++)
        if ((int64_t)p->rep * p->kt[j].n > m) m = (int64_t)p->rep * p->kt[j].n;
    return m;
}

int64_t vla_attn_plan_max_q_walk(const vla_attn_plan *p) {
    int64_t m = 0;
    for (int64_t i = 0; i < p->n_qt; i++)
        if (p->qt[i].n > m) m = p->qt[i].n;
    return m;
}

void vla_attn_plan_stats(const vla_attn_plan *p, vla_attn_stats *st) {
    if (!st) return;
    memset(st, 0, sizeof *st);
    for (int64_t i = 0; i < p->n_qt; i++) {
        const vla_attn_tile *q = &p->qt[i];
        for (int32_t j = q->first; j < q->first + q->n; j++) {
            int c = vla_attn_tile_class(q, &p->kt[j]);
            int64_t heads = (int64_t)p->H * p->fold; /* a folded tile is one tile per head */
            st->tiles_total += heads;
            if (c != VLA_TILE_SKIP) st->tiles_computed += heads;
            if (c == VLA_TILE_FULL) st->tiles_unmasked += heads;
        }
    }
}

vla_attn_pack_layout vla_attn_plan_pack_layout(const vla_attn_plan *p, const vla_attn_seqs *qs, int n_src,
                                               const vla_attn_seqs *const *ks) {
    vla_attn_pack_layout l;
    int64_t w = 0;
    l.qt = w, w += p->n_qt * 8;
    l.kt = w, w += p->n_kt * 8;
    l.q_order = w, w += p->n_qt;
    l.k_order = w, w += p->n_kt;
    l.group_q = qs->group ? w : -1, w += qs->group ? p->nq : 0;
    for (int i = 0; i < VLA_ATTN_MAX_SRC; i++) {
        bool has = i < n_src && ks[i]->group;
        l.group_k[i] = has ? w : -1;
        w += has ? p->nk[i] : 0;
    }
    l.words = w > 0 ? w : 1;
    return l;
}

void vla_attn_plan_pack(const vla_attn_plan *p, const vla_attn_pack_layout *l, const vla_attn_seqs *qs, int n_src,
                        const vla_attn_seqs *const *ks, int32_t *out) {
    memcpy(out + l->qt, p->qt, sizeof(vla_attn_tile) * (size_t)p->n_qt);
    memcpy(out + l->kt, p->kt, sizeof(vla_attn_tile) * (size_t)p->n_kt);
    memcpy(out + l->q_order, p->q_order, sizeof(int32_t) * (size_t)p->n_qt);
    memcpy(out + l->k_order, p->k_order, sizeof(int32_t) * (size_t)p->n_kt);
    if (l->group_q >= 0) memcpy(out + l->group_q, vla_attn_plan_group_q(p, qs), sizeof(int32_t) * (size_t)p->nq);
    for (int i = 0; i < n_src; i++)
        if (l->group_k[i] >= 0) memcpy(out + l->group_k[i], ks[i]->group, sizeof(int32_t) * (size_t)p->nk[i]);
}

/* vla_attn_pairs: each sample's key groups sorted, each query's count a binary search. */
static int i32_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

double vla_attn_pairs(const vla_attn_seqs *qs, const vla_attn_seqs *ks) {
    if (!qs || !ks || !qs->cu_seqlens || !ks->cu_seqlens) return 0;
    int32_t n_seg = qs->n_seg < ks->n_seg ? qs->n_seg : ks->n_seg;
    double pairs = 0;
    int32_t *g = NULL;
    int64_t cap = 0;
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t q0 = qs->cu_seqlens[s], q1 = qs->cu_seqlens[s + 1], k0 = ks->cu_seqlens[s], k1 = ks->cu_seqlens[s + 1];
        int64_t nk = k1 - k0;
        if (q1 <= q0 || nk <= 0) continue;
        if (!ks->group) {
            for (int64_t i = q0; i < q1; i++) pairs += (!qs->group || qs->group[i] >= 0) ? (double)nk : 0;
            continue;
        }
        if (nk > cap) {
            int32_t *t = realloc(g, sizeof *g * (size_t)nk);
            if (!t) break;
            g = t, cap = nk;
        }
        memcpy(g, ks->group + k0, sizeof *g * (size_t)nk);
        qsort(g, (size_t)nk, sizeof *g, i32_cmp);
        for (int64_t i = q0; i < q1; i++) {
            int32_t gi = qs->group ? qs->group[i] : 0;
            int64_t lo = 0, hi = nk; /* the first key group above gi */
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (g[mid] <= gi) lo = mid + 1;
                else hi = mid;
            }
            pairs += (double)lo;
        }
    }
    free(g);
    return pairs;
}
