/* layernorm.c — LayerNorm forward and backward (row statistics in double). */
#include "nn/layernorm.h"

#include <math.h>

#define PAR_MIN (1 << 14)

void vla_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                           int64_t n, int64_t dim, float eps) {
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        double s = 0.0;
        for (int64_t c = 0; c < dim; c++) s += x[c];
        double m = s / (double)dim, v = 0.0;
        for (int64_t c = 0; c < dim; c++) v += ((double)x[c] - m) * ((double)x[c] - m);
        float r = (float)(1.0 / sqrt(v / (double)dim + (double)eps));
        float mf = (float)m;
        float *y = out + t * dim;
        for (int64_t c = 0; c < dim; c++) {
            float xh = (x[c] - mf) * r;
            y[c] = xh * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f);
        }
        if (mean) mean[t] = mf;
        if (rstd) rstd[t] = r;
    }
}

void vla_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                            const float *w, const float *mean, const float *rstd, int64_t n, int64_t dim) {
    if (d_in) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *x = in + t * dim, *dy = d_out + t * dim;
            float m = mean[t], r = rstd[t];
            double sg = 0.0, sgx = 0.0;
            for (int64_t c = 0; c < dim; c++) {
                float g = dy[c] * (w ? w[c] : 1.0f);
                sg += g;
                sgx += (double)g * (double)((x[c] - m) * r);
            }
            float mg = (float)(sg / (double)dim), mgx = (float)(sgx / (double)dim);
            float *dx = d_in + t * dim;
            for (int64_t c = 0; c < dim; c++) {
                float g = dy[c] * (w ? w[c] : 1.0f);
                dx[c] += r * (g - mg - (x[c] - m) * r * mgx);
            }
        }
    }
    if (d_w || d_b) {
        /* columns in parallel, rows in order: deterministic */
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c = 0; c < dim; c++) {
            double sw = 0.0, sb = 0.0;
            for (int64_t t = 0; t < n; t++) {
                float dy = d_out[t * dim + c];
                sw += (double)dy * (double)((in[t * dim + c] - mean[t]) * rstd[t]);
                sb += dy;
            }
            if (d_w) d_w[c] += (float)sw;
            if (d_b) d_b[c] += (float)sb;
        }
    }
}
