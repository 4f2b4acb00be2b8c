/* test_nn_attention.c — the tiled (flash) attention against the dense
 * materialised-mask reference and PyTorch goldens, forward and backward:
 * random ragged packs with bidirectional, causal, prefix-LM and general
 * block masks; MHA, GQA and MQA; odd tile sizes; cross-attention; a pack of
 * 3 samples equal to the 3 samples run alone; the KV-cache entry point;
 * tile skipping counts; thread-count independence; MQA's folded heads equal
 * to one tile per head; finite differences. */
#include <omp.h>

#include "nn/attention.h"
#include "nn/attention_dense.h"
#include "nn_test.h"
#include "tensor/ops.h"
#include "tensor/cpu/parallel.h"

#define RTOL 2e-4
#define ATOL 2e-5

enum { MASK_BIDIR, MASK_CAUSAL, MASK_PREFIX, MASK_BLOCKS, MASK_KINDS };
static const char *mask_names[MASK_KINDS] = {"bidirectional", "causal", "prefix-LM", "blocks"};

#define MAX_SEG 16

typedef struct {
    int32_t n_seg, n;
    int32_t cu[MAX_SEG + 1];
    int32_t *group; /* NULL for bidirectional packs half of the time */
} pack;

/* A ragged pack of n_seg samples with lengths in [minlen, maxlen]. */
static void make_pack(pack *p, vla_rng *r, int32_t n_seg, int32_t minlen, int32_t maxlen, int kind) {
    p->n_seg = n_seg;
    p->cu[0] = 0;
    for (int32_t s = 0; s < n_seg; s++) p->cu[s + 1] = p->cu[s] + (int32_t)vla_rng_int(r, minlen, maxlen + 1);
    p->n = p->cu[n_seg];
    p->group = (int32_t *)nn_alloc((size_t)p->n * sizeof(int32_t));
    for (int32_t s = 0; s < n_seg; s++) {
        int32_t len = p->cu[s + 1] - p->cu[s], prefix = (int32_t)vla_rng_int(r, 1, len + 1), g = 0;
        for (int32_t i = 0; i < len; i++) {
            int32_t *gi = &p->group[p->cu[s] + i];
            switch (kind) {
            case MASK_CAUSAL: *gi = i; break;
            case MASK_PREFIX: *gi = i >= prefix; break;
            case MASK_BLOCKS: /* openpi: group = cumsum(ar) with random ar */
                if (i > 0 && vla_rng_uniform(r) < 0.2f) g++;
                *gi = g;
                break;
            default: *gi = 0;
            }
        }
    }
    if (kind == MASK_BIDIR && vla_rng_uniform(r) < 0.5f) p->group = NULL;
}

static vla_attn_seqs seqs_of(const pack *p) { return (vla_attn_seqs){p->n_seg, p->cu, p->group}; }

/* Runs tiled and dense forward + backward on random data; checks they agree. */
static void compare_tiled_dense(const vla_attn_config *cfg, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                uint64_t seed, const char *what) {
    const vla_ops *ops = test_cpu_backend();
    int64_t nq = qs->cu_seqlens[qs->n_seg], nk = ks->cu_seqlens[ks->n_seg];
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, d = cfg->head_dim;
    float *q = frandn(nq * H * d, seed, 1.0), *k = frandn(nk * Hkv * d, seed + 1, 1.0);
    float *v = frandn(nk * Hkv * d, seed + 2, 1.0), *dy = frandn(nq * H * d, seed + 3, 1.0);
    float *o1 = fzeros(nq * H * d), *lse = fzeros(nq * H), *o2 = fzeros(nq * H * d);
    float *probs = fzeros(vla_attention_dense_probs_floats(cfg, qs, ks));
    vla_attn_stats st;
    assert_int_equal(vla_attention_forward(ops, cfg, o1, lse, q, k, v, qs, ks, &st), VLA_OK);
    assert_int_equal(vla_attention_dense_forward(ops, cfg, o2, probs, q, k, v, qs, ks), VLA_OK);
    char msg[160];
    snprintf(msg, sizeof msg, "%s: out", what);
    check_close(msg, o1, o2, nq * H * d, RTOL, ATOL);
    float *dq1 = fzeros(nq * H * d), *dk1 = fzeros(nk * Hkv * d), *dv1 = fzeros(nk * Hkv * d);
    float *dq2 = fzeros(nq * H * d), *dk2 = fzeros(nk * Hkv * d), *dv2 = fzeros(nk * Hkv * d);
    assert_int_equal(vla_attention_backward(ops, cfg, dq1, dk1, dv1, dy, q, k, v, o1, lse, qs, ks, NULL), VLA_OK);
    assert_int_equal(vla_attention_dense_backward(ops, cfg, dq2, dk2, dv2, dy, q, k, v, probs, qs, ks), VLA_OK);
    snprintf(msg, sizeof msg, "%s: dq", what);
    check_close(msg, dq1, dq2, nq * H * d, RTOL, ATOL);
    snprintf(msg, sizeof msg, "%s: dk", what);
    check_close(msg, dk1, dk2, nk * Hkv * d, RTOL, ATOL);
    snprintf(msg, sizeof msg, "%s: dv", what);
    check_close(msg, dv1, dv2, nk * Hkv * d, RTOL, ATOL);
}

static void test_tiled_matches_dense(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(2024, 1);
    const int32_t heads[3][2] = {{4, 4}, {4, 2}, {6, 1}}; /* MHA, GQA, MQA */
    const int32_t tiles[4][2] = {{8, 8}, {16, 8}, {5, 7}, {0, 0}};
    int trial = 0;
    for (int kind = 0; kind < MASK_KINDS; kind++)
        for (int hi = 0; hi < 3; hi++)
            for (int ti = 0; ti < 4; ti++) {
                pack p;
                make_pack(&p, &r, (int32_t)vla_rng_int(&r, 1, 6), 1, 70, kind);
                vla_attn_config cfg = {.n_heads = heads[hi][0], .n_kv_heads = heads[hi][1],
                                       .head_dim = ti % 2 ? 16 : 8, .tile_q = tiles[ti][0], .tile_k = tiles[ti][1],
                                       .bwd_mode = (vla_attn_bwd_mode)(trial % 3)};
                vla_attn_seqs s = seqs_of(&p);
                char what[128];
                snprintf(what, sizeof what, "%s, %d/%d heads, tiles %dx%d, bwd mode %d, %d samples, %d tokens",
                         mask_names[kind], cfg.n_heads, cfg.n_kv_heads, cfg.tile_q, cfg.tile_k, (int)cfg.bwd_mode,
                         p.n_seg, p.n);
                compare_tiled_dense(&cfg, &s, &s, 100 + trial++, what);
            }
    nn_free_all();
}

static void test_cross_attention(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(2024, 2);
    for (int trial = 0; trial < 10; trial++) {
        pack pq, pk;
        int32_t n_seg = (int32_t)vla_rng_int(&r, 1, 5);
        make_pack(&pq, &r, n_seg, 0, 40, MASK_BIDIR); /* empty samples on either side too */
        make_pack(&pk, &r, n_seg, 0, 60, MASK_BIDIR);
        vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = trial % 2 ? 1 : 2, .head_dim = 8,
                               .tile_q = trial < 3 ? 8 : 0, .tile_k = trial < 3 ? 16 : 0,
                               .bwd_mode = (vla_attn_bwd_mode)(trial % 3)};
        vla_attn_seqs qs = seqs_of(&pq), ks = seqs_of(&pk);
        compare_tiled_dense(&cfg, &qs, &ks, 500 + trial, "cross-attention");
    }
    /* a query whose group is below every key's sees nothing: output 0, zero gradients */
    int32_t cuq[2] = {0, 3}, cuk[2] = {0, 4}, gq[3] = {0, 1, 2}, gk[4] = {1, 1, 2, 2};
    vla_attn_seqs qs = {1, cuq, gq}, ks = {1, cuk, gk};
    vla_attn_config cfg = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .tile_q = 2, .tile_k = 2};
    compare_tiled_dense(&cfg, &qs, &ks, 600, "fully masked query row");
    nn_free_all();
}

/* PyTorch goldens: eager attention with a materialised mask over a ragged pack. */
static void check_golden(const char *file, int32_t H, int32_t Hkv, bool cross, int32_t tile, vla_attn_bwd_mode mode) {
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load(file);
    int32_t d = 8;
    int32_t *cuq = golden_i32(g, cross ? "cu_q" : "cu", 4), *cuk = cross ? golden_i32(g, "cu_k", 4) : cuq;
    int32_t *group = cross ? NULL : golden_i32(g, "group", cuq[3]);
    vla_attn_seqs qs = {3, cuq, group}, ks = {3, cuk, group};
    int64_t nq = cuq[3], nk = cuk[3];
    float *q = golden_f32(g, "q", nq * H * d), *k = golden_f32(g, "k", nk * Hkv * d), *v = golden_f32(g, "v", nk * Hkv * d);
    float *dy = golden_f32(g, "dy", nq * H * d);
    vla_attn_config cfg = {.n_heads = H, .n_kv_heads = Hkv, .head_dim = d, .tile_q = tile, .tile_k = tile,
                           .bwd_mode = mode};
    float *o = fzeros(nq * H * d), *lse = fzeros(nq * H), *o2 = fzeros(nq * H * d);
    float *probs = fzeros(vla_attention_dense_probs_floats(&cfg, &qs, &ks));
    assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &qs, &ks, NULL), VLA_OK);
    assert_int_equal(vla_attention_dense_forward(ops, &cfg, o2, probs, q, k, v, &qs, &ks), VLA_OK);
    check_close(file, o, golden_f32(g, "y", -1), nq * H * d, RTOL, ATOL);
    check_close(file, o2, golden_f32(g, "y", -1), nq * H * d, RTOL, ATOL);
    float *dq = fzeros(nq * H * d), *dk = fzeros(nk * Hkv * d), *dv = fzeros(nk * Hkv * d);
    assert_int_equal(vla_attention_backward(ops, &cfg, dq, dk, dv, dy, q, k, v, o, lse, &qs, &ks, NULL), VLA_OK);
    check_close("golden dq", dq, golden_f32(g, "dq", -1), nq * H * d, RTOL, ATOL);
    check_close("golden dk", dk, golden_f32(g, "dk", -1), nk * Hkv * d, RTOL, ATOL);
    check_close("golden dv", dv, golden_f32(g, "dv", -1), nk * Hkv * d, RTOL, ATOL);
    float *dq2 = fzeros(nq * H * d), *dk2 = fzeros(nk * Hkv * d), *dv2 = fzeros(nk * Hkv * d);
    assert_int_equal(vla_attention_dense_backward(ops, &cfg, dq2, dk2, dv2, dy, q, k, v, probs, &qs, &ks), VLA_OK);
    check_close("golden dense dq", dq2, golden_f32(g, "dq", -1), nq * H * d, RTOL, ATOL);
    check_close("golden dense dk", dk2, golden_f32(g, "dk", -1), nk * Hkv * d, RTOL, ATOL);
    check_close("golden dense dv", dv2, golden_f32(g, "dv", -1), nk * Hkv * d, RTOL, ATOL);
    golden_free(g);
}

static void test_goldens(void **state) {
    (void)state;
    for (int32_t tile = 4; tile <= 64; tile *= 4)
        for (int m = VLA_ATTN_BWD_FUSED; m <= VLA_ATTN_BWD_TWO_PASS; m++) {
            check_golden("attention_bidir", 4, 2, false, tile, (vla_attn_bwd_mode)m);
            check_golden("attention_causal", 4, 2, false, tile, (vla_attn_bwd_mode)m);
            check_golden("attention_prefix", 4, 2, false, tile, (vla_attn_bwd_mode)m);
            check_golden("attention_cross", 4, 1, true, tile, (vla_attn_bwd_mode)m);
        }
}

/* A pack of 3 samples gives the outputs and gradients of the 3 run alone. */
static void test_pack_equals_singles(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    vla_rng r = vla_rng_stream(2024, 3);
    for (int kind = 0; kind < MASK_KINDS; kind++) {
        pack p;
        make_pack(&p, &r, 3, 10, 60, kind);
        vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .tile_q = 16, .tile_k = 8};
        int64_t H = 4, Hkv = 2, d = 8, n = p.n;
        float *q = frandn(n * H * d, 700 + kind, 1.0), *k = frandn(n * Hkv * d, 710 + kind, 1.0);
        float *v = frandn(n * Hkv * d, 720 + kind, 1.0), *dy = frandn(n * H * d, 730 + kind, 1.0);
        float *o = fzeros(n * H * d), *lse = fzeros(n * H);
        float *dq = fzeros(n * H * d), *dk = fzeros(n * Hkv * d), *dv = fzeros(n * Hkv * d);
        vla_attn_seqs s = seqs_of(&p);
        assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &s, &s, NULL), VLA_OK);
        assert_int_equal(vla_attention_backward(ops, &cfg, dq, dk, dv, dy, q, k, v, o, lse, &s, &s, NULL), VLA_OK);
        for (int32_t seg = 0; seg < 3; seg++) {
            int64_t a = p.cu[seg], len = p.cu[seg + 1] - a;
            int32_t cu1[2] = {0, (int32_t)len};
            vla_attn_seqs s1 = {1, cu1, p.group ? p.group + a : NULL};
            float *o1 = fzeros(len * H * d), *l1 = fzeros(len * H);
            float *dq1 = fzeros(len * H * d), *dk1 = fzeros(len * Hkv * d), *dv1 = fzeros(len * Hkv * d);
            const float *qa = q + a * H * d, *ka = k + a * Hkv * d, *va = v + a * Hkv * d, *dya = dy + a * H * d;
            assert_int_equal(vla_attention_forward(ops, &cfg, o1, l1, qa, ka, va, &s1, &s1, NULL), VLA_OK);
            assert_int_equal(
                vla_attention_backward(ops, &cfg, dq1, dk1, dv1, dya, qa, ka, va, o1, l1, &s1, &s1, NULL), VLA_OK);
            check_close("pack vs single: out", o + a * H * d, o1, len * H * d, 1e-6, 1e-7);
            check_close("pack vs single: dq", dq + a * H * d, dq1, len * H * d, 1e-6, 1e-7);
            check_close("pack vs single: dk", dk + a * Hkv * d, dk1, len * Hkv * d, 1e-6, 1e-7);
            check_close("pack vs single: dv", dv + a * Hkv * d, dv1, len * Hkv * d, 1e-6, 1e-7);
        }
    }
    nn_free_all();
}

/* Prefix-LM packs skip tiles: prefix queries never see suffix keys, and no
 * tile crosses samples; bidirectional computes every in-sample tile. */
static void test_tile_skipping(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    int32_t lens[3] = {96, 80, 128}, prefix[3] = {64, 40, 100};
    int32_t cu[4] = {0, 96, 176, 304}, n = 304;
    int32_t *grp = (int32_t *)nn_alloc((size_t)n * sizeof(int32_t));
    for (int s = 0; s < 3; s++)
        for (int32_t i = 0; i < lens[s]; i++) grp[cu[s] + i] = i >= prefix[s];
    vla_attn_config cfg = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 8, .tile_q = 16, .tile_k = 16};
    float *q = frandn(n * 2 * 8, 801, 1.0), *k = frandn(n * 8, 802, 1.0), *v = frandn(n * 8, 803, 1.0);
    float *o = fzeros(n * 16), *lse = fzeros(n * 2);
    vla_attn_seqs s = {3, cu, grp};
    vla_attn_stats st;
    assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &s, &s, &st), VLA_OK);
    /* by hand: sample 0 has 6×6 tiles, prefix q-tiles 0..3 skip k-tiles 4..5 → 8 skipped;
     * sample 1: 5×5, prefix rows 0..39 (q-tiles 0,1 fully prefix), k-tiles 3,4 fully suffix → 4;
     * sample 2: 8×8, q-tiles 0..5 fully prefix (rows < 96), k-tiles 7 (112..127) fully suffix → 6 */
    int64_t total = (36 + 25 + 64) * 2, skipped = (8 + 4 + 6) * 2;
    assert_int_equal(st.tiles_total, total);
    assert_int_equal(st.tiles_computed, total - skipped);
    assert_true(st.tiles_computed < st.tiles_total);
    /* the whole pack as one dense grid would be 19×19 tiles per head */
    assert_true(st.tiles_total < 19 * 19 * 2);
    vla_attn_stats st2;
    s.group = NULL;
    assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &s, &s, &st2), VLA_OK);
    assert_int_equal(st2.tiles_computed, total);
    assert_int_equal(st2.tiles_unmasked, total);
    /* causal: a single 64-token sample with 16-token tiles computes 10 of 16 tiles, 4 of them masked per element */
    int32_t cu1[2] = {0, 64}, pos[64];
    for (int i = 0; i < 64; i++) pos[i] = i;
    vla_attn_seqs c = {1, cu1, pos};
    assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &c, &c, &st2), VLA_OK);
    assert_int_equal(st2.tiles_total, 16 * 2);
    assert_int_equal(st2.tiles_computed, 10 * 2);
    assert_int_equal(st2.tiles_unmasked, 6 * 2);
    nn_free_all();
}

/* The KV-cache entry (queries = action tokens; keys = cached prefix ‖ new
 * suffix) equals the suffix rows of the full prefix-LM forward. */
static void test_kv_cache(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    int32_t pre[3] = {23, 41, 9}, suf[3] = {10, 10, 10};
    int32_t cu[4], cuc[4], cun[4];
    cu[0] = cuc[0] = cun[0] = 0;
    for (int s = 0; s < 3; s++) {
        cu[s + 1] = cu[s] + pre[s] + suf[s];
        cuc[s + 1] = cuc[s] + pre[s];
        cun[s + 1] = cun[s] + suf[s];
    }
    int64_t n = cu[3], np = cuc[3], ns = cun[3], H = 4, Hkv = 1, d = 16;
    int32_t *grp = (int32_t *)nn_alloc((size_t)n * 4), *gc = (int32_t *)nn_alloc((size_t)np * 4);
    int32_t *gn = (int32_t *)nn_alloc((size_t)ns * 4);
    float *q = frandn(n * H * d, 901, 1.0), *k = frandn(n * Hkv * d, 902, 1.0), *v = frandn(n * Hkv * d, 903, 1.0);
    float *qn = fzeros(ns * H * d), *kc = fzeros(np * Hkv * d), *vc = fzeros(np * Hkv * d);
    float *kn = fzeros(ns * Hkv * d), *vn = fzeros(ns * Hkv * d);
    for (int s = 0; s < 3; s++)
        for (int32_t i = 0; i < pre[s] + suf[s]; i++) {
            int64_t t = cu[s] + i;
            bool is_suf = i >= pre[s];
            grp[t] = is_suf;
            int64_t u = is_suf ? cun[s] + i - pre[s] : cuc[s] + i;
            if (is_suf) {
                gn[u] = 1;
                memcpy(qn + u * H * d, q + t * H * d, (size_t)(H * d) * 4);
            } else {
                gc[u] = 0;
            }
            memcpy((is_suf ? kn : kc) + u * Hkv * d, k + t * Hkv * d, (size_t)(Hkv * d) * 4);
            memcpy((is_suf ? vn : vc) + u * Hkv * d, v + t * Hkv * d, (size_t)(Hkv * d) * 4);
        }
    vla_attn_config cfg = {.n_heads = (int32_t)H, .n_kv_heads = (int32_t)Hkv, .head_dim = (int32_t)d, .tile_q = 8,
                           .tile_k = 16};
    float *o = fzeros(n * H * d), *lse = fzeros(n * H), *on = fzeros(ns * H * d), *lsen = fzeros(ns * H);
    vla_attn_seqs full = {3, cu, grp}, qs = {3, cun, gn}, cs = {3, cuc, gc}, nsq = {3, cun, gn};
    assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &full, &full, NULL), VLA_OK);
    assert_int_equal(vla_attention_forward_cached(ops, &cfg, on, lsen, qn, &qs, kc, vc, &cs, kn, vn, &nsq, NULL), VLA_OK);
    for (int s = 0; s < 3; s++)
        check_close("kv cache", on + (int64_t)cun[s] * H * d, o + (int64_t)(cu[s] + pre[s]) * H * d, suf[s] * H * d,
                    RTOL, ATOL);
    /* without an LSE (no backward follows): the same outputs */
    float *on2 = fzeros(ns * H * d);
    assert_int_equal(vla_attention_forward_cached(ops, &cfg, on2, NULL, qn, &qs, kc, vc, &cs, kn, vn, &nsq, NULL), VLA_OK);
    check_close("kv cache without lse", on2, on, ns * H * d, 0, 0);
    int32_t bad[4] = {0, 23, 60, 73};
    vla_attn_seqs badc = {3, bad, NULL};
    badc.n_seg = 2;
    assert_int_equal(vla_attention_forward_cached(ops, &cfg, on, lsen, qn, &qs, kc, vc, &badc, kn, vn, &nsq, NULL),
                     VLA_ERR_INVALID_ARG);
    nn_free_all();
}

/* Results do not depend on the number of threads (no races, fixed order), in both backward modes. */
static void test_thread_independence(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    vla_rng r = vla_rng_stream(2024, 4);
    pack p;
    make_pack(&p, &r, 6, 100, 200, MASK_PREFIX); /* several tiles and work items per thread */
    int64_t H = 4, d = 32, n = p.n;
    vla_attn_seqs s = seqs_of(&p);
    int saved = omp_get_max_threads();
    vla_parallel_always = 1; /* this shape is below the thresholds that keep small problems serial */
    for (int kind = 0; kind < 4; kind++) { /* GQA (2 KV heads) and MQA (1, heads folded into rows) */
        int64_t Hkv = kind < 2 ? 2 : 1;
        int mode = kind % 2 ? VLA_ATTN_BWD_TWO_PASS : VLA_ATTN_BWD_FUSED;
        float *q = frandn(n * H * d, 1001, 1.0), *k = frandn(n * Hkv * d, 1002, 1.0);
        float *v = frandn(n * Hkv * d, 1003, 1.0), *dy = frandn(n * H * d, 1004, 1.0);
        vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = (int32_t)Hkv, .head_dim = 32, .tile_q = 32,
                               .tile_k = 32, .bwd_mode = (vla_attn_bwd_mode)mode};
        float *res[2][5];
        for (int run = 0; run < 2; run++) {
            omp_set_num_threads(run == 0 ? 1 : 3);
            float *o = fzeros(n * H * d), *lse = fzeros(n * H);
            float *dq = fzeros(n * H * d), *dk = fzeros(n * Hkv * d), *dv = fzeros(n * Hkv * d);
            assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &s, &s, NULL), VLA_OK);
            assert_int_equal(vla_attention_backward(ops, &cfg, dq, dk, dv, dy, q, k, v, o, lse, &s, &s, NULL),
                             VLA_OK);
            res[run][0] = o, res[run][1] = lse, res[run][2] = dq, res[run][3] = dk, res[run][4] = dv;
        }
        omp_set_num_threads(saved);
        assert_memory_equal(res[0][0], res[1][0], (size_t)(n * H * d) * 4);
        assert_memory_equal(res[0][1], res[1][1], (size_t)(n * H) * 4);
        assert_memory_equal(res[0][2], res[1][2], (size_t)(n * H * d) * 4);
        assert_memory_equal(res[0][3], res[1][3], (size_t)(n * Hkv * d) * 4);
        assert_memory_equal(res[0][4], res[1][4], (size_t)(n * Hkv * d) * 4);
    }
    vla_parallel_always = 0;
    nn_free_all();
}

/* MQA folding (attention.c): the folded form (a token's heads as rows of one
 * head) and the per-head form agree to rounding, forward and backward, in
 * both backward modes and through the KV-cache entry, for every mask kind
 * and ragged packs whose lengths are not multiples of the tiles; the tile
 * statistics are the per-head form's exactly. */
static void test_mqa_fold(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    vla_rng r = vla_rng_stream(77, 1);
    for (int kind = 0; kind < MASK_KINDS; kind++)
        for (int mode = VLA_ATTN_BWD_FUSED; mode <= VLA_ATTN_BWD_TWO_PASS; mode++) {
            pack p;
            make_pack(&p, &r, 3, 5, 70, kind);
            int64_t H = 4, d = 16, n = p.n;
            vla_attn_seqs s = seqs_of(&p);
            float *q = frandn(n * H * d, 900 + kind, 1.0), *k = frandn(n * d, 910 + kind, 1.0);
            float *v = frandn(n * d, 920 + kind, 1.0), *dy = frandn(n * H * d, 930 + kind, 1.0);
            float *out[2][5];
            vla_attn_stats st[2];
            for (int fold = 0; fold < 2; fold++) {
                vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = 1, .head_dim = 16, .tile_q = 8, .tile_k = 16,
                                       .bwd_mode = (vla_attn_bwd_mode)mode, .no_mqa_fold = !fold};
                float *o = fzeros(n * H * d), *lse = fzeros(n * H);
                float *dq = fzeros(n * H * d), *dk = fzeros(n * d), *dv = fzeros(n * d);
                assert_int_equal(vla_attention_forward(ops, &cfg, o, lse, q, k, v, &s, &s, &st[fold]), VLA_OK);
                assert_int_equal(vla_attention_backward(ops, &cfg, dq, dk, dv, dy, q, k, v, o, lse, &s, &s, NULL),
                                 VLA_OK);
                out[fold][0] = o, out[fold][1] = lse, out[fold][2] = dq, out[fold][3] = dk, out[fold][4] = dv;
            }
            char msg[96];
            const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
            int64_t sizes[5] = {n * H * d, n * H, n * H * d, n * d, n * d};
            for (int i = 0; i < 5; i++) {
                snprintf(msg, sizeof msg, "%s, bwd mode %d: %s folded vs per head", mask_names[kind], mode, names[i]);
                check_close(msg, out[1][i], out[0][i], sizes[i], 1e-5, 1e-6);
            }
            assert_int_equal(st[1].tiles_total, st[0].tiles_total);
            assert_int_equal(st[1].tiles_computed, st[0].tiles_computed);
            assert_int_equal(st[1].tiles_unmasked, st[0].tiles_unmasked);
        }
    /* the KV-cache entry: 3 samples, cached prefixes of 20/33/9 rows (group 0), 5 new action rows each (group 1) */
    int32_t ccu[4] = {0, 20, 53, 62}, ncu[4] = {0, 5, 10, 15}, ng[15], cg[62] = {0};
    for (int i = 0; i < 15; i++) ng[i] = 1;
    vla_attn_seqs cs = {3, ccu, cg}, ns = {3, ncu, ng};
    float *q = frandn(15 * 4 * 16, 950, 1.0), *kc = frandn(62 * 16, 951, 1.0), *vc = frandn(62 * 16, 952, 1.0);
    float *kn = frandn(15 * 16, 953, 1.0), *vn = frandn(15 * 16, 954, 1.0), *o[2];
    for (int fold = 0; fold < 2; fold++) {
        vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = 1, .head_dim = 16, .no_mqa_fold = !fold};
        o[fold] = fzeros(15 * 4 * 16);
        float *lse = fzeros(15 * 4);
        assert_int_equal(vla_attention_forward_cached(ops, &cfg, o[fold], lse, q, &ns, kc, vc, &cs, kn, vn, &ns, NULL),
                         VLA_OK);
    }
    check_close("KV-cache entry: folded vs per head", o[1], o[0], 15 * 4 * 16, 1e-5, 1e-6);
    nn_free_all();
}

/* Finite differences through the tiled kernel (prefix-LM, GQA). */
typedef struct {
    const vla_attn_config *cfg;
    float *q, *k, *v, *o, *lse;
    const float *dy;
    const vla_attn_seqs *s;
    int64_t no;
} fd_attn_ctx;

static double attn_loss(void *p) {
    fd_attn_ctx *c = p;
    assert_int_equal(vla_attention_forward(test_cpu_backend(), c->cfg, c->o, c->lse, c->q, c->k, c->v, c->s, c->s, NULL),
                     VLA_OK);
    return dot_f32(c->o, c->dy, c->no);
}

static void test_finite_differences(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    vla_rng r = vla_rng_stream(2024, 5);
    pack p;
    make_pack(&p, &r, 3, 5, 25, MASK_PREFIX);
    vla_attn_config cfg = {.n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .tile_q = 8, .tile_k = 8};
    int64_t H = 4, Hkv = 2, d = 8, n = p.n;
    float *q = frandn(n * H * d, 1101, 1.0), *k = frandn(n * Hkv * d, 1102, 1.0), *v = frandn(n * Hkv * d, 1103, 1.0);
    float *dy = frandn(n * H * d, 1104, 1.0), *o = fzeros(n * H * d), *lse = fzeros(n * H);
    vla_attn_seqs s = seqs_of(&p);
    for (int mode = VLA_ATTN_BWD_FUSED; mode <= VLA_ATTN_BWD_TWO_PASS; mode++) {
        cfg.bwd_mode = (vla_attn_bwd_mode)mode;
        float *dq = fzeros(n * H * d), *dk = fzeros(n * Hkv * d), *dv = fzeros(n * Hkv * d);
        fd_attn_ctx c = {&cfg, q, k, v, o, lse, dy, &s, n * H * d};
        attn_loss(&c);
        assert_int_equal(vla_attention_backward(ops, &cfg, dq, dk, dv, dy, q, k, v, o, lse, &s, &s, NULL), VLA_OK);
        double sc = abs_dot(o, dy, n * H * d);
        fd_check("attention q", attn_loss, &c, q, dq, n * H * d, 1201 + mode, 1e-2, 1e-2, sc);
        fd_check("attention k", attn_loss, &c, k, dk, n * Hkv * d, 1203 + mode, 1e-2, 1e-2, sc);
        fd_check("attention v", attn_loss, &c, v, dv, n * Hkv * d, 1205 + mode, 1e-2, 1e-2, sc);
    }
    nn_free_all();
}

static void test_bad_arguments(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    float buf[64] = {0}, lse[8];
    int32_t cu[3] = {0, 2, 1};
    vla_attn_seqs s = {2, cu, NULL};
    vla_attn_config cfg = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
    assert_int_equal(vla_attention_forward(ops, &cfg, buf, lse, buf, buf, buf, &s, &s, NULL), VLA_ERR_INVALID_ARG);
    int32_t cu2[3] = {0, 1, 2};
    vla_attn_seqs s2 = {2, cu2, NULL};
    vla_attn_config bad = {.n_heads = 3, .n_kv_heads = 2, .head_dim = 4};
    assert_int_equal(vla_attention_forward(ops, &bad, buf, lse, buf, buf, buf, &s2, &s2, NULL), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_attention_dense_forward(ops, &bad, buf, buf, buf, buf, buf, &s2, &s2), VLA_ERR_INVALID_ARG);
    int32_t cu3[2] = {0, 2};
    vla_attn_seqs s3 = {1, cu3, NULL};
    assert_int_equal(vla_attention_forward(ops, &cfg, buf, lse, buf, buf, buf, &s2, &s3, NULL), VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiled_matches_dense), cmocka_unit_test(test_cross_attention),
        cmocka_unit_test(test_goldens),             cmocka_unit_test(test_pack_equals_singles),
        cmocka_unit_test(test_tile_skipping),       cmocka_unit_test(test_kv_cache),
        cmocka_unit_test(test_thread_independence), cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_bad_arguments),       cmocka_unit_test(test_mqa_fold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
