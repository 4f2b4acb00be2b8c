/* test_video.c — the FFmpeg video layer against the ffmpeg CLI: frames by
 * timestamp equal `ffmpeg -f rawvideo -pix_fmt rgb24` byte for byte (AV1 made
 * with LeRobot's settings by SVT-AV1 and at 64×48 by libaom, H.264 and HEVC
 * with B-frames), tolerance errors, the encoder's round trip
 * checked with ffprobe, concatenated episodes, and bad files. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "base/fsutil.h"
#include "base/rng.h"
#include "base/status.h"
#include "io/video.h"

#define FF "SVT_LOG=1 ffmpeg -hide_banner -loglevel error -nostdin -y "

typedef struct {
    const char *name;
    char path[1024];
    int w, h, n;
    uint8_t *ref; /* n frames of rgb24 from the ffmpeg CLI */
} clip;

static clip av1 = {"av1", "", 64, 64, 30, NULL};
static clip h264 = {"h264", "", 64, 48, 30, NULL};
static clip hevc = {"hevc", "", 64, 48, 30, NULL};
static clip aom = {"aom", "", 64, 48, 30, NULL}; /* AV1 below SVT-AV1's 64-pixel minimum */

static uint8_t *cli_rgb(const char *path, const char *vf, size_t bytes) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, FF "-i '%s' %s%s -fps_mode passthrough -f rawvideo -pix_fmt rgb24 -", path,
             vf ? "-vf " : "", vf ? vf : "");
    char *buf = malloc(bytes + 2);
    assert_non_null(buf);
    int rc = test_run(cmd, buf, bytes + 2);
    assert_int_equal(rc, 0);
    return (uint8_t *)buf;
}

static int make_clips(void **state) {
    (void)state;
    char cmd[2048];
    snprintf(av1.path, sizeof av1.path, "%s", test_tmp_path("av1.mp4"));
    snprintf(h264.path, sizeof h264.path, "%s", test_tmp_path("h264.mp4"));
    /* LeRobot's encoding: libsvtav1, yuv420p, g 2, crf 30 (preset 12). SVT-AV1
     * needs at least 64×64. */
    snprintf(cmd, sizeof cmd,
             FF "-f lavfi -i testsrc2=size=64x64:rate=10 -frames:v 30 -c:v libsvtav1 -g 2 -crf 30 -preset 12 "
                "-pix_fmt yuv420p '%s'",
             av1.path);
    if (test_run(cmd, NULL, 0) != 0) return -1;
    /* H.264 with B-frames and a longer GOP, so pts ≠ dts and forward decoding spans GOPs. */
    snprintf(cmd, sizeof cmd,
             FF "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 30 -c:v libx264 -g 8 -bf 2 -crf 23 "
                "-pix_fmt yuv420p '%s'",
             h264.path);
    if (test_run(cmd, NULL, 0) != 0) return -1;
    snprintf(hevc.path, sizeof hevc.path, "%s", test_tmp_path("hevc.mp4"));
    snprintf(cmd, sizeof cmd,
             FF "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 30 -c:v libx265 -x265-params log-level=error "
                "-g 8 -crf 28 -pix_fmt yuv420p '%s'",
             hevc.path);
    if (test_run(cmd, NULL, 0) != 0) return -1;
    hevc.ref = cli_rgb(hevc.path, NULL, (size_t)hevc.w * hevc.h * 3 * hevc.n);
    snprintf(aom.path, sizeof aom.path, "%s", test_tmp_path("aom.mp4"));
    snprintf(cmd, sizeof cmd,
             FF "-f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 30 -c:v libaom-av1 -cpu-used 8 -g 2 -crf 30 "
                "-pix_fmt yuv420p '%s'",
             aom.path);
    if (test_run(cmd, NULL, 0) != 0) return -1;
    aom.ref = cli_rgb(aom.path, NULL, (size_t)aom.w * aom.h * 3 * aom.n);
    av1.ref = cli_rgb(av1.path, NULL, (size_t)av1.w * av1.h * 3 * av1.n);
    h264.ref = cli_rgb(h264.path, NULL, (size_t)h264.w * h264.h * 3 * h264.n);
    return 0;
}

static int free_clips(void **state) {
    (void)state;
    free(av1.ref);
    free(h264.ref);
    free(hevc.ref);
    free(aom.ref);
    return 0;
}

static void check_info(const clip *c, const char *codec) {
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(c->path, NULL, &d), VLA_OK);
    const vla_video_info *in = vla_video_decoder_info(d);
    assert_string_equal(in->codec, codec);
    assert_string_equal(in->pix_fmt, "yuv420p");
    assert_int_equal(in->width, c->w);
    assert_int_equal(in->height, c->h);
    assert_true(fabs(in->fps - 10.0) < 1e-9);
    assert_int_equal(in->frame_count, c->n);
    assert_true(fabs(in->duration - 3.0) < 0.11);
    vla_video_decoder_close(d);
}

static void test_info(void **state) {
    (void)state;
    check_info(&av1, "av1");
    check_info(&h264, "h264");
    check_info(&hevc, "hevc");
    check_info(&aom, "av1");
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(av1.path, NULL, &d), VLA_OK);
    assert_string_equal(vla_video_decoder_info(d)->decoder, "libdav1d");
    vla_video_decoder_close(d);
}

/* Decode every frame in the order given and compare with the CLI's bytes. */
static void check_frames(const clip *c, const int *order, int n, int cache_frames, vla_video_stats *stats) {
    vla_video_decoder_opts o = {.threads = 1, .cache_frames = cache_frames};
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(c->path, &o, &d), VLA_OK);
    size_t fb = (size_t)c->w * c->h * 3;
    uint8_t *rgb = malloc(fb);
    for (int i = 0; i < n; i++) {
        int k = order[i];
        double ft = -1;
        vla_status st = vla_video_decoder_read(d, k / 10.0, VLA_VIDEO_DEFAULT_TOLERANCE_S, 0, 0, rgb, &ft);
        if (st != VLA_OK) fail_msg("%s frame %d: %s", c->name, k, vla_error_message());
        assert_true(fabs(ft - k / 10.0) <= 1e-4);
        if (memcmp(rgb, c->ref + fb * (size_t)k, fb) != 0) fail_msg("%s frame %d differs from the ffmpeg CLI", c->name, k);
    }
    if (stats) *stats = vla_video_decoder_stats(d);
    free(rgb);
    vla_video_decoder_close(d);
}

static void test_sequential_exact(void **state) {
    (void)state;
    int order[30];
    for (int i = 0; i < 30; i++) order[i] = i;
    vla_video_stats s;
    check_frames(&av1, order, 30, 0, &s);
    assert_int_equal(s.seeks, 1); /* one seek to the start, then forward only */
    assert_int_equal(s.decoded, 30);
    check_frames(&h264, order, 30, 0, &s);
    assert_int_equal(s.seeks, 1);
    check_frames(&hevc, order, 30, 0, &s);
    assert_int_equal(s.seeks, 1);
    check_frames(&aom, order, 30, 0, &s);
    assert_int_equal(s.seeks, 1);
}

static void test_random_exact(void **state) {
    (void)state;
    int order[60];
    vla_rng r = vla_rng_stream(7, 1);
    for (int i = 0; i < 60; i++) order[i] = (int)vla_rng_int(&r, 0, 30);
    check_frames(&av1, order, 60, 0, NULL);
    check_frames(&h264, order, 60, 0, NULL);
    check_frames(&hevc, order, 60, 0, NULL);
    check_frames(&aom, order, 60, 0, NULL);
    check_frames(&av1, order, 60, -1, NULL); /* no cache: every backward step seeks */
    /* LeRobot's window [-0.3 s, 0] at random indices on the g=2 AV1 clip:
     * each frame costs at most its GOP's keyframe plus itself. */
    int win[40];
    for (int i = 0; i < 20; i++) {
        int k = (int)vla_rng_int(&r, 3, 30);
        win[2 * i] = k - 3;
        win[2 * i + 1] = k;
    }
    vla_video_stats s;
    check_frames(&av1, win, 40, 0, &s);
    assert_true(s.decoded <= 2 * s.returned);
    /* Backward within the cache: 29..0 after decoding forward hits the cache. */
    int back[30];
    for (int i = 0; i < 30; i++) back[i] = 29 - i;
    check_frames(&h264, back, 30, 0, NULL);
}

static void test_scaled_exact(void **state) {
    (void)state;
    const int ow = 40, oh = 30;
    size_t fb = (size_t)ow * oh * 3;
    uint8_t *ref = cli_rgb(av1.path, "scale=40:30", fb * 30);
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(av1.path, NULL, &d), VLA_OK);
    uint8_t *rgb = malloc(fb);
    int ks[] = {3, 17, 4, 29, 0};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(vla_video_decoder_read(d, ks[i] / 10.0, 1e-4, ow, oh, rgb, NULL), VLA_OK);
        if (memcmp(rgb, ref + fb * (size_t)ks[i], fb) != 0) fail_msg("scaled frame %d differs from the CLI", ks[i]);
    }
    free(rgb);
    free(ref);
    vla_video_decoder_close(d);
}

static void test_tolerance(void **state) {
    (void)state;
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(av1.path, NULL, &d), VLA_OK);
    uint8_t *rgb = malloc(64 * 64 * 3);
    double ft;
    /* Within tolerance of frame 3. */
    assert_int_equal(vla_video_decoder_read(d, 0.3 + 5e-5, 1e-4, 0, 0, rgb, &ft), VLA_OK);
    assert_true(fabs(ft - 0.3) < 1e-9);
    assert_memory_equal(rgb, av1.ref + 64 * 64 * 3 * 3, 64 * 64 * 3);
    /* Between frames: error that names the nearest frame. */
    assert_int_equal(vla_video_decoder_read(d, 0.43333, 1e-4, 0, 0, rgb, NULL), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "no frame within 0.0001 s of t=0.4333 (nearest 0.4000)"));
    assert_non_null(strstr(vla_error_message(), "av1.mp4"));
    /* Loose tolerance accepts the same request. */
    assert_int_equal(vla_video_decoder_read(d, 0.43333, 0.05, 0, 0, rgb, &ft), VLA_OK);
    assert_true(fabs(ft - 0.4) < 1e-9);
    /* Past the end and before the start. */
    assert_int_equal(vla_video_decoder_read(d, 3.5, 1e-4, 0, 0, rgb, NULL), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "(nearest 2.9000)"));
    assert_int_equal(vla_video_decoder_read(d, -0.5, 1e-4, 0, 0, rgb, NULL), VLA_ERR_NOT_FOUND);
    /* Decoding still works after errors. */
    assert_int_equal(vla_video_decoder_read(d, 2.9, 1e-4, 0, 0, rgb, NULL), VLA_OK);
    assert_memory_equal(rgb, av1.ref + 64 * 64 * 3 * 29, 64 * 64 * 3);
    assert_int_equal(vla_video_decoder_read(d, NAN, 1e-4, 0, 0, rgb, NULL), VLA_ERR_INVALID_ARG);
    free(rgb);
    vla_video_decoder_close(d);
}

static void test_batch(void **state) {
    (void)state;
    vla_video_decoder *a, *b;
    assert_int_equal(vla_video_decoder_open(av1.path, NULL, &a), VLA_OK);
    assert_int_equal(vla_video_decoder_open(h264.path, NULL, &b), VLA_OK);
    double ta[] = {1.0, 0.7, 0.8, 0.9}, tb[] = {2.5, 0.0, 2.2};
    uint8_t *ra = malloc(64 * 64 * 3 * 4), *rb = malloc(64 * 48 * 3 * 3);
    vla_video_request q[2] = {
        {.dec = a, .ts = ta, .n = 4, .tol = 1e-4, .rgb = ra},
        {.dec = b, .ts = tb, .n = 3, .tol = 1e-4, .rgb = rb},
    };
    assert_int_equal(vla_video_read_batch(q, 2), VLA_OK);
    for (int i = 0; i < 4; i++)
        assert_memory_equal(ra + 64 * 64 * 3 * i, av1.ref + 64 * 64 * 3 * (size_t)lround(ta[i] * 10), 64 * 64 * 3);
    for (int i = 0; i < 3; i++)
        assert_memory_equal(rb + 64 * 48 * 3 * i, h264.ref + 64 * 48 * 3 * (size_t)lround(tb[i] * 10), 64 * 48 * 3);
    /* A failing camera fails the batch with its message; the other still decodes. */
    double bad[] = {0.05};
    q[1].ts = bad;
    q[1].n = 1;
    assert_int_equal(vla_video_read_batch(q, 2), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "h264.mp4: no frame within"));
    assert_int_equal(q[0].status, VLA_OK);
    /* The same decoder twice is refused (decoders are not thread-safe). */
    q[1].dec = a;
    assert_int_equal(vla_video_read_batch(q, 2), VLA_ERR_INVALID_ARG);
    free(ra);
    free(rb);
    vla_video_decoder_close(a);
    vla_video_decoder_close(b);
}

/* A frame whose content depends on (episode, k) so mixed-up frames show. */
static void synth(uint8_t *rgb, int w, int h, int ep, int k) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            int bx = (x + 4 * k) / 16, by = y / 16;
            int sq = ((bx + by) & 1) ? 200 : 40;
            p[0] = (uint8_t)(ep ? 255 - sq : sq);
            p[1] = (uint8_t)(x * 255 / (w - 1));
            p[2] = (uint8_t)((y * 255 / (h - 1) + 16 * k) & 255);
        }
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        se += d * d;
    }
    if (se == 0) return 99;
    return 10 * log10(255.0 * 255.0 / (se / (double)n));
}

static int count_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static void roundtrip(int w, int h, const char *codec, const char *expect_enc, const char *expect_codec) {
    char path[1024];
    snprintf(path, sizeof path, "%s/rt_%dx%d_%s.mp4", test_tmp_path("enc"), w, h, codec ? codec : "default");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", test_tmp_path("enc"));
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    vla_video_writer_opts o = {.width = w, .height = h, .fps = 10, .codec = codec, .crf = -1, .gop = -1};
    vla_video_writer *vw;
    assert_int_equal(vla_video_writer_open(path, &o, &vw), VLA_OK);
    assert_string_equal(vla_video_writer_codec(vw), expect_enc);
    size_t fb = (size_t)w * h * 3;
    uint8_t *src = malloc(fb * 20), *rgb = malloc(fb);
    for (int k = 0; k < 20; k++) {
        synth(src + fb * k, w, h, 0, k);
        assert_int_equal(vla_video_writer_add_rgb(vw, src + fb * k, w * 3), VLA_OK);
        assert_true(fabs(vla_video_writer_time(vw) - (k + 1) / 10.0) < 1e-12);
    }
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0); /* nothing at the target before close */
    assert_int_equal(vla_video_writer_close(vw), VLA_OK);
    assert_int_equal(stat(path, &sb), 0);

    char out[4096];
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height,pix_fmt,nb_frames "
             "-of csv=p=0 '%s'",
             path);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    char expect[128];
    snprintf(expect, sizeof expect, "%s,%d,%d,yuv420p,20\n", expect_codec, w, h);
    assert_string_equal(out, expect);
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 '%s'", path);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    char *p = out;
    for (int k = 0; k < 20; k++) {
        while (*p && !(*p >= '0' && *p <= '9') && *p != '-') p++; /* x264 frames carry side data: "0.0," */
        char *end;
        double t = strtod(p, &end);
        assert_true(end != p);
        assert_true(fabs(t - k / 10.0) < 1e-6);
        p = end;
    }

    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(path, NULL, &d), VLA_OK);
    for (int k = 19; k >= 0; k -= 3) {
        assert_int_equal(vla_video_decoder_read(d, k / 10.0, 1e-4, 0, 0, rgb, NULL), VLA_OK);
        double q = psnr(rgb, src + fb * k, fb);
        if (q < 20) fail_msg("%dx%d frame %d: PSNR %.1f dB", w, h, k, q);
    }
    vla_video_decoder_close(d);
    free(src);
    free(rgb);
}

static void test_encode_roundtrip(void **state) {
    (void)state;
    roundtrip(96, 96, NULL, "libsvtav1", "av1"); /* PushT's size, LeRobot's codec */
    roundtrip(64, 48, NULL, "libx264", "h264");  /* below SVT-AV1's 64-pixel minimum */
    roundtrip(64, 64, "libx264", "libx264", "h264");
    /* Leaves no temp files behind. */
    assert_int_equal(count_dir_entries(test_tmp_path("enc")), 3);
}

static void test_encode_bad_args(void **state) {
    (void)state;
    vla_video_writer *vw = (vla_video_writer *)1;
    vla_video_writer_opts o = {.width = 95, .height = 96, .fps = 10, .crf = -1, .gop = -1};
    assert_int_equal(vla_video_writer_open(test_tmp_path("odd.mp4"), &o, &vw), VLA_ERR_INVALID_ARG);
    assert_null(vw);
    assert_non_null(strstr(vla_error_message(), "even"));
    o.width = 96;
    o.fps = 0;
    assert_int_equal(vla_video_writer_open(test_tmp_path("fps.mp4"), &o, &vw), VLA_ERR_INVALID_ARG);
    o.fps = 10;
    o.codec = "no-such-encoder";
    assert_int_equal(vla_video_writer_open(test_tmp_path("codec.mp4"), &o, &vw), VLA_ERR_UNSUPPORTED);
    o.codec = NULL;
    assert_int_not_equal(vla_video_writer_open("/nonexistent-dir/x.mp4", &o, &vw), VLA_OK);
    /* Abort leaves neither the target nor the temp file. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", test_tmp_path("abort"));
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/a.mp4", test_tmp_path("abort"));
    assert_int_equal(vla_video_writer_open(path, &o, &vw), VLA_OK);
    uint8_t *rgb = calloc(96 * 96, 3);
    assert_int_equal(vla_video_writer_add_rgb(vw, rgb, 0), VLA_OK);
    assert_int_equal(vla_video_writer_add_rgb(vw, rgb, 10), VLA_ERR_INVALID_ARG);
    vla_video_writer_abort(vw);
    assert_int_equal(count_dir_entries(test_tmp_path("abort")), 0);
    /* Abort and close before the first frame (libsvtav1 must not hang). */
    assert_int_equal(vla_video_writer_open(path, &o, &vw), VLA_OK);
    vla_video_writer_abort(vw);
    assert_int_equal(vla_video_writer_open(path, &o, &vw), VLA_OK);
    assert_int_equal(vla_video_writer_close(vw), VLA_ERR_INVALID_ARG);
    assert_int_equal(count_dir_entries(test_tmp_path("abort")), 0);
    free(rgb);
}

/* Two episodes in one file, read back LeRobot-style at from_timestamp + i/fps. */
static void test_concatenated_episodes(void **state) {
    (void)state;
    const int w = 64, h = 64, fps = 10, len[2] = {13, 9};
    size_t fb = (size_t)w * h * 3;
    const char *path = test_tmp_path("episodes.mp4");
    vla_video_writer_opts o = {.width = w, .height = h, .fps = fps, .crf = -1, .gop = -1};
    vla_video_writer *vw;
    assert_int_equal(vla_video_writer_open(path, &o, &vw), VLA_OK);
    double from[2], to[2];
    uint8_t *rgb = malloc(fb), *src = malloc(fb);
    for (int ep = 0; ep < 2; ep++) {
        from[ep] = vla_video_writer_time(vw);
        for (int k = 0; k < len[ep]; k++) {
            synth(rgb, w, h, ep, k);
            assert_int_equal(vla_video_writer_add_rgb(vw, rgb, w * 3), VLA_OK);
        }
        to[ep] = vla_video_writer_time(vw);
    }
    assert_true(fabs(from[1] - 1.3) < 1e-12 && fabs(to[1] - 2.2) < 1e-12);
    assert_int_equal(vla_video_writer_close(vw), VLA_OK);

    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(path, NULL, &d), VLA_OK);
    assert_int_equal(vla_video_decoder_info(d)->frame_count, 22);
    int eps[] = {1, 0, 1, 0, 1}, ks[] = {0, 12, 8, 0, 4};
    for (int i = 0; i < 5; i++) {
        double t = from[eps[i]] + ks[i] / (double)fps; /* LeRobot v3: from_timestamp + row timestamp */
        assert_int_equal(vla_video_decoder_read(d, t, VLA_VIDEO_DEFAULT_TOLERANCE_S, 0, 0, rgb, NULL), VLA_OK);
        synth(src, w, h, eps[i], ks[i]);
        double right = psnr(rgb, src, fb);
        synth(src, w, h, 1 - eps[i], ks[i]);
        double wrong = psnr(rgb, src, fb);
        if (right < 28 || wrong > right - 10)
            fail_msg("episode %d frame %d: PSNR %.1f (other episode %.1f)", eps[i], ks[i], right, wrong);
    }
    /* Just past the last frame of the last episode. */
    assert_int_equal(vla_video_decoder_read(d, to[1], 1e-4, 0, 0, rgb, NULL), VLA_ERR_NOT_FOUND);
    vla_video_decoder_close(d);
    free(rgb);
    free(src);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void expect_open_fails(const char *path, vla_status code, const char *msg) {
    vla_video_decoder *d = (vla_video_decoder *)1;
    vla_status st = vla_video_decoder_open(path, NULL, &d);
    if (st != code) fail_msg("%s: expected %s, got %s: %s", path, vla_status_name(code), vla_status_name(st), vla_error_message());
    assert_null(d);
    if (msg && !strstr(vla_error_message(), msg)) fail_msg("%s: message '%s' lacks '%s'", path, vla_error_message(), msg);
}

static void test_bad_files(void **state) {
    (void)state;
    expect_open_fails(test_tmp_path("missing.mp4"), VLA_ERR_NOT_FOUND, "no such file");
    write_bytes(test_tmp_path("empty.mp4"), "", 0);
    expect_open_fails(test_tmp_path("empty.mp4"), VLA_ERR_FORMAT, "empty.mp4");
    char junk[4096];
    vla_rng r = vla_rng_stream(3, 0);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)vla_rng_u32(&r);
    write_bytes(test_tmp_path("junk.mp4"), junk, sizeof junk);
    expect_open_fails(test_tmp_path("junk.mp4"), VLA_ERR_FORMAT, "junk.mp4");

    /* Audio only. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, FF "-f lavfi -i sine=duration=0.2 -c:a aac '%s'", test_tmp_path("audio.m4a"));
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    expect_open_fails(test_tmp_path("audio.m4a"), VLA_ERR_FORMAT, "no video stream");
    /* Not a video container (wav), and a playlist that names another file. */
    snprintf(cmd, sizeof cmd, FF "-f lavfi -i sine=duration=0.2 '%s'", test_tmp_path("audio.wav"));
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    expect_open_fails(test_tmp_path("audio.wav"), VLA_ERR_FORMAT, "audio.wav");
    char playlist[1400];
    snprintf(playlist, sizeof playlist, "ffconcat version 1.0\nfile 'av1.mp4'\n"); /* ffprobe would play it */
    write_bytes(test_tmp_path("playlist.mp4"), playlist, strlen(playlist));
    expect_open_fails(test_tmp_path("playlist.mp4"), VLA_ERR_FORMAT, "playlist.mp4");

    /* Truncated files: the CLI's (moov at the end) fails to open; a faststart
     * file opens and then fails on the frames that are gone, without crashing. */
    char *data;
    size_t n;
    assert_int_equal(vla_read_file(av1.path, &data, &n), VLA_OK);
    write_bytes(test_tmp_path("trunc.mp4"), data, n / 2);
    expect_open_fails(test_tmp_path("trunc.mp4"), VLA_ERR_FORMAT, "trunc.mp4");
    free(data);

    const char *fs = test_tmp_path("faststart.mp4");
    snprintf(cmd, sizeof cmd, FF "-i '%s' -c copy -movflags +faststart '%s'", h264.path, fs);
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    assert_int_equal(vla_read_file(fs, &data, &n), VLA_OK);
    uint8_t *rgb = malloc(64 * 48 * 3);
    for (int cut = 1; cut <= 4; cut++) {
        write_bytes(test_tmp_path("fs_trunc.mp4"), data, n * (size_t)cut / 5);
        vla_video_decoder *d;
        if (vla_video_decoder_open(test_tmp_path("fs_trunc.mp4"), NULL, &d) != VLA_OK) continue;
        int ok = 0;
        for (int k = 0; k < 30; k += 2) ok += vla_video_decoder_read(d, k / 10.0, 1e-4, 0, 0, rgb, NULL) == VLA_OK;
        assert_true(ok < 15); /* frames past the cut are reported missing */
        vla_video_decoder_close(d);
    }
    /* Corrupted payload bytes in the middle: decodes or errors, never crashes. */
    for (size_t i = n / 3; i < n / 3 + 200 && i < n; i++) data[i] ^= 0x5a;
    write_bytes(test_tmp_path("corrupt.mp4"), data, n);
    vla_video_decoder *d;
    if (vla_video_decoder_open(test_tmp_path("corrupt.mp4"), NULL, &d) == VLA_OK) {
        for (int k = 0; k < 30; k += 3) (void)vla_video_decoder_read(d, k / 10.0, 1e-4, 0, 0, rgb, NULL);
        vla_video_decoder_close(d);
    }
    free(rgb);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_sequential_exact),
        cmocka_unit_test(test_random_exact),
        cmocka_unit_test(test_scaled_exact),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_encode_roundtrip),
        cmocka_unit_test(test_encode_bad_args),
        cmocka_unit_test(test_concatenated_episodes),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, make_clips, free_clips);
}
