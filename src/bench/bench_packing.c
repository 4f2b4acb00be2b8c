/* bench_packing.c — `vla bench packing`: training on a realistic mixture of
 * robots, packed (each sample its own cameras and prompt, samples end to end
 * in one varlen batch: what vla.c trains on) against padded (every sample
 * padded to the longest in the batch — the most cameras, blank images for
 * the missing ones, and the longest prompt — as a dense-batch trainer such as
 * a dense-batch trainer lays it out), and against padded to the maxima (every
 * camera slot, the prompt padded to the config's max_tokens: LeRobot's π0.5
 * pads its prompt to tokenizer_max_length and keeps a slot per camera). The
 * recipe's paper reports +188% from packing; this measures vla.c's gain on
 * the same policy, samples and machine, and states the padding fraction
 * (padded tokens / real tokens − 1) each comes from. --pad_fraction=F adds a
 * layout padded to that fraction (each sample padded to the longest, then
 * its prompt further, until the batch holds (1 + F)× the packed tokens):
 * 1.88 is what the paper's +188% would be if time followed tokens.
 * --device runs it on another backend (cuda).
 *
 * The mixture (synthetic content, real shapes): ALOHA-like (3 cameras, 14-D
 * state and action, a long instruction), SO-101-like (2 cameras, 6-D, a short
 * one) and PushT-like (1 camera, 2-D), 2 : 2 : 1. π0.5 writes the discretised
 * state into its prompt, so prompt lengths differ with the robot too. Pad
 * tokens are real computation here (token id 0, attended like any token);
 * that is what they cost a dense trainer, which masks them but computes them.
 * Both batches train the same weights from the same initial values, each
 * step timed as forward + backward + AdamW, the two alternating by rounds so
 * a slow phase of the machine hits both. */
#include "bench/bench.h"
#include "cli/cli.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "policy/config.h"
#include "policy/synth_batch.h"
#include "tensor/backend.h"

typedef struct {
    const char *name;
    int cams, dim;
    const char *task;
} robot;

static const robot ROBOTS[] = {
    {"aloha", 3, 14, "fold the towel in half, then place it on the left side of the table next to the basket"},
    {"so101", 2, 6, "pick the orange cube and place it in the box"},
    {"pusht", 1, 2, "push the T-shaped block onto the target"},
};
static const int PATTERN[5] = {0, 1, 0, 1, 2}; /* 2 : 2 : 1 */

typedef enum { PACKED, PAD_LONGEST, PAD_MAX, PAD_FRACTION, N_LAYOUTS } layout;
static const char *const LAYOUT[N_LAYOUTS] = {"packed", "padded_longest", "padded_max", "padded_fraction"};

/* S samples of the mixture, packed, or each padded to the batch's most
 * cameras and longest prompt, or to every camera slot and max_tokens. */
static vla_status build_batch(const vla_policy *p, int32_t S, layout how, double pad_fraction, int64_t packed_tokens,
                              vla_synth_batch *x) {
    const vla_policy_config *c = &p->cfg;
    int64_t plane = c->vision.channels * c->vision.image_size * c->vision.image_size, maxt = c->language.max_tokens;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, SD = c->action.state_dim, cams_max = c->vision.cameras;
    /* PAD_FRACTION: every sample (1 + F)·packed/S tokens long, at least the longest layout */
    int64_t target = how == PAD_FRACTION ? (int64_t)ceil((1.0 + pad_fraction) * (double)packed_tokens / S) : 0;
    VLA_TRY(vla_synth_batch_alloc(x, c, S, S * cams_max, S * (target + Hz + 2)));
    int32_t *tok = calloc((size_t)(S * (maxt + 1)), sizeof *tok);
    int64_t *ntext = calloc((size_t)S, sizeof *ntext);
    vla_status st = VLA_OK;
    if (!tok || !ntext) st = vla_error(VLA_ERR_NOMEM, "bench packing: out of memory for the batch");
    vla_rng r = vla_rng_stream(3, 0);
    int64_t text_max = 0, cams_used = 0;
    for (int32_t i = 0; i < S && st == VLA_OK; i++) {
        const robot *rb = &ROBOTS[PATTERN[i % 5]];
        for (int64_t d = 0; d < rb->dim; d++) x->state[i * SD + d] = 2 * vla_rng_uniform(&r) - 1;
        for (int64_t k = 0; k < Hz; k++)
            for (int64_t d = 0; d < rb->dim; d++) x->actions[(i * Hz + k) * A + d] = (float)(0.5 * vla_rng_normal(&r));
        x->real_dim[i] = rb->dim;
        x->keys[i] = (uint64_t)i;
        st = vla_policy_tokenize(p, rb->task, x->state + i * SD, rb->dim, (int32_t)rb->cams, tok + i * (maxt + 1), maxt,
                                 &ntext[i]);
        if (ntext[i] > text_max) text_max = ntext[i];
        if (rb->cams > cams_used) cams_used = rb->cams;
    }
    int64_t T = 0, extra = 0;
    int32_t nimg = 0;
    if (how == PAD_FRACTION) { /* text beyond the longest prompt, to the target length */
        int64_t longest = vla_policy_sample_layout(p, (int32_t)cams_used, NULL, (int32_t)text_max, NULL, NULL, NULL);
        extra = target > longest ? target - longest : 0;
    }
    for (int32_t i = 0; i < S && st == VLA_OK; i++) {
        const robot *rb = &ROBOTS[PATTERN[i % 5]];
        int64_t cams = how == PACKED ? rb->cams : how == PAD_MAX ? cams_max : cams_used;
        int64_t nt = how == PACKED ? ntext[i] : how == PAD_MAX ? maxt : text_max + extra;
        for (int64_t k = 0; k < rb->cams * plane; k++) x->images[(int64_t)nimg * plane + k] = vla_rng_uniform(&r);
        nimg += (int32_t)cams; /* padded: the missing cameras stay blank (zeros) */
        /* no ids: the padded layouts' text runs past the prompt (the bench's presets put images first anyway) */
        int64_t len = vla_policy_sample_layout(p, (int32_t)cams, NULL, (int32_t)nt, x->roles + T, x->grp + T, x->pos + T);
        if (len < 0 || T + len > x->token_cap) {
            st = vla_error(VLA_ERR_INTERNAL, "bench packing: sample layout of %lld tokens", (long long)len);
            break;
        }
        for (int64_t k = 0, j = 0; k < len; k++) /* padded: the prompt's tail is pad tokens (id 0) */
            if (x->roles[T + k] == VLA_ROLE_TEXT) x->ids[T + k] = j < ntext[i] ? tok[i * (maxt + 1) + j] : 0, j++;
        T += len;
        x->cu[i + 1] = (int32_t)T, x->cu_img[i + 1] = nimg;
    }
    free(tok), free(ntext);
    if (st == VLA_OK) vla_synth_batch_finish(x, S, T, nimg);
    return st;
}

static int bench_config(const char *name, int64_t batch, double seconds, int rounds, vla_comm *comm, int nthreads,
                        const vla_ops *ops, double pad_fraction) {
    vla_policy_config cfg;
    vla_status st = vla_policy_config_load(name, &cfg);
    if (st != VLA_OK) return vla_cli_fail(st);
    /* room for the mixture: three camera slots, the widest robot's state and action */
    cfg.vision.cameras = 3;
    if (cfg.action.state_dim < 14) cfg.action.state_dim = 14;
    if (cfg.action.action_dim < 14) cfg.action.action_dim = 14;
    if ((st = vla_policy_config_validate(name, &cfg)) != VLA_OK) return vla_cli_fail(st);
    vla_policy *p = NULL;
    vla_synth_batch bt[N_LAYOUTS];
    memset(bt, 0, sizeof bt);
    vla_train_opt *opt = NULL;
    double best[N_LAYOUTS] = {1e30, 1e30, 1e30, 1e30};
    int n_layouts = pad_fraction > 0 ? N_LAYOUTS : PAD_FRACTION;
    vla_loss_info info = {0};
    st = vla_policy_create(&cfg, ops, &p);
    if (st == VLA_OK) st = vla_policy_init_weights(p, 1);
    for (int k = 0; k < n_layouts && st == VLA_OK; k++)
        st = build_batch(p, (int32_t)batch, (layout)k, pad_fraction, k ? bt[PACKED].b.n_tokens : 0, &bt[k]);
    if (st == VLA_OK) st = vla_bench_optimizer(p, comm, &opt);
    for (int r = 0; r < rounds && st == VLA_OK; r++)
        for (int k = 0; k < n_layouts && st == VLA_OK; k++) {
            double per = 0;
            st = vla_bench_time_training(p, &bt[k].b, opt, seconds, &per, &info);
            if (per < best[k]) best[k] = per;
        }
    if (st == VLA_OK) {
        printf("{\"bench\":\"packing\",\"config\":\"%s\",\"backend\":\"%s\",\"batch\":%lld,\"threads\":%d,"
               "\"rounds\":%d,\"mixture\":\"aloha-like 3 cams 14-D : so101-like 2 cams 6-D : pusht-like 1 cam 2-D = 2:2:1\","
               "\"paper_gain\":2.88",
               name, ops->name, (long long)batch, nthreads, rounds);
        for (int k = 0; k < n_layouts; k++) {
            printf(",\"%s\":{\"tokens\":%lld,\"images\":%d,\"samples_per_s\":%.2f", LAYOUT[k],
                   (long long)bt[k].b.n_tokens, bt[k].b.n_images, (double)batch / best[k]);
            if (k != PACKED)
                printf(",\"padding_fraction\":%.3f,\"packing_speedup\":%.3f",
                       (double)bt[k].b.n_tokens / (double)bt[PACKED].b.n_tokens - 1, best[k] / best[PACKED]);
            printf("}");
        }
        printf("}\n");
        fflush(stdout);
    }
    vla_train_opt_free(opt);
    for (int k = 0; k < N_LAYOUTS; k++) vla_synth_batch_free(&bt[k]);
    vla_policy_free(p);
    return st == VLA_OK ? 0 : vla_cli_fail(st);
}

int vla_bench_packing(int argc, char **argv) {
    const char *configs = "pi05-small", *device = "cpu";
    int64_t batch = 16, threads = 0, rounds = 3;
    double seconds = 2.0, pad_fraction = 0;
    bool quick = false;
    const vla_flag flags[] = {
        {"config", VLA_FLAG_STRING, &configs, "A,B", "π0.5 or GR00T config names or paths (default pi05-small)"},
        {"batch", VLA_FLAG_INT, &batch, "N", "samples per training step"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time spent timing each layout per round"},
        {"rounds", VLA_FLAG_INT, &rounds, "N", "rounds alternating packed and padded (best of each)"},
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP/OpenBLAS threads (0: all cores)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "short run on pi05-nano (smoke test)"},
        {"device", VLA_FLAG_STRING, &device, "NAME", VLA_CLI_DEVICE_HELP},
        {"pad_fraction", VLA_FLAG_FLOAT, &pad_fraction, "F",
         "also a layout padded to (1 + F)× the packed tokens (1.88: the paper's +188% in tokens)"},
    };
    const vla_command_spec spec = {
        "vla bench packing", NULL, "Training on a mixture of robots: packed (varlen) vs padded to the longest.",
        "Prints one {\"bench\":\"packing\"} line per config: per layout (packed, padded_longest, padded_max) its "
        "tokens, images and samples/s (forward + backward + AdamW); for the padded ones the padding fraction and "
        "packing's speedup over them.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (batch < 1 || rounds < 1 || seconds < 0) {
        fprintf(stderr, "vla: error: vla bench packing: --batch and --rounds must be positive, --seconds non-negative\n");
        return 2;
    }
    if (quick) configs = "pi05-nano", batch = 5, seconds = 0.1, rounds = 2;
    if (threads > 0) omp_set_num_threads((int)threads);
    if (pad_fraction < 0 || pad_fraction > 100) {
        fprintf(stderr, "vla: error: vla bench packing: --pad_fraction=%g: expected 0..100\n", pad_fraction);
        return 2;
    }
    const vla_ops *ops;
    vla_status st = vla_backend_get(device, &ops);
    if (st != VLA_OK) return vla_cli_fail(st);
    vla_comm *comm = NULL;
    st = vla_comm_init(NULL, &comm);
    if (st != VLA_OK) return vla_cli_fail(st);
    char *list = strdup(configs);
    if (!list) return 1;
    char *save = NULL;
    rc = 0;
    for (char *tok = strtok_r(list, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save))
        if (*tok) rc = bench_config(tok, batch, seconds, (int)rounds, comm, omp_get_max_threads(), ops, pad_fraction);
    free(list);
    vla_comm_finalize(comm);
    return rc;
}
