/* test_metrics.c — JSONL/CSV logs (rows, absent values, resume truncation,
 * torn lines, header mismatch; resume over every prefix and sampled bit
 * flips of the logs) and the progress line. */
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

/* For the sweeps: `bytes` become dir/<name> (the other log as logged), then
 * a run resumes from step 6 and logs step 7. A resumed log must hold only
 * whole lines. */
typedef struct {
    char dir[1024];
    const char *name;
    char *jsonl, *csv; /* the logs of ten steps */
} resume_case;

static void put(const char *dir, const char *name, const void *d, size_t n) {
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

static vla_status resume_with(const uint8_t *bytes, size_t n, void *user) {
    resume_case *c = user;
    int jl = strcmp(c->name, "metrics.jsonl") == 0;
    put(c->dir, "metrics.jsonl", jl ? (const char *)bytes : c->jsonl, jl ? n : strlen(c->jsonl));
    put(c->dir, "metrics.csv", jl ? c->csv : (const char *)bytes, jl ? strlen(c->csv) : n);
    vla_metrics m;
    VLA_TRY(vla_metrics_open(&m, c->dir, cols, 4, 6));
    log_steps(&m, 7, 7);
    vla_metrics_close(&m);
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", c->dir, c->name);
    char *now = slurp(path);
    size_t len = strlen(now);
    if (len && now[len - 1] != '\n') fail_msg("%s resumed with a torn last line:\n%s", c->name, now);
    free(now);
    return VLA_OK;
}

/* Resuming over logs a kill left at any length — every prefix of each —
 * keeps exactly the whole lines up to the checkpoint's step; over logs with
 * one of 400 sampled bits flipped, it resumes (a damaged line is dropped or
 * read as another value: the logs carry no checksum) or refuses a CSV whose
 * header no longer matches, with a message; never a crash. */
static void test_resume_over_damaged_logs(void **state) {
    (void)state;
    static resume_case c;
    snprintf(c.dir, sizeof c.dir, "%s", test_tmp_path("damaged"));
    vla_metrics m;
    assert_int_equal(vla_metrics_open(&m, c.dir, cols, 4, -1), VLA_OK);
    log_steps(&m, 1, 10);
    vla_metrics_close(&m);
    char p[1100];
    snprintf(p, sizeof p, "%s/metrics.jsonl", c.dir);
    c.jsonl = slurp(p);
    snprintf(p, sizeof p, "%s/metrics.csv", c.dir);
    c.csv = slurp(p);
    const char *names[] = {"metrics.jsonl", "metrics.csv"};
    for (int k = 0; k < 2; k++) {
        c.name = names[k];
        const char *full = k ? c.csv : c.jsonl;
        size_t n = strlen(full);
        for (size_t len = 0; len <= n; len++) {
            if (resume_with((const uint8_t *)full, len, &c) != VLA_OK) fail_msg("%s cut to %zu: %s", c.name, len, vla_error_message());
            /* the whole lines of the prefix with step <= 6, then step 7 */
            snprintf(p, sizeof p, "%s/%s", c.dir, c.name);
            char *now = slurp(p), *want = malloc(n + 200);
            size_t w = 0;
            for (size_t i = 0, start = 0; i < len; i++)
                if (full[i] == '\n') {
                    long step = k && start == 0 ? 0 : atol(full + start + (k ? 0 : 9));
                    if (step <= 6) memcpy(want + w, full + start, i + 1 - start), w += i + 1 - start;
                    start = i + 1;
                }
            if (k && w == 0) w = (size_t)sprintf(want, "step,loss,grad_norm,lr,eval/success\n");
            const char *seven = strstr(full, k ? "\n7," : "{\"step\": 7,");
            const char *seven_end = strchr(seven + 1, '\n');
            if (k) seven++;
            memcpy(want + w, seven, (size_t)(seven_end + 1 - seven));
            w += (size_t)(seven_end + 1 - seven);
            want[w] = 0;
            if (strcmp(now, want)) fail_msg("%s cut to %zu: resumed to\n%s\nexpected\n%s", c.name, len, now, want);
            free(now), free(want);
        }
        int refused = test_sweep_bit_flips(c.name, (const uint8_t *)full, n, 0, 400, 21 + (uint64_t)k, resume_with, &c);
        print_message("%s: every prefix resumed to its whole lines; %d of 400 bit flips refused, the rest resumed\n",
                      c.name, refused);
    }
    free(c.jsonl), free(c.csv);
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
        cmocka_unit_test(test_resume_over_damaged_logs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
