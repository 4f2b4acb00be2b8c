/* optimizer.h — AdamW with decoupled weight decay over named parameter tensors
 * that live in one flat f32 buffer; global-norm gradient clipping with NaN/Inf
 * detection; gradient accumulation; an EMA of the weights; state save/load.
 *
 * Layout. The model owns one flat buffer of weights and one of gradients with
 * the same layout. The optimizer is given the list of *trainable* tensors
 * (name, offset, numel, decay flag); frozen tensors are simply not listed and
 * get no optimizer state, so a frozen 2B-parameter backbone costs nothing here.
 * The state (exp_avg, exp_avg_sq, EMA) is compact: the listed tensors back to
 * back in list order.
 *
 * Numerics follow torch.optim.AdamW (PyTorch 1.13, single-tensor path), which
 * the tests check against: f32 element arithmetic, bias corrections in double,
 *   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *   p ← p − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
 * optax.adamw (openpi) is the same update up to rounding. Every element is
 * updated independently and reductions use a fixed blocking, so results are
 * bit-identical for any thread count, which a bit-exact resume relies on.
 *
 * Weight decay per tensor (decision): each reference is followed.
 *   - π0.5: openpi's optax.adamw has no mask, LeRobot's torch AdamW has one
 *     param group: every tensor decays (wd 1e-10 in openpi, so it hardly
 *     matters there).
 *   - GR00T: the HF Trainer excludes biases and normalisation weights from
 *     decay. Our rule: no decay when the last name component is "bias" or a
 *     1-D tensor has "norm" in its name (LayerNorm/RMSNorm scales; the 2-D
 *     linear weights inside AdaLN keep decaying).
 * vla_adamw_default_decay() implements this; callers may set any flag. */
#ifndef VLA_TRAIN_OPTIMIZER_H
#define VLA_TRAIN_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/status.h"
#include "io/safetensors.h"
#include "tensor/ops.h"

typedef struct {
    const char *name; /* unique; copied by vla_adamw_init */
    int64_t offset;   /* first element in the flat weight/gradient buffers */
    int64_t numel;
    int decay;        /* 1: weight decay applies to this tensor */
} vla_opt_param;

typedef struct {
    double lr;           /* nominal peak lr (the schedule gives each step's lr) */
    double beta1, beta2;
    double eps;
    double weight_decay; /* decoupled, multiplied by the step's lr as in torch */
    double clip_norm;    /* max global gradient L2 norm; <= 0 disables clipping */
} vla_adamw_config;

typedef struct {
    vla_adamw_config cfg;
    vla_opt_param *params;  /* copies (names strdup'ed) */
    int64_t *state_off; /* per param: offset into m/v/ema */
    size_t n_params;
    int64_t n_state;    /* sum of numel */
    int64_t n_total;    /* size of the flat buffers the offsets index */
    float *m, *v;       /* exp_avg, exp_avg_sq */
    int64_t step;       /* updates done */
    const vla_ops *ops; /* backend of the update (init sets the CPU table; a device backend replaces it) */
} vla_adamw;

/* Defaults of the references: "pi05" lr 2.5e-5, betas 0.9/0.95, eps 1e-8,
 * wd 1e-10 (openpi; LeRobot's port uses 0.01), clip 1.0; "groot" lr 1e-4,
 * betas 0.95/0.999, eps 1e-8, wd 1e-5, clip 1.0 (HF Trainer max_grad_norm). */
vla_status vla_adamw_defaults(const char *policy, vla_adamw_config *out);
/* EMA decay of the reference: pi05 0.99 (openpi TrainConfig), groot 0 (none). */
double vla_ema_default_decay(const char *policy);
/* Weight-decay flag for a tensor under a policy's rule (see above). */
int vla_adamw_default_decay(const char *policy, const char *name, int ndim);

/* Validates the config and the layout (offsets in [0, n_total), no overlap,
 * unique names) and allocates zeroed state. */
vla_status vla_adamw_init(vla_adamw *opt, const vla_adamw_config *cfg, const vla_opt_param *params, size_t n_params,
                          int64_t n_total);
void vla_adamw_free(vla_adamw *opt);

/* Sum of squares (in double) of the listed tensors' gradients. Fixed
 * blocking, so it does not depend on the thread count. Data-parallel code
 * all-reduces this before vla_grad_clip_coef. */
double vla_adamw_grad_sumsq(const vla_adamw *opt, const float *grads);
/* From a global sum of squares: the norm, and the factor to multiply the
 * gradients by (torch's max_norm/(norm+1e-6), capped at 1; 1 if max_norm <= 0).
 * A non-finite norm is VLA_ERR_NUMERIC with a message. */
vla_status vla_grad_clip_coef(double sumsq, double max_norm, double *norm, float *coef);
/* Computes the global norm of the listed gradients into *norm (pre-clip),
 * refuses NaN/Inf (VLA_ERR_NUMERIC, gradients untouched), and scales them
 * by the clip coefficient when clipping is on. */
vla_status vla_adamw_clip_grads(vla_adamw *opt, float *grads, double *norm);
/* Multiply the listed gradients by `coef`. */
void vla_adamw_scale_grads(const vla_adamw *opt, float *grads, float coef);
/* One AdamW update of the listed tensors with learning rate `lr`. */
vla_status vla_adamw_step(vla_adamw *opt, float *weights, const float *grads, double lr);

/* NaN/Inf guard before a checkpoint: the listed weights (if not NULL) and
 * the moments must be finite; VLA_ERR_NUMERIC names the first bad tensor. */
vla_status vla_adamw_check_finite(const vla_adamw *opt, const float *weights);

/* Optimizer state to/from safetensors: tensors "state.<name>.exp_avg" and
 * "state.<name>.exp_avg_sq" (f32, 1-D), metadata "step". Non-finite moments
 * are refused (VLA_ERR_NUMERIC), so NaN never reaches a checkpoint. The
 * writer keeps pointers into opt: write it before the next step. Loading checks every
 * tensor is present with the right size and the step is valid. */
vla_status vla_adamw_state_add(const vla_adamw *opt, vla_safetensors_writer *w);
vla_status vla_adamw_state_load(vla_adamw *opt, const vla_safetensors *st);
/* LeRobot's optimizer_param_groups.json: [{lr, betas, eps, weight_decay,
 * params: [names]}] (one group per decay setting). New reference. */
json_t *vla_adamw_param_groups_json(const vla_adamw *opt, double current_lr);

/* ---- gradient accumulation -------------------------------------------------
 * Backward passes add into the gradient buffer; after k micro-batches the sum
 * is divided by k, which equals LeRobot/HF's "loss / k, then backward" up to
 * rounding. */
void vla_grad_zero(float *grads, int64_t n);
void vla_grad_accumulate(float *acc, const float *g, int64_t n); /* acc += g */
void vla_grad_scale(float *g, int64_t n, float s);

/* ---- EMA of the weights ----------------------------------------------------
 * ema ← d·ema + (1 − d)·w after each update (openpi), over the optimizer's
 * listed tensors (compact, like m/v). */
typedef struct {
    double decay;
    float *w;
    int64_t n;
} vla_ema;

vla_status vla_ema_init(vla_ema *ema, const vla_adamw *opt, const float *weights, double decay);
void vla_ema_update(vla_ema *ema, const vla_adamw *opt, const float *weights);
/* Write the EMA values into a weights-layout buffer (e.g. for export/eval). */
void vla_ema_copy_to(const vla_ema *ema, const vla_adamw *opt, float *weights);
void vla_ema_free(vla_ema *ema);
/* Tensors "ema.<name>"; the writer keeps pointers into ema. */
vla_status vla_ema_state_add(const vla_ema *ema, const vla_adamw *opt, vla_safetensors_writer *w);
vla_status vla_ema_state_load(vla_ema *ema, const vla_adamw *opt, const vla_safetensors *st);

#endif
