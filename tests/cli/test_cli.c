/* test_cli.c — the `vla` command as a user meets it: help on every level,
 * version as JSON, unknown commands and flags rejected with a suggestion and
 * exit code 2, and the GEMM benchmark printing parseable JSON. */
#include "test_util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static char out[65536];

static int run(const char *args) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", test_cli_path(), args);
    return test_run(cmd, out, sizeof out);
}

static void test_help_and_dispatch(void **state) {
    assert_int_equal(run("--help"), 0);
    assert_non_null(strstr(out, "version"));
    assert_non_null(strstr(out, "bench"));
    assert_int_equal(run(""), 2); /* no command: usage on stderr, exit 2 */
    assert_non_null(strstr(out, "usage: vla <command>"));
    assert_int_equal(run("verison"), 2);
    assert_non_null(strstr(out, "did you mean 'version'"));
    assert_int_equal(run("version --help"), 0);
    assert_non_null(strstr(out, "usage: vla version"));
    assert_int_equal(run("bench --help"), 0);
    assert_non_null(strstr(out, "gemm"));
    assert_int_equal(run("bench gemm --help"), 0);
    assert_non_null(strstr(out, "--threads=N"));
}

static void test_unknown_flag(void **state) {
    assert_int_equal(run("version --jsn"), 2);
    assert_non_null(strstr(out, "unknown flag --jsn; did you mean --json?"));
    assert_int_equal(run("bench gemm --threads=many"), 2);
    assert_non_null(strstr(out, "expects an integer"));
}

static void test_version_json(void **state) {
    assert_int_equal(run("version --json"), 0);
    json_error_t err;
    json_t *v = json_loads(out, 0, &err);
    assert_non_null(v);
    assert_true(json_is_string(json_object_get(v, "version")));
    assert_non_null(strstr(json_string_value(json_object_get(v, "blas")), "OpenBLAS"));
    assert_non_null(strstr(json_string_value(json_object_get(v, "mpi")), "MPI"));
    assert_non_null(strstr(json_string_value(json_object_get(v, "ffmpeg")), "libavcodec"));
    json_decref(v);
}

static void test_bench_gemm_json(void **state) {
    assert_int_equal(run("bench gemm --quick --seconds=0.01 --reps=1 --threads=1"), 0);
    int lines = 0, peak = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        if (!v) fail_msg("not JSON: %s", line);
        assert_true(json_number_value(json_object_get(v, "gflops")) > 0.1);
        peak += !strcmp(json_string_value(json_object_get(v, "bench")), "gemm_peak");
        json_decref(v);
        lines++;
    }
    assert_true(lines >= 5);
    assert_int_equal(peak, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_dispatch),
        cmocka_unit_test(test_unknown_flag),
        cmocka_unit_test(test_version_json),
        cmocka_unit_test(test_bench_gemm_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
