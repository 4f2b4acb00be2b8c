/* bench_attention.c — `vla bench attention`: the fused π0.5 prefix-LM
 * attention (nn/attention.h: tiled, online softmax, the mask never
 * materialised, packed samples) against the dense-mask attention a PyTorch
 * port runs (tools/bench_torch_attention.py: padded batch, 4-D mask,
 * repeat_kv, eager softmax), forward + backward, in the same run and at the
 * same thread count. The recipe's figure for this lever is +165% (2.65×).
 *
 * Two cases at π0.5's attention shape (Gemma 2B: 8 heads, 1 KV head, head
 * dim 256): "pi05" — every sample 3 cameras × 256 image tokens + 200 text
 * tokens of prefix and 50 action tokens of suffix; "pi05_packed" — samples
 * of 1–3 cameras and 48–200 text tokens, packed end to end by vla.c and
 * padded to the longest for the peer (the padding fraction is printed).
 *
 * --device=NAME (a backend whose memory is not the host's, e.g. cuda) times
 * the same two cases on that device, against the same attention computed
 * there the dense way through the op table (samples padded to the longest,
 * an additive mask per sample, QKᵀ and P·V as batched GEMMs over heads,
 * row softmax and its backward): "vs_dense" is the dense time over the
 * fused one, both on the device, forward + backward; --precision picks the
 * fused kernels' operand precision. */
#include "bench/bench.h"
#include "cli/cli.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "nn/attention.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#define HEADS 8
#define KV_HEADS 1
#define HEAD_DIM 256
#define ACTIONS 50

typedef struct {
    const char *name;
    int n;                 /* samples */
    int cameras[8], text[8];
} attn_case;

static const attn_case cases[] = {
    {"pi05", 4, {3, 3, 3, 3}, {200, 200, 200, 200}},
    {"pi05_packed", 4, {3, 1, 2, 1}, {200, 48, 120, 64}},
};

typedef struct {
    int32_t cu[9], *group;
    int64_t T;
    float *q, *k, *v, *out, *lse, *dq, *dk, *dv, *dout;
} attn_data;

static void data_free(attn_data *d) {
    free(d->group), free(d->q), free(d->k), free(d->v), free(d->out), free(d->lse);
    free(d->dq), free(d->dk), free(d->dv), free(d->dout);
}

static float *randn(int64_t n, vla_rng *r, float s) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; x && i < n; i++) x[i] = s * (float)vla_rng_normal(r);
    return x;
}

static vla_status data_make(const attn_case *c, bool quick, attn_data *d) {
    memset(d, 0, sizeof *d);
    d->cu[0] = 0;
    for (int s = 0; s < c->n; s++) {
        int prefix = (quick ? 64 : 256) * c->cameras[s] + c->text[s];
        d->cu[s + 1] = d->cu[s] + prefix + ACTIONS;
    }
    d->T = d->cu[c->n];
    d->group = malloc((size_t)d->T * sizeof *d->group);
    if (!d->group) return vla_error(VLA_ERR_NOMEM, "bench attention: out of memory");
    for (int s = 0; s < c->n; s++)
        for (int32_t t = d->cu[s]; t < d->cu[s + 1]; t++) d->group[t] = t >= d->cu[s + 1] - ACTIONS; /* prefix 0, suffix 1 */
    vla_rng r = vla_rng_stream(7, 0);
    int64_t nq = d->T * HEADS * HEAD_DIM, nk = d->T * KV_HEADS * HEAD_DIM;
    d->q = randn(nq, &r, 0.5f), d->k = randn(nk, &r, 0.5f), d->v = randn(nk, &r, 1.0f), d->dout = randn(nq, &r, 1.0f);
    d->out = malloc((size_t)nq * sizeof(float)), d->lse = malloc((size_t)(d->T * HEADS) * sizeof(float));
    d->dq = calloc((size_t)nq, sizeof(float)), d->dk = calloc((size_t)nk, sizeof(float));
    d->dv = calloc((size_t)nk, sizeof(float));
    if (!d->q || !d->k || !d->v || !d->dout || !d->out || !d->lse || !d->dq || !d->dk || !d->dv)
        return vla_error(VLA_ERR_NOMEM, "bench attention: out of memory");
    return VLA_OK;
}

/* ---- on a device: the fused op against the dense computation, both through the op table ---- */

typedef struct {
    const vla_ops *ops;
    float *q, *k, *v, *out, *lse, *dq, *dk, *dv, *dout;              /* packed, device */
    float *S, *P, *dP, *mask;                                        /* dense scratch: [H, L, L], [L, L] */
    float *pq, *pk, *pv, *po, *pdo, *pdq, *pdk, *pdv;                 /* one padded sample, device */
} dev_data;

static float *dev_up(const vla_ops *ops, const float *h, int64_t n) {
    float *d = ops->alloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (d && h) ops->to_device(d, h, sizeof(float) * (size_t)n);
    if (d && !h) ops->fill(d, 0.0f, n);
    return d;
}

static vla_status dev_make(const vla_ops *ops, const attn_case *c, const attn_data *d, int32_t L, dev_data *g) {
    memset(g, 0, sizeof *g);
    g->ops = ops;
    int64_t nq = d->T * HEADS * HEAD_DIM, nk = d->T * KV_HEADS * HEAD_DIM;
    g->q = dev_up(ops, d->q, nq), g->k = dev_up(ops, d->k, nk), g->v = dev_up(ops, d->v, nk);
    g->dout = dev_up(ops, d->dout, nq), g->out = dev_up(ops, NULL, nq), g->lse = dev_up(ops, NULL, d->T * HEADS);
    g->dq = dev_up(ops, NULL, nq), g->dk = dev_up(ops, NULL, nk), g->dv = dev_up(ops, NULL, nk);
    int64_t LL = (int64_t)L * L, pq = (int64_t)L * HEADS * HEAD_DIM, pk = (int64_t)L * KV_HEADS * HEAD_DIM;
    g->S = dev_up(ops, NULL, HEADS * LL), g->P = dev_up(ops, NULL, HEADS * LL), g->dP = dev_up(ops, NULL, HEADS * LL);
    g->mask = dev_up(ops, NULL, LL);
    g->pq = dev_up(ops, NULL, pq), g->po = dev_up(ops, NULL, pq), g->pdo = dev_up(ops, NULL, pq);
    g->pdq = dev_up(ops, NULL, pq), g->pk = dev_up(ops, NULL, pk), g->pv = dev_up(ops, NULL, pk);
    g->pdk = dev_up(ops, NULL, pk), g->pdv = dev_up(ops, NULL, pk);
    float *all[] = {g->q, g->k, g->v, g->dout, g->out, g->lse, g->dq, g->dk, g->dv, g->S, g->P, g->dP, g->mask,
                    g->pq, g->po, g->pdo, g->pdq, g->pk, g->pv, g->pdk, g->pdv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!all[i]) return vla_error(VLA_ERR_NOMEM, "bench attention: out of %s memory", ops->name);
    (void)c;
    return VLA_OK;
}

static void dev_free(dev_data *g) {
    float *all[] = {g->q, g->k, g->v, g->dout, g->out, g->lse, g->dq, g->dk, g->dv, g->S, g->P, g->dP, g->mask,
                    g->pq, g->po, g->pdo, g->pdq, g->pk, g->pv, g->pdk, g->pdv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) g->ops->free(all[i]);
}

/* The dense way, sample by sample: padded to L tokens, mask [L, L] (a second
 * segment holds the padding, so no real token sees it), per head S = QKᵀ·scale
 * + mask, P = softmax, O = P·V; backward dP = dO·Vᵀ, dS = softmax', dQ =
 * dS·K·scale, dK = dSᵀ·Q·scale, dV = Pᵀ·dO (K, V shared by the heads: MQA). */
static void dense_sample(const dev_data *g, const attn_data *d, int s, int32_t L, bool backward,
                         const vla_gemm_q *gq) {
    const vla_ops *o = g->ops;
    int32_t t0 = d->cu[s], len = d->cu[s + 1] - t0;
    int32_t cu[3] = {0, len, L}, *grp = malloc(sizeof(int32_t) * (size_t)L);
    if (!grp) abort();
    for (int32_t i = 0; i < L; i++) grp[i] = i < len ? d->group[t0 + i] : 0;
    vla_attn_seqs seqs = {2, cu, grp};
    const int64_t H = HEADS, dh = HEAD_DIM, LL = (int64_t)L * L, ldq = H * dh, ldk = KV_HEADS * dh;
    const float scale = 1.0f / sqrtf((float)dh);
    o->fill(g->pq, 0.0f, L * ldq), o->fill(g->pk, 0.0f, L * ldk), o->fill(g->pv, 0.0f, L * ldk);
    o->copy(g->pq, g->q + (int64_t)t0 * ldq, len * ldq);
    o->copy(g->pk, g->k + (int64_t)t0 * ldk, len * ldk);
    o->copy(g->pv, g->v + (int64_t)t0 * ldk, len * ldk);
    o->attention_mask(g->mask, &seqs, &seqs);
    for (int64_t h = 0; h < H; h++) {
        o->sgemm_q(gq, false, true, L, L, dh, scale, g->pq + h * dh, ldq, g->pk, ldk, 0.0f, g->S + h * LL, L);
        o->add(g->S + h * LL, g->S + h * LL, g->mask, LL);
    }
    o->softmax_rows(g->P, g->S, H * L, L);
    for (int64_t h = 0; h < H; h++)
        o->sgemm_q(gq, false, false, L, dh, L, 1.0f, g->P + h * LL, L, g->pv, ldk, 0.0f, g->po + h * dh, ldq);
    if (backward) {
        o->fill(g->pdo, 0.0f, L * ldq);
        o->copy(g->pdo, g->dout + (int64_t)t0 * ldq, len * ldq);
        for (int64_t h = 0; h < H; h++)
            o->sgemm_q(gq, false, true, L, L, dh, 1.0f, g->pdo + h * dh, ldq, g->pv, ldk, 0.0f, g->dP + h * LL, L);
        o->softmax_rows_backward(g->S, g->P, g->dP, H * L, L); /* S now holds dS */
        o->fill(g->pdk, 0.0f, L * ldk), o->fill(g->pdv, 0.0f, L * ldk);
        for (int64_t h = 0; h < H; h++) { /* the heads share the one K/V head: their gradients add up */
            o->sgemm_q(gq, false, false, L, dh, L, scale, g->S + h * LL, L, g->pk, ldk, 0.0f, g->pdq + h * dh, ldq);
            o->sgemm_q(gq, true, false, L, dh, L, scale, g->S + h * LL, L, g->pq + h * dh, ldq, 1.0f, g->pdk, ldk);
            o->sgemm_q(gq, true, false, L, dh, L, 1.0f, g->P + h * LL, L, g->pdo + h * dh, ldq, 1.0f, g->pdv, ldk);
        }
    }
    free(grp);
}

/* FNV-1a over n floats of device memory: the fused outputs' bits, so that two runs whose kernels promise the
 * same bits (VLA_CUDA_ATTN_STAGING's ways: attn_mma.cu) can be compared from their lines */
static uint64_t digest_floats(const vla_ops *ops, const float *dev, int64_t n, uint64_t h) {
    float *host = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!host) return 0;
    if (n > 0) ops->to_host(host, dev, sizeof(float) * (size_t)n);
    const unsigned char *b = (const unsigned char *)host;
    for (size_t i = 0; i < sizeof(float) * (size_t)n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    free(host);
    return h;
}

static vla_status time_device(const attn_case *c, attn_data *d, const vla_ops *ops, const vla_attn_config *cfgp,
                              int reps, double ms[4], vla_attn_stats *stats, uint64_t digest[2]) {
    int32_t L = 0;
    for (int s = 0; s < c->n; s++) L = d->cu[s + 1] - d->cu[s] > L ? d->cu[s + 1] - d->cu[s] : L;
    dev_data g;
    vla_status st = dev_make(ops, c, d, L, &g);
    vla_attn_config cfg = *cfgp;
    vla_attn_seqs s = {c->n, d->cu, d->group};
    vla_gemm_q gq = {.mode = cfg.precision == VLA_PREC_FP32 ? VLA_PREC_FP32 : VLA_PREC_BF16};
    for (int k = 0; k < 4; k++) ms[k] = 1e30;
    for (int r = 0; st == VLA_OK && r <= reps; r++) {
        vla_ops_sync(ops);
        double t0 = vla_now_s();
        st = vla_attention_forward(ops, &cfg, g.out, g.lse, g.q, g.k, g.v, &s, &s, r == 0 ? stats : NULL);
        vla_ops_sync(ops);
        double t1 = vla_now_s();
        if (st == VLA_OK)
            st = vla_attention_backward(ops, &cfg, g.dq, g.dk, g.dv, g.dout, g.q, g.k, g.v, g.out, g.lse, &s, &s, NULL);
        vla_ops_sync(ops);
        double t2 = vla_now_s();
        for (int smp = 0; smp < c->n; smp++) dense_sample(&g, d, smp, L, false, &gq);
        vla_ops_sync(ops);
        double t3 = vla_now_s();
        for (int smp = 0; smp < c->n; smp++) dense_sample(&g, d, smp, L, true, &gq);
        vla_ops_sync(ops);
        double t4 = vla_now_s();
        if (r == 0) continue; /* warm-up */
        double v[4] = {t1 - t0, t2 - t0, t3 - t2, t4 - t3};
        for (int k = 0; k < 4; k++)
            if (v[k] * 1e3 < ms[k]) ms[k] = v[k] * 1e3;
    }
    /* the fused forward's out and lse, and dq, dk, dv after reps + 1 backwards (each adds to them); and the
     * same without dq, whose bits the fused backward's atomics may move (tensor/ops.h, vla_attn_bwd_mode) */
    int64_t nq = d->T * HEADS * HEAD_DIM, nk = d->T * KV_HEADS * HEAD_DIM;
    uint64_t h = 0xcbf29ce484222325ull, h2 = h;
    if (st == VLA_OK) {
        h = digest_floats(ops, g.out, nq, h), h = digest_floats(ops, g.lse, d->T * HEADS, h);
        h2 = h;
        h = digest_floats(ops, g.dq, nq, h), h = digest_floats(ops, g.dk, nk, h), h = digest_floats(ops, g.dv, nk, h);
        h2 = digest_floats(ops, g.dk, nk, h2), h2 = digest_floats(ops, g.dv, nk, h2);
    }
    digest[0] = h, digest[1] = h2;
    dev_free(&g);
    return st;
}

/* The attention of one flow step of an action chunk at batch 1 (π0.5's expert layers: 50 action tokens on
 * the prefix's KV cache — 3 cameras and 200 text tokens — and on themselves, the cached entry point, no
 * concatenation): the shape the forward's split key walk is for (tensor/attn_plan.h, SPLIT KEYS). The
 * microseconds per call of `calls` back-to-back calls, best of `reps`. */
static vla_status time_chunk(const vla_ops *ops, const vla_attn_config *cfg, bool quick, int reps, int calls,
                             double *us, int32_t *prefix_out) {
    const int32_t prefix = (quick ? 64 : 256) * 3 + 200;
    int32_t cuq[2] = {0, ACTIONS}, cuc[2] = {0, prefix}, gq[ACTIONS], *gc = calloc((size_t)prefix, sizeof *gc);
    if (!gc) return vla_error(VLA_ERR_NOMEM, "bench attention: out of memory");
    for (int i = 0; i < ACTIONS; i++) gq[i] = 1; /* the suffix sees the prefix (0) and itself (1) */
    vla_attn_seqs qs = {1, cuq, gq}, cs = {1, cuc, gc}, ns = {1, cuq, gq};
    vla_rng r = vla_rng_stream(11, 0);
    int64_t nq = (int64_t)ACTIONS * HEADS * HEAD_DIM, nc = (int64_t)prefix * KV_HEADS * HEAD_DIM;
    int64_t nn = (int64_t)ACTIONS * KV_HEADS * HEAD_DIM;
    float *h = randn(nq > nc ? nq : nc, &r, 0.5f);
    float *q = h ? dev_up(ops, h, nq) : NULL, *kc = h ? dev_up(ops, h, nc) : NULL, *vc = h ? dev_up(ops, h, nc) : NULL;
    float *kn = h ? dev_up(ops, h, nn) : NULL, *vn = h ? dev_up(ops, h, nn) : NULL;
    float *out = dev_up(ops, NULL, nq), *lse = dev_up(ops, NULL, (int64_t)ACTIONS * HEADS);
    vla_status st = q && kc && vc && kn && vn && out && lse ? VLA_OK
                                                            : vla_error(VLA_ERR_NOMEM, "bench attention: out of %s memory", ops->name);
    *us = 1e30;
    for (int rep = 0; st == VLA_OK && rep <= reps; rep++) {
        vla_ops_sync(ops);
        double t0 = vla_now_s();
        for (int c = 0; st == VLA_OK && c < calls; c++)
            st = vla_attention_forward_cached(ops, cfg, out, lse, q, &qs, kc, vc, &cs, kn, vn, &ns, NULL);
        vla_ops_sync(ops);
        double t = (vla_now_s() - t0) * 1e6 / calls;
        if (rep > 0 && t < *us) *us = t; /* rep 0 warms up (plans built, kernels chosen) */
    }
    float *all[] = {q, kc, vc, kn, vn, out, lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) ops->free(all[i]);
    free(h), free(gc);
    *prefix_out = prefix;
    return st;
}

/* Best forward and forward+backward milliseconds over `reps` (after a warm-up). */
static vla_status time_vla(const attn_case *c, attn_data *d, const vla_attn_config *cfgp, int reps, double *fwd_ms,
                           double *fb_ms, vla_attn_stats *stats) {
    const vla_ops *ops = vla_backend_find(VLA_BACKEND_DEFAULT); /* host buffers below: the CPU backend */
    vla_attn_config cfg = *cfgp;
    vla_attn_seqs s = {c->n, d->cu, d->group};
    *fwd_ms = *fb_ms = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = vla_now_s();
        VLA_TRY(vla_attention_forward(ops, &cfg, d->out, d->lse, d->q, d->k, d->v, &s, &s, stats));
        double t1 = vla_now_s();
        VLA_TRY(vla_attention_backward(ops, &cfg, d->dq, d->dk, d->dv, d->dout, d->q, d->k, d->v, d->out, d->lse, &s,
                                       &s, NULL));
        double t2 = vla_now_s();
        if (r == 0) continue; /* warm-up */
        if ((t1 - t0) * 1e3 < *fwd_ms) *fwd_ms = (t1 - t0) * 1e3;
        if ((t2 - t0) * 1e3 < *fb_ms) *fb_ms = (t2 - t0) * 1e3;
    }
    return VLA_OK;
}

/* "p:s,p:s,…": each sample's prefix and suffix (ACTIONS) lengths, the peer's --lens */
static void peer_lens(const attn_case *c, const attn_data *d, char *lens, size_t cap) {
    lens[0] = 0;
    for (int s = 0; s < c->n; s++) {
        int32_t len = d->cu[s + 1] - d->cu[s];
        size_t k = strlen(lens);
        snprintf(lens + k, cap - k, "%s%d:%d", s ? "," : "", len - ACTIONS, ACTIONS);
    }
}

/* On a GPU: the same layout through every PyTorch way on the same GPU
 * (tools/bench_torch_attention.py --device cuda: the dense-mask composite,
 * SDPA's efficient/cuDNN/math backends, FlashAttention varlen on the
 * decomposed calls), its fastest agreeing fused variant, and vla.c's ratio
 * to it (issue 41: ≥ 1.0). Appends fields to the open JSON line. */
static void device_peer(const char *python, const attn_case *c, const attn_data *d, const char *precision,
                        double vla_fwd_bwd_ms) {
    char script[1024], cmd[4096], line[8192], why[300], lens[256], best[64] = "";
    vla_bench_source_file("tools/bench_torch_attention.py", script, sizeof script);
    peer_lens(c, d, lens, sizeof lens);
    snprintf(cmd, sizeof cmd, "'%s' '%s' --device cuda --dtype %s --lens %s --heads %d --kv_heads %d --head_dim %d "
             "--reps 5 2>&1", python, script, strcmp(precision, "bf16") ? "float32" : "bfloat16", lens, HEADS, KV_HEADS,
             HEAD_DIM);
    if (!vla_bench_run_peer(cmd, "\"attention_peer\"", line, sizeof line, why, sizeof why)) {
        printf(",\"torch_skipped\":\"");
        vla_cli_print_json_chars(why);
        printf("\"");
        return;
    }
    const char *b = strstr(line, "\"best\": \"");
    if (b) sscanf(b + 9, "%63[^\"]", best);
    double dense = vla_bench_peer_number(line, "\"fwd_bwd_ms\": ");
    double bfb = vla_bench_peer_number(line, "\"best_fwd_bwd_ms\": "), bf = vla_bench_peer_number(line, "\"best_fwd_ms\": ");
    if (dense == dense) printf(",\"torch_dense_fwd_bwd_ms\":%.3f", dense);
    if (*best && bfb == bfb)
        printf(",\"torch_best\":\"%s\",\"torch_best_fwd_ms\":%.3f,\"torch_best_fwd_bwd_ms\":%.3f,\"vs_torch_best\":%.3f", best,
               bf, bfb, bfb / vla_fwd_bwd_ms);
    /* the peer's whole line, for the record: every variant's times, agreement or why it did not run */
    const char *v = strstr(line, "\"variants\": ");
    if (v) {
        printf(",\"torch_variants_line\":\"");
        vla_cli_print_json_chars(line);
        printf("\"");
    }
}

int vla_bench_attention(int argc, char **argv) {
    int64_t threads = 0, reps = 3, tile = 0;
    const char *bwd = "auto";
    bool quick = false, no_peer = false, no_fold = false;
    const char *python = "/usr/bin/python3", *device = "cpu", *precision = "fp32";
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP threads, and the peer's torch threads (0: all cores)"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed forward+backward passes (best is reported)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "64 tokens per image instead of 256, no peer (smoke test)"},
        {"no-peer", VLA_FLAG_BOOL, &no_peer, NULL, "skip the PyTorch dense-mask peer"},
        {"python", VLA_FLAG_STRING, &python, "EXE", "interpreter with python3-torch for the peer"},
        {"tile", VLA_FLAG_INT, &tile, "N", "query and key tile size (0: the library's default)"},
        {"bwd", VLA_FLAG_STRING, &bwd, "auto|fused|two_pass",
         "backward work split (tensor/ops.h, vla_attn_bwd_mode): fused does 5 tile products where two_pass does 7 "
         "(cpu: one work item per sample and KV head; cuda: dQ added by the dK/dV pass with atomics, FlashAttention-2's); "
         "auto: the backend's choice (cuda: two_pass, or VLA_CUDA_ATTN_BACKWARD)"},
        {"no_mqa_fold", VLA_FLAG_BOOL, &no_fold, NULL,
         "one tile product per query head instead of all heads of the one KV head at once (tensor/cpu/ops_cpu_attention.c)"},
        {"device", VLA_FLAG_STRING, &device, "NAME",
         "cpu (default: against the PyTorch peer), or a device backend such as cuda: against the dense-mask "
         "attention computed on the same device, and PyTorch on the same GPU (eager dense mask, SDPA's "
         "efficient/cuDNN/math backends, FlashAttention varlen; vs_torch_best against the fastest that agrees)"},
        {"precision", VLA_FLAG_STRING, &precision, "fp32|bf16", "operand precision of the fused kernels (device)"},
    };
    const vla_command_spec spec = {
        "vla bench attention", NULL,
        "π0.5's prefix-LM attention, fused and packed, vs PyTorch's dense-mask attention (forward + backward).",
        "One JSON line per case ({\"bench\":\"attention\"}): vla.c's forward and forward+backward ms, the tiles the "
        "mask let it skip, the peer's ms and the ratio vs_torch (peer time / vla.c time). On a device, then one "
        "{\"bench\":\"attention_chunk\"} line: microseconds per call of one flow step's attention at batch 1 (50 "
        "action tokens on a 3-camera prefix's KV cache and themselves).",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (threads > 0) omp_set_num_threads((int)threads);
    int nthreads = omp_get_max_threads();
    if (reps < 1) reps = 1;
    vla_attn_config cfg = {.n_heads = HEADS, .n_kv_heads = KV_HEADS, .head_dim = HEAD_DIM, .scale = 0,
                           .tile_q = (int32_t)tile, .tile_k = (int32_t)tile, .bwd_mode = VLA_ATTN_BWD_AUTO,
                           .no_mqa_fold = no_fold, .precision = VLA_PREC_FP32};
    if (!strcmp(precision, "bf16")) cfg.precision = VLA_PREC_BF16;
    else if (strcmp(precision, "fp32")) {
        fprintf(stderr, "vla: error: vla bench attention: --precision must be fp32 or bf16\n");
        return 2;
    }
    const vla_ops *dev = NULL;
    if (strcmp(device, "cpu")) {
        vla_status dst = vla_backend_get(device, &dev);
        if (dst != VLA_OK) return vla_cli_fail(dst);
        if (dev->host_memory) dev = NULL; /* a host backend: the CPU path below */
    }
    for (size_t ci = 0; dev && ci < sizeof cases / sizeof cases[0]; ci++) {
        const attn_case *c = &cases[ci];
        attn_data d;
        vla_attn_stats stats = {0};
        double ms[4];
        vla_status st = data_make(c, quick, &d);
        uint64_t digest[2] = {0, 0};
        if (st == VLA_OK) st = time_device(c, &d, dev, &cfg, (int)reps, ms, &stats, digest);
        int32_t longest = 0;
        for (int s2 = 0; st == VLA_OK && s2 < c->n; s2++)
            longest = d.cu[s2 + 1] - d.cu[s2] > longest ? d.cu[s2 + 1] - d.cu[s2] : longest;
        if (st != VLA_OK) {
            data_free(&d);
            return vla_cli_fail(st);
        }
        printf("{\"bench\":\"attention\",\"case\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"samples\":%d,"
               "\"tokens\":%lld,\"padding_frac_if_padded\":%.3f,\"heads\":%d,\"kv_heads\":%d,\"head_dim\":%d,"
               "\"fwd_ms\":%.3f,\"fwd_bwd_ms\":%.3f,\"dense_fwd_ms\":%.3f,\"dense_fwd_bwd_ms\":%.3f,"
               "\"vs_dense\":%.3f,\"vs_dense_fwd\":%.3f,\"tiles_computed_frac\":%.3f",
               c->name, dev->name, precision, c->n, (long long)d.T, 1.0 - (double)d.T / ((double)longest * c->n),
               HEADS, KV_HEADS, HEAD_DIM, ms[0], ms[1], ms[2], ms[3], ms[3] / ms[1], ms[2] / ms[0],
               stats.tiles_total ? (double)stats.tiles_computed / (double)stats.tiles_total : 0.0);
        /* the backward's dK/dV parts (cuda; VLA_CUDA_ATTN_KV_SPLITS overrides) */
        int64_t kv_splits = vla_ops_stat_of(dev, VLA_STAT_ATTN_LAST_KV_SPLITS);
        if (kv_splits >= 0) printf(",\"kv_splits\":%lld", (long long)kv_splits);
        /* the forward's key walk in parts (cuda; VLA_CUDA_ATTN_Q_SPLITS overrides) */
        int64_t q_splits = vla_ops_stat_of(dev, VLA_STAT_ATTN_LAST_Q_SPLITS);
        if (q_splits >= 0) printf(",\"q_splits\":%lld", (long long)q_splits);
        /* how the bf16 passes staged (cuda, VLA_CUDA_ATTN_STAGING; docs/cuda.md, "Staging"): bits 0-2 forward,
         * dK/dV, dQ fetched asynchronously, bit 3 from bf16 copies of the operands */
        int64_t staging = vla_ops_stat_of(dev, VLA_STAT_ATTN_LAST_STAGING);
        if (staging >= 0) printf(",\"staging\":%lld", (long long)staging);
        /* the backward's passes (cuda, VLA_CUDA_ATTN_BACKWARD): 2, or 1 fused */
        int64_t passes = vla_ops_stat_of(dev, VLA_STAT_ATTN_LAST_BACKWARD_PASSES);
        if (passes >= 0) printf(",\"backward_passes\":%lld", (long long)passes);
        printf(",\"fused_digest\":\"%016llx\",\"digest_without_dq\":\"%016llx\"", (unsigned long long)digest[0],
               (unsigned long long)digest[1]);
        if (!no_peer && !quick) device_peer(python, c, &d, precision, ms[1]);
        printf("}\n");
        fflush(stdout);
        data_free(&d);
    }
    if (dev) { /* then one flow step's attention at a chunk's shape */
        double us = 0;
        int32_t prefix = 0;
        const int calls = quick ? 5 : 100;
        vla_status cst = time_chunk(dev, &cfg, quick, (int)reps, calls, &us, &prefix);
        if (cst != VLA_OK) return vla_cli_fail(cst);
        printf("{\"bench\":\"attention_chunk\",\"device\":\"%s\",\"precision\":\"%s\",\"queries\":%d,"
               "\"cached_keys\":%d,\"new_keys\":%d,\"heads\":%d,\"kv_heads\":%d,\"head_dim\":%d,\"calls\":%d,"
               "\"us_per_call\":%.2f",
               dev->name, precision, ACTIONS, prefix, ACTIONS, HEADS, KV_HEADS, HEAD_DIM, calls, us);
        int64_t q_splits = vla_ops_stat_of(dev, VLA_STAT_ATTN_LAST_Q_SPLITS);
        if (q_splits >= 0) printf(",\"q_splits\":%lld", (long long)q_splits);
        printf("}\n");
        return 0;
    }
    if (!strcmp(bwd, "fused")) cfg.bwd_mode = VLA_ATTN_BWD_FUSED;
    else if (!strcmp(bwd, "two_pass")) cfg.bwd_mode = VLA_ATTN_BWD_TWO_PASS;
    else if (strcmp(bwd, "auto")) {
        fprintf(stderr, "vla: error: vla bench attention: --bwd must be auto, fused or two_pass\n");
        return 2;
    }
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const attn_case *c = &cases[ci];
        attn_data d;
        vla_attn_stats stats = {0};
        double fwd = 0, fb = 0;
        vla_status st = data_make(c, quick, &d);
        if (st == VLA_OK) st = time_vla(c, &d, &cfg, (int)reps, &fwd, &fb, &stats);
        if (st != VLA_OK) {
            data_free(&d);
            return vla_cli_fail(st);
        }
        int32_t longest = 0;
        char lens[256];
        for (int s = 0; s < c->n; s++) longest = d.cu[s + 1] - d.cu[s] > longest ? d.cu[s + 1] - d.cu[s] : longest;
        peer_lens(c, &d, lens, sizeof lens);
        double pad_frac = 1.0 - (double)d.T / ((double)longest * c->n);
        printf("{\"bench\":\"attention\",\"case\":\"%s\",\"threads\":%d,\"samples\":%d,\"tokens\":%lld,"
               "\"padding_frac_if_padded\":%.3f,\"heads\":%d,\"kv_heads\":%d,\"head_dim\":%d,\"fwd_ms\":%.3f,"
               "\"fwd_bwd_ms\":%.3f,\"tiles_computed_frac\":%.3f",
               c->name, nthreads, c->n, (long long)d.T, pad_frac, HEADS, KV_HEADS, HEAD_DIM, fwd, fb,
               stats.tiles_total ? (double)stats.tiles_computed / (double)stats.tiles_total : 0.0);
        if (!no_peer && !quick) {
            char script[1024], cmd[4096], line[4096], why[300];
            vla_bench_source_file("tools/bench_torch_attention.py", script, sizeof script);
            snprintf(cmd, sizeof cmd,
                     "'%s' '%s' --lens %s --heads %d --kv_heads %d --head_dim %d --threads %d --reps %lld 2>&1",
                     python, script, lens, HEADS, KV_HEADS, HEAD_DIM, nthreads, (long long)reps);
            if (vla_bench_run_peer(cmd, "\"fwd_bwd_ms\": ", line, sizeof line, why, sizeof why)) {
                double pfb = vla_bench_peer_number(line, "\"fwd_bwd_ms\": ");
                double pf = vla_bench_peer_number(line, "\"fwd_ms\": ");
                printf(",\"torch_fwd_ms\":%.3f,\"torch_fwd_bwd_ms\":%.3f,\"vs_torch\":%.3f,\"vs_torch_fwd\":%.3f", pf,
                       pfb, pfb / fb, pf / fwd);
            } else {
                printf(",\"torch_skipped\":\"");
                vla_cli_print_json_chars(why);
                printf("\"");
            }
        }
        printf("}\n");
        fflush(stdout);
        data_free(&d);
    }
    return 0;
}
