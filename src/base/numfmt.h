/* numfmt.h — the narrow number formats as integer arithmetic, for host and
 * device alike (hd.h): f32 → bf16 / f16 / FP8 E4M3 / FP8 E5M2 rounding to
 * nearest even (FP8 saturating to ±max, as base/dtype.h), the way back, and
 * one tensor's step of TransformerEngine's delayed FP8 scaling.
 *
 * bf16 is defined here, once: base/dtype.h's vla_f32_to_bf16, the cpu
 * backend's bf16 operands (tensor/cpu/ops_cpu_precision.c) and the cuda
 * kernels all round with vla_nf_bf16_rne. For f16 and FP8, base/dtype.h is
 * the definition (frexpf/ldexpf/rintf); these are the same functions
 * written without libm so that a CUDA kernel computes them bit for bit as
 * the CPU backend does — the GPU's casts for bf16/FP8 GEMMs, `convert`, and
 * the FP8 scale update all use them. tests/tensor/test_numfmt.c compares
 * every result with base/dtype.h over millions of f32 bit patterns (every
 * exponent, every rounding boundary); tests/base/test_dtype.c checks bf16
 * against a reference of its own. In base/ (not tensor/) because base's
 * dtype conversions need them and base may include nothing above it. */
#ifndef VLA_BASE_NUMFMT_H
#define VLA_BASE_NUMFMT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hd.h"

/* ---- bf16: the top half of an f32, rounded to nearest even ------------------ */
VLA_HD bool vla_nf_f32_bits_nan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* The bits of a non-NaN f32 rounded to bf16's nearest value, ties to even,
 * as f32 bits (the low half zero): the one bf16 rounding. Past bf16's
 * largest finite value (by half an ulp or more) the carry runs into the
 * exponent and gives ±Inf; ±Inf stays. */
VLA_HD uint32_t vla_nf_bf16_rne(uint32_t u) { return (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; }

/* The bf16 code of x; NaN stays NaN, quiet, sign kept. */
VLA_HD uint16_t vla_nf_f32_to_bf16(float x) {
    uint32_t u = vla_hd_f32_bits(x);
    if (vla_nf_f32_bits_nan(u)) return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)(vla_nf_bf16_rne(u) >> 16);
}

VLA_HD float vla_nf_bf16_to_f32(uint16_t h) { return vla_hd_bits_f32((uint32_t)h << 16); }

/* The value bf16 stores for x, as an f32, without the 16-bit trip (a hot
 * loop's form: the cpu backend's bf16 operands); a NaN is returned as it
 * is. */
VLA_HD float vla_nf_bf16_round(float x) {
    uint32_t u = vla_hd_f32_bits(x);
    return vla_nf_f32_bits_nan(u) ? x : vla_hd_bits_f32(vla_nf_bf16_rne(u));
}

/* ---- a small float with `mbits` mantissa bits and exponent bias `bias` -------
 * The code of a finite, non-negative f32 given by its bits `a` (sign
 * cleared), rounded to nearest even; no overflow handling (callers
 * saturate first). The code of 2^mbits out of the subnormal range is the
 * smallest normal's, so a subnormal that rounds up rolls over correctly. */
VLA_HD uint32_t vla_nf_encode_small(uint32_t a, int mbits, int bias) {
    int32_t E = (int32_t)(a >> 23);
    if (E == 0) return 0; /* f32 zero or subnormal: below half the smallest target subnormal */
    uint32_t full = (1u << 23) | (a & 0x7fffffu);
    int32_t e = E - 127, emin = 1 - bias;
    int32_t shift = e >= emin ? 23 - mbits : 23 + emin - mbits - e;
    if (shift >= 25) return 0;
    uint32_t q = full >> shift, rem = full & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    if (e < emin) return q; /* subnormal (or the smallest normal after rounding) */
    if (q == (1u << (mbits + 1))) {
        q >>= 1;
        e++;
    }
    return ((uint32_t)(e + bias) << mbits) | (q & ((1u << mbits) - 1u));
}

VLA_HD float vla_nf_decode_small(uint32_t mag, int mbits, int bias) {
    uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1u);
    if (e == 0) /* m · 2^(1 − bias − mbits): exact in f32 */
        return (float)m * vla_hd_bits_f32((uint32_t)(127 + 1 - bias - mbits) << 23);
    return vla_hd_bits_f32(((uint32_t)((int32_t)e - bias + 127) << 23) | (m << (23 - mbits)));
}

/* ---- IEEE binary16 ----------------------------------------------------------- */
VLA_HD uint16_t vla_nf_f32_to_f16(float x) {
    uint32_t u = vla_hd_f32_bits(x), a = u & 0x7fffffffu;
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 (max + half an ulp): Inf */
    return sign | (uint16_t)vla_nf_encode_small(a, 10, 15);
}

VLA_HD float vla_nf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, mag = h & 0x7fffu;
    if ((mag >> 10) == 0x1fu) return vla_hd_bits_f32((mag & 0x3ffu) ? 0x7fc00000u | sign : 0x7f800000u | sign);
    return vla_hd_bits_f32(vla_hd_f32_bits(vla_nf_decode_small(mag, 10, 15)) | sign);
}

/* ---- FP8 E4M3 (no Inf, NaN 0x7f, max 448) and E5M2 (IEEE-like, max 57344) ---- */
VLA_HD uint8_t vla_nf_f32_to_e4m3(float x) {
    uint32_t u = vla_hd_f32_bits(x), a = u & 0x7fffffffu;
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (a > 0x7f800000u) return sign | 0x7fu;
    if (a >= 0x43e00000u) return sign | 0x7eu; /* >= 448 (Inf too): saturate */
    uint32_t c = vla_nf_encode_small(a, 3, 7);
    return sign | (uint8_t)(c > 0x7eu ? 0x7eu : c);
}

VLA_HD float vla_nf_e4m3_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu, sign = (uint32_t)(b & 0x80u) << 24;
    if (mag == 0x7fu) return vla_hd_bits_f32(0x7fc00000u | sign);
    return vla_hd_bits_f32(vla_hd_f32_bits(vla_nf_decode_small(mag, 3, 7)) | sign);
}

VLA_HD uint8_t vla_nf_f32_to_e5m2(float x) {
    uint32_t u = vla_hd_f32_bits(x), a = u & 0x7fffffffu;
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (a > 0x7f800000u) return sign | 0x7fu;
    if (a >= 0x47600000u) return sign | 0x7bu; /* >= 57344: saturate */
    uint32_t c = vla_nf_encode_small(a, 2, 15);
    return sign | (uint8_t)(c > 0x7bu ? 0x7bu : c);
}

VLA_HD float vla_nf_e5m2_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu, sign = (uint32_t)(b & 0x80u) << 24;
    if (mag == 0x7cu) return vla_hd_bits_f32(0x7f800000u | sign);
    if (mag > 0x7cu) return vla_hd_bits_f32(0x7fc00000u | sign);
    return vla_hd_bits_f32(vla_hd_f32_bits(vla_nf_decode_small(mag, 2, 15)) | sign);
}

/* What an FP8 GEMM operand reads for x at scale s: sat_fp8(x·s), as the
 * format's value (the emulation multiplies it back by 1/s). */
VLA_HD float vla_nf_fp8_round(float xs, bool e4m3) {
    return e4m3 ? vla_nf_e4m3_to_f32(vla_nf_f32_to_e4m3(xs)) : vla_nf_e5m2_to_f32(vla_nf_f32_to_e5m2(xs));
}

/* |x| as an amax contribution: NaN counts as +Inf, so a NaN anywhere stops
 * the scale update (ops.h, fp8_scale_update). */
VLA_HD float vla_nf_amax_of(float x) {
    uint32_t a = vla_hd_f32_bits(x) & 0x7fffffffu;
    return a > 0x7f800000u ? vla_hd_bits_f32(0x7f800000u) : vla_hd_bits_f32(a);
}

/* ---- one tensor's delayed-scaling update (ops.h fp8_scale_update) -------------
 * The history is [L, n], newest row first: tensor i's window is the column
 * h[j·n + i], here h already offset by i and `stride` = n. Returns the new
 * scale (the old one when the window's amax is not finite and positive) and
 * shifts the column one row older, row 0 restarting at 0. The rule is the
 * cpu backend's (tensor/cpu/ops_cpu_precision.c): the window's max taken as
 * fmaxf from 0 (a NaN entry passed over; most_recent reads row 0 as it is),
 * then (fmt_max·two_m)/a in f32, FLT_MAX when that overflows. two_m is
 * 2^−margin, computed once by the caller on the host with exp2f, so a device
 * and the cpu scale by the same float. */
VLA_HD float vla_nf_fmax(float a, float x) { return x != x ? a : a != a ? x : x > a ? x : a; }

VLA_HD float vla_nf_fp8_scale_step(float *h, int64_t stride, int64_t L, float scale, float fmt_max, float two_m,
                                   bool most_recent) {
    float a = h[0];
    if (!most_recent) {
        a = vla_nf_fmax(0.0f, a);
        for (int64_t j = 1; j < L; j++) a = vla_nf_fmax(a, h[j * stride]);
    }
    uint32_t ab = vla_hd_f32_bits(a);
    if ((ab & 0x7f800000u) != 0x7f800000u && a > 0.0f) {
        float sc = (fmt_max * two_m) / a;
        scale = (vla_hd_f32_bits(sc) & 0x7fffffffu) == 0x7f800000u ? 3.40282347e+38f : sc;
    }
    for (int64_t j = L - 1; j > 0; j--) h[j * stride] = h[(j - 1) * stride];
    h[0] = 0.0f;
    return scale;
}

#endif
