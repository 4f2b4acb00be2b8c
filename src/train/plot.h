/* plot.h — line plots to PNG with cairo: the loss, learning-rate and eval
 * success curves a training run leaves behind.
 *
 * A plot has a title, axes with "nice" tick labels (1/2/5·10^k steps; on a
 * log y axis 1/2/5·10^k values, finer ones when the range spans less than
 * a decade, so every axis shows at least three labelled ticks), a grid, one or more series (a legend when
 * there are several or they are labelled), and optional smoothing: the
 * TensorBoard-style debiased EMA, drawn over the faint raw curve. Points that
 * are not finite (or not positive on a log axis) break the line. The PNG is
 * written atomically (temp file, fsync, rename). The data never touches the
 * frame: 5% of margin above and below, a fixed range's too. */
#ifndef VLA_TRAIN_PLOT_H
#define VLA_TRAIN_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct {
    const char *label; /* may be NULL */
    const double *x, *y;
    size_t n;
    uint32_t rgb; /* 0xRRGGBB; 0 takes the next colour of the palette */
} vla_plot_series;

typedef struct {
    const char *title, *xlabel, *ylabel; /* may be NULL */
    int width, height;                   /* pixels; 0 → 800 × 500 */
    int log_y;
    double smooth; /* EMA weight in [0, 1); 0 draws the raw series only */
    int fixed_y;   /* show y in [y_min, y_max] whatever the data (a rate: 0 to 1), with the usual 5% margin
                      around it, so a line at y_min or y_max stays visible above/below the frame */
    double y_min, y_max;
    int markers;   /* a dot at every point: sparse series (one eval every N steps) */
} vla_plot_opts;

/* Where data lands in the image (for tests and overlays). */
typedef struct {
    int width, height;
    double left, top, right, bottom; /* plot area in pixels */
    double x0, x1, y0, y1;           /* data range shown (y in log10 when log_y) */
    int log_y;
} vla_plot_frame;

/* The palette colour of series i (tab10). */
uint32_t vla_plot_color(size_t i);
vla_status vla_plot_layout(const vla_plot_opts *o, const vla_plot_series *s, size_t ns, vla_plot_frame *f);
/* Pixel position of a data point; returns 0 if it cannot be shown. */
int vla_plot_map(const vla_plot_frame *f, double x, double y, double *px, double *py);
vla_status vla_plot_png(const char *path, const vla_plot_opts *o, const vla_plot_series *s, size_t ns);

/* One column of a metrics.jsonl as a plot (see train/metrics.h);
 * VLA_ERR_NOT_FOUND if the column has no values. */
vla_status vla_plot_metric(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                           int log_y, double smooth);
/* The same with the y axis fixed to [y_min, y_max] (success rates: 0 to 1) and a dot at every point. */
vla_status vla_plot_metric_range(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                                 double y_min, double y_max);

/* The y ticks an axis gets (values, not log10), for tests: up to `cap`; returns how many. */
int vla_plot_y_ticks(const vla_plot_frame *f, double *values, int cap);

/* At process exit: drop cairo's and fontconfig's caches (the fonts the
 * plots loaded), so a leak checker sees only what the program lost. */
void vla_plot_release_caches(void);

#endif
