/* policy.c — what every policy shares: creation by kind, the one-allocation
 * parameter store, default initialisation and packed-batch validation (see
 * policy.h). */
#include "policy/policy.h"
#include "base/rng.h"
#include "policy/groot.h"
#include "policy/pi05.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vla_status vla_policy_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (!ops) return vla_error(VLA_ERR_INVALID_ARG, "policy: no op table");
    switch (cfg->kind) {
    case VLA_POLICY_PI05: return vla_pi05_create(cfg, ops, out);
    case VLA_POLICY_GROOT: return vla_groot_create(cfg, ops, out);
    default:
        return vla_error(VLA_ERR_UNSUPPORTED, "policy '%s' (%s): no implementation in this build yet", cfg->name,
                         vla_policy_kind_name(cfg->kind));
    }
}

void vla_policy_free(vla_policy *p) {
    if (!p) return;
    if (p->ops && p->ops->destroy) {
        p->ops->destroy(p);
        return;
    }
    vla_policy_free_params(p);
    free(p);
}

vla_status vla_policy_alloc_params(vla_policy *p) {
    if (!p->tops) return vla_error(VLA_ERR_INVALID_ARG, "policy: no op table");
    if (!p->specs.n) VLA_TRY(vla_param_specs(&p->cfg, &p->specs));
    int64_t nw = 0, ng = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        nw += p->specs.items[i].numel;
        if (p->specs.items[i].trainable) ng += p->specs.items[i].numel;
    }
    p->params = calloc((size_t)p->specs.n, sizeof *p->params);
    p->grad_reported = calloc((size_t)(p->specs.n > 0 ? p->specs.n : 1), 1);
    p->weights = p->tops->alloc((size_t)(nw ? nw : 1) * sizeof(float));
    p->grads = ng ? p->tops->alloc((size_t)ng * sizeof(float)) : NULL;
    if (!p->params || !p->grad_reported || !p->weights || (ng && !p->grads)) {
        vla_policy_free_params(p);
        return vla_error(VLA_ERR_NOMEM, "policy %s: cannot allocate %lld weights and %lld gradients", p->cfg.name,
                         (long long)nw, (long long)ng);
    }
    p->n_weight_floats = nw, p->n_grad_floats = ng;
    int64_t ow = 0, og = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *s = &p->specs.items[i];
        p->params[i].spec = s;
        p->params[i].data = p->weights + ow;
        ow += s->numel;
        if (s->trainable) {
            p->params[i].grad = p->grads + og;
            og += s->numel;
        }
    }
    vla_policy_zero_grad(p);
    return VLA_OK;
}

void vla_policy_free_params(vla_policy *p) {
    if (p->tops) {
        if (p->weights) p->tops->free(p->weights);
        if (p->grads) p->tops->free(p->grads);
    }
    free(p->params);
    free(p->grad_reported);
    p->grad_reported = NULL;
    vla_param_list_free(&p->specs);
    p->weights = p->grads = NULL;
    p->params = NULL;
    p->n_weight_floats = p->n_grad_floats = 0;
}

/* ---- gradient-ready reports --------------------------------------------------- */

int64_t vla_policy_param_index(const vla_policy *p, const float *w) {
    /* params[i].data increase with i (one allocation, spec order) */
    int64_t lo = 0, hi = p->specs.n - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const float *d = p->params[mid].data;
        if (d == w) return mid;
        if (d < w) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

void vla_policy_ready_begin(vla_policy *p) {
    if (p->grad_ready && p->grad_reported) memset(p->grad_reported, 0, (size_t)p->specs.n);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void vla_policy_ready_weights(vla_policy *p, const float *const *w, int n) {
    if (!p->grad_ready || !p->grad_reported) return;
    int64_t idx[64];
    while (n > 0) { /* in chunks of 64 (a block has a few dozen tensors at most) */
        int m = 0, take = n < 64 ? n : 64;
        for (int k = 0; k < take; k++) {
            if (!w[k]) continue;
            int64_t i = vla_policy_param_index(p, w[k]);
            if (i >= 0 && !p->grad_reported[i]) idx[m++] = i;
        }
        qsort(idx, (size_t)m, sizeof *idx, cmp_i64);
        /* runs of consecutive indices, last run first (backward's order) */
        int end = m;
        while (end > 0) {
            int first = end - 1;
            while (first > 0 && idx[first - 1] >= idx[first] - 1) first--;
            for (int k = first; k < end; k++) p->grad_reported[idx[k]] = 1;
            vla_policy_grads_ready(p, idx[first], idx[end - 1] + 1);
            end = first;
        }
        w += take, n -= take;
    }
}

void vla_policy_ready_rest(vla_policy *p) {
    if (!p->grad_ready || !p->grad_reported) return;
    int64_t end = p->specs.n;
    while (end > 0) {
        while (end > 0 && p->grad_reported[end - 1]) end--;
        int64_t first = end;
        while (first > 0 && !p->grad_reported[first - 1]) first--;
        if (first < end) {
            memset(p->grad_reported + first, 1, (size_t)(end - first));
            vla_policy_grads_ready(p, first, end);
        }
        end = first;
    }
}

void vla_policy_zero_grad(vla_policy *p) {
    if (p->grads && p->n_grad_floats) p->tops->fill(p->grads, 0.0f, p->n_grad_floats);
}

void vla_policy_default_init(vla_policy *p, uint64_t seed) {
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *s = &p->specs.items[i];
        float *w = p->params[i].data;
        if (s->init == VLA_INIT_NORMAL) {
            float *host = p->tops->device == VLA_DEVICE_CPU ? w : malloc((size_t)s->numel * sizeof(float));
            if (!host) continue; /* out of memory on a staging buffer: leave as allocated (documented misuse) */
            vla_rng r = vla_rng_stream(seed, (uint64_t)i);
            for (int64_t k = 0; k < s->numel; k++) host[k] = (float)(s->init_std * vla_rng_normal(&r));
            if (host != w) {
                p->tops->to_device(w, host, (size_t)s->numel * sizeof(float));
                free(host);
            }
        } else {
            p->tops->fill(w, s->init == VLA_INIT_ONES ? 1.0f : 0.0f, s->numel);
        }
    }
}

vla_status vla_batch_check(const vla_batch *b, const vla_policy_config *cfg) {
    int32_t S = b->n_samples;
    if (S < 1) return vla_error(VLA_ERR_INVALID_ARG, "batch: n_samples is %d", S);
    if (!b->cu_seqlens || !b->roles || !b->positions || !b->groups)
        return vla_error(VLA_ERR_INVALID_ARG, "batch: cu_seqlens, roles, positions and groups are required");
    if (b->cu_seqlens[0] != 0) return vla_error(VLA_ERR_INVALID_ARG, "batch: cu_seqlens[0] is %d, not 0", b->cu_seqlens[0]);
    for (int32_t s = 0; s < S; s++)
        if (b->cu_seqlens[s + 1] < b->cu_seqlens[s])
            return vla_error(VLA_ERR_INVALID_ARG, "batch: cu_seqlens decreases at sample %d (%d → %d)", s,
                             b->cu_seqlens[s], b->cu_seqlens[s + 1]);
    if ((int64_t)b->cu_seqlens[S] != b->n_tokens)
        return vla_error(VLA_ERR_INVALID_ARG, "batch: cu_seqlens[%d] = %d but n_tokens = %lld", S, b->cu_seqlens[S],
                         (long long)b->n_tokens);
    for (int32_t s = 0; s < S; s++) {
        int64_t len = b->cu_seqlens[s + 1] - b->cu_seqlens[s];
        for (int64_t t = b->cu_seqlens[s]; t < b->cu_seqlens[s + 1]; t++) {
            if (b->roles[t] >= VLA_ROLE_COUNT)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: roles[%lld] = %d is not a role", (long long)t,
                                 b->roles[t]);
            if (b->positions[t] < 0 || b->positions[t] >= len)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: positions[%lld] = %d outside sample %d of %lld tokens",
                                 (long long)t, b->positions[t], s, (long long)len);
            if (b->groups[t] < 0)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: groups[%lld] = %d is negative", (long long)t,
                                 b->groups[t]);
            if (b->roles[t] == VLA_ROLE_TEXT && b->token_ids &&
                (b->token_ids[t] < 0 || b->token_ids[t] >= cfg->language.vocab))
                return vla_error(VLA_ERR_INVALID_ARG, "batch: token_ids[%lld] = %d outside the vocabulary (%lld)",
                                 (long long)t, b->token_ids[t], (long long)cfg->language.vocab);
        }
    }
    if (b->n_images > 0) {
        if (!b->cu_images || !b->images)
            return vla_error(VLA_ERR_INVALID_ARG, "batch: %d images but no cu_images/images", b->n_images);
        if (b->cu_images[0] != 0 || b->cu_images[S] != b->n_images)
            return vla_error(VLA_ERR_INVALID_ARG, "batch: cu_images must run from 0 to n_images (%d)", b->n_images);
        for (int32_t s = 0; s < S; s++) {
            int32_t k = b->cu_images[s + 1] - b->cu_images[s];
            if (k < 0 || k > cfg->vision.cameras)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: sample %d has %d images; the config allows %lld", s, k,
                                 (long long)cfg->vision.cameras);
        }
    }
    if (!(b->loss_divisor >= 0) || isinf(b->loss_divisor))
        return vla_error(VLA_ERR_INVALID_ARG, "batch: loss_divisor is %g; it must be 0 (the policy's mean) or positive",
                         b->loss_divisor);
    if (b->actions && !b->action_is_pad)
        return vla_error(VLA_ERR_INVALID_ARG, "batch: actions without action_is_pad");
    for (int32_t s = 0; s < S && b->action_is_pad; s++)
        for (int64_t h = 0; h < cfg->action.horizon; h++)
            if (b->action_is_pad[s * cfg->action.horizon + h] > 1)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: action_is_pad[%d, %lld] is %d, not 0 or 1", s,
                                 (long long)h, b->action_is_pad[s * cfg->action.horizon + h]);
    for (int32_t s = 0; s < S && b->real_action_dim; s++)
        if (b->real_action_dim[s] < 1 || b->real_action_dim[s] > cfg->action.action_dim)
            return vla_error(VLA_ERR_INVALID_ARG, "batch: real_action_dim[%d] = %d outside [1, %lld]", s,
                             b->real_action_dim[s], (long long)cfg->action.action_dim);
    if (cfg->kind == VLA_POLICY_GROOT)
        for (int32_t s = 0; s < S && b->embodiment; s++)
            if (b->embodiment[s] < 0 || b->embodiment[s] >= cfg->head.embodiments)
                return vla_error(VLA_ERR_INVALID_ARG, "batch: embodiment[%d] = %d outside [0, %lld)", s,
                                 b->embodiment[s], (long long)cfg->head.embodiments);
    if (b->state)
        for (int64_t i = 0; i < (int64_t)S * cfg->action.state_dim; i++)
            if (!isfinite(b->state[i]))
                return vla_error(VLA_ERR_NUMERIC, "batch: state[%lld] is not finite", (long long)i);
    return VLA_OK;
}

int64_t vla_policy_default_layout(const vla_policy_config *cfg, int32_t n_images, int32_t n_text, uint8_t *roles,
                                  int32_t *groups, int32_t *positions) {
    int64_t n_img = (int64_t)n_images * vla_policy_image_tokens(cfg), H = cfg->action.horizon;
    int64_t n_pre = n_img + n_text;
    bool groot = cfg->kind == VLA_POLICY_GROOT;
    int64_t total = n_pre + (groot ? 1 : 0) + H;
    if (!roles && !groups && !positions) return total;
    for (int64_t t = 0; t < total; t++) {
        uint8_t role;
        int32_t group, pos;
        if (t < n_pre) {
            role = t < n_img ? VLA_ROLE_IMAGE : VLA_ROLE_TEXT;
            group = groot ? (int32_t)t : 0;
            pos = (int32_t)t;
        } else if (groot) {
            int64_t k = t - n_pre; /* 0: state, then actions */
            role = k == 0 ? VLA_ROLE_STATE : VLA_ROLE_ACTION;
            group = 0;
            pos = k == 0 ? 0 : (int32_t)(k - 1);
        } else {
            role = VLA_ROLE_ACTION;
            group = 1;
            pos = (int32_t)t;
        }
        if (roles) roles[t] = role;
        if (groups) groups[t] = group;
        if (positions) positions[t] = pos;
    }
    return total;
}

vla_status vla_policy_default_tokenize(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                                       const float *state, int64_t state_dim, int32_t *ids, int64_t cap, int64_t *n,
                                       bool *truncated) {
    int64_t lim = cap < cfg->language.max_tokens ? cap : cfg->language.max_tokens;
    *n = 0;
    if (truncated) *truncated = false;
    if (lim < 1) return vla_error(VLA_ERR_INVALID_ARG, "tokenize: no room for tokens (cap %lld)", (long long)cap);
    if (cfg->kind == VLA_POLICY_PI05) {
        /* the π0.5 helper pads to a fixed length; packing wants only the real tokens */
        int32_t *tmp = malloc((size_t)lim * sizeof *tmp);
        if (!tmp) return vla_error(VLA_ERR_NOMEM, "tokenize: out of memory");
        int64_t real = 0;
        vla_status st = vla_pi05_tokenize(tok, task, state, state_dim, lim, tmp, NULL, &real, truncated);
        if (st == VLA_OK) memcpy(ids, tmp, (size_t)real * sizeof *ids), *n = real;
        free(tmp);
        return st;
    }
    if (!task) task = "";
    int64_t need = 0;
    vla_status st = tok->ops->encode(tok, task, strlen(task), ids, lim, &need);
    if (st != VLA_OK) return vla_error_context(st, "tokenize");
    *n = need < lim ? need : lim;
    if (truncated) *truncated = need > lim;
    return VLA_OK;
}

vla_status vla_policy_vbind(const vla_policy *p, int64_t numel, float **w, float **g, const char *fmt, va_list ap) {
    char name[256];
    vsnprintf(name, sizeof name, fmt, ap);
    int64_t i = vla_param_find(&p->specs, name);
    if (i < 0)
        return vla_error(VLA_ERR_INTERNAL, "%s: parameter %s is not in the inventory", p->ops->name, name);
    if (p->specs.items[i].numel != numel)
        return vla_error(VLA_ERR_INTERNAL, "%s: parameter %s has %lld elements, expected %lld", p->ops->name, name,
                         (long long)p->specs.items[i].numel, (long long)numel);
    *w = p->params[i].data;
    *g = p->params[i].grad;
    return VLA_OK;
}
