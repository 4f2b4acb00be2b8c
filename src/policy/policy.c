/* policy.c — what every policy shares: creation through the family, the
 * one-allocation parameter store, gradient-ready reports, default
 * initialisation, packed-batch validation and observation packing (see
 * policy.h). */
#include "policy/policy.h"

#include "base/rng.h"
#include "policy/family.h"
#include "policy/precision.h"
#include "tensor/cpu/parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

vla_status vla_policy_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (!ops) return vla_error(VLA_ERR_INVALID_ARG, "policy: no op table");
    if (!cfg->family) return vla_error(VLA_ERR_INVALID_ARG, "policy '%s': the config names no family", cfg->name);
    return cfg->family->create(cfg, ops, out);
}

void vla_policy_free(vla_policy *p) {
    if (!p) return;
    vla_policy_precision_free(p); /* first: it unbinds the blocks, which the family's destroy frees */
    if (p->ops && p->ops->destroy) {
        p->ops->destroy(p);
        return;
    }
    vla_policy_free_params(p);
    free(p);
}

vla_status vla_policy_alloc_params(vla_policy *p) {
    if (!p->tops) return vla_error(VLA_ERR_INVALID_ARG, "policy: no op table");
    static _Atomic uint64_t serials;
    p->serial = atomic_fetch_add(&serials, 1) + 1;
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

vla_status vla_policy_open_tokenizer(vla_policy *p) {
    const char *name = p->cfg.tokenizer;
    p->tokenizer = vla_tokenizer_bytes();
    if (!name[0] || !strcmp(name, "bytes")) return VLA_OK;
    VLA_TRY(vla_tokenizer_hf_load(name, &p->owned_tokenizer));
    if (p->owned_tokenizer->vocab_size > p->cfg.language.vocab) {
        int32_t v = p->owned_tokenizer->vocab_size;
        vla_tokenizer_free(p->owned_tokenizer);
        p->owned_tokenizer = NULL;
        return vla_error(VLA_ERR_INVALID_ARG, "policy %s: tokenizer '%s' has %d tokens, language.vocab is %lld",
                         p->cfg.name, name, v, (long long)p->cfg.language.vocab);
    }
    p->tokenizer = p->owned_tokenizer;
    return VLA_OK;
}

void vla_policy_free_params(vla_policy *p) {
    vla_tokenizer_free(p->owned_tokenizer);
    p->owned_tokenizer = NULL;
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

void vla_policy_ready_wgs(vla_policy *p, const vla_wg *t, int n) {
    if (!p->grad_ready) return;
    const float *w[64];
    for (int k0 = 0; k0 < n; k0 += 64) {
        int m = n - k0 < 64 ? n - k0 : 64;
        for (int k = 0; k < m; k++) w[k] = t[k0 + k].w;
        vla_policy_ready_weights(p, w, m);
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

float *vla_policy_param_stage(vla_policy *p, int64_t i) {
    if (p->tops->host_memory) return p->params[i].data;
    return malloc((size_t)(p->specs.items[i].numel > 0 ? p->specs.items[i].numel : 1) * sizeof(float));
}

int64_t vla_policy_param_commit(vla_policy *p, int64_t i, float *stage) {
    int64_t n = p->specs.items[i].numel;
    vla_policy_weights_changed(p); /* a hold's copies of the old values are stale */
    if (stage == p->params[i].data) return p->tops->find_nonfinite(stage, n);
    int64_t bad = -1;
    for (int64_t k = 0; k < n && bad < 0; k++)
        if (!isfinite(stage[k])) bad = k;
    p->tops->to_device(p->params[i].data, stage, (size_t)n * sizeof(float));
    free(stage);
    return bad;
}

const float *vla_policy_weights_on_host(const vla_policy *p, float **owned) {
    *owned = NULL;
    if (p->tops->host_memory) return p->weights;
    if (!(*owned = malloc((size_t)(p->n_weight_floats > 0 ? p->n_weight_floats : 1) * sizeof(float)))) return NULL;
    p->tops->to_host(*owned, p->weights, (size_t)p->n_weight_floats * sizeof(float));
    return *owned;
}

static bool init_is_random(vla_init_kind k) { return k == VLA_INIT_NORMAL || k == VLA_INIT_UNIFORM; }

/* One parameter's N(0, scale²) or U(±scale) draw, from its own stream (seed,
 * index), on the host: straight into the weights when the backend's memory
 * is the host's, else into a staging buffer uploaded with to_device. */
static void init_random(void *ctx, int64_t i) {
    vla_policy *p = ctx;
    const vla_param_spec *s = &p->specs.items[i];
    if (!init_is_random(s->init)) return;
    float *w = p->params[i].data;
    float *host = p->tops->host_memory ? w : malloc((size_t)s->numel * sizeof(float));
    if (!host) return; /* out of memory on a staging buffer: leave as allocated (documented misuse) */
    vla_rng r = vla_rng_stream(p->init_seed, (uint64_t)i);
    if (s->init == VLA_INIT_UNIFORM)
        for (int64_t k = 0; k < s->numel; k++) host[k] = (float)(s->init_scale * (2.0 * vla_rng_uniform_f64(&r) - 1.0));
    else
        for (int64_t k = 0; k < s->numel; k++) host[k] = (float)(s->init_scale * vla_rng_normal(&r));
    if (host != w) {
        p->tops->to_device(w, host, (size_t)s->numel * sizeof(float));
        free(host);
    }
}

/* Each parameter draws from its own stream, so the draws may run on any
 * thread in any order and give the same weights: large inits are spread
 * over a team (a full-size π0.5 draws 3.35 G normals, minutes on one
 * thread). */
void vla_policy_default_init(vla_policy *p, uint64_t seed) {
    p->init_seed = seed;
    if (p->tops->shapes_only) return; /* the meta backend: no data to draw (tensor/ops.h) */
    int64_t n = p->specs.n, random_elems = 0;
    for (int64_t i = 0; i < n; i++) {
        const vla_param_spec *s = &p->specs.items[i];
        if (init_is_random(s->init)) random_elems += s->numel;
        else p->tops->fill(p->params[i].data, s->init == VLA_INIT_ONES ? 1.0f : 0.0f, s->numel);
    }
    vla_host_parallel_for(n, random_elems >= VLA_PAR_MIN_ELEMS * 64, init_random, p);
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
    int64_t n_emb = cfg->family ? cfg->family->embodiments(cfg) : 0;
    for (int32_t s = 0; s < S && b->embodiment && n_emb > 0; s++)
        if (b->embodiment[s] < 0 || b->embodiment[s] >= n_emb)
            return vla_error(VLA_ERR_INVALID_ARG, "batch: embodiment[%d] = %d outside [0, %lld)", s, b->embodiment[s],
                             (long long)n_emb);
    if (b->state)
        for (int64_t i = 0; i < (int64_t)S * cfg->action.state_dim; i++)
            if (!isfinite(b->state[i]))
                return vla_error(VLA_ERR_NUMERIC, "batch: state[%lld] is not finite", (long long)i);
    return VLA_OK;
}

int64_t vla_policy_default_layout(const vla_policy_config *cfg, int32_t n_images, const int32_t *ids, int32_t n_text,
                                  uint8_t *roles, int32_t *groups, int32_t *positions) {
    return cfg->family->layout(cfg, n_images, ids, n_text, roles, groups, positions);
}

vla_status vla_policy_default_tokenize(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                                       const float *state, int64_t state_dim, int32_t n_images, int32_t *ids,
                                       int64_t cap, int64_t *n, bool *truncated) {
    return cfg->family->tokenize(cfg, tok, task, state, state_dim, n_images, ids, cap, n, truncated);
}

int64_t vla_batch_real_entries(const vla_batch *b, const vla_policy_config *cfg) {
    int64_t real = 0, H = cfg->action.horizon, A = cfg->action.action_dim;
    for (int32_t s = 0; s < b->n_samples; s++) {
        int64_t rd = b->real_action_dim ? b->real_action_dim[s] : A;
        for (int64_t h = 0; h < H; h++)
            if (!b->action_is_pad || !b->action_is_pad[s * H + h]) real += rd;
    }
    return real;
}

/* ---- observations as a packed batch ---------------------------------------------- */

void vla_obs_pack_free(vla_obs_pack *o) {
    free(o->cu), free(o->cu_img), free(o->pos), free(o->grp), free(o->ids), free(o->roles), free(o->images);
    memset(o, 0, sizeof *o);
}

/* Sample s's valid cameras (in camera order) and text tokens onto the token axis at T. */
static vla_status pack_one(const vla_policy *p, const vla_observation *obs, bool with_actions, int32_t s,
                           int32_t *tok, vla_obs_pack *o, int64_t *T, int64_t *n_img) {
    const vla_policy_config *c = &p->cfg;
    int64_t cams = c->vision.cameras, img_fl = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int32_t k = 0;
    for (int64_t cam = 0; cam < cams; cam++) {
        if (obs->image_valid && !obs->image_valid[s * cams + cam]) continue;
        memcpy(o->images + *n_img * img_fl, obs->images + (s * cams + cam) * img_fl, (size_t)img_fl * sizeof(float));
        (*n_img)++, k++;
    }
    int64_t nt = 0;
    VLA_TRY(vla_policy_tokenize(p, obs->task ? obs->task[s] : "", obs->state + s * c->action.state_dim,
                                c->action.state_dim, k, tok, c->language.max_tokens, &nt));
    int64_t len = vla_policy_sample_layout(p, k, tok, (int32_t)nt, o->roles + *T, o->grp + *T, o->pos + *T);
    int64_t keep = len;
    if (!with_actions) /* the prefix only: drop the trailing action-side tokens */
        while (keep > 0 && o->roles[*T + keep - 1] != VLA_ROLE_IMAGE && o->roles[*T + keep - 1] != VLA_ROLE_TEXT) keep--;
    for (int64_t i = 0, j = 0; i < keep; i++)
        if (o->roles[*T + i] == VLA_ROLE_TEXT && j < nt) o->ids[*T + i] = tok[j++];
    *T += keep;
    return VLA_OK;
}

vla_status vla_obs_pack_build(const vla_policy *p, const vla_observation *obs, bool with_actions, vla_obs_pack *o) {
    memset(o, 0, sizeof *o);
    const vla_policy_config *c = &p->cfg;
    int32_t S = obs->n_samples;
    if (S < 1) return vla_error(VLA_ERR_INVALID_ARG, "sample_actions: n_samples is %d", S);
    int64_t cams = c->vision.cameras, img_fl = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t maxt = c->language.max_tokens;
    int64_t cap = vla_policy_sample_layout(p, (int32_t)cams, NULL, (int32_t)maxt, NULL, NULL, NULL) * S;
    o->cu = malloc((size_t)(S + 1) * sizeof(int32_t));
    o->cu_img = malloc((size_t)(S + 1) * sizeof(int32_t));
    o->pos = malloc((size_t)cap * sizeof(int32_t));
    o->grp = malloc((size_t)cap * sizeof(int32_t));
    o->ids = calloc((size_t)cap, sizeof(int32_t));
    o->roles = malloc((size_t)cap);
    o->images = malloc((size_t)(S * cams * img_fl > 0 ? S * cams * img_fl : 1) * sizeof(float));
    int32_t *tok = malloc((size_t)maxt * sizeof(int32_t));
    vla_status st = VLA_OK;
    if (!o->cu || !o->cu_img || !o->pos || !o->grp || !o->ids || !o->roles || !o->images || !tok) {
        st = vla_error(VLA_ERR_NOMEM, "sample_actions: out of memory");
        goto done;
    }
    int64_t T = 0, n_img = 0;
    o->cu[0] = o->cu_img[0] = 0;
    for (int32_t s = 0; s < S && st == VLA_OK; s++) {
        st = pack_one(p, obs, with_actions, s, tok, o, &T, &n_img);
        o->cu[s + 1] = (int32_t)T;
        o->cu_img[s + 1] = (int32_t)n_img;
    }
    vla_batch *b = &o->b;
    b->n_samples = S, b->n_tokens = T, b->cu_seqlens = o->cu, b->roles = o->roles, b->positions = o->pos;
    b->groups = o->grp, b->token_ids = o->ids, b->n_images = (int32_t)n_img, b->cu_images = o->cu_img;
    b->images = o->images, b->state = obs->state, b->embodiment = obs->embodiment;
done:
    free(tok);
    if (st != VLA_OK) vla_obs_pack_free(o);
    return st;
}
