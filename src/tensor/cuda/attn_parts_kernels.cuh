/* attn_parts_kernels.cuh — where an attention walk was split into parts (tensor/attn_plan.h: the
 * forward's keys, the backward's dK/dV), the kernels that put the parts together in order
 * (attention.cu launches them). A header, so the CPU tests run them under an emulation of the CUDA
 * execution model (tests/tensor/cuda_emu.h). */
#ifndef VLA_TENSOR_CUDA_ATTN_PARTS_KERNELS_CUH
#define VLA_TENSOR_CUDA_ATTN_PARTS_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#include "base/numfmt.h"

/* out, lse (and out's bf16 copy) from the forward's parts (attn_plan.h, "SPLIT KEYS"), in part order:
 * m = max m_s, l = Σ l_s·2^(m_s − m), out = Σ o_s·2^(m_s − m) / l; a part that saw no key (l_s = 0) adds
 * nothing. One thread per output element; lse by each row's column 0. */
__global__ void k_combine_parts(float *out, float *lse, uint16_t *out_ready, const float *po, const float *pm,
                                const float *pl, int64_t rows, int d, int S) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * d; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = e / d;
        int c = (int)(e - row * d);
        float M = -INFINITY, L = 0.0f, O = 0.0f;
        for (int p = 0; p < S; p++)
            if (pl[p * rows + row] > 0.0f) M = fmaxf(M, pm[p * rows + row]);
        for (int p = 0; p < S; p++) {
            float l = pl[p * rows + row];
            if (!(l > 0.0f)) continue;
            float f = exp2f(pm[p * rows + row] - M);
            L += l * f;
            O += po[(p * rows + row) * d + c] * f;
        }
        float v = L > 0.0f ? O / L : 0.0f;
        out[e] = v;
        if (out_ready) out_ready[e] = vla_nf_f32_to_bf16(v);
        if (c == 0 && lse) lse[row] = L > 0.0f ? (M + log2f(L)) * 0.6931471805599453f : -INFINITY;
    }
}

/* dk[e] += Σ_p dk_part[p][e] (and dv), the parts in order: deterministic */
__global__ void k_sum_parts(float *dk, float *dv, const float *pk, const float *pv, int64_t n, int parts) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        float sk = 0.0f, sv = 0.0f;
        for (int p = 0; p < parts; p++) sk += pk[p * n + e], sv += pv[p * n + e];
        dk[e] += sk, dv[e] += sv;
    }
}

#endif
