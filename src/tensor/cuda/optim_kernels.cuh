/* optim_kernels.cuh — AdamW and EMA on the device (elementwise.cu launches them): the cpu backend's
 * arithmetic element by element (each product rounded on its own), one tensor per launch or many
 * (each tensor cut into chunks, a block per chunk), the step skipped on the device when its guard is
 * not finite. A header, so the CPU tests run these very kernels under an emulation of the CUDA
 * execution model (tests/tensor/cuda_emu.h). */
#ifndef VLA_TENSOR_CUDA_OPTIM_KERNELS_CUH
#define VLA_TENSOR_CUDA_OPTIM_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#include "tensor/cuda/grid_stride.cuh"
#include "tensor/ops.h"

/* One element of AdamW, the cpu backend's arithmetic (each product rounded on its own) */
__device__ __forceinline__ void adamw_elem(float *w, const float *g, float *m, float *v, int64_t i,
                                           const vla_adamw_scalars &s, float decay_mul, float scale) {
    float wi = __fmul_rn(w[i], decay_mul);
    float gi = __fmul_rn(g[i], scale);
    float mi = __fmul_rn(m[i], s.beta1) + __fmul_rn(gi, s.one_minus_beta1);
    float vi = __fmul_rn(v[i], s.beta2) + __fmul_rn(__fmul_rn(s.one_minus_beta2, gi), gi);
    w[i] = wi + __fmul_rn(s.neg_step, __fdiv_rn(mi, __fdiv_rn(__fsqrt_rn(vi), s.bias_correction2_sqrt) + s.eps));
    m[i] = mi;
    v[i] = vi;
}

/* s.guard (device memory, or NULL): the step's guard, read once per thread;
 * not finite: the skipped step, nothing written (false) */
__device__ __forceinline__ bool guard_scale(const vla_adamw_scalars &s, float *scale) {
    *scale = s.grad_scale;
    if (!s.guard) return true;
    *scale = *s.guard;
    return isfinite(*scale);
}

__global__ void k_adamw(float *w, const float *g, float *m, float *v, int64_t n, vla_adamw_scalars s, float decay_mul) {
    float scale;
    if (!guard_scale(s, &scale)) return;
    VLA_GRID_STRIDE(i, n) adamw_elem(w, g, m, v, i, s, decay_mul, scale);
}

__global__ void k_ema(float *e, const float *w, float d, float omd, int64_t n, const float *guard) {
    if (guard && !isfinite(*guard)) return;
    VLA_GRID_STRIDE(i, n) e[i] = __fmul_rn(d, e[i]) + __fmul_rn(omd, w[i]);
}

/* ---- many tensors in one launch (adamw_multi, ema_multi) -------------------------------
 * Each tensor is cut into chunks of MULTI_CHUNK elements; block b takes
 * chunk b, found in first[] (first[i]: tensor i's first chunk; first[count]:
 * the total) by binary search. Elementwise, so the bits are adamw's / ema's. */
#define MULTI_CHUNK 65536

typedef struct {
    float *w, *m, *v;
    const float *g;
    int64_t n;
    float decay_mul;
} multi_adamw_t;

typedef struct {
    float *e;
    const float *w;
    int64_t n;
} multi_ema_t;

__device__ __forceinline__ int chunk_tensor(const int64_t *first, int count, int64_t b) {
    int lo = 0, hi = count - 1;
    while (lo < hi) { /* the last i with first[i] <= b */
        int mid = (lo + hi + 1) / 2;
        if (first[mid] <= b) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

__global__ void k_adamw_multi(const multi_adamw_t *t, const int64_t *first, int count, vla_adamw_scalars s) {
    float scale;
    if (!guard_scale(s, &scale)) return;
    int64_t b = blockIdx.x;
    int i = chunk_tensor(first, count, b);
    const multi_adamw_t x = t[i];
    int64_t lo = (b - first[i]) * MULTI_CHUNK, hi = lo + MULTI_CHUNK < x.n ? lo + MULTI_CHUNK : x.n;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) adamw_elem(x.w, x.g, x.m, x.v, k, s, x.decay_mul, scale);
}

__global__ void k_ema_multi(const multi_ema_t *t, const int64_t *first, int count, float d, float omd,
                            const float *guard) {
    if (guard && !isfinite(*guard)) return;
    int64_t b = blockIdx.x;
    int i = chunk_tensor(first, count, b);
    const multi_ema_t x = t[i];
    int64_t lo = (b - first[i]) * MULTI_CHUNK, hi = lo + MULTI_CHUNK < x.n ? lo + MULTI_CHUNK : x.n;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) x.e[k] = __fmul_rn(d, x.e[k]) + __fmul_rn(omd, x.w[k]);
}

/* first[] over the tensors' sizes; returns the chunk total */
static inline int64_t chunk_starts(int count, const int64_t *n, int64_t *first) {
    int64_t c = 0;
    for (int i = 0; i < count; i++) first[i] = c, c += (n[i] + MULTI_CHUNK - 1) / MULTI_CHUNK;
    first[count] = c;
    return c;
}

/* t[] and first[] for k_adamw_multi over count tensors (each weight's decay factor, 1 without decay);
 * returns the chunks in all — the grid */
static inline int64_t adamw_multi_plan(int count, float *const *w, const float *const *g, float *const *m,
                                       float *const *v, const int64_t *n, const bool *decay,
                                       const vla_adamw_scalars *s, multi_adamw_t *t, int64_t *first) {
    for (int i = 0; i < count; i++) t[i] = (multi_adamw_t){w[i], m[i], v[i], g[i], n[i], decay[i] ? s->decay_mul : 1.0f};
    return chunk_starts(count, n, first);
}

/* the same for k_ema_multi */
static inline int64_t ema_multi_plan(int count, float *const *e, const float *const *w, const int64_t *n,
                                     multi_ema_t *t, int64_t *first) {
    for (int i = 0; i < count; i++) t[i] = (multi_ema_t){e[i], w[i], n[i]};
    return chunk_starts(count, n, first);
}

#endif
