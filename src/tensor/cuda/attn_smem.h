/* attn_smem.h — the tiles of the bf16 attention kernels (attn_mma.cu) and how each kernel's
 * shared memory is carved, written once: the kernels take their regions' addresses from these
 * offsets and the launches their sizes, so the two cannot disagree. Until 2026-12-07 each kernel
 * carved its memory by pointer arithmetic and its launch summed the same sizes again by hand.
 * tests/tensor/test_mma_layout.c checks every instantiation on the CPU: each region where the
 * instructions that touch it need it (16 bytes for ldmatrix and cp.async), none overlapping, all
 * within the block's size, the size within the per-block limit, and the sizes the occupancy
 * reasoning of docs/cuda.md ("Staging") quotes. */
#ifndef VLA_TENSOR_CUDA_ATTN_SMEM_H
#define VLA_TENSOR_CUDA_ATTN_SMEM_H

#include "base/hd.h"
#include "tensor/cuda/mma_layout.h"

/* Tiles, by padded head dim D (16, 32, 48, 64, 80, 128, 256). A block is four warps of 16 rows. */
#define VLA_ATTN_MMA_ROWS 64                               /* a block's own rows: queries (fwd, dQ), keys (dK/dV) */
#define VLA_ATTN_MMA_BK(D) ((D) <= 128 ? 64 : 32)          /* keys per walked tile, forward and dQ */
#define VLA_ATTN_MMA_KV_BQ(D) ((D) <= 64 ? 64 : 32)        /* queries per walked tile, dK/dV */
#define VLA_ATTN_MMA_KV_DC(D) ((D) <= 128 ? (D) : 128)     /* dK/dV columns per group of four warps */
/* A dK/dV block is D / DC groups of four warps: head dim 256 two, each owning half the columns of dK and
 * dV (their accumulators fill the registers) and computing half the queries of Sᵀ and dPᵀ, which the
 * groups share through shared memory as Pᵀ and dSᵀ (until 2026-12-07 two blocks each computed all of Sᵀ
 * and dPᵀ for their half of the columns) */
#define VLA_ATTN_MMA_KV_WARPS(D) (4 * ((D) / VLA_ATTN_MMA_KV_DC(D)))
/* the fused backward's dS tile ([queries][64 keys]) takes the dO tile's bytes once dV's product has read
 * them: a dO tile of 64 columns or more holds it, in a block of one warp group (with two, the other group
 * may still be reading dO) */
#define VLA_ATTN_DS_IN_DOUT(D) ((D) >= 64 && VLA_ATTN_MMA_KV_WARPS(D) == 4)

/* Byte offsets from the start of a block's dynamic shared memory. A region a kernel does not have
 * (the prefetch's when it does not prefetch, dO and the rows' statistics in the forward) is empty:
 * its offset is where it would start, its size 0. */
typedef struct {
    int raw;          /* prefetch: the next walked tile as cp.async lands it, bf16 [rows][D], unswizzled */
    int raw_groups;   /*   its rows' groups (int32) */
    int raw_lse;      /*   dK/dV: its query rows' log-sum-exp (f32) */
    int raw_dvec;     /*   dK/dV: its query rows' rowsum(dO·O) (f32) */
    int q, dout, k, v; /* bf16 tiles, rows VLA_TILE_LD(D) elements apart (mma_layout.h) */
    int q_groups, k_groups; /* int32 per tile row */
    int lse, dvec;    /* f32 per query row (the backward passes) */
    int ds;           /* dK/dV with dQ fused: dS, bf16 [queries][64 keys] (vla_tile_off(64, ·)); the dO tile's
                       * bytes where those hold it (VLA_ATTN_DS_IN_DOUT), else a region of its own */
    int pt, dst;      /* dK/dV with two warp groups: Pᵀ and dSᵀ, bf16 [64 keys][queries] (vla_tile_off(BQ, ·)) */
    int bytes;        /* the block's dynamic shared memory */
} vla_attn_smem;

/* the next region: 16-byte aligned (every region's size is a multiple of 16 in every kernel, so the
 * alignment adds nothing; it keeps a future odd-sized region from misaligning the tiles after it) */
VLA_HD int vla_attn_smem_take(int *at, int bytes) {
    int off = (*at + 15) & ~15;
    *at = off + bytes;
    return off;
}

VLA_HD int vla_attn_smem_tile_bytes(int D, int rows) { return rows * VLA_TILE_LD(D) * 2; }

/* The passes whose block owns 64 query rows and walks K/V tiles — the forward, and dQ (backward) with dO,
 * the rows' lse and rowsum(dO·O) too: [raw K or V tile, its key groups]? Q [dO] K V, query groups, key
 * groups[, lse, rowsum(dO·O)] */
VLA_HD vla_attn_smem vla_attn_smem_q_walk(int D, int prefetch, int backward) {
    const int BQ = VLA_ATTN_MMA_ROWS, BK = VLA_ATTN_MMA_BK(D), pf = prefetch ? 1 : 0, bw = backward ? 1 : 0;
    vla_attn_smem L;
    int at = 0;
    L.raw = vla_attn_smem_take(&at, pf * BK * D * 2);
    L.raw_groups = vla_attn_smem_take(&at, pf * BK * 4);
    L.raw_lse = L.raw_dvec = vla_attn_smem_take(&at, 0);
    L.q = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BQ));
    L.dout = vla_attn_smem_take(&at, bw * vla_attn_smem_tile_bytes(D, BQ));
    L.k = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BK));
    L.v = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BK));
    L.q_groups = vla_attn_smem_take(&at, BQ * 4);
    L.k_groups = vla_attn_smem_take(&at, BK * 4);
    L.lse = vla_attn_smem_take(&at, bw * BQ * 4);
    L.dvec = vla_attn_smem_take(&at, bw * BQ * 4);
    L.ds = L.pt = L.dst = vla_attn_smem_take(&at, 0);
    L.bytes = at;
    return L;
}
VLA_HD vla_attn_smem vla_attn_smem_fwd(int D, int prefetch) { return vla_attn_smem_q_walk(D, prefetch, 0); }
VLA_HD vla_attn_smem vla_attn_smem_dq(int D, int prefetch) { return vla_attn_smem_q_walk(D, prefetch, 1); }

/* dK/dV: [raw Q or dO tile, its query groups, lse, rowsum(dO·O)]? K V Q dO, key groups, query groups,
 * lse, rowsum(dO·O)[, Pᵀ dSᵀ: two warp groups][, dS: fused_dq and no dO tile to hold it] */
VLA_HD vla_attn_smem vla_attn_smem_dkdv(int D, int prefetch, int fused_dq) {
    const int BK = VLA_ATTN_MMA_ROWS, BQ = VLA_ATTN_MMA_KV_BQ(D), pf = prefetch ? 1 : 0;
    vla_attn_smem L;
    int at = 0;
    L.raw = vla_attn_smem_take(&at, pf * BQ * D * 2);
    L.raw_groups = vla_attn_smem_take(&at, pf * BQ * 4);
    L.raw_lse = vla_attn_smem_take(&at, pf * BQ * 4);
    L.raw_dvec = vla_attn_smem_take(&at, pf * BQ * 4);
    L.k = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BK));
    L.v = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BK));
    L.q = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BQ));
    L.dout = vla_attn_smem_take(&at, vla_attn_smem_tile_bytes(D, BQ));
    L.k_groups = vla_attn_smem_take(&at, BK * 4);
    L.q_groups = vla_attn_smem_take(&at, BQ * 4);
    L.lse = vla_attn_smem_take(&at, BQ * 4);
    L.dvec = vla_attn_smem_take(&at, BQ * 4);
    const int groups = VLA_ATTN_MMA_KV_WARPS(D) / 4 > 1 ? 1 : 0;
    L.pt = vla_attn_smem_take(&at, groups * vla_attn_smem_tile_bytes(BQ, BK));
    L.dst = vla_attn_smem_take(&at, groups * vla_attn_smem_tile_bytes(BQ, BK));
    L.ds = fused_dq && VLA_ATTN_DS_IN_DOUT(D) ? L.dout
                                              : vla_attn_smem_take(&at, fused_dq ? vla_attn_smem_tile_bytes(64, BQ) : 0);
    L.bytes = at;
    return L;
}

#endif
