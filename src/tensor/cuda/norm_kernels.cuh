/* norm_kernels.cuh — the norms' row kernels (norm.cu launches them): one block of NT threads per row,
 * the row statistics summed in double with a fixed shared-memory tree and rounded to f32 as the cpu
 * backend does; the forward's residual add and GEMM-ready copy (vla_norm_fuse) in the same pass. A
 * header, so the CPU tests run these very kernels under an emulation of the CUDA execution model
 * (tests/tensor/cuda_emu.h). */
#ifndef VLA_TENSOR_CUDA_NORM_KERNELS_CUH
#define VLA_TENSOR_CUDA_NORM_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#include "base/numfmt.h"
#include "tensor/cuda/ready_copy.cuh"
extern "C" {
#include "tensor/seqlens.h"
}

#define NT 128

/* Σ over the block of a double, fixed tree; every thread gets the result */
__device__ __forceinline__ double block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

/* gain of column c: w, 1 + w, or 1 */
__device__ __forceinline__ float d_gain(const float *w, bool one_plus, int64_t c) {
    return !w ? 1.0f : one_plus ? 1.0f + w[c] : w[c];
}

/* ---- row kernels ------------------------------------------------------------------------
 * mode: 0 LayerNorm (w, b), 1 RMSNorm (w, one_plus), 2 AdaLN (mod, k = 2), 3 AdaRMS (mod, k = 3) */
/* vla_norm_fuse: with res, x = in + res is written to sum first and normalised (each thread reads back
 * only the columns it wrote); with rd.p, y's bf16 or FP8 copy too, [n][rld] with the pad zero, as
 * prepare_operand writes it (gemm.cu) */
__global__ void k_norm_fwd(int mode, float *out, float *mean, float *rstd, const float *in, const float *w,
                           const float *b, bool one_plus, const float *mod, const int32_t *cu, int32_t n_seg,
                           int64_t dim, float eps, const float *res, float *sum, vla_cuda_ready rd) {
    __shared__ double sh[NT];
    int64_t t = blockIdx.x;
    const float *x = in + t * dim;
    float *y = out ? out + t * dim : NULL; /* NULL: a kept copy's norm writes the copy alone (ops.h) */
    if (res) {
        float *xs = sum + t * dim;
        const float *rr = res + t * dim;
        for (int64_t c = threadIdx.x; c < dim; c += NT) xs[c] = __fadd_rn(x[c], rr[c]);
        x = xs;
    }
    bool centred = mode == 0 || mode == 2;
    double m = 0.0;
    if (centred) {
        double s = 0.0;
        for (int64_t c = threadIdx.x; c < dim; c += NT) s += x[c];
        m = block_sum(s, sh) / (double)dim;
    }
    double v = 0.0;
    for (int64_t c = threadIdx.x; c < dim; c += NT) {
        double d = (double)x[c] - m;
        v += d * d;
    }
    v = block_sum(v, sh);
    float r = (float)(1.0 / sqrt(v / (double)dim + (double)eps)), mf = (float)m;
    const float *scale = NULL, *shift = NULL;
    if (mode >= 2) {
        int k = mode == 2 ? 2 : 3;
        scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * k * dim;
        shift = scale + dim;
    }
    float s8 = vla_ready_scale(rd), mx = 0.0f; /* an FP8 copy's scale, the row's amax */
    for (int64_t c = threadIdx.x; c < dim; c += NT) {
        float xv = x[c], o;
        switch (mode) {
        case 0: o = __fmul_rn(__fmul_rn(xv - mf, r), w ? w[c] : 1.0f) + (b ? b[c] : 0.0f); break;
        case 1: o = __fmul_rn(__fmul_rn(xv, r), d_gain(w, one_plus, c)); break;
        case 2: o = __fmul_rn(__fmul_rn(xv - mf, r), 1.0f + scale[c]) + shift[c]; break;
        default: o = __fmul_rn(__fmul_rn(xv, r), 1.0f + scale[c]) + shift[c]; break;
        }
        if (y) y[c] = o;
        vla_ready_put(rd, t, c, o, s8, &mx);
    }
    vla_ready_pad(rd, t, dim + threadIdx.x, NT);
    vla_ready_finish(rd, mx, s8);
    if (threadIdx.x == 0) {
        if (mean) mean[t] = mf;
        if (rstd) rstd[t] = r;
    }
}

/* d_in += the norm's input gradient (same modes) */
__global__ void k_norm_bwd_in(int mode, float *d_in, const float *d_out, const float *in, const float *w, bool one_plus,
                              const float *mod, const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg,
                              int64_t dim) {
    __shared__ double sh[NT];
    int64_t t = blockIdx.x;
    const float *x = in + t * dim, *dy = d_out + t * dim;
    float *dx = d_in + t * dim;
    bool centred = mode == 0 || mode == 2;
    float m = centred ? mean[t] : 0.0f, r = rstd[t];
    const float *scale = NULL;
    if (mode >= 2) scale = mod + (int64_t)vla_seqlens_find(cu, n_seg, t) * (mode == 2 ? 2 : 3) * dim;
    double sg = 0.0, sgx = 0.0;
    for (int64_t c = threadIdx.x; c < dim; c += NT) {
        float g = __fmul_rn(dy[c], mode >= 2 ? 1.0f + scale[c] : mode == 0 ? (w ? w[c] : 1.0f) : d_gain(w, one_plus, c));
        sg += g;
        sgx += (double)g * (double)__fmul_rn(x[c] - m, r);
    }
    float mg = centred ? (float)(block_sum(sg, sh) / (double)dim) : 0.0f;
    float mgx = (float)(block_sum(sgx, sh) / (double)dim);
    for (int64_t c = threadIdx.x; c < dim; c += NT) {
        float g = __fmul_rn(dy[c], mode >= 2 ? 1.0f + scale[c] : mode == 0 ? (w ? w[c] : 1.0f) : d_gain(w, one_plus, c));
        float xm = x[c] - m;
        dx[c] += __fmul_rn(r, g - mg - __fmul_rn(__fmul_rn(xm, r), mgx));
    }
}

#endif
