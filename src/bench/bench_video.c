/* bench_video.c — `vla bench video`: random-access frame throughput as
 * training does it (random sample indices, 1–3 cameras, a delta window such
 * as [-0.1, 0] s), on a 640×480 AV1 clip encoded with LeRobot's settings
 * (libsvtav1, yuv420p, g=2, crf=30, preset 12) by the ffmpeg CLI. The same
 * index list is written to a file and decoded in the same run by
 * tools/bench_pyav.py (Debian python3-av) doing LeRobot's seek-then-decode,
 * so the ratio compares like with like. Throughput is given per wall second
 * and per CPU second of the process (the per-core figure, independent of how
 * many threads a decoder starts). One JSON object per line. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/timer.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "io/video.h"

#define MAX_CAMS 3
#define MAX_WIN 16

static double cpu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_window(const char *s, double *w, int max) {
    int n = 0;
    const char *p = s;
    while (*p && n < max) {
        char *end;
        w[n] = strtod(p, &end);
        if (end == p) return -1;
        n++;
        p = end;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    return n;
}

/* Sum of bytes: a cheap fingerprint to check both decoders saw the same frames. */
static uint64_t byte_sum(const uint8_t *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += p[i];
    return s;
}

typedef struct {
    int cams;
    double fps_wall, fps_cpu;
} peer_result;

/* Run the PyAV peer and collect its JSON lines. Returns the number of lines
 * parsed, -1 when the peer could not run. */
static int run_peer(const char *python, const char *script, const char *clip, const char *ts_path, const char *mode,
                    int max_cams, double tol, peer_result *res, int cap, uint64_t *check_sum, char *why, size_t why_cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --clip '%s' --timestamps '%s' --max-cameras %d --mode %s --tolerance %g 2>&1",
             python, script, clip, ts_path, max_cams, mode, tol);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, why_cap, "cannot run %s", python);
        return -1;
    }
    char line[4096];
    int n = 0;
    why[0] = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *j = json_loads(line, 0, &err);
        if (!j) {
            if (!why[0]) {
                snprintf(why, why_cap, "%.400s", line);
                size_t l = strlen(why);
                if (l && why[l - 1] == '\n') why[l - 1] = 0;
            }
            continue;
        }
        json_t *unavailable = json_object_get(j, "unavailable");
        if (unavailable) snprintf(why, why_cap, "%s", json_string_value(unavailable) ? json_string_value(unavailable) : "");
        json_t *cs = json_object_get(j, "check_sum");
        if (cs && json_is_integer(cs)) *check_sum = (uint64_t)json_integer_value(cs);
        json_t *cams = json_object_get(j, "cameras");
        if (cams && n < cap) {
            res[n].cams = (int)json_integer_value(cams);
            res[n].fps_wall = json_number_value(json_object_get(j, "frames_per_s"));
            res[n].fps_cpu = json_number_value(json_object_get(j, "frames_per_cpu_s"));
            n++;
        }
        json_decref(j);
    }
    int rc = pclose(f);
    if (n == 0) {
        if (!why[0]) snprintf(why, why_cap, "peer exited with status %d and printed no results", rc);
        return -1;
    }
    return n;
}

/* One run's clip, decoders, query times and results, shared by its phases. */
typedef struct {
    vla_video_decoder *dec[MAX_CAMS]; /* the same clip opened once per camera */
    const vla_video_info *in;
    double t_open;                    /* seconds to open one decoder */
    int64_t samples;
    int nwin;
    const char *window_s;
    double *ts;                       /* [samples × nwin] query times */
    uint8_t *frames;                  /* [MAX_CAMS × nwin] frames of fb bytes */
    size_t fb;
    double tol;
    uint64_t check_sum;               /* of the first samples' frames, camera 0 */
    double fps_cpu[MAX_CAMS + 1], fps_wall[MAX_CAMS + 1]; /* sequential, by camera count */
} video_bench;

/* The clip: the given one, or a 640×480 AV1 one encoded into `dir` with
 * LeRobot's settings by the ffmpeg CLI. */
static vla_status make_clip(const char *clip_arg, const char *dir, int64_t width, int64_t height, int64_t fps,
                            int64_t seconds, char *clip, size_t cap) {
    if (clip_arg) {
        snprintf(clip, cap, "%s", clip_arg);
        return VLA_OK;
    }
    char cmd[2048];
    snprintf(clip, cap, "%s/clip.mp4", dir);
    snprintf(cmd, sizeof cmd,
             "SVT_LOG=1 ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi "
             "-i testsrc2=size=%dx%d:rate=%d -t %d -c:v libsvtav1 -g 2 -crf 30 -preset 12 -pix_fmt yuv420p '%s'",
             (int)width, (int)height, (int)fps, (int)seconds, clip);
    double t0 = vla_now_s();
    if (system(cmd) != 0)
        return vla_error(VLA_ERR_IO, "could not generate the clip with the ffmpeg CLI (libsvtav1): %s", cmd);
    fprintf(stderr, "bench video: encoded %dx%d %d s AV1 clip in %.1f s\n", (int)width, (int)height, (int)seconds,
            vla_now_s() - t0);
    return VLA_OK;
}

static vla_status open_decoders(video_bench *b, const char *clip) {
    vla_video_decoder_opts dopts = {.threads = 1, .cache_frames = 0};
    double t0 = vla_now_s();
    for (int c = 0; c < MAX_CAMS; c++) VLA_TRY(vla_video_decoder_open(clip, &dopts, &b->dec[c]));
    b->t_open = (vla_now_s() - t0) / MAX_CAMS;
    b->in = vla_video_decoder_info(b->dec[0]);
    if (b->in->frame_count <= 0 || b->in->fps <= 0)
        return vla_error(VLA_ERR_FORMAT, "%s: unknown frame count or fps", clip);
    return VLA_OK;
}

/* Random sample indices as LeRobot turns them into query times — offsets
 * round(d·fps), indices clamped to the episode (here the whole clip), time =
 * index / fps — kept in b->ts and written to ts_path for the peer. */
static vla_status make_timestamps(video_bench *b, const double *window, int64_t seed, const char *ts_path) {
    int64_t nframes = b->in->frame_count, nwin = b->nwin;
    double vfps = b->in->fps;
    b->ts = malloc(sizeof(double) * (size_t)b->samples * (size_t)nwin);
    FILE *tf = fopen(ts_path, "w");
    if (!b->ts || !tf) {
        if (tf) fclose(tf);
        return vla_error(VLA_ERR_IO, "%s: cannot write", ts_path);
    }
    vla_rng rng = vla_rng_stream((uint64_t)seed, 0);
    for (int64_t s = 0; s < b->samples; s++) {
        int64_t idx = vla_rng_int(&rng, 0, nframes);
        for (int k = 0; k < nwin; k++) {
            int64_t j = idx + (int64_t)llround(window[k] * vfps);
            if (j < 0) j = 0;
            if (j > nframes - 1) j = nframes - 1;
            b->ts[s * nwin + k] = (double)j / vfps;
            fprintf(tf, "%s%.17g", k ? " " : "", b->ts[s * nwin + k]);
        }
        fputc('\n', tf);
    }
    fclose(tf);
    return VLA_OK;
}

/* Fingerprint of the first samples (camera 0), untimed, to compare with the peer. */
static vla_status fingerprint(video_bench *b) {
    int n_check = b->samples < 20 ? (int)b->samples : 20;
    b->check_sum = 0;
    for (int s = 0; s < n_check; s++)
        for (int k = 0; k < b->nwin; k++) {
            VLA_TRY(vla_video_decoder_read(b->dec[0], b->ts[s * b->nwin + k], b->tol, 0, 0, b->frames, NULL));
            b->check_sum += byte_sum(b->frames, b->fb);
        }
    return VLA_OK;
}

/* `cams` cameras read one after the other on one thread: the per-core figure. */
static vla_status bench_sequential(video_bench *b, int cams) {
    int nwin = b->nwin;
    vla_video_stats before[MAX_CAMS];
    for (int c = 0; c < cams; c++) before[c] = vla_video_decoder_stats(b->dec[c]);
    double w0 = vla_now_s(), c0 = cpu_now_s();
    for (int64_t s = 0; s < b->samples; s++)
        for (int c = 0; c < cams; c++)
            for (int k = 0; k < nwin; k++)
                VLA_TRY(vla_video_decoder_read(b->dec[c], b->ts[s * nwin + k], b->tol, 0, 0,
                                               b->frames + b->fb * (size_t)(c * nwin + k), NULL));
    double wall = vla_now_s() - w0, cpu = cpu_now_s() - c0;
    int64_t nf = b->samples * cams * nwin, seeks = 0, decoded = 0;
    for (int c = 0; c < cams; c++) {
        vla_video_stats a = vla_video_decoder_stats(b->dec[c]);
        seeks += a.seeks - before[c].seeks;
        decoded += a.decoded - before[c].decoded;
    }
    b->fps_wall[cams] = (double)nf / wall;
    b->fps_cpu[cams] = (double)nf / cpu;
    printf("{\"bench\":\"video\",\"impl\":\"vla\",\"mode\":\"sequential\",\"threads\":1,\"cameras\":%d,"
           "\"samples\":%lld,\"window\":\"%s\",\"frames\":%lld,\"frames_per_s\":%.1f,\"frames_per_cpu_s\":%.1f,"
           "\"decoded_per_returned\":%.2f,\"seeks_per_frame\":%.2f,\"open_ms\":%.1f,\"clip\":\"%dx%d %s %.0f fps\"}\n",
           cams, (long long)b->samples, b->window_s, (long long)nf, b->fps_wall[cams], b->fps_cpu[cams],
           (double)decoded / (double)nf, (double)seeks / (double)nf, b->t_open * 1e3, b->in->width, b->in->height,
           b->in->codec, b->in->fps);
    fflush(stdout);
    return VLA_OK;
}

/* `cams` cameras in parallel, one thread each, as the loader does. */
static vla_status bench_parallel(video_bench *b, int cams) {
    int nwin = b->nwin;
    vla_video_request q[MAX_CAMS];
    double w0 = vla_now_s(), c0 = cpu_now_s();
    for (int64_t s = 0; s < b->samples; s++) {
        for (int c = 0; c < cams; c++)
            q[c] = (vla_video_request){.dec = b->dec[c], .ts = b->ts + s * nwin, .n = nwin, .tol = b->tol,
                                       .rgb = b->frames + b->fb * (size_t)(c * nwin)};
        VLA_TRY(vla_video_read_batch(q, cams));
    }
    double wall = vla_now_s() - w0, cpu = cpu_now_s() - c0;
    int64_t nf = b->samples * cams * nwin;
    printf("{\"bench\":\"video\",\"impl\":\"vla\",\"mode\":\"parallel_cameras\",\"threads\":%d,\"cameras\":%d,"
           "\"samples\":%lld,\"frames\":%lld,\"frames_per_s\":%.1f,\"frames_per_cpu_s\":%.1f}\n",
           cams, cams, (long long)b->samples, (long long)nf, (double)nf / wall, (double)nf / cpu);
    fflush(stdout);
    return VLA_OK;
}

/* The PyAV peer on the same clip and timestamps, in LeRobot's mode and two
 * kinder ones; one line per camera count with the ratio to ours. */
static void bench_peer(const video_bench *b, const char *python, const char *script, const char *clip,
                       const char *ts_path) {
    /* reopen: a new container per call, as LeRobot's reader; persistent: one
     * open container per camera; persistent1: that, with one decoder thread. */
    const char *modes[3] = {"reopen", "persistent", "persistent1"};
    for (int m = 0; m < 3; m++) {
        peer_result pr[MAX_CAMS];
        uint64_t py_sum = 0;
        char why[512];
        int np = run_peer(python, script, clip, ts_path, modes[m], MAX_CAMS, b->tol, pr, MAX_CAMS, &py_sum, why,
                          sizeof why);
        if (np < 0) {
            printf("{\"bench\":\"video\",\"impl\":\"pyav\",\"mode\":\"%s\",\"available\":false,\"reason\":\"", modes[m]);
            vla_cli_print_json_chars(why);
            printf("\"}\n");
            fflush(stdout);
            break;
        }
        for (int i = 0; i < np; i++) {
            int cams = pr[i].cams;
            if (cams < 1 || cams > MAX_CAMS) continue;
            printf("{\"bench\":\"video\",\"impl\":\"pyav\",\"mode\":\"%s\",\"cameras\":%d,\"frames_per_s\":%.1f,"
                   "\"frames_per_cpu_s\":%.1f,\"vla_frames_per_cpu_s\":%.1f,\"ratio_per_core\":%.2f,"
                   "\"ratio_wall\":%.2f,\"same_frames\":%s}\n",
                   modes[m], cams, pr[i].fps_wall, pr[i].fps_cpu, b->fps_cpu[cams],
                   pr[i].fps_cpu > 0 ? b->fps_cpu[cams] / pr[i].fps_cpu : 0.0,
                   pr[i].fps_wall > 0 ? b->fps_wall[cams] / pr[i].fps_wall : 0.0,
                   py_sum == b->check_sum ? "true" : "false");
            fflush(stdout);
        }
    }
}

int vla_bench_video(int argc, char **argv) {
    const char *clip_arg = NULL, *window_s = "-0.1,0", *python = "/usr/bin/python3", *script = NULL;
    int64_t samples = 100, seconds = 20, fps = 30, width = 640, height = 480, seed = 1234;
    bool no_peer = false, quick = false;
    const vla_flag flags[] = {
        {"clip", VLA_FLAG_STRING, &clip_arg, "FILE", "use this video instead of generating one"},
        {"samples", VLA_FLAG_INT, &samples, "N", "random samples per camera count (default 100)"},
        {"seconds", VLA_FLAG_INT, &seconds, "S", "length of the generated clip (default 20)"},
        {"fps", VLA_FLAG_INT, &fps, "N", "frame rate of the generated clip (default 30)"},
        {"width", VLA_FLAG_INT, &width, "W", "width of the generated clip (default 640)"},
        {"height", VLA_FLAG_INT, &height, "H", "height of the generated clip (default 480)"},
        {"window", VLA_FLAG_STRING, &window_s, "LIST", "delta timestamps in seconds (default -0.1,0)"},
        {"seed", VLA_FLAG_INT, &seed, "N", "seed of the random indices"},
        {"python", VLA_FLAG_STRING, &python, "EXE", "interpreter with python3-av (default /usr/bin/python3)"},
        {"pyav-script", VLA_FLAG_STRING, &script, "FILE", "the PyAV peer (default tools/bench_pyav.py)"},
        {"no-peer", VLA_FLAG_BOOL, &no_peer, NULL, "skip the PyAV comparison"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "a 2 s 320x240 clip, 10 samples, no peer (smoke test)"},
    };
    const vla_command_spec spec = {"vla bench video", NULL,
                                   "Random-access video frame throughput (vla.c vs PyAV, LeRobot's access pattern).",
                                   NULL, flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result fres;
    int rc = vla_cli_parse(&spec, argc, argv, &fres);
    if (rc >= 0) return rc;
    if (quick) samples = 10, seconds = 2, width = 320, height = 240, no_peer = true;
    double window[MAX_WIN];
    int nwin = parse_window(window_s, window, MAX_WIN);
    if (nwin <= 0 || samples <= 0 || fps <= 0 || seconds <= 0)
        return vla_cli_fail(vla_error(VLA_ERR_INVALID_ARG, "bad --window, --samples, --fps or --seconds"));

    char dir[512];
    const char *tmpbase = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vla-bench-video-XXXXXX", tmpbase ? tmpbase : "/tmp");
    if (!mkdtemp(dir)) return vla_cli_fail(vla_error(VLA_ERR_IO, "%s: mkdtemp: %s", dir, strerror(errno)));
    char clip[640], ts_path[640], cmd[2048], script_buf[1024];
    snprintf(ts_path, sizeof ts_path, "%s/timestamps.txt", dir);
    video_bench b = {.samples = samples, .nwin = nwin, .window_s = window_s, .tol = VLA_VIDEO_DEFAULT_TOLERANCE_S};
    vla_status st = make_clip(clip_arg, dir, width, height, fps, seconds, clip, sizeof clip);
    if (st == VLA_OK) st = open_decoders(&b, clip);
    if (st == VLA_OK) st = make_timestamps(&b, window, seed, ts_path);
    if (st == VLA_OK) {
        b.fb = (size_t)b.in->width * (size_t)b.in->height * 3;
        if (!(b.frames = malloc(b.fb * (size_t)nwin * MAX_CAMS))) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    if (st == VLA_OK) st = fingerprint(&b);
    for (int cams = 1; st == VLA_OK && cams <= MAX_CAMS; cams++) {
        st = bench_sequential(&b, cams);
        if (st == VLA_OK && cams > 1) st = bench_parallel(&b, cams);
    }
    if (st != VLA_OK) {
        vla_cli_fail(st);
        goto done;
    }
    if (!no_peer) {
        if (!script) {
            vla_bench_source_file("tools/bench_pyav.py", script_buf, sizeof script_buf);
            script = script_buf;
        }
        bench_peer(&b, python, script, clip, ts_path);
    }
done:
    for (int c = 0; c < MAX_CAMS; c++) vla_video_decoder_close(b.dec[c]);
    free(b.frames);
    free(b.ts);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench video: could not remove %s\n", dir);
    return st == VLA_OK ? 0 : 1;
}
