/* trainer_opt.c — the trainer's optimizer bridge (see trainer_opt.h). */
#include "train/trainer_opt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "train/optimizer.h"

struct vla_train_opt {
    vla_adamw opt;
    vla_ema ema;
    bool has_ema;
};

vla_status vla_train_opt_create(const char *policy_kind, const vla_train_opt_tensor *t, int n, int64_t n_total,
                                const float *weights, const vla_train_opt_overrides *ov, vla_train_opt **out) {
    *out = NULL;
    vla_adamw_config cfg;
    VLA_TRY(vla_adamw_defaults(policy_kind, &cfg));
    if (ov && ov->lr > 0) cfg.lr = ov->lr;
    if (ov && ov->weight_decay >= 0) cfg.weight_decay = ov->weight_decay;
    if (ov && ov->clip_norm >= 0) cfg.clip_norm = ov->clip_norm;
    vla_opt_param *ps = calloc((size_t)(n > 0 ? n : 1), sizeof *ps);
    vla_train_opt *o = calloc(1, sizeof *o);
    if (!ps || !o) {
        free(ps), free(o);
        return vla_error(VLA_ERR_NOMEM, "optimizer: out of memory");
    }
    for (int i = 0; i < n; i++) {
        ps[i].name = t[i].name;
        ps[i].offset = t[i].offset;
        ps[i].numel = t[i].numel;
        ps[i].decay = vla_adamw_default_decay(policy_kind, t[i].name, t[i].ndim);
    }
    vla_status st = vla_adamw_init(&o->opt, &cfg, ps, (size_t)n, n_total);
    free(ps);
    if (st != VLA_OK) {
        free(o);
        return st;
    }
    double decay = ov ? ov->ema_decay : 0;
    if (decay > 0) {
        st = vla_ema_init(&o->ema, &o->opt, weights, decay);
        if (st != VLA_OK) {
            vla_adamw_free(&o->opt);
            free(o);
            return st;
        }
        o->has_ema = true;
    }
    *out = o;
    return VLA_OK;
}

void vla_train_opt_free(vla_train_opt *o) {
    if (!o) return;
    vla_adamw_free(&o->opt);
    if (o->has_ema) vla_ema_free(&o->ema);
    free(o);
}

double vla_train_opt_peak_lr(const vla_train_opt *o) { return o->opt.cfg.lr; }
bool vla_train_opt_has_ema(const vla_train_opt *o) { return o->has_ema; }
int64_t vla_train_opt_updates(const vla_train_opt *o) { return o->opt.step; }

vla_status vla_train_opt_clip(vla_train_opt *o, float *grads, double *norm) {
    return vla_adamw_clip_grads(&o->opt, grads, norm);
}

vla_status vla_train_opt_step(vla_train_opt *o, float *weights, const float *grads, double lr) {
    VLA_TRY(vla_adamw_step(&o->opt, weights, grads, lr));
    if (o->has_ema) vla_ema_update(&o->ema, &o->opt, weights);
    return VLA_OK;
}

vla_status vla_train_opt_check_finite(const vla_train_opt *o, const float *weights) {
    return vla_adamw_check_finite(&o->opt, weights);
}

void vla_train_opt_ema_to(const vla_train_opt *o, float *weights) {
    if (o->has_ema) vla_ema_copy_to(&o->ema, &o->opt, weights);
}

vla_status vla_train_opt_save(const vla_train_opt *o, vla_ckpt_writer *w, double current_lr) {
    vla_safetensors_writer *sw = NULL;
    VLA_TRY(vla_safetensors_writer_new(&sw));
    vla_status st = vla_adamw_state_add(&o->opt, sw);
    if (st == VLA_OK && o->has_ema) st = vla_ema_state_add(&o->ema, &o->opt, sw);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(w, "training_state/optimizer_state.safetensors", sw);
    vla_safetensors_writer_free(sw);
    if (st != VLA_OK) return st;
    json_t *groups = vla_adamw_param_groups_json(&o->opt, current_lr);
    st = vla_ckpt_write_json(w, "training_state/optimizer_param_groups.json", groups);
    json_decref(groups);
    return st;
}

vla_status vla_train_opt_load(vla_train_opt *o, const char *step_dir) {
    char path[VLA_CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/training_state/optimizer_state.safetensors", step_dir);
    vla_safetensors st;
    VLA_TRY(vla_safetensors_open(path, &st));
    vla_status s = vla_adamw_state_load(&o->opt, &st);
    if (s == VLA_OK && o->has_ema) s = vla_ema_state_load(&o->ema, &o->opt, &st);
    vla_safetensors_close(&st);
    return s;
}

json_t *vla_train_opt_describe(const vla_train_opt *o) {
    const vla_adamw_config *c = &o->opt.cfg;
    return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "type", "adamw", "lr", c->lr, "beta1", c->beta1,
                     "beta2", c->beta2, "eps", c->eps, "weight_decay", c->weight_decay, "grad_clip_norm",
                     c->clip_norm, "ema_decay", o->has_ema ? o->ema.decay : 0.0);
}
