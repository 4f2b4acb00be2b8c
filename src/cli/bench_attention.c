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
 * padded to the longest for the peer (the padding fraction is printed). */
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

int vla_bench_attention(int argc, char **argv) {
    int64_t threads = 0, reps = 3, tile = 0;
    const char *bwd = "auto";
    bool quick = false, no_peer = false, no_fold = false;
    const char *python = "/usr/bin/python3";
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP threads, and the peer's torch threads (0: all cores)"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed forward+backward passes (best is reported)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "64 tokens per image instead of 256, no peer (smoke test)"},
        {"no-peer", VLA_FLAG_BOOL, &no_peer, NULL, "skip the PyTorch dense-mask peer"},
        {"python", VLA_FLAG_STRING, &python, "EXE", "interpreter with python3-torch for the peer"},
        {"tile", VLA_FLAG_INT, &tile, "N", "query and key tile size (0: the library's default)"},
        {"bwd", VLA_FLAG_STRING, &bwd, "auto|fused|two_pass", "backward work split (nn/attention.h)"},
        {"no_mqa_fold", VLA_FLAG_BOOL, &no_fold, NULL,
         "one tile product per query head instead of all heads of the one KV head at once (nn/attention.c)"},
    };
    const vla_command_spec spec = {
        "vla bench attention", NULL,
        "π0.5's prefix-LM attention, fused and packed, vs PyTorch's dense-mask attention (forward + backward).",
        "One JSON line per case ({\"bench\":\"attention\"}): vla.c's forward and forward+backward ms, the tiles the "
        "mask let it skip, the peer's ms and the ratio vs_torch (peer time / vla.c time).",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (threads > 0) omp_set_num_threads((int)threads);
    int nthreads = omp_get_max_threads();
    if (reps < 1) reps = 1;
    vla_attn_config cfg = {HEADS, KV_HEADS, HEAD_DIM, 0, (int32_t)tile, (int32_t)tile, VLA_ATTN_BWD_AUTO, no_fold};
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
        char lens[256] = "";
        for (int s = 0; s < c->n; s++) {
            int32_t len = d.cu[s + 1] - d.cu[s];
            longest = len > longest ? len : longest;
            size_t k = strlen(lens);
            snprintf(lens + k, sizeof lens - k, "%s%d:%d", s ? "," : "", len - ACTIONS, ACTIONS);
        }
        double pad_frac = 1.0 - (double)d.T / ((double)longest * c->n);
        printf("{\"bench\":\"attention\",\"case\":\"%s\",\"threads\":%d,\"samples\":%d,\"tokens\":%lld,"
               "\"padding_frac_if_padded\":%.3f,\"heads\":%d,\"kv_heads\":%d,\"head_dim\":%d,\"fwd_ms\":%.3f,"
               "\"fwd_bwd_ms\":%.3f,\"tiles_computed_frac\":%.3f",
               c->name, nthreads, c->n, (long long)d.T, pad_frac, HEADS, KV_HEADS, HEAD_DIM, fwd, fb,
               stats.tiles_total ? (double)stats.tiles_computed / (double)stats.tiles_total : 0.0);
        if (!no_peer && !quick) {
            char script[1024], cmd[4096], line[4096], why[300];
            vla_cli_find_source_file("tools/bench_torch_attention.py", script, sizeof script);
            snprintf(cmd, sizeof cmd,
                     "'%s' '%s' --lens %s --heads %d --kv_heads %d --head_dim %d --threads %d --reps %lld 2>&1",
                     python, script, lens, HEADS, KV_HEADS, HEAD_DIM, nthreads, (long long)reps);
            if (vla_cli_run_peer(cmd, "\"fwd_bwd_ms\": ", line, sizeof line, why, sizeof why)) {
                double pfb = vla_cli_peer_number(line, "\"fwd_bwd_ms\": ");
                double pf = vla_cli_peer_number(line, "\"fwd_ms\": ");
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
