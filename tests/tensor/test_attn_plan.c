/* test_attn_plan.c — tensor/attn_plan.h, the one tiling the cpu and cuda
 * attention kernels walk, on random ragged packed batches (empty samples
 * included; bidirectional, prefix-LM, causal and random groups; self-,
 * cross- and two-source cached attention; GQA; MQA folded or not, either
 * fold tile; many tile sizes):
 *   - the tiles cover every token once, per sample and per key source;
 *   - each (q-tile, k-tile) class against the mask itself, element by
 *     element (SKIP: no visible pair; FULL: every pair visible; PARTIAL:
 *     both kinds);
 *   - the orders are permutations, heaviest tile first;
 *   - the statistics against a brute-force count;
 *   - the packed upload round-trips;
 *   - and the kernels' walk emulated in double on the host — forward with
 *     an online softmax over the plan's k-tiles (FULL tiles without a mask
 *     test), backward as the kernels' two passes over the plan's ranges —
 *     against dense masked attention and its gradient;
 *   - the cpu's and the cuda's folded plans are one plan, and folding
 *     keeps the statistics of the per-head form. */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/attn_plan.h"
#include "tensor/key_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t n_seg, cu[12], *group;
} side;

/* mode 0 NULL groups, 1 prefix-LM, 2 causal, 3 random in 0..3 */
static void side_make(side *s, int n_seg, vla_rng *r, int mode, int maxlen) {
    s->n_seg = n_seg;
    s->cu[0] = 0;
    for (int i = 0; i < n_seg; i++) {
        int len = vla_rng_uniform(r) < 0.15 ? 0 : 1 + (int)(vla_rng_uniform(r) * maxlen);
        s->cu[i + 1] = s->cu[i] + len;
    }
    int32_t n = s->cu[n_seg];
    s->group = NULL;
    if (mode == 0) return;
    s->group = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n_seg; i++)
        for (int32_t t = s->cu[i]; t < s->cu[i + 1]; t++) {
            int32_t pos = t - s->cu[i], len = s->cu[i + 1] - s->cu[i];
            s->group[t] = mode == 1 ? pos >= len - len / 3 : mode == 2 ? pos : (int32_t)(vla_rng_uniform(r) * 4);
        }
}

static int32_t grp(const side *s, int32_t t) { return s->group ? s->group[t] : 0; }

/* a query side as F pseudo-tokens per token (MQA folding, attn_plan.h) */
static side fold_side(const side *s, int F) {
    side f = {s->n_seg, {0}, NULL};
    for (int i = 0; i <= s->n_seg; i++) f.cu[i] = s->cu[i] * F;
    if (s->group) {
        f.group = malloc(sizeof(int32_t) * (size_t)(f.cu[f.n_seg] > 0 ? f.cu[f.n_seg] : 1));
        for (int32_t t = 0; t < f.cu[f.n_seg]; t++) f.group[t] = s->group[t / F];
    }
    return f;
}

/* key index space of a sample: source 0's rows then source 1's */
typedef struct {
    const side *src[2];
    int n_src;
} keys;

static void check_tiles(const vla_attn_plan *p, const side *q, const keys *k) {
    /* q tiles: in order, each token once */
    int32_t next = 0;
    for (int64_t i = 0; i < p->n_qt; i++) {
        const vla_attn_tile *t = &p->qt[i];
        assert_int_equal(t->start, next);
        assert_true(t->len >= 1 && t->len <= p->bq);
        assert_true(t->start >= q->cu[t->seg] && t->start + t->len <= q->cu[t->seg + 1]);
        next += t->len;
        /* its k-tiles are exactly its sample's */
        for (int32_t j = t->first; j < t->first + t->n; j++) assert_int_equal(p->kt[j].seg, t->seg);
        int32_t want = 0;
        for (int si = 0; si < k->n_src; si++) {
            int32_t len = k->src[si]->cu[t->seg + 1] - k->src[si]->cu[t->seg];
            want += (len + p->bk - 1) / p->bk;
        }
        assert_int_equal(t->n, want);
    }
    assert_int_equal(next, q->cu[q->n_seg]);
    /* k tiles: per source, each token once */
    for (int si = 0; si < k->n_src; si++) {
        int32_t nx = 0;
        for (int64_t j = 0; j < p->n_kt; j++) {
            const vla_attn_tile *t = &p->kt[j];
            if (t->src != si) continue;
            assert_int_equal(t->start, nx);
            nx += t->len;
            for (int32_t i = t->first; i < t->first + t->n; i++) assert_int_equal(p->qt[i].seg, t->seg);
        }
        assert_int_equal(nx, k->src[si]->cu[k->src[si]->n_seg]);
    }
}

static void check_classes_and_stats(const vla_attn_plan *p, const side *q, const keys *k) {
    vla_attn_stats st, bf = {0};
    vla_attn_plan_stats(p, &st);
    for (int64_t i = 0; i < p->n_qt; i++) {
        const vla_attn_tile *qt = &p->qt[i];
        for (int32_t j = qt->first; j < qt->first + qt->n; j++) {
            const vla_attn_tile *kt = &p->kt[j];
            const side *ks = k->src[kt->src];
            int vis = 0, hid = 0;
            for (int32_t a = 0; a < qt->len; a++)
                for (int32_t b = 0; b < kt->len; b++) {
                    if (grp(ks, kt->start + b) <= grp(q, qt->start + a)) vis++;
                    else hid++;
                }
            int c = vla_attn_tile_class(qt, kt);
            if (c == VLA_TILE_SKIP) assert_int_equal(vis, 0);
            if (c == VLA_TILE_FULL) assert_int_equal(hid, 0);
            if (c == VLA_TILE_PARTIAL) assert_true(vis > 0 && hid > 0);
            int64_t heads = (int64_t)p->H * p->fold;
            bf.tiles_total += heads;
            bf.tiles_computed += c != VLA_TILE_SKIP ? heads : 0;
            bf.tiles_unmasked += c == VLA_TILE_FULL ? heads : 0;
        }
    }
    assert_true(st.tiles_total == bf.tiles_total && st.tiles_computed == bf.tiles_computed &&
                st.tiles_unmasked == bf.tiles_unmasked);
}

static int64_t q_work(const vla_attn_plan *p, int32_t i) {
    int64_t w = 0;
    for (int32_t j = p->qt[i].first; j < p->qt[i].first + p->qt[i].n; j++)
        if (vla_attn_tile_class(&p->qt[i], &p->kt[j]) != VLA_TILE_SKIP) w += (int64_t)p->qt[i].len * p->kt[j].len;
    return w;
}
static int64_t k_work(const vla_attn_plan *p, int32_t j) {
    int64_t w = 0;
    for (int32_t i = p->kt[j].first; i < p->kt[j].first + p->kt[j].n; i++)
        if (vla_attn_tile_class(&p->qt[i], &p->kt[j]) != VLA_TILE_SKIP) w += (int64_t)p->qt[i].len * p->kt[j].len;
    return w;
}

static void check_orders(const vla_attn_plan *p) {
    char *seen = calloc((size_t)(p->n_qt + p->n_kt + 1), 1);
    for (int64_t i = 0; i < p->n_qt; i++) {
        int32_t t = p->q_order[i];
        assert_true(t >= 0 && t < p->n_qt && !seen[t]);
        seen[t] = 1;
        if (i) assert_true(q_work(p, p->q_order[i - 1]) >= q_work(p, t));
    }
    memset(seen, 0, (size_t)(p->n_qt + p->n_kt + 1));
    for (int64_t j = 0; j < p->n_kt; j++) {
        int32_t t = p->k_order[j];
        assert_true(t >= 0 && t < p->n_kt && !seen[t]);
        seen[t] = 1;
        if (j) assert_true(k_work(p, p->k_order[j - 1]) >= k_work(p, t));
    }
    free(seen);
}

static void check_pack(const vla_attn_plan *p, const side *q, const keys *k, const vla_attn_seqs *qs,
                       const vla_attn_seqs *const *ks) {
    vla_attn_pack_layout l = vla_attn_plan_pack_layout(p, qs, k->n_src, ks);
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)l.words);
    vla_attn_plan_pack(p, &l, qs, k->n_src, ks, buf);
    assert_memory_equal(buf + l.qt, p->qt, sizeof(vla_attn_tile) * (size_t)p->n_qt);
    assert_memory_equal(buf + l.kt, p->kt, sizeof(vla_attn_tile) * (size_t)p->n_kt);
    assert_memory_equal(buf + l.q_order, p->q_order, sizeof(int32_t) * (size_t)p->n_qt);
    assert_memory_equal(buf + l.k_order, p->k_order, sizeof(int32_t) * (size_t)p->n_kt);
    if (q->group) assert_memory_equal(buf + l.group_q, q->group, sizeof(int32_t) * (size_t)p->nq);
    else assert_true(l.group_q == -1);
    for (int si = 0; si < k->n_src; si++) {
        if (k->src[si]->group)
            assert_memory_equal(buf + l.group_k[si], k->src[si]->group, sizeof(int32_t) * (size_t)p->nk[si]);
        else assert_true(l.group_k[si] == -1);
    }
    free(buf);
}

/* ---- the kernels' walk, emulated in double, against dense attention ---------------------- */

typedef struct {
    int H, Hkv, d;
    double scale;
    const double *q, *k[2], *v[2], *dO;
} tensors;

static const double *krow(const tensors *T, int src, int64_t tok, int kvh, int which) {
    const double *base = which ? T->v[src] : T->k[src];
    return base + (tok * T->Hkv + kvh) * T->d;
}

static double dotd(const double *a, const double *b, int d) {
    double s = 0;
    for (int c = 0; c < d; c++) s += a[c] * b[c];
    return s;
}

/* dense: out [nq, H, d], lse [nq, H] */
static void dense_forward(const tensors *T, const side *q, const keys *k, double *out, double *lse) {
    for (int s = 0; s < q->n_seg; s++)
        for (int32_t i = q->cu[s]; i < q->cu[s + 1]; i++)
            for (int h = 0; h < T->H; h++) {
                int kvh = h / (T->H / T->Hkv);
                const double *qi = T->q + ((int64_t)i * T->H + h) * T->d;
                double mx = -INFINITY;
                for (int si = 0; si < k->n_src; si++)
                    for (int32_t j = k->src[si]->cu[s]; j < k->src[si]->cu[s + 1]; j++)
                        if (grp(k->src[si], j) <= grp(q, i))
                            mx = fmax(mx, T->scale * dotd(qi, krow(T, si, j, kvh, 0), T->d));
                double *o = out + ((int64_t)i * T->H + h) * T->d, l = 0;
                memset(o, 0, sizeof(double) * (size_t)T->d);
                for (int si = 0; si < k->n_src; si++)
                    for (int32_t j = k->src[si]->cu[s]; j < k->src[si]->cu[s + 1]; j++)
                        if (grp(k->src[si], j) <= grp(q, i)) {
                            double p = exp(T->scale * dotd(qi, krow(T, si, j, kvh, 0), T->d) - mx);
                            l += p;
                            for (int c = 0; c < T->d; c++) o[c] += p * krow(T, si, j, kvh, 1)[c];
                        }
                for (int c = 0; c < T->d && l > 0; c++) o[c] /= l;
                lse[(int64_t)i * T->H + h] = l > 0 ? mx + log(l) : -INFINITY;
            }
}

/* the forward kernel's walk: per q-tile and head, the plan's k-tiles in order, online softmax; with S > 1
 * the walk cut in S parts (attn_plan.h, SPLIT KEYS), each part's unnormalised output, max and sum kept,
 * then combined in part order as the device's combine pass does */
static void walk_forward(const vla_attn_plan *p, const tensors *T, const side *q, const keys *k, double *out,
                         double *lse, int32_t S) {
    double *po = malloc(sizeof(double) * (size_t)(S * T->d)), *pm = malloc(sizeof(double) * (size_t)S);
    double *pl = malloc(sizeof(double) * (size_t)S);
    for (int64_t it = 0; it < p->n_qt * p->H; it++) {
        const vla_attn_tile *qt = &p->qt[p->q_order[it / p->H]];
        int h = (int)(it % p->H), kvh = h / p->rep;
        for (int32_t r = 0; r < qt->len; r++) {
            int32_t i = qt->start + r;
            const double *qi = T->q + ((int64_t)i * T->H + h) * T->d;
            for (int32_t s = 0; s < S; s++) {
                int64_t lo, hi;
                vla_attn_split_range(qt->n, S, s, &lo, &hi);
                double m = -INFINITY, l = 0, *o = po + (int64_t)s * T->d;
                memset(o, 0, sizeof(double) * (size_t)T->d);
                for (int32_t j = qt->first + (int32_t)lo; j < qt->first + (int32_t)hi; j++) {
                    const vla_attn_tile *kt = &p->kt[j];
                    int cls = vla_attn_tile_class(qt, kt);
                    if (cls == VLA_TILE_SKIP) continue;
                    for (int32_t b = 0; b < kt->len; b++) {
                        int32_t key = kt->start + b;
                        if (cls == VLA_TILE_PARTIAL && grp(k->src[kt->src], key) > grp(q, i)) continue;
                        double sc = T->scale * dotd(qi, krow(T, kt->src, key, kvh, 0), T->d), mn = fmax(m, sc);
                        double corr = exp(m - mn), pe = exp(sc - mn);
                        l = l * corr + pe;
                        for (int c = 0; c < T->d; c++) o[c] = o[c] * corr + pe * krow(T, kt->src, key, kvh, 1)[c];
                        m = mn;
                    }
                }
                pm[s] = m, pl[s] = l;
            }
            /* the combine: parts that saw no key (l = 0) add nothing */
            double M = -INFINITY, L = 0, *o = out + ((int64_t)i * T->H + h) * T->d;
            for (int32_t s = 0; s < S; s++)
                if (pl[s] > 0) M = fmax(M, pm[s]);
            memset(o, 0, sizeof(double) * (size_t)T->d);
            for (int32_t s = 0; s < S; s++) {
                if (!(pl[s] > 0)) continue;
                double f = exp(pm[s] - M);
                L += pl[s] * f;
                for (int c = 0; c < T->d; c++) o[c] += po[(int64_t)s * T->d + c] * f;
            }
            for (int c = 0; c < T->d && L > 0; c++) o[c] /= L;
            lse[(int64_t)i * T->H + h] = L > 0 ? M + log(L) : -INFINITY;
        }
    }
    free(po), free(pm), free(pl);
}

/* dense gradients (one key source) */
static void dense_backward(const tensors *T, const side *q, const side *ks, const double *out, const double *lse,
                           double *dq, double *dk, double *dv) {
    for (int s = 0; s < q->n_seg; s++)
        for (int32_t i = q->cu[s]; i < q->cu[s + 1]; i++)
            for (int h = 0; h < T->H; h++) {
                int kvh = h / (T->H / T->Hkv);
                int64_t row = (int64_t)i * T->H + h;
                const double *qi = T->q + row * T->d, *doi = T->dO + row * T->d;
                double D = dotd(doi, out + row * T->d, T->d);
                if (lse[row] == -INFINITY) continue;
                for (int32_t j = ks->cu[s]; j < ks->cu[s + 1]; j++) {
                    if (grp(ks, j) > grp(q, i)) continue;
                    const double *kj = krow(T, 0, j, kvh, 0), *vj = krow(T, 0, j, kvh, 1);
                    double pp = exp(T->scale * dotd(qi, kj, T->d) - lse[row]);
                    double ds = pp * (dotd(doi, vj, T->d) - D);
                    for (int c = 0; c < T->d; c++) {
                        dq[row * T->d + c] += T->scale * ds * kj[c];
                        dk[((int64_t)j * T->Hkv + kvh) * T->d + c] += T->scale * ds * qi[c];
                        dv[((int64_t)j * T->Hkv + kvh) * T->d + c] += pp * doi[c];
                    }
                }
            }
}

/* the backward kernels' two passes over the plan; pass 1 cut in S parts
 * (tensor/attn_plan.h, "SPLIT dK/dV"): part s of a block's walk adds into
 * its own partial dK/dV, and the parts are summed into dK/dV afterwards */
static void walk_backward(const vla_attn_plan *p, const tensors *T, const side *q, const side *ks, const double *out,
                          const double *lse, double *dq, double *dk_out, double *dv_out, int32_t S) {
    int64_t rows = p->nq * p->H, nk = ks->cu[ks->n_seg] * T->Hkv * T->d;
    double *D = malloc(sizeof(double) * (size_t)(rows > 0 ? rows : 1));
    double *part_k = calloc((size_t)(S * nk + 1), sizeof(double)), *part_v = calloc((size_t)(S * nk + 1), sizeof(double));
    for (int64_t r = 0; r < rows; r++) D[r] = dotd(T->dO + r * T->d, out + r * T->d, T->d);
    for (int64_t it = 0; it < p->n_kt * p->Hkv * S; it++) { /* pass 1: dK, dV per (k-tile, kv head, part) */
        int32_t s = (int32_t)(it % S);
        int64_t blk = it / S;
        const vla_attn_tile *kt = &p->kt[p->k_order[blk / p->Hkv]];
        int kvh = (int)(blk % p->Hkv);
        double *dk = part_k + s * nk, *dv = part_v + s * nk;
        int64_t lo, hi;
        vla_attn_split_range((int64_t)p->rep * kt->n, S, s, &lo, &hi);
        for (int64_t j = lo; j < hi; j++) {
            int hh = (int)(j / kt->n), h = kvh * p->rep + hh;
            {
                int32_t i = kt->first + (int32_t)(j % kt->n);
                const vla_attn_tile *qt = &p->qt[i];
                int cls = vla_attn_tile_class(qt, kt);
                if (cls == VLA_TILE_SKIP) continue;
                for (int32_t b = 0; b < kt->len; b++)
                    for (int32_t a = 0; a < qt->len; a++) {
                        int32_t key = kt->start + b, qu = qt->start + a;
                        int64_t row = (int64_t)qu * T->H + h;
                        if (lse[row] == -INFINITY) continue;
                        if (cls == VLA_TILE_PARTIAL && grp(ks, key) > grp(q, qu)) continue;
                        const double *qi = T->q + row * T->d, *doi = T->dO + row * T->d;
                        double pp = exp(T->scale * dotd(qi, krow(T, 0, key, kvh, 0), T->d) - lse[row]);
                        double ds = pp * (dotd(doi, krow(T, 0, key, kvh, 1), T->d) - D[row]);
                        for (int c = 0; c < T->d; c++) {
                            dk[((int64_t)key * T->Hkv + kvh) * T->d + c] += T->scale * ds * qi[c];
                            dv[((int64_t)key * T->Hkv + kvh) * T->d + c] += pp * doi[c];
                        }
                    }
            }
        }
    }
    for (int32_t s = 0; s < S; s++) /* the reduction pass: parts in order */
        for (int64_t e = 0; e < nk; e++) dk_out[e] += part_k[s * nk + e], dv_out[e] += part_v[s * nk + e];
    free(part_k), free(part_v);
    for (int64_t it = 0; it < p->n_qt * p->H; it++) { /* pass 2: dQ per (q-tile, head) */
        const vla_attn_tile *qt = &p->qt[p->q_order[it / p->H]];
        int h = (int)(it % p->H), kvh = h / p->rep;
        for (int32_t j = qt->first; j < qt->first + qt->n; j++) {
            const vla_attn_tile *kt = &p->kt[j];
            int cls = vla_attn_tile_class(qt, kt);
            if (cls == VLA_TILE_SKIP) continue;
            for (int32_t a = 0; a < qt->len; a++)
                for (int32_t b = 0; b < kt->len; b++) {
                    int32_t key = kt->start + b, qu = qt->start + a;
                    int64_t row = (int64_t)qu * T->H + h;
                    if (lse[row] == -INFINITY) continue;
                    if (cls == VLA_TILE_PARTIAL && grp(ks, key) > grp(q, qu)) continue;
                    const double *kj = krow(T, 0, key, kvh, 0);
                    double pp = exp(T->scale * dotd(T->q + row * T->d, kj, T->d) - lse[row]);
                    double ds = pp * (dotd(T->dO + row * T->d, krow(T, 0, key, kvh, 1), T->d) - D[row]);
                    for (int c = 0; c < T->d; c++) dq[row * T->d + c] += T->scale * ds * kj[c];
                }
        }
    }
    free(D);
}

static double *randv(int64_t n, vla_rng *r) {
    double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = vla_rng_normal(r);
    return x;
}

static void assert_close(const double *a, const double *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++) {
        if (isinf(a[i]) || isinf(b[i])) {
            if (a[i] != b[i]) fail_msg("%s[%lld]: %g vs %g", what, (long long)i, a[i], b[i]);
            continue;
        }
        if (fabs(a[i] - b[i]) > 1e-9 * (1 + fabs(b[i]))) fail_msg("%s[%lld]: %.12g vs %.12g", what, (long long)i, a[i], b[i]);
    }
}

static void run_case(vla_rng *r, int trial) {
    static const int TILES[] = {1, 3, 8, 16, 32, 64};
    int n_seg = 1 + (int)(vla_rng_uniform(r) * 6), mode = trial % 4;
    int kind = trial % 3; /* 0 self, 1 cross, 2 cached (two key sources) */
    side q, k0, k1;
    side_make(&q, n_seg, r, mode, 70);
    if (kind == 0) {
        k0 = q;
    } else {
        side_make(&k0, n_seg, r, kind == 2 ? 0 : (mode + 1) % 4, 50);
        if (kind == 2) side_make(&k1, n_seg, r, 3, 20);
    }
    keys k = {{&k0, &k1}, kind == 2 ? 2 : 1};
    int H = (trial % 2) ? 4 : 2, Hkv = trial % 5 == 0 ? 1 : 2, d = 5;
    vla_attn_config cfg = {.n_heads = H, .n_kv_heads = Hkv, .head_dim = d};
    vla_attn_seqs qs = {q.n_seg, q.cu, q.group}, s0 = {k0.n_seg, k0.cu, k0.group}, s1 = {0};
    if (kind == 2) s1 = (vla_attn_seqs){k1.n_seg, k1.cu, k1.group};
    const vla_attn_seqs *ks[2] = {&s0, &s1};
    int32_t bq = TILES[(int)(vla_rng_uniform(r) * 6)], bk = TILES[(int)(vla_rng_uniform(r) * 6)];
    vla_attn_fold_tile fold_tile = trial % 4 < 2 ? VLA_ATTN_FOLD_TOKENS : VLA_ATTN_FOLD_ROWS;
    cfg.no_mqa_fold = trial % 3 == 2;
    vla_attn_plan p;
    assert_int_equal(vla_attn_plan_make(&p, &cfg, bq, bk, fold_tile, &qs, k.n_src, ks), VLA_OK);
    /* folded (one KV head): the query side is nq·H pseudo-tokens of one head, the same memory */
    side tok_q = q;
    if (Hkv == 1 && H > 1 && !cfg.no_mqa_fold) {
        assert_int_equal(p.fold, H);
        assert_true(p.H == 1 && p.rep == 1 && p.bq == (fold_tile == VLA_ATTN_FOLD_TOKENS ? bq * H : bq));
        q = fold_side(&tok_q, H);
        H = 1;
    } else {
        assert_int_equal(p.fold, 1);
    }
    check_tiles(&p, &q, &k);
    check_classes_and_stats(&p, &q, &k);
    check_orders(&p);
    check_pack(&p, &q, &k, &qs, ks);
    int64_t nq = q.cu[n_seg], nk0 = k0.cu[n_seg], nk1 = kind == 2 ? k1.cu[n_seg] : 0;
    tensors T = {H, Hkv, d, 1.0 / sqrt((double)d), randv(nq * H * d, r), {randv(nk0 * Hkv * d, r), randv(nk1 * Hkv * d, r)},
                 {randv(nk0 * Hkv * d, r), randv(nk1 * Hkv * d, r)}, randv(nq * H * d, r)};
    double *o1 = calloc((size_t)(nq * H * d + 1), 8), *o2 = calloc((size_t)(nq * H * d + 1), 8);
    double *l1 = calloc((size_t)(nq * H + 1), 8), *l2 = calloc((size_t)(nq * H + 1), 8);
    dense_forward(&T, &q, &k, o1, l1);
    /* unsplit, the split the device would choose (a small grid: few q-tiles), and arbitrary ones, empty parts
     * included */
    int32_t fsplits[4] = {1, vla_attn_walk_splits(p.n_qt * p.H, vla_attn_plan_max_q_walk(&p), 528), 3, 16};
    for (int v = 0; v < 4; v++) {
        memset(o2, 0, sizeof(double) * (size_t)(nq * H * d + 1)), memset(l2, 0, sizeof(double) * (size_t)(nq * H + 1));
        walk_forward(&p, &T, &q, &k, o2, l2, fsplits[v]);
        assert_close(o2, o1, nq * H * d, "out");
        assert_close(l2, l1, nq * H, "lse");
    }
    if (kind != 2) {
        int64_t nk = nk0 * Hkv * d;
        double *g[6];
        for (int i = 0; i < 6; i++) g[i] = calloc((size_t)((i % 3 == 0 ? nq * H * d : nk) + 1), 8);
        dense_backward(&T, &q, &k0, o1, l1, g[0], g[1], g[2]);
        /* unsplit, the split the device would choose, and an arbitrary one (empty parts included) */
        int32_t splits[3] = {1, vla_attn_walk_splits(p.n_kt * p.Hkv, vla_attn_plan_max_kv_walk(&p), 528), 7};
        for (int v = 0; v < 3; v++) {
            for (int i = 3; i < 6; i++) memset(g[i], 0, sizeof(double) * (size_t)((i % 3 == 0 ? nq * H * d : nk) + 1));
            walk_backward(&p, &T, &q, &k0, o1, l1, g[3], g[4], g[5], splits[v]);
            assert_close(g[3], g[0], nq * H * d, "dq");
            assert_close(g[4], g[1], nk, "dk");
            assert_close(g[5], g[2], nk, "dv");
        }
        for (int i = 0; i < 6; i++) free(g[i]);
    }
    free(o1), free(o2), free(l1), free(l2), free((void *)T.q), free((void *)T.dO);
    for (int i = 0; i < 2; i++) free((void *)T.k[i]), free((void *)T.v[i]);
    vla_attn_plan_free(&p);
    if (q.group != tok_q.group) free(q.group);
    q = tok_q;
    if (q.group) free(q.group);
    if (kind != 0 && k0.group) free(k0.group);
    if (kind == 2 && k1.group) free(k1.group);
}

static void test_random_plans(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(77, 0);
    for (int trial = 0; trial < 120; trial++) run_case(&r, trial);
}

/* The cpu backend (a folded q-tile keeps bq tokens) and the cuda backend (it
 * keeps bq rows) get the same plan for the same rows per tile; folding
 * changes neither the statistics nor the FLOP count of the per-head form;
 * tile sizes left to the plan are the cpu's defaults. */
static void test_fold_one_plan(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(78, 0);
    for (int trial = 0; trial < 24; trial++) {
        side q, k;
        side_make(&q, 1 + trial % 5, &r, 1 + trial % 3, 90);
        side_make(&k, q.n_seg, &r, trial % 4, 60);
        int H = 2 + trial % 7, bq = 1 + trial % 17;
        vla_attn_config cfg = {.n_heads = H, .n_kv_heads = 1, .head_dim = 16 << (trial % 5)};
        vla_attn_seqs qs = {q.n_seg, q.cu, q.group}, s0 = {k.n_seg, k.cu, k.group};
        const vla_attn_seqs *ks[1] = {&s0};
        vla_attn_plan cpu, cuda, unfolded, dflt;
        assert_int_equal(vla_attn_plan_make(&cpu, &cfg, bq, 8, VLA_ATTN_FOLD_TOKENS, &qs, 1, ks), VLA_OK);
        assert_int_equal(vla_attn_plan_make(&cuda, &cfg, bq * H, 8, VLA_ATTN_FOLD_ROWS, &qs, 1, ks), VLA_OK);
        assert_int_equal(vla_attn_plan_make(&dflt, &cfg, 0, 0, VLA_ATTN_FOLD_TOKENS, &qs, 1, ks), VLA_OK);
        cfg.no_mqa_fold = true;
        assert_int_equal(vla_attn_plan_make(&unfolded, &cfg, bq, 8, VLA_ATTN_FOLD_TOKENS, &qs, 1, ks), VLA_OK);
        assert_true(cpu.fold == H && cuda.fold == H && unfolded.fold == 1);
        assert_true(cpu.bq == cuda.bq && cpu.n_qt == cuda.n_qt && cpu.n_kt == cuda.n_kt && cpu.nq == cuda.nq);
        assert_memory_equal(cpu.qt, cuda.qt, sizeof(vla_attn_tile) * (size_t)cpu.n_qt);
        assert_memory_equal(cpu.kt, cuda.kt, sizeof(vla_attn_tile) * (size_t)cpu.n_kt);
        assert_memory_equal(cpu.q_order, cuda.q_order, sizeof(int32_t) * (size_t)cpu.n_qt);
        assert_memory_equal(cpu.k_order, cuda.k_order, sizeof(int32_t) * (size_t)cpu.n_kt);
        assert_memory_equal(cpu.q_first, cuda.q_first, sizeof(int32_t) * (size_t)(q.n_seg + 1));
        if (q.group) assert_memory_equal(cpu.fold_group, cuda.fold_group, sizeof(int32_t) * (size_t)cpu.nq);
        /* folded tiles cover the tokens of the per-head ones: same counts */
        vla_attn_stats a, b;
        vla_attn_plan_stats(&cpu, &a);
        vla_attn_plan_stats(&unfolded, &b);
        assert_memory_equal(&a, &b, sizeof a);
        assert_true(cpu.pairs_computed == unfolded.pairs_computed && cpu.n_qt == unfolded.n_qt);
        int32_t t = vla_attn_default_tile(cfg.head_dim);
        assert_true(dflt.bq == t * H && dflt.bk == t);
        vla_attn_plan_free(&cpu), vla_attn_plan_free(&cuda), vla_attn_plan_free(&unfolded), vla_attn_plan_free(&dflt);
        free(q.group), free(k.group);
    }
}

/* the split dK/dV's parts cover every walk item once, in order; the split count follows the shapes */
static void test_kv_splits(void **state) {
    (void)state;
    for (int64_t n = 0; n < 40; n++)
        for (int32_t S = 1; S <= VLA_ATTN_MAX_SPLITS + 3; S++) {
            int64_t next = 0;
            for (int32_t s = 0; s < S; s++) {
                int64_t lo, hi;
                vla_attn_split_range(n, S, s, &lo, &hi);
                assert_int_equal(lo, next);
                assert_true(hi >= lo && hi - lo <= n / S + 1);
                next = hi;
            }
            assert_int_equal(next, n);
        }
    assert_int_equal(vla_attn_walk_splits(600, 1000, 528), 1); /* the grid fills the device already */
    assert_int_equal(vla_attn_walk_splits(80, 152, 528), 7);   /* pi05 (one KV head, d 256): 40 k-tiles x 2 halves */
    assert_int_equal(vla_attn_walk_splits(1, 1000, 528), VLA_ATTN_MAX_SPLITS);
    assert_int_equal(vla_attn_walk_splits(1, 6, 528), 3);      /* at least two items per part */
    assert_int_equal(vla_attn_walk_splits(1, 3, 528), 1);      /* too short a walk to cut */
    assert_int_equal(vla_attn_walk_splits(0, 100, 528), 1);
}

/* plan keys: equal exactly when everything a plan is made from is equal */
static int64_t key_of(const vla_attn_config *cfg, int32_t bq, const vla_attn_seqs *q, const vla_attn_seqs *k,
                      int32_t *out) {
    const vla_attn_seqs *ks[1] = {k};
    return vla_attn_plan_key(cfg, bq, 16, VLA_ATTN_FOLD_ROWS, q, 1, ks, out);
}

static int destroyed_payloads;
static void destroy_payload(void *p) { destroyed_payloads++, free(p); }

static void test_plan_key_and_cache(void **state) {
    (void)state;
    int32_t cu[3] = {0, 5, 9}, cu2[3] = {0, 5, 9}, cu3[3] = {0, 4, 9};
    int32_t g[9] = {0, 0, 1, 1, 1, 0, 1, 1, 1}, g2[9] = {0, 0, 1, 1, 1, 0, 1, 1, 1}, g3[9] = {0, 0, 1, 1, 1, 0, 1, 1, 2};
    int32_t z[9] = {0};
    vla_attn_config cfg = {.n_heads = 8, .n_kv_heads = 1, .head_dim = 64};
    vla_attn_seqs a = {2, cu, g}, b = {2, cu2, g2};
    int32_t ka[64], kb[64], kc[64];
    int64_t na = key_of(&cfg, 32, &a, &a, NULL);
    assert_true(na <= 64);
    assert_int_equal(key_of(&cfg, 32, &a, &a, ka), na);
    assert_int_equal(key_of(&cfg, 32, &b, &b, kb), na); /* the same contents in other arrays */
    assert_memory_equal(ka, kb, sizeof(int32_t) * (size_t)na);
    /* each input changes the key */
    vla_attn_seqs c3 = {2, cu3, g}, g3s = {2, cu, g3}, nog = {2, cu, NULL}, zg = {2, cu, z};
    const vla_attn_seqs *variants[] = {&c3, &g3s, &nog, &zg};
    for (int v = 0; v < 4; v++) {
        int64_t n = key_of(&cfg, 32, variants[v], &a, kc);
        assert_true(n != na || memcmp(ka, kc, sizeof(int32_t) * (size_t)na) != 0);
        n = key_of(&cfg, 32, &a, variants[v], kc);
        assert_true(n != na || memcmp(ka, kc, sizeof(int32_t) * (size_t)na) != 0);
    }
    int64_t n = key_of(&cfg, 64, &a, &a, kc); /* another tile */
    assert_true(n == na && memcmp(ka, kc, sizeof(int32_t) * (size_t)na) != 0);
    vla_attn_config cfg2 = cfg;
    cfg2.n_kv_heads = 2;
    key_of(&cfg2, 32, &a, &a, kc);
    assert_true(memcmp(ka, kc, sizeof(int32_t) * (size_t)na) != 0);
    cfg2 = cfg, cfg2.scale = 0.5f;
    key_of(&cfg2, 32, &a, &a, kc);
    assert_true(memcmp(ka, kc, sizeof(int32_t) * (size_t)na) != 0);

    /* the cache: hits by contents, least recently used evicted (and destroyed), everything freed */
    destroyed_payloads = 0;
    vla_key_cache *c = vla_key_cache_new(3, destroy_payload);
    assert_non_null(c);
    int32_t ck[5][2] = {{1, 2}, {1, 3}, {2, 2}, {7, 7}, {1, 2}};
    for (int i = 0; i < 3; i++) assert_true(vla_key_cache_put(c, ck[i], 2 * sizeof(int32_t), malloc(1)));
    assert_int_equal(vla_key_cache_count(c), 3);
    assert_non_null(vla_key_cache_get(c, ck[4], 2 * sizeof(int32_t))); /* {1, 2} by contents: now the most recent */
    assert_null(vla_key_cache_get(c, ck[3], 2 * sizeof(int32_t)));
    assert_null(vla_key_cache_get(c, ck[0], 1 * sizeof(int32_t))); /* a prefix is another key */
    assert_true(vla_key_cache_put(c, ck[3], 2 * sizeof(int32_t), malloc(1))); /* full: {1, 3} goes */
    assert_int_equal(destroyed_payloads, 1);
    assert_null(vla_key_cache_get(c, ck[1], 2 * sizeof(int32_t)));
    assert_non_null(vla_key_cache_get(c, ck[0], 2 * sizeof(int32_t)));
    assert_non_null(vla_key_cache_get(c, ck[2], 2 * sizeof(int32_t)));
    assert_non_null(vla_key_cache_get(c, ck[3], 2 * sizeof(int32_t)));
    vla_key_cache_free(c);
    assert_int_equal(destroyed_payloads, 4);
}

static void test_errors(void **state) {
    (void)state;
    int32_t cu[3] = {0, 4, 9}, bad[3] = {0, 5, 3};
    vla_attn_seqs s = {2, cu, NULL}, sb = {2, bad, NULL}, s1 = {1, cu, NULL};
    const vla_attn_seqs *ks[1] = {&s};
    vla_attn_plan p;
    vla_attn_config c = {.n_heads = 3, .n_kv_heads = 2, .head_dim = 8};
    assert_int_equal(vla_attn_plan_make(&p, &c, 16, 16, VLA_ATTN_FOLD_ROWS, &s, 1, ks), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "multiple"));
    c.n_heads = 4;
    const vla_attn_seqs *kb[1] = {&sb};
    assert_int_equal(vla_attn_plan_make(&p, &c, 16, 16, VLA_ATTN_FOLD_ROWS, &s, 1, kb), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "decreases"));
    const vla_attn_seqs *k1[1] = {&s1};
    assert_int_equal(vla_attn_plan_make(&p, &c, 16, 16, VLA_ATTN_FOLD_ROWS, &s, 1, k1), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "samples"));
    assert_int_equal(vla_attn_plan_make(&p, &c, 16, 16, VLA_ATTN_FOLD_ROWS, &s, 1, ks), VLA_OK);
    assert_true(fabsf(p.scale - 1.0f / sqrtf(8.0f)) < 1e-7f);
    vla_attn_plan_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_plans),
        cmocka_unit_test(test_fold_one_plan),
        cmocka_unit_test(test_kv_splits),
        cmocka_unit_test(test_plan_key_and_cache),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
