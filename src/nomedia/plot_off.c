/* plot_off.c — train/plot.h in a VLA_MEDIA=OFF build (no cairo): a training
 * run's PNG plots fail with media_off.h's error, which the trainer reports as
 * a warning (metrics.jsonl, what the plots draw, is written as always).
 * Stands in for src/train/plot.c; its layout arithmetic (vla_plot_layout,
 * _map, _y_ticks) lives beside the cairo calls there, so here it reports the
 * same error and only tests (tests/train/test_plot.c, left out of this
 * build) call it. */
#include "nomedia/media_off.h"
#include "train/plot.h"

uint32_t vla_plot_color(size_t i) {
    static const uint32_t palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                       0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf}; /* tab10, as plot.c */
    return palette[i % (sizeof palette / sizeof *palette)];
}
vla_status vla_plot_layout(const vla_plot_opts *o, const vla_plot_series *s, size_t ns, vla_plot_frame *f) {
    (void)o, (void)s, (void)ns, (void)f;
    return vla_media_off_error("laying out a plot");
}
int vla_plot_map(const vla_plot_frame *f, double x, double y, double *px, double *py) {
    (void)f, (void)x, (void)y, (void)px, (void)py;
    return 0;
}
int vla_plot_y_ticks(const vla_plot_frame *f, double *values, int cap) {
    (void)f, (void)values, (void)cap;
    return 0;
}
vla_status vla_plot_png(const char *path, const vla_plot_opts *o, const vla_plot_series *s, size_t ns) {
    (void)o, (void)s, (void)ns;
    return vla_media_off_error("plotting %s", path);
}
vla_status vla_plot_metric(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                           int log_y, double smooth) {
    (void)jsonl_path, (void)column, (void)title, (void)log_y, (void)smooth;
    return vla_media_off_error("plotting %s", png_path);
}
vla_status vla_plot_metric_range(const char *jsonl_path, const char *column, const char *png_path, const char *title,
                                 double y_min, double y_max) {
    (void)jsonl_path, (void)column, (void)title, (void)y_min, (void)y_max;
    return vla_media_off_error("plotting %s", png_path);
}
void vla_plot_release_caches(void) {}
