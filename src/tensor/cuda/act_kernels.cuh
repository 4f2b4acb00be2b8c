/* act_kernels.cuh — the activations (tensor/cpu/vecmath.h's formulas, CUDA's expf) and the
 * elementwise kernels that write a GEMM-ready copy of what they compute (ready_copy.cuh): the
 * activation's backward, the gated MLP forward and backward, a GEMM's epilogue. elementwise.cu
 * launches them; a header so the CPU tests run these very kernels under an emulation of the CUDA
 * execution model (tests/tensor/cuda_emu.h). Grid-stride loops: any grid covers any size. */
#ifndef VLA_TENSOR_CUDA_ACT_KERNELS_CUH
#define VLA_TENSOR_CUDA_ACT_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#include "base/numfmt.h"
#include "tensor/cuda/grid_stride.cuh"
#include "tensor/cuda/ready_copy.cuh"
#include "tensor/ops.h"

/* ---- activations (tensor/cpu/vecmath.h's formulas) ------------------------------------ */

#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

__device__ __forceinline__ float d_sigmoid(float x) { return __fdiv_rn(1.0f, 1.0f + expf(-x)); }
__device__ __forceinline__ float d_gelu(float x) {
    float u = __fmul_rn(GELU_K, x + __fmul_rn(__fmul_rn(__fmul_rn(GELU_C, x), x), x));
    return __fdiv_rn(x, 1.0f + expf(-2.0f * u));
}
__device__ __forceinline__ float d_gelu_grad(float x, float *value) {
    float u = __fmul_rn(GELU_K, x + __fmul_rn(__fmul_rn(__fmul_rn(GELU_C, x), x), x));
    float e = expf(-2.0f * u);
    if (value) *value = __fdiv_rn(x, 1.0f + e);
    float s = __fdiv_rn(1.0f, 1.0f + e), sc = __fdiv_rn(1.0f, 1.0f + __fdiv_rn(1.0f, e));
    float du = __fmul_rn(GELU_K, 1.0f + __fmul_rn(__fmul_rn(3.0f * GELU_C, x), x));
    return s + __fmul_rn(__fmul_rn(__fmul_rn(__fmul_rn(2.0f, x), s), sc), du);
}
__device__ __forceinline__ float d_act(vla_act a, float x) {
    switch (a) {
    case VLA_ACT_GELU_TANH: return d_gelu(x);
    case VLA_ACT_SILU: return __fmul_rn(x, d_sigmoid(x));
    case VLA_ACT_RELU: return x > 0.0f ? x : 0.0f;
    default: return x;
    }
}
__device__ __forceinline__ float d_act_grad(vla_act a, float x) {
    switch (a) {
    case VLA_ACT_GELU_TANH: return d_gelu_grad(x, NULL);
    case VLA_ACT_SILU: {
        float s = d_sigmoid(x);
        return __fmul_rn(s, 1.0f + __fmul_rn(x, 1.0f - s));
    }
    case VLA_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    default: return 1.0f;
    }
}

/* with rd.p: d_in's bf16 copy (ready_copy.cuh) */
__global__ void k_act_bwd(vla_act a, float *d_in, const float *d_out, const float *in, int64_t n, vla_cuda_ready rd) {
    float mx = 0.0f;
    VLA_GRID_STRIDE(i, n) {
        float v;
        if (a == VLA_ACT_RELU) v = in[i] > 0.0f ? d_out[i] : 0.0f; /* overwritten (ops.h) */
        else if (a == VLA_ACT_IDENTITY) v = d_out[i];
        else v = __fmul_rn(d_out[i], d_act_grad(a, in[i]));
        d_in[i] = v;
        vla_ready_put_flat(rd, i, v, 1.0f, &mx);
    }
}
/* with rd.p: h's bf16 or FP8 copy (ready_copy.cuh) */
__global__ void k_glu_fwd(vla_act a, float *h, const float *gate, const float *up, int64_t n, vla_cuda_ready rd) {
    float s = vla_ready_scale(rd), mx = 0.0f;
    VLA_GRID_STRIDE(i, n) {
        float v = __fmul_rn(d_act(a, gate[i]), up[i]);
        if (h) h[i] = v; /* NULL: the copy alone is kept (ops.h) */
        vla_ready_put_flat(rd, i, v, s, &mx);
    }
    vla_ready_finish(rd, mx, s);
}
/* with rg.p / ru.p: dgate's and dup's bf16 copies */
__global__ void k_glu_bwd(vla_act a, float *dg, float *du, const float *dh, const float *gate, const float *up,
                          int64_t n, vla_cuda_ready rg, vla_cuda_ready ru) {
    float mg = 0.0f, mu = 0.0f; /* each copy's own max (bf16 copies keep none: the backward's dy copies) */
    VLA_GRID_STRIDE(i, n) {
        float g = gate[i], v, gr;
        if (a == VLA_ACT_GELU_TANH) {
            gr = d_gelu_grad(g, &v);
        } else {
            v = d_act(a, g);
            gr = d_act_grad(a, g);
        }
        float xg = __fmul_rn(__fmul_rn(dh[i], up[i]), gr), xu = __fmul_rn(dh[i], v);
        dg[i] = xg;
        du[i] = xu;
        vla_ready_put_flat(rg, i, xg, 1.0f, &mg);
        vla_ready_put_flat(ru, i, xu, 1.0f, &mu);
    }
}

/* A GEMM's epilogue in one pass (ops.h, vla_gemm_epilogue; contiguous C [m][n]): the bias unless the GEMM
 * folded it, pre, the activation and the ready copy — add_row_vector, copy, act_forward and
 * prepare_operand's arithmetic, element by element, without their three or four launches. */
__global__ void k_epilogue(float *c, const float *bias, float *pre, vla_act a, vla_cuda_ready rd, int64_t m,
                           int64_t n) {
    float s = vla_ready_scale(rd), mx = 0.0f;
    VLA_GRID_STRIDE(i, m * n) {
        int64_t col = i % n;
        float t = c ? c[i] : pre[i]; /* no C: the GEMM wrote t into pre, the copy is all of act(t) (ops.h) */
        if (bias) t += bias[col];
        if (a != VLA_ACT_IDENTITY) {
            if (pre) pre[i] = t;
            t = d_act(a, t);
        }
        if (c) c[i] = t;
        vla_ready_put_flat(rd, i, t, s, &mx);
    }
    vla_ready_finish(rd, mx, s);
}

#endif
