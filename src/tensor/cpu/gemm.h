/* gemm.h — which library computes the CPU op table's GEMM tiles (oneDNN or
 * OpenBLAS), the one single-threaded call per tile, what each library runs
 * on this CPU, and oneDNN's bf16 tile for CPUs with AVX512-BF16 or AMX.
 *
 * The op table (ops_cpu.c) cuts every product into tiles by shape alone and
 * calls vla_gemm_tile once per tile (docs/design.md, "Determinism"); this
 * header only decides who computes a tile. oneDNN is the default: it picks
 * its kernels from the CPU's feature bits (cpuid), while OpenBLAS 0.3.21
 * picks them from the CPU's model number and falls back to SSE3 (Prescott)
 * kernels on models it does not know, or runs what OPENBLAS_CORETYPE
 * forces (issue 35, docs/benchmarks.md). OpenBLAS stays the second
 * implementation the tests compare against: `VLA_GEMM=openblas` in the
 * environment, or the build option `-DVLA_GEMM=openblas` for the default.
 * Results are bit-identical across thread counts with either library, not
 * between the two. */
#ifndef VLA_TENSOR_GEMM_H
#define VLA_TENSOR_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    VLA_GEMM_ONEDNN = 0,
    VLA_GEMM_OPENBLAS = 1,
} vla_gemm_lib;
#define VLA_GEMM_LIB_COUNT 2

/* The library the op table uses: set by vla_gemm_lib_select, else the
 * VLA_GEMM environment variable read at first use (an unknown value logs a
 * warning once and keeps the build's default; the CLI refuses it first,
 * vla_gemm_lib_from_env), else the build's default. */
vla_gemm_lib vla_gemm_lib_active(void);
/* Switch libraries (tests, benchmarks). Call while no GEMM runs. */
void vla_gemm_lib_select(vla_gemm_lib lib);
/* The library VLA_GEMM names (the build's default when it is unset or
 * empty); VLA_ERR_INVALID_ARG naming the variable and the choices else. */
vla_status vla_gemm_lib_from_env(vla_gemm_lib *out);
/* "onednn" / "openblas" → the library; VLA_ERR_INVALID_ARG else. */
vla_status vla_gemm_lib_parse(const char *text, vla_gemm_lib *out);
/* "onednn" / "openblas" */
const char *vla_gemm_lib_name(vla_gemm_lib lib);
/* What runs, for `vla version` and benchmarks: the library and its version
 * ("oneDNN 2.6.3", "OpenBLAS 0.3.21") and the kernels its f32 GEMM uses on
 * this CPU (oneDNN: the instruction set its dispatcher picked from the
 * CPU's features, "avx512_core"; OpenBLAS: its core type, "Haswell"). */
void vla_gemm_lib_describe(vla_gemm_lib lib, char *library, size_t library_cap, char *kernels, size_t kernels_cap);

/* C = alpha·op(A)·op(B) + beta·C (row-major, as ops.h) as ONE call of
 * `lib` on the calling thread, whatever OpenMP's thread count: the op
 * table's per-tile call. m, n, k ≥ 1. */
void vla_gemm_tile(vla_gemm_lib lib, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ---- oneDNN (gemm_onednn.c) ---- */

/* dnnl_sgemm on the calling thread (the caller holds OpenMP at one thread). */
void vla_gemm_onednn_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* "oneDNN 2.6.3" and the ISA of its f32 GEMM kernels ("avx512_core",
 * "avx2", ...): the highest f32 ISA at or below the one oneDNN dispatches to
 * on this CPU (dnnl_get_effective_cpu_isa, capped by ONEDNN_MAX_CPU_ISA). */
void vla_gemm_onednn_describe(char *library, size_t library_cap, char *kernels, size_t kernels_cap);
/* The ISA oneDNN dispatches to, as oneDNN names it ("avx512_core_bf16"). */
const char *vla_gemm_onednn_isa(void);

/* bf16 GEMMs, for `--precision=bf16` (issue 31): C (f32) = alpha·op(A)·op(B)
 * + beta·C with A and B in bf16 (vla_bf16 bits, as base/dtype.h rounds
 * them) and f32 accumulation — the emulation's arithmetic (products of two
 * bf16 values are exact in f32), run by oneDNN's bf16 matmul kernels.
 * Native only where the CPU has AVX512-BF16 or AMX-BF16 (cpuid, checked
 * here at run time, with the OS saving the AVX-512 state) and oneDNN
 * dispatches to them; elsewhere the emulation stays (round to bf16, f32
 * GEMM). On a Zen 5 it ran at 2.0× the f32 rate on the models' shapes
 * (`vla bench gemm`, docs/benchmarks.md). */
bool vla_gemm_bf16_native(void);
/* What the bf16 check found, for `vla version`: "avx512_bf16", "amx_bf16",
 * "avx512_bf16+amx_bf16", or "none". */
const char *vla_gemm_bf16_cpu_features(void);
/* One tile, single-threaded like vla_gemm_tile (the op table's split cuts
 * the product and calls this once per tile, so results stay independent of
 * the thread count). VLA_ERR_UNSUPPORTED when !vla_gemm_bf16_native();
 * VLA_ERR_NOMEM or VLA_ERR_INTERNAL when oneDNN fails, with its status.
 * m, n, k ≥ 0 (k = 0: C = beta·C). `impl`, when not NULL, receives oneDNN's
 * name of the kernel ("brg:avx512_core_bf16"). */
vla_status vla_gemm_bf16_tile(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                              const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, float *c,
                              int64_t ldc, const char **impl);

#endif
