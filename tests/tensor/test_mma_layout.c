/* test_mma_layout.c — tensor/cuda/mma_layout.h, the fragment arithmetic of the
 * cuda backend's tensor-core attention, on the CPU: a warp's 32 lanes are
 * emulated, mma.m16n8k16 is computed from the fragment layouts as the PTX
 * ISA tabulates them (written out below as tables, independently of the
 * header's formulas), and the header's loads from shared-memory tiles —
 * A from row-major tiles, B from [n][k] (Kᵀ) and [k][n] (V) tiles — and its
 * accumulator-to-A reuse (P of S = QKᵀ fed to P·V) must give the exact
 * matrix products of bf16 inputs. */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/cuda/mma_layout.h"
#include "base/numfmt.h"

#include <math.h>
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ldmatrix_offsets),
        cmocka_unit_test(test_tile_writers),
        cmocka_unit_test(test_index_functions_match_tables),
        cmocka_unit_test(test_qk_product),
        cmocka_unit_test(test_pv_product_from_accumulators),
        cmocka_unit_test(test_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
