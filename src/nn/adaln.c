/* adaln.c — adaptive LayerNorm with per-sample (scale, shift). */
#include "nn/adaln.h"

#include <math.h>

#include "nn/packing.h"
#include "tensor/parallel.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS

vla_status vla_adaln_forward(float *out, float *mean, float *rstd, const float *in, const float *mod,
                             const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adaln"));
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        const float *scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 2 * dim, *shift = scale + dim;
        double s = 0.0;
        for (int64_t c = 0; c < dim; c++) s += x[c];
        double m = s / (double)dim, v = 0.0;
        for (int64_t c = 0; c < dim; c++) v += ((double)x[c] - m) * ((double)x[c] - m);
        float r = (float)(1.0 / sqrt(v / (double)dim + (double)eps)), mf = (float)m;
        float *y = out + t * dim;
        for (int64_t c = 0; c < dim; c++) y[c] = (x[c] - mf) * r * (1.0f + scale[c]) + shift[c];
        if (mean) mean[t] = mf;
        if (rstd) rstd[t] = r;
    }
    return VLA_OK;
}

vla_status vla_adaln_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                              const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                              int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adaln"));
    if (d_in) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *x = in + t * dim, *dy = d_out + t * dim;
            const float *scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 2 * dim;
            float m = mean[t], r = rstd[t];
            double sg = 0.0, sgx = 0.0;
            for (int64_t c = 0; c < dim; c++) {
                float g = dy[c] * (1.0f + scale[c]);
                sg += g;
                sgx += (double)g * (double)((x[c] - m) * r);
            }
            float mg = (float)(sg / (double)dim), mgx = (float)(sgx / (double)dim);
            float *dx = d_in + t * dim;
            for (int64_t c = 0; c < dim; c++) dx[c] += r * (dy[c] * (1.0f + scale[c]) - mg - (x[c] - m) * r * mgx);
        }
    }
    if (d_mod) {
        /* each (sample, column) is summed by one thread over its tokens in order */
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c = 0; c < dim; c++) {
            for (int32_t s = 0; s < n_seg; s++) {
                double ss = 0.0, sb = 0.0;
                for (int64_t t = cu[s]; t < cu[s + 1]; t++) {
                    float dy = d_out[t * dim + c];
                    ss += (double)dy * (double)((in[t * dim + c] - mean[t]) * rstd[t]);
                    sb += dy;
                }
                d_mod[(int64_t)s * 2 * dim + c] += (float)ss;
                d_mod[(int64_t)s * 2 * dim + dim + c] += (float)sb;
            }
        }
    }
    return VLA_OK;
}
