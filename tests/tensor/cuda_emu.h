/* cuda_emu.h — runs the cuda backend's kernels on the CPU, for tests: those without inline PTX
 * (tensor/cuda/cast_kernels.cuh, norm_kernels.cuh, act_kernels.cuh with ready_copy.cuh,
 * optim_kernels.cuh, reduce_kernels.cuh, segment_kernels.cuh, attn_simt_kernels.cuh, and
 * attn_mma_kernels.cuh with its PTX wrappers emulated), compiled by the
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
 * copy is held to the kernel's own output. The bf16 attention's inline PTX (attn_mma_kernels.cuh's seven
 * wrappers) is stood in for by the instructions as the PTX ISA describes them (below: mma.sync's
 * products summed in double, as the hardware's order is its own; cp.async held until the wait). What
 * this cannot see: timing, memory coalescing, bank conflicts, register pressure, and anything a real GPU
 * does differently from the programming model and the ISA's description. */
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

#include "base/numfmt.h" /* and base/hd.h: the bit casts */

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
#define __align__(n) alignas(n)

struct uint2 {
    unsigned x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
struct float4 {
    float x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

/* the launch being run: the block's barrier, each warp's, the shuffle exchange, the dynamic shared memory */
struct emu_block {
    pthread_barrier_t bar;
    std::vector<pthread_barrier_t> warp_bar; /* a warp's lanes (the last warp: the block's remaining threads) */
    std::vector<float> lanes;
    std::vector<uint64_t> xch;      /* the warp collectives' exchange: 8 words a thread */
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
/* an f32 add as one compare-and-swap of its bits (the fused attention backward's dQ) */
inline float atomicAdd(float *a, float v) {
    uint32_t *w = (uint32_t *)a, old = __atomic_load_n(w, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(w, &old, vla_hd_f32_bits(vla_hd_bits_f32(old) + v), false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    return vla_hd_bits_f32(old);
}

/* the bit casts: base/hd.h's, which the kernels' number formats use on the host already */
inline unsigned __float_as_uint(float x) { return vla_hd_f32_bits(x); }
inline float __uint_as_float(unsigned u) { return vla_hd_bits_f32(u); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
/* expf, fmaxf: the C library's (math.h) */

/* ---- the tensor-core instructions attn_mma_kernels.cuh wraps, from the PTX ISA -------------------------
 * Warp collectives: each lane puts its operands in the exchange, the warp meets, each lane computes its
 * own results from all 32 lanes' operands, the warp meets again before the exchange is reused. */
inline uint64_t *emu_xch(unsigned lane_of_warp) { return &emu_cur->xch[(size_t)((emu_tid() & ~31u) + lane_of_warp) * 8]; }
inline float emu_bf16(uint32_t reg, int hi) { return vla_nf_bf16_to_f32((uint16_t)(hi ? reg >> 16 : reg & 0xffffu)); }

/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, D = A·B + C: lane l (group g = l / 4, t = l % 4)
 * holds A's (g + {0, 8}, 2t + {0, 1} + {0, 8}) in a[0..3] (pairs, the lower column in the low half), B's
 * (k = 2t + {0, 1} + {0, 8}, n = g) in b[0..1], C's (g + {0, 8}, 2t + {0, 1}) in c[0..3]. The products
 * are exact; summed here in double from c, then rounded (the hardware's order is unspecified). */
inline void emu_mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    unsigned lane = emu_tid() & 31u;
    uint64_t *me = emu_xch(lane);
    for (int i = 0; i < 4; i++) me[i] = a[i];
    me[4] = b[0], me[5] = b[1];
    __syncwarp();
    static const int A_ROW[8] = {0, 0, 8, 8, 0, 0, 8, 8}, A_COL[8] = {0, 1, 0, 1, 8, 9, 8, 9};
    static const int B_K[4] = {0, 1, 8, 9};
    float A[16][16], B[16][8];
    for (unsigned l = 0; l < 32; l++) {
        const uint64_t *x = emu_xch(l);
        int g = (int)(l >> 2), t2 = 2 * (int)(l & 3);
        for (int e = 0; e < 8; e++) A[g + A_ROW[e]][t2 + A_COL[e]] = emu_bf16((uint32_t)x[e / 2], e & 1);
        for (int e = 0; e < 4; e++) B[t2 + B_K[e]][g] = emu_bf16((uint32_t)x[4 + e / 2], e & 1);
    }
    int g = (int)(lane >> 2), t2 = 2 * (int)(lane & 3);
    for (int i = 0; i < 4; i++) {
        int row = g + (i >= 2 ? 8 : 0), col = t2 + (i & 1);
        double acc = c[i];
        for (int k = 0; k < 16; k++) acc += (double)A[row][k] * B[k][col];
        c[i] = (float)acc;
    }
    __syncwarp();
}

/* ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16: lane l supplies the address of row l % 8 of matrix
 * l / 8 (its own `row`); register m of lane l receives matrix m's row l / 4, columns 2(l % 4) and
 * 2(l % 4) + 1 (.trans: column l / 4, rows 2(l % 4), 2(l % 4) + 1), the lower index in the low half. */
inline void emu_ldmatrix(uint32_t *out, int n, bool trans, const uint16_t *row) {
    unsigned lane = emu_tid() & 31u;
    emu_xch(lane)[0] = (uint64_t)(uintptr_t)row;
    __syncwarp();
    for (int m = 0; m < n; m++) {
        int r0, c0, r1, c1;
        if (!trans) r0 = r1 = (int)lane / 4, c0 = 2 * (int)(lane % 4), c1 = c0 + 1;
        else c0 = c1 = (int)lane / 4, r0 = 2 * (int)(lane % 4), r1 = r0 + 1;
        const uint16_t *p0 = (const uint16_t *)(uintptr_t)emu_xch((unsigned)(8 * m + r0))[0];
        const uint16_t *p1 = (const uint16_t *)(uintptr_t)emu_xch((unsigned)(8 * m + r1))[0];
        out[m] = (uint32_t)p0[c0] | (uint32_t)p1[c1] << 16;
    }
    __syncwarp();
}

/* cp.async: the thread's copies wait in a queue until its cp.async.wait_all (so a kernel that reads the
 * destination before waiting reads the old bytes, as a GPU may) */
struct emu_copy {
    void *dst;
    const void *src;
    int bytes;
};
inline thread_local std::vector<emu_copy> emu_copies;
inline void emu_cp_async(void *dst, const void *src, int bytes) { emu_copies.push_back({dst, src, bytes}); }
inline void emu_cp_async_wait_all() {
    for (const emu_copy &c : emu_copies) memcpy(c.dst, c.src, (size_t)c.bytes);
    emu_copies.clear();
}

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
    b.xch.assign((size_t)nt * 8, 0);
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
