/* linear.h — fully connected layer y = x·Wᵀ + b on [tokens, features] rows.
 *
 * Conventions shared by every nn layer (llm.c style):
 *  - activations are f32, row-major [tokens, features];
 *  - weights keep PyTorch's layout (Linear: W[out_dim, in_dim]) so checkpoints
 *    load without transposes;
 *  - every backward ADDS into its gradient buffers (inputs' and parameters'),
 *    so a layer used twice, or a residual branch, just accumulates; zero the
 *    buffers once per step. Pass NULL for a gradient you do not need.
 *
 * MIXED PRECISION (docs/precision.md). The _q forms take how the layer's
 * GEMMs read their operands (vla_linear_prec; NULL is f32, the plain forms):
 * BF16 rounds x, W and dy to bf16; FP8 is TransformerEngine's HYBRID
 * format with delayed per-tensor scaling — x and W in E4M3 (forward), dy in
 * E5M2 (the backward's dgrad dx = dy·W and wgrad dW = dyᵀ·x), each of the
 * three roles with its own scale and amax. Accumulation and outputs stay
 * f32; the bias and its gradient are f32 always. */
#ifndef VLA_NN_LINEAR_H
#define VLA_NN_LINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/ops.h"

/* While a policy holds its weights (they cannot change: the micro-batches
 * of a training step, the flow steps of an action chunk), its lowered
 * linears cast each weight once per use — the forward's copy and the input
 * gradient's (transposed) copy — and reuse the copy until the hold ends
 * (ops.h, prepare_operand; PyTorch's autocast caches a weight's cast the
 * same way within its region). gen counts holds; a copy made under another
 * generation is stale. */
typedef struct {
    bool holding;
    uint64_t gen;
    int depth; /* holds open (they nest: the copies last until the outermost release) */
    /* FROZEN WEIGHTS. Only the optimizer writes weights between holds in
     * training, and it never writes a frozen one, so a frozen weight's bf16
     * copy outlives the hold (GR00T's VLM: cast once, not once per step)
     * until some other write — a load, a commit, an init — says so
     * (vla_policy_weights_changed bumps frozen_gen; the optimizer's
     * vla_policy_trainable_changed does not). FP8 copies carry the step's
     * scale and record the weight's amax: recast every hold. */
    uint64_t frozen_gen;
    int64_t casts; /* weight copies made so far (tests count them) */
} vla_weight_scope;

typedef struct {
    vla_weight_scope *scope;
    void *fwd, *dgrad;            /* backend memory, made at first use */
    size_t fwd_bytes, dgrad_bytes;
    uint64_t fwd_gen, dgrad_gen;  /* the hold each copy was made in (0: none) */
    bool frozen;                  /* the weight has no gradient (set at each outermost hold) */
    uint64_t fwd_frozen_gen;      /* scope->frozen_gen when the forward copy was made */
    int64_t param;                /* the weight's parameter index in its policy */
    /* the bf16 forward copy's cast as its first use made it (the weight, its shape and layout), so a
     * hold can bring the copy up to date ahead of the ops that read it (vla_weight_ready_recast) */
    struct {
        bool set;
        vla_gemm_q g;
        bool trans_b;
        int64_t n, k, ldw;
        const float *w;
    } cast;
} vla_weight_ready;

/* Whether r's copy for the forward (dgrad false) or the input gradient is current — the GEMM reads it
 * as it is, without a cast — for a linear lowered to bf16 (bf16 true) or FP8. */
bool vla_weight_ready_fresh(const vla_weight_ready *r, bool dgrad, bool bf16);
/* BRINGING A COPY UP TO DATE AHEAD (a training step, before its captured
 * regions: vla_policy_weights_refresh). stale: r's bf16 forward copy was
 * made before, a hold is open and the copy is not current. recast issues
 * the cast its next use would issue (prepare_operand into the same buffer,
 * the same bits) and nothing else, so a captured region may hold it;
 * mark_recast then says on the host that it is current (and counts it). */
bool vla_weight_ready_stale(const vla_weight_ready *r);
void vla_weight_ready_recast(const vla_ops *ops, const vla_weight_ready *r);
void vla_weight_ready_mark_recast(vla_weight_ready *r);

/* SHARED INPUT CASTS (bf16). Several lowered linears read one input in a
 * row — q, k and v of a self-attention block its normed input, k and v of
 * a cross-attention the context, gate and up of a gated MLP theirs — and
 * each of their GEMMs would cast that input again: the forward as op(A),
 * the wgrad (transposed) as op(B). vla_linear_share_input casts it once
 * into one of two buffers the policy owns (policy/precision.h; grown as
 * needed, reused by every block: each copy is read at once by the GEMMs
 * that follow, in issue order) and the _x forms read it (ops.h, a_ready /
 * b_ready): q/k/v's six activation casts of x become two, gate/up's four
 * two. Likewise each lowered linear's output gradient dy, read by its dgrad
 * (as A) and its wgrad (as Aᵀ): one bf16 copy serves both (ops.h, a_ready),
 * two casts become one. The same bits: the copy is the cast the GEMMs would make. A backend
 * that keeps no copies (cpu: ready_bytes 0) shares nothing.
 *
 * FP8 shares the forward's cast (2026-12-07): each linear keeps its own
 * input scale and amax, as TE's unfused linears do, but linears that read
 * one tensor record the same amax every step, so from equal histories
 * (every scale starts at 1) their scales stay equal and one cast, with the
 * first one's scale, is each one's cast. The copy carries its 1/s, so a
 * GEMM reading it is right whatever its own scale; the others' amax slots
 * take the cast's (copy_bytes: each keeps its history and its place in the
 * checkpoint). q/k/v's three casts of x become one, gate/up's two one, in
 * the forward (op(A)) and in the wgrad (op(B), transposed) alike. A linear
 * of another mode or format (bf16 under --fp8.min_dim) does not read it. */
typedef struct {
    void *buf; /* backend memory */
    size_t bytes;
} vla_cast_buf;
typedef struct {
    vla_cast_buf fwd, wgrad;
    vla_cast_buf dy;  /* a linear's output gradient, cast once for its dgrad and wgrad (bf16; FP8: the dgrad's) */
    vla_cast_buf dy_t; /* FP8: the wgrad's (transposed) copy of it, made in the same pass (prepare_operand_pair) */
    vla_cast_buf out; /* a GEMM's output copy its epilogue writes while the GEMM reads fwd (producer casts) */
    /* what fwd, wgrad and out hold: bf16 (a share, or a producer's copy), or FP8 cast with x's scale into
     * x's amax (the first reader's input operand: a share, or a producer's copy) */
    struct vla_cast_tag {
        vla_precision mode;
        vla_fp8_operand x;
    } fwd_tag, wgrad_tag, out_tag;
} vla_input_casts;

/* One linear layer's precision: the mode, and in FP8 the scaling state of
 * its input x, its weight W and its output gradient dy (backend memory,
 * carved from the policy's one flat buffer: policy/precision.h); ready:
 * its weight's GEMM-ready copies (NULL: cast at every GEMM); casts: the
 * policy's shared input-cast buffers (NULL: none). */
typedef struct {
    vla_precision mode;
    vla_fp8_operand x, w, dy;
    vla_weight_ready *ready;
    vla_input_casts *casts;
} vla_linear_prec;

/* in [n, in_dim] cast once as the forward GEMMs (wgrad false: op(A) of
 * in·Wᵀ) or the wgrad GEMMs (wgrad true: op(B) of dyᵀ·in) of linears of
 * precision q read it; valid until the next share of the same kind. NULL:
 * not shared (f32, no buffers, a backend without copies, memory short,
 * VLA_FP8_SHARED_CASTS=0 in FP8) — the GEMMs then cast it themselves. */
const void *vla_linear_share_input(const vla_ops *ops, const vla_linear_prec *q, bool wgrad, const float *in,
                                   int64_t n, int64_t in_dim);
/* Whether FP8 shares the forward's input cast (VLA_FP8_SHARED_CASTS=0: no, for A/B runs; the same bits
 * either way), and the tests' switch. */
bool vla_linear_fp8_shared_casts_on(void);
void vla_linear_set_fp8_shared_casts(bool on);

/* PRODUCER CASTS (bf16 between ops, first step). Where the op that makes
 * a linear's input can write its bf16 GEMM-ready copy itself — a norm
 * (ops.h, vla_norm_fuse), the GLU (glu_forward's ready) — the cast is no
 * kernel and no pass of its own: the buffer below is handed to that op,
 * and then to the forward GEMMs as in_ready (the _x forms). The buffer is
 * the shared forward one (vla_linear_share_input's: valid until the next
 * use), sized for in [n, in_dim]; NULL where share_input would not share
 * (f32, FP8, no buffers, a backend without copies — cpu —, memory short)
 * or VLA_PRODUCER_CASTS=0 (vla_linear_input_ready_on) — the producer then
 * writes no copy and the GEMMs cast as before. The same bits either way:
 * the copy is prepare_operand's. */
void *vla_linear_input_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim);
/* FP8 PRODUCER CASTS (2026-12-07, TransformerEngine's LayerNormLinear for
 * every producer that can): the same for a producer that writes FP8
 * copies too — a norm (ops.h, vla_norm_fuse.fp8), the GLU (glu_forward's
 * ready_fp8). In FP8, where the forward's input cast is shared
 * (VLA_FP8_SHARED_CASTS, and VLA_PRODUCER_CASTS), the buffer of that
 * shared cast, and *fp8 = &q->x: the producer writes the cast itself with
 * q's input scale, its amax into q's slot (q is the first reader; the
 * others take its amax: shared_ready) — the bytes share_input's cast of
 * the output would write. bf16 as above, with *fp8 = NULL. */
void *vla_linear_input_ready_fp8(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim,
                                 const vla_fp8_operand **fp8);
/* The same in a second buffer, for a copy a GEMM's epilogue writes of its output (ops.h,
 * vla_gemm_epilogue.ready and ready_fp8: a GELU MLP's h) while that GEMM reads the first; bf16, or FP8
 * as vla_linear_input_ready_fp8's. */
void *vla_linear_epilogue_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t in_dim,
                                       const vla_fp8_operand **fp8);
bool vla_linear_input_ready_on(void);
/* Tests: turn the producer copies on or off (overrides VLA_PRODUCER_CASTS), and count the buffers handed
 * to producers so far. */
void vla_linear_set_producer_casts(bool on);
int64_t vla_linear_producer_copies(void);

/* KEPT COPIES (bf16 training, 2026-12-07; docs/precision.md). A value
 * read only by bf16 GEMMs — a block's normed inputs h1 and h2, an MLP's
 * hidden h (gated or GELU), forward and weight gradient alike — is saved
 * for the backward as its bf16 GEMM-ready copy alone, with no f32 tensor
 * beside it: the copy is what every one of its reads reads (ops.h: a norm,
 * the GLU or a GEMM's epilogue writes the copy alone, a GEMM takes a NULL
 * operand with its copy).
 * The same bits; 2 bytes an element kept where there were 4 (on cuda; the
 * checked backend's copies are f32, so there it is exercised, not saved),
 * and the backward's casts of those values are gone. A size table gives
 * such a value vla_linear_kept_floats of the backend that keeps it (the
 * copy's ready_bytes, in floats, whole 64-byte units). The policy decides
 * at vla_policy_set_precision (policy/precision.h): bf16, a backend that
 * keeps copies, and the switch below on. */
int64_t vla_linear_kept_floats(const vla_ops *ops, int64_t n, int64_t cols);
/* VLA_KEPT_COPIES=0: keep the f32 values as before (A/B runs of memory on a device; the same bits),
 * and the tests' switch (read when a policy's precision is set) */
bool vla_linear_kept_copies_on(void);
void vla_linear_set_kept_copies(bool on);

/* out[n, out_dim] = in[n, in_dim] · w[out_dim, in_dim]ᵀ + b[out_dim] (b may be NULL). */
void vla_linear_forward(const vla_ops *ops, float *out, const float *in, const float *w, const float *b, int64_t n,
                        int64_t in_dim, int64_t out_dim);
void vla_linear_forward_q(const vla_ops *ops, const vla_linear_prec *q, float *out, const float *in, const float *w,
                          const float *b, int64_t n, int64_t in_dim, int64_t out_dim);

/* out = act(in·wᵀ + b), and pre (NULL: not kept) = in·wᵀ + b — what the
 * activation's backward reads — in one GEMM with its epilogue
 * (ops->sgemm_epi); act IDENTITY is vla_linear_forward_q. */
void vla_linear_forward_act(const vla_ops *ops, const vla_linear_prec *q, float *out, float *pre, const float *in,
                            const float *w, const float *b, vla_act act, int64_t n, int64_t in_dim, int64_t out_dim);

/* vla_linear_forward_act reading in_ready (as below) for in, and writing out's bf16 GEMM-ready copy into
 * out_ready (NULL: none; vla_linear_epilogue_ready_buffer, FP8 when it gave out_fp8) in the GEMM's
 * epilogue */
void vla_linear_forward_act_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, void *out_ready,
                              const vla_fp8_operand *out_fp8, float *out, float *pre, const float *in, const float *w,
                              const float *b, vla_act act, int64_t n, int64_t in_dim, int64_t out_dim);

/* vla_linear_forward_q reading in_ready (vla_linear_share_input(…, false, in, …), or NULL) for in */
void vla_linear_forward_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, float *out,
                          const float *in, const float *w, const float *b, int64_t n, int64_t in_dim,
                          int64_t out_dim);

/* d_in += d_out·w, d_w += d_outᵀ·in, d_b += Σ_rows d_out (each may be NULL). */
void vla_linear_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                         const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim);
/* The same with d_in WRITTEN (= d_out·w): for a d_in that holds nothing yet, so no zero fill goes first */
void vla_linear_backward_fresh(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                               const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim);
void vla_linear_backward_q(const vla_ops *ops, const vla_linear_prec *q, float *d_in, float *d_w, float *d_b,
                           const float *d_out, const float *in, const float *w, int64_t n, int64_t in_dim,
                           int64_t out_dim);
/* The same for a linear's output gradient dy [n, out_dim], written by the op that makes it (glu_backward,
 * act_backward: ops.h), read by the linear's dgrad and wgrad (vla_linear_bwd.dy_ready); second:
 * a second buffer, for the other of two such gradients made by one op (GLU: dgate, dup). */
void *vla_linear_dy_ready_buffer(const vla_ops *ops, const vla_linear_prec *q, int64_t n, int64_t out_dim,
                                 bool second);

/* vla_linear_backward_q whose wgrad reads in_ready (vla_linear_share_input(…, true, in, …), or NULL) for in */
void vla_linear_backward_x(const vla_ops *ops, const vla_linear_prec *q, const void *in_ready, float *d_in,
                           float *d_w, float *d_b, const float *d_out, const float *in, const float *w, int64_t n,
                           int64_t in_dim, int64_t out_dim);
/* How a linear's backward reads and writes (vla_linear_backward_ex). */
typedef struct {
    const void *in_ready; /* in's bf16 copy for the wgrad (vla_linear_share_input(…, true, …)), or NULL */
    const void *dy_ready; /* d_out's bf16 copy, written by the op that made d_out (vla_linear_dy_ready_buffer), or NULL */
    bool d_in_fresh;      /* d_in holds nothing yet: the dgrad writes it (its GEMM's beta 0) instead of adding
                           * into it — the zero fill before it is saved (the same values: 0 + x is x) */
} vla_linear_bwd;
void vla_linear_backward_ex(const vla_ops *ops, const vla_linear_prec *q, const vla_linear_bwd *o, float *d_in,
                            float *d_w, float *d_b, const float *d_out, const float *in, const float *w, int64_t n,
                            int64_t in_dim, int64_t out_dim);

#endif
