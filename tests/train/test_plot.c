/* test_plot.c — PNG plots: re-read with cairo, check the size and that the
 * series colours lie along the expected paths (linear and log y, smoothed),
 * plots from a metrics log, and atomic writes under injected faults. */
#include "test_util.h"
#include "base/fsutil.h"
#include "train/metrics.h"
#include "train/plot.h"

#include <cairo.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is there a pixel of colour `rgb` (within tol per channel) within r pixels? */
static int colour_near(cairo_surface_t *img, double px, double py, uint32_t rgb, int r, int tol) {
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char *d = cairo_image_surface_get_data(img);
    for (int y = (int)py - r; y <= (int)py + r; y++)
        for (int x = (int)px - r; x <= (int)px + r; x++) {
            if (x < 0 || y < 0 || x >= w || y >= h) continue;
            uint32_t p = *(const uint32_t *)(d + (size_t)y * stride + (size_t)x * 4);
            int dr = abs((int)((p >> 16) & 255) - (int)((rgb >> 16) & 255));
            int dg = abs((int)((p >> 8) & 255) - (int)((rgb >> 8) & 255));
            int db = abs((int)(p & 255) - (int)(rgb & 255));
            if (dr <= tol && dg <= tol && db <= tol) return 1;
        }
    return 0;
}

static int count_colour(cairo_surface_t *img, uint32_t rgb, int tol) {
    int n = 0, w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) n += colour_near(img, x, y, rgb, 0, tol);
    return n;
}

static cairo_surface_t *load_png(const char *path, int w, int h) {
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), w);
    assert_int_equal(cairo_image_surface_get_height(img), h);
    cairo_surface_flush(img);
    return img;
}

enum { N = 200 };

static void check_path(cairo_surface_t *img, const vla_plot_frame *f, const double *x, const double *y, size_t n,
                       uint32_t rgb) {
    int hits = 0, tried = 0;
    for (size_t i = 0; i < n * 7 / 10; i += 9) { /* the legend sits top right */
        double px, py;
        if (!vla_plot_map(f, x[i], y[i], &px, &py)) continue;
        tried++;
        hits += colour_near(img, px, py, rgb, 2, 40);
    }
    if (hits != tried) fail_msg("series %06x found at %d of %d expected points", rgb, hits, tried);
}

static void test_two_series(void **state) {
    static double x[N], loss[N], other[N];
    for (int i = 0; i < N; i++) {
        x[i] = i * 50.0;
        loss[i] = 2.0 * exp(-i / 40.0) + 0.1;
        other[i] = 1.0 + 0.5 * sin(i / 15.0);
    }
    vla_plot_series s[2] = {{"train loss", x, loss, N, 0}, {"val loss", x, other, N, 0}};
    vla_plot_opts o = {.title = "loss", .xlabel = "step", .ylabel = "loss", .width = 640, .height = 400};
    const char *path = test_tmp_path("two.png");
    assert_int_equal(vla_plot_png(path, &o, s, 2), VLA_OK);
    vla_plot_frame f;
    assert_int_equal(vla_plot_layout(&o, s, 2, &f), VLA_OK);
    cairo_surface_t *img = load_png(path, 640, 400);
    check_path(img, &f, x, loss, N, vla_plot_color(0));
    check_path(img, &f, x, other, N, vla_plot_color(1));
    /* the blue is only where the curve is: not at a point far from it */
    double px, py;
    vla_plot_map(&f, x[20], 0.1, &px, &py);
    assert_false(colour_near(img, px, py, vla_plot_color(0), 1, 40));
    /* axes drawn: dark pixels along the frame's left edge */
    assert_true(colour_near(img, f.left + 0.5, (f.top + f.bottom) / 2, 0x333333, 1, 30));
    cairo_surface_destroy(img);
    if (getenv("VLA_PLOT_KEEP")) {
        char *d;
        size_t n;
        vla_read_file(path, &d, &n);
        vla_write_file_atomic(getenv("VLA_PLOT_KEEP"), d, n);
        free(d);
    }
}

/* A run stopped after its first logged step has a one-point loss series: the
 * plot must still show it (a dot), not an empty frame. */
static void test_one_point_shows(void **state) {
    (void)state;
    double x[1] = {3}, y[1] = {1.19};
    vla_plot_series s = {NULL, x, y, 1, 0}; /* no label: no legend swatch of its colour */
    vla_plot_opts o = {.title = "loss", .xlabel = "step", .ylabel = "loss", .width = 320, .height = 200};
    const char *path = test_tmp_path("one.png");
    assert_int_equal(vla_plot_png(path, &o, &s, 1), VLA_OK);
    cairo_surface_t *img = load_png(path, 320, 200);
    int n = count_colour(img, vla_plot_color(0), 40);
    cairo_surface_destroy(img);
    if (n < 20) fail_msg("one point drew %d pixels of its colour", n);
}

static void test_log_smoothed(void **state) {
    static double x[N], y[N], sm[N];
    for (int i = 0; i < N; i++) {
        x[i] = i;
        y[i] = 1e-1 * pow(10, -i / 80.0) * (1 + 0.3 * ((i * 7919) % 13 - 6) / 6.0);
    }
    y[50] = NAN; /* breaks the line, no crash */
    y[51] = -1;  /* not shown on a log axis */
    vla_plot_series s = {NULL, x, y, N, 0xd62728};
    vla_plot_opts o = {.title = "lr", .log_y = 1, .smooth = 0.9, .width = 500, .height = 300};
    const char *path = test_tmp_path("log.png");
    assert_int_equal(vla_plot_png(path, &o, &s, 1), VLA_OK);
    vla_plot_frame f;
    assert_int_equal(vla_plot_layout(&o, &s, 1, &f), VLA_OK);
    assert_true(f.y1 < -1 + 0.2 && f.y0 > -4.0);
    /* the smoothed curve, in full colour, follows the debiased EMA of log y */
    double last = 0;
    int k = 0;
    for (int i = 0; i < N; i++) {
        if (!(y[i] > 0)) {
            sm[i] = NAN;
            continue;
        }
        last = 0.9 * last + 0.1 * log(y[i]);
        k++;
        sm[i] = exp(last / (1 - pow(0.9, k)));
    }
    cairo_surface_t *img = load_png(path, 500, 300);
    check_path(img, &f, x, sm, N, 0xd62728);
    cairo_surface_destroy(img);
    if (getenv("VLA_PLOT_KEEP_LOG")) {
        char *d;
        size_t n;
        vla_read_file(path, &d, &n);
        vla_write_file_atomic(getenv("VLA_PLOT_KEEP_LOG"), d, n);
        free(d);
    }
}

static void test_metric_plot_and_faults(void **state) {
    const char *dir = test_tmp_path("run");
    vla_metrics m;
    const char *cols[] = {"loss", "eval/success"};
    assert_int_equal(vla_metrics_open(&m, dir, cols, 2, -1), VLA_OK);
    for (int s = 1; s <= 100; s++) {
        double v[2] = {1.0 / s, s % 20 == 0 ? s / 100.0 : NAN};
        assert_int_equal(vla_metrics_log(&m, s, v), VLA_OK);
    }
    vla_metrics_close(&m);
    char jl[1100], png[1100];
    snprintf(jl, sizeof jl, "%s/metrics.jsonl", dir);
    snprintf(png, sizeof png, "%s/eval_success.png", dir);
    assert_int_equal(vla_plot_metric(jl, "eval/success", png, "eval success", 0, 0), VLA_OK);
    cairo_surface_t *img = load_png(png, 800, 500);
    assert_true(count_colour(img, vla_plot_color(0), 30) > 300);
    cairo_surface_destroy(img);
    assert_int_equal(vla_plot_metric(jl, "nothing", png, NULL, 0, 0), VLA_ERR_NOT_FOUND);

    /* a failing write leaves the previous PNG and no temp file */
    double x[3] = {0, 1, 2}, y[3] = {3, 1, 2};
    vla_plot_series s = {NULL, x, y, 3, 0};
    vla_plot_opts o = {0};
    for (int64_t budget = 0; budget < 3000; budget += 500) {
        vla_fault_inject_write(budget);
        vla_status st = vla_plot_png(png, &o, &s, 1);
        vla_fault_inject_write(-1);
        assert_int_equal(st, VLA_ERR_IO);
        img = load_png(png, 800, 500); /* still the old one */
        cairo_surface_destroy(img);
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) assert_null(strstr(e->d_name, ".tmp"));
    closedir(d);
    /* coordinates far beyond the tick step's precision still terminate */
    double bx[3] = {1e17, 1e17 + 16, 1e17 + 32}, by[3] = {1e300, -1e300, 5};
    vla_plot_series big = {NULL, bx, by, 3, 0};
    assert_int_equal(vla_plot_png(png, &o, &big, 1), VLA_OK);
    vla_plot_opts lo = {.log_y = 1};
    double ly[3] = {1e-300, 1e300, 0};
    vla_plot_series wide = {NULL, x, ly, 3, 0};
    assert_int_equal(vla_plot_png(png, &lo, &wide, 1), VLA_OK);
    vla_plot_series none = {NULL, x, ly, 0, 0};
    assert_int_equal(vla_plot_png(png, &o, &none, 1), VLA_OK); /* empty axes */
    o.smooth = 1.0;
    assert_int_equal(vla_plot_png(png, &o, &s, 1), VLA_ERR_INVALID_ARG);
    o.smooth = 0;
    o.width = 10;
    assert_int_equal(vla_plot_png(png, &o, &s, 1), VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_series),
        cmocka_unit_test(test_log_smoothed),
        cmocka_unit_test(test_one_point_shows),
        cmocka_unit_test(test_metric_plot_and_faults),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
