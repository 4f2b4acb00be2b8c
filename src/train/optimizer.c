/* optimizer.c — AdamW configuration, decay rule, clip factor, param-group
 * description and gradient accumulation (see optimizer.h; the AdamW is dist/zero1.c). */
#include "train/optimizer.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vla_status vla_adamw_defaults(const char *policy, vla_adamw_config *out) {
    memset(out, 0, sizeof *out);
    if (policy && (strcmp(policy, "pi05") == 0 || strcmp(policy, "pi0") == 0)) {
        *out = (vla_adamw_config){.lr = 2.5e-5, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                                  .weight_decay = 1e-10, .clip_norm = 1.0};
        return VLA_OK;
    }
    if (policy && strcmp(policy, "groot") == 0) {
        *out = (vla_adamw_config){.lr = 1e-4, .beta1 = 0.95, .beta2 = 0.999, .eps = 1e-8,
                                  .weight_decay = 1e-5, .clip_norm = 1.0};
        return VLA_OK;
    }
    return vla_error(VLA_ERR_INVALID_ARG, "optimizer defaults: unknown policy '%s' (known: pi05, groot)",
                     policy ? policy : "(null)");
}

double vla_ema_default_decay(const char *policy) {
    if (policy && (strcmp(policy, "pi05") == 0 || strcmp(policy, "pi0") == 0)) return 0.99;
    return 0.0;
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
    if (!policy || strcmp(policy, "groot") != 0) return 1;
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

/* ---- accumulation ---------------------------------------------------------- */

void vla_grad_zero(float *grads, int64_t n) { memset(grads, 0, (size_t)n * sizeof *grads); }

void vla_grad_accumulate(float *acc, const float *g, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) acc[i] += g[i];
}

void vla_grad_scale(float *g, int64_t n, float s) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) g[i] *= s;
}
