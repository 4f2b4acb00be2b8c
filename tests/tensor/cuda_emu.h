/* cuda_emu.h — runs the cuda backend's simple kernels on the CPU, for tests: those without inline PTX
 * (tensor/cuda/cast_kernels.cuh, norm_kernels.cuh, act_kernels.cuh with ready_copy.cuh,
 * optim_kernels.cuh, reduce_kernels.cuh, segment_kernels.cuh, attn_simt_kernels.cuh), compiled by the
 * host's C++ compiler from the very headers nvcc compiles.
 *
 * The model: a launch runs its blocks one after another; a block's threads are host threads (one per
 * CUDA thread, the same threads for every block of the launch) meeting at a barrier for __syncthreads
 * (and each warp's lanes at a barrier of their own for __syncwarp and the shuffles), so a kernel's
 * shared-memory protocol is exercised as written — but this is no race detector: a missing barrier
 * shows as a wrong result only when the host threads happen to interleave there (one removed from the
 * f32 attention's walk went unseen, under ThreadSanitizer too); a barrier in divergent code hangs, which
 * ctest's timeout turns into a failure. __shared__ is `static`: one copy, which the blocks, run one at a
 * time, take in turn, as is the launch's dynamic shared memory (VLA_DYN_SMEM). __shfl_xor_sync
 * exchanges through memory between two warp barriers, so every lane of the warp must call it together,
 * as the full mask says on a GPU; the arithmetic intrinsics are the host's IEEE operations (compiled without contraction:
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

#define VLA_CUDA_EMU 1 /* the kernel headers' own switch (attn_kernels.cuh: no runtime, dynamic shared memory) */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

/* the launch being run: the block's barrier, each warp's, the shuffle exchange, the dynamic shared memory */
struct emu_block {
    pthread_barrier_t bar;
    std::vector<pthread_barrier_t> warp_bar; /* a warp's lanes (the last warp: the block's remaining threads) */
    std::vector<float> lanes;
    std::vector<unsigned char> dyn; /* the launch's dynamic shared memory, 16-byte aligned */
};
inline emu_block *emu_cur;

inline unsigned emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void __syncthreads() { pthread_barrier_wait(&emu_cur->bar); }
/* a warp's lanes meet (what __syncwarp and the shuffles need: the warp, not the block) */
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)mask;
    pthread_barrier_wait(&emu_cur->warp_bar[emu_tid() / 32]);
}
inline void *emu_dyn_smem() { return emu_cur->dyn.data(); }

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
    (void)mask;
    unsigned t = emu_tid();
    emu_cur->lanes[t] = v;
    __syncwarp();
    float r = emu_cur->lanes[(t & ~31u) | ((t & 31u) ^ (unsigned)lane_mask)];
    __syncwarp();
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

/* kernel(args…) over grid × block with smem bytes of dynamic shared memory: the block's threads are host
 * threads, made once per launch, that run the blocks one after another, meeting at the barrier between
 * two blocks (the blocks take the static and the dynamic "shared memory" in turn; the dynamic starts
 * filled with a pattern, as a GPU's leftover does, so a read before a write shows) */
inline void emu_launch(dim3 grid, dim3 block, const std::function<void()> &kernel, size_t smem = 0) {
    gridDim = grid, blockDim = block;
    unsigned nt = block.x * block.y * block.z, nw = (nt + 31) / 32;
    emu_block b;
    pthread_barrier_init(&b.bar, NULL, nt);
    b.warp_bar.resize(nw);
    for (unsigned w = 0; w < nw; w++) pthread_barrier_init(&b.warp_bar[w], NULL, w + 1 < nw ? 32 : nt - 32 * w);
    b.lanes.assign(nt, 0.0f);
    b.dyn.assign(smem + 16, 0xA5);
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
    for (auto &wb : b.warp_bar) pthread_barrier_destroy(&wb);
    emu_cur = NULL;
}

#endif
