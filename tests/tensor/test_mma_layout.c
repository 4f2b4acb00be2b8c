/* test_mma_layout.c — tensor/cuda/mma_layout.h, the fragment arithmetic of the
 * cuda backend's tensor-core attention, on the CPU: a warp's 32 lanes are
 * emulated, mma.m16n8k16 is computed from the fragment layouts as the PTX
 * ISA tabulates them (written out below as tables, independently of the
 * header's formulas), and the header's loads from shared-memory tiles —
 * A from row-major tiles, B from [n][k] (Kᵀ) and [k][n] (V) tiles — and its
 * accumulator-to-A reuse (P of S = QKᵀ fed to P·V) must give the exact
 * matrix products of bf16 inputs. Also the kernels' shared memory as
 * tensor/cuda/attn_smem.h carves it (test_smem_carve), and their operands'
 * bf16 copies as tensor/cuda/cast_rows.h's kernel makes them (test_cast_rows). */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/cuda/attn_smem.h"
#include "tensor/cuda/cast_rows.h"
#include "tensor/cuda/mma_layout.h"
#include "base/numfmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* PTX ISA, mma.m16n8k16 (.bf16): (row offset, column offset) of each element
 * from (groupID, 2·threadID_in_group) */
static const int A_TAB[8][2] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}};
static const int B_TAB[4] = {0, 1, 8, 9}; /* k offsets from 2·t; n = groupID */
static const int C_TAB[4][2] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}};

static uint16_t elem(uint32_t reg, int hi) { return (uint16_t)(hi ? reg >> 16 : reg & 0xffff); }

/* D += A·B for the warp, as the hardware does it, from the tables */
static void emulate_mma(float c[32][4], uint32_t a[32][4], uint32_t b[32][2]) {
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t2 = 2 * (lane & 3);
        for (int i = 0; i < 8; i++) A[g + A_TAB[i][0]][t2 + A_TAB[i][1]] = vla_nf_bf16_to_f32(elem(a[lane][i / 2], i & 1));
        for (int i = 0; i < 4; i++) B[t2 + B_TAB[i]][g] = vla_nf_bf16_to_f32(elem(b[lane][i / 2], i & 1));
    }
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t2 = 2 * (lane & 3);
        for (int i = 0; i < 4; i++) {
            int row = g + C_TAB[i][0], col = t2 + C_TAB[i][1];
            double s = c[lane][i];
            for (int k = 0; k < 16; k++) s += (double)A[row][k] * B[k][col];
            c[lane][i] = (float)s;
        }
    }
}

static void test_index_functions_match_tables(void **state) {
    (void)state;
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t2 = 2 * (lane & 3);
        for (int i = 0; i < 8; i++) {
            assert_int_equal(vla_mma_a_row(lane, i), g + A_TAB[i][0]);
            assert_int_equal(vla_mma_a_col(lane, i), t2 + A_TAB[i][1]);
        }
        for (int i = 0; i < 4; i++) {
            assert_int_equal(vla_mma_b_k(lane, i), t2 + B_TAB[i]);
            assert_int_equal(vla_mma_b_n(lane, i), g);
            assert_int_equal(vla_mma_c_row(lane, i), g + C_TAB[i][0]);
            assert_int_equal(vla_mma_c_col(lane, i), t2 + C_TAB[i][1]);
        }
    }
}

#define LD 40 /* a padded row stride, as the kernels' D + 8 */

static void fill_bf16(uint16_t *s, int n, vla_rng *r) {
    for (int i = 0; i < n; i++) s[i] = vla_nf_f32_to_bf16((float)vla_rng_normal(r));
}
static float bf(const uint16_t *s, int i) { return vla_nf_bf16_to_f32(s[i]); }

/* S = Q·Kᵀ (A from row-major Q, B from K as [n][k]) over a 32-wide head dim:
 * two k-steps into 16×8 accumulators, every element checked. */
static void test_qk_product(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(3, 0);
    static uint16_t Q[16 * LD], K[16 * LD];
    fill_bf16(Q, 16 * LD, &r), fill_bf16(K, 16 * LD, &r);
    for (int n0 = 0; n0 < 16; n0 += 8) {
        float c[32][4] = {{0}};
        for (int k0 = 0; k0 < 32; k0 += 16) {
            uint32_t a[32][4], b[32][2];
            for (int lane = 0; lane < 32; lane++) {
                vla_mma_load_a(a[lane], Q, LD, 0, k0, lane);
                vla_mma_load_b_nk(b[lane], K, LD, n0, k0, lane);
            }
            emulate_mma(c, a, b);
        }
        for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 4; i++) {
                int row = vla_mma_c_row(lane, i), col = n0 + vla_mma_c_col(lane, i);
                double ref = 0;
                for (int k = 0; k < 32; k++) ref += (double)bf(Q, row * LD + k) * bf(K, col * LD + k);
                assert_true(fabs(c[lane][i] - ref) <= 1e-5 * (1 + fabs(ref)));
            }
    }
}

/* O = P·V with P the accumulators of a previous product turned into an A
 * fragment (vla_mma_c_to_a) and V read as [k][n]. */
static void test_pv_product_from_accumulators(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(4, 0);
    static uint16_t V[16 * LD];
    fill_bf16(V, 16 * LD, &r);
    float P[16][16];
    float lo[32][4], hi[32][4]; /* the two 16×8 accumulator tiles holding P's columns 0..7 and 8..15 */
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) P[i][j] = vla_nf_bf16_to_f32(vla_nf_f32_to_bf16((float)vla_rng_uniform(&r)));
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            lo[lane][i] = P[vla_mma_c_row(lane, i)][vla_mma_c_col(lane, i)];
            hi[lane][i] = P[vla_mma_c_row(lane, i)][8 + vla_mma_c_col(lane, i)];
        }
    for (int n0 = 0; n0 < 32; n0 += 8) {
        uint32_t a[32][4], b[32][2];
        float c[32][4] = {{0}};
        for (int lane = 0; lane < 32; lane++) {
            vla_mma_c_to_a(a[lane], lo[lane], hi[lane]);
            vla_mma_load_b_kn(b[lane], V, LD, 0, n0, lane);
        }
        emulate_mma(c, a, b);
        for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 4; i++) {
                int row = vla_mma_c_row(lane, i), col = n0 + vla_mma_c_col(lane, i);
                double ref = 0;
                for (int k = 0; k < 16; k++) ref += (double)P[row][k] * bf(V, k * LD + col);
                assert_true(fabs(c[lane][i] - ref) <= 1e-5 * (1 + fabs(ref)));
            }
    }
}

/* Offsets: a block at (r0, c0) of a larger tile, as the kernels address warp w's rows 16w.. */
static void test_offsets(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(8, 0);
    static uint16_t X[64 * LD], Y[64 * LD];
    fill_bf16(X, 64 * LD, &r), fill_bf16(Y, 64 * LD, &r);
    for (int r0 = 0; r0 < 64; r0 += 16)
        for (int c0 = 0; c0 + 16 <= 32; c0 += 16) {
            uint32_t a[32][4], b[32][2];
            float c[32][4] = {{0}};
            for (int lane = 0; lane < 32; lane++) {
                vla_mma_load_a(a[lane], X, LD, r0, c0, lane);
                vla_mma_load_b_kn(b[lane], Y, LD, r0, c0 + 8, lane); /* B rows r0.., columns c0+8.. */
            }
            emulate_mma(c, a, b);
            for (int lane = 0; lane < 32; lane++)
                for (int i = 0; i < 4; i++) {
                    int row = vla_mma_c_row(lane, i), col = vla_mma_c_col(lane, i);
                    double ref = 0;
                    for (int k = 0; k < 16; k++)
                        ref += (double)bf(X, (r0 + row) * LD + c0 + k) * bf(Y, (r0 + k) * LD + c0 + 8 + col);
                    assert_true(fabs(c[lane][i] - ref) <= 1e-5 * (1 + fabs(ref)));
                }
        }
}

/* ldmatrix .m8n8 .b16 as the PTX ISA describes it, for `nmat` matrices: lane l supplies (offs[l]) the
 * address of row l % 8 of matrix l / 8; register m of lane l receives matrix m's row l / 4, columns
 * 2(l % 4) and 2(l % 4) + 1 (with trans: column l / 4, rows 2(l % 4) and 2(l % 4) + 1), the lower
 * index in the low 16 bits. Written from that description, not from the header's offsets. */
static void emulate_ldmatrix(uint32_t out[32][4], const uint16_t *s, const int offs[32], int nmat, int trans) {
    for (int lane = 0; lane < 32; lane++)
        for (int m = 0; m < nmat; m++) {
            int e0, e1; /* the two elements' (row, column) in matrix m, rows being the supplied addresses */
            int row0, col0, row1, col1;
            if (!trans) row0 = row1 = lane / 4, col0 = 2 * (lane % 4), col1 = col0 + 1;
            else col0 = col1 = lane / 4, row0 = 2 * (lane % 4), row1 = row0 + 1;
            e0 = offs[8 * m + row0] + col0, e1 = offs[8 * m + row1] + col1;
            out[lane][m] = vla_mma_pack2(s[e0], s[e1]);
        }
}

/* The ldmatrix offsets (mma_layout.h) give, through the emulated instruction, the very fragments the
 * element-wise loads give of the logical matrix — A (.x4), B from [n][k] (.x2) and from [k][n]
 * (.x2.trans) — at every block offset the kernels use, for padded tiles (D = 16, 32, 48, 80) and swizzled
 * ones (64, 128, 256, vla_tile_off); and the eight rows of each 8×8 matrix sit in eight distinct 16-byte
 * bank groups (no bank conflict) */
static void test_ldmatrix_offsets(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(9, 0);
    static const int dims[] = {16, 32, 48, 64, 80, 128, 256};
    static uint16_t X[64 * 256], T[64 * 264];
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int D = dims[di];
        fill_bf16(X, 64 * D, &r);
        memset(T, 0, sizeof T);
        for (int row = 0; row < 64; row++)
            for (int c = 0; c < D; c++) {
                int o = vla_tile_off(D, row, c);
                assert_true(o >= 0 && o < 64 * VLA_TILE_LD(D));
                T[o] = X[row * D + c];
            }
        /* r0 in steps of 8: the kernels read B from [n][k] at n0 = 8n (ldsm_b_nk(.., 8 * n, ..)) */
        for (int r0 = 0; r0 + 16 <= 64; r0 += 8)
            for (int c0 = 0; c0 + 16 <= D; c0 += 8) {
                uint32_t want[32][4], got[32][4];
                int offs[3][32];
                for (int lane = 0; lane < 32; lane++) {
                    offs[0][lane] = vla_ldsm_a_offset(lane, D, r0, c0);
                    offs[1][lane] = vla_ldsm_b_nk_offset(lane, D, r0, c0);
                    offs[2][lane] = vla_ldsm_b_kn_offset(lane, D, r0, c0);
                }
                for (int k = 0; k < 3; k++)
                    for (int m = 0; m < (k ? 2 : 4); m++) {
                        int seen = 0;
                        for (int i = 0; i < 8; i++) {
                            int o = offs[k][8 * m + i];
                            assert_int_equal(o % 8, 0); /* a 16-byte row */
                            seen |= 1 << ((o / 8) % 8);
                        }
                        assert_int_equal(seen, 0xff); /* eight rows, eight bank groups */
                    }
                /* A: 16×16 at (r0, c0) */
                for (int lane = 0; lane < 32; lane++) vla_mma_load_a(want[lane], X, D, r0, c0, lane);
                emulate_ldmatrix(got, T, offs[0], 4, 0);
                for (int lane = 0; lane < 32; lane++) assert_memory_equal(want[lane], got[lane], 4 * sizeof(uint32_t));
                /* B from X [n][k]: rows n0 = r0.., columns k0 = c0.. */
                for (int lane = 0; lane < 32; lane++) vla_mma_load_b_nk(want[lane], X, D, r0, c0, lane);
                emulate_ldmatrix(got, T, offs[1], 2, 0);
                for (int lane = 0; lane < 32; lane++) assert_memory_equal(want[lane], got[lane], 2 * sizeof(uint32_t));
                /* B from X [k][n]: rows k0 = r0.., columns n0 = c0.., transposed */
                for (int lane = 0; lane < 32; lane++) vla_mma_load_b_kn(want[lane], X, D, r0, c0, lane);
                emulate_ldmatrix(got, T, offs[2], 2, 1);
                for (int lane = 0; lane < 32; lane++) assert_memory_equal(want[lane], got[lane], 2 * sizeof(uint32_t));
            }
    }
}

/* The tile writers (attn_mma.cu: to_tile's 16-byte stores of 8 elements from a column that is a multiple of 8,
 * stage()'s element stores) agree with the readers: vla_tile_off is a bijection of the R x D tile onto
 * [0, R * VLA_TILE_LD(D)) minus the pad, and the 8 elements of a chunk stay consecutive and 16-byte aligned */
static void test_tile_writers(void **state) {
    (void)state;
    static const int dims[] = {16, 32, 48, 64, 80, 128, 256};
    static unsigned char hit[64 * 264];
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int D = dims[di], LDS = VLA_TILE_LD(D);
        assert_int_equal(LDS % 8, 0); /* every row starts 16-byte aligned */
        memset(hit, 0, sizeof hit);
        for (int row = 0; row < 64; row++)
            for (int c = 0; c < D; c += 8) {
                int o = vla_tile_off(D, row, c);
                assert_int_equal(o % 8, 0);                             /* a uint4 store / an ldmatrix row */
                assert_true(o >= row * LDS && o + 8 <= row * LDS + D); /* inside the row, never the pad */
                for (int i = 0; i < 8; i++) {
                    assert_int_equal(vla_tile_off(D, row, c + i), o + i); /* stage()'s element stores agree */
                    assert_int_equal(hit[o + i], 0);
                    hit[o + i] = 1;
                }
            }
    }
}

/* The kernels' shared memory as attn_smem.h carves it, for every head dim and pass, prefetching or not:
 * each region the size the kernel addresses (a tile: every (row, column) vla_tile_off places; the raw
 * tile: rows × D unswizzled, as cp.async lands it), 16-byte aligned where ldmatrix or cp.async reads or
 * writes it, no two overlapping, all inside the block's bytes, and the bytes within sm_90's 227 KB a
 * block. The sizes docs/cuda.md's occupancy table quotes are pinned: the dQ and dK/dV passes at head dim
 * 256 prefetching take 115,712 B, so that two blocks and their 1 KB reserve fill the SM's 228 KB exactly. */
typedef struct {
    const char *name;
    int off, bytes, align;
} smem_region;

static int tile_extent_bytes(int D, int rows) { /* one past the last element vla_tile_off places, in bytes */
    int end = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < D; c++) {
            int o = vla_tile_off(D, r, c) + 1;
            end = o > end ? o : end;
        }
    return 2 * end;
}

static void check_carve(const vla_attn_smem *L, int D, int rows_q, int rows_k, int pass, int pf, int fused) {
    /* pass 0 forward (Q K V), 1 dQ (Q dO K V), 2 dK/dV (K V Q dO, raw rows are queries) */
    int raw_rows = pass == 2 ? rows_q : rows_k;
    smem_region reg[] = {
        {"raw", L->raw, pf ? raw_rows * D * 2 : 0, 16},
        {"raw_groups", L->raw_groups, pf ? raw_rows * 4 : 0, 4},
        {"raw_lse", L->raw_lse, pf && pass == 2 ? rows_q * 4 : 0, 4},
        {"raw_dvec", L->raw_dvec, pf && pass == 2 ? rows_q * 4 : 0, 4},
        {"q", L->q, tile_extent_bytes(D, rows_q), 16},
        {"dout", L->dout, pass ? tile_extent_bytes(D, rows_q) : 0, 16},
        {"k", L->k, tile_extent_bytes(D, rows_k), 16},
        {"v", L->v, tile_extent_bytes(D, rows_k), 16},
        {"q_groups", L->q_groups, rows_q * 4, 4},
        {"k_groups", L->k_groups, rows_k * 4, 4},
        {"lse", L->lse, pass ? rows_q * 4 : 0, 4},
        {"dvec", L->dvec, pass ? rows_q * 4 : 0, 4},
        /* the fused backward's dS [queries][64 keys]: its own region, or dO's bytes (checked below) */
        {"ds", L->ds, fused && !VLA_ATTN_DS_IN_DOUT(D) ? tile_extent_bytes(64, rows_q) : 0, 16},
        /* dK/dV's two warp groups share Pᵀ and dSᵀ [64 keys][queries] */
        {"pt", L->pt, pass == 2 && VLA_ATTN_MMA_KV_WARPS(D) > 4 ? tile_extent_bytes(rows_q, rows_k) : 0, 16},
        {"dst", L->dst, pass == 2 && VLA_ATTN_MMA_KV_WARPS(D) > 4 ? tile_extent_bytes(rows_q, rows_k) : 0, 16},
    };
    const int n = (int)(sizeof reg / sizeof reg[0]);
    for (int i = 0; i < n; i++) {
        if (reg[i].off % reg[i].align || reg[i].off < 0 || reg[i].off + reg[i].bytes > L->bytes)
            fail_msg("D %d pass %d pf %d: region %s at %d (%d bytes) misaligned or past the block's %d", D, pass,
                     pf, reg[i].name, reg[i].off, reg[i].bytes, L->bytes);
        for (int j = 0; j < i; j++)
            if (reg[i].bytes && reg[j].bytes && reg[i].off < reg[j].off + reg[j].bytes &&
                reg[j].off < reg[i].off + reg[i].bytes)
                fail_msg("D %d pass %d pf %d: %s [%d, +%d) overlaps %s [%d, +%d)", D, pass, pf, reg[i].name,
                         reg[i].off, reg[i].bytes, reg[j].name, reg[j].off, reg[j].bytes);
    }
    assert_true(L->bytes <= 227 * 1024);
}

static void test_smem_carve(void **state) {
    (void)state;
    static const int dims[] = {16, 32, 48, 64, 80, 128, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int D = dims[di];
        for (int pf = 0; pf < 2; pf++) {
            vla_attn_smem f = vla_attn_smem_fwd(D, pf), q = vla_attn_smem_dq(D, pf), kv = vla_attn_smem_dkdv(D, pf, 0);
            check_carve(&f, D, VLA_ATTN_MMA_ROWS, VLA_ATTN_MMA_BK(D), 0, pf, 0);
            check_carve(&q, D, VLA_ATTN_MMA_ROWS, VLA_ATTN_MMA_BK(D), 1, pf, 0);
            check_carve(&kv, D, VLA_ATTN_MMA_KV_BQ(D), VLA_ATTN_MMA_ROWS, 2, pf, 0);
            /* fused: dS in the dO tile's bytes (that tile holds [queries][64 keys]) or a region of its own */
            vla_attn_smem fu = vla_attn_smem_dkdv(D, pf, 1);
            check_carve(&fu, D, VLA_ATTN_MMA_KV_BQ(D), VLA_ATTN_MMA_ROWS, 2, pf, 1);
            if (VLA_ATTN_DS_IN_DOUT(D)) {
                assert_int_equal(fu.ds, fu.dout);
                assert_int_equal(fu.bytes, kv.bytes);
                assert_true(tile_extent_bytes(64, VLA_ATTN_MMA_KV_BQ(D)) <= tile_extent_bytes(D, VLA_ATTN_MMA_KV_BQ(D)));
            }
        }
        assert_int_equal(D % VLA_ATTN_MMA_KV_DC(D), 0);
    }
    /* head dim 256 (π0.5's Gemma): the sizes docs/cuda.md's table gives */
    assert_int_equal(vla_attn_smem_dq(256, 1).bytes, 115712);
    /* dK/dV at 256: one block of eight warps per SM (their registers), Pᵀ and dSᵀ (and fused, dS) beside */
    assert_int_equal(vla_attn_smem_dkdv(256, 1, 0).bytes, 115712 + 2 * 64 * 40 * 2);
    assert_int_equal(vla_attn_smem_dkdv(256, 1, 1).bytes, 115712 + 2 * 64 * 40 * 2 + 32 * 64 * 2);
    assert_int_equal(VLA_ATTN_MMA_KV_WARPS(256), 8);
    assert_int_equal(VLA_ATTN_MMA_KV_WARPS(128), 4);
    assert_int_equal(2 * (vla_attn_smem_dq(256, 1).bytes + 1024), 228 * 1024);
    assert_int_equal(vla_attn_smem_fwd(256, 1).bytes, vla_attn_smem_fwd(256, 0).bytes + 32 * 256 * 2 + 32 * 4);
}

/* cast_rows.h: every chunk of every tensor, stepped as the kernel steps them (one thread per chunk), writes
 * the copy prepare_operand's bf16 cast makes — each element vla_nf_f32_to_bf16 of its source (NaN, ±Inf,
 * subnormals and rounding ties included), zeros in columns K..kp — each element once, nothing past a
 * tensor's rows × kp; tensors of no rows, row strides past K, and K not a multiple of 8 included. */
static void test_cast_rows(void **state) {
    (void)state;
    static const int64_t Ks[] = {13, 72, 256};
    static const int64_t rows[] = {3, 0, 17, 1, 64};
    const int n = 5;
    vla_rng r = vla_rng_stream(7, 0);
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
        const int64_t K = Ks[ki], kp = (K + 7) / 8 * 8, pad = 8;
        vla_cast_rows c;
        memset(&c, 0, sizeof c);
        c.n = n, c.K = K, c.kp = kp;
        float *src[5];
        uint16_t *dst[5];
        unsigned char *hit[5];
        for (int i = 0; i < n; i++) {
            int64_t ld = K + (i % 2 ? 5 : 0);
            src[i] = malloc(sizeof(float) * (size_t)(rows[i] * ld + 1));
            dst[i] = malloc(sizeof(uint16_t) * (size_t)(rows[i] * kp + pad));
            hit[i] = calloc((size_t)(rows[i] * kp + pad), 1);
            for (int64_t e = 0; e < rows[i] * ld; e++) {
                uint32_t u = vla_rng_u32(&r);
                float v;
                switch (e % 7) {
                case 0: v = vla_hd_bits_f32(u); break;                       /* any bits: NaN, Inf, subnormals */
                case 1: v = vla_hd_bits_f32((u & 0xffff0000u) | 0x8000u); break; /* a tie */
                default: v = (float)(vla_rng_u32(&r) % 2001) / 1000.0f - 1.0f; break;
                }
                src[i][e] = v;
            }
            for (int64_t e = 0; e < rows[i] * kp + pad; e++) dst[i][e] = 0xaaaa;
            c.src[i] = src[i], c.dst[i] = dst[i], c.ld[i] = ld, c.rows[i] = rows[i];
        }
        /* descriptions the kernel cannot honour are refused */
        vla_cast_rows bad = c;
        bad.kp = K + 1;
        assert_int_equal(vla_cast_rows_plan(&bad), -1); /* kp not a multiple of 8 */
        bad = c, bad.K = kp + 1;
        assert_int_equal(vla_cast_rows_plan(&bad), -1); /* K past the row */
        bad = c, bad.n = VLA_CAST_ROWS_MAX + 1;
        assert_int_equal(vla_cast_rows_plan(&bad), -1);
        bad = c, bad.ld[0] = K - 1;
        assert_int_equal(vla_cast_rows_plan(&bad), -1); /* rows overlapping */
        int64_t total = vla_cast_rows_plan(&c), expect = 0;
        for (int i = 0; i < n; i++) expect += rows[i] * kp / 8;
        assert_int_equal(total, expect);
        for (int64_t ch = 0; ch < total; ch++) {
            int t;
            int64_t at;
            uint16_t v[8];
            vla_cast_rows_chunk(&c, ch, &t, &at, v);
            assert_true(t >= 0 && t < n && at >= 0 && at % 8 == 0 && at + 8 <= rows[t] * kp);
            for (int e = 0; e < 8; e++) {
                assert_int_equal(hit[t][at + e], 0);
                hit[t][at + e] = 1;
                dst[t][at + e] = v[e];
            }
        }
        for (int i = 0; i < n; i++) {
            for (int64_t row = 0; row < rows[i]; row++)
                for (int64_t col = 0; col < kp; col++) {
                    uint16_t want = col < K ? vla_nf_f32_to_bf16(src[i][row * c.ld[i] + col]) : 0;
                    if (dst[i][row * kp + col] != want || !hit[i][row * kp + col])
                        fail_msg("K %lld tensor %d (%lld, %lld): 0x%04x, want 0x%04x", (long long)K, i,
                                 (long long)row, (long long)col, dst[i][row * kp + col], want);
                }
            for (int64_t e = rows[i] * kp; e < rows[i] * kp + pad; e++) assert_int_equal(dst[i][e], 0xaaaa);
            free(src[i]), free(dst[i]), free(hit[i]);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ldmatrix_offsets),
        cmocka_unit_test(test_tile_writers),
        cmocka_unit_test(test_smem_carve),
        cmocka_unit_test(test_cast_rows),
        cmocka_unit_test(test_index_functions_match_tables),
        cmocka_unit_test(test_qk_product),
        cmocka_unit_test(test_pv_product_from_accumulators),
        cmocka_unit_test(test_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
