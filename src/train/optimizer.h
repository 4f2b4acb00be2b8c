/* optimizer.h — the optimizer's configuration and rules, and gradient
 * accumulation. The AdamW itself (moments, clipping, EMA, state files) is
 * distributed/zero1.h's sharded one, used at every world size (world 1: one shard
 * holding everything); this file says which hyper-parameters, which tensors
 * decay and what LeRobot's optimizer_param_groups.json holds.
 *
 * Layout. The model owns one flat buffer of weights; the trainable tensors
 * become zero1 segments (offset, numel, decay flag). Frozen tensors are not
 * listed and get no optimizer state, so a frozen 2B-parameter backbone costs
 * nothing there.
 *
 * Numerics follow torch.optim.AdamW (PyTorch 1.13, single-tensor path), which
 * the tests check against (tests/train/test_optimizer.c, through zero1):
 *   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *   p ← p − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
 * optax.adamw (openpi) is the same update up to rounding.
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

typedef struct {
    double lr;           /* nominal peak lr (the schedule gives each step's lr) */
    double beta1, beta2;
    double eps;
    double weight_decay; /* decoupled, multiplied by the step's lr as in torch */
    double clip_norm;    /* max global gradient L2 norm; <= 0 disables clipping */
} vla_adamw_config;

/* Defaults of the references: "pi05" lr 2.5e-5, betas 0.9/0.95, eps 1e-8,
 * wd 1e-10 (openpi; LeRobot's port uses 0.01), clip 1.0; "groot" lr 1e-4,
 * betas 0.95/0.999, eps 1e-8, wd 1e-5, clip 1.0 (HF Trainer max_grad_norm). */
vla_status vla_adamw_defaults(const char *policy, vla_adamw_config *out);
/* EMA decay of the reference: pi05 0.99 (openpi TrainConfig), groot 0 (none). */
double vla_ema_default_decay(const char *policy);
/* Weight-decay flag for a tensor under a policy's rule (see above). */
int vla_adamw_default_decay(const char *policy, const char *name, int ndim);

/* From a global sum of squares: the norm, and the factor to multiply the
 * gradients by (torch's max_norm/(norm+1e-6), capped at 1; 1 if max_norm <= 0).
 * A non-finite norm is VLA_ERR_NUMERIC with a message. */
vla_status vla_grad_clip_coef(double sumsq, double max_norm, double *norm, float *coef);
/* LeRobot's optimizer_param_groups.json: [{lr, initial_lr, betas, eps,
 * weight_decay, max_grad_norm, params: [names]}], one group per decay setting
 * (decay[i] for names[i]; groups without tensors are left out). New reference. */
json_t *vla_adamw_param_groups_json(const vla_adamw_config *cfg, const char *const *names, const int *decay, int n,
                                    double current_lr);

#endif
