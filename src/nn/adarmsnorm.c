/* adarmsnorm.c — π0.5's adaptive RMSNorm and its gated residual. */
#include "nn/adarmsnorm.h"

#include <math.h>

#include "nn/packing.h"
#include "tensor/parallel.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS

vla_status vla_adarmsnorm_forward(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                                  int32_t n_seg, int64_t n, int64_t dim, float eps) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adarmsnorm"));
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *x = in + t * dim;
        const float *scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim, *shift = scale + dim;
        double ss = 0.0;
        for (int64_t c = 0; c < dim; c++) ss += (double)x[c] * (double)x[c];
        float r = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
        float *y = out + t * dim;
        for (int64_t c = 0; c < dim; c++) y[c] = x[c] * r * (1.0f + scale[c]) + shift[c];
        if (rstd) rstd[t] = r;
    }
    return VLA_OK;
}

vla_status vla_adarmsnorm_backward(float *d_in, float *d_mod, const float *d_out, const float *in,
                                   const float *mod, const float *rstd, const int32_t *cu, int32_t n_seg,
                                   int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adarmsnorm"));
    if (d_in) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *x = in + t * dim, *dy = d_out + t * dim;
            const float *scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim;
            float r = rstd[t];
            double sgx = 0.0;
            for (int64_t c = 0; c < dim; c++) sgx += (double)(dy[c] * (1.0f + scale[c])) * (double)(x[c] * r);
            float mgx = (float)(sgx / (double)dim);
            float *dx = d_in + t * dim;
            for (int64_t c = 0; c < dim; c++) dx[c] += r * (dy[c] * (1.0f + scale[c]) - x[c] * r * mgx);
        }
    }
    if (d_mod) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c = 0; c < dim; c++) {
            for (int32_t s = 0; s < n_seg; s++) {
                double ss = 0.0, sb = 0.0;
                for (int64_t t = cu[s]; t < cu[s + 1]; t++) {
                    float dy = d_out[t * dim + c];
                    ss += (double)dy * (double)(in[t * dim + c] * rstd[t]);
                    sb += dy;
                }
                d_mod[(int64_t)s * 3 * dim + c] += (float)ss;
                d_mod[(int64_t)s * 3 * dim + dim + c] += (float)sb;
            }
        }
    }
    return VLA_OK;
}

vla_status vla_gated_residual_forward(float *out, const float *x, const float *y, const float *mod,
                                      const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "gated residual"));
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *gate = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim + 2 * dim;
        for (int64_t c = 0; c < dim; c++) out[t * dim + c] = x[t * dim + c] + y[t * dim + c] * gate[c];
    }
    return VLA_OK;
}

vla_status vla_gated_residual_backward(float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                       const float *mod, const int32_t *cu, int32_t n_seg, int64_t n,
                                       int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "gated residual"));
    if (d_x || d_y) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *gate = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim + 2 * dim;
            for (int64_t c = 0; c < dim; c++) {
                float dy = d_out[t * dim + c];
                if (d_x) d_x[t * dim + c] += dy;
                if (d_y) d_y[t * dim + c] += dy * gate[c];
            }
        }
    }
    if (d_mod) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t c = 0; c < dim; c++)
            for (int32_t s = 0; s < n_seg; s++) {
                double sg = 0.0;
                for (int64_t t = cu[s]; t < cu[s + 1]; t++) sg += (double)d_out[t * dim + c] * (double)y[t * dim + c];
                d_mod[(int64_t)s * 3 * dim + 2 * dim + c] += (float)sg;
            }
    }
    return VLA_OK;
}
