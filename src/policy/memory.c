/* memory.c — a training step's device memory, measured on the meta backend (memory.h). */
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

vla_status vla_policy_memory_measure(const vla_policy_config *cfg, const vla_memory_opts *o, vla_memory_use *out) {
    memset(out, 0, sizeof *out);
    if (o->batch < 1) return vla_error(VLA_ERR_INVALID_ARG, "memory: batch %d (at least 1)", (int)o->batch);
    VLA_TRY(vla_policy_config_validate(cfg->name, cfg));
    const vla_ops *ops;
    VLA_TRY(vla_backend_meta(o->sized_as ? o->sized_as : "cuda", &ops));
    if (held_now(ops) != 0)
        return vla_error(VLA_ERR_INTERNAL, "memory: another measurement holds meta memory (one at a time)");
    vla_policy *p = NULL;
    VLA_TRY(vla_policy_create(cfg, ops, &p));
    out->params = held_now(ops);
    vla_synth_batch sb = {0};
    vla_status st = vla_policy_set_precision(p, o->precision, o->fp8);
    p->recompute_layers = o->recompute;
    if (st == VLA_OK) st = vla_synth_batch_make(p, o->batch, !o->short_prompt, &sb);
    if (st == VLA_OK) st = one_step(p, &sb.b);
    if (st == VLA_OK) st = one_step(p, &sb.b); /* the arenas settle into one chunk each (base/arena.h) */
    if (st == VLA_OK) {
        out->held = held_now(ops);
        out->held_blocks = vla_ops_stat_of(ops, VLA_STAT_DEVICE_BLOCKS);
        out->activations = p->act_peak_bytes;
        out->tokens = sb.b.n_tokens;
        int64_t pk = vla_ops_stat_of(ops, VLA_STAT_DEVICE_PEAK_BYTES);
        out->peak = pk > 0 ? (size_t)pk : 0;
    }
    vla_synth_batch_free(&sb);
    vla_policy_free(p);
    return st == VLA_OK ? VLA_OK : vla_error_context(st, "measuring %s's memory on the meta backend", cfg->name);
}

vla_status vla_policy_memory_measure_inference(const vla_policy_config *cfg, const vla_memory_opts *o,
                                               vla_memory_use *out) {
    memset(out, 0, sizeof *out);
    if (o->batch < 1) return vla_error(VLA_ERR_INVALID_ARG, "memory: batch %d (at least 1)", (int)o->batch);
    VLA_TRY(vla_policy_config_validate(cfg->name, cfg));
    const vla_ops *ops;
    VLA_TRY(vla_backend_meta(o->sized_as ? o->sized_as : "cuda", &ops));
    if (held_now(ops) != 0)
        return vla_error(VLA_ERR_INTERNAL, "memory: another measurement holds meta memory (one at a time)");
    vla_policy_config c = *cfg;
    for (int g = 0; g < VLA_GROUP_COUNT; g++) c.frozen[g] = true;
    vla_policy *p = NULL;
    VLA_TRY(vla_policy_create(&c, ops, &p));
    out->params = held_now(ops);
    vla_synth_batch sb = {0};
    float *actions = NULL;
    const char **tasks = NULL;
    vla_status st = vla_policy_set_precision(p, o->precision, o->fp8);
    if (st == VLA_OK) st = vla_synth_batch_make(p, o->batch, false, &sb);
    if (st == VLA_OK) {
        actions = calloc((size_t)o->batch * (size_t)(c.action.horizon * c.action.action_dim), sizeof(float));
        tasks = calloc((size_t)o->batch, sizeof *tasks);
        if (!actions || !tasks) st = vla_error(VLA_ERR_NOMEM, "memory: out of host memory");
    }
    if (st == VLA_OK) {
        for (int32_t i = 0; i < o->batch; i++) tasks[i] = VLA_SYNTH_TASK;
        vla_observation ob = {.n_samples = o->batch, .task = tasks, .images = sb.images, .state = sb.state,
                              .seed = 1};
        vla_policy_weights_hold(p); /* as an engine holds them for its life */
        st = vla_policy_sample_actions(p, &ob, actions);
        if (st == VLA_OK) st = vla_policy_sample_actions(p, &ob, actions); /* the arenas settle */
        if (st == VLA_OK) {
            out->held = held_now(ops);
            out->held_blocks = vla_ops_stat_of(ops, VLA_STAT_DEVICE_BLOCKS);
            out->activations = p->act_peak_bytes;
            int64_t pk = vla_ops_stat_of(ops, VLA_STAT_DEVICE_PEAK_BYTES);
            out->peak = pk > 0 ? (size_t)pk : 0;
            out->tokens = sb.b.n_tokens;
        }
        vla_policy_weights_release(p);
    }
    free(actions);
    free(tasks);
    vla_synth_batch_free(&sb);
    vla_policy_free(p);
    return st == VLA_OK ? VLA_OK
                        : vla_error_context(st, "measuring %s's inference memory on the meta backend", cfg->name);
}

vla_status vla_policy_memory_fit(const vla_policy_config *cfg, const vla_memory_opts *o, double free_bytes,
                                 double other_bytes, bool *fits, char *say, size_t cap) {
    const double GiB = 1073741824.0;
    vla_memory_use u;
    VLA_TRY(vla_policy_memory_measure(cfg, o, &u));
    double need = (double)u.peak + other_bytes;
    *fits = need <= free_bytes;
    int n = snprintf(say, cap,
                     "training %s at %d samples per step in %s%s needs up to %.1f GiB on the device (measured on the "
                     "meta backend with the longest prompts: weights and gradients %.1f, activations %.1f, copies "
                     "%.1f, optimizer %.1f) of %.1f GiB free",
                     cfg->name, (int)o->batch, vla_precision_name(o->precision),
                     o->recompute ? " with gradient checkpointing" : "", need / GiB, (double)u.params / GiB,
                     (double)u.activations / GiB, (double)(u.peak - u.params - u.activations) / GiB,
                     other_bytes / GiB, free_bytes / GiB);
    if (*fits || n < 0 || (size_t)n >= cap) return VLA_OK;
    if (!o->recompute) { /* what checkpointing would need */
        vla_memory_opts r = *o;
        r.recompute = true;
        vla_memory_use ur;
        VLA_TRY(vla_policy_memory_measure(cfg, &r, &ur));
        double need_r = (double)ur.peak + other_bytes;
        n += snprintf(say + n, cap - (size_t)n, ": --gradient_checkpointing needs %.1f GiB (%s)", need_r / GiB,
                      need_r <= free_bytes ? "fits" : "does not fit either");
        if (n < 0 || (size_t)n >= cap) return VLA_OK;
    }
    snprintf(say + n, cap - (size_t)n, "%s a smaller --batch_size with --gradient_accumulation_steps trains on the "
             "same samples per update; shorter prompts need less", o->recompute ? ":" : ";");
    return VLA_OK;
}
