/* schedule.h — learning-rate schedules: constant, and linear warmup followed by
 * cosine decay to a floor, with the defaults of π0.5 (openpi) and GR00T N1.5.
 *
 * One formula covers both references (see schedule.c for the derivation):
 *   s <  W : lr = init + (peak − init) · s / W
 *   s >= W : c = 0.5 · (1 + cos(π · min(s − W, D − W) / (D − W)))
 *            lr = peak · ((1 − end/peak) · c + end/peak)
 * where s is the number of optimizer updates already done (0 for the first
 * update), W the warmup steps and D the decay steps *counted from step 0*
 * (optax's convention: D includes the warmup). */
#ifndef VLA_TRAIN_SCHEDULE_H
#define VLA_TRAIN_SCHEDULE_H

#include <stdint.h>

#include "base/status.h"

typedef enum {
    VLA_SCHED_CONSTANT,      /* lr = peak_lr at every step */
    VLA_SCHED_WARMUP_COSINE, /* the formula above */
} vla_schedule_kind;

typedef struct {
    vla_schedule_kind kind;
    double init_lr;       /* lr of the first update (warmup start) */
    double peak_lr;       /* lr at the end of warmup */
    double end_lr;        /* floor reached at decay_steps and kept after */
    int64_t warmup_steps; /* W ≥ 0 */
    int64_t decay_steps;  /* D ≥ W: step at which end_lr is reached */
} vla_schedule;

/* Policy defaults for a run of total_steps updates:
 *   "pi05"  (openpi CosineDecaySchedule): warmup 1000 from peak/(1000+1) to
 *           2.5e-5, cosine to 2.5e-6 at D = 30000 (openpi's num_train_steps
 *           default; if total_steps is given (> 0) D = total_steps instead,
 *           so a shorter or longer run ends on the floor), W clamped to D.
 *   "groot" (HF Trainer cosine, warmup_ratio 0.05): W = ceil(0.05 · total),
 *           from 0 to 1e-4, cosine to 0 at D = total_steps (required > 0).
 * The numbers are the family's (policy/family.h: vla_train_defaults).
 * Unknown names are VLA_ERR_INVALID_ARG. */
vla_status vla_schedule_defaults(const char *policy, int64_t total_steps, vla_schedule *out);
/* The first lr of a warmup to `peak` over warmup_steps in the family's
 * convention: peak/(W + 1) (optax, π0.5) or 0 (HF Trainer, GR00T). */
double vla_schedule_warmup_start(const char *policy, double peak, int64_t warmup_steps);
/* Checks the fields (finite, non-negative, W ≤ D, peak > 0 for cosine). */
vla_status vla_schedule_validate(const vla_schedule *s);
/* Learning rate for the update that follows `step` completed updates. */
double vla_schedule_lr(const vla_schedule *s, int64_t step);
/* "warmup_cosine(init=…, peak=…, end=…, warmup=…, decay=…)" into buf. */
const char *vla_schedule_describe(const vla_schedule *s, char *buf, int cap);

#endif
