/* optimizer.c — AdamW configuration, decay rule, clip factor, param-group
 * description and gradient accumulation (see optimizer.h; the AdamW is distributed/zero1.c). */
#include "train/optimizer.h"
#include "policy/family.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The family's published recipe (policy/family.h), looked up by name. */
static const vla_train_defaults *family_defaults(const char *policy, const char *what) {
    const vla_policy_family *f = vla_policy_family_find(policy);
    if (!f) {
        vla_error(VLA_ERR_INVALID_ARG, "%s: unknown policy '%s' (known: %s)", what, policy ? policy : "(null)",
                  vla_policy_family_names());
        return NULL;
    }
    return &f->train;
}

vla_status vla_adamw_defaults(const char *policy, vla_adamw_config *out) {
    memset(out, 0, sizeof *out);
    const vla_train_defaults *d = family_defaults(policy, "optimizer defaults");
    if (!d) return VLA_ERR_INVALID_ARG;
    *out = (vla_adamw_config){.lr = d->lr, .beta1 = d->beta1, .beta2 = d->beta2, .eps = d->eps,
                              .weight_decay = d->weight_decay, .clip_norm = d->clip_norm};
    return VLA_OK;
}

double vla_ema_default_decay(const char *policy) {
    const vla_policy_family *f = vla_policy_family_find(policy);
    return f ? f->train.ema_decay : 0.0;
}

static int contains_ci(const char *s, const char *needle) {
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == needle[i]) i++;
        if (i == n) return 1;
    }
    return 0;
}

int vla_adamw_default_decay(const char *policy, const char *name, int ndim) {
    const vla_policy_family *f = vla_policy_family_find(policy);
    if (!f || f->train.decay_biases_and_norms) return 1;
    const char *last = strrchr(name, '.');
    last = last ? last + 1 : name;
    if (strcmp(last, "bias") == 0) return 0;
    if (ndim <= 1 && contains_ci(name, "norm")) return 0;
    return 1;
}

vla_status vla_grad_clip_coef(double sumsq, double max_norm, double *norm, float *coef) {
    double nrm = sqrt(sumsq);
    *norm = nrm;
    *coef = 1.0f;
    if (!isfinite(nrm))
        return vla_error(VLA_ERR_NUMERIC, "gradient norm is %s: the loss or the gradients hold NaN/Inf",
                         isnan(nrm) ? "NaN" : "Inf");
    if (max_norm > 0) {
        /* torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), clamped to 1 */
        double c = max_norm / (nrm + 1e-6);
        if (c < 1.0) *coef = (float)c;
    }
    return VLA_OK;
}

json_t *vla_adamw_param_groups_json(const vla_adamw_config *cfg, const char *const *names, const int *decay, int n,
                                    double current_lr) {
    json_t *groups = json_array();
    for (int d = 1; d >= 0; d--) {
        json_t *list = json_array();
        for (int i = 0; i < n; i++)
            if ((decay[i] != 0) == d) json_array_append_new(list, json_string(names[i]));
        if (json_array_size(list) == 0) {
            json_decref(list);
            continue;
        }
        json_t *g = json_object();
        json_object_set_new(g, "lr", json_real(current_lr));
        json_object_set_new(g, "initial_lr", json_real(cfg->lr));
        json_t *betas = json_array();
        json_array_append_new(betas, json_real(cfg->beta1));
        json_array_append_new(betas, json_real(cfg->beta2));
        json_object_set_new(g, "betas", betas);
        json_object_set_new(g, "eps", json_real(cfg->eps));
        json_object_set_new(g, "weight_decay", json_real(d ? cfg->weight_decay : 0.0));
        json_object_set_new(g, "max_grad_norm", json_real(cfg->clip_norm));
        json_object_set_new(g, "params", list);
        json_array_append_new(groups, g);
    }
    return groups;
}
