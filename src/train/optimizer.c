/* optimizer.c — AdamW, gradient clipping and accumulation, EMA (see optimizer.h). */
#include "train/optimizer.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reductions run over fixed blocks whose partial sums are added in order,
 * so the result is the same whatever the number of threads. */
#define SUMSQ_BLOCK 65536

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

static int cmp_by_offset(const void *a, const void *b) {
    const vla_opt_param *x = *(const vla_opt_param *const *)a, *y = *(const vla_opt_param *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

vla_status vla_adamw_init(vla_adamw *opt, const vla_adamw_config *cfg, const vla_opt_param *params, size_t n_params,
                          int64_t n_total) {
    memset(opt, 0, sizeof *opt);
    opt->ops = vla_ops_cpu();
    if (!finite_nonneg(cfg->lr) || !finite_nonneg(cfg->weight_decay) || !(cfg->eps > 0) || !isfinite(cfg->eps) ||
        !(cfg->beta1 >= 0 && cfg->beta1 < 1) || !(cfg->beta2 >= 0 && cfg->beta2 < 1) || !isfinite(cfg->clip_norm))
        return vla_error(VLA_ERR_INVALID_ARG,
                         "adamw: bad hyper-parameters (lr %g, betas %g/%g, eps %g, weight decay %g, clip %g): "
                         "need lr, wd >= 0, 0 <= beta < 1, eps > 0",
                         cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, cfg->clip_norm);
    if (n_total < 0) return vla_error(VLA_ERR_INVALID_ARG, "adamw: negative buffer size");
    const vla_opt_param **sorted = malloc((n_params ? n_params : 1) * sizeof *sorted);
    if (!sorted) return vla_error(VLA_ERR_NOMEM, "adamw: out of memory");
    int64_t n_state = 0;
    for (size_t i = 0; i < n_params; i++) {
        const vla_opt_param *p = &params[i];
        if (!p->name || !p->name[0]) {
            free(sorted);
            return vla_error(VLA_ERR_INVALID_ARG, "adamw: parameter %zu has no name", i);
        }
        if (p->offset < 0 || p->numel < 0 || p->offset > n_total || p->numel > n_total - p->offset) {
            free(sorted);
            return vla_error(VLA_ERR_INVALID_ARG, "adamw: parameter '%s' [%lld, +%lld) lies outside the buffer of %lld",
                             p->name, (long long)p->offset, (long long)p->numel, (long long)n_total);
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(params[j].name, p->name) == 0) {
                free(sorted);
                return vla_error(VLA_ERR_INVALID_ARG, "adamw: parameter name '%s' appears twice", p->name);
            }
        sorted[i] = p;
        n_state += p->numel;
    }
    qsort(sorted, n_params, sizeof *sorted, cmp_by_offset);
    for (size_t i = 1; i < n_params; i++)
        if (sorted[i - 1]->offset + sorted[i - 1]->numel > sorted[i]->offset) {
            vla_status st = vla_error(VLA_ERR_INVALID_ARG, "adamw: parameters '%s' and '%s' overlap in the buffer",
                                      sorted[i - 1]->name, sorted[i]->name);
            free(sorted);
            return st;
        }
    free(sorted);

    opt->cfg = *cfg;
    opt->n_params = n_params;
    opt->n_state = n_state;
    opt->n_total = n_total;
    opt->params = calloc(n_params ? n_params : 1, sizeof *opt->params);
    opt->state_off = calloc(n_params ? n_params : 1, sizeof *opt->state_off);
    opt->m = calloc((size_t)(n_state ? n_state : 1), sizeof(float));
    opt->v = calloc((size_t)(n_state ? n_state : 1), sizeof(float));
    if (!opt->params || !opt->state_off || !opt->m || !opt->v) {
        vla_adamw_free(opt);
        return vla_error(VLA_ERR_NOMEM, "adamw: cannot allocate state for %lld parameters", (long long)n_state);
    }
    int64_t off = 0;
    for (size_t i = 0; i < n_params; i++) {
        opt->params[i] = params[i];
        opt->params[i].name = strdup(params[i].name);
        if (!opt->params[i].name) {
            vla_adamw_free(opt);
            return vla_error(VLA_ERR_NOMEM, "adamw: out of memory");
        }
        opt->state_off[i] = off;
        off += params[i].numel;
    }
    return VLA_OK;
}

void vla_adamw_free(vla_adamw *opt) {
    if (opt->params)
        for (size_t i = 0; i < opt->n_params; i++) free((char *)opt->params[i].name);
    free(opt->params);
    free(opt->state_off);
    free(opt->m);
    free(opt->v);
    memset(opt, 0, sizeof *opt);
}

static double sumsq_range(const float *g, int64_t n) {
    int64_t nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    if (nb <= 1) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
        return s;
    }
    double *part = malloc((size_t)nb * sizeof *part);
    if (!part) { /* fall back to one sequential pass: same blocks, same order */
        double total = 0;
        for (int64_t b = 0; b < nb; b++) {
            double s = 0;
            int64_t end = (b + 1) * SUMSQ_BLOCK < n ? (b + 1) * SUMSQ_BLOCK : n;
            for (int64_t i = b * SUMSQ_BLOCK; i < end; i++) s += (double)g[i] * (double)g[i];
            total += s;
        }
        return total;
    }
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        double s = 0;
        int64_t end = (b + 1) * SUMSQ_BLOCK < n ? (b + 1) * SUMSQ_BLOCK : n;
        for (int64_t i = b * SUMSQ_BLOCK; i < end; i++) s += (double)g[i] * (double)g[i];
        part[b] = s;
    }
    double total = 0;
    for (int64_t b = 0; b < nb; b++) total += part[b];
    free(part);
    return total;
}

double vla_adamw_grad_sumsq(const vla_adamw *opt, const float *grads) {
    double total = 0;
    for (size_t i = 0; i < opt->n_params; i++)
        total += sumsq_range(grads + opt->params[i].offset, opt->params[i].numel);
    return total;
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

void vla_adamw_scale_grads(const vla_adamw *opt, float *grads, float coef) {
    if (coef == 1.0f) return;
    for (size_t i = 0; i < opt->n_params; i++)
        vla_grad_scale(grads + opt->params[i].offset, opt->params[i].numel, coef);
}

vla_status vla_adamw_clip_grads(vla_adamw *opt, float *grads, double *norm) {
    float coef;
    VLA_TRY(vla_grad_clip_coef(vla_adamw_grad_sumsq(opt, grads), opt->cfg.clip_norm, norm, &coef));
    vla_adamw_scale_grads(opt, grads, coef);
    return VLA_OK;
}

vla_status vla_adamw_step(vla_adamw *opt, float *weights, const float *grads, double lr) {
    if (!isfinite(lr) || lr < 0) return vla_error(VLA_ERR_INVALID_ARG, "adamw: learning rate %g is not valid", lr);
    const vla_adamw_config *c = &opt->cfg;
    int64_t t = opt->step + 1;
    /* Scalars are formed in double and rounded to f32 once, as torch does
     * when it passes Python floats to f32 kernels. */
    double bc1 = 1.0 - pow(c->beta1, (double)t);
    double bc2_sqrt = sqrt(1.0 - pow(c->beta2, (double)t));
    const vla_adamw_scalars sc = {
        .beta1 = (float)c->beta1, .one_minus_beta1 = (float)(1.0 - c->beta1),
        .beta2 = (float)c->beta2, .one_minus_beta2 = (float)(1.0 - c->beta2),
        .bias_correction2_sqrt = (float)bc2_sqrt, .eps = (float)c->eps,
        .neg_step = (float)(-(lr / bc1)), .decay_mul = (float)(1.0 - lr * c->weight_decay), .grad_scale = 1.0f,
    };
    for (size_t pi = 0; pi < opt->n_params; pi++) {
        const vla_opt_param *p = &opt->params[pi];
        opt->ops->adamw(weights + p->offset, grads + p->offset, opt->m + opt->state_off[pi],
                        opt->v + opt->state_off[pi], p->numel, &sc, p->decay && c->weight_decay != 0.0);
    }
    opt->step = t;
    return VLA_OK;
}

/* ---- state ---------------------------------------------------------------- */

static vla_status add_1d(vla_safetensors_writer *w, const char *prefix, const char *name, const char *suffix,
                         const float *data, int64_t n) {
    char key[1024];
    int len = snprintf(key, sizeof key, "%s%s%s", prefix, name, suffix);
    if (len < 0 || (size_t)len >= sizeof key) return vla_error(VLA_ERR_INVALID_ARG, "tensor name '%s' too long", name);
    return vla_safetensors_writer_add(w, key, VLA_F32, 1, &n, data);
}

static vla_status load_1d(const vla_safetensors *st, const char *prefix, const char *name, const char *suffix,
                          float *dst, int64_t n) {
    char key[1024];
    snprintf(key, sizeof key, "%s%s%s", prefix, name, suffix);
    const vla_safetensors_tensor *t;
    VLA_TRY(vla_safetensors_get(st, key, &t));
    if (t->dtype != VLA_F32 || t->numel != n)
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' has %lld %s elements, expected %lld f32 (model changed?)",
                         st->what, key, (long long)t->numel, vla_dtype_name(t->dtype), (long long)n);
    return vla_safetensors_tensor_to_f32(st, t, dst, (size_t)n);
}

static int64_t first_nonfinite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

vla_status vla_adamw_check_finite(const vla_adamw *opt, const float *weights) {
    for (size_t i = 0; i < opt->n_params; i++) {
        const vla_opt_param *p = &opt->params[i];
        const struct {
            const char *what;
            const float *x;
        } parts[3] = {{"weights", weights ? weights + p->offset : NULL},
                      {"exp_avg", opt->m + opt->state_off[i]},
                      {"exp_avg_sq", opt->v + opt->state_off[i]}};
        for (int k = 0; k < 3; k++) {
            if (!parts[k].x) continue;
            int64_t at = first_nonfinite(parts[k].x, p->numel);
            if (at >= 0)
                return vla_error(VLA_ERR_NUMERIC, "%s of '%s' holds %s at element %lld", parts[k].what, p->name,
                                 isnan(parts[k].x[at]) ? "NaN" : "Inf", (long long)at);
        }
    }
    return VLA_OK;
}

vla_status vla_adamw_state_add(const vla_adamw *opt, vla_safetensors_writer *w) {
    VLA_TRY(vla_adamw_check_finite(opt, NULL));
    for (size_t i = 0; i < opt->n_params; i++) {
        const vla_opt_param *p = &opt->params[i];
        VLA_TRY(add_1d(w, "state.", p->name, ".exp_avg", opt->m + opt->state_off[i], p->numel));
        VLA_TRY(add_1d(w, "state.", p->name, ".exp_avg_sq", opt->v + opt->state_off[i], p->numel));
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)opt->step);
    return vla_safetensors_writer_set_meta(w, "step", buf);
}

vla_status vla_adamw_state_load(vla_adamw *opt, const vla_safetensors *st) {
    const char *s = vla_safetensors_meta_get(st, "step");
    char *end = NULL;
    long long step = s ? strtoll(s, &end, 10) : -1;
    if (!s || !*s || *end || step < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: optimizer state has no valid 'step' metadata", st->what);
    for (size_t i = 0; i < opt->n_params; i++) {
        const vla_opt_param *p = &opt->params[i];
        VLA_TRY(load_1d(st, "state.", p->name, ".exp_avg", opt->m + opt->state_off[i], p->numel));
        VLA_TRY(load_1d(st, "state.", p->name, ".exp_avg_sq", opt->v + opt->state_off[i], p->numel));
    }
    opt->step = step;
    return VLA_OK;
}

json_t *vla_adamw_param_groups_json(const vla_adamw *opt, double current_lr) {
    json_t *groups = json_array();
    for (int decay = 1; decay >= 0; decay--) {
        json_t *names = json_array();
        for (size_t i = 0; i < opt->n_params; i++)
            if ((opt->params[i].decay != 0) == decay) json_array_append_new(names, json_string(opt->params[i].name));
        if (json_array_size(names) == 0) {
            json_decref(names);
            continue;
        }
        json_t *g = json_object();
        json_object_set_new(g, "lr", json_real(current_lr));
        json_object_set_new(g, "initial_lr", json_real(opt->cfg.lr));
        json_t *betas = json_array();
        json_array_append_new(betas, json_real(opt->cfg.beta1));
        json_array_append_new(betas, json_real(opt->cfg.beta2));
        json_object_set_new(g, "betas", betas);
        json_object_set_new(g, "eps", json_real(opt->cfg.eps));
        json_object_set_new(g, "weight_decay", json_real(decay ? opt->cfg.weight_decay : 0.0));
        json_object_set_new(g, "max_grad_norm", json_real(opt->cfg.clip_norm));
        json_object_set_new(g, "params", names);
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

/* ---- EMA ------------------------------------------------------------------- */

vla_status vla_ema_init(vla_ema *ema, const vla_adamw *opt, const float *weights, double decay) {
    memset(ema, 0, sizeof *ema);
    if (!(decay >= 0 && decay < 1)) return vla_error(VLA_ERR_INVALID_ARG, "ema: decay %g must be in [0, 1)", decay);
    ema->w = malloc((size_t)(opt->n_state ? opt->n_state : 1) * sizeof(float));
    if (!ema->w) return vla_error(VLA_ERR_NOMEM, "ema: cannot allocate %lld floats", (long long)opt->n_state);
    ema->n = opt->n_state;
    ema->decay = decay;
    for (size_t i = 0; i < opt->n_params; i++)
        memcpy(ema->w + opt->state_off[i], weights + opt->params[i].offset,
               (size_t)opt->params[i].numel * sizeof(float));
    return VLA_OK;
}

void vla_ema_update(vla_ema *ema, const vla_adamw *opt, const float *weights) {
    const float d = (float)ema->decay, omd = (float)(1.0 - ema->decay);
    for (size_t pi = 0; pi < opt->n_params; pi++) {
        float *e = ema->w + opt->state_off[pi];
        const float *w = weights + opt->params[pi].offset;
        int64_t n = opt->params[pi].numel;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; i++) e[i] = d * e[i] + omd * w[i];
    }
}

void vla_ema_copy_to(const vla_ema *ema, const vla_adamw *opt, float *weights) {
    for (size_t i = 0; i < opt->n_params; i++)
        memcpy(weights + opt->params[i].offset, ema->w + opt->state_off[i],
               (size_t)opt->params[i].numel * sizeof(float));
}

void vla_ema_free(vla_ema *ema) {
    free(ema->w);
    memset(ema, 0, sizeof *ema);
}

vla_status vla_ema_state_add(const vla_ema *ema, const vla_adamw *opt, vla_safetensors_writer *w) {
    for (size_t i = 0; i < opt->n_params; i++)
        VLA_TRY(add_1d(w, "ema.", opt->params[i].name, "", ema->w + opt->state_off[i], opt->params[i].numel));
    return VLA_OK;
}

vla_status vla_ema_state_load(vla_ema *ema, const vla_adamw *opt, const vla_safetensors *st) {
    if (ema->n != opt->n_state) return vla_error(VLA_ERR_INVALID_ARG, "ema: not initialised for this optimizer");
    for (size_t i = 0; i < opt->n_params; i++)
        VLA_TRY(load_1d(st, "ema.", opt->params[i].name, "", ema->w + opt->state_off[i], opt->params[i].numel));
    return VLA_OK;
}
