/* cuda_emu.h — runs the cuda backend's kernels on the CPU, for tests: those without inline PTX
 * (tensor/cuda/cast_kernels.cuh, norm_kernels.cuh, act_kernels.cuh with ready_copy.cuh,
 * optim_kernels.cuh, reduce_kernels.cuh, segment_kernels.cuh, attn_simt_kernels.cuh, and
 * attn_mma_kernels.cuh with its PTX wrappers emulated), compiled by the
 * host's C++ compiler from the very headers nvcc compiles.
 *
 * The model: a launch runs its blocks one after another; a block's threads are fibers on one host
 * thread (below, "the threads"), each running until it meets a barrier — __syncthreads, or its warp's
 * for __syncwarp and the shuffles — so a kernel's shared-memory protocol is exercised as written, in
 * an order chosen to expose a missing barrier: lowest-numbered thread first, or highest first
 * (VLA_EMU_ORDER=reverse), ctest running the suite both ways. A barrier in divergent code is named and
 * aborts. __shared__ is `static`: one copy, which the blocks, run one at a time, take in turn, as is the
 * launch's dynamic shared memory (VLA_DYN_SMEM). __shfl_xor_sync
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <functional>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN /* AddressSanitizer told of every switch between stacks */
#include <sanitizer/common_interface_defs.h>
#endif

#include "base/numfmt.h" /* and base/hd.h: the bit casts */

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_uint3 {
    unsigned x, y, z;
};

inline emu_uint3 threadIdx, blockIdx; /* the running thread's (set at every switch) */
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

/* ---- the threads: fibers on one host thread --------------------------------------------------------
 * Each CUDA thread is a fiber (ucontext) with a stack of its own; one runs at a time, until it reaches a
 * barrier (__syncthreads, its warp's for __syncwarp and the warp collectives) or its end, and then the
 * scheduler resumes the first runnable thread in the launch's order: lowest index first, or highest
 * first (VLA_EMU_ORDER=reverse). Between two barriers a thread's reads and writes therefore all happen
 * before the next thread's — warp 0 before warp 1 in one order, warp 3 before warp 2 in the other — so
 * a read of shared memory that a missing barrier leaves unordered against another thread's write sees
 * the write in one order and the old bytes in the other: a kernel must give the same results both ways
 * (ctest runs the suite in each). A barrier that some threads never reach is named and aborts. */
struct emu_barrier {
    unsigned expected = 0, arrived = 0, gen = 0;
};
/* cp.async's copies wait in the issuing thread's queue until its cp.async.wait_all */
struct emu_copy {
    void *dst;
    const void *src;
    int bytes;
};
struct emu_fiber {
    ucontext_t ctx;
    void *stack = nullptr; /* the usable stack, above a guard page */
    size_t stack_bytes = 0;
    emu_uint3 tid{}, bid{};
    const emu_barrier *wait = nullptr; /* the barrier it waits at, and that barrier's generation then */
    unsigned wait_gen = 0;
    bool done = false;
    std::vector<emu_copy> copies;
    void *asan_fake = nullptr;
};
/* the launch being run: its threads, the block's barrier, each warp's, the shuffle exchange, the dynamic
 * shared memory */
struct emu_block {
    emu_barrier bar;
    std::vector<emu_barrier> warp_bar; /* a warp's lanes (the last warp: the block's remaining threads) */
    std::vector<float> lanes;
    std::vector<uint64_t> xch;      /* the warp collectives' exchange: 8 words a thread */
    std::vector<unsigned char> dyn; /* the launch's dynamic shared memory, 16-byte aligned */
    std::vector<emu_fiber> fibers;
    unsigned cur = 0;
    bool reverse = false;
    const std::function<void()> *kernel = nullptr;
    dim3 grid;
    ucontext_t main_ctx;
    const void *main_bottom = nullptr; /* the launching stack (for AddressSanitizer) */
    size_t main_bytes = 0;
    bool main_known = false;
};
inline emu_block *emu_cur;

inline unsigned emu_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline void *emu_dyn_smem() { return emu_cur->dyn.data(); }

inline bool emu_runnable(const emu_fiber &f) { return !f.done && (!f.wait || f.wait->gen != f.wait_gen); }
inline int emu_pick(const emu_block &b) {
    int n = (int)b.fibers.size();
    for (int k = 0; k < n; k++) {
        int i = b.reverse ? n - 1 - k : k;
        if (emu_runnable(b.fibers[(size_t)i])) return i;
    }
    return -1;
}

/* from the running fiber (from; NULL: the launch) to fiber `to` (-1: back to the launch); a fiber that has
 * ended (dying) leaves for good */
inline void emu_go(emu_fiber *from, bool dying, int to) {
    emu_block &b = *emu_cur;
    ucontext_t *dst = to < 0 ? &b.main_ctx : &b.fibers[(size_t)to].ctx;
    ucontext_t *src = from ? &from->ctx : &b.main_ctx;
#ifdef EMU_ASAN
    const void *bottom = to < 0 ? b.main_bottom : b.fibers[(size_t)to].stack;
    size_t bytes = to < 0 ? b.main_bytes : b.fibers[(size_t)to].stack_bytes;
    static void *main_fake; /* the launch's own */
    void **fake = from ? &from->asan_fake : &main_fake;
    __sanitizer_start_switch_fiber(dying ? nullptr : fake, bottom, bytes);
#endif
    if (to >= 0) b.cur = (unsigned)to;
    if (dying) {
        setcontext(dst);
        abort(); /* not reached */
    }
    swapcontext(src, dst);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(*fake, nullptr, nullptr);
#endif
    if (from) threadIdx = from->tid, blockIdx = from->bid;
}

/* the running thread lets the next runnable one run (itself, if it is first in the order) */
inline void emu_schedule() {
    emu_block &b = *emu_cur;
    emu_fiber &me = b.fibers[b.cur];
    int next = emu_pick(b);
    if (next < 0) {
        fprintf(stderr, "cuda_emu: block (%u, %u, %u): thread %u waits at a barrier the others never reach (a "
                        "barrier in divergent code)\n", blockIdx.x, blockIdx.y, blockIdx.z, emu_tid());
        abort();
    }
    if (next != (int)b.cur) emu_go(&me, false, next);
}

inline void emu_barrier_wait(emu_barrier &br) {
    emu_block &b = *emu_cur;
    emu_fiber &me = b.fibers[b.cur];
    if (++br.arrived == br.expected) br.arrived = 0, br.gen++; /* the last: every thread there runs again */
    else me.wait = &br, me.wait_gen = br.gen;
    emu_schedule();
    me.wait = nullptr;
}

inline void __syncthreads() { emu_barrier_wait(emu_cur->bar); }
/* a warp's lanes meet (what __syncwarp and the shuffles need: the warp, not the block) */
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)mask;
    emu_barrier_wait(emu_cur->warp_bar[emu_tid() / 32]);
}

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
/* what a GPU faults on and a CPU does not: an access the instruction needs aligned */
inline void emu_check_aligned(const void *p, unsigned bytes, const char *what) {
    if ((uintptr_t)p % bytes) {
        fprintf(stderr, "cuda_emu: %s at %p, not %u-byte aligned (a misaligned address fault on a GPU)\n", what, p,
                bytes);
        abort();
    }
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

/* cp.async: the thread's copies wait in its queue until its cp.async.wait_all (so a kernel that reads the
 * destination before waiting reads the old bytes, as a GPU may) */
inline void emu_cp_async(void *dst, const void *src, int bytes) {
    emu_cur->fibers[emu_cur->cur].copies.push_back({dst, src, bytes});
}
inline void emu_cp_async_wait_all() {
    std::vector<emu_copy> &q = emu_cur->fibers[emu_cur->cur].copies;
    for (const emu_copy &c : q) memcpy(c.dst, c.src, (size_t)c.bytes);
    q.clear();
}

/* a thread: every block of the launch in turn, meeting the others at the barrier between two blocks */
inline void emu_thread_main() {
    emu_block &b = *emu_cur;
    emu_fiber &me = b.fibers[b.cur];
#ifdef EMU_ASAN
    const void *from_bottom;
    size_t from_bytes;
    __sanitizer_finish_switch_fiber(nullptr, &from_bottom, &from_bytes);
    if (!b.main_known) b.main_bottom = from_bottom, b.main_bytes = from_bytes, b.main_known = true; /* the first: from the launch */
#endif
    threadIdx = me.tid;
    for (unsigned bz = 0; bz < b.grid.z; bz++)
        for (unsigned by = 0; by < b.grid.y; by++)
            for (unsigned bx = 0; bx < b.grid.x; bx++) {
                me.bid = {bx, by, bz};
                blockIdx = me.bid;
                (*b.kernel)();
                emu_barrier_wait(b.bar); /* the block is done before the next starts */
            }
    me.done = true;
    int next = emu_pick(b);
    bool all = true;
    for (const emu_fiber &f : b.fibers) all = all && f.done;
    if (next < 0 && !all) {
        fprintf(stderr, "cuda_emu: threads wait at a barrier that thread %u, finished, never reached\n", emu_tid());
        abort();
    }
    emu_go(&me, true, next); /* the next runnable thread, or (all done) back to the launch */
}

/* the scheduling order: VLA_EMU_ORDER=reverse runs the highest-numbered runnable thread first */
inline bool emu_reverse_order() {
    const char *o = getenv("VLA_EMU_ORDER");
    return o && !strcmp(o, "reverse");
}

/* kernel(args…) over grid × block with smem bytes of dynamic shared memory: the block's threads are fibers,
 * made once per launch, that run the blocks one after another, meeting at the barrier between two blocks
 * (the blocks take the static and the dynamic "shared memory" in turn; the dynamic starts filled with a
 * pattern, as a GPU's leftover does, so a read before a write shows) */
inline void emu_launch(dim3 grid, dim3 block, const std::function<void()> &kernel, size_t smem = 0) {
    gridDim = grid, blockDim = block;
    unsigned nt = block.x * block.y * block.z, nw = (nt + 31) / 32;
    emu_block b;
    b.bar.expected = nt;
    b.warp_bar.resize(nw);
    for (unsigned w = 0; w < nw; w++) b.warp_bar[w].expected = w + 1 < nw ? 32 : nt - 32 * w;
    b.lanes.assign(nt, 0.0f);
    b.xch.assign((size_t)nt * 8, 0);
    b.dyn.assign(smem + 16, 0xA5);
    b.kernel = &kernel, b.grid = grid, b.reverse = emu_reverse_order();
    b.fibers.resize(nt);
    /* a thread's stack (reserved as touched; a kernel's frames take a few KB): AddressSanitizer clears the
     * shadow of the stack it switches to at every switch, so there it is small */
#ifdef EMU_ASAN
    const size_t stack = (size_t)64 << 10;
#else
    const size_t stack = (size_t)256 << 10;
#endif
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned i = 0;
    for (unsigned tz = 0; tz < block.z; tz++)
        for (unsigned ty = 0; ty < block.y; ty++)
            for (unsigned tx = 0; tx < block.x; tx++, i++) {
                emu_fiber &f = b.fibers[i];
                void *m = mmap(NULL, stack + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                               -1, 0);
                if (m == MAP_FAILED) {
                    perror("cuda_emu: a thread's stack");
                    abort();
                }
                mprotect(m, page, PROT_NONE); /* a guard page below: an overflow faults */
                f.stack = (char *)m + page, f.stack_bytes = stack;
                f.tid = {tx, ty, tz};
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = f.stack, f.ctx.uc_stack.ss_size = stack, f.ctx.uc_link = NULL;
                makecontext(&f.ctx, emu_thread_main, 0);
            }
    emu_cur = &b;
    int first = emu_pick(b);
    emu_go(NULL, false, first);
    for (emu_fiber &f : b.fibers) munmap((char *)f.stack - page, f.stack_bytes + page);
    emu_cur = NULL;
}

#endif
