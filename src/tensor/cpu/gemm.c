/* gemm.c — the choice of GEMM library for the op table's tiles, OpenBLAS's
 * side of it, and the single-threaded per-tile call (gemm.h says why there
 * are two libraries and which is the default). */
#include "tensor/cpu/gemm.h"
#include "base/log.h"

#include <cblas.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The build's default: -DVLA_GEMM=openblas defines VLA_GEMM_DEFAULT_OPENBLAS. */
#ifdef VLA_GEMM_DEFAULT_OPENBLAS
#define DEFAULT_LIB VLA_GEMM_OPENBLAS
#else
#define DEFAULT_LIB VLA_GEMM_ONEDNN
#endif

static const char *const lib_names[VLA_GEMM_LIB_COUNT] = {"onednn", "openblas"};

/* -1 until first use; then the library. Atomic: tiles on several threads
 * read it, and the first reads may race (both compute the same value). */
static _Atomic int active_lib = -1;

const char *vla_gemm_lib_name(vla_gemm_lib lib) {
    return (unsigned)lib < VLA_GEMM_LIB_COUNT ? lib_names[lib] : "unknown";
}

vla_status vla_gemm_lib_parse(const char *text, vla_gemm_lib *out) {
    for (int i = 0; i < VLA_GEMM_LIB_COUNT; i++)
        if (text && !strcmp(text, lib_names[i])) {
            *out = (vla_gemm_lib)i;
            return VLA_OK;
        }
    return vla_error(VLA_ERR_INVALID_ARG, "GEMM library '%s' is not one of onednn, openblas", text ? text : "");
}

vla_status vla_gemm_lib_from_env(vla_gemm_lib *out) {
    const char *v = getenv("VLA_GEMM");
    *out = DEFAULT_LIB;
    if (!v || !*v) return VLA_OK;
    vla_status st = vla_gemm_lib_parse(v, out);
    if (st != VLA_OK) {
        *out = DEFAULT_LIB;
        return vla_error_context(st, "environment variable VLA_GEMM=%s (unset it, or set onednn or openblas)", v);
    }
    return VLA_OK;
}

vla_gemm_lib vla_gemm_lib_active(void) {
    int v = atomic_load_explicit(&active_lib, memory_order_relaxed);
    if (v >= 0) return (vla_gemm_lib)v;
    vla_gemm_lib lib;
    if (vla_gemm_lib_from_env(&lib) != VLA_OK) VLA_WARN("%s; using %s", vla_error_message(), lib_names[lib]);
    int expected = -1; /* a concurrent first use may have stored it already: one warning */
    if (!atomic_compare_exchange_strong(&active_lib, &expected, (int)lib)) lib = (vla_gemm_lib)expected;
    return lib;
}

void vla_gemm_lib_select(vla_gemm_lib lib) { atomic_store(&active_lib, (int)lib); }

void vla_gemm_lib_describe(vla_gemm_lib lib, char *library, size_t library_cap, char *kernels, size_t kernels_cap) {
    if (lib == VLA_GEMM_ONEDNN) {
        vla_gemm_onednn_describe(library, library_cap, kernels, kernels_cap);
        return;
    }
    /* openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... Haswell MAX_THREADS=64" */
    const char *cfg = openblas_get_config();
    int vlen = 0;
    if (!strncmp(cfg, "OpenBLAS ", 9)) vlen = 9 + (int)strcspn(cfg + 9, " ");
    snprintf(library, library_cap, "%.*s", vlen ? vlen : (int)strlen(cfg), cfg);
    snprintf(kernels, kernels_cap, "%s", openblas_get_corename());
}

void vla_gemm_tile(vla_gemm_lib lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    /* Both libraries (OpenMP builds) thread a call made outside a team when
     * omp_get_max_threads() > 1, and their threaded splits differ by thread
     * count (oneDNN's also made a 64³ product 60–200× slower on a busy
     * 2-core machine), so the count is held at 1 around the call. It is the
     * calling task's setting: other threads are not affected. Inside a team
     * both already run one thread (omp_in_parallel); holding the count there
     * too costs two calls and leaves the rule independent of how each
     * library reads it. */
    int saved = omp_get_max_threads();
    if (saved != 1) omp_set_num_threads(1);
    if (lib == VLA_GEMM_ONEDNN)
        vla_gemm_onednn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m,
                    (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    if (saved != 1) omp_set_num_threads(saved);
}
