/* dtype.c — element sizes, names and scalar conversions (rules in dtype.h). */
#include "base/dtype.h"

#include <math.h>
#include <string.h>

#include "base/numfmt.h"

static const struct {
    const char *name, *st_name;
    size_t size;
} dtype_info[VLA_DTYPE_COUNT] = {
    [VLA_F32] = {"f32", "F32", 4},        [VLA_BF16] = {"bf16", "BF16", 2},
    [VLA_F16] = {"f16", "F16", 2},        [VLA_F8E4M3] = {"f8e4m3", "F8_E4M3", 1},
    [VLA_F8E5M2] = {"f8e5m2", "F8_E5M2", 1}, [VLA_I32] = {"i32", "I32", 4},
    [VLA_I64] = {"i64", "I64", 8},        [VLA_U8] = {"u8", "U8", 1},
};

size_t vla_dtype_size(vla_dtype t) { return (unsigned)t < VLA_DTYPE_COUNT ? dtype_info[t].size : 0; }
const char *vla_dtype_name(vla_dtype t) { return (unsigned)t < VLA_DTYPE_COUNT ? dtype_info[t].name : "?"; }
const char *vla_dtype_safetensors_name(vla_dtype t) {
    return (unsigned)t < VLA_DTYPE_COUNT ? dtype_info[t].st_name : "?";
}

vla_status vla_dtype_from_safetensors_name(const char *name, vla_dtype *out) {
    for (int i = 0; i < VLA_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_info[i].st_name) == 0) {
            *out = (vla_dtype)i;
            return VLA_OK;
        }
    return vla_error(VLA_ERR_UNSUPPORTED, "unknown dtype '%s' (supported: F32 BF16 F16 F8_E4M3 F8_E5M2 I32 I64 U8)",
                     name);
}

int vla_dtype_is_float(vla_dtype t) { return t <= VLA_F8E5M2; }

/* ---- bfloat16: the top half of an f32 (base/numfmt.h is the definition,
 * shared with the cpu backend's bf16 GEMM operands and the cuda kernels) -- */

uint16_t vla_f32_to_bf16(float x) { return vla_nf_f32_to_bf16(x); }
float vla_bf16_to_f32(uint16_t h) { return vla_nf_bf16_to_f32(h); }

/* ---- small floats, generic ------------------------------------------------
 * A format with `mbits` mantissa bits and exponent bias `bias`. Finite |x| is
 * rounded to the nearest multiple of its quantum (2^(e−mbits) for normals,
 * 2^(1−bias−mbits) for subnormals) with rint(), which rounds ties to even in
 * the default rounding mode; the scaled value is a small integer, so the
 * division by a power of two is exact. */
static uint32_t encode_small_float(float ax, int mbits, int bias) {
    int e;
    frexpf(ax, &e); /* ax = f·2^e, f in [0.5, 1): unbiased exponent is e−1 */
    int exp_unbiased = e - 1;
    int min_exp = 1 - bias;
    if (ax == 0.0f) return 0;
    if (exp_unbiased < min_exp) { /* subnormal range */
        float q = rintf(ldexpf(ax, -(min_exp - mbits)));
        return (uint32_t)q; /* q == 2^mbits rolls over into the smallest normal */
    }
    float q = rintf(ldexpf(ax, -(exp_unbiased - mbits))); /* in [2^mbits, 2^(mbits+1)] */
    uint32_t m = (uint32_t)q;
    if (m == (1u << (mbits + 1))) {
        m >>= 1;
        exp_unbiased++;
    }
    return ((uint32_t)(exp_unbiased + bias) << mbits) | (m - (1u << mbits));
}

static float decode_small_float(uint32_t mag, int mbits, int bias) {
    uint32_t e = mag >> mbits, m = mag & ((1u << mbits) - 1);
    if (e == 0) return ldexpf((float)m, 1 - bias - mbits);
    return ldexpf((float)(m | (1u << mbits)), (int)e - bias - mbits);
}

/* ---- IEEE binary16 -------------------------------------------------------- */

uint16_t vla_f32_to_f16(float x) {
    uint32_t u = vla_hd_f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float ax = fabsf(x);
    if (isnan(x)) return sign | 0x7e00u;
    if (ax >= 65520.0f) return sign | 0x7c00u; /* ≥ max + half ulp rounds to Inf */
    return sign | (uint16_t)encode_small_float(ax, 10, 15);
}

float vla_f16_to_f32(uint16_t h) {
    float sign = (h & 0x8000u) ? -1.0f : 1.0f;
    uint32_t mag = h & 0x7fffu;
    if ((mag >> 10) == 0x1f) return (mag & 0x3ffu) ? vla_hd_bits_f32(0x7fc00000u | ((uint32_t)(h & 0x8000u) << 16)) : sign * INFINITY;
    return sign * decode_small_float(mag, 10, 15);
}

/* ---- FP8 E4M3 (no Inf; 0x7f is NaN; max 448) ------------------------------ */

uint8_t vla_f32_to_e4m3(float x) {
    uint8_t sign = (uint8_t)((vla_hd_f32_bits(x) >> 24) & 0x80u);
    if (isnan(x)) return sign | 0x7fu;
    float ax = fabsf(x);
    if (ax >= VLA_E4M3_MAX) return sign | 0x7eu; /* saturate (Inf too) */
    uint32_t code = encode_small_float(ax, 3, 7);
    if (code > 0x7eu) code = 0x7eu; /* rounding up from just below 448 cannot pass it, but stay safe */
    return sign | (uint8_t)code;
}

float vla_e4m3_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu;
    float v;
    if (mag == 0x7fu) v = NAN;
    else v = decode_small_float(mag, 3, 7);
    return (b & 0x80u) ? -v : v;
}

/* ---- FP8 E5M2 (IEEE-like: Inf 0x7c, NaN 0x7d..0x7f; max 57344) ------------- */

uint8_t vla_f32_to_e5m2(float x) {
    uint8_t sign = (uint8_t)((vla_hd_f32_bits(x) >> 24) & 0x80u);
    if (isnan(x)) return sign | 0x7fu;
    float ax = fabsf(x);
    if (ax >= VLA_E5M2_MAX) return sign | 0x7bu; /* saturate (Inf too) */
    uint32_t code = encode_small_float(ax, 2, 15);
    if (code > 0x7bu) code = 0x7bu;
    return sign | (uint8_t)code;
}

float vla_e5m2_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu;
    float v;
    if (mag == 0x7cu) v = INFINITY;
    else if (mag > 0x7cu) v = NAN;
    else v = decode_small_float(mag, 2, 15);
    return (b & 0x80u) ? -v : v;
}

/* ---- bulk conversion ------------------------------------------------------ */

static float load_float(const void *src, vla_dtype t, size_t i) {
    switch (t) {
    case VLA_F32: return ((const float *)src)[i];
    case VLA_BF16: return vla_bf16_to_f32(((const uint16_t *)src)[i]);
    case VLA_F16: return vla_f16_to_f32(((const uint16_t *)src)[i]);
    case VLA_F8E4M3: return vla_e4m3_to_f32(((const uint8_t *)src)[i]);
    case VLA_F8E5M2: return vla_e5m2_to_f32(((const uint8_t *)src)[i]);
    case VLA_I32: return (float)((const int32_t *)src)[i];
    case VLA_I64: return (float)((const int64_t *)src)[i];
    case VLA_U8: return (float)((const uint8_t *)src)[i];
    default: return NAN;
    }
}

static int64_t load_int(const void *src, vla_dtype t, size_t i) {
    switch (t) {
    case VLA_I32: return ((const int32_t *)src)[i];
    case VLA_I64: return ((const int64_t *)src)[i];
    case VLA_U8: return ((const uint8_t *)src)[i];
    default: {
        float f = load_float(src, t, i);
        if (!(f == f)) return 0;
        if (f >= 9.2e18f) return INT64_MAX;
        if (f <= -9.2e18f) return INT64_MIN;
        return (int64_t)f;
    }
    }
}

void vla_convert(void *dst, vla_dtype dst_type, const void *src, vla_dtype src_type, size_t n) {
    if (dst_type == src_type) {
        memmove(dst, src, n * vla_dtype_size(src_type));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        switch (dst_type) {
        case VLA_F32: ((float *)dst)[i] = load_float(src, src_type, i); break;
        case VLA_BF16: ((uint16_t *)dst)[i] = vla_f32_to_bf16(load_float(src, src_type, i)); break;
        case VLA_F16: ((uint16_t *)dst)[i] = vla_f32_to_f16(load_float(src, src_type, i)); break;
        case VLA_F8E4M3: ((uint8_t *)dst)[i] = vla_f32_to_e4m3(load_float(src, src_type, i)); break;
        case VLA_F8E5M2: ((uint8_t *)dst)[i] = vla_f32_to_e5m2(load_float(src, src_type, i)); break;
        case VLA_I32: {
            int64_t v = load_int(src, src_type, i);
            ((int32_t *)dst)[i] = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
            break;
        }
        case VLA_I64: ((int64_t *)dst)[i] = load_int(src, src_type, i); break;
        case VLA_U8: {
            int64_t v = load_int(src, src_type, i);
            ((uint8_t *)dst)[i] = v > 255 ? 255 : v < 0 ? 0 : (uint8_t)v;
            break;
        }
        default: break;
        }
    }
}
