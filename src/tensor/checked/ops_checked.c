/* ops_checked.c — the `checked` backend: the CPU kernels, on memory the host
 * cannot touch outside an op call.
 *
 * It proves the backend seam on a machine without a GPU. Every allocation
 * is a shared memory object mapped twice: the address `alloc` returns — the
 * one the host holds, does arithmetic on and hands to the table — is mapped
 * PROT_NONE, so any host read or write through it (a memcpy, a loop, a
 * library handed a tensor pointer) faults at once, as a device pointer
 * would be meaningless to the host; the second mapping of the same pages is
 * read-write and known only here. Each slot translates its pointer
 * arguments from the first mapping to the second and runs the CPU kernel.
 * Model code that passes the policy, training, resume, eval and MPI suites
 * under `checked` (`ctest -R checked`) does everything through the table,
 * which is what a CUDA backend needs.
 *
 * Results are the cpu backend's bit for bit (rtol 0): the kernels are the
 * same functions on the same bytes. There is no per-op system call (a first
 * version flipped mprotect around every op: TLB shootdowns made the suites
 * 5–30× slower), only a locked table lookup per pointer; a pointer the
 * table does not know (host metadata: cu_seqlens, index maps) passes
 * through unchanged.
 *
 * It also holds captured regions (ops.h, run_captured) to the promise a
 * CUDA graph needs — a later call with the same key issues the same ops on
 * the same memory with the same scalars and uploads, and waits for nothing
 * — by tracing each call (below, "the captured-region promise"). */
#include "tensor/checked/ops_checked.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tensor/backend.h"
#include "tensor/key_cache.h"

typedef struct {
    uintptr_t host; /* the PROT_NONE mapping (what alloc returned) */
    char *rw;       /* the read-write mapping of the same pages */
    size_t len;
} region;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static region *regions; /* sorted by host address */
static int n_regions, cap_regions;
static size_t mapped;

/* ---- the captured-region promise (ops.h, run_captured) ----------------------------------------
 * While a region runs, every op call is traced: one 64-bit FNV-1a hash per
 * op of its name, the backend pointers it is given (as the caller holds
 * them), its scalar arguments and the bytes to_device uploads. A device
 * replays the first recording of a key; here each later call with the key
 * must trace the same, op for op. The host metadata ops take (index maps,
 * cu_seqlens, attention layouts and configs, flow times) is traced by
 * content, as a device uploads it; other host structs (the time embedding's
 * config) are not. Inside a region an op may
 * not wait for results (a device cannot, while recording), nor free memory
 * the region did not allocate, and what it allocates it must free. */
typedef struct {
    bool on;
    uint64_t *h;         /* one hash per op */
    const char **name;   /* the ops' names */
    int64_t n, cap;
    void **allocs;       /* allocated inside the region, not yet freed: */
    size_t *alloc_len;   /* their lengths */
    int64_t *alloc_seq;  /* and their order of allocation in the region */
    int n_allocs, cap_allocs;
    int64_t seq;
    char violation[256]; /* the first broken rule */
} chk_trace;
static __thread chk_trace tr;

#define FNV_PRIME 0x100000001b3ull
static void tr_bytes(const void *p, size_t n) {
    if (!tr.on || tr.n == 0) return;
    uint64_t h = tr.h[tr.n - 1];
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * FNV_PRIME;
    tr.h[tr.n - 1] = h;
}
/* A backend pointer: memory the region allocated is traced as (its allocation's number in the region,
 * offset) — a device's recording owns such memory at fixed addresses — other memory by address. */
static void tr_ptr(const void *p) {
    for (int i = 0; i < tr.n_allocs; i++)
        if ((uintptr_t)p >= (uintptr_t)tr.allocs[i] && (uintptr_t)p <= (uintptr_t)tr.allocs[i] + tr.alloc_len[i]) {
            int64_t rel[2] = {tr.alloc_seq[i], (int64_t)((uintptr_t)p - (uintptr_t)tr.allocs[i])};
            tr_bytes(rel, sizeof rel);
            return;
        }
    tr_bytes(&p, sizeof p);
}
static void tr_op(const char *name) {
    if (!tr.on) return;
    if (tr.n == tr.cap) {
        int64_t cap = tr.cap ? 2 * tr.cap : 4096;
        uint64_t *h = realloc(tr.h, (size_t)cap * sizeof *h);
        const char **nm = h ? realloc(tr.name, (size_t)cap * sizeof *nm) : NULL;
        if (h) tr.h = h;
        if (!h || !nm) abort();
        tr.name = nm, tr.cap = cap;
    }
    tr.name[tr.n] = name;
    tr.h[tr.n++] = 0xcbf29ce484222325ull;
    tr_bytes(name, strlen(name));
}
static void tr_violate(const char *op, const char *what) {
    if (tr.on && !tr.violation[0])
        snprintf(tr.violation, sizeof tr.violation, "%s %s inside a captured region (op %lld)", op, what,
                 (long long)tr.n);
}
/* scalar arguments of the WRAP slots, by type; pointers are traced where rw_of translates them */
static void tr_f32(float x) { tr_bytes(&x, sizeof x); }
static void tr_f64(double x) { tr_bytes(&x, sizeof x); }
static void tr_b(bool x) { tr_bytes(&x, sizeof x); }
static void tr_i32(int x) { tr_bytes(&x, sizeof x); }
static void tr_u32(unsigned x) { tr_bytes(&x, sizeof x); }
static void tr_i64(long long x) { tr_bytes(&x, sizeof x); }
static void tr_u64(unsigned long long x) { tr_bytes(&x, sizeof x); }
static void tr_skip(const volatile void *x) { (void)x; }
#define TR_ARG(x)                                                                                          \
    _Generic((x), float: tr_f32, double: tr_f64, bool: tr_b, int: tr_i32, unsigned: tr_u32, long: tr_i64,  \
             long long: tr_i64, unsigned long: tr_u64, unsigned long long: tr_u64, default: tr_skip)(x)
#define TR_CAT_(a, b) a##b
#define TR_CAT(a, b) TR_CAT_(a, b)
#define TR_N_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, N, ...) N
#define TR_N(...) TR_N_(__VA_ARGS__, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define TR_EACH_1(a) TR_ARG(a);
#define TR_EACH_2(a, ...) TR_ARG(a); TR_EACH_1(__VA_ARGS__)
#define TR_EACH_3(a, ...) TR_ARG(a); TR_EACH_2(__VA_ARGS__)
#define TR_EACH_4(a, ...) TR_ARG(a); TR_EACH_3(__VA_ARGS__)
#define TR_EACH_5(a, ...) TR_ARG(a); TR_EACH_4(__VA_ARGS__)
#define TR_EACH_6(a, ...) TR_ARG(a); TR_EACH_5(__VA_ARGS__)
#define TR_EACH_7(a, ...) TR_ARG(a); TR_EACH_6(__VA_ARGS__)
#define TR_EACH_8(a, ...) TR_ARG(a); TR_EACH_7(__VA_ARGS__)
#define TR_EACH_9(a, ...) TR_ARG(a); TR_EACH_8(__VA_ARGS__)
#define TR_EACH_10(a, ...) TR_ARG(a); TR_EACH_9(__VA_ARGS__)
#define TR_EACH_11(a, ...) TR_ARG(a); TR_EACH_10(__VA_ARGS__)
#define TR_EACH_12(a, ...) TR_ARG(a); TR_EACH_11(__VA_ARGS__)
#define TR_EACH_13(a, ...) TR_ARG(a); TR_EACH_12(__VA_ARGS__)
#define TR_EACH_14(a, ...) TR_ARG(a); TR_EACH_13(__VA_ARGS__)
#define TR_EACH_15(a, ...) TR_ARG(a); TR_EACH_14(__VA_ARGS__)
#define TR_EACH_16(a, ...) TR_ARG(a); TR_EACH_15(__VA_ARGS__)
#define TR_EACH_17(a, ...) TR_ARG(a); TR_EACH_16(__VA_ARGS__)
#define TR_EACH_18(a, ...) TR_ARG(a); TR_EACH_17(__VA_ARGS__)
#define TR_EACH_19(a, ...) TR_ARG(a); TR_EACH_18(__VA_ARGS__)
#define TR_EACH_20(a, ...) TR_ARG(a); TR_EACH_19(__VA_ARGS__)
/* host metadata an op reads (index maps, cu_seqlens, attention layouts): its contents, which decide what a
 * device uploads for the op */
static void tr_i32s(const int32_t *a, int64_t n) {
    int64_t len = a ? n : -1;
    tr_bytes(&len, sizeof len);
    if (a && n > 0) tr_bytes(a, (size_t)n * sizeof *a);
}
static void tr_seqs(const vla_attn_seqs *s) {
    if (!tr.on) return;
    if (!s) return tr_i32s(NULL, 0);
    tr_i32s(&s->n_seg, 1);
    tr_i32s(s->cu_seqlens, s->n_seg + 1);
    tr_i32s(s->group, s->cu_seqlens && s->n_seg >= 0 ? s->cu_seqlens[s->n_seg] : 0);
}
static void tr_attn(const vla_attn_config *c) {
    if (!tr.on || !c) return;
    int32_t w[] = {c->n_heads, c->n_kv_heads, c->head_dim, c->tile_q, c->tile_k, (int32_t)c->bwd_mode,
                   (int32_t)c->no_mqa_fold, (int32_t)c->precision};
    tr_i32s(w, sizeof w / sizeof w[0]);
    tr_bytes(&c->scale, sizeof c->scale);
}

/* TR_EACH (a, b, c): each argument's scalar value into the current op's hash (only while tracing) */
#define TR_EACH(...)                                                                                       \
    do {                                                                                                   \
        if (tr.on) { TR_CAT(TR_EACH_, TR_N(__VA_ARGS__))(__VA_ARGS__) }                                    \
    } while (0)

static const vla_ops *cpu(void) { return vla_backend_find("cpu"); }

static size_t page_round(size_t bytes) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

/* A device's capacity, for the code that asks a backend what is free before it allocates (the memory checks of
 * vla train, vla bench policy and vla serve: policy/memory.h): $VLA_CHECKED_MEMORY_MIB — beyond it
 * alloc returns NULL, as cudaMalloc fails, and VLA_STAT_DEVICE_FREE_BYTES says what is left. Unset or 0:
 * unlimited, no such figure. */
static size_t capacity(void) {
    const char *e = getenv("VLA_CHECKED_MEMORY_MIB"); /* read at each allocation: they are few (arenas) */
    double mib = e && *e ? strtod(e, NULL) : 0;
    return mib > 0 ? (size_t)(mib * 1048576.0) : 0;
}

static void *chk_alloc(size_t bytes) {
    size_t len = page_round(bytes ? bytes : 1);
    size_t limit = capacity();
    if (limit) { /* a device's memory runs out (as cudaMalloc's) */
        pthread_mutex_lock(&lock);
        bool over = mapped + len > limit;
        pthread_mutex_unlock(&lock);
        if (over) return NULL;
    }
    int fd = memfd_create("vla-checked", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    void *host = MAP_FAILED, *rw = MAP_FAILED;
    if (ftruncate(fd, (off_t)len) == 0) {
        host = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
        rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    pthread_mutex_lock(&lock);
    if (host != MAP_FAILED && rw != MAP_FAILED && n_regions == cap_regions) {
        int cap = cap_regions ? 2 * cap_regions : 64;
        region *r = realloc(regions, (size_t)cap * sizeof *r);
        if (r) regions = r, cap_regions = cap;
    }
    if (host == MAP_FAILED || rw == MAP_FAILED || n_regions == cap_regions) {
        pthread_mutex_unlock(&lock);
        if (host != MAP_FAILED) munmap(host, len);
        if (rw != MAP_FAILED) munmap(rw, len);
        return NULL;
    }
    int at = n_regions;
    while (at > 0 && regions[at - 1].host > (uintptr_t)host) {
        regions[at] = regions[at - 1];
        at--;
    }
    regions[at] = (region){(uintptr_t)host, rw, len};
    n_regions++;
    mapped += len;
    pthread_mutex_unlock(&lock);
    if (tr.on) { /* a region's own allocation: it must free it before it ends */
        if (tr.n_allocs == tr.cap_allocs) {
            int cap = tr.cap_allocs ? 2 * tr.cap_allocs : 16;
            void **a = realloc(tr.allocs, (size_t)cap * sizeof *a);
            if (a) tr.allocs = a;
            size_t *l = a ? realloc(tr.alloc_len, (size_t)cap * sizeof *l) : NULL;
            if (l) tr.alloc_len = l;
            int64_t *q = l ? realloc(tr.alloc_seq, (size_t)cap * sizeof *q) : NULL;
            if (!q) abort();
            tr.alloc_seq = q, tr.cap_allocs = cap;
        }
        tr.allocs[tr.n_allocs] = host, tr.alloc_len[tr.n_allocs] = len, tr.alloc_seq[tr.n_allocs] = tr.seq++;
        tr.n_allocs++;
    }
    return host;
}

static void chk_free(void *p) {
    if (!p) return;
    if (tr.on) {
        int i = 0;
        while (i < tr.n_allocs && tr.allocs[i] != p) i++;
        if (i == tr.n_allocs) tr_violate("free", "of memory allocated before the region");
        else {
            tr.n_allocs--;
            tr.allocs[i] = tr.allocs[tr.n_allocs], tr.alloc_len[i] = tr.alloc_len[tr.n_allocs];
            tr.alloc_seq[i] = tr.alloc_seq[tr.n_allocs];
        }
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_regions; i++)
        if (regions[i].host == (uintptr_t)p) {
            munmap(p, regions[i].len);
            munmap(regions[i].rw, regions[i].len);
            mapped -= regions[i].len;
            for (int k = i; k + 1 < n_regions; k++) regions[k] = regions[k + 1];
            n_regions--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* The read-write address of a backend pointer (one past a region's end
 * included: empty ranges at its end). Every pointer translated here is one
 * the table's contract says is backend memory (host metadata — index maps,
 * cu_seqlens, flow times, padding masks, to_device's source — is passed
 * untranslated), so a pointer outside every region is a host pointer handed
 * to an op as a tensor: it would work on the cpu backend and fault on a
 * device (the cuda backend reads it as a device address). That is a bug in
 * the caller, reported with the op's name. */
static void *rw_of(const void *p, const char *op) {
    if (!p) return NULL;
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&lock);
    int lo = 0, hi = n_regions - 1, hit = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (regions[mid].host <= a) hit = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    void *r = NULL;
    if (hit >= 0 && a <= regions[hit].host + regions[hit].len) r = regions[hit].rw + (a - regions[hit].host);
    pthread_mutex_unlock(&lock);
    if (r && tr.on) tr_ptr(p); /* traced as the caller holds it */
    if (!r) {
        fprintf(stderr, "vla: checked: %s was given a pointer (%p) that is not backend memory: host memory passed "
                        "where the op table wants a tensor (it would fault on a device backend)\n", op, p);
        abort();
    }
    return r;
}
#define T(p) ((__typeof__(p))rw_of(p, __func__))

/* KEPT COPIES (ops.h): an op may be handed no f32 tensor for a value only where its bf16 copy stands
 * in for it — a norm's or the GLU's output with a bf16 ready, a GEMM operand with its bf16 a_ready /
 * b_ready. Anywhere else a NULL tensor is a caller's bug a device would fault on: said, and stopped. */
static void kept_copy_rule(bool tensor_null, bool copy_stands_in, const char *op, const char *what) {
    if (!tensor_null || copy_stands_in) return;
    fprintf(stderr, "vla: checked: %s was given no %s and no bf16 copy standing in for it (ops.h, kept copies)\n",
            op, what);
    abort();
}
#define NORM_KEPT(o, f) kept_copy_rule(!(o) && n * d > 0, (f) && (f)->ready && !(f)->fp8, __func__, "output")
static void gemm_kept(const vla_gemm_q *q, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                      const char *op) {
    if (m == 0 || n == 0 || k == 0) return; /* nothing is read */
    bool bf16 = q && q->mode == VLA_PREC_BF16;
    kept_copy_rule(!a, bf16 && q->a_ready, op, "A");
    kept_copy_rule(!b, bf16 && q->b_ready, op, "B");
}

/* a list of backend pointers translated, into a malloc'd array (free it) */
static void **rw_list(const void *const *p, int count, const char *op) {
    void **t = malloc(sizeof(void *) * (size_t)(count > 0 ? count : 1));
    if (!t) abort();
    for (int i = 0; i < count; i++) t[i] = rw_of(p[i], op);
    return t;
}

size_t vla_checked_mapped_bytes(void) {
    pthread_mutex_lock(&lock);
    size_t m = mapped;
    pthread_mutex_unlock(&lock);
    return m;
}

int vla_checked_regions(void) {
    pthread_mutex_lock(&lock);
    int n = n_regions;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Host waits: every call that hands backend results to the host (to_host,
 * the reductions, masked_mse) — on a device each is a wait for the stream.
 * Counted here so a CPU test can hold a training step to its count. */
static _Atomic int64_t waits;
static int64_t chk_host_waits(void) { return waits; }
#define WAIT() (atomic_fetch_add(&waits, 1), tr_violate(__func__, "waits for results"))
/* Op-table calls: what a device launches at least once (ops.h, launches) */
static _Atomic int64_t op_calls;
static int64_t chk_launches(void) { return op_calls; }
#define OP() (atomic_fetch_add(&op_calls, 1), tr_op(__func__))

/* One wrapper per slot: the CPU kernel on the translated pointers (T). */
#define WRAP_VOID(name, params, args) \
    static void chk_##name params { OP(); TR_EACH args; cpu()->name args; }
/* the same, with the op's host metadata traced too (`meta`, a statement on the parameters) */
#define WRAP_VOID_META(name, meta, params, args) \
    static void chk_##name params { OP(); TR_EACH args; if (tr.on) { meta; } cpu()->name args; }
#define WRAP_RET_META(type, name, meta, params, args) \
    static type chk_##name params { OP(); TR_EACH args; if (tr.on) { meta; } return cpu()->name args; }
#define WRAP_RET(type, name, params, args) \
    static type chk_##name params { OP(); TR_EACH args; return cpu()->name args; }
/* the same for a slot that returns host results: one host wait */
#define WRAP_WAIT(type, name, params, args) \
    static type chk_##name params { OP(); WAIT(); return cpu()->name args; }

static void chk_to_device(void *d, const void *s, size_t n) {
    OP();
    tr_bytes(&n, sizeof n);
    tr_bytes(s, n); /* what is uploaded: a device replays the recorded bytes */
    cpu()->to_device(T(d), s, n);
}
static void chk_to_host(void *d, const void *s, size_t n) {
    OP();
    WAIT();
    cpu()->to_host(d, T(s), n);
}
WRAP_VOID(copy_bytes, (void *d, const void *s, size_t n), (T(d), T(s), n))

/* Deferred reads (ops.h, read_later): the bytes are taken at once (every op before has finished) into
 * a ticket's slot and handed over at collect — no host wait, as on a device; the protocol held: at
 * most VLA_READS_IN_FLIGHT open, a ticket collected once, none inside a captured region. */
static struct {
    bool open;
    size_t n;
    unsigned char b[VLA_READ_LATER_BYTES];
} later[VLA_READS_IN_FLIGHT];
static pthread_mutex_t later_lock = PTHREAD_MUTEX_INITIALIZER;

static int chk_read_later(const void *s, size_t n) {
    OP();
    tr_violate(__func__, "reads results (deferred)");
    if (n > VLA_READ_LATER_BYTES) {
        fprintf(stderr, "checked: read_later of %zu bytes (at most %d)\n", n, VLA_READ_LATER_BYTES);
        abort();
    }
    pthread_mutex_lock(&later_lock);
    int t = 0;
    while (t < VLA_READS_IN_FLIGHT && later[t].open) t++;
    if (t < VLA_READS_IN_FLIGHT) {
        later[t].open = true, later[t].n = n;
        cpu()->to_host(later[t].b, T(s), n);
    } else
        t = -1;
    pthread_mutex_unlock(&later_lock);
    return t;
}

static void chk_read_collect(int t, void *d) {
    pthread_mutex_lock(&later_lock);
    if (t < 0 || t >= VLA_READS_IN_FLIGHT || !later[t].open) {
        fprintf(stderr, "checked: read_collect of ticket %d, which is not open\n", t);
        abort();
    }
    memcpy(d, later[t].b, later[t].n);
    later[t].open = false;
    pthread_mutex_unlock(&later_lock);
}
WRAP_VOID(sgemm,
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda, const float *b,
           int64_t ldb, float be, float *c, int64_t ldc), (ta, tb, m, n, k, al, T(a), lda, T(b), ldb, be, T(c), ldc))
WRAP_VOID(sgemm_strided_batched,
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda, int64_t sa,
           const float *b, int64_t ldb, int64_t sb, float be, float *c, int64_t ldc, int64_t sc, int64_t bt), (ta, tb, m, n, k, al, T(a), lda, sa, T(b), ldb, sb, be, T(c), ldc, sc, bt))
/* an FP8 operand's pointers translated into *t (NULL stays NULL), traced with its format */
static const vla_fp8_operand *fp8_rw(const vla_fp8_operand *o, vla_fp8_operand *t, const char *op) {
    if (tr.on) tr_i32(o ? 1 + (int)o->fmt + (o->amax ? 16 : 0) : 0);
    if (!o) return NULL;
    *t = (vla_fp8_operand){o->fmt, rw_of(o->scale, op), rw_of(o->amax, op)};
    return t;
}
/* a quantised GEMM's description with its backend pointers translated */
static vla_gemm_q q_rw(const vla_gemm_q *q) {
    return (vla_gemm_q){q->mode, {q->a.fmt, T(q->a.scale), T(q->a.amax)}, {q->b.fmt, T(q->b.scale), T(q->b.amax)},
                        T(q->b_ready), T(q->a_ready)};
}
static void chk_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float be, float *c, int64_t ldc) {
    OP();
    gemm_kept(q, m, n, k, a, b, __func__);
    vla_gemm_q tq = q ? q_rw(q) : (vla_gemm_q){0};
    cpu()->sgemm_q(q ? &tq : NULL, ta, tb, m, n, k, al, T(a), lda, T(b), ldb, be, T(c), ldc);
}
/* Unlike cpu, checked keeps ready copies (the cpu's rounded f32 copy of
 * B), so every suite it runs holds that path to the cpu backend's bits. */
static size_t chk_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k) {
    return q && q->mode != VLA_PREC_FP32 && n > 0 && k > 0 ? sizeof(float) * (size_t)(n * k) : 0;
}
static void chk_prepare_operand(const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb,
                                void *dst) {
    OP();
    vla_gemm_q tq = q ? q_rw(q) : (vla_gemm_q){0};
    cpu()->prepare_operand(q ? &tq : NULL, tb, n, k, T(b), ldb, T(dst));
}
static void chk_prepare_operand_pair(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb,
                                     void *dn, void *dt) {
    OP();
    TR_EACH(rows, cols, ldb);
    vla_gemm_q tq = q ? q_rw(q) : (vla_gemm_q){0};
    cpu()->prepare_operand_pair(q ? &tq : NULL, rows, cols, T(b), ldb, T(dn), T(dt));
}
static void chk_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *e, bool ta, bool tb, int64_t m, int64_t n,
                          int64_t k, float al, const float *a, int64_t lda, const float *b, int64_t ldb, float be,
                          float *c, int64_t ldc) {
    OP();
    gemm_kept(q, m, n, k, a, b, __func__);
    /* no C: its activation kept as the bf16 copy alone, t in pre, nothing added to it (ops.h, KEPT COPIES) */
    kept_copy_rule(!c && m * n > 0,
                   e && e->act != VLA_ACT_IDENTITY && e->pre && e->ready && !e->ready_fp8 && be == 0.0f, __func__,
                   "C (a kept copy wants an activation, pre, a bf16 copy and beta 0)");
    vla_gemm_q tq = q ? q_rw(q) : (vla_gemm_q){0};
    vla_gemm_epilogue te = e ? (vla_gemm_epilogue){T(e->bias), e->act, T(e->pre), T(e->ready),
                                                   fp8_rw(e->ready_fp8, &(vla_fp8_operand){0}, __func__)}
                             : (vla_gemm_epilogue){0};
    cpu()->sgemm_epi(q ? &tq : NULL, e ? &te : NULL, ta, tb, m, n, k, al, T(a), lda, T(b), ldb, be, T(c), ldc);
}
WRAP_VOID(fp8_scale_update, (float *h, float *sc, int64_t n, int64_t L, const float *fm, float mg, bool mr),
          (T(h), T(sc), n, L, fm, mg, mr))
WRAP_VOID(fill, (float *y, float v, int64_t n), (T(y), v, n))
WRAP_VOID(copy, (float *y, const float *x, int64_t n), (T(y), T(x), n))
WRAP_VOID(add, (float *y, const float *a, const float *b, int64_t n), (T(y), T(a), T(b), n))
WRAP_VOID(sub, (float *y, const float *a, const float *b, int64_t n), (T(y), T(a), T(b), n))
WRAP_VOID(mul, (float *y, const float *a, const float *b, int64_t n), (T(y), T(a), T(b), n))
WRAP_VOID(axpy, (float *y, float al, const float *x, int64_t n), (T(y), al, T(x), n))
WRAP_VOID(scale, (float *y, float al, int64_t n), (T(y), al, n))
WRAP_VOID(affine, (float *y, const float *x, float al, float be, int64_t n), (T(y), T(x), al, be, n))
WRAP_VOID(scale_to, (float *y, const float *x, double al, int64_t n), (T(y), T(x), al, n))
WRAP_VOID(add_row_vector, (float *y, const float *b, int64_t r, int64_t c), (T(y), T(b), r, c))
WRAP_VOID_META(copy_rows, (tr_i32s(di, n), tr_i32s(si, n)),
          (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float al), (T(d), ldd, di, T(s), lds, si, n, w, al))
WRAP_VOID_META(add_rows, (tr_i32s(di, n), tr_i32s(si, n)),
          (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float al), (T(d), ldd, di, T(s), lds, si, n, w, al))
WRAP_VOID(copy2d, (float *d, int64_t ldd, const float *s, int64_t lds, int64_t r, int64_t c), (T(d), ldd, T(s), lds, r, c))
WRAP_VOID(im2col, (float *p, const float *im, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps), (T(p), T(im), n, C, H, W, ps))
WRAP_VOID(col2im_add, (float *im, const float *p, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps), (T(im), T(p), n, C, H, W, ps))
WRAP_VOID_META(segment_linear_forward, (tr_i32s(ids, ns), tr_i32s(cu, ns + 1)),
          (float *y, const float *x, const float *w, const float *b, const int32_t *ids, const int32_t *cu, int32_t ns,
           int64_t di, int64_t dout), (T(y), T(x), T(w), T(b), ids, cu, ns, di, dout))
WRAP_VOID_META(segment_linear_backward, (tr_i32s(ids, ns), tr_i32s(cu, ns + 1)),
          (float *dx, float *dw, float *db, const float *dy, const float *x, const float *w, const int32_t *ids,
           const int32_t *cu, int32_t ns, int64_t di, int64_t dout), (T(dx), T(dw), T(db), T(dy), T(x), T(w), ids, cu, ns, di, dout))
WRAP_WAIT(double, sum, (const float *x, int64_t n), (T(x), n))
WRAP_WAIT(double, dot, (const float *a, const float *b, int64_t n), (T(a), T(b), n))
WRAP_WAIT(double, sum_squares, (const float *x, int64_t n), (T(x), n))
/* each vector's pointer translated: the cpu's sum_squares on each, as its multi does */
static void chk_sum_squares_multi(int count, const float *const *x, const int64_t *n, double *out) {
    OP();
    WAIT(); /* one for the whole call, as a device waits once */
    for (int i = 0; i < count; i++) out[i] = cpu()->sum_squares(T(x[i]), n[i]);
}
/* the cpu's total on the translated pointers */
static void chk_sum_squares_total(int count, const float *const *x, const int64_t *n, double *total) {
    OP();
    void **tx = rw_list((const void *const *)x, count, __func__);
    cpu()->sum_squares_total(count, (const float *const *)tx, n, T(total));
    free(tx);
}
WRAP_WAIT(float, max_abs, (const float *x, int64_t n), (T(x), n))
WRAP_WAIT(int64_t, count_nonfinite, (const float *x, int64_t n), (T(x), n))
WRAP_WAIT(int64_t, find_nonfinite, (const float *x, int64_t n), (T(x), n))
WRAP_VOID(sum_rows, (float *y, const float *x, int64_t r, int64_t c, float be), (T(y), T(x), r, c, be))
WRAP_VOID(softmax_rows, (float *y, const float *x, int64_t r, int64_t c), (T(y), T(x), r, c))
WRAP_VOID(softmax_rows_backward, (float *dx, const float *y, const float *dy, int64_t r, int64_t c), (T(dx), T(y), T(dy), r, c))
WRAP_VOID_META(attention_mask, (tr_seqs(qs), tr_seqs(ks)), (float *m, const vla_attn_seqs *qs, const vla_attn_seqs *ks), (T(m), qs, ks))
WRAP_VOID(act_forward, (vla_act a, float *o, const float *i, int64_t n), (a, T(o), T(i), n))
WRAP_VOID(act_backward, (vla_act a, float *di, const float *dout, const float *i, int64_t r, int64_t c, void *rd),
          (a, T(di), T(dout), T(i), r, c, T(rd)))
static void chk_glu_forward(vla_act a, float *h, const float *g, const float *u, int64_t r, int64_t c, void *rd,
                            const vla_fp8_operand *r8) {
    OP();
    kept_copy_rule(!h && r * c > 0, rd && !r8, __func__, "output");
    TR_EACH(a, T(h), T(g), T(u), r, c, T(rd));
    const vla_fp8_operand *t8 = fp8_rw(r8, &(vla_fp8_operand){0}, __func__);
    cpu()->glu_forward(a, T(h), T(g), T(u), r, c, T(rd), t8);
}
WRAP_VOID(glu_backward,
          (vla_act a, float *dg, float *du, const float *dh, const float *g, const float *u, int64_t r, int64_t c,
           void *rg, void *ru), (a, T(dg), T(du), T(dh), T(g), T(u), r, c, T(rg), T(ru)))
/* a norm's vla_norm_fuse with its pointers translated (and traced, with which are set and the FP8
 * copy's format) into *t, its FP8 operand into *t8 */
static const vla_norm_fuse *fuse_rw(const vla_norm_fuse *f, vla_norm_fuse *t, vla_fp8_operand *t8, const char *op) {
    int set = f ? 1 | (f->res ? 2 : 0) | (f->sum ? 4 : 0) | (f->ready ? 8 : 0) : 0;
    if (tr.on) tr_i32(set);
    if (!f) return NULL;
    *t = (vla_norm_fuse){rw_of(f->res, op), rw_of(f->sum, op), rw_of(f->ready, op), fp8_rw(f->fp8, t8, op)};
    return t;
}
#define FUSE(f) fuse_rw(f, &(vla_norm_fuse){0}, &(vla_fp8_operand){0}, __func__)
static void chk_layernorm_forward(float *o, float *mean, float *rstd, const float *i, const float *w, const float *b,
                                  int64_t n, int64_t d, float eps, const vla_norm_fuse *f) {
    OP();
    NORM_KEPT(o, f);
    TR_EACH(n, d, eps);
    const vla_norm_fuse *tf = FUSE(f);
    cpu()->layernorm_forward(T(o), T(mean), T(rstd), T(i), T(w), T(b), n, d, eps, tf);
}
WRAP_VOID(layernorm_backward,
          (float *di, float *dw, float *db, const float *dout, const float *i, const float *w, const float *mean,
           const float *rstd, int64_t n, int64_t d), (T(di), T(dw), T(db), T(dout), T(i), T(w), T(mean), T(rstd), n, d))
static void chk_rmsnorm_forward(float *o, float *rstd, const float *i, const float *w, bool op, int64_t n, int64_t d,
                                float eps, const vla_norm_fuse *f) {
    OP();
    NORM_KEPT(o, f);
    TR_EACH(op, n, d, eps);
    const vla_norm_fuse *tf = FUSE(f);
    cpu()->rmsnorm_forward(T(o), T(rstd), T(i), T(w), op, n, d, eps, tf);
}
WRAP_VOID(rmsnorm_backward,
          (float *di, float *dw, const float *dout, const float *i, const float *w, bool op, const float *rstd,
           int64_t n, int64_t d), (T(di), T(dw), T(dout), T(i), T(w), op, T(rstd), n, d))
static void chk_adaln_forward(float *o, float *mean, float *rstd, const float *i, const float *mod, const int32_t *cu,
                              int32_t ns, int64_t n, int64_t d, float eps, const vla_norm_fuse *f) {
    OP();
    TR_EACH(ns, n, d, eps);
    NORM_KEPT(o, f);
    if (tr.on) tr_i32s(cu, ns + 1);
    const vla_norm_fuse *tf = FUSE(f);
    cpu()->adaln_forward(T(o), T(mean), T(rstd), T(i), T(mod), cu, ns, n, d, eps, tf);
}
WRAP_VOID_META(adaln_backward, tr_i32s(cu, ns + 1),
          (float *di, float *dm, const float *dout, const float *i, const float *mod, const float *mean,
           const float *rstd, const int32_t *cu, int32_t ns, int64_t n, int64_t d), (T(di), T(dm), T(dout), T(i), T(mod), T(mean), T(rstd), cu, ns, n, d))
static void chk_adarms_forward(float *o, float *rstd, const float *i, const float *mod, const int32_t *cu, int32_t ns,
                               int64_t n, int64_t d, float eps, const vla_norm_fuse *f) {
    OP();
    TR_EACH(ns, n, d, eps);
    NORM_KEPT(o, f);
    if (tr.on) tr_i32s(cu, ns + 1);
    const vla_norm_fuse *tf = FUSE(f);
    cpu()->adarms_forward(T(o), T(rstd), T(i), T(mod), cu, ns, n, d, eps, tf);
}
WRAP_VOID_META(adarms_backward, tr_i32s(cu, ns + 1),
          (float *di, float *dm, const float *dout, const float *i, const float *mod, const float *rstd,
           const int32_t *cu, int32_t ns, int64_t n, int64_t d), (T(di), T(dm), T(dout), T(i), T(mod), T(rstd), cu, ns, n, d))
WRAP_VOID_META(gated_residual_forward, tr_i32s(cu, ns + 1),
          (float *o, const float *x, const float *y, const float *mod, const int32_t *cu, int32_t ns, int64_t n,
           int64_t d), (T(o), T(x), T(y), T(mod), cu, ns, n, d))
WRAP_VOID_META(gated_residual_backward, tr_i32s(cu, ns + 1),
          (float *dx, float *dy, float *dm, const float *dout, const float *y, const float *mod, const int32_t *cu,
           int32_t ns, int64_t n, int64_t d), (T(dx), T(dy), T(dm), T(dout), T(y), T(mod), cu, ns, n, d))
WRAP_VOID_META(rope_forward, tr_i32s(pos, n), (float *o, const float *i, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th), (T(o), T(i), pos, n, h, hd, th))
WRAP_VOID_META(rope_backward, tr_i32s(pos, n),
          (float *di, const float *dout, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th), (T(di), T(dout), pos, n, h, hd, th))
WRAP_VOID(time_embedding_forward, (const vla_temb_config *c, float *o, const float *t, int64_t n), (c, T(o), T(t), n))
WRAP_VOID(time_embedding_backward, (const vla_temb_config *c, float *dt, const float *dout, const float *t, int64_t n), (c, T(dt), T(dout), T(t), n))
WRAP_RET_META(vla_status, attention_forward, (tr_attn(c), tr_seqs(qs), tr_seqs(ks)),
         (const vla_attn_config *c, float *o, float *lse, const float *q, const float *k, const float *v,
          const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *st, void *rd),
         (c, T(o), T(lse), T(q), T(k), T(v), qs, ks, st, T(rd)))
WRAP_RET_META(vla_status, attention_backward, (tr_attn(c), tr_seqs(qs), tr_seqs(ks)),
         (const vla_attn_config *c, float *dq, float *dk, float *dv, const float *dout, const float *q,
          const float *k, const float *v, const float *o, const float *lse, const vla_attn_seqs *qs,
          const vla_attn_seqs *ks, vla_attn_stats *st), (c, T(dq), T(dk), T(dv), T(dout), T(q), T(k), T(v), T(o), T(lse), qs, ks, st))
WRAP_RET_META(vla_status, attention_forward_cached, (tr_attn(c), tr_seqs(qs), tr_seqs(cs), tr_seqs(ns)),
         (const vla_attn_config *c, float *o, float *lse, const float *q, const vla_attn_seqs *qs, const float *kc,
          const float *vc, const vla_attn_seqs *cs, const float *kn, const float *vn, const vla_attn_seqs *ns,
          vla_attn_stats *st), (c, T(o), T(lse), T(q), qs, T(kc), T(vc), cs, T(kn), T(vn), ns, st))
WRAP_VOID_META(flow_interpolate, tr_bytes(t, (size_t)(S > 0 ? S : 0) * sizeof *t),
          (vla_flow_convention cv, float *x, float *u, const float *a, const float *z, const float *t, int64_t S,
           int64_t per), (cv, T(x), T(u), T(a), T(z), t, S, per))
WRAP_WAIT(double, masked_mse,
         (const float *p, const float *t, int64_t S, int64_t H, int64_t D, const uint8_t *pad, const int32_t *rd,
          vla_mse_reduction red, double div, float *dp), (T(p), T(t), S, H, D, pad, rd, red, div, T(dp)))
WRAP_VOID(masked_mse_acc,
          (const float *p, const float *t, int64_t S, int64_t H, int64_t D, const uint8_t *pad, const int32_t *rd,
           vla_mse_reduction red, double div, float *dp, double *acc), (T(p), T(t), S, H, D, pad, rd, red, div, T(dp), T(acc)))
static void chk_adamw(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool dc) {
    OP();
    vla_adamw_scalars t = *s;
    t.guard = T(s->guard);
    cpu()->adamw(T(w), T(g), T(m), T(v), n, &t, dc);
}
WRAP_VOID(ema, (float *e, const float *w, float d, float omd, int64_t n, const float *gd), (T(e), T(w), d, omd, n, T(gd)))
static void chk_adamw_multi(int count, float *const *w, const float *const *g, float *const *m, float *const *v,
                            const int64_t *n, const bool *decay, const vla_adamw_scalars *s) {
    OP();
    void **tw = rw_list((const void *const *)w, count, __func__), **tg = rw_list((const void *const *)g, count, __func__);
    void **tm = rw_list((const void *const *)m, count, __func__), **tv = rw_list((const void *const *)v, count, __func__);
    vla_adamw_scalars t = *s;
    t.guard = T(s->guard);
    cpu()->adamw_multi(count, (float *const *)tw, (const float *const *)tg, (float *const *)tm, (float *const *)tv, n,
                       decay, &t);
    free(tw), free(tg), free(tm), free(tv);
}
static void chk_ema_multi(int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
                          const float *guard) {
    OP();
    void **te = rw_list((const void *const *)e, count, __func__), **tw = rw_list((const void *const *)w, count, __func__);
    cpu()->ema_multi(count, (float *const *)te, (const float *const *)tw, n, d, omd, T(guard));
    free(te), free(tw);
}
WRAP_VOID(clip_coef, (float *gd, const double *ss, const double *also, double mx), (T(gd), T(ss), T(also), mx))
WRAP_VOID(convert, (void *d, vla_dtype dt, const void *s, vla_dtype st, int64_t n), (T(d), dt, T(s), st, n))

/* The recorded trace of each key (a few kept, the least recently used dropped), as a device keeps its
 * recordings (tensor/key_cache.h). n < 0: the key was seen once, not yet recorded. */
#define CAPTURED_KEYS 16
typedef struct {
    uint64_t *h;
    const char **name;
    int64_t n;
} chk_capture;
static vla_key_cache *captures;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

static void capture_destroy(void *v) {
    chk_capture *c = v;
    free(c->h), free(c->name), free(c);
}

/* key's entry, made (seen, not recorded) when it has none; NULL when memory is short. Under capture_lock. */
static chk_capture *capture_of(const void *key, size_t key_bytes, bool *made) {
    if (!captures && !(captures = vla_key_cache_new(CAPTURED_KEYS, capture_destroy))) return NULL;
    chk_capture *c = vla_key_cache_get(captures, key, key_bytes);
    *made = !c;
    if (c) return c;
    if (!(c = calloc(1, sizeof *c))) return NULL;
    c->n = -1;
    if (!vla_key_cache_put(captures, key, key_bytes, c)) return free(c), NULL;
    return c;
}

static _Atomic int64_t replays; /* calls compared with a recording */
static int64_t chk_stat(vla_ops_stat what) {
    if (what == VLA_STAT_OPERAND_CASTS) return cpu()->stat(what); /* the cpu kernels it runs count them */
    if (what == VLA_STAT_DEVICE_FREE_BYTES) { /* with a capacity (above): what is left */
        size_t cap = capacity(), m = vla_checked_mapped_bytes();
        return cap ? (int64_t)(cap > m ? cap - m : 0) : -1;
    }
    return what == VLA_STAT_CAPTURED_REPLAYS ? replays : -1;
}

static vla_status traced_call(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx);

/* As cuda runs a key: the first call plainly (it warms caches and arenas), the second traced (the
 * recording: the rules hold), every later one traced and compared with it. */
static vla_status chk_run_captured(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx) {
    if (tr.on) return vla_error(VLA_ERR_INTERNAL, "checked: a captured region inside another");
    bool first;
    pthread_mutex_lock(&capture_lock);
    chk_capture *c = capture_of(key, key_bytes, &first);
    pthread_mutex_unlock(&capture_lock);
    if (!c) abort();
    if (first) return body(ctx);
    vla_status st = traced_call(key, key_bytes, body, ctx);
    /* the trace's buffers go with the call: a server's worker threads come and go */
    free(tr.h), free(tr.name), free(tr.allocs), free(tr.alloc_len), free(tr.alloc_seq);
    memset(&tr, 0, sizeof tr);
    return st;
}

/* A call after the first: traced, then kept as the recording (the second) or compared with it. */
static vla_status traced_call(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx) {
    tr.on = true, tr.n = 0, tr.n_allocs = 0, tr.seq = 0, tr.violation[0] = 0;
    vla_status st = body(ctx);
    tr.on = false;
    if (st != VLA_OK) return st;
    if (!tr.violation[0] && tr.n_allocs > 0)
        snprintf(tr.violation, sizeof tr.violation, "%d allocations not freed by the end of a captured region",
                 tr.n_allocs);
    if (tr.violation[0]) return vla_error(VLA_ERR_INTERNAL, "checked: %s: a device could not record it", tr.violation);
    bool made;
    pthread_mutex_lock(&capture_lock);
    chk_capture *c = capture_of(key, key_bytes, &made); /* (dropped meanwhile: this call records anew) */
    if (!c) abort();
    if (c->n < 0) { /* the second call: its trace becomes the recording */
        free(c->h), free(c->name);
        c->h = tr.h, c->name = tr.name, c->n = tr.n;
        tr.h = NULL, tr.name = NULL, tr.cap = 0;
        pthread_mutex_unlock(&capture_lock);
        return VLA_OK;
    }
    atomic_fetch_add(&replays, 1);
    int64_t i = 0;
    while (i < c->n && i < tr.n && c->h[i] == tr.h[i]) i++;
    if (i < c->n || i < tr.n) {
        st = vla_error(VLA_ERR_INTERNAL, "checked: a captured region (a key of %zu bytes) ran differently from its "
                       "recording at op %lld of %lld (%s; recorded: %s): a device replays the recording there — "
                       "the key misses something the region depends on (a buffer allocated per call, a scalar, "
                       "uploaded bytes, an op's index map or layout)", key_bytes, (long long)i, (long long)tr.n,
                       i < tr.n ? tr.name[i] : "(none)", i < c->n ? c->name[i] : "(none)");
    }
    pthread_mutex_unlock(&capture_lock);
    return st;
}

#define SLOT(name) .name = chk_##name
static const vla_ops checked_ops = {
    .name = "checked",
    .device = VLA_DEVICE_CPU,
    .host_memory = false,
    .rtol = 0.0,
    .host_waits = chk_host_waits,
    .launches = chk_launches,
    .stat = chk_stat,
    .run_captured = chk_run_captured,
    .alloc = chk_alloc,
    .free = chk_free,
    SLOT(to_device), SLOT(to_host), SLOT(read_later), SLOT(read_collect), SLOT(copy_bytes), SLOT(sgemm), SLOT(sgemm_strided_batched), SLOT(sgemm_q), SLOT(sgemm_epi), SLOT(ready_bytes), SLOT(prepare_operand), SLOT(prepare_operand_pair),
    SLOT(fp8_scale_update), SLOT(fill),
    SLOT(copy), SLOT(add), SLOT(sub), SLOT(mul), SLOT(axpy), SLOT(scale), SLOT(affine), SLOT(scale_to),
    SLOT(add_row_vector), SLOT(copy_rows), SLOT(add_rows), SLOT(copy2d), SLOT(im2col), SLOT(col2im_add), SLOT(segment_linear_forward), SLOT(segment_linear_backward), SLOT(sum),
    SLOT(dot), SLOT(sum_squares), SLOT(sum_squares_multi), SLOT(sum_squares_total), SLOT(max_abs), SLOT(count_nonfinite), SLOT(find_nonfinite), SLOT(sum_rows),
    SLOT(softmax_rows), SLOT(softmax_rows_backward), SLOT(attention_mask), SLOT(act_forward), SLOT(act_backward),
    SLOT(glu_forward), SLOT(glu_backward), SLOT(layernorm_forward), SLOT(layernorm_backward), SLOT(rmsnorm_forward),
    SLOT(rmsnorm_backward), SLOT(adaln_forward), SLOT(adaln_backward), SLOT(adarms_forward), SLOT(adarms_backward),
    SLOT(gated_residual_forward), SLOT(gated_residual_backward), SLOT(rope_forward), SLOT(rope_backward),
    SLOT(time_embedding_forward), SLOT(time_embedding_backward), SLOT(attention_forward), SLOT(attention_backward),
    SLOT(attention_forward_cached), SLOT(flow_interpolate), SLOT(masked_mse), SLOT(masked_mse_acc), SLOT(adamw), SLOT(ema), SLOT(adamw_multi), SLOT(ema_multi),
    SLOT(clip_coef), SLOT(convert),
};

const vla_ops *vla_checked_backend_table(void) { return &checked_ops; }
