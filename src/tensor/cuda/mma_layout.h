/* mma_layout.h — where the elements of a warp's tensor-core fragments live:
 * the register layouts of PTX `mma.sync.aligned.m16n8k16.row.col.f32.bf16.
 * bf16.f32` (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
 * type"), the element-wise loads of fragments from bf16 tiles in shared
 * memory, and the row addresses that make ldmatrix load the same fragments —
 * what the CUDA attention kernels (tensor/cuda/attn_mma.cu) use.
 *
 * Lane l of the warp is group g = l / 4, thread-in-group t = l % 4.
 *   A (16×16, row-major): 4 registers of 2 bf16; element i (0..7) is at
 *     row g + 8·((i/2) % 2), column 2t + i % 2 + 8·(i / 4).
 *   B (16×8, "col": k × n): 2 registers; element i (0..3) is at
 *     k = 2t + i % 2 + 8·(i / 2), n = g.
 *   C, D (16×8 f32): 4 floats; element i at row g + 8·(i / 2), col 2t + i % 2.
 * A register holds its two elements lower index in the low 16 bits.
 *
 * The accumulator of S = Q·Kᵀ over 16 keys (two C tiles side by side) is,
 * element for element, the A fragment of P for the next product P·V:
 * vla_mma_c_to_a (FlashAttention-2's register reuse). Everything here is
 * plain arithmetic, compiled for the host too, so tests/tensor/test_mma_layout.c
 * checks it against an emulated mma built from the PTX tables. */
#ifndef VLA_TENSOR_MMA_LAYOUT_H
#define VLA_TENSOR_MMA_LAYOUT_H

#include <stdint.h>

#include "base/hd.h"
#include "base/numfmt.h"

VLA_HD int vla_mma_a_row(int lane, int i) { return (lane >> 2) + 8 * ((i >> 1) & 1); }
VLA_HD int vla_mma_a_col(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 2); }
VLA_HD int vla_mma_b_k(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 1); }
VLA_HD int vla_mma_b_n(int lane, int i) { return lane >> 2; }
VLA_HD int vla_mma_c_row(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
VLA_HD int vla_mma_c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }

/* two bf16 (lo, hi) in one register */
VLA_HD uint32_t vla_mma_pack2(uint16_t lo, uint16_t hi) { return (uint32_t)lo | ((uint32_t)hi << 16); }
VLA_HD uint32_t vla_mma_pack_f32(float lo, float hi) {
    return vla_mma_pack2(vla_nf_f32_to_bf16(lo), vla_nf_f32_to_bf16(hi));
}

/* s[i], s[i + 1] (i even, s 4-byte aligned) as one register */
VLA_HD uint32_t vla_mma_pair(const uint16_t *s, int i) {
#ifdef __CUDA_ARCH__
    return *(const uint32_t *)(s + i);
#else
    return vla_mma_pack2(s[i], s[i + 1]);
#endif
}

/* A fragment of the 16×16 block at (r0, c0) of a row-major bf16 tile with row stride ld (even). */
VLA_HD void vla_mma_load_a(uint32_t a[4], const uint16_t *s, int ld, int r0, int c0, int lane) {
    int g = lane >> 2, t = lane & 3;
    a[0] = vla_mma_pair(s, (r0 + g) * ld + c0 + 2 * t);
    a[1] = vla_mma_pair(s, (r0 + g + 8) * ld + c0 + 2 * t);
    a[2] = vla_mma_pair(s, (r0 + g) * ld + c0 + 2 * t + 8);
    a[3] = vla_mma_pair(s, (r0 + g + 8) * ld + c0 + 2 * t + 8);
}

/* B fragment of B[k][n] = X[n0 + n][k0 + k] for X row-major [n][k] (a K or V
 * tile read as Kᵀ: the product contracts over X's columns). */
VLA_HD void vla_mma_load_b_nk(uint32_t b[2], const uint16_t *s, int ld, int n0, int k0, int lane) {
    int g = lane >> 2, t = lane & 3;
    b[0] = vla_mma_pair(s, (n0 + g) * ld + k0 + 2 * t);
    b[1] = vla_mma_pair(s, (n0 + g) * ld + k0 + 2 * t + 8);
}

/* B fragment of B[k][n] = X[k0 + k][n0 + n] for X row-major [k][n] (V in P·V:
 * the product contracts over X's rows). */
VLA_HD void vla_mma_load_b_kn(uint32_t b[2], const uint16_t *s, int ld, int k0, int n0, int lane) {
    int g = lane >> 2, t = lane & 3;
    const uint16_t *col = s + n0 + g;
    b[0] = vla_mma_pack2(col[(k0 + 2 * t) * ld], col[(k0 + 2 * t + 1) * ld]);
    b[1] = vla_mma_pack2(col[(k0 + 2 * t + 8) * ld], col[(k0 + 2 * t + 9) * ld]);
}

/* ldmatrix (PTX ISA, "ldmatrix", .m8n8 .b16): lane l supplies the address of row l % 8 of 8×8 matrix
 * l / 8 (.x4: four matrices; .x2: two, lanes 0–15's addresses used); register m of lane l receives
 * matrix m's row l / 4, columns 2·(l % 4) and 2·(l % 4) + 1 — with .trans its column l / 4, rows
 * 2·(l % 4) and 2·(l % 4) + 1 — the lower index in the low half. Each address must be 16-byte
 * aligned. The offsets below (elements from the tile's start) make the registers the fragments the
 * loads above make, one instruction for two or four of their reads; tests/tensor/test_mma_layout.c
 * emulates ldmatrix from that description and compares. */

/* Where element (r, c) of a bf16 tile of D columns lives in shared memory (elements from the tile's
 * start). Rows of a multiple of 64 elements (D = 64, 128, 256: eight or more 16-byte chunks) are stored
 * unpadded and swizzled — chunk c / 8 of row r at chunk (c / 8) ^ (r % 8) — so the eight consecutive rows
 * an ldmatrix matrix reads, at one logical chunk, sit in eight distinct chunks of a 128-byte span: all 32
 * banks, no conflict. Other widths (16, 32, 48, 80: fewer chunks, or not a power of two's worth) are
 * padded to D + 8 elements, whose 16-byte shift per row does the same. Eight consecutive elements of a
 * row from a multiple of 8 stay together either way (one 16-byte store, one ldmatrix row). */
#define VLA_TILE_LD(D) ((D) % 64 ? (D) + 8 : (D))
VLA_HD int vla_tile_off(int D, int r, int c) {
    if (D % 64) return r * (D + 8) + c;
    return r * D + ((((c >> 3) ^ (r & 7)) << 3) | (c & 7));
}

/* .x4 → vla_mma_load_a's fragment of the tile (D columns, vla_tile_off's layout): matrices at (r0, c0),
 * (r0 + 8, c0), (r0, c0 + 8), (r0 + 8, c0 + 8); r0, c0 multiples of 8 */
VLA_HD int vla_ldsm_a_offset(int lane, int D, int r0, int c0) {
    int m = (lane >> 3) & 3, r = lane & 7;
    return vla_tile_off(D, r0 + r + 8 * (m & 1), c0 + 8 * (m >> 1));
}

/* .x2 → vla_mma_load_b_nk's fragment (X row-major [n][k]): matrices at (n0, k0), (n0, k0 + 8) */
VLA_HD int vla_ldsm_b_nk_offset(int lane, int D, int n0, int k0) {
    int m = (lane >> 3) & 1, r = lane & 7;
    return vla_tile_off(D, n0 + r, k0 + 8 * m);
}

/* .x2.trans → vla_mma_load_b_kn's fragment (X row-major [k][n]): matrices at (k0, n0), (k0 + 8, n0) */
VLA_HD int vla_ldsm_b_kn_offset(int lane, int D, int k0, int n0) {
    int m = (lane >> 3) & 1, r = lane & 7;
    return vla_tile_off(D, k0 + r + 8 * m, n0);
}

/* The A fragment (16 rows × 16 columns k) made of two accumulators side by
 * side: lo covers columns 0..7, hi columns 8..15. */
VLA_HD void vla_mma_c_to_a(uint32_t a[4], const float lo[4], const float hi[4]) {
    a[0] = vla_mma_pack_f32(lo[0], lo[1]);
    a[1] = vla_mma_pack_f32(lo[2], lo[3]);
    a[2] = vla_mma_pack_f32(hi[0], hi[1]);
    a[3] = vla_mma_pack_f32(hi[2], hi[3]);
}

#endif
