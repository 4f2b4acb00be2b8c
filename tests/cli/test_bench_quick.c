/* test_bench_quick.c — `make bench`'s script in its smoke mode
 * (BENCH_QUICK=1 scripts/bench.sh): every benchmark `vla bench --help`
 * lists runs with --quick, exits 0, and prints only JSON objects, each
 * naming its benchmark — so adding a benchmark without a quick mode, or
 * breaking one, fails here rather than in someone's `make bench`; the
 * precision modes timed side by side give FP8's speed relative to f32. */
#include "test_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char out[1 << 20];

static void test_every_bench_quick(void **state) {
    (void)state;
    char cmd[4096];
    const char *bin = getenv("VLA_BINARY_DIR");
    const char *err_path = test_tmp_path("bench.stderr");
    snprintf(cmd, sizeof cmd, "cd '%s' && BENCH_QUICK=1 VLA_CONFIG_DIR='%s' bash scripts/bench.sh '%s' 2>'%s'",
             test_source_path("."), test_source_path("configs"), bin ? bin : "build", err_path);
    int rc = test_run(cmd, out, sizeof out);
    if (rc != 0) {
        size_t n;
        char *err = test_slurp(err_path, &n);
        size_t m = strlen(out); /* cmocka's message is short: the ends go to stderr first */
        fprintf(stderr, "bench.sh output's end:\n%s\nbench.sh stderr's end:\n%s\n", out + (m > 2000 ? m - 2000 : 0),
                err + (n > 3000 ? n - 3000 : 0));
        free(err);
        fail_msg("bench.sh failed (exit %d); its output's and stderr's ends are above", rc);
    }
    int lines = 0, fp8_vs_fp32 = 0;
    const char *want[] = {"gemm", "parquet", "video", "dataset", "sim", "policy", "attention", "omp_region", "packing", "serve"};
    enum { NWANT = sizeof want / sizeof want[0] };
    int seen[NWANT] = {0};
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        if (!v) fail_msg("not JSON: %s", line);
        const char *b = json_string_value(json_object_get(v, "bench"));
        if (!b) fail_msg("no \"bench\" in %s", line);
        for (int i = 0; i < NWANT; i++) seen[i] |= strstr(b, want[i]) != NULL;
        const char *prec = json_string_value(json_object_get(v, "precision"));
        if (!strcmp(b, "policy_train") && prec && !strcmp(prec, "fp8")) /* the modes timed side by side */
            fp8_vs_fp32 += json_number_value(json_object_get(v, "vs_base_precision")) > 0;
        if (!strcmp(b, "packing")) { /* padding only adds tokens and images */
            json_t *pk = json_object_get(v, "packed"), *pd = json_object_get(v, "padded_longest");
            json_t *pm = json_object_get(v, "padded_max");
            if (!pk || !pd || !pm) fail_msg("packing: no packed/padded results in %s", line);
            json_int_t t0 = json_integer_value(json_object_get(pk, "tokens"));
            if (!(t0 > 0 && json_integer_value(json_object_get(pd, "tokens")) >= t0 &&
                  json_integer_value(json_object_get(pm, "tokens")) >= json_integer_value(json_object_get(pd, "tokens")) &&
                  json_integer_value(json_object_get(pd, "images")) >= json_integer_value(json_object_get(pk, "images")) &&
                  json_number_value(json_object_get(pk, "samples_per_s")) > 0))
                fail_msg("packing: inconsistent layouts in %s", line);
        }
        json_decref(v);
        lines++;
    }
    for (int i = 0; i < NWANT; i++)
        if (!seen[i]) fail_msg("no result from a '%s' benchmark", want[i]);
    assert_true(lines >= 20);
    assert_int_equal(fp8_vs_fp32, 2); /* pi05-tiny and groot-tiny */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_bench_quick)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
