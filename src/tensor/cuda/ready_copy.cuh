/* ready_copy.cuh — a GEMM-ready copy written by the op that makes the value
 * (ops.h: vla_norm_fuse, glu_forward's ready, act_backward's, glu_backward's,
 * vla_gemm_epilogue.ready): bf16, or FP8 with its tensor's scale — the
 * bytes, the amax and the 1/s prepare_operand's cast writes (gemm.cu,
 * k_cast_operand), so a GEMM reads the copy as its own cast and the cast is
 * no pass of its own (TransformerEngine's LayerNormLinear, for every
 * producer).
 *
 * Layout (tensor/cuda/gemm_plan.h): rows of the value's cols elements at a
 * stride of rld — bf16 rows padded to 16 bytes, FP8 rows to kp = 16 — the
 * pad zero; an FP8 copy keeps the 1/s it was cast with at the first 256-byte
 * boundary after its rows. A kernel writing one: vla_ready_scale once per
 * thread, vla_ready_put (or _put_flat) per element, vla_ready_pad for the
 * pad, and vla_ready_finish once by every thread of the block at its end
 * (FP8: the block's max, one atomic max on its bits — a max, so the blocks'
 * order changes no bit — and the 1/s by the first block). */
#ifndef VLA_TENSOR_CUDA_READY_COPY_CUH
#define VLA_TENSOR_CUDA_READY_COPY_CUH

#include <stdint.h>

#include "base/numfmt.h"
#include "tensor/ops.h"
extern "C" {
#include "tensor/cuda/gemm_plan.h"
}

enum { VLA_READY_BF16, VLA_READY_E4M3, VLA_READY_E5M2 };

typedef struct {
    void *p;            /* NULL: no copy */
    int kind;           /* VLA_READY_* */
    int64_t cols, rld;  /* the value's row length; the copy's row stride in elements */
    const float *scale; /* FP8: the quantisation factor s (backend memory) */
    float *amax;        /* FP8: max |v| max-accumulated here (NULL: not recorded) */
    float *sinv;        /* FP8: where the copy keeps 1/s */
} vla_cuda_ready;

/* The copy at p of a rows × cols value: bf16 (fp8 NULL) or FP8 with fp8's format, scale and amax. */
static inline vla_cuda_ready vla_cuda_ready_of(void *p, const vla_fp8_operand *fp8, int64_t rows, int64_t cols) {
    vla_cuda_ready r = {p, VLA_READY_BF16, cols, vla_q_bf16_ld(cols), NULL, NULL, NULL};
    if (p && fp8) {
        r.kind = fp8->fmt == VLA_FP8_E5M2 ? VLA_READY_E5M2 : VLA_READY_E4M3;
        r.rld = vla_q_fp8_ld(cols);
        r.scale = fp8->scale, r.amax = fp8->amax;
        r.sinv = (float *)((char *)p + vla_q_ready_sinv_offset(rows, r.rld, 1));
    }
    return r;
}

static inline bool vla_cuda_ready_fp8(const vla_cuda_ready *r) { return r->p && r->kind != VLA_READY_BF16; }

/* the factor an FP8 copy multiplies by (1 for bf16 or none), read once per thread */
__device__ __forceinline__ float vla_ready_scale(const vla_cuda_ready &r) {
    return r.p && r.kind != VLA_READY_BF16 ? *r.scale : 1.0f;
}

/* element (row, col) of the copy ← v (FP8: v·s, and |v| max-accumulated into *mx) */
__device__ __forceinline__ void vla_ready_put(const vla_cuda_ready &r, int64_t row, int64_t col, float v, float s,
                                              float *mx) {
    if (!r.p) return;
    int64_t o = row * r.rld + col;
    switch (r.kind) {
    case VLA_READY_BF16: ((uint16_t *)r.p)[o] = vla_nf_f32_to_bf16(v); return;
    case VLA_READY_E4M3: ((uint8_t *)r.p)[o] = vla_nf_f32_to_e4m3(v * s); break;
    default: ((uint8_t *)r.p)[o] = vla_nf_f32_to_e5m2(v * s); break;
    }
    *mx = fmaxf(*mx, vla_nf_amax_of(v));
}

/* the pad of row `row`: columns from, from + step, … below rld, zero */
__device__ __forceinline__ void vla_ready_pad(const vla_cuda_ready &r, int64_t row, int64_t from, int64_t step) {
    if (!r.p) return;
    for (int64_t c = from; c < r.rld; c += step) {
        if (r.kind == VLA_READY_BF16) ((uint16_t *)r.p)[row * r.rld + c] = 0;
        else ((uint8_t *)r.p)[row * r.rld + c] = 0;
    }
}

/* flat element i of the value (one thread per element): put, and the pad columns congruent to its
 * column (so every pad column of the row is written by some element's thread) */
__device__ __forceinline__ void vla_ready_put_flat(const vla_cuda_ready &r, int64_t i, float v, float s, float *mx) {
    if (!r.p) return;
    int64_t row = i / r.cols, col = i - row * r.cols;
    vla_ready_put(r, row, col, v, s, mx);
    vla_ready_pad(r, row, r.cols + col, r.cols);
}

/* every thread of a 1-D block (a multiple of 32 threads, at most 1024), after its elements; mx is the
 * thread's max over this copy's elements only (a second copy keeps its own) */
__device__ __forceinline__ void vla_ready_finish(const vla_cuda_ready &r, float mx, float s) {
    if (!r.p || r.kind == VLA_READY_BF16) return; /* the same for the whole block */
    __shared__ float red[32];
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    if (threadIdx.x == 0) {
        float m = red[0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) m = fmaxf(m, red[w]);
        if (r.amax) atomicMax((unsigned int *)r.amax, __float_as_uint(m));
        if (blockIdx.x == 0) *r.sinv = 1.0f / s;
    }
    __syncthreads(); /* red is read: a second call in the same kernel may write it */
}

#endif
