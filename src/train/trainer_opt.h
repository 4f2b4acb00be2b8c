/* trainer_opt.h — the trainer's optimizer: AdamW + clipping + EMA + state
 * save/load (optimizer.h) behind names that do not clash with policy.h.
 *
 * It was born to separate optimizer.h's parameter type from policy.h's,
 * which once shared the name `vla_param` (the optimizer's is now
 * `vla_opt_param`); it still keeps trainer.c free of optimizer details —
 * folding it into trainer.c is a possible clean-up. */
#ifndef VLA_TRAIN_TRAINER_OPT_H
#define VLA_TRAIN_TRAINER_OPT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/status.h"
#include "train/checkpoint.h"

typedef struct vla_train_opt vla_train_opt;

typedef struct {
    const char *name;
    int64_t offset, numel;
    int ndim;
} vla_train_opt_tensor;

/* Overrides: values < 0 keep the policy's default (optimizer.h); ema_decay
 * 0 = no EMA. */
typedef struct {
    double lr, weight_decay, clip_norm, ema_decay;
} vla_train_opt_overrides;

vla_status vla_train_opt_create(const char *policy_kind, const vla_train_opt_tensor *t, int n, int64_t n_total,
                                const float *weights, const vla_train_opt_overrides *ov, vla_train_opt **out);
void vla_train_opt_free(vla_train_opt *o);
double vla_train_opt_peak_lr(const vla_train_opt *o);
bool vla_train_opt_has_ema(const vla_train_opt *o);
int64_t vla_train_opt_updates(const vla_train_opt *o);
/* Norm before clipping into *norm; VLA_ERR_NUMERIC (grads untouched) when not finite. */
vla_status vla_train_opt_clip(vla_train_opt *o, float *grads, double *norm);
/* AdamW update + EMA. */
vla_status vla_train_opt_step(vla_train_opt *o, float *weights, const float *grads, double lr);
vla_status vla_train_opt_check_finite(const vla_train_opt *o, const float *weights);
/* Copy the EMA of the trainable tensors into `weights` (a weights-layout buffer). */
void vla_train_opt_ema_to(const vla_train_opt *o, float *weights);
/* training_state/optimizer_state.safetensors (+ EMA) and optimizer_param_groups.json. */
vla_status vla_train_opt_save(const vla_train_opt *o, vla_ckpt_writer *w, double current_lr);
vla_status vla_train_opt_load(vla_train_opt *o, const char *step_dir);
json_t *vla_train_opt_describe(const vla_train_opt *o);

#endif
