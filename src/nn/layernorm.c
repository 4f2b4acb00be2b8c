/* layernorm.c — LayerNorm forward and backward (row statistics in double).
 *
 * As in rmsnorm.c: row sums over 8 double lanes combined in a fixed order,
 * parameter gradients summed over tokens in token order per column. */
#include "nn/layernorm.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/parallel.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS
#define LANES 8
#define COLS 64

void vla_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                           int64_t n, int64_t dim, float eps) {
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        double part[LANES] = {0}, s = 0.0;
        int64_t c = 0;
        for (; c + LANES <= dim; c += LANES)
            for (int j = 0; j < LANES; j++) part[j] += x[c + j];
        for (; c < dim; c++) s += x[c];
        for (int j = 0; j < LANES; j++) s += part[j];
        double m = s / (double)dim, v = 0.0;
        for (int j = 0; j < LANES; j++) part[j] = 0.0;
        for (c = 0; c + LANES <= dim; c += LANES)
            for (int j = 0; j < LANES; j++) part[j] += ((double)x[c + j] - m) * ((double)x[c + j] - m);
        for (; c < dim; c++) v += ((double)x[c] - m) * ((double)x[c] - m);
        for (int j = 0; j < LANES; j++) v += part[j];
        float r = (float)(1.0 / sqrt(v / (double)dim + (double)eps));
        float mf = (float)m;
        float *y = out + t * dim;
        if (w && b) {
#pragma omp simd
            for (c = 0; c < dim; c++) y[c] = (x[c] - mf) * r * w[c] + b[c];
        } else {
            for (c = 0; c < dim; c++) {
                float xh = (x[c] - mf) * r;
                y[c] = xh * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f);
            }
        }
        if (mean) mean[t] = mf;
        if (rstd) rstd[t] = r;
    }
}

void vla_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                            const float *w, const float *mean, const float *rstd, int64_t n, int64_t dim) {
    if (d_in) {
#pragma omp parallel if (n * dim > PAR_MIN)
        {
            float *tmp = malloc((size_t)(2 * dim) * sizeof(float)); /* per thread: g = dy·w and x̂ */
#pragma omp for
            for (int64_t t = 0; t < n; t++) {
                const float *x = in + t * dim, *dy = d_out + t * dim;
                float m = mean[t], r = rstd[t];
                float *dx = d_in + t * dim;
                if (tmp) {
                    float *g = tmp, *xh = tmp + dim;
                    if (w) {
#pragma omp simd
                        for (int64_t c = 0; c < dim; c++) g[c] = dy[c] * w[c];
                    } else {
#pragma omp simd
                        for (int64_t c = 0; c < dim; c++) g[c] = dy[c];
                    }
#pragma omp simd
                    for (int64_t c = 0; c < dim; c++) xh[c] = (x[c] - m) * r;
                    double pg[LANES] = {0}, pgx[LANES] = {0}, sg = 0.0, sgx = 0.0;
                    int64_t c = 0;
                    for (; c + LANES <= dim; c += LANES)
                        for (int j = 0; j < LANES; j++) {
                            pg[j] += g[c + j];
                            pgx[j] += (double)g[c + j] * (double)xh[c + j];
                        }
                    for (; c < dim; c++) {
                        sg += g[c];
                        sgx += (double)g[c] * (double)xh[c];
                    }
                    for (int j = 0; j < LANES; j++) sg += pg[j], sgx += pgx[j];
                    float mg = (float)(sg / (double)dim), mgx = (float)(sgx / (double)dim);
#pragma omp simd
                    for (c = 0; c < dim; c++) dx[c] += r * (g[c] - mg - (x[c] - m) * r * mgx);
                } else {
                    double sg = 0.0, sgx = 0.0;
                    for (int64_t c = 0; c < dim; c++) {
                        float g = dy[c] * (w ? w[c] : 1.0f);
                        sg += g;
                        sgx += (double)g * (double)((x[c] - m) * r);
                    }
                    float mg = (float)(sg / (double)dim), mgx = (float)(sgx / (double)dim);
                    for (int64_t c = 0; c < dim; c++) {
                        float g = dy[c] * (w ? w[c] : 1.0f);
                        dx[c] += r * (g - mg - (x[c] - m) * r * mgx);
                    }
                }
            }
            free(tmp);
        }
    }
    if (d_w || d_b) {
        /* blocks of columns in parallel, rows in order: deterministic */
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c0 = 0; c0 < dim; c0 += COLS) {
            int64_t nc = dim - c0 < COLS ? dim - c0 : COLS;
            double sw[COLS] = {0}, sb[COLS] = {0};
            for (int64_t t = 0; t < n; t++) {
                const float *dy = d_out + t * dim + c0, *x = in + t * dim + c0;
                float m = mean[t], r = rstd[t];
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) {
                    sw[c] += (double)dy[c] * (double)((x[c] - m) * r);
                    sb[c] += dy[c];
                }
            }
            for (int64_t c = 0; c < nc; c++) {
                if (d_w) d_w[c0 + c] += (float)sw[c];
                if (d_b) d_b[c0 + c] += (float)sb[c];
            }
        }
    }
}
