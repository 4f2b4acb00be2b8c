/* fuzz_metrics_resume.c — libFuzzer target for resuming metric logs: the
 * input becomes both metrics.jsonl and metrics.csv of an interrupted run;
 * opening them for resume (which parses and trims every line) and appending
 * a row must work or fail cleanly, never crash. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "train/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

static void cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/vla-fuzz-metrics-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(dir)) abort();
        atexit(cleanup);
    }
    char p[400];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (vla_write_file_atomic(p, data, size) != VLA_OK) abort();
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    if (vla_write_file_atomic(p, data, size) != VLA_OK) abort();
    const char *cols[] = {"loss", "lr"};
    vla_metrics m;
    if (vla_metrics_open(&m, dir, cols, 2, 50) == VLA_OK) {
        double v[2] = {0.5, 1e-4};
        if (vla_metrics_log(&m, 51, v) != VLA_OK) abort();
        vla_metrics_close(&m);
    }
    double *s, *x;
    size_t n;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    if (vla_metrics_read_column(p, "loss", &s, &x, &n) == VLA_OK) {
        free(s);
        free(x);
    }
    return 0;
}
