/* normalize.c — per-channel normalisation (see normalize.h). */
#include "policy/normalize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

vla_status vla_normalizer_init(vla_normalizer *n, vla_norm_mode mode, vla_norm_eps_style style, int64_t dim,
                               const float *a, const float *b, float eps) {
    memset(n, 0, sizeof *n);
    if (dim < 0) return vla_error(VLA_ERR_INVALID_ARG, "normalizer: negative dim %lld", (long long)dim);
    if ((unsigned)mode > VLA_NORM_QUANTILES) return vla_error(VLA_ERR_INVALID_ARG, "normalizer: unknown mode %d", mode);
    n->mode = mode, n->style = style, n->dim = dim;
    n->eps = eps > 0 ? eps : style == VLA_NORM_EPS_OPENPI ? 1e-6f : 1e-8f;
    if (mode == VLA_NORM_IDENTITY) return VLA_OK;
    static const char *const pair[][2] = {{"", ""}, {"mean", "std"}, {"min", "max"}, {"q01", "q99"}};
    if (!a || !b)
        return vla_error(VLA_ERR_INVALID_ARG, "normalizer %s: statistics '%s' and '%s' are required",
                         vla_norm_mode_name(mode), pair[mode][0], pair[mode][1]);
    for (int64_t i = 0; i < dim; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i]))
            return vla_error(VLA_ERR_NUMERIC, "normalizer %s: channel %lld: %s %g, %s %g must be finite",
                             vla_norm_mode_name(mode), (long long)i, pair[mode][0], a[i], pair[mode][1], b[i]);
        if (mode == VLA_NORM_MEAN_STD && b[i] < 0)
            return vla_error(VLA_ERR_INVALID_ARG, "normalizer mean_std: channel %lld: std %g is negative",
                             (long long)i, b[i]);
        if (mode != VLA_NORM_MEAN_STD && b[i] < a[i])
            return vla_error(VLA_ERR_INVALID_ARG, "normalizer %s: channel %lld: %s %g is below %s %g",
                             vla_norm_mode_name(mode), (long long)i, pair[mode][1], b[i], pair[mode][0], a[i]);
    }
    size_t bytes = (size_t)(dim ? dim : 1) * sizeof(float);
    n->lo = malloc(bytes), n->hi = malloc(bytes);
    if (!n->lo || !n->hi) {
        vla_normalizer_free(n);
        return vla_error(VLA_ERR_NOMEM, "normalizer: out of memory");
    }
    if (dim) memcpy(n->lo, a, (size_t)dim * sizeof(float)), memcpy(n->hi, b, (size_t)dim * sizeof(float));
    return VLA_OK;
}

const char *vla_norm_style_name(vla_norm_eps_style s) {
    return s == VLA_NORM_EPS_OPENPI ? "openpi" : s == VLA_NORM_EPS_GROOT ? "groot" : "lerobot";
}

void vla_normalizer_free(vla_normalizer *n) {
    free(n->lo), free(n->hi);
    n->lo = n->hi = NULL;
}

/* The divisor of channel c: std + eps, or the range (eps where it is 0, or
 * + eps in openpi's style). */
static float denom(const vla_normalizer *n, int64_t c) {
    if (n->mode == VLA_NORM_MEAN_STD) return n->hi[c] + n->eps;
    float d = n->hi[c] - n->lo[c];
    if (n->style == VLA_NORM_EPS_OPENPI) return d + n->eps;
    return d == 0.0f ? n->eps : d;
}

/* GR00T's Normalizer.forward / inverse (normalize.h). */
static void groot_normalize(const vla_normalizer *n, float *y, const float *x, int64_t rows) {
    int64_t D = n->dim;
    for (int64_t c = 0; c < D; c++) {
        float lo = n->lo[c], hi = n->hi[c];
        for (int64_t r = 0; r < rows; r++) {
            float v = x[r * D + c];
            if (n->mode == VLA_NORM_MEAN_STD) {
                y[r * D + c] = hi != 0.0f ? (v - lo) / hi : v;
            } else if (n->mode == VLA_NORM_MIN_MAX) {
                y[r * D + c] = hi != lo ? 2.0f * ((v - lo) / (hi - lo)) - 1.0f : 0.0f;
            } else {
                float q = hi != lo ? 2.0f * ((v - lo) / (hi - lo)) - 1.0f : v;
                y[r * D + c] = q < -1.0f ? -1.0f : q > 1.0f ? 1.0f : q;
            }
        }
    }
}

static void groot_unnormalize(const vla_normalizer *n, float *y, const float *x, int64_t rows) {
    int64_t D = n->dim;
    for (int64_t c = 0; c < D; c++) {
        float lo = n->lo[c], hi = n->hi[c];
        for (int64_t r = 0; r < rows; r++)
            y[r * D + c] = n->mode == VLA_NORM_MEAN_STD ? x[r * D + c] * hi + lo
                                                        : (x[r * D + c] + 1.0f) / 2.0f * (hi - lo) + lo;
    }
}

void vla_normalize(const vla_normalizer *n, float *y, const float *x, int64_t rows) {
    int64_t D = n->dim;
    if (n->mode == VLA_NORM_IDENTITY) {
        if (y != x) memmove(y, x, (size_t)(rows * D) * sizeof(float));
        return;
    }
    if (n->style == VLA_NORM_EPS_GROOT) {
        groot_normalize(n, y, x, rows);
        return;
    }
    for (int64_t c = 0; c < D; c++) {
        float d = denom(n, c), lo = n->lo[c];
        if (n->mode == VLA_NORM_MEAN_STD)
            for (int64_t r = 0; r < rows; r++) y[r * D + c] = (x[r * D + c] - lo) / d;
        else
            for (int64_t r = 0; r < rows; r++) y[r * D + c] = 2.0f * (x[r * D + c] - lo) / d - 1.0f;
    }
}

void vla_unnormalize(const vla_normalizer *n, float *y, const float *x, int64_t rows) {
    int64_t D = n->dim;
    if (n->mode == VLA_NORM_IDENTITY) {
        if (y != x) memmove(y, x, (size_t)(rows * D) * sizeof(float));
        return;
    }
    if (n->style == VLA_NORM_EPS_GROOT) {
        groot_unnormalize(n, y, x, rows);
        return;
    }
    for (int64_t c = 0; c < D; c++) {
        float d = denom(n, c), lo = n->lo[c];
        if (n->mode == VLA_NORM_MEAN_STD)
            for (int64_t r = 0; r < rows; r++) y[r * D + c] = x[r * D + c] * d + lo;
        else
            for (int64_t r = 0; r < rows; r++) y[r * D + c] = (x[r * D + c] + 1.0f) / 2.0f * d + lo;
    }
}

/* Step h's statistics as a borrowed normaliser of `width` channels. */
static bool chunk_step(const vla_normalizer *n, int64_t H, int64_t width, int64_t h, vla_normalizer *view) {
    *view = *n;
    view->dim = width;
    if (n->dim == width) return true;
    if (n->dim != H * width) return false;
    if (n->lo) view->lo = n->lo + h * width;
    if (n->hi) view->hi = n->hi + h * width;
    return true;
}

void vla_normalize_chunk(const vla_normalizer *n, float *x, int64_t H, int64_t width, int64_t stride) {
    vla_normalizer v;
    for (int64_t h = 0; h < H; h++)
        if (chunk_step(n, H, width, h, &v)) vla_normalize(&v, x + h * stride, x + h * stride, 1);
}

void vla_unnormalize_chunk(const vla_normalizer *n, float *x, int64_t H, int64_t width, int64_t stride) {
    vla_normalizer v;
    for (int64_t h = 0; h < H; h++)
        if (chunk_step(n, H, width, h, &v)) vla_unnormalize(&v, x + h * stride, x + h * stride, 1);
}

/* ---- as JSON (a checkpoint's normalisation entries) ---------------------------- */

json_t *vla_norm_to_json(const vla_normalizer *n) {
    json_t *lo = json_array(), *hi = json_array();
    for (int64_t i = 0; n->lo && i < n->dim; i++) json_array_append_new(lo, json_real(n->lo[i]));
    for (int64_t i = 0; n->hi && i < n->dim; i++) json_array_append_new(hi, json_real(n->hi[i]));
    return json_pack("{s:s, s:s, s:f, s:I, s:o, s:o}", "mode", vla_norm_mode_name(n->mode), "style",
                     vla_norm_style_name(n->style), "eps", (double)n->eps, "dim",
                     (json_int_t)n->dim, "lo", lo, "hi", hi);
}

vla_status vla_norm_from_json(const char *what, const json_t *j, vla_normalizer *n) {
    const char *mode_s = json_string_value(json_object_get(j, "mode"));
    const char *style_s = json_string_value(json_object_get(j, "style"));
    json_t *lo = json_object_get(j, "lo"), *hi = json_object_get(j, "hi");
    json_t *dim = json_object_get(j, "dim");
    int mode = mode_s ? vla_norm_mode_from_name(mode_s) : -1;
    if (mode < 0 || !json_is_integer(dim) || !json_is_array(lo) || !json_is_array(hi))
        return vla_error(VLA_ERR_FORMAT, "%s: normalisation entry needs mode, dim, lo, hi", what);
    int64_t d = json_integer_value(dim);
    if (d < 1 || d > 4096) return vla_error(VLA_ERR_FORMAT, "%s: bad dim %lld", what, (long long)d);
    bool ident = mode == VLA_NORM_IDENTITY;
    if (!ident && ((int64_t)json_array_size(lo) != d || (int64_t)json_array_size(hi) != d))
        return vla_error(VLA_ERR_FORMAT, "%s: lo/hi must have %lld values", what, (long long)d);
    float *a = calloc((size_t)d, sizeof *a), *b = calloc((size_t)d, sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", what);
    }
    for (int64_t i = 0; !ident && i < d; i++) {
        a[i] = (float)json_number_value(json_array_get(lo, (size_t)i));
        b[i] = (float)json_number_value(json_array_get(hi, (size_t)i));
    }
    double eps = json_number_value(json_object_get(j, "eps"));
    vla_norm_eps_style style = VLA_NORM_EPS_LEROBOT; /* absent: an older checkpoint, LeRobot's form */
    if (style_s && !strcmp(style_s, vla_norm_style_name(VLA_NORM_EPS_OPENPI))) style = VLA_NORM_EPS_OPENPI;
    else if (style_s && !strcmp(style_s, vla_norm_style_name(VLA_NORM_EPS_GROOT))) style = VLA_NORM_EPS_GROOT;
    vla_status st = vla_normalizer_init(n, (vla_norm_mode)mode, style, d, ident ? NULL : a, ident ? NULL : b, (float)eps);
    free(a), free(b);
    if (st != VLA_OK) return vla_error_context(st, "%s", what);
    return VLA_OK;
}
