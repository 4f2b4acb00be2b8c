/* memory.c — a training step's and an action chunk's device memory, measured on the meta backend (memory.h). */
#include "policy/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/synth_batch.h"
#include "tensor/backend.h"

static size_t held_now(const vla_ops *ops) {
    int64_t b = vla_ops_stat_of(ops, VLA_STAT_DEVICE_USED_BYTES);
    return b > 0 ? (size_t)b : 0;
}

/* one step as train/step.c runs it, on the policy alone (no optimizer) */
static vla_status one_step(vla_policy *p, const vla_batch *b) {
    vla_policy_weights_hold(p);
    vla_policy_weights_refresh(p);
    vla_loss_info info;
    vla_status st = vla_policy_loss(p, b, true, &info);
    if (st == VLA_OK) st = vla_policy_backward(p);
    vla_policy_weights_release(p);
    vla_policy_trainable_changed(p);
    return st;
}

/* What both measurements check first: the batch, the config, the meta table sized as asked, nothing held. */
static vla_status measure_begin(const vla_policy_config *cfg, const vla_memory_opts *o, vla_memory_use *out,
                                const vla_ops **ops) {
    memset(out, 0, sizeof *out);
    if (o->batch < 1) return vla_error(VLA_ERR_INVALID_ARG, "memory: batch %d (at least 1)", (int)o->batch);
    VLA_TRY(vla_policy_config_validate(cfg->name, cfg));
    VLA_TRY(vla_backend_meta(o->sized_as ? o->sized_as : "cuda", ops));
    if (held_now(*ops) != 0)
        return vla_error(VLA_ERR_INTERNAL, "memory: another measurement holds meta memory (one at a time)");
    return VLA_OK;
}

/* What the policy holds after its calls, and the most it held. */
static void measure_end(const vla_ops *ops, const vla_policy *p, const vla_synth_batch *sb, vla_memory_use *out) {
    out->held = held_now(ops);
    out->held_blocks = vla_ops_stat_of(ops, VLA_STAT_DEVICE_BLOCKS);
    out->activations = p->act_peak_bytes;
    out->trainable = p->n_grad_floats;
    out->tokens = sb->b.n_tokens;
    int64_t pk = vla_ops_stat_of(ops, VLA_STAT_DEVICE_PEAK_BYTES);
    out->peak = pk > 0 ? (size_t)pk : 0;
}

vla_status vla_policy_memory_measure(const vla_policy_config *cfg, const vla_memory_opts *o, vla_memory_use *out) {
    const vla_ops *ops;
    VLA_TRY(measure_begin(cfg, o, out, &ops));
    /* the longest prompts are ids synthesized, not text: the byte-level tokenizer spares parsing a large
     * one (Gemma's 257k entries: most of a measurement's time), and no shape depends on which it is */
    vla_policy_config c = *cfg;
    if (!o->short_prompt) c.tokenizer[0] = 0;
    vla_policy *p = NULL;
    VLA_TRY(vla_policy_create(&c, ops, &p));
    out->params = held_now(ops);
    vla_synth_batch sb = {0};
    vla_status st = vla_policy_set_precision(p, o->precision, o->fp8);
    p->recompute_layers = o->recompute;
    if (st == VLA_OK) st = vla_synth_batch_make(p, o->batch, !o->short_prompt, &sb);
    if (st == VLA_OK) st = one_step(p, &sb.b);
    if (st == VLA_OK) st = one_step(p, &sb.b); /* the arenas settle into one chunk each (base/arena.h) */
    if (st == VLA_OK) measure_end(ops, p, &sb, out);
    vla_synth_batch_free(&sb);
    vla_policy_free(p);
    return st == VLA_OK ? VLA_OK : vla_error_context(st, "measuring %s's memory on the meta backend", cfg->name);
}

vla_status vla_policy_memory_measure_inference(const vla_policy_config *cfg, const vla_memory_opts *o,
                                               vla_memory_use *out) {
    const vla_ops *ops;
    VLA_TRY(measure_begin(cfg, o, out, &ops));
    /* the longest prompts, as the training measurement's: the byte-level tokenizer and a task of as many
     * letters as a prompt has tokens (no tokenizer file is read) */
    vla_policy_config c = *cfg;
    for (int g = 0; g < VLA_GROUP_COUNT; g++) c.frozen[g] = true;
    c.tokenizer[0] = 0;
    vla_policy *p = NULL;
    VLA_TRY(vla_policy_create(&c, ops, &p));
    out->params = held_now(ops);
    vla_synth_batch sb = {0};
    float *actions = NULL;
    const char **tasks = NULL;
    char *task = NULL;
    vla_status st = vla_policy_set_precision(p, o->precision, o->fp8);
    if (st == VLA_OK) st = vla_synth_batch_make(p, o->batch, true, &sb);
    if (st == VLA_OK) {
        actions = calloc((size_t)o->batch * (size_t)(c.action.horizon * c.action.action_dim), sizeof(float));
        tasks = calloc((size_t)o->batch, sizeof *tasks);
        task = vla_synth_longest_task(&c);
        if (!actions || !tasks || !task) st = vla_error(VLA_ERR_NOMEM, "memory: out of host memory");
    }
    if (st == VLA_OK) {
        for (int32_t i = 0; i < o->batch; i++) tasks[i] = task;
        vla_observation ob = {.n_samples = o->batch, .task = tasks, .images = sb.images, .state = sb.state,
                              .seed = 1};
        vla_policy_weights_hold(p); /* as an engine holds them for its life */
        st = vla_policy_sample_actions(p, &ob, actions);
        if (st == VLA_OK) st = vla_policy_sample_actions(p, &ob, actions); /* the arenas settle */
        if (st == VLA_OK) measure_end(ops, p, &sb, out);
        vla_policy_weights_release(p);
    }
    free(actions);
    free(tasks);
    free(task);
    vla_synth_batch_free(&sb);
    vla_policy_free(p);
    return st == VLA_OK ? VLA_OK
                        : vla_error_context(st, "measuring %s's inference memory on the meta backend", cfg->name);
}

/* batch b's step: its peak (bytes) */
static vla_status peak_at(const vla_policy_config *cfg, const vla_memory_opts *o, int32_t b, double *peak) {
    vla_memory_opts ob = *o;
    ob.batch = b;
    vla_memory_use u;
    VLA_TRY(vla_policy_memory_measure(cfg, &ob, &u));
    *peak = (double)u.peak;
    return VLA_OK;
}

/* The peak grows with the batch, about linearly (activations per sample; weights and copies fixed): the
 * line through batches 1 and 2 predicts the answer, then steps doubling from it bracket the true one and a
 * bisection closes it — three to six measurements where a plain bisection over 1..max took sixteen. */
vla_status vla_policy_memory_largest_batch(const vla_policy_config *cfg, const vla_memory_opts *o,
                                           double budget_bytes, double other_bytes, int32_t max, int32_t *out) {
    *out = 0;
    double budget = budget_bytes - other_bytes, p1, p2, pk;
    if (max < 1) return VLA_OK;
    VLA_TRY(peak_at(cfg, o, 1, &p1));
    if (p1 > budget) return VLA_OK;
    if (max == 1) return *out = 1, VLA_OK;
    VLA_TRY(peak_at(cfg, o, 2, &p2));
    if (p2 > budget) return *out = 1, VLA_OK;
    double slope = p2 - p1, guess = slope > 0 ? 1 + (budget - p1) / slope : (double)max;
    int32_t g = guess >= (double)max ? max : guess < 2 ? 2 : (int32_t)guess;
    int32_t lo = 2, hi = 0; /* lo fits; hi (when > 0) does not */
    VLA_TRY(peak_at(cfg, o, g, &pk));
    if (pk <= budget) {
        lo = g;
        for (int32_t step = 1; hi == 0 && lo < max; step *= 2) { /* up from the guess */
            int32_t next = lo > max - step ? max : lo + step;
            VLA_TRY(peak_at(cfg, o, next, &pk));
            if (pk <= budget) lo = next;
            else hi = next;
        }
    } else {
        hi = g;
        for (int32_t step = 1; hi - step > lo; step *= 2) { /* down from the guess */
            int32_t next = hi - step;
            VLA_TRY(peak_at(cfg, o, next, &pk));
            if (pk <= budget) {
                lo = next;
                break;
            }
            hi = next;
        }
    }
    while (hi > lo + 1) {
        int32_t mid = lo + (hi - lo) / 2;
        VLA_TRY(peak_at(cfg, o, mid, &pk));
        if (pk <= budget) lo = mid;
        else hi = mid;
    }
    *out = lo;
    return VLA_OK;
}

/* bytes for a message: GiB, or MiB below one GiB */
typedef struct {
    char s[32];
} size_text;
static size_text human(double bytes) {
    size_text t;
    if (bytes >= 1073741824.0) snprintf(t.s, sizeof t.s, "%.1f GiB", bytes / 1073741824.0);
    else snprintf(t.s, sizeof t.s, "%.1f MiB", bytes / 1048576.0);
    return t;
}

vla_status vla_policy_memory_fit(const vla_policy_config *cfg, const vla_memory_opts *o, double free_bytes,
                                 double optimizer_bytes_per_param, const char *batch_flag, bool *fits, char *say,
                                 size_t cap) {
    vla_memory_use u;
    VLA_TRY(vla_policy_memory_measure(cfg, o, &u));
    double other_bytes = optimizer_bytes_per_param * (double)u.trainable, need = (double)u.peak + other_bytes;
    *fits = need <= free_bytes;
    int n = snprintf(say, cap,
                     "training %s at %d samples per step in %s%s needs up to %s on the device (measured on the meta "
                     "backend with %s prompts: weights and gradients %s, activations %s, copies %s, optimizer %s) "
                     "of %s free",
                     cfg->name, (int)o->batch, vla_precision_name(o->precision),
                     o->recompute ? " with gradient checkpointing" : "", human(need).s,
                     o->short_prompt ? "its own" : "the longest", human((double)u.params).s,
                     human((double)u.activations).s, human((double)(u.peak - u.params - u.activations)).s,
                     human(other_bytes).s, human(free_bytes).s);
    if (*fits || n < 0 || (size_t)n >= cap) return VLA_OK;
    if (!o->recompute) { /* what checkpointing would need */
        vla_memory_opts r = *o;
        r.recompute = true;
        vla_memory_use ur;
        VLA_TRY(vla_policy_memory_measure(cfg, &r, &ur));
        double need_r = (double)ur.peak + other_bytes;
        n += snprintf(say + n, cap - (size_t)n, ": --gradient_checkpointing needs %s (%s)", human(need_r).s,
                      need_r <= free_bytes ? "fits" : "does not fit either");
        if (n < 0 || (size_t)n >= cap) return VLA_OK;
    }
    int32_t fit_b = 0;
    if (o->batch > 1) VLA_TRY(vla_policy_memory_largest_batch(cfg, o, free_bytes, other_bytes, o->batch - 1, &fit_b));
    const char *shorter = o->short_prompt ? "" : "; shorter prompts need less";
    if (fit_b > 0)
        snprintf(say + n, cap - (size_t)n, "%s %s=%d fits%s%s", o->recompute ? ":" : ";", batch_flag, (int)fit_b,
                 strcmp(batch_flag, "--batch_size") ? ""
                                                    : ", and with --gradient_accumulation_steps trains on the same "
                                                      "samples per update",
                 shorter);
    else
        snprintf(say + n, cap - (size_t)n, "%s not even one sample fits as configured%s", o->recompute ? ":" : ";",
                 shorter);
    return VLA_OK;
}
