/* rmsnorm.c — RMSNorm forward and backward, plain and Gemma (1 + w) forms. */
#include "nn/rmsnorm.h"

#include <math.h>

#define PAR_MIN (1 << 14)

static inline float gain(const float *w, bool one_plus, int64_t c) {
    if (!w) return 1.0f;
    return one_plus ? 1.0f + w[c] : w[c];
}

void vla_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                         int64_t dim, float eps) {
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        double ss = 0.0;
        for (int64_t c = 0; c < dim; c++) ss += (double)x[c] * (double)x[c];
        float r = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
        float *y = out + t * dim;
        for (int64_t c = 0; c < dim; c++) y[c] = x[c] * r * gain(w, one_plus, c);
        if (rstd) rstd[t] = r;
    }
}

void vla_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                          bool one_plus, const float *rstd, int64_t n, int64_t dim) {
    if (d_in) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *x = in + t * dim, *dy = d_out + t * dim;
            float r = rstd[t];
            double sgx = 0.0;
            for (int64_t c = 0; c < dim; c++) sgx += (double)(dy[c] * gain(w, one_plus, c)) * (double)(x[c] * r);
            float mgx = (float)(sgx / (double)dim);
            float *dx = d_in + t * dim;
            for (int64_t c = 0; c < dim; c++) dx[c] += r * (dy[c] * gain(w, one_plus, c) - x[c] * r * mgx);
        }
    }
    if (d_w) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c = 0; c < dim; c++) {
            double s = 0.0;
            for (int64_t t = 0; t < n; t++) s += (double)d_out[t * dim + c] * (double)(in[t * dim + c] * rstd[t]);
            d_w[c] += (float)s;
        }
    }
}
