/* schedule.c — learning-rate schedules (see schedule.h).
 *
 * Decision, from the references (openpi training/config.py and
 * optimizer.py; Isaac-GR00T N1.5 scripts/gr00t_finetune.py):
 *
 * π0.5 follows openpi's CosineDecaySchedule, which is
 *   optax.warmup_cosine_decay_schedule(init_value = peak/(warmup+1),
 *       peak_value = peak, warmup_steps, decay_steps, end_value = decay_lr)
 * i.e. optax.linear_schedule(init, peak, W) for s < W, then
 * optax.cosine_decay_schedule(peak, D − W, alpha = end/peak) at s − W. We
 * evaluate those in optax's own arithmetic order:
 *   warmup: (init − peak) · (1 − s/W) + peak
 *   decay : peak · ((1 − alpha) · 0.5·(1 + cos(π·t/(D−W))) + alpha), t clamped
 * LeRobot's port (CosineDecayWithWarmupSchedulerConfig) differs slightly: its
 * cosine runs over s, not s − W, and it rescales W and D when the run is
 * shorter than decay_steps. We follow openpi, the original; D is set to the
 * run's length when known so every run ends on the floor.
 *
 * GR00T N1.5 uses the HF Trainer's get_cosine_schedule_with_warmup with
 * warmup_ratio 0.05: W = ceil(0.05 · total), lr = peak·s/W in warmup, then
 * peak · 0.5·(1 + cos(π·(s − W)/(total − W))). That is the formula above with
 * init = 0, end = 0 and D = total (the warmup line differs from peak·s/W only
 * in rounding). HF does not clamp past the end; we do (lr stays at the floor).
 *
 * The step index is the count of updates already done, as in both references
 * (torch's LambdaLR and optax both give the first update schedule(0)).
 *
 * Decision (issue 44, item 2): a run resumed with MORE --steps than its
 * schedule was planned for gets the schedule planned anew over the new total
 * — the same warmup + cosine with decay_steps = the new --steps, evaluated at
 * the updates already done — so the steps added train at a learning rate
 * above the floor and end on it again. That is what LeRobot does on resume
 * (its LambdaLR closes over the config's num_training_steps, and only
 * last_epoch comes back from the checkpoint), and what the old "constant
 * tail at the final lr" could not: groot's cosine ends at lr 0, so 100 steps
 * more of a finished 1,000-step run trained nothing. The jump it makes at
 * the resume step is upward (a longer cosine is higher at every step), e.g.
 * 1,000 → 1,100 steps resumes at about 2% of the peak instead of 0. A resume
 * with the SAME --steps keeps the saved plan (train_config.json's
 * "schedule_steps"), so it stays bit-exact with an uninterrupted run; the
 * checkpoints after a re-plan save the new plan, so resuming those is too.
 * The CLI (cmd_train.c) sets vla_train_opts.schedule_steps accordingly and
 * notes the change in metrics.jsonl ("resume_changes": "schedule_steps"). */
#include "train/schedule.h"
#include "policy/family.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

vla_status vla_schedule_defaults(const char *policy, int64_t total_steps, vla_schedule *out) {
    memset(out, 0, sizeof *out);
    if (!policy) return vla_error(VLA_ERR_INVALID_ARG, "schedule defaults: no policy name");
    const vla_policy_family *f = vla_policy_family_find(policy);
    if (!f)
        return vla_error(VLA_ERR_INVALID_ARG, "schedule defaults: unknown policy '%s' (known: %s)", policy,
                         vla_policy_family_names());
    const vla_train_defaults *d = &f->train;
    if (total_steps <= 0 && d->default_run_steps <= 0)
        return vla_error(VLA_ERR_INVALID_ARG, "schedule defaults for %s: the run length (steps) is required", policy);
    out->kind = VLA_SCHED_WARMUP_COSINE;
    out->peak_lr = d->lr;
    out->end_lr = d->end_lr;
    out->decay_steps = total_steps > 0 ? total_steps : d->default_run_steps;
    if (d->warmup_fraction > 0) out->warmup_steps = (int64_t)ceil(d->warmup_fraction * (double)out->decay_steps);
    else out->warmup_steps = out->decay_steps < d->warmup_steps ? out->decay_steps : d->warmup_steps;
    out->init_lr = vla_schedule_warmup_start(policy, out->peak_lr, out->warmup_steps);
    return VLA_OK;
}

double vla_schedule_warmup_start(const char *policy, double peak, int64_t warmup_steps) {
    const vla_policy_family *f = vla_policy_family_find(policy);
    return f && f->train.warmup_from_fraction_of_peak ? peak / (double)(warmup_steps + 1) : 0.0;
}

vla_status vla_schedule_validate(const vla_schedule *s) {
    if (!isfinite(s->peak_lr) || s->peak_lr < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "schedule: peak lr %g must be finite and >= 0", s->peak_lr);
    if (s->kind == VLA_SCHED_CONSTANT) return VLA_OK;
    if (s->kind != VLA_SCHED_WARMUP_COSINE) return vla_error(VLA_ERR_INVALID_ARG, "schedule: unknown kind %d", s->kind);
    if (!isfinite(s->init_lr) || s->init_lr < 0 || !isfinite(s->end_lr) || s->end_lr < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "schedule: init lr %g and end lr %g must be finite and >= 0",
                         s->init_lr, s->end_lr);
    if (s->peak_lr <= 0) return vla_error(VLA_ERR_INVALID_ARG, "schedule: cosine needs a peak lr > 0");
    if (s->warmup_steps < 0 || s->decay_steps < s->warmup_steps)
        return vla_error(VLA_ERR_INVALID_ARG, "schedule: need 0 <= warmup steps (%lld) <= decay steps (%lld)",
                         (long long)s->warmup_steps, (long long)s->decay_steps);
    return VLA_OK;
}

double vla_schedule_lr(const vla_schedule *s, int64_t step) {
    if (s->kind == VLA_SCHED_CONSTANT) return s->peak_lr;
    if (step < 0) step = 0;
    if (step < s->warmup_steps) {
        double frac = 1.0 - (double)step / (double)s->warmup_steps;
        return (s->init_lr - s->peak_lr) * frac + s->peak_lr;
    }
    int64_t span = s->decay_steps - s->warmup_steps;
    if (span <= 0) return s->end_lr;
    int64_t t = step - s->warmup_steps;
    if (t > span) t = span;
    double alpha = s->end_lr / s->peak_lr;
    double cosine = 0.5 * (1.0 + cos(M_PI * (double)t / (double)span));
    return s->peak_lr * ((1.0 - alpha) * cosine + alpha);
}

const char *vla_schedule_describe(const vla_schedule *s, char *buf, int cap) {
    if (s->kind == VLA_SCHED_CONSTANT)
        snprintf(buf, (size_t)cap, "constant(lr=%g)", s->peak_lr);
    else
        snprintf(buf, (size_t)cap, "warmup_cosine(init=%g, peak=%g, end=%g, warmup=%lld, decay=%lld)", s->init_lr,
                 s->peak_lr, s->end_lr, (long long)s->warmup_steps, (long long)s->decay_steps);
    return buf;
}
