/* time_embedding.c — sinusoidal time embeddings (GR00T, diffusers, openpi conventions). */
#include "nn/time_embedding.h"

#include <math.h>

static double freq(const vla_temb_config *cfg, int64_t k) {
    int64_t half = cfg->dim / 2;
    if (cfg->kind == VLA_TEMB_PERIODS) {
        double frac = half > 1 ? (double)k / (double)(half - 1) : 0.0;
        return 2.0 * M_PI / (cfg->min_period * pow(cfg->max_period / cfg->min_period, frac));
    }
    return exp(-log(cfg->max_period) * (double)k / ((double)half - cfg->shift));
}

void vla_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n) {
    int64_t half = cfg->dim / 2;
    int64_t sin_off = cfg->cos_first ? half : 0, cos_off = cfg->cos_first ? 0 : half;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < half; k++) {
            double a = (double)t[i] * freq(cfg, k);
            out[i * cfg->dim + sin_off + k] = (float)sin(a);
            out[i * cfg->dim + cos_off + k] = (float)cos(a);
        }
}

void vla_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                 int64_t n) {
    int64_t half = cfg->dim / 2;
    int64_t sin_off = cfg->cos_first ? half : 0, cos_off = cfg->cos_first ? 0 : half;
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int64_t k = 0; k < half; k++) {
            double f = freq(cfg, k), a = (double)t[i] * f;
            s += d_out[i * cfg->dim + sin_off + k] * f * cos(a) - d_out[i * cfg->dim + cos_off + k] * f * sin(a);
        }
        d_t[i] += (float)s;
    }
}
