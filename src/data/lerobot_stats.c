/* lerobot_stats.c — stats.json-style statistics (min, max, mean, std,
 * count, q01…q99) computed from a dataset's rows and frames, and their
 * comparison with the stored ones. Numeric quantiles are exact (sort, linear
 * interpolation as numpy.quantile); image statistics are per channel in
 * [0,1], from 256-bin histograms of the frames and pixels LeRobot's
 * compute_stats samples (lerobot_internal.h), the rule the writer uses too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/lerobot_internal.h"

const char *const vla_lr_stat_names[VLA_LR_NSTAT] = {"min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"};
const double vla_lr_quantiles[5] = {0.01, 0.10, 0.50, 0.90, 0.99};

static int cmp_f32(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void vla_lr_numeric_stats(const float *v, int64_t n, int64_t width, int64_t stride, float *scratch, double *out) {
    for (int64_t c = 0; c < width; c++) {
        int64_t m = 0;
        double sum = 0;
        for (int64_t i = 0; i < n; i++) {
            float x = v[i * stride + c];
            if (!isfinite(x)) continue;
            scratch[m++] = x;
            sum += x;
        }
        double *o[VLA_LR_NSTAT];
        for (int k = 0; k < VLA_LR_NSTAT; k++) o[k] = out + (size_t)k * width;
        if (m == 0) {
            for (int k = 0; k < VLA_LR_NSTAT; k++) o[k][c] = 0;
            continue;
        }
        double mean = sum / (double)m, m2 = 0;
        for (int64_t i = 0; i < m; i++) m2 += ((double)scratch[i] - mean) * ((double)scratch[i] - mean);
        qsort(scratch, (size_t)m, sizeof *scratch, cmp_f32);
        o[0][c] = scratch[0];
        o[1][c] = scratch[m - 1];
        o[2][c] = mean;
        o[3][c] = sqrt(m2 / (double)m);
        for (int q = 0; q < 5; q++) {
            if (m < 2) { o[4 + q][c] = mean; continue; } /* LeRobot: fewer than 2 samples → the mean */
            double pos = vla_lr_quantiles[q] * (double)(m - 1);
            int64_t lo = (int64_t)floor(pos);
            int64_t hi = lo + 1 < m ? lo + 1 : lo;
            double f = pos - (double)lo;
            o[4 + q][c] = (double)scratch[lo] + f * ((double)scratch[hi] - (double)scratch[lo]);
        }
    }
}

/* Value at sorted position k of a histogram of bytes. */
static double hist_at(const uint64_t *h, int64_t k) {
    int64_t acc = 0;
    for (int b = 0; b < 256; b++) {
        acc += (int64_t)h[b];
        if (k < acc) return b / 255.0;
    }
    return 1.0;
}

void vla_lr_hist_stats(const uint64_t *hist, int64_t n, double *out) {
    for (int c = 0; c < 3; c++) {
        const uint64_t *h = hist + 256 * c;
        double *o[VLA_LR_NSTAT];
        for (int k = 0; k < VLA_LR_NSTAT; k++) o[k] = out + (size_t)k * 3;
        if (n <= 0) {
            for (int k = 0; k < VLA_LR_NSTAT; k++) o[k][c] = 0;
            continue;
        }
        double sum = 0, sq = 0;
        int lo = 255, hi = 0;
        for (int b = 0; b < 256; b++)
            if (h[b]) {
                double v = b / 255.0;
                sum += v * (double)h[b];
                sq += v * v * (double)h[b];
                if (b < lo) lo = b;
                if (b > hi) hi = b;
            }
        double mean = sum / (double)n, var = sq / (double)n - mean * mean;
        o[0][c] = lo / 255.0;
        o[1][c] = hi / 255.0;
        o[2][c] = mean;
        o[3][c] = sqrt(var > 0 ? var : 0);
        for (int q = 0; q < 5; q++) {
            double pos = vla_lr_quantiles[q] * (double)(n - 1);
            int64_t l = (int64_t)floor(pos);
            double f = pos - (double)l, a = hist_at(h, l), b = hist_at(h, l + 1 < n ? l + 1 : l);
            o[4 + q][c] = a + f * (b - a);
        }
    }
}

int64_t vla_lr_image_sample_count(int64_t L) {
    if (L <= 0) return 0;
    if (L < 100) return L; /* estimate_num_samples: fewer frames than its minimum: all of them */
    int64_t p = (int64_t)pow((double)L, 0.75);
    if (p > 10000) p = 10000;
    return p > 100 ? p : 100;
}

int64_t vla_lr_image_sample_frame(int64_t L, int64_t n, int64_t k) {
    if (n <= 1) return 0;
    if (k >= n - 1) return L - 1; /* numpy sets the last point to stop exactly */
    double step = (double)(L - 1) / (double)(n - 1);
    return (int64_t)nearbyint((double)k * step); /* np.round: half to even (the default rounding mode) */
}

int vla_lr_image_stride(int w, int h) {
    int m = w > h ? w : h;
    if (m < 300) return 1;
    return (w > h ? w : h) / 150;
}

int64_t vla_lr_hist_add(uint64_t *hist, const uint8_t *rgb, int w, int h) {
    int s = vla_lr_image_stride(w, h);
    int64_t n = 0;
    for (int y = 0; y < h; y += s)
        for (int x = 0; x < w; x += s, n++) {
            const uint8_t *px = rgb + ((size_t)y * w + x) * 3;
            for (int k = 0; k < 3; k++) hist[k * 256 + px[k]]++;
        }
    return n;
}

json_t *vla_lr_stats_json(const double *out, int64_t width, int64_t count, int image) {
    json_t *o = json_object();
    for (int k = 0; k < VLA_LR_NSTAT; k++) {
        json_t *a = json_array();
        for (int64_t c = 0; c < width; c++) {
            json_t *v = json_real(out[(size_t)k * width + c]);
            json_array_append_new(a, image ? json_pack("[[o]]", v) : v);
        }
        json_object_set_new(o, vla_lr_stat_names[k], a);
    }
    json_object_set_new(o, "count", json_pack("[I]", (json_int_t)count));
    return o;
}

vla_status vla_lerobot_compute_stats(const vla_lerobot *ds, bool images, json_t **out) {
    *out = NULL;
    json_t *root = json_object();
    float *scratch = malloc((size_t)(ds->n_rows + 1) * sizeof *scratch);
    if (!root || !scratch) {
        json_decref(root);
        free(scratch);
        return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    vla_status st = VLA_OK;
    for (int i = 0; i < ds->n_features && st == VLA_OK; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (f->values) {
            double *o = malloc((size_t)VLA_LR_NSTAT * (size_t)f->width * sizeof *o);
            if (!o) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
            vla_lr_numeric_stats(f->values, ds->n_rows, f->width, f->width, scratch, o);
            json_object_set_new(root, f->key, vla_lr_stats_json(o, f->width, ds->n_rows, 0));
            free(o);
        } else if (f->camera >= 0 && images && ds->n_rows > 0) {
            /* the writer's rule: each episode's sampled frames, at full size, every s-th pixel */
            int ow = f->width_px, oh = f->height;
            uint8_t *rgb = malloc((size_t)ow * oh * 3);
            uint64_t *hist = calloc(3 * 256, sizeof *hist);
            vla_lr_reader *r = NULL;
            if (!rgb || !hist) st = vla_error(VLA_ERR_NOMEM, "out of memory");
            if (st == VLA_OK) st = vla_lr_reader_open(ds, &r);
            int64_t frames = 0, pixels = 0;
            for (int64_t e = 0; st == VLA_OK && e < ds->n_episodes; e++) {
                int64_t L = ds->episodes[e].length, n = vla_lr_image_sample_count(L);
                for (int64_t k = 0; st == VLA_OK && k < n; k++) {
                    st = vla_lr_reader_frame(r, f->camera, ds->episodes[e].from + vla_lr_image_sample_frame(L, n, k),
                                             ow, oh, 0, rgb);
                    if (st == VLA_OK) pixels += vla_lr_hist_add(hist, rgb, ow, oh);
                }
                frames += n;
            }
            if (st == VLA_OK) {
                double o[VLA_LR_NSTAT * 3];
                vla_lr_hist_stats(hist, pixels, o);
                json_object_set_new(root, f->key, vla_lr_stats_json(o, 3, frames, 1));
            }
            vla_lr_reader_close(r);
            free(rgb);
            free(hist);
        }
    }
    free(scratch);
    if (st != VLA_OK) {
        json_decref(root);
        return st;
    }
    *out = root;
    return VLA_OK;
}

static int flat(json_t *v, double *o, int cap, int n) {
    if (json_is_number(v)) {
        if (n < cap) o[n] = json_number_value(v);
        return n + 1;
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) n = flat(json_array_get(v, i), o, cap, n);
    return n;
}

vla_status vla_lerobot_compare_stats(const vla_lerobot *ds, const json_t *computed, json_t *report, int *n_bad) {
    *n_bad = 0;
    const char *key;
    json_t *obj;
    json_object_foreach((json_t *)computed, key, obj) {
        const vla_lr_stats *s = vla_lerobot_stats(ds, key);
        const vla_lr_feature *f = vla_lerobot_feature(ds, key);
        int image = f && f->camera >= 0, video = image && f->dtype == VLA_LR_VIDEO;
        if (!s) {
            /* nothing to compare with: not judged (no verdict either way), said in the note */
            json_array_append_new(report, json_pack("{s:s,s:s,s:n,s:n,s:b,s:s}", "feature", key, "stat", "all", "max_abs_diff",
                                                    "tolerance", "judged", 0, "note", "no stored stats"));
            continue;
        }
        const double *stored[VLA_LR_NSTAT] = {s->min, s->max, s->mean, s->std, s->q01, s->q10, s->q50, s->q90, s->q99};
        for (int k = 0; k < VLA_LR_NSTAT; k++) {
            if (!stored[k]) continue;
            double vals[4096];
            int n = flat(json_object_get(obj, vla_lr_stat_names[k]), vals, 4096, 0);
            if (n != s->n || n > 4096) {
                json_array_append_new(report, json_pack("{s:s,s:s,s:n,s:n,s:b,s:b,s:s}", "feature", key, "stat",
                                                        vla_lr_stat_names[k], "max_abs_diff", "tolerance", "judged", 1,
                                                        "ok", 0, "note", "width differs"));
                (*n_bad)++;
                continue;
            }
            double diff = 0, scale = 0;
            for (int c = 0; c < n; c++) {
                double d = fabs(vals[c] - stored[k][c]);
                if (!(d <= diff)) diff = d; /* NaN propagates */
                if (fabs(stored[k][c]) > scale) scale = fabs(stored[k][c]);
            }
            /* f32 data summed in a different order. Images: the same frames and pixels as the writer
             * (lerobot_internal.h), but the writer saw them before encoding: a lossy video moves the
             * mean and std a little and the extremes (min, max) a lot (chroma subsampling at edges),
             * so for video only mean and std are judged; a lossless image feature is judged exactly. */
            double tol = video ? 0.05 : image ? 1e-6 : 1e-4 * (1 + scale);
            int quantile = k >= 4, judged = !quantile && !(video && k < 2);
            if (quantile && !image) tol = 1e-2 * (1 + scale);
            int ok = diff <= tol;
            json_t *e = json_pack("{s:s,s:s,s:f,s:f,s:b}", "feature", key, "stat", vla_lr_stat_names[k],
                                  "max_abs_diff", isfinite(diff) ? diff : -1.0, "tolerance", tol, "judged", judged);
            if (judged && e) json_object_set_new(e, "ok", json_boolean(ok)); /* a row not judged has no verdict */
            if (!judged && e)
                json_object_set_new(e, "note", json_string(quantile ? "quantile: not judged (LeRobot stores per-episode "
                                                                      "envelopes)"
                                                                    : "video extremes: not judged (lossy codec)"));
            json_array_append_new(report, e);
            if (!ok && judged) (*n_bad)++;
        }
        {
            json_t *c = json_object_get(obj, "count");
            double cv[1] = {0};
            flat(c, cv, 1, 0);
            int ok = (int64_t)cv[0] == s->count;
            json_array_append_new(report, json_pack("{s:s,s:s,s:f,s:f,s:b,s:b}", "feature", key, "stat", "count",
                                                    "max_abs_diff", fabs(cv[0] - (double)s->count), "tolerance", 0.0,
                                                    "judged", 1, "ok", ok));
            if (!ok) (*n_bad)++;
        }
    }
    return VLA_OK;
}
