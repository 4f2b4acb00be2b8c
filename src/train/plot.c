/* plot.c — line plots to PNG with cairo (see plot.h). */
#include "train/plot.h"

#include "io/cairo_api.h"
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "train/metrics.h"

static const uint32_t palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

uint32_t vla_plot_color(size_t i) { return palette[i % (sizeof palette / sizeof *palette)]; }

static void set_rgb(cairo_t *cr, uint32_t rgb, double alpha) {
    cairo_set_source_rgba(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0, alpha);
}

static int usable(double y, int log_y) { return isfinite(y) && (!log_y || y > 0); }

static double ty(double y, int log_y) { return log_y ? log10(y) : y; }

vla_status vla_plot_layout(const vla_plot_opts *o, const vla_plot_series *s, size_t ns, vla_plot_frame *f) {
    memset(f, 0, sizeof *f);
    f->width = o->width > 0 ? o->width : 800;
    f->height = o->height > 0 ? o->height : 500;
    if (f->width < 120 || f->height < 100 || f->width > 8192 || f->height > 8192)
        return vla_error(VLA_ERR_INVALID_ARG, "plot: size %dx%d out of range (120x100 .. 8192x8192)", f->width,
                         f->height);
    f->log_y = o->log_y;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].x[i]) || !usable(s[k].y[i], o->log_y)) continue;
            double y = ty(s[k].y[i], o->log_y);
            xmin = fmin(xmin, s[k].x[i]), xmax = fmax(xmax, s[k].x[i]);
            ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        }
    if (!(xmin <= xmax)) xmin = 0, xmax = 1, ymin = 0, ymax = 1; /* nothing to draw: empty axes */
    if (o->fixed_y) {
        if (!(o->y_max > o->y_min) || (o->log_y && !(o->y_min > 0)))
            return vla_error(VLA_ERR_INVALID_ARG, "plot: fixed y range [%g, %g] is empty", o->y_min, o->y_max);
        ymin = ty(o->y_min, o->log_y), ymax = ty(o->y_max, o->log_y);
    }
    if (xmax - xmin <= 0) xmin -= 0.5, xmax += 0.5;
    if (ymax - ymin <= 0) {
        double pad = fabs(ymin) > 0 ? 0.1 * fabs(ymin) : 1.0;
        ymin -= pad, ymax += pad;
    }
    /* a margin on every side of the data, a fixed range's too: a line at exactly 0 or 1 (a success rate
     * of 0) would otherwise lie on the frame and be invisible; markers get room left and right */
    double pad = 0.05 * (ymax - ymin), xpad = o->markers ? 0.03 * (xmax - xmin) : 0;
    f->x0 = xmin - xpad, f->x1 = xmax + xpad, f->y0 = ymin - pad, f->y1 = ymax + pad;
    f->left = 80, f->right = f->width - 20, f->top = o->title ? 40 : 20, f->bottom = f->height - 50;
    return VLA_OK;
}

int vla_plot_map(const vla_plot_frame *f, double x, double y, double *px, double *py) {
    if (!isfinite(x) || !usable(y, f->log_y)) return 0;
    double yy = ty(y, f->log_y);
    *px = f->left + (x - f->x0) / (f->x1 - f->x0) * (f->right - f->left);
    *py = f->bottom - (yy - f->y0) / (f->y1 - f->y0) * (f->bottom - f->top);
    return 1;
}

/* A 1/2/5·10^k step giving about `target` intervals over `range`. */
static double nice_step(double range, int target) {
    double raw = range / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* One style for all ticks of an axis: fixed with as many decimals as the
 * step needs, or, when the axis' magnitude is tiny or huge, scientific with
 * as many mantissa digits as the step needs ("8.0e-05", "1.0e-04"). */
static void fmt_tick(char *buf, size_t cap, double v, double step, double vmax) {
    if (fabs(v) < step * 1e-9) {
        snprintf(buf, cap, "0");
        return;
    }
    if (vmax >= 1e6 || vmax < 1e-3) {
        int d = (int)floor(log10(vmax)) - (int)floor(log10(step) + 1e-9);
        snprintf(buf, cap, "%.*e", d < 0 ? 0 : d > 6 ? 6 : d, v);
    } else {
        snprintf(buf, cap, "%.*f", step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9), v);
    }
}

static void text_at(cairo_t *cr, const char *s, double x, double y, double ax, double ay) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - ax * e.width - e.x_bearing, y - ay * e.height - e.y_bearing);
    cairo_show_text(cr, s);
}

/* Log axis: 1, 2, 5 × 10^k within the range (only powers of ten, thinned,
 * when that gives more than 10), else every 1..9 × 10^k when 1-2-5 gives
 * fewer than 3, else nice linear steps of the values (a range under a
 * factor of 2 or so). Linear axis: nice 1/2/5·10^k steps. */
int vla_plot_y_ticks(const vla_plot_frame *f, double *out, int cap) {
    int n = 0;
    if (!f->log_y) {
        double ys = nice_step(f->y1 - f->y0, 5), k0 = ceil(f->y0 / ys - 1e-9);
        for (int k = 0; k < 50 && n < cap; k++) {
            double v = (k0 + k) * ys;
            if (v > f->y1 + ys * 1e-9) break;
            out[n++] = fabs(v) < ys * 1e-9 ? 0 : v;
        }
        return n;
    }
    int lo = (int)floor(f->y0), hi = (int)ceil(f->y1);
    static const int m125[] = {1, 2, 5}, m19[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (int pass = 0; pass < 2; pass++) {
        const int *m = pass ? m19 : m125;
        int nm = pass ? 9 : 3;
        n = 0;
        for (int k = lo; k <= hi; k++)
            for (int j = 0; j < nm; j++) {
                double e = log10((double)m[j]) + k;
                if (e >= f->y0 - 1e-12 && e <= f->y1 + 1e-12 && n < cap) out[n++] = m[j] * pow(10, k);
            }
        if (n > 10 && pass == 0) { /* many decades: powers of ten, every stride-th */
            int stride = (hi - lo) / 8 + 1;
            n = 0;
            for (int k = lo; k <= hi && n < cap; k++)
                if ((k - lo) % stride == 0 && k >= f->y0 - 1e-12 && k <= f->y1 + 1e-12) out[n++] = pow(10, k);
            return n;
        }
        if (n >= 3) return n;
    }
    /* less than about a factor of 2: nice steps of the values themselves */
    double a = pow(10, f->y0), b = pow(10, f->y1), st = nice_step(b - a, 4), k0 = ceil(a / st - 1e-9);
    n = 0;
    for (int k = 0; k < 50 && n < cap; k++) {
        double v = (k0 + k) * st;
        if (v > b * (1 + 1e-12)) break;
        if (v > 0) out[n++] = v;
    }
    return n;
}

static void draw_axes(cairo_t *cr, const vla_plot_opts *o, const vla_plot_frame *f) {
    cairo_set_font_size(cr, 12);
    cairo_set_line_width(cr, 1);
    char label[64];
    /* x ticks */
    double xs = nice_step(f->x1 - f->x0, 6);
    /* ticks by an integer counter (capped), so a step below the precision of
     * large coordinates cannot loop forever */
    double k0 = ceil(f->x0 / xs);
    for (int k = 0; k < 50; k++) {
        double v = (k0 + k) * xs;
        if (v > f->x1 + xs * 1e-9) break;
        double px, py;
        vla_plot_map(f, v, f->log_y ? pow(10, f->y0) : f->y0, &px, &py);
        px = floor(px) + 0.5;
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, px, f->top), cairo_line_to(cr, px, f->bottom), cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        cairo_move_to(cr, px, f->bottom), cairo_line_to(cr, px, f->bottom + 5), cairo_stroke(cr);
        fmt_tick(label, sizeof label, v, xs, fmax(fabs(f->x0), fabs(f->x1)));
        text_at(cr, label, px, f->bottom + 8, 0.5, 0.0);
    }
    /* y ticks (vla_plot_y_ticks): on a log axis labelled with their values */
    double tv[64];
    int nt = vla_plot_y_ticks(f, tv, 64);
    double ys = f->log_y ? 0 : nice_step(f->y1 - f->y0, 5);
    for (int k = 0; k < nt; k++) {
        double v = tv[k], yy = f->log_y ? log10(v) : v;
        double py = floor(f->bottom - (yy - f->y0) / (f->y1 - f->y0) * (f->bottom - f->top)) + 0.5;
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
        cairo_move_to(cr, f->left, py), cairo_line_to(cr, f->right, py), cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        cairo_move_to(cr, f->left - 5, py), cairo_line_to(cr, f->left, py), cairo_stroke(cr);
        if (f->log_y) {
            double a = fabs(v);
            if (a >= 1e-3 && a < 1e5) snprintf(label, sizeof label, "%.4g", v);
            else snprintf(label, sizeof label, "%.0e", v);
        } else {
            fmt_tick(label, sizeof label, v, ys, fmax(fabs(f->y0), fabs(f->y1)));
        }
        text_at(cr, label, f->left - 8, py, 1.0, 0.5);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_rectangle(cr, f->left + 0.5, f->top + 0.5, f->right - f->left, f->bottom - f->top);
    cairo_stroke(cr);
    if (o->title) {
        cairo_set_font_size(cr, 16);
        text_at(cr, o->title, (f->left + f->right) / 2, 12, 0.5, 0.0);
    }
    cairo_set_font_size(cr, 13);
    if (o->xlabel) text_at(cr, o->xlabel, (f->left + f->right) / 2, f->height - 6, 0.5, 1.0);
    if (o->ylabel) {
        cairo_save(cr);
        cairo_translate(cr, 16, (f->top + f->bottom) / 2);
        cairo_rotate(cr, -M_PI / 2);
        text_at(cr, o->ylabel, 0, 0, 0.5, 0.5);
        cairo_restore(cr);
    }
}

static void draw_line(cairo_t *cr, const vla_plot_frame *f, const double *x, const double *y, size_t n) {
    int pen = 0;
    for (size_t i = 0; i < n; i++) {
        double px, py;
        if (!vla_plot_map(f, x[i], y[i], &px, &py)) {
            pen = 0;
            continue;
        }
        if (pen)
            cairo_line_to(cr, px, py);
        else
            cairo_move_to(cr, px, py);
        pen = 1;
    }
    /* lone points still show */
    if (n == 1) cairo_rel_line_to(cr, 0.01, 0);
    cairo_stroke(cr);
}

/* Debiased EMA as TensorBoard draws it; non-usable points are skipped. */
static void smooth_series(const double *y, size_t n, double w, int log_y, double *out) {
    double last = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!usable(y[i], log_y)) {
            out[i] = NAN;
            continue;
        }
        double v = log_y ? log(y[i]) : y[i];
        last = last * w + (1 - w) * v;
        k++;
        double d = last / (1 - pow(w, k));
        out[i] = log_y ? exp(d) : d;
    }
}

static cairo_status_t png_write(void *closure, const unsigned char *data, unsigned int len) {
    return vla_atomic_write(closure, data, len) == VLA_OK ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

vla_status vla_plot_png(const char *path, const vla_plot_opts *o, const vla_plot_series *s, size_t ns) {
    VLA_TRY(vla_cairo_require()); /* cairo missing: what to install, not an exit (base/dynlib.h) */
    if (!(o->smooth >= 0 && o->smooth < 1))
        return vla_error(VLA_ERR_INVALID_ARG, "plot: smoothing %g must be in [0, 1)", o->smooth);
    vla_plot_frame f;
    VLA_TRY(vla_plot_layout(o, s, ns, &f));
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f.width, f.height);
    cairo_t *cr = cairo_create(surf);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        cairo_surface_destroy(surf);
        return vla_error(VLA_ERR_NOMEM, "plot: cannot create a %dx%d image", f.width, f.height);
    }
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    draw_axes(cr, o, &f);

    cairo_save(cr);
    cairo_rectangle(cr, f.left, f.top, f.right - f.left, f.bottom - f.top);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    vla_status st = VLA_OK;
    int legend = ns > 1;
    for (size_t k = 0; k < ns; k++) {
        uint32_t rgb = s[k].rgb ? s[k].rgb : vla_plot_color(k);
        if (s[k].label) legend = 1;
        if (o->smooth > 0) {
            double *sm = malloc((s[k].n ? s[k].n : 1) * sizeof *sm);
            if (!sm) {
                st = vla_error(VLA_ERR_NOMEM, "plot: out of memory");
                break;
            }
            set_rgb(cr, rgb, 0.25);
            cairo_set_line_width(cr, 1.0);
            draw_line(cr, &f, s[k].x, s[k].y, s[k].n);
            smooth_series(s[k].y, s[k].n, o->smooth, o->log_y, sm);
            set_rgb(cr, rgb, 1.0);
            cairo_set_line_width(cr, 2.0);
            draw_line(cr, &f, s[k].x, sm, s[k].n);
            free(sm);
        } else {
            set_rgb(cr, rgb, 1.0);
            cairo_set_line_width(cr, 2.0);
            draw_line(cr, &f, s[k].x, s[k].y, s[k].n);
        }
        /* sparse points (evals) each get a dot, so one point or a flat run still shows; so does a series of
         * one or two points (a run stopped after its first log line), where a line alone draws nothing */
        if (o->markers || s[k].n <= 2)
            for (size_t i = 0; i < s[k].n; i++) {
                double px, py;
                if (!vla_plot_map(&f, s[k].x[i], s[k].y[i], &px, &py)) continue;
                cairo_new_path(cr);
                cairo_arc(cr, px, py, 4.0, 0, 2 * M_PI);
                cairo_fill(cr);
            }
    }
    cairo_restore(cr);
    if (legend && st == VLA_OK) {
        cairo_set_font_size(cr, 12);
        double y = f.top + 16;
        for (size_t k = 0; k < ns; k++) {
            char fallback[32];
            snprintf(fallback, sizeof fallback, "series %zu", k + 1);
            const char *label = s[k].label ? s[k].label : fallback;
            cairo_text_extents_t e;
            cairo_text_extents(cr, label, &e);
            double x = f.right - 12 - e.x_advance;
            set_rgb(cr, s[k].rgb ? s[k].rgb : vla_plot_color(k), 1.0);
            cairo_set_line_width(cr, 3);
            cairo_move_to(cr, x - 26, y - 4), cairo_line_to(cr, x - 6, y - 4), cairo_stroke(cr);
            cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
            cairo_move_to(cr, x, y);
            cairo_show_text(cr, label);
            y += 18;
        }
    }
    cairo_destroy(cr);
    if (st == VLA_OK) {
        vla_atomic_file af;
        st = vla_atomic_open(&af, path);
        if (st == VLA_OK) {
            cairo_status_t cs = cairo_surface_write_to_png_stream(surf, png_write, &af);
            if (cs != CAIRO_STATUS_SUCCESS) {
                /* keep the write error's message when there is one */
                if (cs != CAIRO_STATUS_WRITE_ERROR)
                    vla_error(VLA_ERR_INTERNAL, "%s: cairo: %s", path, cairo_status_to_string(cs));
                st = cs == CAIRO_STATUS_WRITE_ERROR ? VLA_ERR_IO : VLA_ERR_INTERNAL;
                vla_atomic_abort(&af);
            } else {
                st = vla_atomic_commit(&af);
            }
        }
    }
    cairo_surface_destroy(surf);
    return st;
}

/* One column of a metrics.jsonl against "step", with `o` (title, axes) filled in here. */
static vla_status plot_column(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                              vla_plot_opts o) {
    double *x, *y;
    size_t n;
    VLA_TRY(vla_metrics_read_column(jsonl_path, column, &x, &y, &n));
    if (n == 0) {
        free(x), free(y);
        return vla_error(VLA_ERR_NOT_FOUND, "%s: no values of '%s' to plot", jsonl_path, column);
    }
    vla_plot_series s = {.label = NULL, .x = x, .y = y, .n = n};
    o.title = title ? title : column, o.xlabel = "step", o.ylabel = column;
    vla_status st = vla_plot_png(png_path, &o, &s, 1);
    free(x), free(y);
    return st;
}

vla_status vla_plot_metric(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                           int log_y, double smooth) {
    return plot_column(jsonl_path, column, png_path, title, (vla_plot_opts){.log_y = log_y, .smooth = smooth});
}

vla_status vla_plot_metric_range(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                                 double y_min, double y_max) {
    return plot_column(jsonl_path, column, png_path, title,
                       (vla_plot_opts){.fixed_y = 1, .y_min = y_min, .y_max = y_max, .markers = 1});
}

void vla_plot_release_caches(void) {
    if (!vla_dynlib_loaded(&vla_cairo_lib)) return; /* nothing drew; and loading cairo to reset it would cost a start */
    cairo_debug_reset_static_data();
    /* fontconfig comes in through cairo; look FcFini up rather than link it */
    void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
    if (fc_fini) fc_fini();
}
