/* trainer_opt.h — the trainer's optimizer: the policy's AdamW defaults and
 * weight-decay rule (optimizer.h) over the one AdamW the product has, ZeRO-1
 * (distributed/zero1.h): moments and EMA sharded across the ranks, a single shard
 * holding everything when there is one rank.
 *
 * The trainable tensors sit at their offsets in the policy's weight buffer
 * (frozen ones in between get no state); gradients are compact (trainable
 * tensors back to back). Every function marked "collective" must be called
 * by all ranks in the same order. */
#ifndef VLA_TRAIN_TRAINER_OPT_H
#define VLA_TRAIN_TRAINER_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "distributed/grad_buckets.h"
#include "checkpoint/checkpoint.h"

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

/* weights (and later the gradients) are in `ops`'s memory. */
vla_status vla_train_opt_create(vla_comm *comm, const vla_ops *ops, const char *policy_kind,
                                const vla_train_opt_tensor *t, int n, const float *weights,
                                const vla_train_opt_overrides *ov, vla_train_opt **out);
/* The same over a policy's trainable tensors (every parameter with a
 * gradient, at its offset in p->weights) with its family's defaults: what
 * the benchmarks and the backend tests train with. */
struct vla_policy;
vla_status vla_train_opt_create_for_policy(vla_comm *comm, const struct vla_policy *p,
                                           const vla_train_opt_overrides *ov, vla_train_opt **out);
void vla_train_opt_free(vla_train_opt *o);
double vla_train_opt_peak_lr(const vla_train_opt *o);
/* The peak learning rate for a model of n_params trained from scratch (no
 * pretrained weights): the families' published lrs (pi05 2.5e-5, groot
 * 1e-4) are fine-tuning rates and barely move a fresh small model. The rule
 * and its measurement are in trainer_opt.c. */
double vla_train_opt_scratch_lr(int64_t n_params);
bool vla_train_opt_has_ema(const vla_train_opt *o);
int64_t vla_train_opt_updates(const vla_train_opt *o);
/* Optimizer-state bytes this rank holds (moments + EMA of its shard). */
size_t vla_train_opt_state_bytes(const vla_train_opt *o);
/* Collective. One update: waits for the gradient buckets this rank's shard
 * needs (gb may be NULL when the gradients are already averaged), multiplies
 * the gradients by grad_mul, global norm before clipping into *norm,
 * clipping, AdamW + EMA on the shard, all-gather of the weights. A
 * non-finite norm is VLA_ERR_NUMERIC on every rank and changes nothing.
 * The host deciding (the norm read back): the reference the queued step
 * below is tested against. */
vla_status vla_train_opt_step(vla_train_opt *o, float *weights, float *grads, double lr, double grad_mul,
                              vla_grad_buckets *gb, double *norm);
/* The step's two sums in backend memory — [0] Σ err² (the
 * policies' masked MSE adds each micro-batch's into it: vla_policy.loss_sum),
 * [1] Σg² — made at the first call; NULL when out of memory. */
double *vla_train_opt_step_sums(vla_train_opt *o);
/* Collective. The same update with nothing read back (vla_zero1_step_queued,
 * what a training step runs): Σg² into sums[1] (all-reduced there at several
 * ranks; sums[0] must hold the global loss sum already), the clip factor and
 * the NaN/Inf check (of the norm and of sums[0]) on the backend. The caller reads the two sums once and hands
 * them to vla_train_opt_step_result, which gives the norm and, when the
 * step was not finite (its update changed nothing), VLA_ERR_NUMERIC. */
vla_status vla_train_opt_step_queued(vla_train_opt *o, float *weights, float *grads, double lr, double grad_mul,
                                     vla_grad_buckets *gb);
vla_status vla_train_opt_step_result(vla_train_opt *o, double sumsq, bool loss_finite, double *norm);
/* Collective: weights (replicated) and every shard's state are finite. */
vla_status vla_train_opt_check_finite(vla_train_opt *o, const float *weights);
/* Collective: the EMA of the trainable tensors into `weights` (a HOST
 * weights-layout buffer; frozen tensors untouched). No-op without EMA. */
vla_status vla_train_opt_ema_to(vla_train_opt *o, float *weights);
/* Collective. Every rank writes its shard into <state_dir> (the checkpoint's
 * training_state/ being built); rank 0 passes its checkpoint writer `w`
 * (others NULL), registers every rank's shard file and writes
 * optimizer_param_groups.json. */
vla_status vla_train_opt_save(vla_train_opt *o, vla_ckpt_writer *w, const char *state_dir, double current_lr);
/* Collective: the shards of a checkpoint written by any number of ranks,
 * re-cut for this one. */
vla_status vla_train_opt_load(vla_train_opt *o, const char *step_dir);
json_t *vla_train_opt_describe(const vla_train_opt *o);

#endif
