/* test_gemm.c — the GEMM libraries behind the op table (tensor/cpu/gemm.h):
 * oneDNN's and OpenBLAS's per-tile calls against a double-precision
 * reference and against each other; the op table routes through the
 * library selected; VLA_GEMM's parsing; what `vla version` reports against
 * /proc/cpuinfo; oneDNN's bf16 tile against the reference of its rounded
 * inputs and the emulation (round to bf16, f32 GEMM), gated on the CPU
 * features /proc/cpuinfo lists. ctest runs it again with VLA_GEMM set to
 * the other library and with ONEDNN_MAX_CPU_ISA=AVX2 (a CPU without
 * AVX-512, whatever runs the tests). */
#include "test_util.h"
#include "gemm_ref.h"
#include "base/dtype.h"
#include "tensor/cpu/gemm.h"
#include "tensor/ops.h"

#include <cblas.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Within f32 accumulation error of the reference; the padding right of
 * column n untouched (equal to `before`). */
static void check_close(const char *what, int m, int n, int k, int ldc, const float *c, const double *ref,
                        const float *before) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            float got = c[i * ldc + j];
            if (j >= n) {
                if (memcmp(&got, &before[i * ldc + j], sizeof got) != 0)
                    fail_msg("%s %dx%dx%d: padding at (%d,%d) written", what, m, n, k, i, j);
                continue;
            }
            double tol = 1e-5 * sqrt((double)k) + 1e-6;
            if (!(fabs(got - ref[i * ldc + j]) <= tol))
                fail_msg("%s %dx%dx%d at (%d,%d): %.9g vs %.9g", what, m, n, k, i, j, got, ref[i * ldc + j]);
        }
}

static const int sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 48, 80}, {128, 130, 96}, {5, 1, 300}, {1, 77, 65}};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

/* One product of the sweeps: size s, transposes and beta = 0 from bits of
 * t, leading dimensions padded; random A, B, C (with NaN in C where beta =
 * 0: it must not be read), A and B rounded to bf16 when `bf16` (kept in
 * ha/hb too); `ref` the double reference. */
typedef struct {
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    float beta;
    float *a, *b, *c0;
    uint16_t *ha, *hb;
    double *ref;
} gemm_case;

static void case_make(gemm_case *g, int s, int t, uint64_t seed, bool bf16) {
    bool beta0 = t & 4;
    *g = (gemm_case){.ta = t & 1, .tb = t & 2, .m = sizes[s][0], .n = sizes[s][1], .k = sizes[s][2]};
    g->lda = (g->ta ? g->m : g->k) + 3, g->ldb = (g->tb ? g->k : g->n) + 2, g->ldc = g->n + 5;
    int64_t na = (int64_t)(g->ta ? g->k : g->m) * g->lda, nb = (int64_t)(g->tb ? g->n : g->k) * g->ldb;
    int64_t nc = (int64_t)g->m * g->ldc;
    g->a = malloc(sizeof(float) * na), g->b = malloc(sizeof(float) * nb), g->c0 = malloc(sizeof(float) * nc);
    g->ref = malloc(sizeof(double) * nc);
    randn(g->a, na, seed + s);
    randn(g->b, nb, seed + 100 + s);
    randn(g->c0, nc, seed + 200 + s);
    if (bf16) {
        g->ha = malloc(2 * na), g->hb = malloc(2 * nb);
        for (int64_t i = 0; i < na; i++) g->ha[i] = vla_f32_to_bf16(g->a[i]), g->a[i] = vla_bf16_to_f32(g->ha[i]);
        for (int64_t i = 0; i < nb; i++) g->hb[i] = vla_f32_to_bf16(g->b[i]), g->b[i] = vla_bf16_to_f32(g->hb[i]);
    }
    g->beta = beta0 ? 0.0f : 0.25f;
    if (beta0)
        for (int i = 0; i < g->m; i++) g->c0[i * g->ldc] = NAN;
    for (int64_t i = 0; i < nc; i++) g->ref[i] = g->c0[i];
    naive_gemm(g->ta, g->tb, g->m, g->n, g->k, 0.5f, g->a, g->lda, g->b, g->ldb, g->beta, g->ref, g->ldc);
}

/* A copy of the case's C to compute into. */
static float *case_c(const gemm_case *g) {
    float *c = malloc(sizeof(float) * g->m * g->ldc);
    memcpy(c, g->c0, sizeof(float) * g->m * g->ldc);
    return c;
}

static void case_free(gemm_case *g) { free(g->a), free(g->b), free(g->c0), free(g->ha), free(g->hb), free(g->ref); }

/* Two results of the case within f32 accumulation error of each other. */
static void check_pair(const char *what, const gemm_case *g, const float *x, const float *y) {
    for (int i = 0; i < g->m; i++)
        for (int j = 0; j < g->n; j++) {
            float u = x[i * g->ldc + j], v = y[i * g->ldc + j];
            if (!(fabsf(u - v) <= 2e-5f * sqrtf((float)g->k) + 2e-6f))
                fail_msg("%s: %.9g vs %.9g at (%d,%d) of %dx%dx%d", what, u, v, i, j, g->m, g->n, g->k);
        }
}

/* Each library's tile: every transpose, padded leading dimensions, alpha and
 * beta (beta = 0 with NaN in C: C is not read, as BLAS defines it), against
 * the double reference; and the two libraries within that error of each other. */
static void test_tiles_both_libraries(void **state) {
    (void)state;
    for (int s = 0; s < NSIZES; s++)
        for (int t = 0; t < 8; t++) {
            gemm_case g;
            case_make(&g, s, t, 1, false);
            float *c[VLA_GEMM_LIB_COUNT];
            for (int lib = 0; lib < VLA_GEMM_LIB_COUNT; lib++) {
                c[lib] = case_c(&g);
                vla_gemm_tile((vla_gemm_lib)lib, g.ta, g.tb, g.m, g.n, g.k, 0.5f, g.a, g.lda, g.b, g.ldb, g.beta,
                              c[lib], g.ldc);
                check_close(vla_gemm_lib_name((vla_gemm_lib)lib), g.m, g.n, g.k, g.ldc, c[lib], g.ref, g.c0);
            }
            check_pair("onednn vs openblas", &g, c[0], c[1]); /* the second implementation agrees with the first */
            free(c[0]), free(c[1]);
            case_free(&g);
        }
}

/* The op table computes with the selected library: a one-tile product
 * through ops->sgemm has the bits of that library's single call. */
static void test_op_table_routes_to_selected(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend(); /* host memory: the test reads c directly */
    vla_gemm_lib saved = vla_gemm_lib_active();
    int m = 48, n = 40, k = 300;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
    float *c = malloc(sizeof(float) * m * n), *d = malloc(sizeof(float) * m * n);
    randn(a, m * k, 7);
    randn(b, k * n, 8);
    for (int lib = 0; lib < VLA_GEMM_LIB_COUNT; lib++) {
        vla_gemm_lib_select((vla_gemm_lib)lib);
        assert_int_equal(vla_gemm_lib_active(), lib);
        ops->sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
        vla_gemm_tile((vla_gemm_lib)lib, false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, d, n);
        if (memcmp(c, d, sizeof(float) * m * n) != 0) fail_msg("ops->sgemm did not run %s", vla_gemm_lib_name(lib));
    }
    vla_gemm_lib_select(saved);
    free(a), free(b), free(c), free(d);
}

/* VLA_GEMM: the two names, the default when unset or empty, and an error
 * naming the variable and the choices otherwise. The environment is put
 * back as ctest set it. */
static void test_library_names_and_env(void **state) {
    (void)state;
    vla_gemm_lib lib;
    assert_int_equal(vla_gemm_lib_parse("onednn", &lib), VLA_OK);
    assert_int_equal(lib, VLA_GEMM_ONEDNN);
    assert_int_equal(vla_gemm_lib_parse("openblas", &lib), VLA_OK);
    assert_int_equal(lib, VLA_GEMM_OPENBLAS);
    assert_int_equal(vla_gemm_lib_parse("mkl", &lib), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "'mkl' is not one of onednn, openblas"));
    assert_string_equal(vla_gemm_lib_name(VLA_GEMM_OPENBLAS), "openblas");

    const char *was = getenv("VLA_GEMM");
    char *keep = was ? strdup(was) : NULL;
    setenv("VLA_GEMM", "OpenBLAS", 1); /* names are exact */
    assert_int_equal(vla_gemm_lib_from_env(&lib), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "VLA_GEMM=OpenBLAS"));
    assert_non_null(strstr(vla_error_message(), "onednn or openblas"));
    setenv("VLA_GEMM", "openblas", 1);
    assert_int_equal(vla_gemm_lib_from_env(&lib), VLA_OK);
    assert_int_equal(lib, VLA_GEMM_OPENBLAS);
    setenv("VLA_GEMM", "", 1);
    vla_gemm_lib dflt;
    assert_int_equal(vla_gemm_lib_from_env(&dflt), VLA_OK);
    unsetenv("VLA_GEMM");
    assert_int_equal(vla_gemm_lib_from_env(&lib), VLA_OK);
    assert_int_equal(lib, dflt);
    if (keep) setenv("VLA_GEMM", keep, 1);
    free(keep);
}

/* The flags of the first CPU in /proc/cpuinfo, space-padded ("  avx2 ... "),
 * or NULL where there is none (not Linux/x86). */
static char *cpu_flags(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return NULL;
    char line[8192];
    char *out = NULL;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            char *colon = strchr(line, ':');
            size_t n = strlen(colon ? colon + 1 : line);
            out = malloc(n + 3);
            snprintf(out, n + 3, " %s ", colon ? colon + 1 : line);
            for (char *p = out; *p; p++)
                if (*p == '\n' || *p == '\t') *p = ' ';
            break;
        }
    fclose(f);
    return out;
}

static bool has_flag(const char *flags, const char *name) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s ", name);
    return strstr(flags, pat) != NULL;
}

/* What `vla version` prints: oneDNN's f32 kernels follow the CPU's
 * features as Linux lists them (and ONEDNN_MAX_CPU_ISA), and the bf16 check
 * finds the features Linux lists; OpenBLAS names its core. */
static void test_describe_matches_cpu(void **state) {
    (void)state;
    char lib[128], kern[128];
    vla_gemm_lib_describe(VLA_GEMM_ONEDNN, lib, sizeof lib, kern, sizeof kern);
    assert_true(!strncmp(lib, "oneDNN ", 7));
    vla_gemm_lib_describe(VLA_GEMM_OPENBLAS, lib, sizeof lib, kern, sizeof kern);
    assert_true(!strncmp(lib, "OpenBLAS ", 9));
    assert_true(strlen(kern) > 0);
    assert_string_equal(kern, openblas_get_corename()); /* whatever the environment chose: not read here */

    char *flags = cpu_flags();
    if (!flags) {
        printf("# no /proc/cpuinfo flags: CPU checks skipped\n");
        return;
    }
    vla_gemm_lib_describe(VLA_GEMM_ONEDNN, lib, sizeof lib, kern, sizeof kern);
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    bool capped_avx2 = cap && !strcasecmp(cap, "AVX2");
    bool avx512_core = has_flag(flags, "avx512f") && has_flag(flags, "avx512bw") && has_flag(flags, "avx512vl") &&
                       has_flag(flags, "avx512dq") && has_flag(flags, "avx512cd");
    const char *want = avx512_core && !capped_avx2 ? "avx512_core"
                       : has_flag(flags, "avx2")   ? "avx2"
                       : has_flag(flags, "avx")    ? "avx"
                                                   : NULL;
    printf("# oneDNN: %s, f32 kernels %s, ISA %s; bf16 CPU features %s, native %d\n", lib, kern,
           vla_gemm_onednn_isa(), vla_gemm_bf16_cpu_features(), vla_gemm_bf16_native());
    if (want) assert_string_equal(kern, want);

    bool avx512_bf16 = has_flag(flags, "avx512_bf16"), amx = has_flag(flags, "amx_bf16") && has_flag(flags, "amx_tile");
    const char *features = vla_gemm_bf16_cpu_features();
    assert_int_equal(strstr(features, "avx512_bf16") != NULL, avx512_bf16);
    assert_int_equal(strstr(features, "amx_bf16") != NULL, amx);
    if (capped_avx2) assert_false(vla_gemm_bf16_native());
    else assert_int_equal(vla_gemm_bf16_native(), avx512_bf16 || amx);
    free(flags);
}

/* oneDNN's bf16 tile where the CPU has it: every transpose, padded leading
 * dimensions, alpha, beta (and beta = 0 over NaN), k = 0; against the double
 * reference of the bf16-rounded inputs and the emulation (the same rounded
 * inputs through the f32 tile), with a kernel (not oneDNN's reference
 * loops); the same bits again on another thread of a team. Elsewhere, a
 * refusal that says what the CPU lacks. */
static void test_bf16_tile(void **state) {
    (void)state;
    uint16_t one = vla_f32_to_bf16(1.0f);
    float c1 = 5.0f;
    if (!vla_gemm_bf16_native()) {
        assert_int_equal(vla_gemm_bf16_tile(false, false, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c1, 1, NULL),
                         VLA_ERR_UNSUPPORTED);
        assert_non_null(strstr(vla_error_message(), "AVX512-BF16 or AMX-BF16"));
        assert_true(c1 == 5.0f);
        printf("# bf16 not native here (%s): refused, the emulation stays\n", vla_gemm_bf16_cpu_features());
        return;
    }
    const char *impl = NULL;
    for (int s = 0; s < NSIZES; s++)
        for (int t = 0; t < 8; t++) {
            gemm_case g;
            case_make(&g, s, t, 11, true);
            float *c = case_c(&g), *emu = case_c(&g), *again = case_c(&g);
            assert_int_equal(vla_gemm_bf16_tile(g.ta, g.tb, g.m, g.n, g.k, 0.5f, g.ha, g.lda, g.hb, g.ldb, g.beta, c,
                                                g.ldc, &impl),
                             VLA_OK);
            check_close("bf16", g.m, g.n, g.k, g.ldc, c, g.ref, g.c0);
            if (getenv("VLA_TEST_VERBOSE")) printf("# bf16 %dx%dx%d ta=%d tb=%d: %s\n", g.m, g.n, g.k, g.ta, g.tb, impl);
            if (strstr(impl, "ref")) /* oneDNN's C++ loops: correct, but not what the gate promises */
                fail_msg("bf16 %dx%dx%d ran oneDNN's reference '%s', not a kernel", g.m, g.n, g.k, impl);
            vla_gemm_tile(VLA_GEMM_ONEDNN, g.ta, g.tb, g.m, g.n, g.k, 0.5f, g.a, g.lda, g.b, g.ldb, g.beta, emu, g.ldc);
            check_pair("bf16 vs emulation", &g, c, emu);
            vla_status st2 = VLA_OK; /* the same call on the second thread of a team: the same bits */
#pragma omp parallel num_threads(2)
            if (omp_get_thread_num() == omp_get_num_threads() - 1)
                st2 = vla_gemm_bf16_tile(g.ta, g.tb, g.m, g.n, g.k, 0.5f, g.ha, g.lda, g.hb, g.ldb, g.beta, again,
                                         g.ldc, NULL);
            assert_int_equal(st2, VLA_OK);
            if (memcmp(again, c, sizeof(float) * g.m * g.ldc) != 0)
                fail_msg("bf16 %dx%dx%d: another thread's call gave other bits", g.m, g.n, g.k);
            free(c), free(emu), free(again);
            case_free(&g);
        }
    printf("# bf16 kernel: %s\n", impl);
    c1 = 5.0f; /* k = 0: C = beta·C */
    assert_int_equal(vla_gemm_bf16_tile(false, false, 1, 1, 0, 1.0f, &one, 1, &one, 1, 0.5f, &c1, 1, NULL), VLA_OK);
    assert_true(c1 == 2.5f);
    assert_int_equal(vla_gemm_bf16_tile(false, false, -1, 1, 1, 1.0f, &one, 1, &one, 1, 0.5f, &c1, 1, NULL),
                     VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiles_both_libraries), cmocka_unit_test(test_op_table_routes_to_selected),
        cmocka_unit_test(test_library_names_and_env), cmocka_unit_test(test_describe_matches_cpu),
        cmocka_unit_test(test_bf16_tile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
