/* ops_meta.c — the `meta` backend: every slot of the op table, doing
 * nothing, on memory that is address space alone.
 *
 * Why: what a policy's training step holds on a device — weights, their
 * gradients, the GEMM-ready copies, the activation arenas at their peak —
 * follows from its code, its shapes and the backend's own sizing of the
 * copies, not from the numbers. Running that code on a table whose ops are
 * empty gives the exact figure, for the 3-billion-parameter preset on a
 * laptop, in the time the host logic takes (PyTorch's "meta" device and
 * FakeTensor do the same). `vla policy info` and `vla plan` measure this
 * way (policy/memory.h); a model estimate would drift from the code.
 *
 * The rules that make it exact and safe:
 *  - alloc reserves address space (PROT_NONE, MAP_NORESERVE: no page is
 *    ever committed) and counts the bytes asked for; the live count and its
 *    high-water mark are the measurement (stat: VLA_STAT_DEVICE_USED_BYTES,
 *    VLA_STAT_DEVICE_PEAK_BYTES — the peak since nothing was last held, so
 *    each policy created and freed is its own measurement).
 *  - host_memory is false: model code never touches backend memory (the
 *    checked backend holds it to that), so nothing here is read.
 *  - ops return zeros (to_host fills zeros, reductions return 0,
 *    find_nonfinite −1): a loss of 0 and a finite gradient, so a step runs
 *    its whole path.
 *  - ready_bytes is the backend's it is sized as (ops_meta.h): cuda's own
 *    function (tensor/cuda/gemm_plan.c, plain C in every build), checked's
 *    f32 copies, or cpu's none; so is the allocation granule (checked maps
 *    whole pages). The other sizes are the model code's. */
#include "tensor/meta/ops_meta.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tensor/cuda/gemm_plan.h"

/* ---- memory ----------------------------------------------------------------------------------- */

/* Each block starts with a 64-byte header holding its length (the reservation is never touched
 * through the address handed out, but the header page is ours: mapped read-write, one page at most
 * committed per block). */
#define META_HEADER 64

static _Atomic int64_t live, peak, blocks;

/* bytes counted for an allocation of `bytes`, rounded up to `granule` (a power of two, or 1) as the
 * backend the table stands for takes them (checked maps whole pages) */
static void *alloc_counted(size_t bytes, size_t granule) {
    size_t len = META_HEADER + (bytes ? bytes : 1);
    char *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (mprotect(p, META_HEADER, PROT_READ | PROT_WRITE) != 0) { /* the header's page */
        munmap(p, len);
        return NULL;
    }
    size_t counted = granule > 1 ? (bytes + granule - 1) / granule * granule : bytes;
    if (granule > 1 && counted == 0) counted = granule; /* checked maps a page for nothing too */
    memcpy(p, &counted, sizeof counted);
    memcpy(p + sizeof counted, &bytes, sizeof bytes);
    bytes = counted;
    int64_t now = atomic_fetch_add(&live, (int64_t)bytes) + (int64_t)bytes;
    int64_t was = atomic_load(&peak);
    while (now > was && !atomic_compare_exchange_weak(&peak, &was, now)) {
    }
    atomic_fetch_add(&blocks, 1);
    return p + META_HEADER;
}

static void *meta_alloc(size_t bytes) { return alloc_counted(bytes, 1); }
static void *meta_alloc_pages(size_t bytes) { return alloc_counted(bytes, (size_t)sysconf(_SC_PAGESIZE)); }

static void meta_free(void *q) {
    if (!q) return;
    char *p = (char *)q - META_HEADER;
    size_t bytes, asked;
    memcpy(&bytes, p, sizeof bytes); /* as counted */
    memcpy(&asked, p + sizeof bytes, sizeof asked);
    munmap(p, META_HEADER + (asked ? asked : 1));
    atomic_fetch_sub(&blocks, 1);
    if (atomic_fetch_sub(&live, (int64_t)bytes) == (int64_t)bytes) atomic_store(&peak, 0); /* nothing held */
}

static int64_t meta_stat(vla_ops_stat what) {
    if (what == VLA_STAT_DEVICE_USED_BYTES) return atomic_load(&live);
    if (what == VLA_STAT_DEVICE_PEAK_BYTES) return atomic_load(&peak);
    if (what == VLA_STAT_DEVICE_BLOCKS) return atomic_load(&blocks);
    return -1;
}

/* ---- the GEMM-ready copies' sizes, as the backend it stands for ---------------------------------- */

static size_t ready_cuda(const vla_gemm_q *q, int64_t n, int64_t k) { return vla_q_ready_bytes(q, n, k); }
/* checked keeps the cpu's rounded f32 copy (ops_checked.c, chk_ready_bytes) */
static size_t ready_checked(const vla_gemm_q *q, int64_t n, int64_t k) {
    return q && q->mode != VLA_PREC_FP32 && n > 0 && k > 0 ? sizeof(float) * (size_t)(n * k) : 0;
}
static size_t ready_none(const vla_gemm_q *q, int64_t n, int64_t k) { return 0; }

/* ---- the ops: nothing, results zero ---------------------------------------------------------------- */

#define NOP(name, params) static void meta_##name params {}
#define ZERO(type, name, params) static type meta_##name params { return (type)0; }

static void meta_to_host(void *d, const void *s, size_t n) { memset(d, 0, n); }
NOP(to_device, (void *d, const void *s, size_t n))
NOP(copy_bytes, (void *d, const void *s, size_t n))
NOP(sgemm, (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a, int64_t lda,
            const float *b, int64_t ldb, float be, float *c, int64_t ldc))
NOP(sgemm_strided_batched, (bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a,
                            int64_t lda, int64_t sa, const float *b, int64_t ldb, int64_t sb, float be, float *c,
                            int64_t ldc, int64_t sc, int64_t bt))
NOP(sgemm_q, (const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float al, const float *a,
              int64_t lda, const float *b, int64_t ldb, float be, float *c, int64_t ldc))
NOP(prepare_operand, (const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb, void *dst))
NOP(prepare_operand_pair, (const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb, void *dn,
                           void *dt))
NOP(sgemm_epi, (const vla_gemm_q *q, const vla_gemm_epilogue *e, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                float al, const float *a, int64_t lda, const float *b, int64_t ldb, float be, float *c, int64_t ldc))
NOP(fp8_scale_update, (float *h, float *sc, int64_t n, int64_t L, const float *fm, float mg, bool mr))
NOP(fill, (float *y, float v, int64_t n))
NOP(copy, (float *y, const float *x, int64_t n))
NOP(add, (float *y, const float *a, const float *b, int64_t n))
NOP(sub, (float *y, const float *a, const float *b, int64_t n))
NOP(mul, (float *y, const float *a, const float *b, int64_t n))
NOP(axpy, (float *y, float al, const float *x, int64_t n))
NOP(scale, (float *y, float al, int64_t n))
NOP(affine, (float *y, const float *x, float al, float be, int64_t n))
NOP(scale_to, (float *y, const float *x, double al, int64_t n))
NOP(add_row_vector, (float *y, const float *b, int64_t r, int64_t c))
NOP(copy_rows, (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
                int64_t w, float al))
NOP(add_rows, (float *d, int64_t ldd, const int32_t *di, const float *s, int64_t lds, const int32_t *si, int64_t n,
               int64_t w, float al))
NOP(copy2d, (float *d, int64_t ldd, const float *s, int64_t lds, int64_t r, int64_t c))
NOP(im2col, (float *p, const float *im, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps))
NOP(col2im_add, (float *im, const float *p, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ps))
NOP(segment_linear_forward, (float *y, const float *x, const float *w, const float *b, const int32_t *ids,
                             const int32_t *cu, int32_t ns, int64_t in, int64_t out))
NOP(segment_linear_backward, (float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                              const int32_t *ids, const int32_t *cu, int32_t ns, int64_t in, int64_t out))
ZERO(double, sum, (const float *x, int64_t n))
ZERO(double, dot, (const float *a, const float *b, int64_t n))
ZERO(double, sum_squares, (const float *x, int64_t n))
static void meta_sum_squares_multi(int count, const float *const *x, const int64_t *n, double *out) {
    for (int i = 0; i < count; i++) out[i] = 0; /* host results */
}
NOP(sum_squares_total, (int count, const float *const *x, const int64_t *n, double *total)) /* total: backend */
ZERO(float, max_abs, (const float *x, int64_t n))
ZERO(int64_t, count_nonfinite, (const float *x, int64_t n))
static int64_t meta_find_nonfinite(const float *x, int64_t n) { return -1; }
NOP(sum_rows, (float *y, const float *x, int64_t r, int64_t c, float be))
NOP(softmax_rows, (float *y, const float *x, int64_t r, int64_t c))
NOP(softmax_rows_backward, (float *dx, const float *y, const float *dy, int64_t r, int64_t c))
NOP(attention_mask, (float *m, const vla_attn_seqs *qs, const vla_attn_seqs *ks))
NOP(act_forward, (vla_act a, float *o, const float *i, int64_t n))
NOP(act_backward, (vla_act a, float *di, const float *dout, const float *i, int64_t r, int64_t c, void *rd))
NOP(glu_forward, (vla_act a, float *h, const float *g, const float *u, int64_t r, int64_t c, void *rd,
                  const vla_fp8_operand *rf))
NOP(glu_backward, (vla_act a, float *dg, float *du, const float *dh, const float *g, const float *u, int64_t r,
                   int64_t c, void *rg, void *ru))
NOP(layernorm_forward, (float *o, float *mean, float *rstd, const float *in, const float *w, const float *b,
                        int64_t n, int64_t d, float eps, const vla_norm_fuse *f))
NOP(layernorm_backward, (float *di, float *dw, float *db, const float *dout, const float *in, const float *w,
                         const float *mean, const float *rstd, int64_t n, int64_t d))
NOP(rmsnorm_forward, (float *o, float *rstd, const float *in, const float *w, bool op, int64_t n, int64_t d,
                      float eps, const vla_norm_fuse *f))
NOP(rmsnorm_backward, (float *di, float *dw, const float *dout, const float *in, const float *w, bool op,
                       const float *rstd, int64_t n, int64_t d))
NOP(adaln_forward, (float *o, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu,
                    int32_t ns, int64_t n, int64_t d, float eps, const vla_norm_fuse *f))
NOP(adaln_backward, (float *di, float *dm, const float *dout, const float *in, const float *mod, const float *mean,
                     const float *rstd, const int32_t *cu, int32_t ns, int64_t n, int64_t d))
NOP(adarms_forward, (float *o, float *rstd, const float *in, const float *mod, const int32_t *cu, int32_t ns,
                     int64_t n, int64_t d, float eps, const vla_norm_fuse *f))
NOP(adarms_backward, (float *di, float *dm, const float *dout, const float *in, const float *mod, const float *rstd,
                      const int32_t *cu, int32_t ns, int64_t n, int64_t d))
NOP(gated_residual_forward, (float *o, const float *x, const float *y, const float *mod, const int32_t *cu,
                             int32_t ns, int64_t n, int64_t d))
NOP(gated_residual_backward, (float *dx, float *dy, float *dm, const float *dout, const float *y, const float *mod,
                              const int32_t *cu, int32_t ns, int64_t n, int64_t d))
NOP(rope_forward, (float *o, const float *i, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th))
NOP(rope_backward, (float *di, const float *dout, const int32_t *pos, int64_t n, int64_t h, int64_t hd, double th))
NOP(time_embedding_forward, (const vla_temb_config *c, float *o, const float *t, int64_t n))
NOP(time_embedding_backward, (const vla_temb_config *c, float *dt, const float *dout, const float *t, int64_t n))
ZERO(vla_status, attention_forward, (const vla_attn_config *c, float *o, float *lse, const float *q, const float *k,
                                     const float *v, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                     vla_attn_stats *st, void *rd))
ZERO(vla_status, attention_backward, (const vla_attn_config *c, float *dq, float *dk, float *dv, const float *dout,
                                      const float *q, const float *k, const float *v, const float *o,
                                      const float *lse, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                      vla_attn_stats *st))
ZERO(vla_status, attention_forward_cached, (const vla_attn_config *c, float *o, float *lse, const float *q,
                                            const vla_attn_seqs *qs, const float *kc, const float *vc,
                                            const vla_attn_seqs *cs, const float *kn, const float *vn,
                                            const vla_attn_seqs *ns, vla_attn_stats *st))
NOP(flow_interpolate, (vla_flow_convention cv, float *x, float *u, const float *a, const float *z, const float *t,
                       int64_t S, int64_t per))
ZERO(double, masked_mse, (const float *p, const float *t, int64_t S, int64_t H, int64_t D, const uint8_t *pad,
                          const int32_t *rd, vla_mse_reduction red, double div, float *dp))
NOP(masked_mse_acc, (const float *p, const float *t, int64_t S, int64_t H, int64_t D, const uint8_t *pad,
                     const int32_t *rd, vla_mse_reduction red, double div, float *dp, double *acc))
NOP(adamw, (float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool dc))
NOP(ema, (float *e, const float *w, float d, float omd, int64_t n, const float *gd))
NOP(adamw_multi, (int count, float *const *w, const float *const *g, float *const *m, float *const *v,
                  const int64_t *n, const bool *decay, const vla_adamw_scalars *s))
NOP(ema_multi, (int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
                const float *guard))
NOP(clip_coef, (float *gd, const double *ss, const double *also, double mx))
NOP(convert, (void *d, vla_dtype dt, const void *s, vla_dtype st, int64_t n))

#define SLOT(name) .name = meta_##name
#define META_TABLE(tag, dev, ready, alloc_fn)                                                                        \
    static const vla_ops meta_##tag = {                                                                              \
        .name = "meta",                                                                                              \
        .device = dev,                                                                                               \
        .host_memory = false,                                                                                        \
        .shapes_only = true,                                                                                         \
        .rtol = 0.0,                                                                                                 \
        .stat = meta_stat,                                                                                           \
        .alloc = alloc_fn,                                                                                           \
        .free = meta_free,                                                                                           \
        .ready_bytes = ready,                                                                                        \
        SLOT(to_device), SLOT(to_host), SLOT(copy_bytes), SLOT(sgemm), SLOT(sgemm_strided_batched), SLOT(sgemm_q),   \
        SLOT(sgemm_epi), SLOT(prepare_operand), SLOT(prepare_operand_pair), SLOT(fp8_scale_update), SLOT(fill),      \
        SLOT(copy), SLOT(add), SLOT(sub), SLOT(mul), SLOT(axpy), SLOT(scale), SLOT(affine), SLOT(scale_to),          \
        SLOT(add_row_vector), SLOT(copy_rows), SLOT(add_rows), SLOT(copy2d), SLOT(im2col), SLOT(col2im_add),         \
        SLOT(segment_linear_forward), SLOT(segment_linear_backward), SLOT(sum), SLOT(dot), SLOT(sum_squares),        \
        SLOT(sum_squares_multi), SLOT(sum_squares_total), SLOT(max_abs), SLOT(count_nonfinite),                      \
        SLOT(find_nonfinite), SLOT(sum_rows), SLOT(softmax_rows), SLOT(softmax_rows_backward),                       \
        SLOT(attention_mask), SLOT(act_forward), SLOT(act_backward), SLOT(glu_forward), SLOT(glu_backward),          \
        SLOT(layernorm_forward), SLOT(layernorm_backward), SLOT(rmsnorm_forward), SLOT(rmsnorm_backward),            \
        SLOT(adaln_forward), SLOT(adaln_backward), SLOT(adarms_forward), SLOT(adarms_backward),                      \
        SLOT(gated_residual_forward), SLOT(gated_residual_backward), SLOT(rope_forward), SLOT(rope_backward),        \
        SLOT(time_embedding_forward), SLOT(time_embedding_backward), SLOT(attention_forward),                        \
        SLOT(attention_backward), SLOT(attention_forward_cached), SLOT(flow_interpolate), SLOT(masked_mse),          \
        SLOT(masked_mse_acc), SLOT(adamw), SLOT(ema), SLOT(adamw_multi), SLOT(ema_multi), SLOT(clip_coef),           \
        SLOT(convert),                                                                                               \
    };
META_TABLE(cuda, VLA_DEVICE_CUDA, ready_cuda, meta_alloc)
META_TABLE(checked, VLA_DEVICE_CPU, ready_checked, meta_alloc_pages) /* checked maps whole pages per block */
META_TABLE(cpu, VLA_DEVICE_CPU, ready_none, meta_alloc)

const vla_ops *vla_meta_backend_table(vla_meta_sizes as) {
    return as == VLA_META_AS_CUDA ? &meta_cuda : as == VLA_META_AS_CHECKED ? &meta_checked : &meta_cpu;
}
