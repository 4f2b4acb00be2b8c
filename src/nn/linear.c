/* linear.c — fully connected layer: two or three GEMMs through the op table,
 * each reading its operands as the layer's precision says (linear.h). */
#include "nn/linear.h"

#include <stddef.h>
#include <stdlib.h>

#include "base/env_switch.h"

/* The GEMM's view of two roles: a and b as op(A), op(B) read them. */
static vla_gemm_q *gemm_q(const vla_linear_prec *q, vla_gemm_q *g, const vla_fp8_operand *a,
                          const vla_fp8_operand *b) {
    if (!q || q->mode == VLA_PREC_FP32) return NULL;
    *g = (vla_gemm_q){q->mode, *a, *b, NULL, NULL};
    return g;
}

/* *buf (a backend buffer of *have bytes) holding at least need bytes: reallocated, contents lost,
 * when short; NULL (and *have 0) when memory is short. A copy is recast whenever its buffer is
 * new, so its generation stamps need no reset here: a NULL buffer never serves a stale copy. */
static void *grown(const vla_ops *ops, void **buf, size_t *have, size_t need) {
    if (*have < need || !*buf) {
        if (*buf) ops->free(*buf);
        *buf = ops->alloc(need);
        *have = *buf ? need : 0;
    }
    return *buf;
}

/* The weight as op(B) of g (n×k, stored trans_b or not, stride ldw), cast
 * once per hold (linear.h); NULL when there is no hold, the backend keeps
 * no copies, or memory is short — the GEMM then casts it itself. */
static const void *weight_ready(const vla_ops *ops, const vla_linear_prec *q, const vla_gemm_q *g, bool dgrad,
                                bool trans_b, int64_t n, int64_t k, const float *w, int64_t ldw) {
    vla_weight_ready *r = q->ready;
    if (!r || !r->scope || !r->scope->holding) return NULL;
    /* bf16: W's copy is one stored layout for the forward (Wᵀ as B) and the dgrad (W as B) alike
     * (ops.h, a_ready): the dgrad reads the forward's, half the copies' memory. FP8 keeps two
     * (K-major per role). */
    bool bf16 = g->mode == VLA_PREC_BF16;
    if (bf16) dgrad = false;
    void **buf = dgrad ? &r->dgrad : &r->fwd;
    if (vla_weight_ready_fresh(r, dgrad, bf16)) return *buf;
    size_t need = ops->ready_bytes(g, n, k);
    if (need == 0) return NULL;
    if (!grown(ops, buf, dgrad ? &r->dgrad_bytes : &r->fwd_bytes, need)) return NULL;
    ops->prepare_operand(g, trans_b, n, k, w, ldw, *buf);
    *(dgrad ? &r->dgrad_gen : &r->fwd_gen) = r->scope->gen;
    if (!dgrad) r->fwd_frozen_gen = r->scope->frozen_gen;
    r->scope->casts++;
    if (bf16) {
        r->cast.set = true, r->cast.g = *g, r->cast.trans_b = trans_b;
        r->cast.g.a_ready = r->cast.g.b_ready = NULL;
        r->cast.n = n, r->cast.k = k, r->cast.ldw = ldw, r->cast.w = w;
    }
    return *buf;
}

bool vla_weight_ready_fresh(const vla_weight_ready *r, bool dgrad, bool bf16) {
    if (!r->scope || !r->scope->holding || !(dgrad ? r->dgrad : r->fwd)) return false;
    /* a frozen weight's bf16 copy lasts until a write other than the optimizer's (vla_weight_scope) */
    if (r->frozen && bf16 && !dgrad) return r->fwd_frozen_gen == r->scope->frozen_gen;
    return (dgrad ? r->dgrad_gen : r->fwd_gen) == r->scope->gen;
}

bool vla_weight_ready_stale(const vla_weight_ready *r) {
    return r->cast.set && r->fwd && r->scope && r->scope->holding && !vla_weight_ready_fresh(r, false, true);
}

void vla_weight_ready_recast(const vla_ops *ops, const vla_weight_ready *r) {
    ops->prepare_operand(&r->cast.g, r->cast.trans_b, r->cast.n, r->cast.k, r->cast.w, r->cast.ldw, r->fwd);
}

void vla_weight_ready_mark_recast(vla_weight_ready *r) {
    r->fwd_gen = r->scope->gen;
    r->fwd_frozen_gen = r->scope->frozen_gen;
    r->scope->casts++;
}

/* x [n][cols] cast into cb as the B operand op(B) = x (trans_b false: k = n
 * rows, cols columns) or op(B) = xᵀ… read as prepare_operand(g, tb, rows, k)
 * says; NULL when the backend keeps no copies or memory is short */
static const void *cast_into(const vla_ops *ops, vla_cast_buf *cb, const vla_gemm_q *g, bool tb, int64_t rows,
                             int64_t k, const float *x, int64_t ld) {
    size_t need = ops->ready_bytes(g, rows, k);
    if (need == 0) return NULL;
    if (!grown(ops, &cb->buf, &cb->bytes, need)) return NULL;
    ops->prepare_operand(g, tb, rows, k, x, ld, cb->buf);
    return cb->buf;
}

const void *vla_linear_share_input(const vla_ops *ops, const vla_linear_prec *q, bool wgrad, const float *in,
                                   int64_t n, int64_t in_dim) {
    if (!q || !q->casts || n <= 0 || in_dim <= 0) return NULL;
    if (q->mode != VLA_PREC_BF16 && !(q->mode == VLA_PREC_FP8 && vla_linear_fp8_shared_casts_on())) return NULL;
    /* FP8: one cast with the first reader's scale (linear.h), the others take its amax (shared_ready) */
    vla_gemm_q g = {q->mode, {0}, q->x, NULL, NULL}; /* the input as a B operand (ops.h, a_ready) */
    /* forward: op(A) = in (n×in_dim) is op(B) of trans_b with n rows; wgrad: op(B) = in, k = n */
    const void *r = wgrad ? cast_into(ops, &q->casts->wgrad, &g, false, in_dim, n, in, in_dim)
                          : cast_into(ops, &q->casts->fwd, &g, true, n, in_dim, in, in_dim);
    struct vla_cast_tag *t = wgrad ? &q->casts->wgrad_tag : &q->casts->fwd_tag;
    t->mode = r ? q->mode : VLA_PREC_FP32, t->x = q->x;
    return r;
}

/* The ready copy q's GEMM may read for its input (a_ready forward, b_ready wgrad): a share of q's mode and
 * format (or any other copy handed to it: a producer's, bf16), NULL otherwise — a bf16 linear under
 * --fp8.min_dim beside FP8 readers of one input casts its own. An FP8 reader other than the cast's first
 * takes its amax into its own slot (linear.h); with no amax to take from, it casts as before. */
static const void *shared_ready(const vla_ops *ops, const vla_linear_prec *q, const void *ready, bool wgrad) {
    if (!ready || !q) return ready;
    /* what the buffer holding it holds: the shared cast (forward or wgrad), or a producer's copy (the
     * forward buffer: a norm's, the GLU's; the second: a GEMM epilogue's) */
    const vla_input_casts *c = q->casts;
    const struct vla_cast_tag *t = !c                      ? NULL
                                   : wgrad                 ? (ready == c->wgrad.buf ? &c->wgrad_tag : NULL)
                                   : ready == c->fwd.buf   ? &c->fwd_tag
                                   : ready == c->out.buf   ? &c->out_tag
                                                           : NULL;
    if (!t) return q->mode == VLA_PREC_BF16 ? ready : NULL;
    if (t->mode != q->mode) return NULL;
    if (q->mode != VLA_PREC_FP8) return ready;
    if (t->x.fmt != q->x.fmt || (q->x.amax && !t->x.amax)) return NULL;
    if (q->x.amax && q->x.amax != t->x.amax) ops->copy_bytes(q->x.amax, t->x.amax, sizeof(float));
    return ready;
}

static atomic_int producer_casts = -1; /* -1: VLA_PRODUCER_CASTS decides, at the first use */
static int64_t producer_copies;  /* buffers handed to producers so far */

/* the shared buffers producers may write into: a bf16 linear's, with the copies on; with fp8_ok (a
 * producer that writes FP8 copies too: a norm, the GLU, a GEMM's epilogue) an FP8 linear's where its
 * forward input cast is shared — the copy is that cast */
static vla_input_casts *producer_bufs(const vla_linear_prec *q, bool fp8_ok) {
    if (!vla_linear_input_ready_on() || !q) return NULL;
    if (q->mode == VLA_PREC_BF16) return q->casts;
    return fp8_ok && q->mode == VLA_PREC_FP8 && vla_linear_fp8_shared_casts_on() ? q->casts : NULL;
}

/* cb grown to hold [n, cols]'s copy in q's mode (op(B) of trans_b, n rows: share_input's layout), or NULL;
 * *tag (when given) says what it will hold: a copy in q's mode, FP8 with q's input scale into its amax */
static void *ready_buffer(const vla_ops *ops, const vla_linear_prec *q, vla_cast_buf *cb, struct vla_cast_tag *tag,
                          int64_t n, int64_t cols) {
    if (!cb || n <= 0 || cols <= 0) return NULL;
    vla_gemm_q g = {q->mode, {0}, q->x, NULL, NULL};
    size_t need = ops->ready_bytes(&g, n, cols);
    void *buf = need ? grown(ops, &cb->buf, &cb->bytes, need) : NULL;
    if (buf) __atomic_fetch_add(&producer_copies, 1, __ATOMIC_RELAXED);
    if (buf && tag) *tag = (struct vla_cast_tag){q->mode, q->x};
    return buf;
}

/* the forward buffer (fp8 NULL: bf16 producers only), or the second (epilogue), for [n, in_dim] */
static void *producer_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim, bool second,
                             const vla_fp8_operand **fp8) {
    if (fp8) *fp8 = NULL;
    vla_input_casts *c = producer_bufs(q, fp8 != NULL);
    if (!c) return NULL;
    void *buf = second ? ready_buffer(ops, q, &c->out, &c->out_tag, n, in_dim)
                       : ready_buffer(ops, q, &c->fwd, &c->fwd_tag, n, in_dim);
    if (buf && fp8 && q->mode == VLA_PREC_FP8) *fp8 = &q->x;
    return buf;
}

void *vla_linear_input_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim) {
    return producer_buffer(ops, q, n, in_dim, false, NULL);
}

void *vla_linear_input_ready_fp8(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim,
                                 const vla_fp8_operand **fp8) {
    return producer_buffer(ops, q, n, in_dim, false, fp8);
}

void *vla_linear_epilogue_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim,
                                       const vla_fp8_operand **fp8) {
    return producer_buffer(ops, q, n, in_dim, true, fp8);
}

void *vla_linear_dy_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t out_dim,
                                 bool second) {
    vla_input_casts *c = producer_bufs(q, false);
    return ready_buffer(ops, q, c ? (second ? &c->out : &c->dy) : NULL, c && second ? &c->out_tag : NULL, n, out_dim);
}

/* VLA_PRODUCER_CASTS=0: every GEMM input cast by the GEMM side, as before (A/B runs on a device) */
bool vla_linear_input_ready_on(void) { return vla_env_switch(&producer_casts, "VLA_PRODUCER_CASTS"); }
void vla_linear_set_producer_casts(bool on) { atomic_store(&producer_casts, on); }

/* VLA_FP8_SHARED_CASTS=0: each FP8 linear casts its own input (A/B runs on a device; the same bits) */
static atomic_int fp8_shared = -1;
bool vla_linear_fp8_shared_casts_on(void) { return vla_env_switch(&fp8_shared, "VLA_FP8_SHARED_CASTS"); }
void vla_linear_set_fp8_shared_casts(bool on) { atomic_store(&fp8_shared, on); }

int64_t vla_linear_kept_floats(const vla_ops *ops, int64_t n, int64_t cols) {
    if (!ops || n <= 0 || cols <= 0) return 0;
    const vla_gemm_q g = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    size_t bytes = ops->ready_bytes(&g, n, cols);
    return (int64_t)((bytes + 63) / 64 * 16);
}

static atomic_int kept_copies = -1; /* -1: VLA_KEPT_COPIES decides, at the first use */
bool vla_linear_kept_copies_on(void) { return vla_env_switch(&kept_copies, "VLA_KEPT_COPIES"); }
void vla_linear_set_kept_copies(bool on) { atomic_store(&kept_copies, on); }

int64_t vla_linear_producer_copies(void) { return __atomic_load_n(&producer_copies, __ATOMIC_RELAXED); }

static void forward(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, void *out_ready,
                    const vla_fp8_operand *out_fp8, float *out,
                    float *pre, const float *in, const float *w, const float *b, vla_act act, int64_t n,
                    int64_t in_dim, int64_t out_dim) {
    if (n <= 0) return;
    vla_gemm_q g;
    vla_gemm_q *gq = q ? gemm_q(q, &g, &q->x, &q->w) : NULL;
    if (gq) gq->b_ready = weight_ready(ops, q, gq, false, true, out_dim, in_dim, w, in_dim);
    if (gq) gq->a_ready = shared_ready(ops, q, in_ready, false);
    const vla_gemm_epilogue epi = {b, act, pre, out_ready, out_fp8};
    /* the bias (and activation) in the GEMM's epilogue: a device folds the bias into the product */
    ops->sgemm_epi(gq, &epi, false, true, n, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, 0.0f, out, out_dim);
}

void vla_linear_forward_act(const vla_ops *ops, const vla_linear_prec *q, float *out, float *pre, const float *in,
                            const float *w, const float *b, vla_act act, int64_t n, int64_t in_dim, int64_t out_dim) {
    forward(ops, q, NULL, NULL, NULL, out, pre, in, w, b, act, n, in_dim, out_dim);
}

void vla_linear_forward_act_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, void *out_ready,
                              const vla_fp8_operand *out_fp8, float *out, float *pre, const float *in, const float *w,
                              const float *b, vla_act act, int64_t n, int64_t in_dim, int64_t out_dim) {
    forward(ops, q, in_ready, out_ready, out_fp8, out, pre, in, w, b, act, n, in_dim, out_dim);
}

void vla_linear_forward_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, float *out,
                          const float *in, const float *w, const float *b, int64_t n, int64_t in_dim,
                          int64_t out_dim) {
    forward(ops, q, in_ready, NULL, NULL, out, NULL, in, w, b, VLA_ACT_IDENTITY, n, in_dim, out_dim);
}

void vla_linear_forward_q(const vla_ops *ops, const vla_linear_prec *q, float *out, const float *in, const float *w,
                          const float *b, int64_t n, int64_t in_dim, int64_t out_dim) {
    vla_linear_forward_act(ops, q, out, NULL, in, w, b, VLA_ACT_IDENTITY, n, in_dim, out_dim);
}

void vla_linear_forward(const vla_ops *ops, float *out, const float *in, const float *w, const float *b, int64_t n,
                        int64_t in_dim, int64_t out_dim) {
    vla_linear_forward_q(ops, NULL, out, in, w, b, n, in_dim, out_dim);
}

void vla_linear_backward_q(const vla_ops *ops, const vla_linear_prec *q, float *d_in, float *d_w, float *d_b,
                           const float *d_out, const float *in, const float *w, int64_t n, int64_t in_dim,
                           int64_t out_dim) {
    vla_linear_backward_x(ops, q, NULL, d_in, d_w, d_b, d_out, in, w, n, in_dim, out_dim);
}

void vla_linear_backward_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, float *d_in,
                           float *d_w, float *d_b, const float *d_out, const float *in, const float *w, int64_t n,
                           int64_t in_dim, int64_t out_dim) {
    const vla_linear_bwd o = {in_ready, NULL, false};
    vla_linear_backward_ex(ops, q, &o, d_in, d_w, d_b, d_out, in, w, n, in_dim, out_dim);
}

/* dy [n][out_dim]'s two FP8 copies (ops.h, prepare_operand_pair) into the shared dy buffers; both NULL
 * where the backend keeps no copies or memory is short (the GEMMs then cast dy themselves) */
static void dy_fp8_pair(const vla_ops *ops, const vla_linear_prec *q, const float *dy, int64_t n, int64_t out_dim,
                        const void **dn, const void **dt) {
    vla_input_casts *c = q->casts;
    vla_gemm_q g = {VLA_PREC_FP8, {0}, q->dy, NULL, NULL};
    size_t bn = ops->ready_bytes(&g, n, out_dim), bt = ops->ready_bytes(&g, out_dim, n);
    if (!bn || !bt || !grown(ops, &c->dy.buf, &c->dy.bytes, bn) || !grown(ops, &c->dy_t.buf, &c->dy_t.bytes, bt))
        return;
    ops->prepare_operand_pair(&g, n, out_dim, dy, out_dim, c->dy.buf, c->dy_t.buf);
    *dn = c->dy.buf, *dt = c->dy_t.buf;
}

void vla_linear_backward_ex(const vla_ops *ops, const vla_linear_prec *q, const vla_linear_bwd *o, float *d_in,
                            float *d_w, float *d_b, const float *d_out, const float *in, const float *w, int64_t n,
                            int64_t in_dim, int64_t out_dim) {
    if (n <= 0) return;
    vla_gemm_q g;
    vla_gemm_q *gq;
    const void *in_ready = o->in_ready, *dy_ready = q && q->mode == VLA_PREC_BF16 ? o->dy_ready : NULL;
    const float beta_in = o->d_in_fresh ? 0.0f : 1.0f; /* a fresh d_in is written, not added to */
    /* FP8: dy cast once into both copies its GEMMs read, the dgrad's (as stored) and the wgrad's (dyᵀ),
     * in one pass (TransformerEngine's cast_transpose) */
    const void *dy8_n = NULL, *dy8_t = NULL;
    if (d_in && d_w && q && q->mode == VLA_PREC_FP8 && q->casts && vla_linear_fp8_shared_casts_on())
        dy_fp8_pair(ops, q, d_out, n, out_dim, &dy8_n, &dy8_t);
    /* bf16: dy cast once for the dgrad (A = dy) and the wgrad (A = dyᵀ): one stored layout serves
     * both (ops.h, a_ready); the dgrad's cast is the one the pair would have made first — unless the
     * op that wrote dy wrote its copy too (dy_ready) */
    if (!dy_ready && d_in && d_w && q && q->mode == VLA_PREC_BF16 && q->casts) {
        vla_gemm_q gd = {q->mode, {0}, q->dy, NULL, NULL};
        dy_ready = cast_into(ops, &q->casts->dy, &gd, true, n, out_dim, d_out, out_dim);
    }
    if (d_in) { /* dgrad: dy (E5M2) · W (E4M3) */
        gq = q ? gemm_q(q, &g, &q->dy, &q->w) : NULL;
        if (gq) gq->b_ready = weight_ready(ops, q, gq, true, false, in_dim, out_dim, w, in_dim);
        if (gq) gq->a_ready = q->mode == VLA_PREC_FP8 ? dy8_n : dy_ready;
        if (gq) ops->sgemm_q(gq, false, false, n, in_dim, out_dim, 1.0f, d_out, out_dim, w, in_dim, beta_in, d_in, in_dim);
        else ops->sgemm(false, false, n, in_dim, out_dim, 1.0f, d_out, out_dim, w, in_dim, beta_in, d_in, in_dim);
    }
    if (d_w) { /* wgrad: dyᵀ (E5M2) · x (E4M3) */
        gq = q ? gemm_q(q, &g, &q->dy, &q->x) : NULL;
        if (gq) gq->b_ready = shared_ready(ops, q, in_ready, true);
        if (gq) gq->a_ready = q->mode == VLA_PREC_FP8 ? dy8_t : dy_ready;
        if (gq) ops->sgemm_q(gq, true, false, out_dim, in_dim, n, 1.0f, d_out, out_dim, in, in_dim, 1.0f, d_w, in_dim);
        else ops->sgemm(true, false, out_dim, in_dim, n, 1.0f, d_out, out_dim, in, in_dim, 1.0f, d_w, in_dim);
    }
    if (d_b) ops->sum_rows(d_b, d_out, n, out_dim, 1.0f);
}

void vla_linear_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                         const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim) {
    vla_linear_backward_q(ops, NULL, d_in, d_w, d_b, d_out, in, w, n, in_dim, out_dim);
}

void vla_linear_backward_fresh(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                               const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim) {
    const vla_linear_bwd fresh = {NULL, NULL, true};
    vla_linear_backward_ex(ops, NULL, &fresh, d_in, d_w, d_b, d_out, in, w, n, in_dim, out_dim);
}
