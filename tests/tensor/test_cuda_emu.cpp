/* test_cuda_emu.cpp — the cuda backend's cast, norm and activation kernels run on the CPU under an
 * emulation of CUDA's execution model (cuda_emu.h): the very kernels nvcc compiles (tensor/cuda/
 * cast_kernels.cuh, norm_kernels.cuh, act_kernels.cuh, ready_copy.cuh), each thread a host thread.
 *
 * What it holds them to, without a GPU:
 *  - k_cast_operand (run on an H200 on 2026-12-04) gives the cpu backend's own casts: every value of
 *    its bf16/FP8 copies, decoded and times its 1/s, equals cpu prepare_operand's (an independent
 *    rounding, tensor/cpu/ops_cpu_precision.c), the pad is zero, the amax is the cpu's — which also
 *    vouches for the emulation;
 *  - k_cast_pair's two copies are k_cast_operand's two casts, byte for byte (1/s, pads, saturation, a
 *    NaN's infinite amax), over ragged shapes and a grid of many blocks;
 *  - every producer's GEMM-ready copy (the norms', the GLU's, a GEMM epilogue's, the activation's and
 *    the GLU's backward's) is k_cast_operand's cast of that producer's own output, byte for byte and
 *    amax for amax, bf16 and FP8, with the grid-stride kernels on a grid far smaller than their
 *    elements as well as a full one — and writing the copy changes no output;
 *  - the optimizer over many tensors in one launch (k_adamw_multi, k_ema_multi) equals the cpu backend's
 *    bit for bit — tensors of one element, of exactly a chunk, across chunks, without decay, the step
 *    skipped by a non-finite guard;
 *  - many vectors' Σx² in two launches (k_sumsq_multi_*) give each vector the single reduction's bits
 *    (k_reduce_partial + k_reduce_final) across block cuts, and the total is their sum in order;
 *  - the per-segment linear's own GEMM kernels (k_seg_gemm, k_seg_wgrad, k_seg_bgrad: GR00T's
 *    per-embodiment layers) equal the cpu backend's per-segment SGEMMs within f32 summation order, empty
 *    segments, repeated embodiments and tile edges included;
 *  - the masked MSE on the device (k_mse_rows, k_mse_grad, k_mse_add: the loss kept on the device) gives
 *    the cpu's gradient bit for bit and its loss to a few ulps (rows summed, then the rows in order);
 *  - the f32 attention kernels (k_simt_fwd, k_simt_dkdv, k_simt_dq: precision FP32's, and the fallback),
 *    walking the host plan (tensor/attn_plan.h) as attention.cu uploads it, equal the cpu backend's packed
 *    attention within f32 summation order — prefix-LM groups, GQA and folded MQA, one-token samples,
 *    and the dK/dV walk split into parts (summed in order, as attention.cu does);
 *  - the bf16 tensor-core attention (k_mma_fwd, k_mma_dkdv, k_mma_dq: mma.sync, ldmatrix and cp.async
 *    emulated from the PTX ISA) gives the same bits staged all three ways (from the f32 tensors, from
 *    bf16 copies, from copies prefetched with cp.async), and the cpu's attention of the bf16-rounded
 *    operands within the rounding of P (and dS) to bf16 — swizzled (head dim 64) and padded (48) tiles,
 *    GQA and folded MQA, the forward's key walk and the dK/dV walk whole and in parts (the parts put
 *    together by attention.cu's own kernels, k_combine_parts and k_sum_parts), and the cached forward
 *    of sampling (two key sources per sample: the prefix's KV cache and the new rows).
 * On a GPU the conformance suite (test_conformance, run by scripts/gpu_check.sh) holds the same
 * contracts; this test is what can be run before a device is lent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>

extern "C" {
#include <cmocka.h>
}
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "cuda_emu.h"
/* the kernels, as nvcc sees them */
#include "tensor/cuda/act_kernels.cuh"
#include "tensor/cuda/attn_simt_kernels.cuh"
#undef NTH /* the two attention families each name their block size NTH */
#include "tensor/cuda/attn_mma_kernels.cuh"
#include "tensor/cuda/attn_parts_kernels.cuh"
#include "tensor/cuda/cast_kernels.cuh"
#include "tensor/cuda/norm_kernels.cuh"
#include "tensor/cuda/optim_kernels.cuh"
#include "tensor/cuda/reduce_kernels.cuh"
#include "tensor/cuda/segment_kernels.cuh"

extern "C" {
#include "base/rng.h"
#include "tensor/backend.h"
#include "tensor/cuda/dev_index.h"
}

static vla_rng rng;
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(vla_rng_uniform(&rng) * (double)(hi - lo + 1)); }
static std::vector<float> rand_vec(int64_t n, float scale) {
    std::vector<float> v((size_t)n);
    for (auto &x : v) x = (float)((2 * vla_rng_uniform(&rng) - 1) * scale);
    return v;
}
static bool same_bits(float a, float b) { return (isnan(a) && isnan(b)) || __float_as_uint(a) == __float_as_uint(b); }

/* ---- k_cast_operand: one copy as gemm.cu's cast_slabs launches it --------------------------------- */

struct copy8 {
    std::vector<uint8_t> bytes; /* [rows][kp] elements of es bytes, then (FP8) the 1/s at its offset */
    int64_t rows, kp;
    size_t es;
    float sinv() const {
        float s;
        memcpy(&s, bytes.data() + vla_q_ready_sinv_offset(rows, kp, 1), 4);
        return s;
    }
};

/* src's operand as k_cast_operand copies it: rows × K (transpose: src stored [K][ld]), kp per row */
static copy8 cast_operand(const float *src, int64_t ld, int64_t rows, int64_t K, int64_t kp, bool transpose, int kind,
                          const float *scale, float *amax) {
    size_t es = kind == OUT_BF16 ? 2 : 1;
    copy8 c{std::vector<uint8_t>(vla_q_ready_sinv_offset(rows, kp, es) + 256, 0xA5), rows, kp, es};
    float *sinv = kind == OUT_BF16 ? NULL : (float *)(c.bytes.data() + vla_q_ready_sinv_offset(rows, kp, 1));
    uint8_t *dst = c.bytes.data();
    emu_launch(vla_cast_operand_grid(rows, kp), dim3(32, 8),
               [&] { k_cast_operand(dst, src, ld, rows, K, kp, transpose, kind, scale, amax, sinv); });
    return c;
}

static float decoded(const copy8 &c, int kind, int64_t r, int64_t k) {
    if (kind == OUT_BF16) {
        uint16_t h;
        memcpy(&h, c.bytes.data() + 2 * (size_t)(r * c.kp + k), 2);
        return vla_nf_bf16_to_f32(h);
    }
    uint8_t b = c.bytes[(size_t)(r * c.kp + k)];
    return (kind == OUT_E4M3 ? vla_nf_e4m3_to_f32(b) : vla_nf_e5m2_to_f32(b)) * c.sinv();
}

/* k_cast_operand against the cpu backend's prepare_operand (its copy: the stored operand's rounded values
 * as f32), for bf16 and both FP8 formats, stored and transposed */
static void test_cast_operand_is_cpu_cast(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    assert_non_null(cpu);
    for (int trial = 0; trial < 24; trial++) {
        int kind = trial % 3 == 0 ? OUT_BF16 : trial % 3 == 1 ? OUT_E4M3 : OUT_E5M2;
        bool transpose = (trial / 3) % 2;
        int64_t rows = rnd(1, 70), K = rnd(1, 70), extra = rnd(0, 4);
        int64_t kp = kind == OUT_BF16 ? vla_q_bf16_ld(K) : vla_q_fp8_ld(K);
        int64_t ld = (transpose ? rows : K) + extra, stored_rows = transpose ? K : rows;
        std::vector<float> src = rand_vec(stored_rows * ld, 4.0f);
        if (trial % 4 == 1) src[(size_t)rnd(0, stored_rows * ld - 1)] = 3e5f; /* saturates E4M3 after the scale */
        if (trial % 8 == 3) src[(size_t)rnd(0, stored_rows * ld - 1)] = NAN;
        float scale = 21.7f + (float)trial, amax = 0.0f, cpu_amax = 0.0f;
        copy8 c = cast_operand(src.data(), ld, rows, K, kp, transpose, kind, &scale, &amax);
        /* the cpu's: op(B) of trans_b = !transpose, n = rows, k = K — the stored matrix rounded, [stored_rows][?] */
        vla_gemm_q q = {kind == OUT_BF16 ? VLA_PREC_BF16 : VLA_PREC_FP8, {}, {kind == OUT_E5M2 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, &scale, &cpu_amax}, NULL, NULL};
        int64_t scols = transpose ? rows : K; /* the stored operand's columns */
        std::vector<float> ref((size_t)(stored_rows * scols));
        cpu->prepare_operand(&q, !transpose, rows, K, src.data(), ld, ref.data());
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < kp; k++) {
                float got = decoded(c, kind, r, k);
                float want = k >= K ? 0.0f : transpose ? ref[(size_t)(k * scols + r)] : ref[(size_t)(r * scols + k)];
                if (!same_bits(got, want))
                    fail_msg("k_cast_operand trial %d (kind %d, %s, %lld × %lld): element (%lld, %lld) is %a, the "
                             "cpu's %a",
                             trial, kind, transpose ? "transposed" : "stored", (long long)rows, (long long)K,
                             (long long)r, (long long)k, (double)got, (double)want);
            }
        if (kind != OUT_BF16) {
            assert_true(same_bits(amax, cpu_amax));
            assert_true(same_bits(c.sinv(), 1.0f / scale));
        }
    }
}

/* ---- k_cast_pair ------------------------------------------------------------------------------------ */

static void test_cast_pair_is_two_casts(void **state) {
    (void)state;
    for (int trial = 0; trial < 14; trial++) {
        int64_t rows = trial == 13 ? rnd(600, 700) : rnd(1, 90), cols = trial == 12 ? rnd(100, 140) : rnd(1, 90);
        int64_t ld = cols + rnd(0, 5);
        bool e4m3 = trial % 3 != 2;
        std::vector<float> b = rand_vec(rows * ld, 3.0f);
        if (trial % 4 == 1) b[(size_t)rnd(0, rows * ld - 1)] = 1e6f;
        if (trial % 4 == 3) b[(size_t)rnd(0, rows * ld - 1)] = NAN;
        float scale = 37.3f + (float)trial, amax_pair = 0.0f, amax_casts = 0.0f;
        int64_t kpn = vla_q_fp8_ld(cols), kpt = vla_q_fp8_ld(rows);
        /* the pair, launched as vla_cuda_prepare_operand_pair does */
        std::vector<uint8_t> dn(vla_q_ready_sinv_offset(rows, kpn, 1) + 256, 0xA5), dt(vla_q_ready_sinv_offset(cols, kpt, 1) + 256, 0xA5);
        float *sn = (float *)(dn.data() + vla_q_ready_sinv_offset(rows, kpn, 1));
        float *st = (float *)(dt.data() + vla_q_ready_sinv_offset(cols, kpt, 1));
        emu_launch(vla_cast_pair_grid(rows, cols), dim3(32, 8), [&] {
            k_cast_pair(dn.data(), dt.data(), b.data(), ld, rows, cols, kpn, kpt, e4m3, &scale, &amax_pair, sn, st);
        });
        /* the two casts prepare_operand makes (gemm_plan.c: [rows][kpn] as stored, [cols][kpt] transposed) */
        int kind = e4m3 ? OUT_E4M3 : OUT_E5M2;
        copy8 cn = cast_operand(b.data(), ld, rows, cols, kpn, false, kind, &scale, &amax_casts);
        copy8 ct = cast_operand(b.data(), ld, cols, rows, kpt, true, kind, &scale, &amax_casts);
        if (dn != cn.bytes || dt != ct.bytes)
            fail_msg("k_cast_pair trial %d (%lld × %lld, ld %lld, %s): the %s copy differs from k_cast_operand's", trial,
                     (long long)rows, (long long)cols, (long long)ld, e4m3 ? "E4M3" : "E5M2",
                     dn != cn.bytes ? "stored" : "transposed");
        assert_true(same_bits(amax_pair, amax_casts));
    }
}

/* ---- the producers' copies: each is k_cast_operand's cast of the producer's own output -------------- */

/* a ready copy of rows × cols, bf16 (fp8 NULL) or FP8, as the backend makes one (vla_cuda_ready_of) */
struct ready_buf {
    std::vector<uint8_t> mem;
    vla_cuda_ready rd;
    ready_buf(int64_t rows, int64_t cols, const vla_fp8_operand *fp8) {
        size_t es = fp8 ? 1 : 2;
        int64_t ld = fp8 ? vla_q_fp8_ld(cols) : vla_q_bf16_ld(cols);
        mem.assign(vla_q_ready_sinv_offset(rows, ld, es) + 256, 0xA5);
        rd = vla_cuda_ready_of(mem.data(), fp8, rows, cols);
    }
};

/* ready (written by a producer of val [rows][cols] with fp8's scale into fp8's amax, which was 0) is
 * k_cast_operand's copy of val, byte for byte, and the amax is the cast's */
static void check_copy(const ready_buf &got, const float *val, int64_t rows, int64_t cols, const vla_fp8_operand *fp8,
                       const char *what, int trial) {
    int kind = !fp8 ? OUT_BF16 : fp8->fmt == VLA_FP8_E5M2 ? OUT_E5M2 : OUT_E4M3;
    float amax = 0.0f;
    copy8 ref = cast_operand(val, cols, rows, cols, got.rd.rld, false, kind, fp8 ? fp8->scale : NULL, &amax);
    size_t n = fp8 ? got.mem.size() : (size_t)(rows * got.rd.rld) * 2; /* bf16 copies keep no 1/s */
    if (memcmp(got.mem.data(), ref.bytes.data(), n))
        fail_msg("%s trial %d (%lld × %lld, %s): the ready copy differs from k_cast_operand's", what, trial,
                 (long long)rows, (long long)cols, !fp8 ? "bf16" : kind == OUT_E4M3 ? "E4M3" : "E5M2");
    if (fp8 && !same_bits(*fp8->amax, amax))
        fail_msg("%s trial %d: the copy's amax %a, the cast's %a", what, trial, (double)*fp8->amax, (double)amax);
}

static void test_norm_copies(void **state) {
    (void)state;
    for (int trial = 0; trial < 6; trial++) {
        int32_t n_seg = (int32_t)rnd(1, 3);
        std::vector<int32_t> cu((size_t)n_seg + 1, 0);
        for (int32_t s = 0; s < n_seg; s++) cu[(size_t)s + 1] = cu[(size_t)s] + (int32_t)rnd(1, 6);
        int64_t n = cu[(size_t)n_seg], dim = trial < 3 ? rnd(3, 40) : rnd(100, 400);
        std::vector<float> x = rand_vec(n * dim, 2), res = rand_vec(n * dim, 1), w = rand_vec(dim, 1), b = rand_vec(dim, 1);
        std::vector<float> mod = rand_vec(n_seg * 3 * dim, 0.3f);
        for (int mode = 0; mode < 4; mode++) {
            bool with_res = (trial + mode) % 2;
            std::vector<float> y0((size_t)(n * dim)), s0((size_t)(n * dim)), st0((size_t)(2 * n));
            std::vector<float> y1 = y0, s1 = s0, st1 = st0;
            /* plain, then with each copy: the same output */
            emu_launch(dim3((unsigned)n), dim3(NT), [&] {
                k_norm_fwd(mode, y0.data(), st0.data(), st0.data() + n, x.data(), w.data(), b.data(), trial % 2, mod.data(),
                           cu.data(), n_seg, dim, 1e-5f, with_res ? res.data() : NULL, s0.data(),
                           vla_cuda_ready_of(NULL, NULL, n, dim));
            });
            float scale = 41.9f + (float)trial, amax = 0.0f;
            vla_fp8_operand op = {(trial + mode) % 3 == 2 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, &scale, &amax};
            for (int f8 = 0; f8 < 2; f8++) {
                amax = 0.0f;
                ready_buf rb(n, dim, f8 ? &op : NULL);
                emu_launch(dim3((unsigned)n), dim3(NT), [&] {
                    k_norm_fwd(mode, y1.data(), st1.data(), st1.data() + n, x.data(), w.data(), b.data(), trial % 2,
                               mod.data(), cu.data(), n_seg, dim, 1e-5f, with_res ? res.data() : NULL, s1.data(), rb.rd);
                });
                assert_memory_equal(y0.data(), y1.data(), sizeof(float) * y0.size());
                assert_memory_equal(st0.data(), st1.data(), sizeof(float) * st0.size());
                check_copy(rb, y1.data(), n, dim, f8 ? &op : NULL, "k_norm_fwd", trial * 4 + mode);
            }
            /* kept (ops.h): no output, the bf16 copy alone — the same copy, sum and statistics */
            ready_buf rk(n, dim, NULL);
            std::vector<float> s2 = s0, st2((size_t)(2 * n), -1.0f);
            std::fill(s2.begin(), s2.end(), 0.0f);
            emu_launch(dim3((unsigned)n), dim3(NT), [&] {
                k_norm_fwd(mode, NULL, st2.data(), st2.data() + n, x.data(), w.data(), b.data(), trial % 2, mod.data(),
                           cu.data(), n_seg, dim, 1e-5f, with_res ? res.data() : NULL, s2.data(), rk.rd);
            });
            assert_memory_equal(st0.data(), st2.data(), sizeof(float) * st0.size());
            if (with_res) assert_memory_equal(s0.data(), s2.data(), sizeof(float) * s0.size());
            check_copy(rk, y0.data(), n, dim, NULL, "k_norm_fwd kept", trial * 4 + mode);
        }
    }
}

/* the elementwise producers on a grid of `blocks` blocks of 256 (grid-stride: any grid covers any size) */
static void test_elementwise_copies(void **state) {
    (void)state;
    const vla_act acts[] = {VLA_ACT_GELU_TANH, VLA_ACT_SILU, VLA_ACT_RELU};
    for (int trial = 0; trial < 9; trial++) {
        int64_t rows = rnd(1, 40), cols = trial % 3 == 0 ? rnd(1, 7) : rnd(8, 90), n = rows * cols;
        unsigned full = (unsigned)((n + 255) / 256), blocks = trial % 2 ? 1 + (unsigned)(full / 4) : full;
        vla_act act = acts[trial % 3];
        std::vector<float> gate = rand_vec(n, 3), up = rand_vec(n, 2), dh = rand_vec(n, 1), bias = rand_vec(cols, 1);
        float scale = 13.1f + (float)trial, amax = 0.0f;
        vla_fp8_operand op = {trial % 4 == 3 ? VLA_FP8_E5M2 : VLA_FP8_E4M3, &scale, &amax};
        dim3 grid(blocks), block(256);
        for (int f8 = 0; f8 < 2; f8++) {
            const vla_fp8_operand *o = f8 ? &op : NULL;
            /* the GLU forward */
            std::vector<float> h0((size_t)n), h1((size_t)n);
            emu_launch(grid, block, [&] { k_glu_fwd(act, h0.data(), gate.data(), up.data(), n, vla_cuda_ready_of(NULL, NULL, rows, cols)); });
            amax = 0.0f;
            ready_buf rg(rows, cols, o);
            emu_launch(grid, block, [&] { k_glu_fwd(act, h1.data(), gate.data(), up.data(), n, rg.rd); });
            assert_memory_equal(h0.data(), h1.data(), sizeof(float) * (size_t)n);
            check_copy(rg, h1.data(), rows, cols, o, "k_glu_fwd", trial);
            if (!f8) { /* kept (ops.h): no h, the bf16 copy alone */
                ready_buf rk(rows, cols, NULL);
                emu_launch(grid, block, [&] { k_glu_fwd(act, NULL, gate.data(), up.data(), n, rk.rd); });
                check_copy(rk, h0.data(), rows, cols, NULL, "k_glu_fwd kept", trial);
                /* and widened back (gemm.cu's emulation of a GEMM reading it): the bf16 values, exactly */
                std::vector<float> wide((size_t)n, -7.0f);
                const uint16_t *bits = (const uint16_t *)rk.mem.data();
                emu_launch(dim3(blocks), block,
                           [&] { k_widen_bf16(wide.data(), bits, rows, cols, rk.rd.rld); });
                for (int64_t i = 0; i < n; i++)
                    if (!same_bits(wide[(size_t)i], vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(h0[(size_t)i]))))
                        fail_msg("k_widen_bf16 trial %d: element %lld is %a, the copy's value %a", trial, (long long)i,
                                 (double)wide[(size_t)i],
                                 (double)vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(h0[(size_t)i])));
            }
            /* a GEMM's epilogue: the bias, pre, the activation, the copy */
            std::vector<float> c0 = gate, c1 = gate, pre((size_t)n);
            emu_launch(grid, block, [&] { k_epilogue(c0.data(), bias.data(), pre.data(), act, vla_cuda_ready_of(NULL, NULL, rows, cols), rows, cols); });
            amax = 0.0f;
            ready_buf re(rows, cols, o);
            emu_launch(grid, block, [&] { k_epilogue(c1.data(), bias.data(), pre.data(), act, re.rd, rows, cols); });
            assert_memory_equal(c0.data(), c1.data(), sizeof(float) * (size_t)n);
            check_copy(re, c1.data(), rows, cols, o, "k_epilogue", trial);
            if (act != VLA_ACT_IDENTITY && !o) { /* kept (ops.h, KEPT COPIES): no C, the GEMM's t in pre */
                std::vector<float> pk = gate;
                ready_buf rk(rows, cols, NULL);
                emu_launch(grid, block, [&] { k_epilogue(NULL, bias.data(), pk.data(), act, rk.rd, rows, cols); });
                assert_memory_equal(pk.data(), pre.data(), sizeof(float) * (size_t)n);
                check_copy(rk, c0.data(), rows, cols, NULL, "k_epilogue kept", trial);
            }
        }
        /* the backward's bf16 copies: the activation's (d_in after the add), the GLU's dgate and dup */
        std::vector<float> d0 = up, d1 = gate; /* different starts: d_in is written, not added to (ops.h) */
        emu_launch(grid, block, [&] { k_act_bwd(act, d0.data(), dh.data(), gate.data(), n, vla_cuda_ready_of(NULL, NULL, rows, cols)); });
        ready_buf ra(rows, cols, NULL);
        emu_launch(grid, block, [&] { k_act_bwd(act, d1.data(), dh.data(), gate.data(), n, ra.rd); });
        assert_memory_equal(d0.data(), d1.data(), sizeof(float) * (size_t)n);
        check_copy(ra, d1.data(), rows, cols, NULL, "k_act_bwd", trial);
        std::vector<float> dg((size_t)n), du((size_t)n);
        ready_buf rdg(rows, cols, NULL), rdu(rows, cols, NULL);
        emu_launch(grid, block, [&] { k_glu_bwd(act, dg.data(), du.data(), dh.data(), gate.data(), up.data(), n, rdg.rd, rdu.rd); });
        check_copy(rdg, dg.data(), rows, cols, NULL, "k_glu_bwd dgate", trial);
        check_copy(rdu, du.data(), rows, cols, NULL, "k_glu_bwd dup", trial);
    }
}

/* ---- the optimizer and the reductions ---------------------------------------------------------------- */

static void test_optimizer_many_tensors(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    const int64_t sizes[] = {1, 5, MULTI_CHUNK, MULTI_CHUNK + 3, 2 * MULTI_CHUNK + 700, 257};
    const int count = (int)(sizeof sizes / sizeof sizes[0]);
    for (int trial = 0; trial < 3; trial++) { /* 0: no guard (grad_scale), 1: a finite guard, 2: a NaN guard */
        std::vector<std::vector<float>> W[2], G, M[2], V[2], E[2];
        for (int i = 0; i < count; i++) {
            std::vector<float> w = rand_vec(sizes[i], 1), m = rand_vec(sizes[i], 0.1f), v = rand_vec(sizes[i], 0.01f);
            for (auto &x : v) x = fabsf(x);
            G.push_back(rand_vec(sizes[i], 2));
            std::vector<float> e = rand_vec(sizes[i], 1);
            for (int k = 0; k < 2; k++) W[k].push_back(w), M[k].push_back(m), V[k].push_back(v), E[k].push_back(e);
        }
        float guard = trial == 2 ? NAN : 0.37f;
        vla_adamw_scalars sc = {0.9f, 0.1f, 0.999f, 0.001f, 0.0447f, 1e-8f, -1e-3f, 0.9999f, 0.81f,
                                trial ? &guard : NULL};
        bool decay[6];
        std::vector<float *> w[2], m[2], v[2], e[2];
        std::vector<const float *> g, ew[2];
        for (int i = 0; i < count; i++) {
            decay[i] = i % 2 == 0;
            g.push_back(G[(size_t)i].data());
            for (int k = 0; k < 2; k++) {
                w[k].push_back(W[k][(size_t)i].data()), m[k].push_back(M[k][(size_t)i].data());
                v[k].push_back(V[k][(size_t)i].data()), e[k].push_back(E[k][(size_t)i].data());
                ew[k].push_back(W[k][(size_t)i].data());
            }
        }
        /* cpu, then the kernels as vla_cuda_adamw_multi / _ema_multi launch them */
        cpu->adamw_multi(count, w[0].data(), g.data(), m[0].data(), v[0].data(), sizes, decay, &sc);
        cpu->ema_multi(count, e[0].data(), ew[0].data(), sizes, 0.99f, 0.01f, trial ? &guard : NULL);
        std::vector<multi_adamw_t> t((size_t)count);
        std::vector<multi_ema_t> te((size_t)count);
        std::vector<int64_t> first((size_t)count + 1);
        int64_t chunks = adamw_multi_plan(count, w[1].data(), g.data(), m[1].data(), v[1].data(), sizes, decay, &sc,
                                          t.data(), first.data());
        emu_launch(dim3((unsigned)chunks), dim3(256), [&] { k_adamw_multi(t.data(), first.data(), count, sc); });
        chunks = ema_multi_plan(count, e[1].data(), ew[1].data(), sizes, te.data(), first.data());
        emu_launch(dim3((unsigned)chunks), dim3(256),
                   [&] { k_ema_multi(te.data(), first.data(), count, 0.99f, 0.01f, trial ? &guard : NULL); });
        for (int i = 0; i < count; i++) {
            size_t bytes = sizeof(float) * (size_t)sizes[i];
            if (memcmp(W[0][(size_t)i].data(), W[1][(size_t)i].data(), bytes) ||
                memcmp(M[0][(size_t)i].data(), M[1][(size_t)i].data(), bytes) ||
                memcmp(V[0][(size_t)i].data(), V[1][(size_t)i].data(), bytes))
                fail_msg("k_adamw_multi trial %d: tensor %d (%lld elements) differs from the cpu's", trial, i,
                         (long long)sizes[i]);
            if (memcmp(E[0][(size_t)i].data(), E[1][(size_t)i].data(), bytes))
                fail_msg("k_ema_multi trial %d: tensor %d differs from the cpu's", trial, i);
        }
    }
}

/* Σx² of one vector as vla_cuda_sum_squares queues it: k_reduce_partial over reduce_cut's blocks, then
 * k_reduce_final */
static double sum_squares_single(const float *x, int64_t n) {
    int64_t nb, per;
    reduce_cut(n, &nb, &per);
    std::vector<double> partial((size_t)nb);
    double out = 0;
    emu_launch(dim3((unsigned)nb), dim3(RT), [&] { k_reduce_partial(R_SUMSQ, x, NULL, n, per, partial.data()); });
    emu_launch(dim3(1), dim3(RT), [&] { k_reduce_final(R_SUMSQ, partial.data(), nb, &out); });
    return out;
}

static void test_sum_squares_many_vectors(void **state) {
    (void)state;
    const int64_t sizes[] = {1, 4095, 4096, 4097, 0, 300001, 17};
    const int count = (int)(sizeof sizes / sizeof sizes[0]);
    std::vector<std::vector<float>> X;
    std::vector<const float *> x;
    for (int i = 0; i < count; i++) X.push_back(rand_vec(sizes[i] > 0 ? sizes[i] : 1, 3)), x.push_back(X.back().data());
    std::vector<sumsq_vec> v((size_t)count);
    int64_t blocks = sumsq_plan(count, x.data(), sizes, v.data());
    std::vector<double> part((size_t)(blocks > 0 ? blocks : 1)), sums((size_t)count);
    double total = -1;
    emu_launch(dim3((unsigned)blocks), dim3(RT), [&] { k_sumsq_multi_partial(v.data(), count, part.data()); });
    emu_launch(dim3((unsigned)count), dim3(RT), [&] { k_sumsq_multi_final(v.data(), count, part.data(), blocks, sums.data()); });
    emu_launch(dim3(1), dim3(1), [&] { k_sum_in_order(sums.data(), count, &total); });
    double in_order = 0;
    for (int i = 0; i < count; i++) {
        double one = sizes[i] > 0 ? sum_squares_single(x[(size_t)i], sizes[i]) : 0.0;
        long double ref = 0;
        for (int64_t k = 0; k < sizes[i]; k++) ref += (long double)x[(size_t)i][k] * x[(size_t)i][k];
        if (memcmp(&one, &sums[(size_t)i], sizeof one))
            fail_msg("k_sumsq_multi: vector %d (%lld elements) is %.17g, the single reduction's %.17g", i,
                     (long long)sizes[i], sums[(size_t)i], one);
        assert_true(fabsl(ref - (long double)one) <= 1e-12L * (ref + 1)); /* and it is the sum */
        in_order += sums[(size_t)i];
    }
    assert_memory_equal(&total, &in_order, sizeof total);
}

/* ---- the per-segment linear ---------------------------------------------------------------------- */

/* ‖a − b‖ ≤ tol·max(‖b‖, floor) (2-norms), the kernel's own summation order against the cpu's; floor: a
 * norm the error may be judged against where b's own is zero (test_backends' criterion: a gradient that
 * is zero in exact arithmetic — one key per query, so P = 1 — comes back as rounding noise of the size of
 * its neighbours') */
static void close_norm(const std::vector<float> &a, const std::vector<float> &b, double tol, const char *what, int trial,
                       double floor = 0) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); i++) num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), den += (double)b[i] * b[i];
    if (!(sqrt(num) <= tol * fmax(sqrt(den), floor) + 1e-30))
        fail_msg("%s trial %d: relative error %.3g (tolerance %.1g)", what, trial, sqrt(num / (den > 0 ? den : 1)), tol);
}

static double norm2(const std::vector<float> &x) {
    double s = 0;
    for (float e : x) s += (double)e * e;
    return sqrt(s);
}

static void test_segment_linear(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    for (int trial = 0; trial < 6; trial++) {
        int32_t n_seg = (int32_t)rnd(1, 6), n_mat = (int32_t)rnd(1, 3);
        std::vector<int32_t> cu((size_t)n_seg + 1, 0), ids((size_t)n_seg);
        for (int32_t s = 0; s < n_seg; s++) {
            cu[(size_t)s + 1] = cu[(size_t)s] + (int32_t)(s == 1 ? 0 : rnd(1, 40)); /* segment 1 empty */
            ids[(size_t)s] = (int32_t)rnd(0, n_mat - 1);
        }
        int64_t n = cu[(size_t)n_seg], in = rnd(1, 90), out = trial == 5 ? rnd(130, 160) : rnd(1, 90);
        std::vector<float> x = rand_vec(n * in, 1), w = rand_vec(n_mat * in * out, 0.5f), b = rand_vec(n_mat * out, 1);
        std::vector<float> dy = rand_vec(n * out, 1), y0((size_t)(n * out)), y1((size_t)(n * out));
        std::vector<float> dx0 = rand_vec(n * in, 1), dw0 = rand_vec(n_mat * in * out, 1), db0 = rand_vec(n_mat * out, 1);
        std::vector<float> dx1((size_t)(n * in), NAN), dw1 = dw0, db1 = db0; /* dx is written (ops.h) */
        cpu->segment_linear_forward(y0.data(), x.data(), w.data(), b.data(), ids.data(), cu.data(), n_seg, in, out);
        cpu->segment_linear_backward(dx0.data(), dw0.data(), db0.data(), dy.data(), x.data(), w.data(), ids.data(),
                                     cu.data(), n_seg, in, out);
        /* the launches as segment.cu makes them: row tiles of one segment (dev_index.h) … */
        vla_seg_chunks tiles;
        assert_int_equal(vla_seg_chunks_make_rows(&tiles, cu.data(), n_seg, SEG_TM), VLA_OK);
        unsigned nc = (unsigned)tiles.n_chunks;
        emu_launch(dim3(nc, (unsigned)((out + SEG_TN - 1) / SEG_TN)), dim3(SEG_THREADS), [&] {
            k_seg_gemm(y1.data(), x.data(), in, out, w.data(), in * out, out, 1, b.data(), tiles.start, tiles.end,
                       tiles.seg, ids.data());
        });
        emu_launch(dim3(nc, (unsigned)((in + SEG_TN - 1) / SEG_TN)), dim3(SEG_THREADS), [&] {
            k_seg_gemm(dx1.data(), dy.data(), out, in, w.data(), in * out, 1, out, NULL, tiles.start, tiles.end,
                       tiles.seg, ids.data());
        });
        vla_seg_chunks_free(&tiles);
        /* … and the rows grouped by embodiment for dW and db (vla_rows_csr_make) */
        std::vector<int32_t> row_e((size_t)(n > 0 ? n : 1));
        for (int32_t s = 0; s < n_seg; s++)
            for (int32_t r = cu[(size_t)s]; r < cu[(size_t)s + 1]; r++) row_e[(size_t)r] = ids[(size_t)s];
        vla_rows_csr csr;
        assert_int_equal(vla_rows_csr_make(&csr, row_e.data(), n), VLA_OK);
        int64_t i_tiles = (in + SEG_TM - 1) / SEG_TM;
        emu_launch(dim3((unsigned)(csr.n_groups * i_tiles), (unsigned)((out + SEG_TN - 1) / SEG_TN)), dim3(SEG_THREADS), [&] {
            k_seg_wgrad(dw1.data(), x.data(), dy.data(), in, out, csr.dst, csr.off, csr.items, i_tiles);
        });
        emu_launch(dim3((unsigned)((csr.n_groups * out + 255) / 256)), dim3(256),
                   [&] { k_seg_bgrad(db1.data(), dy.data(), out, csr.dst, csr.off, csr.items, csr.n_groups); });
        vla_rows_csr_free(&csr);
        close_norm(y1, y0, 1e-5, "k_seg_gemm (y)", trial);
        close_norm(dx1, dx0, 1e-5, "k_seg_gemm (dx)", trial);
        close_norm(dw1, dw0, 1e-5, "k_seg_wgrad", trial);
        close_norm(db1, db0, 1e-6, "k_seg_bgrad", trial);
    }
}

/* ---- the masked MSE ------------------------------------------------------------------------------- */

static void test_masked_mse(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    for (int trial = 0; trial < 6; trial++) {
        int64_t S = rnd(1, 5), H = rnd(1, 20), D = rnd(1, 12);
        std::vector<float> pred = rand_vec(S * H * D, 2), target = rand_vec(S * H * D, 2);
        std::vector<uint8_t> pad((size_t)(S * H));
        std::vector<int32_t> real((size_t)S);
        for (auto &p : pad) p = rnd(0, 3) == 0;
        for (auto &r : real) r = (int32_t)rnd(-1, D + 2); /* clamped to [0, D] */
        if (trial == 5) std::fill(pad.begin(), pad.end(), 1); /* nothing real: loss 0, no gradient */
        vla_mse_reduction red = trial % 2 ? VLA_MSE_MEAN_ALL : VLA_MSE_MEAN_REAL;
        double divisor = trial == 3 ? 7.5 : 0.0;
        std::vector<float> g0((size_t)(S * H * D)), g1((size_t)(S * H * D), -1.0f);
        double loss0 = 0.25, loss1 = 0.25; /* accumulated into */
        cpu->masked_mse_acc(pred.data(), target.data(), S, H, D, pad.data(), real.data(), red, divisor, g0.data(), &loss0);
        /* as vla_cuda_masked_mse_acc launches them */
        bool live;
        double denom = mse_denom(S, H, D, pad.data(), real.data(), red, divisor, &live);
        std::vector<double> rows((size_t)(S * H));
        emu_launch(dim3((unsigned)((S * H + 127) / 128)), dim3(128), [&] {
            k_mse_rows(pred.data(), target.data(), S, H, D, pad.data(), real.data(), rows.data());
        });
        emu_launch(dim3(2), dim3(256), [&] { /* a grid smaller than the elements: the grid-stride loop */
            k_mse_grad(g1.data(), pred.data(), target.data(), S, H, D, pad.data(), real.data(), live ? 2.0 / denom : 0.0);
        });
        emu_launch(dim3(1), dim3(1), [&] { k_mse_add(rows.data(), S * H, denom, live, &loss1); });
        assert_memory_equal(g0.data(), g1.data(), sizeof(float) * g0.size());
        if (!(fabs(loss1 - loss0) <= 1e-14 * fabs(loss0)))
            fail_msg("masked MSE trial %d: the device's loss %.17g, the cpu's %.17g", trial, loss1, loss0);
    }
}

/* ---- the f32 attention ------------------------------------------------------------------------------ */

/* a packed prefix-LM batch: a one-token sample, then n_seg − 1 of min_len..max_len tokens, the last third
 * of each sample the suffix (group 1) */
struct packed_batch {
    std::vector<int32_t> cu, grp;
    vla_attn_seqs seqs;
    int64_t T;
    packed_batch(int32_t n_seg, int32_t max_len, int32_t min_len = 2) : cu((size_t)n_seg + 1, 0) {
        for (int32_t s = 0; s < n_seg; s++)
            cu[(size_t)s + 1] = cu[(size_t)s] + (int32_t)(s == 0 ? 1 : rnd(min_len, max_len));
        T = cu[(size_t)n_seg];
        grp.assign((size_t)T, 0);
        for (int32_t s = 0; s < n_seg; s++) {
            int32_t len = cu[(size_t)s + 1] - cu[(size_t)s];
            for (int32_t t = 0; t < len; t++) grp[(size_t)(cu[(size_t)s] + t)] = t >= len - len / 3 ? 1 : 0;
        }
        seqs = {n_seg, cu.data(), grp.data()};
    }
};

/* the plan of bq × bk tiles as attention.cu builds and packs it (its upload is these words) */
struct packed_plan {
    vla_attn_plan p;
    vla_attn_pack_layout l;
    std::vector<int32_t> words;
    /* keys: the queries' own (self-attention), or the n_src sides given (the cached forward: cache, new) */
    packed_plan(const vla_attn_config *cfg, int32_t bq, int32_t bk, const vla_attn_seqs *qs, int n_src = 1,
                const vla_attn_seqs *const *ks = NULL) {
        const vla_attn_seqs *self[1] = {qs};
        const vla_attn_seqs *const *srcs = ks ? ks : self;
        assert_int_equal(vla_attn_plan_make(&p, cfg, bq, bk, VLA_ATTN_FOLD_ROWS, qs, n_src, srcs), VLA_OK);
        l = vla_attn_plan_pack_layout(&p, qs, n_src, srcs);
        words.assign((size_t)l.words, 0);
        vla_attn_plan_pack(&p, &l, qs, n_src, srcs, words.data());
    }
    ~packed_plan() { vla_attn_plan_free(&p); }
    void into(vla_attn_args *a) const { vla_attn_args_plan(a, words.data(), &l, &p); }
};

static vla_attn_config attn_config(int32_t H, int32_t Hkv, int32_t d, vla_precision prec) {
    vla_attn_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_heads = H, cfg.n_kv_heads = Hkv, cfg.head_dim = d, cfg.precision = prec;
    return cfg;
}

static void test_attention_simt(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    const struct {
        int32_t H, Hkv, d, splits;
    } shapes[] = {{2, 2, 16, 1}, {4, 1, 24, 3}, {4, 2, 8, 2}, {3, 3, 40, 1}};
    int trial = 0;
    for (const auto &sh : shapes) {
        packed_batch pb((int32_t)rnd(2, 4), 70);
        const vla_attn_seqs &qs = pb.seqs;
        const int64_t T = pb.T;
        vla_attn_config cfg = attn_config(sh.H, sh.Hkv, sh.d, VLA_PREC_FP32);
        int64_t nq = T * sh.H * sh.d, nk = T * sh.Hkv * sh.d;
        std::vector<float> q = rand_vec(nq, 1), k = rand_vec(nk, 1), v = rand_vec(nk, 1), dout = rand_vec(nq, 1);
        /* the cpu's */
        std::vector<float> out0((size_t)nq), lse0((size_t)(T * sh.H)), dq0 = rand_vec(nq, 0.1f), dk0 = rand_vec(nk, 0.1f),
                                                                            dv0 = rand_vec(nk, 0.1f);
        std::vector<float> dq1 = dq0, dk1 = dk0, dv1 = dv0;
        assert_int_equal(cpu->attention_forward(&cfg, out0.data(), lse0.data(), q.data(), k.data(), v.data(), &qs, &qs,
                                                NULL, NULL),
                         VLA_OK);
        assert_int_equal(cpu->attention_backward(&cfg, dq0.data(), dk0.data(), dv0.data(), dout.data(), q.data(),
                                                 k.data(), v.data(), out0.data(), lse0.data(), &qs, &qs, NULL),
                         VLA_OK);
        /* the plan as attention.cu builds and uploads it for the f32 kernels */
        packed_plan pp(&cfg, VLA_SIMT_TILE, VLA_SIMT_TILE, &qs);
        const vla_attn_plan &plan = pp.p;
        vla_attn_args a;
        memset(&a, 0, sizeof a);
        pp.into(&a);
        std::vector<float> out1((size_t)nq, -9.0f), lse1((size_t)(T * sh.H), -9.0f);
        a.q = q.data(), a.k[0] = k.data(), a.v[0] = v.data(), a.out = out1.data(), a.lse = lse1.data();
        emu_launch(dim3((unsigned)(a.n_qt * a.H)), dim3(128), [&] { k_simt_fwd(a); },
                   vla_attn_simt_smem(a.d, VLA_SIMT_FWD_SMEM));
        close_norm(out1, out0, 1e-5, "k_simt_fwd (out)", trial);
        close_norm(lse1, lse0, 1e-6, "k_simt_fwd (lse)", trial);
        /* the backward: rowsum(dO·O) (k_rowdot's), dK/dV in kv_splits parts summed in order, then dQ */
        int64_t rows = plan.nq * plan.H;
        std::vector<float> dvec((size_t)rows);
        for (int64_t r = 0; r < rows; r++) {
            double acc = 0;
            for (int c = 0; c < sh.d; c++) acc += (double)dout[(size_t)(r * sh.d + c)] * out1[(size_t)(r * sh.d + c)];
            dvec[(size_t)r] = (float)acc;
        }
        a.d_out = dout.data(), a.lse_in = lse1.data(), a.dvec = dvec.data();
        a.dq = dq1.data(), a.dk = dk1.data(), a.dv = dv1.data();
        int64_t n_kv = plan.nk[0] * plan.Hkv * plan.d;
        std::vector<float> parts((size_t)(2 * sh.splits * n_kv), 0.0f);
        a.kv_splits = sh.splits;
        if (sh.splits > 1) a.part_stride = n_kv, a.dk_part = parts.data(), a.dv_part = parts.data() + sh.splits * n_kv;
        emu_launch(dim3((unsigned)(a.n_kt * a.Hkv * a.kv_splits)), dim3(128), [&] { k_simt_dkdv(a); },
                   vla_attn_simt_smem(a.d, VLA_SIMT_DKDV_SMEM));
        if (sh.splits > 1) /* the parts summed in order, as attention.cu does */
            emu_launch(dim3(2), dim3(256), [&] { k_sum_parts(dk1.data(), dv1.data(), a.dk_part, a.dv_part, n_kv, sh.splits); });
        emu_launch(dim3((unsigned)(a.n_qt * a.H)), dim3(128), [&] { k_simt_dq(a); },
                   vla_attn_simt_smem(a.d, VLA_SIMT_DQ_SMEM));
        close_norm(dq1, dq0, 1e-4, "k_simt_dq", trial);
        close_norm(dk1, dk0, 1e-4, "k_simt_dkdv (dk)", trial);
        close_norm(dv1, dv0, 1e-4, "k_simt_dkdv (dv)", trial);
        trial++;
    }
}

/* ---- the bf16 tensor-core attention ----------------------------------------------------------------- */

/* x [rows][d] as the kernels' bf16 copy: [rows][dp], dp = d rounded up to 8, zeros past d (cast_rows.h) */
static std::vector<uint16_t> bf16_copy(const std::vector<float> &x, int64_t rows, int d, int dp) {
    std::vector<uint16_t> c((size_t)(rows * dp), 0);
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < d; j++) c[(size_t)(r * dp + j)] = vla_nf_f32_to_bf16(x[(size_t)(r * d + j)]);
    return c;
}

/* k_mma_fwd<D> one staging way (0: f32 tensors, 1: bf16 copies, 2: copies prefetched) */
template <int D>
static void mma_forward(vla_attn_args a, int way, std::vector<float> &out, std::vector<float> &lse) {
    constexpr int BK = bk_of(D);
    a.out = out.data(), a.lse = lse.data(), a.q_splits = 1;
    dim3 grid((unsigned)(a.n_qt * a.H)), block(NTH);
    if (way == 0) emu_launch(grid, block, [&] { k_mma_fwd<D, BK, false, float>(a); }, vla_attn_smem_fwd(D, 0).bytes);
    if (way == 1) emu_launch(grid, block, [&] { k_mma_fwd<D, BK, false, uint16_t>(a); }, vla_attn_smem_fwd(D, 0).bytes);
    if (way == 2) emu_launch(grid, block, [&] { k_mma_fwd<D, BK, true, uint16_t>(a); }, vla_attn_smem_fwd(D, 1).bytes);
}

/* The forward's key walk split into S parts (SPLIT KEYS) through the prefetching k_mma_fwd<D>, combined in
 * part order by k_combine_parts as attention.cu does, against the unsplit walk's out and lse and the cpu's
 * out (ref); rows = the plan's query rows × heads */
template <int D>
static void check_split_keys(vla_attn_args b, int64_t rows, int S, const std::vector<float> &out,
                             const std::vector<float> &lse, const std::vector<float> &ref, int trial) {
    const int d = b.d;
    b.q_splits = S, b.q_rows = rows;
    std::vector<float> po((size_t)(S * rows * d)), pm((size_t)(S * rows)), pl((size_t)(S * rows));
    b.o_part = po.data(), b.m_part = pm.data(), b.l_part = pl.data();
    std::vector<float> os(out.size(), -9.0f), ls(lse.size(), -9.0f);
    constexpr int BK = bk_of(D);
    emu_launch(dim3((unsigned)(b.n_qt * b.H * S)), dim3(NTH), [&] { k_mma_fwd<D, BK, true, uint16_t>(b); },
               vla_attn_smem_fwd(D, 1).bytes);
    emu_launch(dim3(3), dim3(256),
               [&] { k_combine_parts(os.data(), ls.data(), NULL, b.o_part, b.m_part, b.l_part, rows, d, S); });
    /* not the unsplit bits: each part rounds its P to bf16 against its own running max, the unsplit walk
     * against the max so far — P·V differs within P's rounding (2⁻⁹ relative), the sums l within f32's */
    close_norm(os, out, 2e-3, "k_mma_fwd split keys + k_combine_parts (out)", trial);
    close_norm(ls, lse, 1e-6, "k_mma_fwd split keys + k_combine_parts (lse)", trial);
    close_norm(os, ref, 4e-3, "k_mma_fwd split keys + k_combine_parts (out) vs the cpu", trial);
}

/* k_mma_dkdv<D> (DQ: with dQ fused) one staging way (0: f32 tensors, 1: bf16 copies, 2: copies prefetched),
 * on attention.cu's grid, (k-tile, kv head, part), of its blocks (head dim 256: eight warps) */
template <int D, bool DQ>
static void mma_dkdv(const vla_attn_args &b, int way) {
    constexpr int BQ = kv_bq_of(D), DC = dc_of(D);
    dim3 grid((unsigned)(b.n_kt * b.Hkv * b.kv_splits)), blk(32 * VLA_ATTN_MMA_KV_WARPS(D));
    if (way == 0)
        emu_launch(grid, blk, [&] { k_mma_dkdv<D, BQ, DC, false, float, DQ>(b); }, vla_attn_smem_dkdv(D, 0, DQ).bytes);
    if (way == 1)
        emu_launch(grid, blk, [&] { k_mma_dkdv<D, BQ, DC, false, uint16_t, DQ>(b); }, vla_attn_smem_dkdv(D, 0, DQ).bytes);
    if (way == 2)
        emu_launch(grid, blk, [&] { k_mma_dkdv<D, BQ, DC, true, uint16_t, DQ>(b); }, vla_attn_smem_dkdv(D, 1, DQ).bytes);
}

template <int D>
static void check_mma_forward(int32_t H, int32_t Hkv, int d, int trial, int32_t min_len, int32_t max_len) {
    const vla_ops *cpu = vla_backend_find("cpu");
    packed_batch pb((int32_t)rnd(2, 4), max_len, min_len);
    const vla_attn_seqs &qs = pb.seqs;
    const int64_t T = pb.T;
    vla_attn_config cfg = attn_config(H, Hkv, d, VLA_PREC_BF16);
    int64_t nq = T * H * d, nk = T * Hkv * d;
    std::vector<float> q = rand_vec(nq, 1), k = rand_vec(nk, 1), v = rand_vec(nk, 1);
    /* the reference: the cpu's f32 attention of the operands rounded to bf16 */
    std::vector<float> qr = q, kr = k, vr = v;
    for (auto *x : {&qr, &kr, &vr})
        for (auto &e : *x) e = vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(e));
    vla_attn_config cf = cfg;
    cf.precision = VLA_PREC_FP32;
    std::vector<float> out0((size_t)nq), lse0((size_t)(T * H));
    assert_int_equal(cpu->attention_forward(&cf, out0.data(), lse0.data(), qr.data(), kr.data(), vr.data(), &qs, &qs,
                                            NULL, NULL),
                     VLA_OK);
    /* the plan as attention.cu builds it for the bf16 kernels: 64 query rows, bk_of(D) keys */
    packed_plan pp(&cfg, VLA_ATTN_MMA_ROWS, bk_of(D), &qs);
    vla_attn_args a;
    memset(&a, 0, sizeof a);
    pp.into(&a);
    a.q = q.data(), a.k[0] = k.data(), a.v[0] = v.data(), a.kv_splits = 1;
    a.dp = (d + 7) / 8 * 8;
    std::vector<uint16_t> qb = bf16_copy(q, T * H, d, a.dp), kb = bf16_copy(k, T * Hkv, d, a.dp),
                          vb = bf16_copy(v, T * Hkv, d, a.dp);
    a.qb = qb.data(), a.kb[0] = kb.data(), a.vb[0] = vb.data();
    std::vector<float> out[3], lse[3];
    for (int way = 0; way < 3; way++) {
        out[way].assign((size_t)nq, -9.0f), lse[way].assign((size_t)(T * H), -9.0f);
        mma_forward<D>(a, way, out[way], lse[way]);
    }
    for (int way = 1; way < 3; way++)
        if (memcmp(out[way].data(), out[0].data(), sizeof(float) * (size_t)nq) ||
            memcmp(lse[way].data(), lse[0].data(), sizeof(float) * (size_t)(T * H)))
            fail_msg("k_mma_fwd<%d> trial %d: staging way %d gives other bits than the f32 staging", D, trial, way);
    check_split_keys<D>(a, pp.p.nq * pp.p.H, 2 + trial % 2, out[0], lse[0], out0, trial);
    close_norm(out[0], out0, 4e-3, "k_mma_fwd (out)", trial); /* P rounded to bf16 for P·V */
    close_norm(lse[0], lse0, 1e-4, "k_mma_fwd (lse)", trial);
    /* the backward, as attention.cu runs it: rowsum(dO·O), dK/dV per (k-tile, kv head, column block, part)
     * on a plan of kv_bq_of(D) queries × 64 keys, the parts summed in order, then dQ on the forward's plan */
    std::vector<float> dout = rand_vec(nq, 1), dor = dout;
    for (auto &e : dor) e = vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(e));
    std::vector<float> dq0((size_t)nq, 0.0f), dk0((size_t)nk, 0.0f), dv0((size_t)nk, 0.0f);
    assert_int_equal(cpu->attention_backward(&cf, dq0.data(), dk0.data(), dv0.data(), dor.data(), qr.data(), kr.data(),
                                             vr.data(), out0.data(), lse0.data(), &qs, &qs, NULL),
                     VLA_OK);
    int64_t rows = T * H;
    std::vector<float> dvec((size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        double acc = 0;
        for (int c = 0; c < d; c++) acc += (double)dout[(size_t)(r * d + c)] * out[0][(size_t)(r * d + c)];
        dvec[(size_t)r] = (float)acc;
    }
    std::vector<uint16_t> dob = bf16_copy(dout, T * H, d, a.dp);
    packed_plan pk(&cfg, kv_bq_of(D), VLA_ATTN_MMA_ROWS, &qs);
    const int splits = 1 + trial % 2;
    /* one backward staged one way: two passes, or fused (dQ added by the dK/dV pass); misaligned: dq one
     * float into its allocation, as test_conformance's misaligned case hands it */
    auto backward = [&](int way, bool fused, std::vector<float> &gq, std::vector<float> &gk, std::vector<float> &gv,
                        bool misaligned = false) {
        gk.assign((size_t)nk, 0.0f), gv.assign((size_t)nk, 0.0f);
        std::vector<float> dq_mem((size_t)nq + 2, 0.0f);
        float *dq_at = dq_mem.data() + ((uintptr_t)dq_mem.data() & 7u ? 1 : 0) + (misaligned ? 1 : 0);
        vla_attn_args b = a;
        b.d_out = dout.data(), b.dob = dob.data(), b.lse_in = lse[0].data(), b.dvec = dvec.data();
        b.dq = dq_at, b.dk = gk.data(), b.dv = gv.data();
        b.dq_pairs = vla_attn_dq_pairs(b.dq, d); /* as attention.cu decides it */
        pk.into(&b);
        int64_t n_kv = pk.p.nk[0] * pk.p.Hkv * pk.p.d;
        std::vector<float> parts((size_t)(2 * splits * n_kv), 0.0f);
        b.kv_splits = splits, b.fused_dq = fused;
        if (splits > 1) b.part_stride = n_kv, b.dk_part = parts.data(), b.dv_part = parts.data() + splits * n_kv;
        if (fused) mma_dkdv<D, true>(b, way);
        else mma_dkdv<D, false>(b, way);
        if (splits > 1)
            emu_launch(dim3(2), dim3(256), [&] { k_sum_parts(gk.data(), gv.data(), b.dk_part, b.dv_part, n_kv, splits); });
        if (!fused) {
            pp.into(&b);
            constexpr int BK = bk_of(D);
            dim3 grid((unsigned)(b.n_qt * b.H)), blk(NTH);
            if (way == 0) emu_launch(grid, blk, [&] { k_mma_dq<D, BK, false, float>(b); }, vla_attn_smem_dq(D, 0).bytes);
            if (way == 1) emu_launch(grid, blk, [&] { k_mma_dq<D, BK, false, uint16_t>(b); }, vla_attn_smem_dq(D, 0).bytes);
            if (way == 2) emu_launch(grid, blk, [&] { k_mma_dq<D, BK, true, uint16_t>(b); }, vla_attn_smem_dq(D, 1).bytes);
        }
        gq.assign(dq_at, dq_at + nq);
    };
    std::vector<float> dq[3], dk[3], dv[3];
    for (int way = 0; way < 3; way++) backward(way, false, dq[way], dk[way], dv[way]);
    for (int way = 1; way < 3; way++)
        if (dq[way] != dq[0] || dk[way] != dk[0] || dv[way] != dv[0])
            fail_msg("k_mma_dkdv/dq<%d> trial %d: staging way %d gives other bits than the f32 staging", D, trial, way);
    /* fused: dK/dV the two-pass bits (the same arithmetic); dQ the same dS·K products summed per k-tile and
     * added atomically, so the two-pass dQ's within f32 summation order (the emulation runs blocks in turn:
     * on a GPU the order of the atomics varies, the products do not) */
    for (int way = 0; way < 4; way++) { /* way 3: the prefetching kernel on a dq 4 bytes off 8-byte alignment */
        std::vector<float> fq, fk, fv;
        backward(way == 3 ? 2 : way, true, fq, fk, fv, way == 3);
        if (fk != dk[0] || fv != dv[0])
            fail_msg("k_mma_dkdv<%d> fused trial %d way %d: dK/dV other bits than the two-pass backward's", D, trial, way);
        close_norm(fq, dq[0], 1e-5, "k_mma_dkdv fused (dq) vs k_mma_dq", trial, norm2(dv[0]));
    }
    /* P and dS rounded to bf16 for their products; dQ and dK judged against dV's norm where theirs is 0 */
    close_norm(dq[0], dq0, 1e-2, "k_mma_dq", trial, norm2(dv0));
    close_norm(dk[0], dk0, 1e-2, "k_mma_dkdv (dk)", trial, norm2(dv0));
    close_norm(dv[0], dv0, 1e-2, "k_mma_dkdv (dv)", trial);
}

/* The cached forward (sampling's flow steps: π0.5's action tokens over the prefix's KV cache and their own
 * keys, two key sources per sample) through k_mma_fwd, the three staging ways, against the cpu's */
template <int D>
static void check_mma_cached(int32_t H, int32_t Hkv, int d, int trial) {
    const vla_ops *cpu = vla_backend_find("cpu");
    int32_t n_seg = (int32_t)rnd(1, 3);
    std::vector<int32_t> ccu((size_t)n_seg + 1, 0), ncu((size_t)n_seg + 1, 0);
    for (int32_t s = 0; s < n_seg; s++) {
        ccu[(size_t)s + 1] = ccu[(size_t)s] + (int32_t)rnd(30, 150); /* the cached prefix: walks of 1–5 k-tiles */
        ncu[(size_t)s + 1] = ncu[(size_t)s] + (int32_t)rnd(1, 20); /* the new rows: queries and keys */
    }
    int64_t Tc = ccu[(size_t)n_seg], Tn = ncu[(size_t)n_seg];
    std::vector<int32_t> cg((size_t)Tc, 0), ng((size_t)Tn, 1);
    vla_attn_seqs cs = {n_seg, ccu.data(), cg.data()}, ns = {n_seg, ncu.data(), ng.data()};
    const vla_attn_seqs *srcs[2] = {&cs, &ns};
    vla_attn_config cfg = attn_config(H, Hkv, d, VLA_PREC_BF16), cf = attn_config(H, Hkv, d, VLA_PREC_FP32);
    int64_t nq = Tn * H * d;
    std::vector<float> q = rand_vec(nq, 1), kc = rand_vec(Tc * Hkv * d, 1), vc = rand_vec(Tc * Hkv * d, 1),
                       kn = rand_vec(Tn * Hkv * d, 1), vn = rand_vec(Tn * Hkv * d, 1);
    std::vector<float> qr = q, kcr = kc, vcr = vc, knr = kn, vnr = vn;
    for (auto *x : {&qr, &kcr, &vcr, &knr, &vnr})
        for (auto &e : *x) e = vla_nf_bf16_to_f32(vla_nf_f32_to_bf16(e));
    std::vector<float> out0((size_t)nq), lse0((size_t)(Tn * H));
    assert_int_equal(cpu->attention_forward_cached(&cf, out0.data(), lse0.data(), qr.data(), &ns, kcr.data(), vcr.data(),
                                                   &cs, knr.data(), vnr.data(), &ns, NULL),
                     VLA_OK);
    packed_plan pp(&cfg, VLA_ATTN_MMA_ROWS, bk_of(D), &ns, 2, srcs);
    vla_attn_args a;
    memset(&a, 0, sizeof a);
    pp.into(&a);
    a.q = q.data(), a.k[0] = kc.data(), a.v[0] = vc.data(), a.k[1] = kn.data(), a.v[1] = vn.data(), a.kv_splits = 1;
    a.dp = (d + 7) / 8 * 8;
    std::vector<uint16_t> qb = bf16_copy(q, Tn * H, d, a.dp), kcb = bf16_copy(kc, Tc * Hkv, d, a.dp),
                          vcb = bf16_copy(vc, Tc * Hkv, d, a.dp), knb = bf16_copy(kn, Tn * Hkv, d, a.dp),
                          vnb = bf16_copy(vn, Tn * Hkv, d, a.dp);
    a.qb = qb.data(), a.kb[0] = kcb.data(), a.vb[0] = vcb.data(), a.kb[1] = knb.data(), a.vb[1] = vnb.data();
    std::vector<float> out[3], lse[3];
    for (int way = 0; way < 3; way++) {
        out[way].assign((size_t)nq, -9.0f), lse[way].assign((size_t)(Tn * H), -9.0f);
        mma_forward<D>(a, way, out[way], lse[way]);
    }
    for (int way = 1; way < 3; way++)
        if (out[way] != out[0] || lse[way] != lse[0])
            fail_msg("k_mma_fwd<%d> cached trial %d: staging way %d gives other bits than the f32 staging", D, trial, way);
    close_norm(out[0], out0, 4e-3, "k_mma_fwd cached (out)", trial);
    close_norm(lse[0], lse0, 1e-4, "k_mma_fwd cached (lse)", trial);
    check_split_keys<D>(a, pp.p.nq * pp.p.H, 3, out[0], lse[0], out0, trial); /* a chunk's walk, as sampling splits it */
}

static void test_attention_mma(void **state) {
    (void)state;
    /* samples of 70–140 tokens: q-tiles walking two or three k-tiles (and k-tiles two or three q-tiles), so
     * the walks' barriers between tiles and the split walks' parts are exercised; and shorter ones */
    check_mma_forward<64>(2, 2, 64, 0, 70, 140);
    check_mma_forward<48>(2, 1, 37, 1, 2, 100); /* an odd head dim: dQ's atomics one element at a time */
    check_mma_forward<64>(4, 2, 64, 2, 2, 60);
    /* π0.5's Gemma: 32-key tiles in the forward and dQ; in dK/dV 32-query tiles and blocks of two warp groups,
     * each with half the columns, sharing Pᵀ and dSᵀ through shared memory; 40–80 tokens: two or three
     * tiles a walk */
    check_mma_forward<256>(2, 1, 256, 5, 40, 80);
    check_mma_cached<64>(8, 1, 64, 3); /* π0.5's action expert: 8 heads, one KV head */
    check_mma_cached<48>(2, 2, 48, 4);
    check_mma_cached<256>(8, 1, 256, 6); /* π0.5's action expert as it is: head dim 256 */
}

int main(void) {
    rng = vla_rng_stream(77, 0);
    if (getenv("VLA_EMU_TEST")) cmocka_set_test_filter(getenv("VLA_EMU_TEST")); /* one test, by name */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cast_operand_is_cpu_cast),
        cmocka_unit_test(test_cast_pair_is_two_casts),
        cmocka_unit_test(test_norm_copies),
        cmocka_unit_test(test_elementwise_copies),
        cmocka_unit_test(test_optimizer_many_tensors),
        cmocka_unit_test(test_sum_squares_many_vectors),
        cmocka_unit_test(test_segment_linear),
        cmocka_unit_test(test_masked_mse),
        cmocka_unit_test(test_attention_simt),
        cmocka_unit_test(test_attention_mma),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
