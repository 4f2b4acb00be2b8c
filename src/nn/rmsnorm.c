/* rmsnorm.c — RMSNorm forward and backward, plain and Gemma (1 + w) forms.
 *
 * Row sums run in double over 8 lanes combined in a fixed order (so they
 * vectorise, and depend only on the row length); the weight gradient walks
 * the rows in order for blocks of columns, so every column is summed over
 * tokens in token order whatever the thread count. The gain (w, 1 + w or 1)
 * is laid out once per call, so the row loops have no branches. */
#include "nn/rmsnorm.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/parallel.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS
#define LANES 8
#define COLS 64
#define STACK_GAIN 1024

static inline float gain(const float *w, bool one_plus, int64_t c) {
    if (!w) return 1.0f;
    return one_plus ? 1.0f + w[c] : w[c];
}

/* the gain row in buf (dim <= STACK_GAIN) or malloc'd memory; NULL when out of memory */
static float *gain_row(float *buf, const float *w, bool one_plus, int64_t dim) {
    float *g = dim <= STACK_GAIN ? buf : malloc((size_t)dim * sizeof(float));
    if (g)
        for (int64_t c = 0; c < dim; c++) g[c] = gain(w, one_plus, c);
    return g;
}

/* Σ a[c]·b[c] over c < n in double (8 lanes, then the tail, then the lanes in order) */
static inline double dot_rows(const float *a, const float *b, int64_t n) {
    double part[LANES] = {0};
    int64_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int j = 0; j < LANES; j++) part[j] += (double)a[c + j] * (double)b[c + j];
    double s = 0.0;
    for (; c < n; c++) s += (double)a[c] * (double)b[c];
    for (int j = 0; j < LANES; j++) s += part[j];
    return s;
}

void vla_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                         int64_t dim, float eps) {
    float buf[STACK_GAIN];
    float *g = gain_row(buf, w, one_plus, dim);
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        double ss = dot_rows(x, x, dim);
        float r = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
        float *y = out + t * dim;
        if (g) {
#pragma omp simd
            for (int64_t c = 0; c < dim; c++) y[c] = x[c] * r * g[c];
        } else {
            for (int64_t c = 0; c < dim; c++) y[c] = x[c] * r * gain(w, one_plus, c);
        }
        if (rstd) rstd[t] = r;
    }
    if (g != buf) free(g);
}

void vla_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                          bool one_plus, const float *rstd, int64_t n, int64_t dim) {
    if (d_in) {
        float buf[STACK_GAIN];
        float *g = gain_row(buf, w, one_plus, dim);
#pragma omp parallel if (n * dim > PAR_MIN)
        {
            /* per-thread rows of dy·g and x·r, so the dot product is one vector loop */
            float *tmp = malloc((size_t)(2 * dim) * sizeof(float));
#pragma omp for
            for (int64_t t = 0; t < n; t++) {
                const float *x = in + t * dim, *dy = d_out + t * dim;
                float r = rstd[t];
                float *dx = d_in + t * dim;
                if (g && tmp) {
                    float *gy = tmp, *xr = tmp + dim;
#pragma omp simd
                    for (int64_t c = 0; c < dim; c++) {
                        gy[c] = dy[c] * g[c];
                        xr[c] = x[c] * r;
                    }
                    float mgx = (float)(dot_rows(gy, xr, dim) / (double)dim);
#pragma omp simd
                    for (int64_t c = 0; c < dim; c++) dx[c] += r * (gy[c] - x[c] * r * mgx);
                } else {
                    double sgx = 0.0;
                    for (int64_t c = 0; c < dim; c++)
                        sgx += (double)(dy[c] * gain(w, one_plus, c)) * (double)(x[c] * r);
                    float mgx = (float)(sgx / (double)dim);
                    for (int64_t c = 0; c < dim; c++) dx[c] += r * (dy[c] * gain(w, one_plus, c) - x[c] * r * mgx);
                }
            }
            free(tmp);
        }
        if (g != buf) free(g);
    }
    if (d_w) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c0 = 0; c0 < dim; c0 += COLS) {
            int64_t nc = dim - c0 < COLS ? dim - c0 : COLS;
            double acc[COLS] = {0};
            for (int64_t t = 0; t < n; t++) {
                const float *dy = d_out + t * dim + c0, *x = in + t * dim + c0;
                float r = rstd[t];
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) acc[c] += (double)dy[c] * (double)(x[c] * r);
            }
            for (int64_t c = 0; c < nc; c++) d_w[c0 + c] += (float)acc[c];
        }
    }
}
