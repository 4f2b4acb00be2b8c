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
 * through unchanged. */
#include "tensor/checked/ops_checked.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tensor/backend.h"

typedef struct {
    uintptr_t host; /* the PROT_NONE mapping (what alloc returned) */
    char *rw;       /* the read-write mapping of the same pages */
    size_t len;
} region;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static region *regions; /* sorted by host address */
static int n_regions, cap_regions;
static size_t mapped;

static const vla_ops *cpu(void) { return vla_backend_find("cpu"); }

static size_t page_round(size_t bytes) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

static void *chk_alloc(size_t bytes) {
    size_t len = page_round(bytes ? bytes : 1);
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
    return host;
}

static void chk_free(void *p) {
    if (!p) return;
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
    if (!r) {
        fprintf(stderr, "vla: checked: %s was given a pointer (%p) that is not backend memory: host memory passed "
                        "where the op table wants a tensor (it would fault on a device backend)\n", op, p);
        abort();
    }
    return r;
}
#define T(p) ((__typeof__(p))rw_of(p, __func__))

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
#define WAIT() atomic_fetch_add(&waits, 1)
/* Op-table calls: what a device launches at least once (ops.h, launches) */
static _Atomic int64_t op_calls;
static int64_t chk_launches(void) { return op_calls; }
#define OP() atomic_fetch_add(&op_calls, 1)

/* One wrapper per slot: the CPU kernel on the translated pointers (T). */
#define WRAP_VOID(name, params, args) \
    static void chk_##name params { OP(); cpu()->name args; }
#define WRAP_RET(type, name, params, args) \
    static type chk_##name params { OP(); return cpu()->name args; }
/* the same for a slot that returns host results: one host wait */
#define WRAP_WAIT(type, name, params, args) \
    static type chk_##name params { OP(); WAIT(); return cpu()->name args; }

WRAP_VOID(to_device, (void *d, const void *s, size_t n), (T(d), s, n))
static void chk_to_host(void *d, const void *s, size_t n) {
    OP();
    WAIT();
    cpu()->to_host(d, T(s), n);
}
WRAP_VOID(copy_bytes, (void *d, const void *s, size_t n), (T(d), T(s), n))
WRAP_VOID(sgemm,
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda, const float *b,
           int64_t ldb, float be, float *c, int64_t ldc), (ta, tb, m, n, k, al, T(a), lda, T(b), ldb, be, T(c), ldc))
WRAP_VOID(sgemm_strided_batched,
          (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda, int64_t sa,
           const float *b, int64_t ldb, int64_t sb, float be, float *c, int64_t ldc, int64_t sc, int64_t bt), (ta, tb, m, n, k, al, T(a), lda, sa, T(b), ldb, sb, be, T(c), ldc, sc, bt))
/* a quantised GEMM's description with its backend pointers translated */
static vla_gemm_q q_rw(const vla_gemm_q *q) {
    return (vla_gemm_q){q->mode, {q->a.fmt, T(q->a.scale), T(q->a.amax)}, {q->b.fmt, T(q->b.scale), T(q->b.amax)},
                        T(q->b_ready), T(q->a_ready)};
}
static void chk_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float be, float *c, int64_t ldc) {
    OP();
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
static void chk_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *e, bool ta, bool tb, int64_t m, int64_t n,
                          int64_t k, float al, const float *a, int64_t lda, const float *b, int64_t ldb, float be,
                          float *c, int64_t ldc) {
    OP();
    vla_gemm_q tq = q ? q_rw(q) : (vla_gemm_q){0};
    vla_gemm_epilogue te = e ? (vla_gemm_epilogue){T(e->bias), e->act, T(e->pre)} : (vla_gemm_epilogue){0};
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
WRAP_VOID(copy_rows,
          (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float al), (T(d), ldd, di, T(s), lds, si, n, w, al))
WRAP_VOID(add_rows,
          (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
           int64_t w, float al), (T(d), ldd, di, T(s), lds, si, n, w, al))
WRAP_VOID(copy2d, (float *d, int64_t ldd, const float *s, int64_t lds, int64_t r, int64_t c), (T(d), ldd, T(s), lds, r, c))
WRAP_VOID(im2col, (float *p, const float *im, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps), (T(p), T(im), n, C, H, W, ps))
WRAP_VOID(col2im_add, (float *im, const float *p, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps), (T(im), T(p), n, C, H, W, ps))
WRAP_VOID(segment_linear_forward,
          (float *y, const float *x, const float *w, const float *b, const int32_t *ids, const int32_t *cu, int32_t ns,
           int64_t di, int64_t dout), (T(y), T(x), T(w), T(b), ids, cu, ns, di, dout))
WRAP_VOID(segment_linear_backward,
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
WRAP_VOID(attention_mask, (float *m, const vla_attn_seqs *qs, const vla_attn_seqs *ks), (T(m), qs, ks))
WRAP_VOID(act_forward, (vla_act a, float *o, const float *i, int64_t n), (a, T(o), T(i), n))
WRAP_VOID(act_backward, (vla_act a, float *di, const float *dout, const float *i, int64_t n), (a, T(di), T(dout), T(i), n))
WRAP_VOID(glu_forward, (vla_act a, float *h, const float *g, const float *u, int64_t n), (a, T(h), T(g), T(u), n))
WRAP_VOID(glu_backward, (vla_act a, float *dg, float *du, const float *dh, const float *g, const float *u, int64_t n), (a, T(dg), T(du), T(dh), T(g), T(u), n))
WRAP_VOID(layernorm_forward,
          (float *o, float *mean, float *rstd, const float *i, const float *w, const float *b, int64_t n, int64_t d,
           float eps), (T(o), T(mean), T(rstd), T(i), T(w), T(b), n, d, eps))
WRAP_VOID(layernorm_backward,
          (float *di, float *dw, float *db, const float *dout, const float *i, const float *w, const float *mean,
           const float *rstd, int64_t n, int64_t d), (T(di), T(dw), T(db), T(dout), T(i), T(w), T(mean), T(rstd), n, d))
WRAP_VOID(rmsnorm_forward,
          (float *o, float *rstd, const float *i, const float *w, bool op, int64_t n, int64_t d, float eps), (T(o), T(rstd), T(i), T(w), op, n, d, eps))
WRAP_VOID(rmsnorm_backward,
          (float *di, float *dw, const float *dout, const float *i, const float *w, bool op, const float *rstd,
           int64_t n, int64_t d), (T(di), T(dw), T(dout), T(i), T(w), op, T(rstd), n, d))
WRAP_VOID(adaln_forward,
          (float *o, float *mean, float *rstd, const float *i, const float *mod, const int32_t *cu, int32_t ns,
           int64_t n, int64_t d, float eps), (T(o), T(mean), T(rstd), T(i), T(mod), cu, ns, n, d, eps))
WRAP_VOID(adaln_backward,
          (float *di, float *dm, const float *dout, const float *i, const float *mod, const float *mean,
           const float *rstd, const int32_t *cu, int32_t ns, int64_t n, int64_t d), (T(di), T(dm), T(dout), T(i), T(mod), T(mean), T(rstd), cu, ns, n, d))
WRAP_VOID(adarms_forward,
          (float *o, float *rstd, const float *i, const float *mod, const int32_t *cu, int32_t ns, int64_t n,
           int64_t d, float eps), (T(o), T(rstd), T(i), T(mod), cu, ns, n, d, eps))
WRAP_VOID(adarms_backward,
          (float *di, float *dm, const float *dout, const float *i, const float *mod, const float *rstd,
           const int32_t *cu, int32_t ns, int64_t n, int64_t d), (T(di), T(dm), T(dout), T(i), T(mod), T(rstd), cu, ns, n, d))
WRAP_VOID(gated_residual_forward,
          (float *o, const float *x, const float *y, const float *mod, const int32_t *cu, int32_t ns, int64_t n,
           int64_t d), (T(o), T(x), T(y), T(mod), cu, ns, n, d))
WRAP_VOID(gated_residual_backward,
          (float *dx, float *dy, float *dm, const float *dout, const float *y, const float *mod, const int32_t *cu,
           int32_t ns, int64_t n, int64_t d), (T(dx), T(dy), T(dm), T(dout), T(y), T(mod), cu, ns, n, d))
WRAP_VOID(rope_forward, (float *o, const float *i, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th), (T(o), T(i), pos, n, h, hd, th))
WRAP_VOID(rope_backward,
          (float *di, const float *dout, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th), (T(di), T(dout), pos, n, h, hd, th))
WRAP_VOID(time_embedding_forward, (const vla_temb_config *c, float *o, const float *t, int64_t n), (c, T(o), T(t), n))
WRAP_VOID(time_embedding_backward, (const vla_temb_config *c, float *dt, const float *dout, const float *t, int64_t n), (c, T(dt), T(dout), T(t), n))
WRAP_RET(vla_status, attention_forward,
         (const vla_attn_config *c, float *o, float *lse, const float *q, const float *k, const float *v,
          const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *st), (c, T(o), T(lse), T(q), T(k), T(v), qs, ks, st))
WRAP_RET(vla_status, attention_backward,
         (const vla_attn_config *c, float *dq, float *dk, float *dv, const float *dout, const float *q,
          const float *k, const float *v, const float *o, const float *lse, const vla_attn_seqs *qs,
          const vla_attn_seqs *ks, vla_attn_stats *st), (c, T(dq), T(dk), T(dv), T(dout), T(q), T(k), T(v), T(o), T(lse), qs, ks, st))
WRAP_RET(vla_status, attention_forward_cached,
         (const vla_attn_config *c, float *o, float *lse, const float *q, const vla_attn_seqs *qs, const float *kc,
          const float *vc, const vla_attn_seqs *cs, const float *kn, const float *vn, const vla_attn_seqs *ns,
          vla_attn_stats *st), (c, T(o), T(lse), T(q), qs, T(kc), T(vc), cs, T(kn), T(vn), ns, st))
WRAP_VOID(flow_interpolate,
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

#define SLOT(name) .name = chk_##name
static const vla_ops checked_ops = {
    .name = "checked",
    .device = VLA_DEVICE_CPU,
    .host_memory = false,
    .rtol = 0.0,
    .host_waits = chk_host_waits,
    .launches = chk_launches,
    .alloc = chk_alloc,
    .free = chk_free,
    SLOT(to_device), SLOT(to_host), SLOT(copy_bytes), SLOT(sgemm), SLOT(sgemm_strided_batched), SLOT(sgemm_q), SLOT(sgemm_epi), SLOT(ready_bytes), SLOT(prepare_operand),
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
