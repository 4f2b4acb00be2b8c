/* ops.h — the op table: every numeric kernel the model, the loss, the
 * sampler and the optimizer run, and the memory they run on.
 *
 * ggml's rule. Model code (nn/, policy/) and the code that drives it
 * (train/, eval/, distributed/) never loop over tensor elements, never call
 * BLAS, OpenMP or CUDA, and never read or write a tensor with the host: they
 * call through a `const vla_ops *` and do shape arithmetic. A backend is
 * one filled table: `cpu` (ops_cpu*.c: GEMM tiles by oneDNN or
 * OpenBLAS, tensor/cpu/gemm.h; OpenMP), `checked` (the
 * CPU kernels on memory the host cannot touch outside an op call, so a
 * bypass crashes a test; ops_checked.c), and `cuda` (tensor/cuda/, built
 * with `make CUDA=1`; docs/cuda.md). backend.h names them;
 * docs/design.md, "The backend seam", says how to add one.
 *
 * WHERE DATA LIVES — the line between host and backend:
 *  - float tensors (weights, gradients, optimizer moments, activations, the
 *    batch's images/state/actions once uploaded) are BACKEND memory, from
 *    `alloc`; the host reaches them only through to_device / to_host (and
 *    the returned scalars of the reductions);
 *  - small int32/uint8 metadata — cu_seqlens, token positions, attention
 *    groups, row index maps, token and embodiment ids, padding masks — and
 *    per-sample scalars (flow times) are HOST memory, built per batch by the
 *    policy and passed by pointer; a device backend uploads what its kernels
 *    need (O(tokens) integers against O(tokens·width) floats of work).
 * Scalar arguments (alpha, eps, …) are host values.
 *
 * Conventions: matrices are row-major; `lda` etc. are row strides in
 * elements; op(A) is M×K, op(B) is K×N, C is M×N. Lengths are int64_t.
 * Kernels that take a gradient *accumulate* into it (+=) unless they say
 * "overwrites". Every kernel of the cpu backend gives bitwise the same result
 * at any thread count (docs/design.md, "Determinism"). */
#ifndef VLA_TENSOR_OPS_H
#define VLA_TENSOR_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

typedef enum { VLA_DEVICE_CPU, VLA_DEVICE_CUDA } vla_device;

/* Scalars of one AdamW step, formed once per step by the optimizer (in
 * double, rounded to f32 once, as PyTorch does with its Python floats). */
typedef struct {
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float bias_correction2_sqrt; /* sqrt(1 − beta2^t) */
    float eps;
    float neg_step;              /* −lr / (1 − beta1^t) */
    float decay_mul;             /* 1 − lr·weight_decay (applied when `decay`) */
    float grad_scale;            /* gradient clipping coefficient (1: none) */
    /* NULL, or backend memory [1] holding the step's guard (clip_coef):
     * when set it replaces grad_scale, and a non-finite guard leaves w, m
     * and v untouched — the step is skipped on the backend, with no host
     * round trip to decide it. */
    const float *guard;
} vla_adamw_scalars;

/* Pointwise activations. */
typedef enum { VLA_ACT_GELU_TANH, VLA_ACT_SILU, VLA_ACT_RELU, VLA_ACT_IDENTITY } vla_act;

/* Sinusoidal time embeddings (nn/time_embedding.h says which model uses which):
 *   LOG:     freq_k = exp(−ln(max_period)·k / (half − shift))   (diffusers Timesteps)
 *   PERIODS: freq_k = 2π / (min_period·(max/min)^(k/(half−1)))   (openpi posemb_sincos)
 * out = [sin | cos] (cos_first: [cos | sin]) of t·freq. */
typedef enum { VLA_TEMB_LOG, VLA_TEMB_PERIODS } vla_temb_kind;
typedef struct {
    vla_temb_kind kind;
    int64_t dim; /* even */
    double min_period, max_period, shift;
    bool cos_first;
} vla_temb_config;

/* ---- mixed precision (docs/precision.md) --------------------------------------
 * Tensors stay f32 in memory; a quantised GEMM reads its operands as their
 * bf16 or FP8 values and accumulates in f32 (what cuBLASLt does with bf16 /
 * FP8 inputs and f32 accumulation; the CPU backend emulates it exactly that
 * way). FP8 uses per-tensor delayed scaling (TransformerEngine's recipe):
 * each operand is quantised with the scale s its tensor had after the last
 * step, q = sat_fp8(x·s), read back as q·(1/s), while its amax is
 * max-accumulated for the next update (fp8_scale_update). */
typedef enum { VLA_PREC_FP32 = 0, VLA_PREC_BF16, VLA_PREC_FP8 } vla_precision;
typedef enum { VLA_FP8_E4M3 = 0, VLA_FP8_E5M2 } vla_fp8_format;

/* One FP8 operand's scaling state, backend memory. */
typedef struct {
    vla_fp8_format fmt;
    const float *scale; /* [1] quantisation factor s (x → sat(x·s)) */
    float *amax;        /* [1] max |x| of this step (before scaling; a NaN counts as +Inf), max-accumulated
                           by every GEMM that reads the operand; NULL: not recorded */
} vla_fp8_operand;

/* How a GEMM reads its operands. FP32: as sgemm. BF16: both rounded to
 * bf16 (nearest even). FP8: op(A) and op(B) quantised by a and b.
 * b_ready: NULL, or op(B) already in the form this backend's GEMM reads,
 * made by prepare_operand for the same (mode, b, trans_b, n, k) — the GEMM
 * reads it instead of casting B (B is still passed: a backend may fall back
 * to it); the same bits either way.
 * a_ready: the same for op(A), seen from the other side: op(A) (m×k) is
 * op(B) of a GEMM with B = A, trans_b = !trans_a, n = m, so
 * prepare_operand({mode, ·, b = a}, !trans_a, m, k, A, lda) makes it — one
 * cast of an input that several GEMMs read (q, k and v of one activation).
 * In BF16 a copy depends only on the stored matrix (its rows, columns and
 * values): every backend keeps it in the stored layout (cpu, checked: the
 * rounded f32 copy; cuda: bf16 rows padded to 16 bytes), so one copy serves
 * any GEMM reading that matrix, as A or B, transposed or not (x: the
 * forward's A and the wgrad's B; dy: the dgrad's A and the wgrad's Aᵀ).
 * FP8 copies are per role (K-major, each operand's own scale).
 * KEPT COPIES: in BF16 an operand may exist only as its copy (a block's
 * normed inputs and an MLP's hidden, saved for the backward as their
 * bf16 copies alone: nn/block.h) — its f32 pointer (a or b) is then NULL
 * and the copy is all the GEMM reads, on every path (a device backend
 * that falls back from its library widens the copy). */
typedef struct {
    vla_precision mode;
    vla_fp8_operand a, b;
    const void *b_ready;
    const void *a_ready;
} vla_gemm_q;

/* What a GEMM does to its result before writing C (cuBLASLt's epilogues):
 * t = alpha·op(A)·op(B) + beta·C, each element rounded to f32; t += bias[col]
 * when bias is set (f32); then, with act other than IDENTITY, pre = t
 * (when pre is set: [m, n] at C's stride — what the activation's backward
 * reads) and C = act(t); else C = t. The cpu backend computes exactly these
 * steps (sgemm_q, add_row_vector, act_forward, prepare_operand for ready),
 * so its bits are those of the separate ops; a device backend folds the
 * bias into the GEMM and the rest into one pass.
 * KEPT COPIES: C may be NULL when act is set, pre is set, ready is a bf16
 * copy (no ready_fp8) and beta is 0 — the GEMM then writes t into pre (at
 * stride ldc) and act(t) exists only as the copy: a GELU MLP's hidden kept
 * as its bf16 copy alone (nn/mlp.h). The same pre and copy, byte for byte. */
typedef struct {
    const float *bias; /* [n] or NULL */
    vla_act act;
    float *pre;        /* with act: t before the activation, or NULL */
    void *ready;       /* NULL, or C's bf16 GEMM-ready copy as a norm's (vla_norm_fuse, with n = m rows and
                        * dim = n columns, packed whatever ldc): the next GEMM's a_ready — a GELU MLP's h */
    const vla_fp8_operand *ready_fp8; /* NULL, or the copy is FP8 with this scale and amax (vla_norm_fuse.fp8) */
} vla_gemm_epilogue;

/* What a norm's forward may do besides normalising (NULL: nothing), so
 * that the ops around a norm need no kernels of their own:
 *  - res: the residual add before the norm — the norm reads x = in + res
 *    (each element rounded to f32, as `add`), writes x to sum (which may
 *    be in itself) and normalises x: `add` then the norm, in one pass;
 *  - ready: the output's bf16 GEMM-ready copy, the bytes
 *    prepare_operand({BF16}, trans_b = true, n, dim, out, dim, ready)
 *    writes (ready_bytes of that shape; a backend whose ready_bytes is 0
 *    keeps no copies and is never given one): the forward GEMMs that read
 *    the output as op(A) take it as a_ready — the cast fused into the op
 *    that made the value (issue 40: bf16 between ops);
 *  - with ready (bf16 only, fp8 NULL), out may be NULL: the copy is all
 *    the norm writes (kept copies, vla_gemm_q), the statistics as ever. */
typedef struct {
    const float *res; /* [n, dim] or NULL */
    float *sum;       /* [n, dim], with res */
    void *ready;      /* NULL, or the output's bf16 GEMM-ready copy */
    /* NULL (the copy is bf16), or the copy is FP8: the bytes prepare_operand({FP8, b = *fp8}, trans_b =
     * true, n, dim, out, dim, ready) writes — out quantised with *fp8->scale, max |out| max-accumulated
     * into fp8->amax (when set) — the forward GEMMs' a_ready in FP8: the cast in the norm's pass, as
     * TransformerEngine's LayerNormLinear makes it (nn/linear.h, producer casts) */
    const vla_fp8_operand *fp8;
} vla_norm_fuse;

/* ---- packed attention (nn/attention.h has the whole contract) -------------- */

/* How the backward splits its work:
 *  FUSED:    5 GEMMs per tile — cpu: one work item per (sample, kv head),
 *            deterministic; cuda (bf16 kernels): the dK/dV pass adds dQ with
 *            f32 atomics (FlashAttention-2), whose order varies run to run;
 *  TWO_PASS: dK/dV per k-tile, then dQ per q-tile: 7 GEMMs per tile, more
 *            parallelism inside one long sample, deterministic everywhere;
 *  AUTO:     the backend's choice — cpu: from the shapes alone, never from
 *            the thread count; cuda: two passes (VLA_CUDA_ATTN_BACKWARD=fused
 *            makes it fused). */
typedef enum { VLA_ATTN_BWD_AUTO = 0, VLA_ATTN_BWD_FUSED, VLA_ATTN_BWD_TWO_PASS } vla_attn_bwd_mode;

typedef struct {
    int32_t n_heads, n_kv_heads, head_dim;
    float scale;            /* softmax scale; 0 means 1/sqrt(head_dim) */
    int32_t tile_q, tile_k; /* 0: the backend's default */
    vla_attn_bwd_mode bwd_mode;
    /* One KV head (MQA): by default a token's query heads are folded into
     * consecutive rows of one head, on every backend (tensor/attn_plan.h);
     * true keeps one tile per head (tests). */
    bool no_mqa_fold;
    /* How the two products read their operands (Q, K, V, P, dO): FP32 as
     * f32; BF16 (and FP8, which attention runs as BF16) rounded to bf16
     * with f32 accumulation and softmax. A backend may compute FP32 for any
     * mode (the cpu backend always does); the cuda backend runs its bf16
     * tensor-core kernels for BF16/FP8 and its f32 kernels for FP32. */
    vla_precision precision;
} vla_attn_config;

/* One packed side of an attention (queries, or keys). Host metadata. */
typedef struct {
    int32_t n_seg;
    const int32_t *cu_seqlens; /* [n_seg + 1] */
    const int32_t *group;      /* [tokens] attention group, or NULL for all 0 */
} vla_attn_seqs;

/* Tile counts of the last call, summed over heads (optional: pass NULL). */
typedef struct {
    int64_t tiles_total;    /* (q-tile, k-tile) pairs within samples, summed over heads */
    int64_t tiles_computed; /* those the mask did not rule out */
    int64_t tiles_unmasked; /* of the computed ones, those with no per-element mask test */
} vla_attn_stats;

/* ---- flow matching (policy/flow.h has the conventions) ------------------------ */

typedef enum { VLA_FLOW_PI05, VLA_FLOW_GROOT } vla_flow_convention;
typedef enum {
    VLA_MSE_MEAN_REAL, /* Σ mask·err² / Σ mask (GR00T; padded steps and dims excluded) */
    VLA_MSE_MEAN_ALL,  /* Σ mask·err² / (S·H·D) (LeRobot π0.5: masked, then .mean() over all) */
} vla_mse_reduction;

/* Figures a backend keeps about its own work, read through vla_ops.stat by
 * the benches (one pattern for every backend, no backend's header needed). */
typedef enum {
    VLA_STAT_ATTN_PLAN_BUILDS,   /* packed-attention plans built and uploaded so far (the rest were cached) */
    VLA_STAT_GEMM_EMULATED,      /* bf16/FP8 GEMMs that found no tensor-core algorithm and ran emulated */
    VLA_STAT_ATTN_LAST_KV_SPLITS, /* the parts the last attention backward cut its dK/dV walk into (0: none ran) */
    VLA_STAT_CAPTURED_REPLAYS,    /* captured regions replayed so far (run_captured; checked: compared;
                                   * -1 where none are: cuda with VLA_CUDA_GRAPHS=0) */
    VLA_STAT_OPERAND_CASTS,       /* bf16/FP8 operand casts so far: prepare_operand's, and a quantized GEMM's
                                   * of each operand that did not arrive ready — the passes turning f32 into a
                                   * GEMM's input, and on cuda the bf16 attention's copies of its operands (a
                                   * copy its producer wrote is none; cpu and checked count together: checked
                                   * runs the cpu's kernels) */
    VLA_STAT_DEVICE_USED_BYTES,   /* device memory in use now (cuda: total − free, whoever holds it — the pool's
                                   * reservations and the graphs' memory included; meta: what its allocs hold);
                                   * -1 on host backends */
    VLA_STAT_DEVICE_PEAK_BYTES,   /* the most of it held at once since nothing was (meta, tensor/meta); -1 elsewhere */
    VLA_STAT_DEVICE_BLOCKS,       /* allocations held now (meta); -1 elsewhere */
    VLA_STAT_DEVICE_FREE_BYTES,   /* device memory free now (cuda: cudaMemGetInfo's free); -1 elsewhere */
    VLA_STAT_ATTN_LAST_STAGING,   /* how the bf16 tensor-core attention's passes staged their tiles at their last
                                   * launch (cuda: bits 0-2 forward, dK/dV, dQ fetched asynchronously; bit 3
                                   * from bf16 copies of the operands; -1 where none ran or no such kernels) */
    VLA_STAT_ATTN_LAST_Q_SPLITS,  /* the parts the last bf16 attention forward cut its key walk into (0: none ran;
                                   * tensor/attn_plan.h, SPLIT KEYS) */
    VLA_STAT_ATTN_LAST_BACKWARD_PASSES /* the passes over the tiles the last attention backward ran: 2 (dK/dV,
                                        * then dQ), 1 (fused: dQ added by the dK/dV pass; 0: none ran) */
} vla_ops_stat;

typedef struct vla_ops {
    const char *name;
    vla_device device;
    /* true when the host may read and write this backend's memory directly
     * (cpu). Code that hands backend memory to a library that touches it
     * with the host — MPI, safetensors — stages through host buffers
     * otherwise (to_host / to_device). Model code never looks at it. */
    bool host_memory;
    /* Declared tolerance against the cpu backend: the largest relative
     * difference (|a − b| / max(|b|, 1)) a policy forward, loss or gradient
     * may show. 0: bitwise equal to cpu. Tests widen their own tolerances
     * by it (tests/test_util.h: test_tol). */
    double rtol;
    /* true for the meta backend (tensor/meta/ops_meta.c): its ops do
     * nothing and its memory holds no data, so code may skip work whose
     * only product is data (drawing initial weights). Model code never
     * looks at it otherwise: a step runs its whole path. */
    bool shapes_only;
    /* Wait until every op issued so far has finished (timing, and host code
     * that reads memory written by an op through other means). NULL: every
     * op has finished when it returns (cpu, checked). Ops that return host
     * values (reductions, to_host) and to_host itself always return
     * finished results; a device backend may otherwise run ops
     * asynchronously, in issue order. vla_ops_sync() calls it. */
    void (*sync)(void);
    /* How many times the host has waited for this backend's results so far
     * (reductions and loss read back, to_host): a training step's count is
     * what "no host syncs per step" measures (`vla bench policy` prints it
     * per step). NULL: the backend does not count (cpu: nothing to wait
     * for). */
    int64_t (*host_waits)(void);
    /* How many operations this backend has issued so far: on cuda every
     * checked launch site (kernel launches, cuBLASLt calls, to_device
     * copies; metadata uploads are not counted), on checked every op-table
     * call — what a device would launch at least once. `vla bench policy`
     * prints it per step (launches_per_step). NULL: not counted (cpu). */
    int64_t (*launches)(void);
    /* A backend's own figures, for the benches and gpu_check (vla_ops_stat);
     * -1 (or a NULL slot): this backend has no such figure. */
    int64_t (*stat)(vla_ops_stat what);
    /* CAPTURED REGIONS (CUDA graphs). body(ctx) issues a fixed sequence of
     * ops — an action chunk's flow steps — and key (key_bytes bytes, compared
     * whole) names everything that sequence depends on: shapes, layouts,
     * the backend addresses it reads and writes, the host data it uploads.
     * Same key, same ops with the same arguments: the caller promises it. A
     * device backend may then run body once, record its ops on a later call
     * and from then on replay the record without calling body at all (cuda:
     * a CUDA graph, one launch for thousands of kernels). So body must not
     * wait for the backend (no to_host, no host reductions), must free only
     * what it allocated itself, and must leave nothing on the host that the
     * caller reads afterwards. Returns body's status, or a backend error.
     * NULL: the caller calls body itself (vla_ops_run_captured). `checked`
     * holds callers to the promise on the CPU: each later call's ops,
     * their backend pointers, scalars and uploaded bytes must equal the
     * first call's, else VLA_ERR_INTERNAL naming the first op that differs. */
    vla_status (*run_captured)(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx);
    /* PROFILING (tensor/profile.h). mark() puts a point on this backend's
     * timeline after every op issued so far and returns its handle (>= 0;
     * -1: none can be placed now, e.g. while recording a region);
     * mark_ms(a, b) waits until both points have passed and returns the
     * milliseconds between them on the device's clock; marks_reset()
     * forgets every handle (they are reused). NULL: every op has finished
     * when it returns, and the profiler reads the host's clock (cpu,
     * checked). */
    int64_t (*mark)(void);
    double (*mark_ms)(int64_t from, int64_t to);
    void (*marks_reset)(void);
    /* DEFERRED READS: results the host needs soon, not now (a training
     * step's loss sum and Σg², read while the next step runs). read_later
     * takes src's bytes (at most VLA_READ_LATER_BYTES) as they will be once
     * every op issued before it has finished, without waiting for those ops,
     * and returns a ticket (>= 0), or -1 when none is free (the caller reads
     * with to_host); read_collect(ticket, host_dst) waits for that point
     * only — ops issued after read_later go on running — and hands the bytes
     * over, closing the ticket. At most VLA_READS_IN_FLIGHT tickets are
     * open. Neither may be called inside a captured region. Not a host wait
     * (host_waits): the device is not drained. NULL: to_host at once
     * (vla_ops_read_later; cpu: its ops have finished when they return). */
    int (*read_later)(const void *src, size_t bytes);
    void (*read_collect)(int ticket, void *host_dst);

    /* ---- memory ------------------------------------------------------------ */
    /* backend memory (64-byte aligned), NULL when out of memory */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    /* copies between host memory and backend memory, and within the backend */
    void (*to_device)(void *dst, const void *host_src, size_t bytes);
    void (*to_host)(void *host_dst, const void *src, size_t bytes);
    void (*copy_bytes)(void *dst, const void *src, size_t bytes);

    /* ---- GEMM -------------------------------------------------------------- */
    /* C = alpha·op(A)·op(B) + beta·C */
    void (*sgemm)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    /* the same for `batch` matrices laid out at fixed strides (elements) */
    void (*sgemm_strided_batched)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                                  const float *a, int64_t lda, int64_t stride_a, const float *b, int64_t ldb,
                                  int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c,
                                  int64_t batch);

    /* the same with operands read at lower precision (q NULL or FP32: sgemm);
     * C stays f32, accumulation is f32 */
    void (*sgemm_q)(const vla_gemm_q *q, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    /* GEMM-ready operands: a weight that many GEMMs read while it cannot
     * change (the micro-batches of a step, the flow steps of a chunk) is
     * cast once, as PyTorch's autocast caches a weight's cast within its
     * region. ready_bytes: the backend memory prepare_operand needs for
     * op(B) of sgemm_q(q, ·, trans_b, ·, n, k, …) — 0 when this backend
     * keeps no such copies (cpu: its casts are cheap, a copy is 4 bytes per
     * weight). prepare_operand writes it into dst from b (stride ldb),
     * max-accumulating B's amax as the GEMM would have (FP8). */
    size_t (*ready_bytes)(const vla_gemm_q *q, int64_t n, int64_t k);
    void (*prepare_operand)(const vla_gemm_q *q, bool trans_b, int64_t n, int64_t k, const float *b, int64_t ldb,
                            void *dst);
    /* Both FP8 copies a matrix b [rows][cols] (stride ldb) is read as, made in one pass over it
     * (TransformerEngine's cast_transpose: a linear's output gradient dy, read untransposed by its dgrad
     * and transposed by its wgrad): dst_n gets prepare_operand(q, true, rows, cols, b, ldb)'s bytes (b as
     * op(A) of a GEMM reading it as stored), dst_t prepare_operand(q, false, cols, rows, b, ldb)'s (bᵀ as
     * op(A)), q->b's amax max-accumulated as either would. FP8 only (q->mode FP8: a bf16 copy serves
     * both reads already); a backend whose ready_bytes is 0 is never called. */
    void (*prepare_operand_pair)(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb,
                                 void *dst_n, void *dst_t);
    /* sgemm_q followed by its epilogue (epi NULL: sgemm_q). C may not alias
     * A, B, the bias or pre; it may be NULL as vla_gemm_epilogue's KEPT
     * COPIES say (t then lands in pre). */
    void (*sgemm_epi)(const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool trans_a, bool trans_b, int64_t m,
                      int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                      float beta, float *c, int64_t ldc);
    /* Delayed-scaling update of n FP8 tensors after a step (TransformerEngine's
     * recipe, nvte_delayed_scaling_recipe_amax_and_scale_update): history
     * [hist_len, n] holds the tensors' amaxes newest row first — row 0 is this
     * step's (what the GEMMs max-accumulated into it; n contiguous floats, so
     * a data-parallel caller all-reduces (MAX) that one row before the
     * update). Per tensor i: a = max over its column (most_recent: row 0
     * alone); if a is finite and > 0, scale[i] = (fmt_max[i]·2^−margin)/a in
     * f32 (FLT_MAX if that overflows), else scale[i] stays; then every row
     * moves one older (the oldest drops out) and row 0 restarts at 0. TE
     * rolls a ring instead; the window's contents, hence the scales, are the
     * same. fmt_max is host [n]. */
    void (*fp8_scale_update)(float *history, float *scale, int64_t n, int64_t hist_len, const float *fmt_max,
                             float margin, bool most_recent);

    /* ---- elementwise (y may alias an input) ---------------------------------- */
    void (*fill)(float *y, float value, int64_t n);
    void (*copy)(float *y, const float *x, int64_t n);
    void (*add)(float *y, const float *a, const float *b, int64_t n);  /* y = a + b */
    void (*sub)(float *y, const float *a, const float *b, int64_t n);  /* y = a − b */
    void (*mul)(float *y, const float *a, const float *b, int64_t n);  /* y = a ⊙ b */
    void (*axpy)(float *y, float alpha, const float *x, int64_t n);    /* y += alpha·x */
    void (*scale)(float *y, float alpha, int64_t n);                   /* y *= alpha */
    void (*affine)(float *y, const float *x, float alpha, float beta, int64_t n); /* y = alpha·x + beta */
    /* y = (float)((double)x·alpha): one rounding of the exact product (gradient scaling) */
    void (*scale_to)(float *y, const float *x, double alpha, int64_t n);
    /* y[r, c] += bias[c] for a rows×cols matrix */
    void (*add_row_vector)(float *y, const float *bias, int64_t rows, int64_t cols);

    /* ---- layout: rows and blocks (index maps are host int32) ------------------ */
    /* Row i < n of w floats: dst row dst_idx[i] (stride ldd) = alpha · src
     * row src_idx[i] (stride lds); a NULL index is the identity (i). alpha 1
     * copies exactly. Rows may be parts of wider rows (w <= ld). */
    void (*copy_rows)(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                      const int32_t *src_idx, int64_t n, int64_t w, float alpha);
    /* The same with +=: each destination element summed in i order, so
     * repeated destinations accumulate deterministically (embedding
     * gradients, a shared prefix's rows). */
    void (*add_rows)(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                     const int32_t *src_idx, int64_t n, int64_t w, float alpha);
    /* dst[r·ldd + c] = src[r·lds + c] for r < rows, c < cols */
    void (*copy2d)(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols);
    /* ViT patches (non-overlapping p×p): patches [n_img·(H/p)·(W/p), C·p·p] ←
     * images [n_img, C, H, W]; col2im_add is its transpose, adding into images. */
    void (*im2col)(float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p);
    void (*col2im_add)(float *images, const float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W,
                       int64_t p);

    /* ---- per-segment weights (GR00T's per-embodiment linear, nn/embodiment_linear.h) ----
     * Packed rows: segment s is rows [cu[s], cu[s+1]) (cu, ids: host
     * int32) and uses matrix W[ids[s]] of w [n_mat, in_dim, out_dim] (in ×
     * out: GR00T's layout) and bias row b[ids[s]] of b [n_mat, out_dim].
     * forward OVERWRITES y: y_s = x_s·W[e_s] (+ b[e_s] when b is set).
     * backward WRITES dx (dx_s = dy_s·W[e_s]ᵀ: every caller's dx held
     * nothing, and a zero fill first was a pass for nothing) and
     * accumulates the others: dw[e] += x_sᵀ·dy_s and db[e] += Σ_rows dy_s
     * over the segments of e in s order. The cpu backend runs one GEMM per segment (its bits); a
     * device runs every segment in one launch per product. */
    void (*segment_linear_forward)(float *y, const float *x, const float *w, const float *b, const int32_t *ids,
                                   const int32_t *cu, int32_t n_seg, int64_t in_dim, int64_t out_dim);
    void (*segment_linear_backward)(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                                    const int32_t *ids, const int32_t *cu, int32_t n_seg, int64_t in_dim,
                                    int64_t out_dim);

    /* ---- reductions (accumulated in double, fixed order; host results) ------- */
    double (*sum)(const float *x, int64_t n);
    double (*dot)(const float *a, const float *b, int64_t n);
    double (*sum_squares)(const float *x, int64_t n);
    /* out[i] = sum_squares(x[i], n[i]) for i < count, the same bits, read
     * back to the host once: a device backend queues every reduction and
     * waits once (the gradient norm of a step spans hundreds of tensors,
     * one wait each through sum_squares). x and n are host arrays; x[i] is
     * backend memory; out is host memory. */
    void (*sum_squares_multi)(int count, const float *const *x, const int64_t *n, double *out);
    /* The same sums added up on the backend: *total (backend memory) =
     * Σ_i sum_squares(x[i], n[i]), each term with sum_squares's bits, added
     * in i order from 0 — what the host makes of sum_squares_multi's out[],
     * without reading anything back (a training step's Σg²). */
    void (*sum_squares_total)(int count, const float *const *x, const int64_t *n, double *total);
    float (*max_abs)(const float *x, int64_t n);
    int64_t (*count_nonfinite)(const float *x, int64_t n);
    /* index of the first NaN/Inf, or −1 */
    int64_t (*find_nonfinite)(const float *x, int64_t n);
    /* y[c] = beta·y[c] + Σ_r x[r, c] (bias gradients) */
    void (*sum_rows)(float *y, const float *x, int64_t rows, int64_t cols, float beta);

    /* ---- softmax (the dense reference attention) ------------------------------ */
    void (*softmax_rows)(float *y, const float *x, int64_t rows, int64_t cols);
    /* dx = y ⊙ (dy − Σ_c dy·y), per row */
    void (*softmax_rows_backward)(float *dx, const float *y, const float *dy, int64_t rows, int64_t cols);
    /* additive mask [Nq, Nk] of a packed pair of sides: 0 where query i may
     * attend key j (same sample, group[j] <= group[i]), −inf elsewhere */
    void (*attention_mask)(float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks);

    /* ---- activations ---------------------------------------------------------- */
    void (*act_forward)(vla_act act, float *out, const float *in, int64_t n);
    /* d_in = d_out·f'(in) over rows × cols — OVERWRITTEN, as glu_backward's: every caller's d_in held
     * nothing, and a zero fill before an add was a pass over it for nothing; ready: NULL, or d_in's bf16
     * GEMM-ready copy, as a norm's (vla_norm_fuse, n = rows, dim = cols) — the next linear backward's dy */
    void (*act_backward)(vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows, int64_t cols,
                         void *ready);
    /* gated MLP: h = act(gate)·up over rows × cols; ready: NULL, or h's
     * bf16 GEMM-ready copy as a norm's (vla_norm_fuse, with n = rows, dim
     * = cols), FP8 with ready_fp8's scale and amax when that is set (as
     * vla_norm_fuse.fp8: the down projection's input cast); backward
     * OVERWRITES dgate and dup, and writes their bf16 copies (ready_dgate,
     * ready_dup: NULL or as glu_forward's) — the gate and up linears' dy.
     * With a bf16 ready (ready_fp8 NULL), h may be NULL: the copy alone is
     * written (kept copies, vla_gemm_q) */
    void (*glu_forward)(vla_act act, float *h, const float *gate, const float *up, int64_t rows, int64_t cols,
                        void *ready, const vla_fp8_operand *ready_fp8);
    void (*glu_backward)(vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                         int64_t rows, int64_t cols, void *ready_dgate, void *ready_dup);

    /* ---- norms (rows of `dim`; statistics saved for the backward) -------------
     * Every forward takes a vla_norm_fuse (NULL: none); with res, the
     * statistics are those of in + res, which the backward then reads as
     * its `in` (the sum). */
    /* LayerNorm: y = (x − mean)·rstd·w + b; w, b may be NULL (plain) */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                              int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
    void (*layernorm_backward)(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                               const float *w, const float *mean, const float *rstd, int64_t n, int64_t dim);
    /* RMSNorm: y = x·rstd·g, g = w (or 1 + w when one_plus; 1 when w is NULL) */
    void (*rmsnorm_forward)(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                            int64_t dim, float eps, const vla_norm_fuse *fuse);
    void (*rmsnorm_backward)(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                             bool one_plus, const float *rstd, int64_t n, int64_t dim);
    /* Adaptive norms with a per-sample modulation mod [n_seg, k·dim], token
     * t of sample s (cu host): AdaLN y = LN(x)·(1 + scale) + shift (k = 2:
     * scale, shift); AdaRMS y = rms(x)·(1 + scale) + shift (k = 3: scale,
     * shift, gate). d_mod accumulates into the same layout. */
    void (*adaln_forward)(float *out, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu,
                          int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
    void (*adaln_backward)(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                           const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                           int64_t dim);
    void (*adarms_forward)(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                           int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
    void (*adarms_backward)(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                            const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);
    /* π0.5's gated residual: out = x + y·gate, gate = mod[s, 2·dim : 3·dim]; backward: d_x += d_out and
     * d_mod's gate part += Σ d_out·y (each may be NULL), d_y = d_out·gate WRITTEN (its caller's d_y held
     * nothing: as act_backward's) */
    void (*gated_residual_forward)(float *out, const float *x, const float *y, const float *mod, const int32_t *cu,
                                   int32_t n_seg, int64_t n, int64_t dim);
    void (*gated_residual_backward)(float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                    const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);

    /* ---- positions and time ----------------------------------------------------- */
    /* RoPE (rotate-half) at explicit positions pos [n] (host); forward
     * writes out (may alias in); backward WRITES the transposed rotation of
     * d_out into d_in (may alias d_out: a block rotates its q/k gradients in
     * place) */
    void (*rope_forward)(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
                         double theta);
    void (*rope_backward)(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                          int64_t head_dim, double theta);
    /* out [n, dim] from t [n] (backend memory); d_t [n] accumulates */
    void (*time_embedding_forward)(const vla_temb_config *cfg, float *out, const float *t, int64_t n);
    void (*time_embedding_backward)(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                    int64_t n);

    /* ---- packed attention as whole ops (the op owns tiling and threads) -------- */
    /* out_ready: NULL, or out's bf16 GEMM-ready copy as a norm's (vla_norm_fuse, with n = the query
     * tokens and dim = n_heads·head_dim) — the o-projection's input */
    vla_status (*attention_forward)(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                    const float *k, const float *v, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                    vla_attn_stats *stats, void *out_ready);
    vla_status (*attention_backward)(const vla_attn_config *cfg, float *dq, float *dk, float *dv, const float *d_out,
                                     const float *q, const float *k, const float *v, const float *out,
                                     const float *lse, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                     vla_attn_stats *stats);
    vla_status (*attention_forward_cached)(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                           const vla_attn_seqs *qs, const float *k_cache, const float *v_cache,
                                           const vla_attn_seqs *cs, const float *k_new, const float *v_new,
                                           const vla_attn_seqs *ns, vla_attn_stats *stats);

    /* ---- flow matching ---------------------------------------------------------- */
    /* x_t and the target velocity of S samples of `per` entries at times
     * t[S] (host), in the convention's direction; either output may be NULL */
    void (*flow_interpolate)(vla_flow_convention conv, float *x_t, float *target, const float *actions,
                             const float *noise, const float *t, int64_t S, int64_t per);
    /* Masked MSE over [S, H, D] (policy/flow.h: vla_flow_masked_mse has the
     * rule); is_pad [S·H] and real_dims [S] are host (NULL: none / all D).
     * Returns the loss; d_pred (may be NULL) is OVERWRITTEN with ∂loss/∂pred. */
    double (*masked_mse)(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                         const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                         float *d_pred);

    /* The same loss added to *loss_sum (backend memory, one double) instead
     * of returned: nothing is read back (a training step sums its
     * micro-batches' losses there and reads them once, train/step.c). */
    void (*masked_mse_acc)(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                           const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                           float *d_pred, double *loss_sum);

    /* ---- optimizer ---------------------------------------------------------------- */
    /* One AdamW step on n elements, in torch.optim.AdamW's order:
     *   w ← w·decay_mul (if decay);  g ← g·grad_scale
     *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
     *   w ← w + neg_step · m / (sqrt(v)/sqrt(1−β2^t) + eps)
     * Elementwise, so results do not depend on how the vector is split
     * across threads or ranks. */
    void (*adamw)(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool decay);
    /* EMA: e ← d·e + omd·w; a non-NULL guard (backend [1], clip_coef's)
     * that is not finite leaves e untouched (the skipped step) */
    void (*ema)(float *e, const float *w, float d, float omd, int64_t n, const float *guard);
    /* The same over many tensors at once (an optimizer shard: one piece per
     * parameter tensor): adamw(w[i], g[i], m[i], v[i], n[i], s, decay[i])
     * and ema(e[i], w[i], d, omd, n[i], guard) for i < count, the same bits;
     * a device runs each in one launch instead of one per tensor (PyTorch's
     * foreach / multi_tensor_apply). Host arrays of backend pointers. */
    void (*adamw_multi)(int count, float *const *w, const float *const *g, float *const *m, float *const *v,
                        const int64_t *n, const bool *decay, const vla_adamw_scalars *s);
    void (*ema_multi)(int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
                      const float *guard);
    /* A step's guard, on the backend: *guard = torch clip_grad_norm_'s
     * coefficient of the gradient norm sqrt(*sumsq) — max_norm/(norm + 1e−6)
     * in double, rounded to f32 once, when that is below 1 and max_norm > 0;
     * else 1 — or NaN when the norm, or *also (NULL: not checked), is not
     * finite. sumsq, also, guard: backend memory. adamw (scalars.guard) and
     * ema read it, so clipping and the NaN/Inf skip need no host round trip. */
    void (*clip_coef)(float *guard, const double *sumsq, const double *also, double max_norm);

    /* element type conversion (see dtype.h for rounding rules); both sides backend memory */
    void (*convert)(void *dst, vla_dtype dst_type, const void *src, vla_dtype src_type, int64_t n);
} vla_ops;

static inline void vla_ops_sync(const vla_ops *ops) {
    if (ops->sync) ops->sync();
}

/* a backend's figure (vla_ops_stat), -1 where it has none (or no stat slot) */
static inline int64_t vla_ops_stat_of(const vla_ops *ops, vla_ops_stat what) {
    return ops->stat ? ops->stat(what) : -1;
}

/* A deferred read (ops.h, read_later) where the backend has them and a ticket is free, else to_host
 * into host_dst at once (ticket -1); vla_ops_read_collect then fills host_dst (or does nothing). */
#define VLA_READ_LATER_BYTES 64
#define VLA_READS_IN_FLIGHT 8
static inline int vla_ops_read_later(const vla_ops *ops, void *host_dst, const void *src, size_t bytes) {
    int t = ops->read_later && bytes <= VLA_READ_LATER_BYTES ? ops->read_later(src, bytes) : -1;
    if (t < 0) ops->to_host(host_dst, src, bytes);
    return t;
}
static inline void vla_ops_read_collect(const vla_ops *ops, int ticket, void *host_dst) {
    if (ticket >= 0) ops->read_collect(ticket, host_dst);
}

/* body(ctx) as a captured region where the backend has them (ops.h, run_captured), else called directly */
static inline vla_status vla_ops_run_captured(const vla_ops *ops, const void *key, size_t key_bytes,
                                              vla_status (*body)(void *ctx), void *ctx) {
    return ops->run_captured ? ops->run_captured(key, key_bytes, body, ctx) : body(ctx);
}

#endif
