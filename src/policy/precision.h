/* precision.h — mixed precision of a policy's large linear layers, as the
 * recipe runs it (docs/precision.md): which GEMMs read their operands in
 * bf16 or FP8, and FP8's delayed-scaling state.
 *
 * WHAT IS LOWERED. The seven large linears of every transformer block
 * (q, k, v, o projections; MLP up, gate, down) in every stack the family's
 * inventory declared with vla_pb_blocks (ViT, LM, expert, VL and DiT
 * blocks alike). Everything else stays f32: the policies' small linears
 * (action/state/time encoders and decoders, projections between streams,
 * the adaptive norms' per-sample modulation), attention, norms, the loss,
 * the optimizer. Tensors stay f32 in memory; only the GEMMs' reads change
 * (tensor/ops.h, "mixed precision"). Master weights, gradients and AdamW
 * moments are f32 in every mode.
 *
 * FP8 (TransformerEngine's DelayedScaling with Format.HYBRID). Each linear
 * has three FP8 tensors — its input x (E4M3), weight W (E4M3) and output
 * gradient dy (E5M2) — each with a scale and an amax history. State lives
 * in ONE backend allocation: [n] scales, then the [hist_len, n] history
 * whose row 0 is this step's amaxes (n = 3 × linears; tensor 3l + r is
 * role r of linear l). The GEMMs of a step quantise with the scales of the
 * last update and max-accumulate into row 0; after the step the trainer
 * all-reduces (MAX) row 0 across ranks and calls vla_policy_fp8_update.
 *
 * FP8 ONLY WHERE IT PAYS (recipe.min_dim). A lowered linear whose weight
 * has a side (in or out features) under min_dim reads bf16 instead of FP8
 * in an FP8 run, and has no FP8 tensors: its GEMMs are too small for FP8's
 * doubled rate to repay the casts and scaling (π0.5's single-KV-head k and
 * v projections: 2048 → 256), and bf16 shares casts FP8 cannot (nn/linear.h).
 * TE's users choose the same way, by module. min_dim 0 (the default, as
 * TE's fp8_autocast over every block) puts every lowered linear in FP8.
 * The FP8 linears are numbered in binding order (fp8_index), so the state
 * holds only theirs: tensor 3f + r is role r of FP8 linear f.
 *
 * Tensor names follow the weights': linear "…q_proj" (weight
 * "…q_proj.weight") has FP8 tensors "…q_proj" roles input, weight,
 * grad_output — what checkpoints store (vla_policy_fp8_export). */
#ifndef VLA_POLICY_PRECISION_H
#define VLA_POLICY_PRECISION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "io/safetensors.h"
#include "nn/block.h"
#include "policy/policy.h"
#include "tensor/key_cache.h"

/* TransformerEngine's DelayedScaling knobs; vla_fp8_recipe_default gives
 * TE's defaults (amax_history_len 1024, margin 0, amax_compute_algo "max")
 * and min_dim 0 (every lowered linear in FP8). */
typedef struct {
    int64_t amax_history_len;
    float margin;
    bool most_recent; /* amax_compute_algo "most_recent" (false: "max") */
    int64_t min_dim;  /* a linear with in or out features below it reads bf16 (above, "FP8 ONLY WHERE IT PAYS") */
} vla_fp8_recipe;

void vla_fp8_recipe_default(vla_fp8_recipe *r);

/* FP8 roles of one linear, in tensor order */
enum { VLA_FP8_ROLE_INPUT, VLA_FP8_ROLE_WEIGHT, VLA_FP8_ROLE_GRAD_OUTPUT, VLA_FP8_ROLES };

typedef struct vla_policy_precision {
    vla_precision mode;
    vla_fp8_recipe recipe;
    int64_t n_linears, n;  /* lowered linears; FP8 tensors (3 per FP8 linear) */
    int64_t n_fp8;         /* the linears that read FP8 (FP8 mode; the rest read bf16) */
    int64_t *fp8_index;    /* host [n_linears]: linear l's FP8 number f (tensors 3f..3f+2), −1: bf16 */
    int64_t *fp8_linear;   /* host [n_fp8]: the linear of FP8 number f */
    float *buf;            /* backend: scale [n], then history [hist_len, n] (FP8 only) */
    float *scale, *history;
    float *fmt_max;        /* host [n]: 448 (E4M3) or 57344 (E5M2) per tensor */
    char (*names)[128];    /* host [n_linears]: each linear's name (its weight's, without ".weight") */
    vla_block_prec *bp;    /* host, one per block, in the order of p->blocks */
    /* the weights' GEMM-ready copies while the weights are held
     * (vla_policy_weights_hold, policy.h; nn/linear.h): one per linear */
    vla_weight_scope scope;
    vla_weight_ready *ready; /* host [n_linears]; their copies are backend memory */
    vla_input_casts casts;   /* the shared input casts every lowered linear uses (nn/linear.h) */
    uint64_t serial;         /* which vla_policy_set_precision made it (process-wide, from 1) */
} vla_policy_precision;

/* Adds to a captured region's key (tensor/ops.h, run_captured) which policy
 * instance it runs (p->serial: a freed policy's memory, arena and weights
 * alike, may come back at the same addresses for the next, whose recording
 * must not be another's) and what its ops read of the precision state
 * besides the weights themselves: the mode,
 * whether a hold is open, each weight copy's address and whether it is
 * current (a current copy is read as it is; a stale one is cast first, an
 * op of its own) and the shared cast buffers. Two equal keys: the region's
 * GEMMs read the same copies at the same addresses, or cast the same way.
 * Currency rather than the hold's generation, so a training step whose
 * copies were brought up to date before its regions
 * (vla_policy_weights_refresh) has the same key as the step before it.
 * Nothing without a precision. */
void vla_policy_region_key_add(const vla_policy *p, vla_key *key);

/* "fp32" | "bf16" | "fp8" */
const char *vla_precision_name(vla_precision m);
vla_status vla_precision_parse(const char *s, vla_precision *out);

/* Put p's large linears in `mode` (r: FP8's recipe, NULL for TE's
 * defaults; ignored otherwise). FP8 allocates the state (scales 1, history
 * 0, TE's initial values); FP32 releases it. May be called again. */
vla_status vla_policy_set_precision(vla_policy *p, vla_precision mode, const vla_fp8_recipe *r);
/* The precision an inference session (vla serve, vla eval, the robot
 * library) runs on `ops`: want "fp32" or "bf16"; NULL or "auto" is
 * $VLA_PRECISION, else bf16 on a GPU (twice f32's tensor-core rate; each
 * weight cast once while the session holds its weights, policy.h) and fp32
 * on the CPU (which emulates bf16, slower than f32). FP8 is refused: its
 * scales are calibrated in training. */
vla_status vla_inference_precision(const char *want, const vla_ops *ops, vla_precision *out);
void vla_policy_precision_free(vla_policy *p);
/* KEPT COPIES (nn/linear.h): a family registers each block config it runs (at create, after the
 * weights are bound); from then on every vla_policy_set_precision (and a free) sets whether the configs
 * keep their normed inputs and MLP hidden as bf16 copies alone — in bf16, on a backend that keeps
 * copies (ready_bytes), with VLA_KEPT_COPIES and VLA_PRODUCER_CASTS on (read at that moment) — and
 * vla_policy_kept_copies says on which backend they were last set to (NULL: f32 tensors). */
void vla_policy_block_config(vla_policy *p, vla_block_config *c);
const vla_ops *vla_policy_kept_copies(const vla_policy *p);
static inline vla_precision vla_policy_precision_mode(const vla_policy *p) {
    return p->prec ? p->prec->mode : VLA_PREC_FP32;
}

/* The name of FP8 tensor t's linear ("…q_proj"), t in [0, prec->n). */
const char *vla_policy_fp8_tensor_linear(const vla_policy *p, int64_t t);

/* FP8 (no-ops otherwise). This step's amaxes: row 0 of the history, n
 * contiguous floats of backend memory (*n = 0 outside FP8). */
float *vla_policy_fp8_amax(vla_policy *p, int64_t *n);
/* The delayed-scaling update after a step (its amaxes all-reduced first). */
void vla_policy_fp8_update(vla_policy *p);
/* Forget this step's amaxes (a step the trainer skipped leaves no trace). */
void vla_policy_fp8_discard_step(vla_policy *p);

/* The FP8 state in host memory (scales then history, (1 + hist_len)·n
 * floats; malloc'd, free it), and the way back. */
float *vla_policy_fp8_state_to_host(const vla_policy *p, int64_t *count);
void vla_policy_fp8_state_from_host(vla_policy *p, const float *host);

/* Checkpoint form: per FP8 linear "<name>.fp8_scale" F32 [3] and
 * "<name>.fp8_amax_history" F32 [hist_len, 3] (roles input, weight,
 * grad_output), with the recipe in the metadata. Export adds them to sw
 * from host arrays it allocates into *keep (free after the write). Import
 * reads them back by name (every linear must be there, shapes checked; a
 * history of another length keeps its newest min(saved, current) rows, the
 * rest 0), errors naming the file and tensor. */
vla_status vla_policy_fp8_export(const vla_policy *p, vla_safetensors_writer *sw, float **keep);
vla_status vla_policy_fp8_import(vla_policy *p, const char *path);
/* The same from an open file (`what` names it in errors); the state is
 * written only when every tensor checks out. */
vla_status vla_policy_fp8_import_from(vla_policy *p, const vla_safetensors *f, const char *what);

#endif
