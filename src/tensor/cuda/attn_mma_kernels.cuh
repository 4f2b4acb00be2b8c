/* attn_mma_kernels.cuh — the bf16 tensor-core attention kernels (attn_mma.cu launches them; its opening
 * comment has the algorithm). A header so the CPU tests run these very kernels under an emulation of the
 * CUDA execution model (tests/tensor/cuda_emu.h), which stands in for the seven wrappers of inline PTX
 * (mma.sync, ldmatrix ×3, cp.async and its commit and wait) with the instructions as the PTX ISA
 * describes them. */
#ifndef VLA_TENSOR_CUDA_ATTN_MMA_KERNELS_CUH
#define VLA_TENSOR_CUDA_ATTN_MMA_KERNELS_CUH

#include "tensor/cuda/attn_kernels.cuh"

#ifndef VLA_CUDA_EMU
#include <cuda_bf16.h>
#endif
#include <math.h>

#include "tensor/cuda/attn_smem.h"
#include "tensor/cuda/mma_layout.h"
#include "base/numfmt.h"

#define NW 4
#define NTH (NW * 32)
static_assert(16 * NW == VLA_ATTN_MMA_ROWS, "attn_smem.h carves a block of four 16-row warps");
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

#ifdef VLA_CUDA_EMU /* tests/tensor/cuda_emu.h: the instructions as the PTX ISA describes them */
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) { emu_mma16816(c, a, b); }
__device__ __forceinline__ void ldsm_a(uint32_t a[4], const uint16_t *s, int D, int r0, int c0, int lane) {
    emu_ldmatrix(a, 4, false, s + vla_ldsm_a_offset(lane, D, r0, c0));
}
__device__ __forceinline__ void ldsm_b_nk(uint32_t b[2], const uint16_t *s, int D, int n0, int k0, int lane) {
    emu_ldmatrix(b, 2, false, s + vla_ldsm_b_nk_offset(lane, D, n0, k0));
}
__device__ __forceinline__ void ldsm_b_kn(uint32_t b[2], const uint16_t *s, int D, int k0, int n0, int lane) {
    emu_ldmatrix(b, 2, true, s + vla_ldsm_b_kn_offset(lane, D, k0, n0));
}
#else
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Fragments from bf16 tiles in shared memory, one ldmatrix each: the registers vla_mma_load_a, _b_nk and
 * _b_kn (mma_layout.h) would read element by element, at the row addresses mma_layout.h's vla_ldsm_*_offset
 * give each lane (tested on the CPU against an emulation of the instruction). Every tile's rows are
 * 16-byte aligned (vla_tile_off's layouts, column blocks of 8). "memory": the compiler must not
 * move a read of shared memory across the barriers that publish it. */
__device__ __forceinline__ void ldsm_a(uint32_t a[4], const uint16_t *s, int D, int r0, int c0, int lane) {
    unsigned p = (unsigned)__cvta_generic_to_shared(s + vla_ldsm_a_offset(lane, D, r0, c0));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(p)
                 : "memory");
}
__device__ __forceinline__ void ldsm_b_nk(uint32_t b[2], const uint16_t *s, int D, int n0, int k0, int lane) {
    unsigned p = (unsigned)__cvta_generic_to_shared(s + vla_ldsm_b_nk_offset(lane, D, n0, k0));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(b[0]), "=r"(b[1]) : "r"(p) : "memory");
}
__device__ __forceinline__ void ldsm_b_kn(uint32_t b[2], const uint16_t *s, int D, int k0, int n0, int lane) {
    unsigned p = (unsigned)__cvta_generic_to_shared(s + vla_ldsm_b_kn_offset(lane, D, k0, n0));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(b[0]), "=r"(b[1])
                 : "r"(p)
                 : "memory");
}
#endif

/* acc[n] = X[16w + (0..15), 0..K) · Bₙ, n < NT: one warp's 16 rows of a product of two tiles (vla_tile_off's
 * layouts; X's rows K elements wide), k-steps of 16 in order from zero — each accumulator sums the same
 * products in the same order however the products of a tile are grouped around it. Bₙ is Y[y0 + 8n + (0..7),
 * 0..K)ᵀ where Y is stored [n][k] (KN false: Q·Kᵀ and the like, Y K wide), or Y[0..K, y0 + 8n + (0..7)] where
 * it is stored [k][n] (KN true: the fused dQ's dS·K, Y DY wide). */
template <int K, int NT, bool KN = false, int DY = K>
__device__ __forceinline__ void warp_product(float acc[NT][4], const uint16_t *X, const uint16_t *Y, int w, int lane,
                                             int y0 = 0) {
#pragma unroll
    for (int n = 0; n < NT; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        ldsm_a(a, X, K, 16 * w, 16 * kk, lane);
#pragma unroll
        for (int n = 0; n < NT; n++) {
            uint32_t b[2];
            if constexpr (KN) ldsm_b_kn(b, Y, DY, 16 * kk, y0 + 8 * n, lane);
            else ldsm_b_nk(b, Y, K, y0 + 8 * n, 16 * kk, lane);
            mma16816(acc[n], a, b);
        }
    }
}

/* two f32 → one register of bf16 (round to nearest even; lo in the low half) */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
#ifdef VLA_CUDA_EMU
    return vla_mma_pack_f32(lo, hi);
#else
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
#endif
}

__device__ __forceinline__ void c_to_a(uint32_t a[4], const float lo[4], const float hi[4]) {
    a[0] = pack_bf16(lo[0], lo[1]);
    a[1] = pack_bf16(lo[2], lo[3]);
    a[2] = pack_bf16(hi[0], hi[1]);
    a[3] = pack_bf16(hi[2], hi[3]);
}

/* acc[i] += S · Y[:, 8i + (0..7)] over a tile's K rows, i < ND: S the warp's 16 rows of K values in C
 * fragments (s[K / 8]), reused in registers as A operands (FA2's trick: the forward's P·V, dQ's dS·K), Y a
 * [K][D] tile (vla_tile_off's layout); k-steps of 16 in order */
template <int D, int K, int ND>
__device__ __forceinline__ void warp_product_ckn(float acc[ND][4], const float s[K / 8][4], const uint16_t *Y,
                                                 int lane) {
#pragma unroll
    for (int jj = 0; jj < K / 16; jj++) {
        uint32_t af[4];
        c_to_a(af, s[2 * jj], s[2 * jj + 1]);
#pragma unroll
        for (int i = 0; i < ND; i++) {
            uint32_t bf[2];
            ldsm_b_kn(bf, Y, D, 16 * jj, 8 * i, lane);
            mma16816(acc[i], af, bf);
        }
    }
}

/* rows [start, start + len) of head `head` of x (row stride ld) as bf16 into tile s (R rows laid out as
 * mma_layout.h's vla_tile_off says), zeros elsewhere. Every operand's f32 → bf16 here, in to_tile and in the
 * operands' copies (attention.cu, the GEMMs' operand cast) is numfmt.h's vla_nf_f32_to_bf16 — one rounding,
 * NaNs included, so every staging way gives the same bits */
template <int D, int R, int NTHR = NTH>
__device__ __forceinline__ void stage(uint16_t *s, const float *x, int64_t ld, int32_t start, int32_t len, int head,
                                      int d) {
    for (int idx = threadIdx.x; idx < R * D; idx += NTHR) {
        int r = idx / D, c = idx % D;
        float v = r < len && c < d ? x[(int64_t)(start + r) * ld + (int64_t)head * d + c] : 0.0f;
        s[vla_tile_off(D, r, c)] = vla_nf_f32_to_bf16(v);
    }
}

/* ---- asynchronous staging (the PF kernels) ------------------------------------------------------
 *
 * The kernels read their operands (template type T) from the f32 tensors, converting each element as
 * they stage it, or from bf16 copies attention.cu casts once per call (rows padded to a multiple of
 * 8 elements, zeros past d: 16-byte rows, whatever the caller's alignment), copying 16 bytes at a
 * time — the bits of the f32 staging, cast once instead of once per tile visit, half the bytes
 * moved. The prefetching kernels (PF, bf16 copies only) fetch the walked tiles (K/V in the forward
 * and dQ passes, Q/dO in the dK/dV pass) with cp.async into a raw tile in shared memory while the
 * block computes on the tile before, then copy it into the padded tile (FlashAttention-2's schedule,
 * one tensor in flight: the second tensor of tile j arrives during the first product of tile j, the
 * first tensor of tile j+1 during the second); each accumulator sums the same products in the same
 * order, so every kernel gives the same bits. */

#ifdef VLA_CUDA_EMU /* the copies queued until the wait: a read before it sees the old bytes */
__device__ __forceinline__ void cp_async16(void *dst, const void *src) { emu_cp_async(dst, src, 16); }
__device__ __forceinline__ void cp_async4(void *dst, const void *src) { emu_cp_async(dst, src, 4); }
__device__ __forceinline__ void cp_async_commit() {}
__device__ __forceinline__ void cp_async_wait_all() { emu_cp_async_wait_all(); }
#else
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void *dst, const void *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
#endif

/* issue rows [start, start + len) of head `head` of x (row stride ld, head stride dw) into raw[R][D], 16 bytes
 * a copy; rows >= len and columns >= dw are not written (to_tile zeroes them); len <= R (a plan's tile) */
template <int D, int R, typename T, int NTHR = NTH>
__device__ __forceinline__ void fetch(T *raw, const T *x, int64_t ld, int32_t start, int32_t len, int head, int dw) {
    constexpr int CE = 16 / sizeof(T);
    const int q = dw / CE;
    const T *base = x + (int64_t)start * ld + (int64_t)head * dw;
    for (int idx = threadIdx.x; idx < len * q; idx += NTHR) {
        int r = idx / q, c = (idx - r * q) * CE;
        cp_async16(raw + r * D + c, base + (int64_t)r * ld + c);
    }
}

/* n 32-bit words src[i] (i < n) into dst[i], asynchronously */
template <int NTHR = NTH>
__device__ __forceinline__ void fetch_words(void *dst, const void *src, int32_t n) {
    for (int i = threadIdx.x; i < n; i += NTHR) cp_async4((uint32_t *)dst + i, (const uint32_t *)src + i);
}

/* rows < len, columns < dw of src (row stride ld, 16-byte aligned rows; dw a multiple of 16 bytes' elements)
 * into tile s (vla_tile_off) as bf16, zeros elsewhere: f32 converted (stage()'s bits), bf16 copied — 16 bytes
 * a read; src is a raw tile (ld = D) or global memory */
template <int D, int R, typename T, int NTHR = NTH>
__device__ __forceinline__ void to_tile(uint16_t *s, const T *src, int64_t ld, int32_t len, int dw) {
    constexpr int CE = 16 / sizeof(T), NC = D / CE;
    for (int idx = threadIdx.x; idx < R * NC; idx += NTHR) {
        int r = idx / NC, c = (idx % NC) * CE;
        bool in = r < len && c < dw;
        if constexpr (sizeof(T) == 4) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (in) v = *(const float4 *)(src + (int64_t)r * ld + c);
            uint2 p;
            p.x = vla_mma_pack_f32(v.x, v.y), p.y = vla_mma_pack_f32(v.z, v.w);
            *(uint2 *)(s + vla_tile_off(D, r, c)) = p; /* 4 elements inside one 8-element chunk */
        } else {
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (in) v = *(const uint4 *)(src + (int64_t)r * ld + c);
            *(uint4 *)(s + vla_tile_off(D, r, c)) = v;
        }
    }
}

/* a tile from the tensor the kernel reads (f32, or its bf16 copy: attention.cu casts once per call) */
template <int D, int R, typename T, int NTHR = NTH>
__device__ __forceinline__ void stage_src(uint16_t *s, const T *x, int64_t ld, int32_t start, int32_t len, int head,
                                          int dw) {
    if constexpr (sizeof(T) == 4) stage<D, R, NTHR>(s, x, ld, start, len, head, dw);
    else to_tile<D, R, T, NTHR>(s, x + (int64_t)start * ld + (int64_t)head * dw, ld, len, dw);
}

/* the tensor a kernel reading T stages from: the f32 one, or its bf16 copy */
template <typename T>
__device__ __forceinline__ const T *src_of(const float *f32, const uint16_t *bf16) {
    if constexpr (sizeof(T) == 4) return f32;
    else return bf16;
}

/* The tensors a kernel stages from — the f32 ones (T = float) or their bf16 copies (T = uint16_t) — and
 * their strides: a row's head stride dw (d, or the copies' padded dp), q's and k's row strides. A k-tile's
 * source (0, or 1: a cached forward's new rows) is picked by value, not by indexing an array (which would
 * live in local memory). */
template <typename T>
struct sources {
    const T *q, *dout, *k0, *k1, *v0, *v1;
    int dw;
    int64_t ldq, ldk;
    __device__ explicit sources(const vla_attn_args &a)
        : q(src_of<T>(a.q, a.qb)), dout(src_of<T>(a.d_out, a.dob)), k0(src_of<T>(a.k[0], a.kb[0])),
          k1(src_of<T>(a.k[1], a.kb[1])), v0(src_of<T>(a.v[0], a.vb[0])), v1(src_of<T>(a.v[1], a.vb[1])),
          dw(sizeof(T) == 4 ? a.d : a.dp), ldq((int64_t)a.H * dw), ldk((int64_t)a.Hkv * dw) {}
    __device__ const T *k(int src) const { return src ? k1 : k0; }
    __device__ const T *v(int src) const { return src ? v1 : v0; }
};

/* K tile j of the plan and its key groups fetched asynchronously into raw and kgr (the PF forward's and dQ
 * pass's next tile) */
template <int D, int BK, typename T>
__device__ __forceinline__ void fetch_k_tile(T *raw, int32_t *kgr, const vla_attn_args &a, const sources<T> &in,
                                             int32_t j, int kvh) {
    const vla_attn_tile kt = a.kt[j];
    fetch<D, BK, T>(raw, in.k(kt.src), in.ldk, kt.start, kt.len, kvh, in.dw);
    if (a.group_k[kt.src]) fetch_words(kgr, a.group_k[kt.src] + kt.start, kt.len);
    cp_async_commit();
}

/* the first k-tile from j on (before end) that the group rule does not skip for q-tile qt */
__device__ __forceinline__ int32_t next_live_kt(const vla_attn_args &a, const vla_attn_tile &qt, int32_t j,
                                                int32_t end) {
    while (j < end && vla_attn_tile_class(qt, a.kt[j]) == VLA_TILE_SKIP) j++;
    return j;
}

/* A block's shared-memory regions, typed, at the offsets attn_smem.h's carve-up L gives (a region a kernel
 * does not have is empty: its pointer is where it would start) — every kernel takes its tiles from here */
template <typename T>
struct block_smem {
    T *raw;                         /* the prefetch's raw tile */
    int32_t *rawg;                  /*   its rows' groups */
    float *raw_lse, *raw_dvec;      /*   dK/dV: its query rows' lse and rowsum(dO·O) */
    uint16_t *Qs, *Os, *Ks, *Vs;    /* bf16 tiles (dO: Os) */
    int32_t *qg, *kg;               /* query and key groups */
    float *lse2, *dvr;              /* the query rows' lse (log2 domain) and rowsum(dO·O) */
    uint16_t *pts, *dsts, *dss;     /* dK/dV: Pᵀ, dSᵀ (two warp groups), dS (fused) */
    __device__ block_smem(unsigned char *smem, const vla_attn_smem &L)
        : raw((T *)(smem + L.raw)), rawg((int32_t *)(smem + L.raw_groups)), raw_lse((float *)(smem + L.raw_lse)),
          raw_dvec((float *)(smem + L.raw_dvec)), Qs((uint16_t *)(smem + L.q)), Os((uint16_t *)(smem + L.dout)),
          Ks((uint16_t *)(smem + L.k)), Vs((uint16_t *)(smem + L.v)), qg((int32_t *)(smem + L.q_groups)),
          kg((int32_t *)(smem + L.k_groups)), lse2((float *)(smem + L.lse)), dvr((float *)(smem + L.dvec)),
          pts((uint16_t *)(smem + L.pt)), dsts((uint16_t *)(smem + L.dst)), dss((uint16_t *)(smem + L.ds)) {}
};

/* ---- forward ------------------------------------------------------------------------------ */

/* PF: the K/V tiles fetched asynchronously (above); the raw tile and the next tile's key groups come
 * first in shared memory */
template <int D, int BK, bool PF, typename T>
__global__ void __launch_bounds__(NTH, 1) k_mma_fwd(vla_attn_args a) {
    constexpr int BQ = 16 * NW, NT = BK / 8, ND = D / 8;
    static_assert(BK == VLA_ATTN_MMA_BK(D), "attn_smem.h carves the tiles of VLA_ATTN_MMA_BK");
    VLA_DYN_SMEM(unsigned char, smem);
    static_assert(!PF || sizeof(T) == 2, "the prefetching kernels read the bf16 copies");
    const vla_attn_smem L = vla_attn_smem_fwd(D, PF);
    const block_smem<T> sm(smem, L);
    const int32_t S = a.q_splits > 1 ? a.q_splits : 1, part = (int32_t)(blockIdx.x % S);
    int64_t item = blockIdx.x / S;
    const vla_attn_tile qt = a.qt[a.q_order[item / a.H]];
    int h = (int)(item % a.H), kvh = h / a.rep, d = a.d;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const sources<T> in(a);
    const int dw = in.dw;
    const int64_t ldq = in.ldq, ldk = in.ldk;
    int64_t lo, hi; /* this part's k-tiles: first + [lo, hi) (the whole walk unsplit) */
    vla_attn_split_range(qt.n, S, part, &lo, &hi);
    const int32_t j_end = qt.first + (int32_t)hi;
    int32_t j = next_live_kt(a, qt, qt.first + (int32_t)lo, j_end);
    if constexpr (PF)
        if (j < j_end) fetch_k_tile<D, BK, T>(sm.raw, sm.rawg, a, in, j, kvh); /* the first live tile, while Q is staged */
    stage_src<D, BQ, T>(sm.Qs, in.q, ldq, qt.start, qt.len, h, dw);
    for (int i = threadIdx.x; i < BQ; i += NTH) sm.qg[i] = a.group_q && i < qt.len ? a.group_q[qt.start + i] : 0;
    const int r_lo = 16 * w + g, r_hi = r_lo + 8; /* this lane's two rows in the tile */
    const float sl2 = a.scale * LOG2E;
    float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
    float o[ND][4];
#pragma unroll
    for (int i = 0; i < ND; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    while (j < j_end) {
        const vla_attn_tile kt = a.kt[j];
        const int cls = vla_attn_tile_class(qt, kt);
        const int32_t jn = next_live_kt(a, qt, j + 1, j_end);
        const int32_t *gk = a.group_k[kt.src];
        if constexpr (PF) {
            cp_async_wait_all();
            __syncthreads(); /* K in raw; every warp done with the last tile's Ks, Vs and kg */
            to_tile<D, BK, T>(sm.Ks, sm.raw, D, kt.len, dw);
            for (int i = threadIdx.x; i < BK; i += NTH) sm.kg[i] = gk && i < kt.len ? sm.rawg[i] : 0;
            __syncthreads();
            fetch<D, BK, T>(sm.raw, in.v(kt.src), ldk, kt.start, kt.len, kvh, dw); /* V during Q·Kᵀ */
            cp_async_commit();
        } else {
            __syncthreads();
            stage_src<D, BK, T>(sm.Ks, in.k(kt.src), ldk, kt.start, kt.len, kvh, dw);
            stage_src<D, BK, T>(sm.Vs, in.v(kt.src), ldk, kt.start, kt.len, kvh, dw);
            for (int i = threadIdx.x; i < BK; i += NTH) sm.kg[i] = gk && i < kt.len ? gk[kt.start + i] : 0;
            __syncthreads();
        }
        float s[NT][4];
        warp_product<D, NT>(s, sm.Qs, sm.Ks, w, lane);
        float mx_lo = -INFINITY, mx_hi = -INFINITY;
        int32_t g_lo = sm.qg[r_lo], g_hi = sm.qg[r_hi];
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int col = 8 * n + 2 * t + (i & 1);
                bool ok = col < kt.len && (cls == VLA_TILE_FULL || sm.kg[col] <= (i < 2 ? g_lo : g_hi));
                float v = ok ? s[n][i] * sl2 : -INFINITY;
                s[n][i] = v;
                if (i < 2) mx_lo = fmaxf(mx_lo, v);
                else mx_hi = fmaxf(mx_hi, v);
            }
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
        float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
        float mu_lo = mn_lo == -INFINITY ? 0.0f : mn_lo, mu_hi = mn_hi == -INFINITY ? 0.0f : mn_hi;
        float c_lo = exp2f(m_lo - mu_lo), c_hi = exp2f(m_hi - mu_hi), sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
        for (int n = 0; n < NT; n++) {
            s[n][0] = exp2f(s[n][0] - mu_lo), s[n][1] = exp2f(s[n][1] - mu_lo);
            s[n][2] = exp2f(s[n][2] - mu_hi), s[n][3] = exp2f(s[n][3] - mu_hi);
            sum_lo += s[n][0] + s[n][1];
            sum_hi += s[n][2] + s[n][3];
        }
        l_lo = l_lo * c_lo + sum_lo, l_hi = l_hi * c_hi + sum_hi;
        m_lo = mn_lo, m_hi = mn_hi;
#pragma unroll
        for (int i = 0; i < ND; i++) o[i][0] *= c_lo, o[i][1] *= c_lo, o[i][2] *= c_hi, o[i][3] *= c_hi;
        if constexpr (PF) {
            cp_async_wait_all();
            __syncthreads(); /* V in raw */
            to_tile<D, BK, T>(sm.Vs, sm.raw, D, kt.len, dw);
            __syncthreads();
            if (jn < j_end) fetch_k_tile<D, BK, T>(sm.raw, sm.rawg, a, in, jn, kvh); /* the next live tile's, during P·V */
        }
        warp_product_ckn<D, BK, ND>(o, s, sm.Vs, lane); /* O += P·V */
        j = jn;
    }
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    bool in_lo = r_lo < qt.len, in_hi = r_hi < qt.len;
    int64_t row_lo = (int64_t)(qt.start + r_lo) * a.H + h, row_hi = (int64_t)(qt.start + r_hi) * a.H + h;
    /* unsplit: out = o / l (and its bf16 copy), lse; a part of a split walk (attn_plan.h, SPLIT KEYS): its
     * unnormalised o, running max and sum, for attention.cu's combine */
    const bool split = S > 1;
    float *dst = split ? a.o_part + (int64_t)part * a.q_rows * d : a.out;
    uint16_t *ready = split ? NULL : a.out_ready;
    float f_lo = split ? 1.0f : l_lo > 0.0f ? 1.0f / l_lo : 0.0f, f_hi = split ? 1.0f : l_hi > 0.0f ? 1.0f / l_hi : 0.0f;
#pragma unroll
    for (int i = 0; i < ND; i++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int c = 8 * i + 2 * t + e;
            if (c >= d) continue;
            float vlo = o[i][e] * f_lo, vhi = o[i][2 + e] * f_hi;
            if (in_lo) dst[row_lo * d + c] = vlo;
            if (in_hi) dst[row_hi * d + c] = vhi;
            if (ready && in_lo) ready[row_lo * d + c] = vla_nf_f32_to_bf16(vlo);
            if (ready && in_hi) ready[row_hi * d + c] = vla_nf_f32_to_bf16(vhi);
        }
    if (t != 0) return;
    if (split) {
        float *pm = a.m_part + (int64_t)part * a.q_rows, *pl = a.l_part + (int64_t)part * a.q_rows;
        if (in_lo) pm[row_lo] = m_lo, pl[row_lo] = l_lo;
        if (in_hi) pm[row_hi] = m_hi, pl[row_hi] = l_hi;
    } else if (a.lse) {
        if (in_lo) a.lse[row_lo] = l_lo > 0.0f ? (m_lo + log2f(l_lo)) * LN2 : -INFINITY;
        if (in_hi) a.lse[row_hi] = l_hi > 0.0f ? (m_hi + log2f(l_hi)) * LN2 : -INFINITY;
    }
}

/* ---- backward, pass 2: dQ per (q-tile of 64, head) -------------------------------------------- */

template <int D, int BK, bool PF, typename T>
__global__ void __launch_bounds__(NTH, 1) k_mma_dq(vla_attn_args a) {
    constexpr int BQ = 16 * NW, NT = BK / 8, ND = D / 8;
    static_assert(BK == VLA_ATTN_MMA_BK(D), "attn_smem.h carves the tiles of VLA_ATTN_MMA_BK");
    VLA_DYN_SMEM(unsigned char, smem);
    static_assert(!PF || sizeof(T) == 2, "the prefetching kernels read the bf16 copies");
    const vla_attn_smem L = vla_attn_smem_dq(D, PF);
    const block_smem<T> sm(smem, L);
    int64_t item = blockIdx.x;
    const vla_attn_tile qt = a.qt[a.q_order[item / a.H]];
    int h = (int)(item % a.H), kvh = h / a.rep, d = a.d;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const sources<T> in(a);
    const int dw = in.dw;
    const int64_t ldq = in.ldq, ldk = in.ldk;
    const int32_t j_end = qt.first + qt.n, *gk = a.group_k[0];
    int32_t j = next_live_kt(a, qt, qt.first, j_end);
    if constexpr (PF)
        if (j < j_end) fetch_k_tile<D, BK, T>(sm.raw, sm.rawg, a, in, j, kvh); /* the first live tile, while Q, dO are staged */
    stage_src<D, BQ, T>(sm.Qs, in.q, ldq, qt.start, qt.len, h, dw);
    stage_src<D, BQ, T>(sm.Os, in.dout, ldq, qt.start, qt.len, h, dw);
    for (int i = threadIdx.x; i < BQ; i += NTH) {
        bool in = i < qt.len;
        int64_t row = (int64_t)(qt.start + i) * a.H + h;
        sm.qg[i] = a.group_q && in ? a.group_q[qt.start + i] : 0;
        sm.lse2[i] = in ? a.lse_in[row] * LOG2E : -INFINITY;
        sm.dvr[i] = in ? a.dvec[row] : 0.0f;
    }
    const int r_lo = 16 * w + g, r_hi = r_lo + 8;
    const float sl2 = a.scale * LOG2E;
    float acc[ND][4];
#pragma unroll
    for (int i = 0; i < ND; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    while (j < j_end) {
        const vla_attn_tile kt = a.kt[j];
        const int cls = vla_attn_tile_class(qt, kt);
        const int32_t jn = next_live_kt(a, qt, j + 1, j_end);
        float s[NT][4], dp[NT][4];
        if constexpr (PF) {
            /* S = Q·Kᵀ while V arrives, then dP = dO·Vᵀ while the next K does (the plain kernel below
             * computes the same two products once both tiles are staged) */
            cp_async_wait_all();
            __syncthreads(); /* K in raw; every warp done with the last tile */
            to_tile<D, BK, T>(sm.Ks, sm.raw, D, kt.len, dw);
            for (int i = threadIdx.x; i < BK; i += NTH) sm.kg[i] = gk && i < kt.len ? sm.rawg[i] : 0;
            __syncthreads();
            fetch<D, BK, T>(sm.raw, in.v(0), ldk, kt.start, kt.len, kvh, dw);
            cp_async_commit();
            warp_product<D, NT>(s, sm.Qs, sm.Ks, w, lane);
            cp_async_wait_all();
            __syncthreads(); /* V in raw */
            to_tile<D, BK, T>(sm.Vs, sm.raw, D, kt.len, dw);
            __syncthreads();
            if (jn < j_end) fetch_k_tile<D, BK, T>(sm.raw, sm.rawg, a, in, jn, kvh); /* the next live tile's, during dP */
            warp_product<D, NT>(dp, sm.Os, sm.Vs, w, lane);
        } else {
            __syncthreads();
            stage_src<D, BK, T>(sm.Ks, in.k(0), ldk, kt.start, kt.len, kvh, dw);
            stage_src<D, BK, T>(sm.Vs, in.v(0), ldk, kt.start, kt.len, kvh, dw);
            for (int i = threadIdx.x; i < BK; i += NTH) sm.kg[i] = gk && i < kt.len ? gk[kt.start + i] : 0;
            __syncthreads();
            warp_product<D, NT>(s, sm.Qs, sm.Ks, w, lane);
            warp_product<D, NT>(dp, sm.Os, sm.Vs, w, lane);
        }
        int32_t g_lo = sm.qg[r_lo], g_hi = sm.qg[r_hi];
        float L_lo = sm.lse2[r_lo], L_hi = sm.lse2[r_hi], D_lo = sm.dvr[r_lo], D_hi = sm.dvr[r_hi];
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int col = 8 * n + 2 * t + (i & 1);
                bool lo = i < 2;
                float L = lo ? L_lo : L_hi;
                bool ok = col < kt.len && L != -INFINITY && (cls == VLA_TILE_FULL || sm.kg[col] <= (lo ? g_lo : g_hi));
                float p = ok ? exp2f(s[n][i] * sl2 - L) : 0.0f;
                s[n][i] = p * (dp[n][i] - (lo ? D_lo : D_hi)); /* dS */
            }
        warp_product_ckn<D, BK, ND>(acc, s, sm.Ks, lane); /* dQ += dS·K */
        j = jn;
    }
    bool in_lo = r_lo < qt.len, in_hi = r_hi < qt.len;
    int64_t row_lo = (int64_t)(qt.start + r_lo) * a.H + h, row_hi = (int64_t)(qt.start + r_hi) * a.H + h;
#pragma unroll
    for (int i = 0; i < ND; i++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int c = 8 * i + 2 * t + e;
            if (c >= d) continue;
            if (in_lo) a.dq[row_lo * d + c] += a.scale * acc[i][e];
            if (in_hi) a.dq[row_hi * d + c] += a.scale * acc[i][2 + e];
        }
}

/* ---- the fused backward's dQ: dQ[:, c0 + NC) += scale · dS·K, atomically ------------------------- */

/* p[0] += x, p[1] += y, each atomically: one vector atomic on sm_90 (p 8-byte aligned, which it faults
 * without: the emulation checks it), else two */
__device__ __forceinline__ void atomic_add2(float *p, float x, float y) {
#if defined(VLA_CUDA_EMU)
    emu_check_aligned(p, 8, "a float2 atomicAdd");
#endif
#if !defined(VLA_CUDA_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float2 *)p, make_float2(x, y));
#else
    atomicAdd(p, x);
    atomicAdd(p + 1, y);
#endif
}

/* One (k-tile, item) pair's contribution to dQ: dS (the block's [BQ queries][64 keys], bf16 in dss,
 * vla_tile_off(64, ·)) times the k-tile's K rows (Ks, [64][D]) over NC columns from c0, added to dq with one
 * f32 atomic per element. WN warps share the product (w < WN): warp w takes the 16 query rows w % (BQ / 16)
 * and the w / (BQ / 16)-th share of the columns, G column tiles of 8 at a time (the accumulators of G tiles
 * live at once beside the dK/dV ones). */
template <int D, int BQ, int NC, int WN>
__device__ __forceinline__ void fused_dq_add(const vla_attn_args &a, const uint16_t *dss, const uint16_t *Ks,
                                             const vla_attn_tile &qt, int h, int c0, int w, int lane) {
    constexpr int RB = BQ / 16, WPR = WN / RB, NPW = NC / 8 / WPR;
    constexpr int G = NPW % 4 == 0 ? 4 : NPW % 3 == 0 ? 3 : NPW % 2 == 0 ? 2 : NPW;
    static_assert(WN % RB == 0 && (NC / 8) % WPR == 0, "the warps split dQ's rows and columns evenly");
    const int mb = w % RB, n0 = (w / RB) * NPW, g = lane >> 2, t = lane & 3, d = a.d;
    const int r_lo = 16 * mb + g, r_hi = r_lo + 8;
    const bool in_lo = r_lo < qt.len, in_hi = r_hi < qt.len;
    const int64_t row_lo = (int64_t)(qt.start + r_lo) * a.H + h, row_hi = (int64_t)(qt.start + r_hi) * a.H + h;
#pragma unroll
    for (int nc = 0; nc < NPW; nc += G) {
        float acc[G][4];
        warp_product<VLA_ATTN_MMA_ROWS, G, true, D>(acc, dss, Ks, mb, lane, c0 + 8 * (n0 + nc));
#pragma unroll
        for (int i = 0; i < G; i++) {
            const int c = c0 + 8 * (n0 + nc + i) + 2 * t; /* even: 8-byte aligned where dq_pairs says */
            if (a.dq_pairs && c < d) {
                if (in_lo) atomic_add2(a.dq + row_lo * d + c, a.scale * acc[i][0], a.scale * acc[i][1]);
                if (in_hi) atomic_add2(a.dq + row_hi * d + c, a.scale * acc[i][2], a.scale * acc[i][3]);
                continue;
            }
#pragma unroll
            for (int e = 0; e < 2; e++) {
                if (c + e >= d) continue;
                if (in_lo) atomicAdd(a.dq + row_lo * d + c + e, a.scale * acc[i][e]);
                if (in_hi) atomicAdd(a.dq + row_hi * d + c + e, a.scale * acc[i][2 + e]);
            }
        }
    }
}

/* ---- backward, pass 1: dK, dV per (k-tile of 64 keys, kv head) ------------------------------------ */

/* A block is GR = D / DC groups of four warps (attn_smem.h, VLA_ATTN_MMA_KV_WARPS): warp w owns the 16 keys
 * 16·(w % 4) and, of dK and dV, the DC columns of its group w / 4. One group (head dims ≤ 128) computes Sᵀ
 * and dPᵀ of all BQ queries and keeps Pᵀ and dSᵀ in registers as the A operands of dV += Pᵀ·dO and
 * dK += dSᵀ·Q (FA2's trick); two (head dim 256, whose dK/dV accumulators fill a warp's registers at 128
 * columns) split the queries of Sᵀ and dPᵀ between them and share Pᵀ and dSᵀ through shared memory — the
 * same products, rounded to bf16 once either way, so the same bits.
 * PF: the Q/dO tiles fetched asynchronously (above), with the next item's query groups, lse and
 * rowsum(dO·O) rows; the raw tile and those rows come first in shared memory.
 * DQ (the fused backward, VLA_CUDA_ATTN_BACKWARD=fused): dQ too — each item's dS goes to shared memory and
 * fused_dq_add adds dS·K to dQ atomically, so no dQ pass recomputes S and dP: five products per (k-tile,
 * q-tile) instead of seven (FlashAttention-2's backward), at the price of atomics whose order varies from
 * run to run */
template <int D, int BQ, int DC, bool PF, typename T, bool DQ = false>
__global__ void __launch_bounds__(32 * VLA_ATTN_MMA_KV_WARPS(D), 1) k_mma_dkdv(vla_attn_args a) {
    constexpr int GR = D / DC, WN = NW * GR, THREADS = 32 * WN;
    constexpr int BK = 16 * NW, NT = BQ / 8 / GR, NDC = DC / 8;
    static_assert(BQ == VLA_ATTN_MMA_KV_BQ(D), "attn_smem.h carves the tiles of VLA_ATTN_MMA_KV_BQ");
    static_assert(WN == VLA_ATTN_MMA_KV_WARPS(D) && (GR == 1 || BQ % (16 * GR) == 0), "attn_smem.h's warps");
    static_assert(BK == VLA_ATTN_MMA_ROWS, "dS's tile has a block's 64 keys as columns");
    VLA_DYN_SMEM(unsigned char, smem);
    static_assert(!PF || sizeof(T) == 2, "the prefetching kernels read the bf16 copies");
    const vla_attn_smem L = vla_attn_smem_dkdv(D, PF, DQ);
    const block_smem<T> sm(smem, L);
    int64_t item = blockIdx.x / a.kv_splits;
    int32_t part = (int32_t)(blockIdx.x % a.kv_splits);
    const vla_attn_tile kt = a.kt[a.k_order[item / a.Hkv]];
    int kvh = (int)(item % a.Hkv), d = a.d;
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int kw = w % NW, grp = w / NW, c0 = grp * DC, q0 = grp * (BQ / GR); /* its keys, columns, queries */
    const sources<T> in(a);
    const int dw = in.dw;
    const int64_t ldq = in.ldq, ldk = in.ldk;
    int64_t j_lo, j_hi; /* this part's (query head, q-tile) items: head j / n, q-tile first + j % n */
    vla_attn_split_range((int64_t)a.rep * kt.n, a.kv_splits, part, &j_lo, &j_hi);
    /* the first item from j on (before j_hi) whose q-tile the group rule does not skip */
    auto next_live = [&](int64_t j) {
        while (j < j_hi && vla_attn_tile_class(a.qt[kt.first + (int32_t)(j % kt.n)], kt) == VLA_TILE_SKIP) j++;
        return j;
    };
    /* item j's Q rows and its query rows' groups, lse and rowsum(dO·O), asynchronously */
    auto fetch_q = [&](int64_t j) {
        const vla_attn_tile qn = a.qt[kt.first + (int32_t)(j % kt.n)];
        int hn = kvh * a.rep + (int)(j / kt.n);
        fetch<D, BQ, T, THREADS>(sm.raw, in.q, ldq, qn.start, qn.len, hn, dw);
        if (a.group_q) fetch_words<THREADS>(sm.rawg, a.group_q + qn.start, qn.len);
        for (int i = threadIdx.x; i < qn.len; i += THREADS) {
            int64_t row = (int64_t)(qn.start + i) * a.H + hn;
            cp_async4(sm.raw_lse + i, a.lse_in + row);
            cp_async4(sm.raw_dvec + i, a.dvec + row);
        }
        cp_async_commit();
    };
    int64_t j = next_live(j_lo);
    if constexpr (PF)
        if (j < j_hi) fetch_q(j); /* while K and V are staged */
    stage_src<D, BK, T, THREADS>(sm.Ks, in.k(0), ldk, kt.start, kt.len, kvh, dw);
    stage_src<D, BK, T, THREADS>(sm.Vs, in.v(0), ldk, kt.start, kt.len, kvh, dw);
    for (int i = threadIdx.x; i < BK; i += THREADS) sm.kg[i] = a.group_k[0] && i < kt.len ? a.group_k[0][kt.start + i] : 0;
    const int r_lo = 16 * kw + g, r_hi = r_lo + 8; /* this lane's two key rows */
    const float sl2 = a.scale * LOG2E;
    float dk[NDC][4], dv[NDC][4];
#pragma unroll
    for (int i = 0; i < NDC; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[i][e] = dv[i][e] = 0.0f;
    while (j < j_hi) {
        int h = kvh * a.rep + (int)(j / kt.n);
        const vla_attn_tile qt = a.qt[kt.first + (int32_t)(j % kt.n)];
        const int cls = vla_attn_tile_class(qt, kt);
        const int64_t jn = next_live(j + 1);
        float st[NT][4], dpt[NT][4]; /* Sᵀ and dPᵀ: rows are keys, columns queries q0 + (0 .. BQ / GR) */
        if constexpr (PF) {
            /* Sᵀ = K·Qᵀ while dO arrives, then dPᵀ = V·dOᵀ while the next item's Q does (the plain kernel
             * below computes the same two products once both tiles are staged) */
            cp_async_wait_all();
            __syncthreads(); /* Q and its rows in raw; every warp done with the last item */
            to_tile<D, BQ, T, THREADS>(sm.Qs, sm.raw, D, qt.len, dw);
            for (int i = threadIdx.x; i < BQ; i += THREADS) {
                bool in = i < qt.len;
                sm.qg[i] = a.group_q && in ? sm.rawg[i] : 0;
                sm.lse2[i] = in ? sm.raw_lse[i] * LOG2E : -INFINITY;
                sm.dvr[i] = in ? sm.raw_dvec[i] : 0.0f;
            }
            __syncthreads();
            fetch<D, BQ, T, THREADS>(sm.raw, in.dout, ldq, qt.start, qt.len, h, dw);
            cp_async_commit();
            warp_product<D, NT>(st, sm.Ks, sm.Qs, kw, lane, q0);
            cp_async_wait_all();
            __syncthreads(); /* dO in raw */
            to_tile<D, BQ, T, THREADS>(sm.Os, sm.raw, D, qt.len, dw);
            __syncthreads();
            if (jn < j_hi) fetch_q(jn);
            warp_product<D, NT>(dpt, sm.Vs, sm.Os, kw, lane, q0);
        } else {
            __syncthreads();
            stage_src<D, BQ, T, THREADS>(sm.Qs, in.q, ldq, qt.start, qt.len, h, dw);
            stage_src<D, BQ, T, THREADS>(sm.Os, in.dout, ldq, qt.start, qt.len, h, dw);
            for (int i = threadIdx.x; i < BQ; i += THREADS) {
                bool in = i < qt.len;
                int64_t row = (int64_t)(qt.start + i) * a.H + h;
                sm.qg[i] = a.group_q && in ? a.group_q[qt.start + i] : 0;
                sm.lse2[i] = in ? a.lse_in[row] * LOG2E : -INFINITY;
                sm.dvr[i] = in ? a.dvec[row] : 0.0f;
            }
            __syncthreads();
            warp_product<D, NT>(st, sm.Ks, sm.Qs, kw, lane, q0);
            warp_product<D, NT>(dpt, sm.Vs, sm.Os, kw, lane, q0);
        }
        int32_t gk_lo = sm.kg[r_lo], gk_hi = sm.kg[r_hi];
        bool kin_lo = r_lo < kt.len, kin_hi = r_hi < kt.len;
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int q = q0 + 8 * n + 2 * t + (i & 1);
                bool lo = i < 2;
                bool ok = q < qt.len && (lo ? kin_lo : kin_hi) && sm.lse2[q] != -INFINITY &&
                          (cls == VLA_TILE_FULL || (lo ? gk_lo : gk_hi) <= sm.qg[q]);
                float p = ok ? exp2f(st[n][i] * sl2 - sm.lse2[q]) : 0.0f;
                st[n][i] = p;                        /* Pᵀ */
                dpt[n][i] = p * (dpt[n][i] - sm.dvr[q]); /* dSᵀ */
            }
        /* the fused backward's dS: this lane's dSᵀ element (n, i) — key row, query column — to dS's (query, key),
         * bf16 as c_to_a rounds it */
        auto put_ds = [&](int n, int i) {
            sm.dss[vla_tile_off(VLA_ATTN_MMA_ROWS, q0 + 8 * n + 2 * t + (i & 1), i < 2 ? r_lo : r_hi)] =
                vla_nf_f32_to_bf16(dpt[n][i]);
        };
        if constexpr (GR > 1) { /* the groups' halves of Pᵀ and dSᵀ through shared memory, bf16 as c_to_a rounds them */
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    int off = vla_tile_off(BQ, i < 2 ? r_lo : r_hi, q0 + 8 * n + 2 * t + (i & 1));
                    sm.pts[off] = vla_nf_f32_to_bf16(st[n][i]);
                    sm.dsts[off] = vla_nf_f32_to_bf16(dpt[n][i]);
                    if constexpr (DQ) put_ds(n, i); /* and dS for dQ, published by the same barrier */
                }
            __syncthreads();
        }
        /* dV += Pᵀ·dO, dK += dSᵀ·Q: Pᵀ and dSᵀ as A operands, from registers (one group) or shared memory */
#pragma unroll
        for (int jj = 0; jj < BQ / 16; jj++) {
            uint32_t ap[4], as[4];
            if constexpr (GR == 1) {
                c_to_a(ap, st[2 * jj], st[2 * jj + 1]);
                c_to_a(as, dpt[2 * jj], dpt[2 * jj + 1]);
            } else {
                ldsm_a(ap, sm.pts, BQ, 16 * kw, 16 * jj, lane);
                ldsm_a(as, sm.dsts, BQ, 16 * kw, 16 * jj, lane);
            }
#pragma unroll
            for (int i = 0; i < NDC; i++) {
                uint32_t bo[2], bq[2];
                ldsm_b_kn(bo, sm.Os, D, 16 * jj, c0 + 8 * i, lane);
                ldsm_b_kn(bq, sm.Qs, D, 16 * jj, c0 + 8 * i, lane);
                mma16816(dv[i], ap, bo);
                mma16816(dk[i], as, bq);
            }
        }
        if constexpr (DQ) {
            if constexpr (GR == 1) { /* (two groups wrote dS beside Pᵀ and dSᵀ) */
                if constexpr (VLA_ATTN_DS_IN_DOUT(D)) __syncthreads(); /* every warp done reading dO */
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int i = 0; i < 4; i++) put_ds(n, i);
                __syncthreads();
            }
            fused_dq_add<D, BQ, D, WN>(a, sm.dss, sm.Ks, qt, h, 0, w, lane);
        }
        j = jn;
    }
    bool in_lo = r_lo < kt.len, in_hi = r_hi < kt.len;
    int64_t row_lo = (int64_t)(kt.start + r_lo) * a.Hkv + kvh, row_hi = (int64_t)(kt.start + r_hi) * a.Hkv + kvh;
    bool split = a.kv_splits > 1;
    float *odk = split ? a.dk_part + part * a.part_stride : a.dk, *odv = split ? a.dv_part + part * a.part_stride : a.dv;
#pragma unroll
    for (int i = 0; i < NDC; i++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int c = c0 + 8 * i + 2 * t + e;
            if (c >= d) continue;
            if (in_lo) {
                float gk = a.scale * dk[i][e], gv = dv[i][e];
                if (split) odk[row_lo * d + c] = gk, odv[row_lo * d + c] = gv;
                else odk[row_lo * d + c] += gk, odv[row_lo * d + c] += gv;
            }
            if (in_hi) {
                float gk = a.scale * dk[i][2 + e], gv = dv[i][2 + e];
                if (split) odk[row_hi * d + c] = gk, odv[row_hi * d + c] = gv;
                else odk[row_hi * d + c] += gk, odv[row_hi * d + c] += gv;
            }
        }
}

static constexpr int bk_of(int D) { return VLA_ATTN_MMA_BK(D); }
static constexpr int kv_bq_of(int D) { return VLA_ATTN_MMA_KV_BQ(D); }
static constexpr int dc_of(int D) { return VLA_ATTN_MMA_KV_DC(D); }

#endif
