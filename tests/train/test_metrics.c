/* test_metrics.c — JSONL/CSV logs (rows, absent values, resume truncation,
 * torn lines, header mismatch) and the progress line. */
#include "test_util.h"
#include "base/fsutil.h"
#include "train/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
    char *d;
    size_t n;
    assert_int_equal(vla_read_file(path, &d, &n), VLA_OK);
    return d;
}

static void append(const char *path, const char *text) {
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *cols[] = {"loss", "grad_norm", "lr", "eval/success"};

static void log_steps(vla_metrics *m, int from, int to) {
    for (int s = from; s <= to; s++) {
        double v[4] = {1.0 / s, 0.5, 1e-4 * s, s % 5 == 0 ? 0.25 * (s / 5) : NAN};
        assert_int_equal(vla_metrics_log(m, s, v), VLA_OK);
    }
}

static void test_logs_and_resume(void **state) {
    const char *dir = test_tmp_path("run");
    char jl[1100], csv[1100];
    snprintf(jl, sizeof jl, "%s/metrics.jsonl", dir);
    snprintf(csv, sizeof csv, "%s/metrics.csv", dir);

    /* the uninterrupted run */
    vla_metrics m;
    assert_int_equal(vla_metrics_open(&m, dir, cols, 4, -1), VLA_OK);
    log_steps(&m, 1, 10);
    vla_metrics_close(&m);
    char *want_jl = slurp(jl), *want_csv = slurp(csv);
    assert_true(strncmp(want_csv, "step,loss,grad_norm,lr,eval/success\n1,1,0.5,0.0001,\n", 52) == 0);
    assert_non_null(strstr(want_jl, "{\"step\": 5, \"loss\": 0.2, \"grad_norm\": 0.5, \"lr\": 0.0005, \"eval/success\": 0.25}\n"));
    assert_null(strstr(want_jl, "{\"step\": 4, \"loss\": 0.25, \"grad_norm\": 0.5, \"lr\": 0.0004, \"eval"));

    /* an interrupted run: logged up to 8, checkpoint at 6, killed mid-line */
    assert_int_equal(vla_metrics_open(&m, dir, cols, 4, -1), VLA_OK); /* new run replaces */
    log_steps(&m, 1, 8);
    vla_metrics_close(&m);
    append(jl, "{\"step\": 9, \"loss\": 0.11");
    append(csv, "9,0.11");
    assert_int_equal(vla_metrics_open(&m, dir, cols, 4, 6), VLA_OK);
    log_steps(&m, 7, 10);
    vla_metrics_close(&m);
    char *got_jl = slurp(jl), *got_csv = slurp(csv);
    assert_string_equal(got_jl, want_jl);
    assert_string_equal(got_csv, want_csv);
    free(got_jl), free(got_csv);

    /* reading a column back (for plots) */
    double *steps, *vals;
    size_t n;
    assert_int_equal(vla_metrics_read_column(jl, "eval/success", &steps, &vals, &n), VLA_OK);
    assert_int_equal(n, 2);
    assert_true(steps[1] == 10 && vals[1] == 0.5);
    free(steps), free(vals);

    /* other columns: refused on resume with a message naming the file */
    const char *other[] = {"loss", "lr"};
    assert_int_equal(vla_metrics_open(&m, dir, other, 2, 6), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "metrics.csv"));
    const char *bad[] = {"lo,ss"};
    assert_int_equal(vla_metrics_open(&m, dir, bad, 1, -1), VLA_ERR_INVALID_ARG);

    /* resume with no logs yet (checkpoint written, logs lost) starts them */
    const char *dir2 = test_tmp_path("run2");
    assert_int_equal(vla_metrics_open(&m, dir2, cols, 4, 100), VLA_OK);
    log_steps(&m, 101, 101);
    vla_metrics_close(&m);
    snprintf(csv, sizeof csv, "%s/metrics.csv", dir2);
    char *c2 = slurp(csv);
    assert_true(strncmp(c2, "step,loss", 9) == 0);
    free(c2);
    free(want_jl), free(want_csv);
}

static void test_progress_line(void **state) {
    char buf[256], t[32];
    assert_string_equal(vla_format_hms(3723.4, t, sizeof t), "1:02:03");
    assert_string_equal(vla_format_hms(59.6, t, sizeof t), "0:01:00");
    assert_string_equal(vla_format_hms(-1, t, sizeof t), "--:--:--");
    assert_string_equal(vla_format_hms(NAN, t, sizeof t), "--:--:--");
    assert_string_equal(vla_format_hms(100 * 3600.0, t, sizeof t), "100:00:00");
    assert_true(vla_eta_s(10.0, 100, 900) == 90.0);
    vla_meter mt;
    vla_meter_start(&mt, 100.0);
    for (int i = 0; i < 10; i++) vla_meter_add(&mt, 32, 0.05);
    double sps, wait;
    vla_meter_read(&mt, 102.0, &sps, &wait);
    assert_true(fabs(sps - 160.0) < 1e-9 && fabs(wait - 0.25) < 1e-9);
    vla_meter_read(&mt, 103.0, &sps, &wait); /* a new interval */
    assert_true(sps == 0.0 && wait == 0.0);
    assert_true(vla_eta_s(10.0, 0, 900) < 0);
    vla_progress p = {.step = 1200, .total_steps = 30000, .loss = 0.012345, .grad_norm = 0.5321, .lr = 2.5e-5,
                      .samples_per_s = 412.34, .data_wait_frac = 0.031, .eta_s = 3723};
    vla_progress_format(&p, buf, sizeof buf);
    print_message("%s\n", buf);
    assert_string_equal(buf, "step 1200/30000 (4.0%) | loss 0.01235 | grad 0.532 | lr 2.50e-05 | 412.3 samples/s | "
                             "data 3.1% | ETA 1:02:03");
    p.skipped = 2;
    vla_progress_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, "| skipped 2"));
    char small[16];
    vla_progress_format(&p, small, sizeof small); /* truncates, never overflows */
    assert_int_equal(strlen(small), 15);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logs_and_resume),
        cmocka_unit_test(test_progress_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
