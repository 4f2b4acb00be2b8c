/* cast_kernels.cuh — the kernels that turn an f32 operand into the copy a quantized GEMM reads
 * (gemm.cu: sgemm_q's casts, prepare_operand, prepare_operand_pair): bf16 or FP8 (E4M3/E5M2, times
 * its scale, amax max-accumulated), K-major with K padded where the plan says (tensor/cuda/gemm_plan.h),
 * 32 × 8 threads over 32 × 32 tiles through shared memory so reads and writes are both coalesced.
 * A header, not part of gemm.cu, so the CPU tests run the same kernels under an emulation of the
 * CUDA execution model (tests/tensor/cuda_emu.h: no inline PTX here). */
#ifndef VLA_TENSOR_CUDA_CAST_KERNELS_CUH
#define VLA_TENSOR_CUDA_CAST_KERNELS_CUH

#include <stdint.h>

#include "base/numfmt.h"
#include "tensor/cuda/grid_stride.cuh"
extern "C" {
#include "tensor/cuda/gemm_plan.h"
}

enum { OUT_BF16, OUT_E4M3, OUT_E5M2, OUT_F32_BF16, OUT_F32_E4M3, OUT_F32_E5M2 };

/* The end of a 32 × 8 cast block (k_cast_operand, k_cast_pair), called by every thread: the block's max
 * of mx, one atomic max on its bits into *amax (non-negative floats order as integers, so the blocks'
 * order changes no bit), and by block (0, 0) sinv into *s1 and *s2 (NULL: not wanted). */
__device__ __forceinline__ void cast_block_end(float mx, float *amax, float sinv, float *s1, float *s2) {
    __shared__ float red[8];
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    if (tx == 0) red[ty] = mx;
    __syncthreads();
    if (ty == 0 && tx == 0) {
        float m = red[0];
        for (int i = 1; i < 8; i++) m = fmaxf(m, red[i]);
        if (amax) atomicMax((unsigned int *)amax, __float_as_uint(m));
        if (blockIdx.x == 0 && blockIdx.y == 0) {
            if (s1) *s1 = sinv;
            if (s2) *s2 = sinv;
        }
    }
}

/* dst [rows][kp] ← the operand as the plan copies it: stored [rows][K]
 * (transpose 0) or [K][rows] (transpose 1) with row stride ld; columns
 * K..kp are zero. 32×32 tiles through shared memory so that both
 * the read and the write are coalesced. FP8 kinds multiply by *scale and
 * max-accumulate |x| into *amax; OUT_F32_* write the rounded value back as
 * f32 (times 1/s for FP8): the emulation, the cpu backend's computation. */
__global__ void k_cast_operand(void *dst, const float *src, int64_t ld, int64_t rows, int64_t K, int64_t kp,
                               int transpose, int kind, const float *scale, float *amax, float *sinv_out) {
    __shared__ float tile[32][33];
    int64_t r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
    int tx = threadIdx.x, ty = threadIdx.y; /* 32 × 8 */
    for (int i = ty; i < 32; i += 8) {
        if (!transpose) {
            int64_t r = r0 + i, c = c0 + tx;
            tile[i][tx] = r < rows && c < K ? src[r * ld + c] : 0.0f;
        } else {
            int64_t c = c0 + i, r = r0 + tx;
            tile[tx][i] = r < rows && c < K ? src[c * ld + r] : 0.0f;
        }
    }
    __syncthreads();
    bool fp8 = kind == OUT_E4M3 || kind == OUT_E5M2 || kind == OUT_F32_E4M3 || kind == OUT_F32_E5M2;
    bool e4m3 = kind == OUT_E4M3 || kind == OUT_F32_E4M3;
    float s = fp8 ? *scale : 1.0f, sinv = 1.0f / s, mx = 0.0f;
    for (int i = ty; i < 32; i += 8) {
        int64_t r = r0 + i, c = c0 + tx;
        if (r >= rows || c >= kp) continue;
        float v = tile[i][tx];
        int64_t o = r * kp + c;
        if (fp8) mx = fmaxf(mx, vla_nf_amax_of(v));
        switch (kind) {
        case OUT_BF16: ((uint16_t *)dst)[o] = vla_nf_f32_to_bf16(v); break;
        case OUT_E4M3: ((uint8_t *)dst)[o] = vla_nf_f32_to_e4m3(v * s); break;
        case OUT_E5M2: ((uint8_t *)dst)[o] = vla_nf_f32_to_e5m2(v * s); break;
        case OUT_F32_BF16: ((float *)dst)[o] = vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(v)); break;
        default: ((float *)dst)[o] = vla_nf_fp8_round(v * s, e4m3) * sinv; break;
        }
    }
    if (fp8) cast_block_end(mx, amax, sinv, sinv_out, NULL);
}

/* prepare_operand_pair (ops.h; TransformerEngine's cast_transpose): both K-major FP8 copies of a stored
 * b [rows][cols] from one read of it, 32×32 tiles through shared memory as k_cast_operand's. dst_n is
 * [rows][kpn] (kpn = cols padded to 16), dst_t [cols][kpt] (kpt = rows padded): the grid covers the
 * stored index space padded both ways, a tile's elements past rows or cols read as 0 and written as 0
 * wherever a copy's row has them (its pad); the rows past a copy's own are not written. Then the
 * block's max (the real elements': the pad is 0), one atomic max, and each copy's 1/s by block (0, 0). */
__global__ void k_cast_pair(uint8_t *dst_n, uint8_t *dst_t, const float *src, int64_t ld, int64_t rows, int64_t cols,
                            int64_t kpn, int64_t kpt, bool e4m3, const float *scale, float *amax, float *sinv_n,
                            float *sinv_t) {
    __shared__ float tile[32][33];
    int64_t r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
    int tx = threadIdx.x, ty = threadIdx.y; /* 32 × 8 */
    float s = *scale, mx = 0.0f;
    for (int i = ty; i < 32; i += 8) { /* stored row r0 + i, column c0 + tx: coalesced reads */
        int64_t r = r0 + i, c = c0 + tx;
        float v = r < rows && c < cols ? src[r * ld + c] : 0.0f;
        tile[i][tx] = v;
        mx = fmaxf(mx, vla_nf_amax_of(v));
        if (r < rows && c < kpn) dst_n[r * kpn + c] = e4m3 ? vla_nf_f32_to_e4m3(v * s) : vla_nf_f32_to_e5m2(v * s);
    }
    __syncthreads();
    for (int i = ty; i < 32; i += 8) { /* dst_t row c0 + i (a stored column), column r0 + tx: coalesced writes */
        int64_t c = c0 + i, r = r0 + tx;
        float v = tile[tx][i];
        if (c < cols && r < kpt) dst_t[c * kpt + r] = e4m3 ? vla_nf_f32_to_e4m3(v * s) : vla_nf_f32_to_e5m2(v * s);
    }
    cast_block_end(mx, amax, 1.0f / s, sinv_n, sinv_t);
}

/* The grids (blocks of 32 × 8 threads) the cast kernels are launched with: k_cast_operand over the copy's
 * rows × kp, k_cast_pair over the stored rows × cols padded both ways to 16 (gemm.cu launches them so). */
static inline dim3 vla_cast_operand_grid(int64_t rows, int64_t kp) {
    return dim3((unsigned)((kp + 31) / 32), (unsigned)((rows + 31) / 32));
}
static inline dim3 vla_cast_pair_grid(int64_t rows, int64_t cols) {
    return dim3((unsigned)((vla_q_fp8_ld(cols) + 31) / 32), (unsigned)((vla_q_fp8_ld(rows) + 31) / 32));
}

/* dst [rows][cols] (f32, packed) ← a bf16 copy [rows][ld] as prepare_operand stores it: the values a
 * GEMM would read, for the emulation (gemm.cu) of a product whose operand exists only as its copy
 * (ops.h, kept copies). Widening is exact: the copy's values are bf16 already. */
__global__ void k_widen_bf16(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t ld) {
    VLA_GRID_STRIDE(i, rows * cols) dst[i] = vla_nf_bf16_to_f32(src[(i / cols) * ld + i % cols]);
}

#endif
