/* elementwise.cu — the cuda backend's per-element kernels: fill/copy and
 * arithmetic, activations and the gated MLP, RoPE and the time embeddings
 * (angles in double, as the cpu backend), the flow-matching interpolant,
 * AdamW, EMA, and dtype conversion (base/numfmt.h: the cpu backend's
 * rounding, bit for bit).
 *
 * Grid-stride loops over flat indices; every output element is written by
 * one thread from its own inputs, so results do not depend on the launch
 * shape. Activation formulas are the cpu backend's (tensor/cpu/vecmath.h: GELU
 * as x·sigmoid(2u), its gradient without cancellation) with CUDA's expf in
 * place of vla_expf: within an ulp or two. */
#include "tensor/cuda/internal.cuh"

#include <stdlib.h>

#include <math.h>

#include "base/numfmt.h"
#include "tensor/cuda/act_kernels.cuh"
#include "tensor/cuda/optim_kernels.cuh"

#define THREADS 256
#define GRID_STRIDE(i, n) VLA_GRID_STRIDE(i, n)
#define LAUNCH(kernel, n, ...)                                                               \
    do {                                                                                     \
        if ((n) > 0) {                                                                       \
            kernel<<<vla_cuda_blocks((n), THREADS), THREADS, 0, vla_cuda_stream()>>>(__VA_ARGS__); \
            vla_cuda_check(#kernel);                                                         \
        }                                                                                    \
    } while (0)

__global__ void k_fill(float *y, float v, int64_t n) { GRID_STRIDE(i, n) y[i] = v; }
__global__ void k_add(float *y, const float *a, const float *b, int64_t n) { GRID_STRIDE(i, n) y[i] = a[i] + b[i]; }
__global__ void k_sub(float *y, const float *a, const float *b, int64_t n) { GRID_STRIDE(i, n) y[i] = a[i] - b[i]; }
__global__ void k_mul(float *y, const float *a, const float *b, int64_t n) { GRID_STRIDE(i, n) y[i] = a[i] * b[i]; }
__global__ void k_axpy(float *y, float al, const float *x, int64_t n) { GRID_STRIDE(i, n) y[i] += __fmul_rn(al, x[i]); }
__global__ void k_scale(float *y, float al, int64_t n) { GRID_STRIDE(i, n) y[i] *= al; }
__global__ void k_affine(float *y, const float *x, float al, float be, int64_t n) {
    GRID_STRIDE(i, n) y[i] = __fadd_rn(__fmul_rn(al, x[i]), be);
}
__global__ void k_scale_to(float *y, const float *x, double al, int64_t n) {
    GRID_STRIDE(i, n) y[i] = (float)((double)x[i] * al);
}
__global__ void k_add_row_vector(float *y, const float *bias, int64_t rows, int64_t cols) {
    GRID_STRIDE(i, rows * cols) y[i] += bias[i % cols];
}

extern "C" void vla_cuda_fill(float *y, float v, int64_t n) {
    if (n > 0 && v == 0.0f && !signbit(v)) { /* zeroing gradients: the most common fill */
        VLA_CUDA_OK(cudaMemsetAsync(y, 0, sizeof(float) * (size_t)n, vla_cuda_stream()), "fill");
        return;
    }
    LAUNCH(k_fill, n, y, v, n);
}
extern "C" void vla_cuda_copy(float *y, const float *x, int64_t n) {
    if (y == x || n <= 0) return;
    size_t bytes = sizeof(float) * (size_t)n;
    const char *ys = (const char *)y, *xs = (const char *)x;
    if (ys + bytes <= xs || xs + bytes <= ys) {
        VLA_CUDA_OK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, vla_cuda_stream()), "copy");
        return;
    }
    float *tmp = (float *)vla_cuda_scratch(bytes); /* overlapping ranges: memmove's meaning */
    VLA_CUDA_OK(cudaMemcpyAsync(tmp, x, bytes, cudaMemcpyDeviceToDevice, vla_cuda_stream()), "copy");
    VLA_CUDA_OK(cudaMemcpyAsync(y, tmp, bytes, cudaMemcpyDeviceToDevice, vla_cuda_stream()), "copy");
    vla_cuda_scratch_free(tmp);
}
extern "C" void vla_cuda_add(float *y, const float *a, const float *b, int64_t n) { LAUNCH(k_add, n, y, a, b, n); }
extern "C" void vla_cuda_sub(float *y, const float *a, const float *b, int64_t n) { LAUNCH(k_sub, n, y, a, b, n); }
extern "C" void vla_cuda_mul(float *y, const float *a, const float *b, int64_t n) { LAUNCH(k_mul, n, y, a, b, n); }
extern "C" void vla_cuda_axpy(float *y, float alpha, const float *x, int64_t n) { LAUNCH(k_axpy, n, y, alpha, x, n); }
extern "C" void vla_cuda_scale(float *y, float alpha, int64_t n) { LAUNCH(k_scale, n, y, alpha, n); }
extern "C" void vla_cuda_affine(float *y, const float *x, float alpha, float beta, int64_t n) {
    LAUNCH(k_affine, n, y, x, alpha, beta, n);
}
extern "C" void vla_cuda_scale_to(float *y, const float *x, double alpha, int64_t n) {
    LAUNCH(k_scale_to, n, y, x, alpha, n);
}
extern "C" void vla_cuda_add_row_vector(float *y, const float *bias, int64_t rows, int64_t cols) {
    LAUNCH(k_add_row_vector, rows * cols, y, bias, rows, cols);
}

/* ---- activations: d_act and the kernels writing a GEMM-ready copy (k_act_bwd, k_glu_fwd, k_glu_bwd,
 * k_epilogue) are act_kernels.cuh's ---------------------------------------------------------- */
__global__ void k_act_fwd(vla_act a, float *out, const float *in, int64_t n) { GRID_STRIDE(i, n) out[i] = d_act(a, in[i]); }

extern "C" void vla_cuda_epilogue(const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n, float *c) {
    const float *bias = bias_done ? NULL : epi->bias;
    if (m <= 0 || n <= 0 || (!bias && epi->act == VLA_ACT_IDENTITY && !epi->ready)) return;
    LAUNCH(k_epilogue, m * n, c, bias, epi->pre, epi->act, vla_cuda_ready_of(epi->ready, epi->ready_fp8, m, n), m, n);
}

extern "C" void vla_cuda_act_forward(vla_act act, float *out, const float *in, int64_t n) {
    if (act == VLA_ACT_IDENTITY) return vla_cuda_copy(out, in, n);
    LAUNCH(k_act_fwd, n, act, out, in, n);
}
extern "C" void vla_cuda_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows,
                                      int64_t cols, void *ready) {
    int64_t n = rows * cols;
    LAUNCH(k_act_bwd, n, act, d_in, d_out, in, n, vla_cuda_ready_of(ready, NULL, rows, cols));
}
extern "C" void vla_cuda_glu_forward(vla_act act, float *h, const float *gate, const float *up, int64_t rows,
                                     int64_t cols, void *ready, const vla_fp8_operand *ready_fp8) {
    int64_t n = rows * cols;
    LAUNCH(k_glu_fwd, n, act, h, gate, up, n, vla_cuda_ready_of(ready, ready_fp8, rows, cols));
}
extern "C" void vla_cuda_glu_backward(vla_act act, float *dgate, float *dup, const float *dh, const float *gate,
                                      const float *up, int64_t rows, int64_t cols, void *ready_dgate, void *ready_dup) {
    int64_t n = rows * cols;
    LAUNCH(k_glu_bwd, n, act, dgate, dup, dh, gate, up, n, vla_cuda_ready_of(ready_dgate, NULL, rows, cols),
           vla_cuda_ready_of(ready_dup, NULL, rows, cols));
}

/* ---- RoPE (rotate-half at explicit positions) -------------------------------------- */

/* one thread per (token, i < half), all heads: cos/sin once, in double */
__global__ void k_rope(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t hd,
                       double theta, double sign, int accumulate) {
    int64_t half = hd / 2;
    GRID_STRIDE(idx, n * half) {
        int64_t t = idx / half, i = idx % half;
        double a = (double)pos[t] * pow(theta, -2.0 * (double)i / (double)hd);
        float c = (float)cos(a), s = (float)(sign * sin(a));
        for (int64_t h = 0; h < heads; h++) {
            const float *x = in + (t * heads + h) * hd;
            float *y = out + (t * heads + h) * hd;
            float x1 = x[i], x2 = x[i + half];
            float y1 = __fmul_rn(x1, c) - __fmul_rn(x2, s), y2 = __fmul_rn(x2, c) + __fmul_rn(x1, s);
            if (accumulate) y[i] += y1, y[i + half] += y2;
            else y[i] = y1, y[i + half] = y2;
        }
    }
}

static void rope(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t hd, double theta,
                 double sign, int acc) {
    if (n <= 0 || hd < 2) return;
    vla_cuda_upload_t p = vla_cuda_upload(pos, sizeof(int32_t) * (size_t)n);
    LAUNCH(k_rope, n * (hd / 2), out, in, (const int32_t *)p.dev, n, heads, hd, theta, sign, acc);
    vla_cuda_upload_release(&p);
}

extern "C" void vla_cuda_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads,
                                      int64_t hd, double theta) {
    rope(out, in, pos, n, heads, hd, theta, 1.0, 0);
}
extern "C" void vla_cuda_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                                       int64_t hd, double theta) {
    rope(d_in, d_out, pos, n, heads, hd, theta, -1.0, 0); /* written, not added (ops.h) */
}

/* ---- time embeddings ---------------------------------------------------------------- */

__device__ double d_freq(vla_temb_kind kind, int64_t half, double min_p, double max_p, double shift, int64_t k) {
    if (kind == VLA_TEMB_PERIODS) {
        double frac = half > 1 ? (double)k / (double)(half - 1) : 0.0;
        return 2.0 * 3.14159265358979323846 / (min_p * pow(max_p / min_p, frac));
    }
    return exp(-log(max_p) * (double)k / ((double)half - shift));
}

__global__ void k_temb_fwd(vla_temb_config c, float *out, const float *t, int64_t n) {
    int64_t half = c.dim / 2, so = c.cos_first ? half : 0, co = c.cos_first ? 0 : half;
    GRID_STRIDE(idx, n * half) {
        int64_t i = idx / half, k = idx % half;
        double a = (double)t[i] * d_freq(c.kind, half, c.min_period, c.max_period, c.shift, k);
        out[i * c.dim + so + k] = (float)sin(a);
        out[i * c.dim + co + k] = (float)cos(a);
    }
}

__global__ void k_temb_bwd(vla_temb_config c, float *d_t, const float *d_out, const float *t, int64_t n) {
    int64_t half = c.dim / 2, so = c.cos_first ? half : 0, co = c.cos_first ? 0 : half;
    GRID_STRIDE(i, n) {
        double s = 0.0;
        for (int64_t k = 0; k < half; k++) {
            double f = d_freq(c.kind, half, c.min_period, c.max_period, c.shift, k), a = (double)t[i] * f;
            s += d_out[i * c.dim + so + k] * f * cos(a) - d_out[i * c.dim + co + k] * f * sin(a);
        }
        d_t[i] += (float)s;
    }
}

extern "C" void vla_cuda_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n) {
    LAUNCH(k_temb_fwd, n * (cfg->dim / 2), *cfg, out, t, n);
}
extern "C" void vla_cuda_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out,
                                                 const float *t, int64_t n) {
    LAUNCH(k_temb_bwd, n, *cfg, d_t, d_out, t, n);
}

/* ---- flow matching: x_t and the target velocity (t host, uploaded) ------------------------ */

__global__ void k_flow(int pi05, float *x_t, float *target, const float *a, const float *z, const float *t, int64_t S,
                       int64_t per) {
    GRID_STRIDE(i, S * per) {
        float ts = t[i / per], ai = a[i], zi = z[i];
        if (pi05) { /* t = 1 is noise */
            if (x_t) x_t[i] = __fmul_rn(ts, zi) + __fmul_rn(1.0f - ts, ai);
            if (target) target[i] = zi - ai;
        } else { /* GR00T: t = 1 is data */
            if (x_t) x_t[i] = __fmul_rn(1.0f - ts, zi) + __fmul_rn(ts, ai);
            if (target) target[i] = ai - zi;
        }
    }
}

extern "C" void vla_cuda_flow_interpolate(vla_flow_convention conv, float *x_t, float *target, const float *actions,
                                          const float *noise, const float *t, int64_t S, int64_t per) {
    if (S <= 0 || per <= 0) return;
    vla_cuda_upload_t tu = vla_cuda_upload(t, sizeof(float) * (size_t)S);
    LAUNCH(k_flow, S * per, conv == VLA_FLOW_PI05, x_t, target, actions, noise, (const float *)tu.dev, S, per);
    vla_cuda_upload_release(&tu);
}

/* ---- optimizer -------------------------------------------------------------------------- */

/* AdamW's and EMA's kernels, one tensor and many (k_adamw, k_ema, k_adamw_multi, k_ema_multi): optim_kernels.cuh */

extern "C" void vla_cuda_adamw(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s,
                               bool decay) {
    LAUNCH(k_adamw, n, w, g, m, v, n, *s, decay ? s->decay_mul : 1.0f);
}
extern "C" void vla_cuda_ema(float *e, const float *w, float d, float omd, int64_t n, const float *guard) {
    LAUNCH(k_ema, n, e, w, d, omd, n, guard);
}

extern "C" void vla_cuda_adamw_multi(int count, float *const *w, const float *const *g, float *const *m,
                                     float *const *v, const int64_t *n, const bool *decay, const vla_adamw_scalars *s) {
    if (count <= 0) return;
    multi_adamw_t *t = (multi_adamw_t *)malloc(sizeof *t * (size_t)count);
    int64_t *first = (int64_t *)malloc(sizeof *first * (size_t)(count + 1));
    if (!t || !first) abort();
    int64_t chunks = adamw_multi_plan(count, w, g, m, v, n, decay, s, t, first);
    if (chunks > 0) {
        vla_cuda_upload_t ut = vla_cuda_upload(t, sizeof *t * (size_t)count);
        vla_cuda_upload_t uf = vla_cuda_upload(first, sizeof *first * (size_t)(count + 1));
        k_adamw_multi<<<(unsigned)chunks, THREADS, 0, vla_cuda_stream()>>>((const multi_adamw_t *)ut.dev,
                                                                         (const int64_t *)uf.dev, count, *s);
        vla_cuda_check("adamw_multi");
        vla_cuda_upload_release(&ut);
        vla_cuda_upload_release(&uf);
    }
    free(t), free(first);
}

extern "C" void vla_cuda_ema_multi(int count, float *const *e, const float *const *w, const int64_t *n, float d,
                                   float omd, const float *guard) {
    if (count <= 0) return;
    multi_ema_t *t = (multi_ema_t *)malloc(sizeof *t * (size_t)count);
    int64_t *first = (int64_t *)malloc(sizeof *first * (size_t)(count + 1));
    if (!t || !first) abort();
    int64_t chunks = ema_multi_plan(count, e, w, n, t, first);
    if (chunks > 0) {
        vla_cuda_upload_t ut = vla_cuda_upload(t, sizeof *t * (size_t)count);
        vla_cuda_upload_t uf = vla_cuda_upload(first, sizeof *first * (size_t)(count + 1));
        k_ema_multi<<<(unsigned)chunks, THREADS, 0, vla_cuda_stream()>>>((const multi_ema_t *)ut.dev,
                                                                       (const int64_t *)uf.dev, count, d, omd, guard);
        vla_cuda_check("ema_multi");
        vla_cuda_upload_release(&ut);
        vla_cuda_upload_release(&uf);
    }
    free(t), free(first);
}

/* ---- dtype conversion (base/dtype.c's vla_convert, on the device) ------------------------- */

__device__ float d_load_float(const void *src, vla_dtype t, int64_t i) {
    switch (t) {
    case VLA_F32: return ((const float *)src)[i];
    case VLA_BF16: return vla_nf_bf16_to_f32(((const uint16_t *)src)[i]);
    case VLA_F16: return vla_nf_f16_to_f32(((const uint16_t *)src)[i]);
    case VLA_F8E4M3: return vla_nf_e4m3_to_f32(((const uint8_t *)src)[i]);
    case VLA_F8E5M2: return vla_nf_e5m2_to_f32(((const uint8_t *)src)[i]);
    case VLA_I32: return (float)((const int32_t *)src)[i];
    case VLA_I64: return (float)((const int64_t *)src)[i];
    case VLA_U8: return (float)((const uint8_t *)src)[i];
    default: return __int_as_float(0x7fc00000);
    }
}

__device__ int64_t d_load_int(const void *src, vla_dtype t, int64_t i) {
    switch (t) {
    case VLA_I32: return ((const int32_t *)src)[i];
    case VLA_I64: return ((const int64_t *)src)[i];
    case VLA_U8: return ((const uint8_t *)src)[i];
    default: {
        float f = d_load_float(src, t, i);
        if (!(f == f)) return 0;
        if (f >= 9.2e18f) return INT64_MAX;
        if (f <= -9.2e18f) return INT64_MIN;
        return (int64_t)f;
    }
    }
}

__global__ void k_convert(void *dst, vla_dtype dt, const void *src, vla_dtype st, int64_t n) {
    GRID_STRIDE(i, n) {
        switch (dt) {
        case VLA_F32: ((float *)dst)[i] = d_load_float(src, st, i); break;
        case VLA_BF16: ((uint16_t *)dst)[i] = vla_nf_f32_to_bf16(d_load_float(src, st, i)); break;
        case VLA_F16: ((uint16_t *)dst)[i] = vla_nf_f32_to_f16(d_load_float(src, st, i)); break;
        case VLA_F8E4M3: ((uint8_t *)dst)[i] = vla_nf_f32_to_e4m3(d_load_float(src, st, i)); break;
        case VLA_F8E5M2: ((uint8_t *)dst)[i] = vla_nf_f32_to_e5m2(d_load_float(src, st, i)); break;
        case VLA_I32: {
            int64_t v = d_load_int(src, st, i);
            ((int32_t *)dst)[i] = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
            break;
        }
        case VLA_I64: ((int64_t *)dst)[i] = d_load_int(src, st, i); break;
        case VLA_U8: {
            int64_t v = d_load_int(src, st, i);
            ((uint8_t *)dst)[i] = v > 255 ? 255 : v < 0 ? 0 : (uint8_t)v;
            break;
        }
        default: break;
        }
    }
}

extern "C" void vla_cuda_convert(void *dst, vla_dtype dt, const void *src, vla_dtype st, int64_t n) {
    if (n <= 0) return;
    if (dt == st) {
        size_t bytes = vla_dtype_size(st) * (size_t)n;
        if (dst != src)
            VLA_CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, vla_cuda_stream()), "convert");
        return;
    }
    LAUNCH(k_convert, n, dst, dt, src, st, n);
}
