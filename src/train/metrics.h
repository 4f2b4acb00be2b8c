/* metrics.h — what a training run shows and keeps: metric logs as JSONL and
 * CSV (one row per logged step, flushed per line), and the progress line.
 *
 * Logs live in OUTPUT/metrics.jsonl and OUTPUT/metrics.csv. A row is
 *   {"step": 1200, "loss": 0.0123, "grad_norm": 0.53, "lr": 2.5e-05, ...}
 *   1200,0.0123,0.53,2.5e-05,...
 * A NaN value means "not measured at this step" (e.g. eval success between
 * evals): it is left out of the JSON object and left empty in the CSV.
 * On resume from step S the rows past S (logged after the checkpoint by the
 * interrupted run) and a torn last line are dropped, so the resumed run's rows
 * follow on exactly as an uninterrupted run's would. */
#ifndef VLA_TRAIN_METRICS_H
#define VLA_TRAIN_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/status.h"
#include "base/timer.h"

#define VLA_METRICS_MAX_COLS 64

typedef struct {
    char *jsonl_path, *csv_path;
    FILE *jsonl, *csv;
    char *cols[VLA_METRICS_MAX_COLS]; /* after "step" */
    int ncols;
} vla_metrics;

/* Open the logs in `dir` with the given columns (names of letters, digits,
 * '_', '.', '/', '-'). resume_step < 0 starts new logs (old ones replaced);
 * resume_step >= 0 keeps rows with step <= resume_step and appends. A CSV
 * whose header has other columns is refused on resume. */
vla_status vla_metrics_open(vla_metrics *m, const char *dir, const char *const *cols, int ncols, int64_t resume_step);
/* One row; values[i] belongs to cols[i]. */
vla_status vla_metrics_log(vla_metrics *m, int64_t step, const double *values);
/* A JSONL-only line {"step": step, "<key>": value} (an event, such as the
 * flags a resumed run changed): kept or dropped on resume like a row; the
 * CSV and the column readers skip it. */
vla_status vla_metrics_note(vla_metrics *m, int64_t step, const char *key, const json_t *value);
void vla_metrics_close(vla_metrics *m);

/* Read one column of a metrics.jsonl back (for plots): steps and values of
 * the rows that have it, malloc'ed. Torn or foreign lines are skipped. */
vla_status vla_metrics_read_column(const char *jsonl_path, const char *col, double **steps, double **values,
                                   size_t *n);

/* ---- progress line ---------------------------------------------------------- */

typedef struct {
    int64_t step, total_steps;
    double loss, grad_norm, lr;
    double samples_per_s;
    double data_wait_frac; /* share of wall time spent waiting for batches, 0..1 */
    double eta_s;          /* < 0 or NaN: unknown */
    int64_t skipped;       /* steps skipped for NaN/Inf (shown when > 0) */
} vla_progress;

/* Throughput and data-wait share over the interval since the last read. */
typedef struct {
    double start_s;  /* interval start (vla_now_s()) */
    double wait_s;   /* time spent waiting for batches in the interval */
    int64_t samples; /* samples trained in the interval */
} vla_meter;

void vla_meter_start(vla_meter *m, double now_s);
/* After each step: its samples and the seconds it waited for its batch. */
void vla_meter_add(vla_meter *m, int64_t samples, double data_wait_s);
/* Rates over [start, now), then a new interval starts at now. */
void vla_meter_read(vla_meter *m, double now_s, double *samples_per_s, double *data_wait_frac);

/* "step 1200/30000 (4.0%) | loss 0.01234 | grad 0.532 | lr 2.50e-05 |
 *  412.3 samples/s | data 3.1% | ETA 1:02:03" into buf; returns buf. */
const char *vla_progress_format(const vla_progress *p, char *buf, size_t cap);
/* vla_format_hms, vla_eta_s: base/timer.h */

#endif
