/* bench_shards.c — `vla bench shards`: what decoding once buys. On a
 * generated dataset of 3 cameras of 640×480 AV1 (bench_dataset.c's, the
 * shape of SO-101/ALOHA data) or on --root (e.g. PushT): `vla data prepare`
 * frames/s with 1 and 2 workers (the 2-worker speed-up), then the reads a
 * training sample needs — every camera's frame at a random row, resized to
 * --size — on one thread from the videos and from the shards, and their
 * ratio (per core: each path on one thread). The frames of the first
 * samples are compared, so the ratio is between equal results. Last,
 * `vla train` of a small π0.5 (every camera at 64×64, so the step is fast
 * and the data path shows) from the videos and from shards: samples/s and
 * the fraction of time the step waited for data. One JSON object per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/rng.h"
#include "base/timer.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "data/lerobot.h"
#include "data/shards.h"

static vla_status prepare(const char *root, const char *out, int size, int workers, double *frames_per_s) {
    VLA_TRY(vla_remove_tree(out));
    vla_shards_prepare_opts o = {.out = out, .image_h = size, .image_w = size, .shard_mb = 16, .num_workers = workers};
    vla_shards_prepare_stats s;
    VLA_TRY(vla_shards_prepare(root, &o, &s));
    VLA_TRY(vla_shards_finish(root, &o));
    *frames_per_s = (double)s.frames / s.seconds;
    printf("{\"bench\":\"shards\",\"case\":\"prepare\",\"workers\":%d,\"shards\":%lld,\"frames\":%lld,\"size\":%d,\"seconds\":%.3f,"
           "\"frames_per_s\":%.1f}\n",
           workers, (long long)s.shards, (long long)s.frames, size, s.seconds, *frames_per_s);
    fflush(stdout);
    return VLA_OK;
}

/* `n` samples of every camera at random rows (seeded), one thread; frames of the first `keep` samples into kept. */
static vla_status read_samples(const vla_lerobot *ds, int size, int64_t n, uint64_t seed, uint8_t *kept, int keep, double *seconds) {
    vla_lr_reader *r;
    VLA_TRY(vla_lr_reader_open(ds, &r));
    size_t fb = (size_t)size * size * 3;
    uint8_t *buf = malloc(fb);
    vla_rng g = vla_rng_stream(seed, 0);
    vla_status st = buf ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
    /* warm: open the decoders once, as a long-running loader would */
    for (int c = 0; st == VLA_OK && c < ds->n_cameras; c++) st = vla_lr_reader_frame(r, c, 0, size, size, 0, buf);
    double t0 = vla_now_s();
    for (int64_t i = 0; st == VLA_OK && i < n; i++) {
        int64_t row = vla_rng_int(&g, 0, ds->n_rows);
        for (int c = 0; st == VLA_OK && c < ds->n_cameras; c++) {
            st = vla_lr_reader_frame(r, c, row, size, size, 0, buf);
            if (i < keep) memcpy(kept + ((size_t)i * ds->n_cameras + c) * fb, buf, fb);
        }
    }
    *seconds = vla_now_s() - t0;
    free(buf);
    vla_lr_reader_close(r);
    return st;
}

/* `vla train` (this binary) for `steps` steps with `dataset_flag` (--dataset.root=… or --dataset.shards=…)
 * and the policy config at `cfg`: its samples/s and data-wait fraction, from its summary line. */
static vla_status train_case(const char *dataset_flag, const char *cfg, const char *out, int steps, double *sps, double *wait) {
    char exe[1024], cmd[8192] = "", why[512], line[4096], arg[2048];
    VLA_TRY(vla_bench_self_path(exe, sizeof exe));
    vla_bench_shell_quote(cmd, sizeof cmd, exe);
    const char *fixed[] = {"train", "--policy.type=pi05", "--batch_size=8", "--num_workers=2", "--quiet", "--save_freq=0", "--json"};
    for (int i = 0; i < 7; i++) vla_bench_shell_quote(cmd, sizeof cmd, fixed[i]);
    snprintf(arg, sizeof arg, "--steps=%d", steps);
    vla_bench_shell_quote(cmd, sizeof cmd, arg);
    vla_bench_shell_quote(cmd, sizeof cmd, dataset_flag);
    snprintf(arg, sizeof arg, "--policy.config=%s", cfg);
    vla_bench_shell_quote(cmd, sizeof cmd, arg);
    snprintf(arg, sizeof arg, "--output_dir=%s", out);
    vla_bench_shell_quote(cmd, sizeof cmd, arg);
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " 2>&1");
    if (!vla_bench_run_peer(cmd, "\"data_wait_frac\":", line, sizeof line, why, sizeof why))
        return vla_error(VLA_ERR_INTERNAL, "bench shards: vla train: %s", why);
    *sps = vla_bench_peer_number(line, "\"samples_per_s\":");
    *wait = vla_bench_peer_number(line, "\"data_wait_frac\":");
    return VLA_OK;
}

int vla_bench_shards(int argc, char **argv) {
    int64_t episodes = 4, ep_len = 90, iters = 60, size = 224, seed = 1;
    const char *root = NULL;
    bool quick = false;
    const vla_flag flags[] = {
        {"root", VLA_FLAG_STRING, &root, "DIR", "use this dataset (e.g. PushT with --size=96) instead of generating one"},
        {"episodes", VLA_FLAG_INT, &episodes, "N", "episodes to generate (default 4)"},
        {"episode-len", VLA_FLAG_INT, &ep_len, "N", "frames per episode (default 90)"},
        {"iters", VLA_FLAG_INT, &iters, "N", "samples read from the videos (the shards read 100× more; default 60)"},
        {"size", VLA_FLAG_INT, &size, "PX", "frames resized to PX×PX, the policy's image size (default 224)"},
        {"seed", VLA_FLAG_INT, &seed, "N", "sampling seed"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "2 episodes of 30 frames, 10 samples (smoke test)"},
    };
    const vla_command_spec spec = {"vla bench shards", NULL, "Training shards against video decoding: prepare speed and sample reads per core.",
                                   NULL, flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) episodes = 2, ep_len = 30, iters = 10;
    char tmp[512], gen[600], out1[600], out2[600];
    snprintf(tmp, sizeof tmp, "%s/vla-bench-shards-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(gen, sizeof gen, "%s/dataset", tmp);
    snprintf(out1, sizeof out1, "%s/shards1", tmp);
    snprintf(out2, sizeof out2, "%s/shards2", tmp);
    vla_status st = vla_mkdirs(tmp);
    if (st == VLA_OK && !root) {
        st = vla_bench_generate_dataset(gen, (int)episodes, (int)ep_len, 3);
        root = gen;
    }
    double fps1 = 0, fps2 = 0;
    if (st == VLA_OK) st = prepare(root, out1, (int)size, 1, &fps1);
    if (st == VLA_OK) st = prepare(root, out2, (int)size, 2, &fps2);
    if (st == VLA_OK)
        printf("{\"bench\":\"shards\",\"case\":\"prepare_scaling\",\"workers\":2,\"speedup\":%.2f}\n", fps2 / fps1);
    vla_lerobot *dv = NULL, *dsh = NULL;
    if (st == VLA_OK) st = vla_lerobot_open(root, &dv);
    if (st == VLA_OK) st = vla_lerobot_open(out1, &dsh);
    const int keep = 4;
    size_t kb = dv ? (size_t)keep * dv->n_cameras * size * size * 3 : 1;
    uint8_t *ka = calloc(kb, 1), *kbuf = calloc(kb, 1);
    double tv = 0, ts = 0;
    int64_t ns = iters * 100;
    if (st == VLA_OK) st = read_samples(dv, (int)size, iters, (uint64_t)seed, ka, keep, &tv);
    if (st == VLA_OK) st = read_samples(dsh, (int)size, ns, (uint64_t)seed, kbuf, keep, &ts);
    if (st == VLA_OK && memcmp(ka, kbuf, kb))
        st = vla_error(VLA_ERR_INTERNAL, "bench shards: a frame from the shards differs from the decoded one");
    if (st == VLA_OK) {
        double sv = (double)iters / tv, ss = (double)ns / ts;
        printf("{\"bench\":\"shards\",\"case\":\"read\",\"path\":\"video\",\"cameras\":%d,\"size\":%lld,\"samples\":%lld,"
               "\"samples_per_s\":%.1f,\"ms_per_sample\":%.3f}\n",
               dv->n_cameras, (long long)size, (long long)iters, sv, tv * 1e3 / (double)iters);
        printf("{\"bench\":\"shards\",\"case\":\"read\",\"path\":\"shards\",\"cameras\":%d,\"size\":%lld,\"samples\":%lld,"
               "\"samples_per_s\":%.1f,\"ms_per_sample\":%.4f,\"ratio_vs_video\":%.1f}\n",
               dsh->n_cameras, (long long)size, (long long)ns, ss, ts * 1e3 / (double)ns, ss / sv);
    }
    /* training: a fast policy (π0.5-tiny's shape, every camera at 64×64, the dataset's state and action
     * widths) from the videos and from shards stored at its size; the loader's 2 threads against its step */
    char cfg[700], out3[700], flag[800], tout[700];
    snprintf(cfg, sizeof cfg, "%s/pi05-cams.json", tmp);
    snprintf(out3, sizeof out3, "%s/shards64", tmp);
    snprintf(tout, sizeof tout, "%s/train", tmp);
    double fps3 = 0, sps[2] = {0, 0}, wait[2] = {0, 0};
    if (st == VLA_OK) {
        int64_t sw = 0, aw = 0;
        const vla_lr_feature *fs = vla_lerobot_feature(dv, "observation.state"), *fa = vla_lerobot_feature(dv, "action");
        sw = fs ? fs->width : 0, aw = fa ? fa->width : 0;
        char text[2048];
        snprintf(text, sizeof text,
                 "{\"policy\": \"pi05\", \"name\": \"pi05-bench-cams\","
                 " \"vision\": {\"image_size\": 64, \"patch\": 16, \"channels\": 3, \"width\": 64, \"depth\": 2, \"heads\": 4, \"mlp\": 128, \"cameras\": %d},"
                 " \"language\": {\"width\": 64, \"depth\": 4, \"heads\": 4, \"kv_heads\": 1, \"head_dim\": 16, \"mlp\": 128, \"vocab\": 259, \"max_tokens\": 96},"
                 " \"expert\": {\"width\": 32, \"depth\": 4, \"mlp\": 64}, \"action\": {\"dim\": %lld, \"horizon\": 16, \"state_dim\": %lld},"
                 " \"flow\": {\"steps\": 10, \"beta_alpha\": 1.5, \"beta_beta\": 1.0, \"time_scale\": 0.999, \"time_min_period\": 0.004, \"time_max_period\": 4.0},"
                 " \"normalization\": {\"state\": \"mean_std\", \"action\": \"mean_std\"}, \"frozen\": []}\n",
                 dv->n_cameras, (long long)(aw > 0 ? aw : 1), (long long)(sw > 0 ? sw : 1));
        st = vla_write_file_atomic(cfg, text, strlen(text));
    }
    if (st == VLA_OK) st = prepare(root, out3, 64, 2, &fps3);
    for (int k = 0; st == VLA_OK && k < 2; k++) {
        snprintf(flag, sizeof flag, k ? "--dataset.shards=%s" : "--dataset.root=%s", k ? out3 : root);
        vla_remove_tree(tout);
        st = train_case(flag, cfg, tout, quick ? 4 : 40, &sps[k], &wait[k]);
        if (st == VLA_OK)
            printf("{\"bench\":\"shards\",\"case\":\"train\",\"path\":\"%s\",\"cameras\":%d,\"size\":64,\"batch\":8,\"workers\":2,"
                   "\"samples_per_s\":%.1f,\"data_wait_frac\":%.3f}\n",
                   k ? "shards" : "video", dv->n_cameras, sps[k], wait[k]);
        fflush(stdout);
    }
    if (st == VLA_OK) printf("{\"bench\":\"shards\",\"case\":\"train_ratio\",\"samples_per_s_shards_vs_video\":%.2f}\n", sps[1] / sps[0]);
    free(ka);
    free(kbuf);
    vla_lerobot_close(dv);
    vla_lerobot_close(dsh);
    vla_remove_tree(tmp);
    if (st != VLA_OK) return vla_cli_fail(st);
    return 0;
}
