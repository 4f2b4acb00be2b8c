/* test_validate_frames.c — `vla dataset validate --frames=all` against the
 * ffmpeg CLI: a dataset whose video has garbled bytes in the middle of its
 * packets is reported (file, camera, episode, time) exactly when
 * `ffmpeg -v error -i FILE -f null -` reports errors on it, and a clean one
 * is clean in both; the quick default (--frames=ends) does not decode the
 * middle, which is why --frames=all exists. vla_video_scan counts every
 * frame the ffmpeg CLI counts. */
#include "test_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot.h"
#include "io/video.h"

static char out[1 << 16];

static const char *video_of(const char *root) {
    static char path[2048];
    snprintf(path, sizeof path, "%s/videos/observation.image/chunk-000/file-000.mp4", root);
    return path;
}

/* Lines the ffmpeg CLI prints at -v error while decoding the whole file. */
static int ffmpeg_errors(const char *file) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i '%s' -f null - 2>&1", file);
    test_run(cmd, out, sizeof out);
    int lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    return lines;
}

/* Frames the ffmpeg CLI decodes (ffprobe -count_frames). */
static long ffprobe_frames(const char *file) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "ffprobe -v quiet -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 '%s'",
             file);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    return strtol(out, NULL, 10);
}

static json_t *validate(const char *root, const char *frames, int *rc) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' dataset validate --json --frames=%s '%s' 2>/dev/null", test_cli_path(), frames, root);
    *rc = test_run(cmd, out, sizeof out);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j) fail_msg("not JSON: %s", out);
    return json_object_get(j, "problems") ? j : NULL;
}

/* Overwrite `n` bytes in the middle of the file's media data with a fixed pattern. */
static void garble(const char *file, size_t n) {
    size_t len;
    char *d = test_slurp(file, &len);
    char *mdat = memmem(d, len, "mdat", 4);
    assert_non_null(mdat);
    size_t from = (size_t)(mdat - d) + (len - (size_t)(mdat - d)) / 2;
    uint32_t x = 12345;
    for (size_t i = from; i < from + n && i < len; i++) {
        x = x * 1103515245u + 12345u;
        d[i] = (char)(x >> 16);
    }
    assert_int_equal(vla_write_file_atomic(file, d, len), VLA_OK);
    free(d);
}

static void test_clean_and_garbled(void **state) {
    (void)state;
    const char *clean = test_tmp_path("vf_clean"), *bad = test_tmp_path("vf_bad");
    test_rmrf(clean);
    test_rmrf(bad);
    test_record_reach(clean, 6, 100, -1);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", clean, bad);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);

    /* clean: both agree, and every frame ffmpeg decodes is decoded */
    assert_int_equal(ffmpeg_errors(video_of(clean)), 0);
    int rc;
    json_t *j = validate(clean, "all", &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 0);
    json_decref(j);
    int64_t frames, errors;
    assert_int_equal(vla_video_scan(video_of(clean), 10, NULL, NULL, NULL, &frames, &errors), VLA_OK);
    assert_int_equal(errors, 0);
    assert_int_equal(frames, ffprobe_frames(video_of(clean)));

    /* garbled in the middle: ffmpeg complains, --frames=all names file, camera, episode and time */
    garble(video_of(bad), 400);
    assert_true(ffmpeg_errors(video_of(bad)) > 0);
    j = validate(bad, "all", &rc);
    assert_int_equal(rc, 1);
    json_t *probs = json_object_get(j, "problems");
    assert_true(json_array_size(probs) >= 1);
    int located = 0;
    for (size_t i = 0; i < json_array_size(probs); i++) {
        const char *file = json_string_value(json_object_get(json_array_get(probs, i), "file"));
        const char *why = json_string_value(json_object_get(json_array_get(probs, i), "reason"));
        if (strcmp(file, "videos/observation.image/chunk-000/file-000.mp4")) fail_msg("unexpected problem: %s: %s", file, why);
        located += strstr(why, "camera 'observation.image', episode ") && strstr(why, "t=") ? 1 : 0;
    }
    assert_true(located >= 1);
    json_decref(j);
    assert_int_equal(vla_video_scan(video_of(bad), 10, NULL, NULL, NULL, &frames, &errors), VLA_OK);
    assert_true(errors > 0);

    /* the quick default decodes only each episode's ends, so it may not see it: the reason --frames=all exists */
    j = validate(bad, "ends", &rc);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "'%s' dataset validate --frames=some '%s' 2>&1", test_cli_path(), bad);
    assert_int_equal(test_run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "--frames=some: give ends or all"));
    test_rmrf(clean);
    test_rmrf(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_clean_and_garbled)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
