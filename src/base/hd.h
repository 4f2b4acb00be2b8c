/* hd.h — one spelling for small functions compiled both for the host (C11,
 * the CPU build and its tests) and for a CUDA device (nvcc): the arithmetic
 * the GPU kernels run lives in headers like numfmt.h and mma_layout.h, and
 * the CPU unit tests run the very same code against base/dtype.h and
 * reference tables (docs/cuda.md, "What the CPU tests"). */
#ifndef VLA_BASE_HD_H
#define VLA_BASE_HD_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define VLA_HD static inline __host__ __device__
#else
#define VLA_HD static inline
#endif

VLA_HD uint32_t vla_hd_f32_bits(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

VLA_HD float vla_hd_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

#endif
