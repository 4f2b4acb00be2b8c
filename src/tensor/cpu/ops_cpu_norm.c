/* ops_cpu_norm.c — the CPU backend's norms: LayerNorm, RMSNorm (w or 1 + w),
 * AdaLN, AdaRMS and π0.5's gated residual, forward and backward.
 *
 * Row statistics are summed in double over 8 lanes combined in a fixed order
 * (so they vectorise and depend only on the row length); parameter and
 * modulation gradients walk the tokens in order for blocks of columns, so
 * every column is summed in token order whatever the thread count. The
 * gain (w, 1 + w or 1) is laid out once per call, so the row loops have no
 * branches. */
#include "tensor/cpu/ops_cpu_internal.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/cpu/parallel.h"
#include "tensor/seqlens.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS
#define LANES 8
#define COLS 64
#define STACK_GAIN 1024

/* vla_norm_fuse (ops.h) around a norm: the residual add first, the ready copy last — the same
 * bits as `add`, the norm and prepare_operand one after another */
static const float *fuse_input(const vla_norm_fuse *f, const float *in, int64_t count) {
    if (!f || !f->res) return in;
#pragma omp parallel for simd if (parallel : count > PAR_MIN)
    for (int64_t i = 0; i < count; i++) f->sum[i] = in[i] + f->res[i];
    return f->sum;
}

/* the cpu's ready copy: the rounded (bf16) or scaled and rounded (FP8) values as f32, in the stored
 * layout (ops_cpu_precision.c) */
static void fuse_output(const vla_norm_fuse *f, const float *out, int64_t count) {
    if (f && f->ready && f->fp8) vla_cpu_fp8_ready(f->ready, out, count, f->fp8);
    else if (f && f->ready) vla_cpu_bf16_ready(f->ready, out, count);
}

/* A norm writes y into out, or — a kept copy's norm (ops.h: out NULL, the bf16 copy is all it keeps) —
 * into a temporary (vla_cpu_out_or_temp) the copy is made from, which norm_done frees. */
static void norm_done(const vla_norm_fuse *f, float *out, float *y, int64_t count) {
    fuse_output(f, y, count);
    vla_cpu_temp_done(out, y);
}

static void layernorm_forward_plain(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
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

void vla_cpu_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
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

static void rmsnorm_forward_plain(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
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

void vla_cpu_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
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

static void adaln_forward_plain(float *out, float *mean, float *rstd, const float *in, const float *mod,
                             const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps) {
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
}

void vla_cpu_adaln_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                              const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                              int64_t dim) {
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
}

static void adarms_forward_plain(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                                  int32_t n_seg, int64_t n, int64_t dim, float eps) {
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
}

void vla_cpu_adarms_backward(float *d_in, float *d_mod, const float *d_out, const float *in,
                                   const float *mod, const float *rstd, const int32_t *cu, int32_t n_seg,
                                   int64_t n, int64_t dim) {
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
}

void vla_cpu_gated_residual_forward(float *out, const float *x, const float *y, const float *mod,
                                      const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim) {
#pragma omp parallel for if (n * dim > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        const float *gate = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim + 2 * dim;
        for (int64_t c = 0; c < dim; c++) out[t * dim + c] = x[t * dim + c] + y[t * dim + c] * gate[c];
    }
}

void vla_cpu_gated_residual_backward(float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                       const float *mod, const int32_t *cu, int32_t n_seg, int64_t n,
                                       int64_t dim) {
    if (d_x || d_y) {
#pragma omp parallel for if (n * dim > PAR_MIN)
        for (int64_t t = 0; t < n; t++) {
            const float *gate = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * 3 * dim + 2 * dim;
            for (int64_t c = 0; c < dim; c++) {
                float dy = d_out[t * dim + c];
                if (d_x) d_x[t * dim + c] += dy;
                if (d_y) d_y[t * dim + c] = dy * gate[c]; /* written (ops.h) */
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
}

/* ---- the slots: a norm with what vla_norm_fuse asks besides ------------------------------------ */

void vla_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                               int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse) {
    float *y = vla_cpu_out_or_temp(out, n * dim);
    layernorm_forward_plain(y, mean, rstd, fuse_input(fuse, in, n * dim), w, b, n, dim, eps);
    norm_done(fuse, out, y, n * dim);
}

void vla_cpu_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                             int64_t dim, float eps, const vla_norm_fuse *fuse) {
    float *y = vla_cpu_out_or_temp(out, n * dim);
    rmsnorm_forward_plain(y, rstd, fuse_input(fuse, in, n * dim), w, one_plus, n, dim, eps);
    norm_done(fuse, out, y, n * dim);
}

void vla_cpu_adaln_forward(float *out, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu,
                           int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse) {
    float *y = vla_cpu_out_or_temp(out, n * dim);
    adaln_forward_plain(y, mean, rstd, fuse_input(fuse, in, n * dim), mod, cu, n_seg, n, dim, eps);
    norm_done(fuse, out, y, n * dim);
}

void vla_cpu_adarms_forward(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                            int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse) {
    float *y = vla_cpu_out_or_temp(out, n * dim);
    adarms_forward_plain(y, rstd, fuse_input(fuse, in, n * dim), mod, cu, n_seg, n, dim, eps);
    norm_done(fuse, out, y, n * dim);
}
