/* gemm_onednn.c — oneDNN behind the op table's GEMM tiles: dnnl_sgemm for
 * f32, its bf16 matmul primitive for CPUs with AVX512-BF16 or AMX, and what
 * oneDNN runs on this CPU (gemm.h has the interface and the reasons).
 *
 * f32 goes through dnnl_sgemm rather than the matmul primitive: on the
 * models' tile shapes the two ran within noise of each other on a Zen 5
 * (brgemm 184–234 GFLOP/s, sgemm 192–231 on one core), and dnnl_sgemm is a
 * stateless call — no primitive to create per shape, cache and share
 * between threads. Packing weights once into the matmul's blocked layout
 * (format_tag any) gained 1–4% there, f32 or bf16, so no packed-weight
 * cache is kept (issue 35: docs/journal/2026-12-03-issue35-onednn.md).
 *
 * bf16 needs the matmul primitive (oneDNN 2.6 has no bf16 GEMM call in its
 * API). A primitive is made for one shape, strides, alpha and beta, and
 * making one costs tens of microseconds, a large part of a small tile's
 * time, so primitives are kept in a table for the life of the process
 * (the shapes of a run are few: a model's tiles). Each thread executes with
 * its own stream and scratchpad (scratchpad_mode user): oneDNN's library
 * scratchpad is shared by every thread unless oneDNN was built with
 * DNNL_ENABLE_CONCURRENT_EXEC, and tiles run on several threads at once. */
#include "tensor/cpu/gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

void vla_gemm_onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (st != dnnl_success) {
        /* The op table checked the shapes; what is left is oneDNN failing
         * to allocate its packing buffers. The op has no error path, so say
         * what failed and stop. */
        fprintf(stderr, "vla: oneDNN dnnl_sgemm failed (status %d) on %lldx%lldx%lld; out of memory?\n", (int)st,
                (long long)m, (long long)n, (long long)k);
        abort();
    }
}

const char *vla_gemm_onednn_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_sse41: return "sse41";
    default: return "none (reference kernels)";
    }
}

/* oneDNN 2.6's f32 GEMM has kernels for avx512_core, avx512_mic (as
 * avx512_common), avx2, avx and sse41; the VNNI, bf16 and AMX levels add
 * nothing to f32, so its kernels are those of the level below. The level
 * is where its dispatch starts: for some products with B transposed and a
 * long K (704×256×1024 on a Zen 5) perf showed AVX-512 packing feeding its
 * AVX2 micro-kernel, at about the speed of the AVX-512 one there. */
static const char *f32_kernels(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx:
    case dnnl_cpu_isa_avx512_core_bf16:
    case dnnl_cpu_isa_avx512_core_vnni:
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_mic_4ops:
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx2_vnni:
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_sse41: return "sse41";
    default: return "reference";
    }
}

void vla_gemm_onednn_describe(char *library, size_t library_cap, char *kernels, size_t kernels_cap) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(library, library_cap, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    snprintf(kernels, kernels_cap, "%s", f32_kernels());
}

/* ---- bf16 ---- */

enum { CPU_AVX512_BF16 = 1, CPU_AMX_BF16 = 2 };

/* AVX512-BF16 and AMX-BF16 from cpuid, each only where the OS saves the
 * register state it needs (XCR0). Linux also wants AMX's tile data asked
 * for per process (arch_prctl), which oneDNN does before it uses AMX. */
static unsigned cpu_bf16_features(void) {
    unsigned found = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 27))) return 0; /* OSXSAVE: XCR0 readable */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    unsigned long long xcr0 = ((unsigned long long)hi << 32) | lo;
    bool avx512_state = (xcr0 & 0xe6) == 0xe6;            /* SSE, AVX, opmask, ZMM0-15 high, ZMM16-31 */
    bool amx_state = (xcr0 & (3ull << 17)) == (3ull << 17); /* XTILECFG, XTILEDATA */
    __cpuid_count(7, 0, a, b, c, d);
    unsigned max_sub = a;
    bool avx512f = b & (1u << 16), avx512bw = b & (1u << 30), avx512vl = b & (1u << 31);
    if (amx_state && (d & (1u << 22)) && (d & (1u << 24))) found |= CPU_AMX_BF16; /* AMX-BF16, AMX-TILE */
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        if (avx512_state && avx512f && avx512bw && avx512vl && (a & (1u << 5))) found |= CPU_AVX512_BF16;
    }
#endif
    return found;
}

/* Both answers, found once: cpuid traps to the hypervisor in a virtual
 * machine (microseconds), and the bf16 tile asks on every call. */
static unsigned bf16_features;
static bool bf16_native;
static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;

static void find_bf16(void) {
    bf16_features = cpu_bf16_features();
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa(); /* ONEDNN_MAX_CPU_ISA may cap it below the CPU's */
    bf16_native = bf16_features != 0 && (isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx);
}

const char *vla_gemm_bf16_cpu_features(void) {
    static const char *const names[4] = {"none", "avx512_bf16", "amx_bf16", "avx512_bf16+amx_bf16"};
    pthread_once(&bf16_once, find_bf16);
    return names[bf16_features & 3];
}

bool vla_gemm_bf16_native(void) {
    pthread_once(&bf16_once, find_bf16);
    return bf16_native;
}

typedef struct {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a_md, b_md, c_md, scratch_md;
    char impl[64];
} bf16_prim;

#define BF16_PRIMS 256 /* a run's tile shapes; beyond this, primitives are made per call */
static bf16_prim bf16_prims[BF16_PRIMS];
static int bf16_n_prims;
static pthread_mutex_t bf16_mu = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t bf16_engine;
static dnnl_status_t bf16_engine_status = dnnl_success;
static pthread_once_t bf16_engine_once = PTHREAD_ONCE_INIT;

static void make_engine(void) { bf16_engine_status = dnnl_engine_create(&bf16_engine, dnnl_cpu, 0); }

static bool same_key(const bf16_prim *p, const bf16_prim *q) {
    return p->ta == q->ta && p->tb == q->tb && p->m == q->m && p->n == q->n && p->k == q->k && p->lda == q->lda &&
           p->ldb == q->ldb && p->ldc == q->ldc && !memcmp(&p->alpha, &q->alpha, sizeof p->alpha) &&
           !memcmp(&p->beta, &q->beta, sizeof p->beta);
}

static vla_status dnnl_fail(dnnl_status_t st, const char *what) {
    return vla_error(st == dnnl_out_of_memory ? VLA_ERR_NOMEM : VLA_ERR_INTERNAL, "oneDNN bf16 matmul: %s failed (status %d)",
                     what, (int)st);
}

/* The primitive of key `p` (shape, strides, alpha, beta): fills p->prim and
 * the descriptors. */
static vla_status make_prim(bf16_prim *p) {
    dnnl_dims_t ad = {p->m, p->k}, as = {p->ta ? 1 : p->lda, p->ta ? p->lda : 1};
    dnnl_dims_t bd = {p->k, p->n}, bs = {p->tb ? 1 : p->ldb, p->tb ? p->ldb : 1};
    dnnl_dims_t cd = {p->m, p->n}, cs = {p->ldc, 1};
    dnnl_status_t st;
    if ((st = dnnl_memory_desc_init_by_strides(&p->a_md, 2, ad, dnnl_bf16, as)) != dnnl_success ||
        (st = dnnl_memory_desc_init_by_strides(&p->b_md, 2, bd, dnnl_bf16, bs)) != dnnl_success ||
        (st = dnnl_memory_desc_init_by_strides(&p->c_md, 2, cd, dnnl_f32, cs)) != dnnl_success)
        return dnnl_fail(st, "memory descriptor");
    dnnl_matmul_desc_t md;
    if ((st = dnnl_matmul_desc_init(&md, &p->a_md, &p->b_md, NULL, &p->c_md)) != dnnl_success)
        return dnnl_fail(st, "matmul descriptor");
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if ((st = dnnl_primitive_attr_create(&attr)) != dnnl_success) return dnnl_fail(st, "attributes");
    st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && p->alpha != 1.0f) st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &p->alpha);
    if (st == dnnl_success && p->beta != 0.0f) { /* beta = 0: C is not read, as in BLAS */
        st = dnnl_post_ops_create(&po);
        if (st == dnnl_success) st = dnnl_post_ops_append_sum(po, p->beta);
        if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &md, attr, bf16_engine, NULL);
    if (st == dnnl_success) {
        const char *impl = "?";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(p->impl, sizeof p->impl, "%s", impl);
        p->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        st = dnnl_primitive_create(&p->prim, pd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return st == dnnl_success ? VLA_OK : dnnl_fail(st, "primitive creation");
}

/* Each thread's stream and scratchpad, made on its first bf16 call and kept
 * (a stream and a malloc per call cost ~4 µs, three times a 64×64×64 tile's
 * arithmetic); freed when the thread ends. */
typedef struct {
    dnnl_stream_t stream;
    void *scratch;
    size_t scratch_cap;
} thread_ctx;

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_key_status;

static void ctx_free(void *p) {
    thread_ctx *t = p;
    if (t->stream) dnnl_stream_destroy(t->stream);
    free(t->scratch);
    free(t);
}

static void make_ctx_key(void) { ctx_key_status = pthread_key_create(&ctx_key, ctx_free); }

static vla_status thread_ctx_get(size_t scratch_bytes, thread_ctx **out) {
    pthread_once(&ctx_once, make_ctx_key);
    if (ctx_key_status != 0) return vla_error(VLA_ERR_INTERNAL, "oneDNN bf16 matmul: pthread_key_create failed");
    thread_ctx *t = pthread_getspecific(ctx_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t) return vla_error(VLA_ERR_NOMEM, "oneDNN bf16 matmul: out of memory");
        dnnl_status_t st = dnnl_stream_create(&t->stream, bf16_engine, dnnl_stream_default_flags);
        if (st != dnnl_success || pthread_setspecific(ctx_key, t) != 0) {
            ctx_free(t);
            return st != dnnl_success ? dnnl_fail(st, "stream creation")
                                      : vla_error(VLA_ERR_NOMEM, "oneDNN bf16 matmul: pthread_setspecific failed");
        }
    }
    if (scratch_bytes > t->scratch_cap) {
        size_t cap = (scratch_bytes + 4095) & ~(size_t)4095;
        void *p = aligned_alloc(64, cap);
        if (!p) return vla_error(VLA_ERR_NOMEM, "oneDNN bf16 matmul: no memory for a %zu-byte scratchpad", cap);
        free(t->scratch);
        t->scratch = p, t->scratch_cap = cap;
    }
    *out = t;
    return VLA_OK;
}

/* Runs primitive `p` on the operands with this thread's stream and scratchpad. */
static vla_status run_prim(const bf16_prim *p, const uint16_t *a, const uint16_t *b, float *c) {
    size_t scratch_bytes = dnnl_memory_desc_get_size(&p->scratch_md);
    thread_ctx *t = NULL;
    VLA_TRY(thread_ctx_get(scratch_bytes, &t));
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    dnnl_status_t st = dnnl_memory_create(&ma, &p->a_md, bf16_engine, (void *)a);
    if (st == dnnl_success) st = dnnl_memory_create(&mb, &p->b_md, bf16_engine, (void *)b);
    if (st == dnnl_success) st = dnnl_memory_create(&mc, &p->c_md, bf16_engine, c);
    if (st == dnnl_success && scratch_bytes) st = dnnl_memory_create(&ms, &p->scratch_md, bf16_engine, t->scratch);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc},
                                   {DNNL_ARG_SCRATCHPAD, ms}};
        st = dnnl_primitive_execute(p->prim, t->stream, scratch_bytes ? 4 : 3, args);
        if (st == dnnl_success) st = dnnl_stream_wait(t->stream);
    }
    if (ms) dnnl_memory_destroy(ms);
    if (mc) dnnl_memory_destroy(mc);
    if (mb) dnnl_memory_destroy(mb);
    if (ma) dnnl_memory_destroy(ma);
    return st == dnnl_success ? VLA_OK : dnnl_fail(st, "execution");
}

vla_status vla_gemm_bf16_tile(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a,
                              int64_t lda, const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc,
                              const char **impl) {
    if (impl) *impl = "none";
    if (!vla_gemm_bf16_native())
        return vla_error(VLA_ERR_UNSUPPORTED,
                         "bf16 GEMM through oneDNN needs a CPU with AVX512-BF16 or AMX-BF16 (this one: %s; oneDNN "
                         "dispatches to %s); use the emulation (round to bf16, f32 GEMM)",
                         vla_gemm_bf16_cpu_features(), vla_gemm_onednn_isa());
    if (m < 0 || n < 0 || k < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "bf16 GEMM: negative size %lldx%lldx%lld", (long long)m, (long long)n,
                         (long long)k);
    if (m == 0 || n == 0) return VLA_OK;
    if (k == 0) { /* C = beta·C, as the op table defines it */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return VLA_OK;
    }
    pthread_once(&bf16_engine_once, make_engine);
    if (bf16_engine_status != dnnl_success) return dnnl_fail(bf16_engine_status, "CPU engine creation");

    bf16_prim key = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc,
                     .alpha = alpha, .beta = beta};
    const bf16_prim *use = NULL;
    vla_status st = VLA_OK;
    pthread_mutex_lock(&bf16_mu);
    for (int i = 0; i < bf16_n_prims && !use; i++)
        if (same_key(&bf16_prims[i], &key)) use = &bf16_prims[i];
    if (!use && bf16_n_prims < BF16_PRIMS) {
        /* made under the lock: rare (once per shape), and two threads
         * meeting a new shape together make it once */
        st = make_prim(&key);
        if (st == VLA_OK) {
            bf16_prims[bf16_n_prims] = key;
            use = &bf16_prims[bf16_n_prims++];
        }
    }
    pthread_mutex_unlock(&bf16_mu);
    bool own = false;
    if (!use && st == VLA_OK) { /* table full: a primitive for this call alone */
        st = make_prim(&key);
        use = &key, own = st == VLA_OK;
    }
    if (st != VLA_OK) return st;
    if (impl) *impl = use->impl; /* entries are never removed, so the name stays valid */

    int saved = omp_get_max_threads(); /* one thread: see vla_gemm_tile */
    if (saved != 1) omp_set_num_threads(1);
    st = run_prim(use, a, b, c);
    if (saved != 1) omp_set_num_threads(saved);
    if (own) {
        if (impl) *impl = "per-call primitive";
        dnnl_primitive_destroy(key.prim);
    }
    return st;
}
