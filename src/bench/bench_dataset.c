/* bench_dataset.c — `vla bench dataset`: training-style random access
 * through the dataset API (vla_lerobot + vla_lr_reader), on a generated
 * LeRobot v3.0 dataset with 640×480 AV1 video at LeRobot's settings
 * (libsvtav1, yuv420p, g=2, crf=30). Cases: random rows with delta windows
 * on state ([-1, 0]) and action (0..15); then the same plus 1, 2 and 3
 * cameras' frames, decoded in parallel per camera, at the current frame and
 * at a 2-frame observation window. One JSON object per line. The raw
 * decoder against PyAV is bench_video.c; this measures the dataset path
 * (row lookup, episode clamping, decoder cache, per-camera threads). Last,
 * `vla dataset convert` of the dataset with its video packets copied
 * against re-encoded with LeRobot's defaults. */
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

#define W 640
#define H 480
#define MAXCAM 3

static void fill_frame(uint8_t *rgb, int cam, int64_t t) {
    /* moving gradients with a square: cheap to draw, not trivially compressible */
    for (int y = 0; y < H; y++) {
        uint8_t *row = rgb + (size_t)y * W * 3;
        for (int x = 0; x < W; x++) {
            row[x * 3] = (uint8_t)(x / 3 + t * 2 + cam * 50);
            row[x * 3 + 1] = (uint8_t)(y / 2 + t);
            row[x * 3 + 2] = (uint8_t)((x ^ y) + cam * 30);
        }
    }
    int sx = (int)((t * 7) % (W - 80)), sy = (int)((t * 5) % (H - 80));
    for (int y = sy; y < sy + 80; y++) memset(rgb + ((size_t)y * W + sx) * 3, 240, 80 * 3);
}

vla_status vla_bench_generate_dataset(const char *root, int episodes, int ep_len, int cams) {
    vla_lr_feature_spec f[2 + MAXCAM] = {
        {"observation.state", "float32", 1, {14}, NULL, 0},
        {"action", "float32", 1, {14}, NULL, 0},
    };
    static const char *keys[MAXCAM] = {"observation.images.front", "observation.images.top", "observation.images.wrist"};
    for (int c = 0; c < cams; c++) f[2 + c] = (vla_lr_feature_spec){keys[c], "video", 3, {H, W, 3}, NULL, 0};
    vla_lr_writer_opts o = {.fps = 30, .robot_type = "bench_bot", .features = f, .n_features = 2 + cams};
    vla_lr_writer *w;
    VLA_TRY(vla_lr_writer_open(root, &o, &w));
    uint8_t *img[MAXCAM];
    for (int c = 0; c < cams; c++) img[c] = malloc((size_t)W * H * 3);
    vla_status st = VLA_OK;
    float state[14], action[14];
    vla_rng g = vla_rng_stream(3, 0);
    int64_t t = 0;
    for (int e = 0; e < episodes && st == VLA_OK; e++) {
        for (int k = 0; k < ep_len && st == VLA_OK; k++, t++) {
            for (int j = 0; j < 14; j++) {
                state[j] += (float)(vla_rng_uniform_f64(&g) - 0.5);
                action[j] = state[j] + 0.1f;
            }
            for (int c = 0; c < cams; c++) fill_frame(img[c], c, t);
            const float *vals[2] = {state, action};
            st = vla_lr_writer_add_frame(w, e % 2 ? "fold the towel" : "pick the cube", vals, (const uint8_t *const *)img);
        }
        if (st == VLA_OK) st = vla_lr_writer_save_episode(w);
    }
    for (int c = 0; c < cams; c++) free(img[c]);
    if (st == VLA_OK) return vla_lr_writer_close(w);
    vla_lr_writer_abort(w);
    return st;
}

int vla_bench_dataset(int argc, char **argv) {
    int64_t episodes = 4, ep_len = 90, iters = 200, seed = 1, out_size = 0;
    const char *root = NULL;
    bool quick = false;
    const vla_flag flags[] = {
        {"root", VLA_FLAG_STRING, &root, "DIR", "use this dataset instead of generating one"},
        {"episodes", VLA_FLAG_INT, &episodes, "N", "episodes to generate (default 4)"},
        {"episode-len", VLA_FLAG_INT, &ep_len, "N", "frames per episode (default 90)"},
        {"iters", VLA_FLAG_INT, &iters, "N", "samples per case (default 200)"},
        {"size", VLA_FLAG_INT, &out_size, "PX", "resize frames to PX×PX (default native)"},
        {"seed", VLA_FLAG_INT, &seed, "N", "sampling seed"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "2 episodes of 30 frames, 20 samples per case (smoke test)"},
    };
    const vla_command_spec spec = {"vla bench dataset", NULL, "Random-access throughput of the dataset API (rows, windows, frames).",
                                   NULL, flags, 7, 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) episodes = 2, ep_len = 30, iters = 20;
    char gen[512] = "";
    if (!root) {
        snprintf(gen, sizeof gen, "%s/vla-bench-dataset-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        double t0 = vla_now_s();
        vla_status st = vla_bench_generate_dataset(gen, (int)episodes, (int)ep_len, MAXCAM);
        if (st != VLA_OK) return vla_cli_fail(st);
        double dt = vla_now_s() - t0;
        printf("{\"bench\":\"dataset\",\"case\":\"write\",\"frames\":%lld,\"cameras\":%d,\"width\":%d,\"height\":%d,\"seconds\":%.3f,"
               "\"frames_per_s\":%.1f}\n",
               (long long)(episodes * ep_len), MAXCAM, W, H, dt, (double)(episodes * ep_len * MAXCAM) / dt);
        root = gen;
    }
    double t0 = vla_now_s();
    vla_lerobot *ds;
    vla_status st = vla_lerobot_open(root, &ds);
    if (st != VLA_OK) return vla_cli_fail(st);
    printf("{\"bench\":\"dataset\",\"case\":\"open\",\"rows\":%lld,\"episodes\":%lld,\"seconds\":%.4f}\n", (long long)ds->n_rows,
           (long long)ds->n_episodes, vla_now_s() - t0);
    const vla_lr_feature *sf = vla_lerobot_feature(ds, "observation.state"), *af = vla_lerobot_feature(ds, "action");
    int obs_off[2] = {-1, 0}, act_off[16];
    for (int i = 0; i < 16; i++) act_off[i] = i;
    int64_t sw = sf ? sf->width : 0, aw = af ? af->width : 0;
    float *sbuf = malloc((size_t)(2 * sw + 1) * sizeof(float)), *abuf = malloc((size_t)(16 * aw + 1) * sizeof(float));
    uint8_t pad[16];
    /* rows + windows */
    vla_rng g = vla_rng_stream((uint64_t)seed, 0);
    int64_t n_rows_case = iters * 100;
    t0 = vla_now_s();
    for (int64_t i = 0; i < n_rows_case && sf && af; i++) {
        int64_t row = vla_rng_int(&g, 0, ds->n_rows);
        vla_lerobot_window(ds, "observation.state", row, obs_off, 2, sbuf, pad);
        vla_lerobot_window(ds, "action", row, act_off, 16, abuf, pad);
    }
    double dt = vla_now_s() - t0;
    printf("{\"bench\":\"dataset\",\"case\":\"rows_windows\",\"samples\":%lld,\"samples_per_s\":%.0f,\"us_per_sample\":%.3f}\n",
           (long long)n_rows_case, (double)n_rows_case / dt, dt * 1e6 / (double)n_rows_case);
    int ncam = ds->n_cameras < MAXCAM ? ds->n_cameras : MAXCAM;
    for (int window = 1; window <= 2; window++)
        for (int nc = 1; nc <= ncam; nc++) {
            vla_lr_reader *r;
            st = vla_lr_reader_open(ds, &r);
            if (st != VLA_OK) break;
            int cams[MAXCAM];
            uint8_t *bufs[MAXCAM];
            int ow = out_size ? (int)out_size : ds->features[ds->camera_feature[0]].width_px;
            int oh = out_size ? (int)out_size : ds->features[ds->camera_feature[0]].height;
            for (int c = 0; c < nc; c++) {
                cams[c] = c;
                bufs[c] = malloc((size_t)ow * oh * 3 * 2);
            }
            g = vla_rng_stream((uint64_t)seed, (uint64_t)(window * 10 + nc));
            /* warm: open the decoders once, as a long-running loader would */
            int64_t r0 = 0;
            st = vla_lr_reader_sample(r, cams, nc, &r0, 1, out_size ? ow : 0, out_size ? oh : 0, 0, bufs);
            int64_t s0, d0, h0, q0;
            vla_lr_reader_counters(r, &s0, &d0, &h0, &q0, NULL);
            t0 = vla_now_s();
            int64_t i = 0;
            for (; st == VLA_OK && i < iters; i++) {
                int64_t row = vla_rng_int(&g, 0, ds->n_rows), rows[2];
                if (window == 2) vla_lerobot_window_rows(ds, row, obs_off, 2, rows, pad);
                else rows[0] = row;
                if (sf) vla_lerobot_window(ds, "observation.state", row, obs_off, 2, sbuf, pad);
                if (af) vla_lerobot_window(ds, "action", row, act_off, 16, abuf, pad);
                st = vla_lr_reader_sample(r, cams, nc, rows, window, out_size ? ow : 0, out_size ? oh : 0, 0, bufs);
            }
            dt = vla_now_s() - t0;
            int64_t s1, d1, h1, q1;
            int nd;
            vla_lr_reader_counters(r, &s1, &d1, &h1, &q1, &nd);
            double nfr = (double)(q1 - q0 > 0 ? q1 - q0 : 1);
            if (st != VLA_OK) fprintf(stderr, "vla bench dataset: %s\n", vla_error_message());
            else
                printf("{\"bench\":\"dataset\",\"case\":\"frames\",\"cameras\":%d,\"obs_window\":%d,\"width\":%d,\"height\":%d,"
                       "\"samples\":%lld,\"samples_per_s\":%.1f,\"frames_per_s\":%.1f,\"ms_per_sample\":%.2f,"
                       "\"seeks_per_frame\":%.3f,\"decoded_per_frame\":%.3f,\"cache_hits_per_frame\":%.3f,\"open_decoders\":%d}\n",
                       nc, window, ow, oh, (long long)i, (double)i / dt, (double)(i * nc * window) / dt, dt * 1e3 / (double)i,
                       (double)(s1 - s0) / nfr, (double)(d1 - d0) / nfr, (double)(h1 - h0) / nfr, nd);
            for (int c = 0; c < nc; c++) free(bufs[c]);
            vla_lr_reader_close(r);
            fflush(stdout);
        }
    free(sbuf);
    free(abuf);
    /* convert: copying the packets (remux) against re-encoding with LeRobot's defaults */
    double conv_s[2] = {0, 0};
    for (int enc = 0; st == VLA_OK && enc < 2; enc++) {
        char dst[700];
        snprintf(dst, sizeof dst, "%s/vla-bench-convert-%d-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), enc);
        double c0 = vla_now_s();
        st = vla_lerobot_convert(root, dst, enc ? "libsvtav1" : NULL);
        conv_s[enc] = vla_now_s() - c0;
        vla_remove_tree(dst);
        if (st == VLA_OK)
            printf("{\"bench\":\"dataset\",\"case\":\"convert\",\"video\":\"%s\",\"frames\":%lld,\"cameras\":%d,\"seconds\":%.3f,"
                   "\"frames_per_s\":%.1f}\n",
                   enc ? "re-encode" : "copy", (long long)ds->n_rows, ds->n_cameras, conv_s[enc],
                   (double)(ds->n_rows * ds->n_cameras) / conv_s[enc]);
    }
    if (st == VLA_OK) printf("{\"bench\":\"dataset\",\"case\":\"convert_ratio\",\"copy_vs_reencode\":%.2f}\n", conv_s[1] / conv_s[0]);
    else fprintf(stderr, "vla bench dataset: %s\n", vla_error_message());
    vla_lerobot_close(ds);
    if (gen[0]) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", gen);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", gen);
    }
    return st == VLA_OK ? 0 : 1;
}
