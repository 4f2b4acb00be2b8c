/* dtype.h — element types and scalar conversions between them.
 *
 * Conversions to narrow floats round to nearest, ties to even. bf16 and f16
 * follow IEEE 754 (overflow goes to ±Inf, NaN stays NaN). The FP8 formats are
 * those of "FP8 Formats for Deep Learning" (Micikevicius et al., 2022), as in
 * PyTorch's float8_e4m3fn / float8_e5m2 and cuBLASLt's CUDA_R_8F_E4M3/E5M2:
 *   E4M3: bias 7, no infinities, NaN = S.1111.111, max ±448
 *   E5M2: bias 15, IEEE-like, ±Inf = S.11111.00, max ±57344
 * f32 → FP8 here *saturates*: finite values and ±Inf beyond the largest
 * normal become ±max (what an FP8 training recipe wants: an overflowing
 * activation is clipped, not turned into NaN). NaN stays NaN, sign kept. */
#ifndef VLA_BASE_DTYPE_H
#define VLA_BASE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    VLA_F32,
    VLA_BF16,
    VLA_F16,
    VLA_F8E4M3,
    VLA_F8E5M2,
    VLA_I32,
    VLA_I64,
    VLA_U8,
    VLA_DTYPE_COUNT
} vla_dtype;

size_t vla_dtype_size(vla_dtype t);
/* Short lowercase name: "f32", "bf16", "f8e4m3", … */
const char *vla_dtype_name(vla_dtype t);
/* safetensors' names: "F32", "BF16", "F16", "F8_E4M3", "F8_E5M2", "I32", "I64", "U8". */
const char *vla_dtype_safetensors_name(vla_dtype t);
vla_status vla_dtype_from_safetensors_name(const char *name, vla_dtype *out);
int vla_dtype_is_float(vla_dtype t);

uint16_t vla_f32_to_bf16(float x);
float vla_bf16_to_f32(uint16_t h);
uint16_t vla_f32_to_f16(float x);
float vla_f16_to_f32(uint16_t h);
uint8_t vla_f32_to_e4m3(float x);
float vla_e4m3_to_f32(uint8_t b);
uint8_t vla_f32_to_e5m2(float x);
float vla_e5m2_to_f32(uint8_t b);

/* Largest finite magnitudes (for FP8 scaling recipes). */
#define VLA_E4M3_MAX 448.0f
#define VLA_E5M2_MAX 57344.0f

/* Convert n elements between any two dtypes (through f32 for floats,
 * through int64 for integers; float → int truncates toward zero). */
void vla_convert(void *dst, vla_dtype dst_type, const void *src, vla_dtype src_type, size_t n);

#endif
