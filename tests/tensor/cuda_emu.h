/* cuda_emu.h — runs the cuda backend's simple kernels on the CPU, for tests: those without inline PTX
 * (tensor/cuda/cast_kernels.cuh, norm_kernels.cuh, act_kernels.cuh with ready_copy.cuh,
 * optim_kernels.cuh, reduce_kernels.cuh), compiled by the
 * host's C++ compiler from the very headers nvcc compiles.
 *
 * The model: a launch runs its blocks one after another; a block's threads are host threads (one per
 * CUDA thread, the same threads for every block of the launch) meeting at a barrier for __syncthreads,
 * so a kernel's shared-memory protocol is exercised as written (a missing barrier shows as a wrong
 * result or a data race under ThreadSanitizer, a barrier in divergent code as a hang, which ctest's
 * timeout turns into a failure). __shared__ is `static`: one copy, which the blocks, run one at a time,
 * take in turn. __shfl_xor_sync exchanges through memory between two block-wide barriers, so it needs
 * every thread of the block to call it together (the kernels here reduce with every thread); the
 * arithmetic intrinsics are the host's IEEE operations (compiled without contraction:
 * -ffp-contract=off), expf the host's — an activation's value may differ from a GPU's by an ulp, its
 * copy is held to the kernel's own output. What this cannot see: timing, memory coalescing, bank
 * conflicts, and anything a real GPU does differently from the programming model (it says nothing of
 * the mma/ldmatrix/cp.async kernels, whose layouts tensor/cuda/mma_layout.h tests instead). */
#ifndef VLA_TESTS_CUDA_EMU_H
#define VLA_TESTS_CUDA_EMU_H

#ifdef __CUDACC__
#error "cuda_emu.h is for the host compiler"
#endif

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_uint3 {
    unsigned x, y, z;
};

inline thread_local emu_uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

/* the launch being run: its barrier and the shuffle exchange */
struct emu_block {
    pthread_barrier_t bar;
    std::vector<float> lanes;
};
inline emu_block *emu_cur;

inline unsigned emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void __syncthreads() { pthread_barrier_wait(&emu_cur->bar); }

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
    (void)mask;
    unsigned t = emu_tid();
    emu_cur->lanes[t] = v;
    __syncthreads();
    float r = emu_cur->lanes[(t & ~31u) | ((t & 31u) ^ (unsigned)lane_mask)];
    __syncthreads();
    return r;
}

inline unsigned atomicMax(unsigned *a, unsigned v) {
    unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(a, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

inline unsigned __float_as_uint(float x) {
    unsigned u;
    memcpy(&u, &x, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
/* expf, fmaxf: the C library's (math.h) */

/* kernel(args…) over grid × block: the block's threads are host threads, made once per launch, that run
 * the blocks one after another, meeting at the barrier between two blocks (the blocks take the static
 * "shared memory" in turn) */
inline void emu_launch(dim3 grid, dim3 block, const std::function<void()> &kernel) {
    gridDim = grid, blockDim = block;
    unsigned nt = block.x * block.y * block.z;
    emu_block b;
    pthread_barrier_init(&b.bar, NULL, nt);
    b.lanes.assign(nt, 0.0f);
    emu_cur = &b;
    std::vector<std::thread> ts;
    ts.reserve(nt);
    for (unsigned tz = 0; tz < block.z; tz++)
        for (unsigned ty = 0; ty < block.y; ty++)
            for (unsigned tx = 0; tx < block.x; tx++)
                ts.emplace_back([&kernel, &b, grid, tx, ty, tz] {
                    threadIdx = {tx, ty, tz};
                    for (unsigned bz = 0; bz < grid.z; bz++)
                        for (unsigned by = 0; by < grid.y; by++)
                            for (unsigned bx = 0; bx < grid.x; bx++) {
                                blockIdx = {bx, by, bz};
                                kernel();
                                pthread_barrier_wait(&b.bar); /* the block is done before the next starts */
                            }
                });
    for (auto &t : ts) t.join();
    pthread_barrier_destroy(&b.bar);
    emu_cur = NULL;
}

#endif
