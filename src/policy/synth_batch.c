/* synth_batch.c — synthetic training batches laid out by the policy itself (synth_batch.h). */
#include "policy/synth_batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

void vla_synth_batch_free(vla_synth_batch *s) {
    free(s->cu), free(s->cu_img), free(s->pos), free(s->grp), free(s->ids), free(s->real_dim);
    free(s->roles), free(s->is_pad), free(s->images), free(s->state), free(s->actions), free(s->keys);
    memset(s, 0, sizeof *s);
}

vla_status vla_synth_batch_alloc(vla_synth_batch *s, const vla_policy_config *c, int32_t S, int64_t images,
                                 int64_t token_cap) {
    memset(s, 0, sizeof *s);
    int64_t plane = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, SD = c->action.state_dim;
    s->token_cap = (int64_t)S * (vla_policy_prefix_tokens(c) + Hz + 2);
    if (token_cap > s->token_cap) s->token_cap = token_cap;
    s->cu = calloc((size_t)S + 1, sizeof(int32_t));
    s->cu_img = calloc((size_t)S + 1, sizeof(int32_t));
    s->pos = calloc((size_t)s->token_cap, sizeof(int32_t));
    s->grp = calloc((size_t)s->token_cap, sizeof(int32_t));
    s->ids = calloc((size_t)s->token_cap, sizeof(int32_t));
    s->real_dim = calloc((size_t)S, sizeof(int32_t));
    s->roles = calloc((size_t)s->token_cap, 1);
    s->is_pad = calloc((size_t)(S * Hz), 1);
    s->images = calloc((size_t)(images * plane + 1), sizeof(float));
    s->state = calloc((size_t)(S * SD + 1), sizeof(float));
    s->actions = calloc((size_t)(S * Hz * A), sizeof(float));
    s->keys = calloc((size_t)S, sizeof(uint64_t));
    if (!s->cu || !s->cu_img || !s->pos || !s->grp || !s->ids || !s->real_dim || !s->roles || !s->is_pad ||
        !s->images || !s->state || !s->actions || !s->keys) {
        vla_synth_batch_free(s);
        return vla_error(VLA_ERR_NOMEM, "synthetic batch: out of memory for %d samples", (int)S);
    }
    return VLA_OK;
}

void vla_synth_batch_finish(vla_synth_batch *s, int32_t S, int64_t T, int32_t n_images) {
    s->b = (vla_batch){.n_samples = S, .n_tokens = T, .cu_seqlens = s->cu, .roles = s->roles, .positions = s->pos,
                       .groups = s->grp, .token_ids = s->ids, .n_images = n_images, .cu_images = s->cu_img,
                       .images = s->images, .state = s->state, .actions = s->actions, .action_is_pad = s->is_pad,
                       .real_action_dim = s->real_dim, .seed = 1, .sample_keys = s->keys};
}

const char VLA_SYNTH_TASK[] = "push the T-shaped block onto the target";

vla_status vla_synth_batch_make(vla_policy *p, int32_t S, bool longest_prompt, vla_synth_batch *s) {
    const vla_policy_config *c = &p->cfg;
    int64_t cams = c->vision.cameras, img = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, SD = c->action.state_dim, maxt = c->language.max_tokens;
    VLA_TRY(vla_synth_batch_alloc(s, c, S, S * cams, 0));
    int32_t *tok = calloc((size_t)maxt + 1, sizeof(int32_t));
    if (!tok) {
        vla_synth_batch_free(s);
        return vla_error(VLA_ERR_NOMEM, "synthetic batch: out of memory");
    }
    vla_rng r = vla_rng_stream(1, 0);
    /* pixels: none to draw for the meta backend, which never reads them (calloc's untouched pages cost no
     * memory: a measurement of 1000 π0.5 samples would otherwise fill 1.8 GB) */
    if (!p->tops->shapes_only)
        for (int64_t i = 0; i < S * cams * img; i++) s->images[i] = vla_rng_uniform(&r);
    for (int64_t i = 0; i < S * SD; i++) s->state[i] = 2 * vla_rng_uniform(&r) - 1;
    for (int64_t i = 0; i < S * Hz * A; i++) s->actions[i] = (float)(0.5 * vla_rng_normal(&r));
    int64_t T = 0;
    vla_status st = VLA_OK;
    for (int32_t i = 0; i < S && st == VLA_OK; i++) {
        int64_t nt = 0;
        if (longest_prompt) /* ids anywhere in the vocabulary: only the count shapes the step */
            for (nt = 0; nt < maxt; nt++) tok[nt] = (int32_t)(nt % c->language.vocab);
        else
            st = vla_policy_tokenize(p, VLA_SYNTH_TASK, s->state + i * SD, SD, (int32_t)cams, tok, maxt, &nt);
        if (st != VLA_OK) break;
        int64_t len = vla_policy_sample_layout(p, (int32_t)cams, tok, (int32_t)nt, s->roles + T, s->grp + T, s->pos + T);
        for (int64_t k = 0, j = 0; k < len; k++)
            if (s->roles[T + k] == VLA_ROLE_TEXT && j < nt) s->ids[T + k] = tok[j++];
        T += len;
        s->cu[i + 1] = (int32_t)T;
        s->cu_img[i + 1] = (int32_t)((i + 1) * cams);
        s->real_dim[i] = (int32_t)A;
        s->keys[i] = (uint64_t)i;
    }
    free(tok);
    if (st != VLA_OK) {
        vla_synth_batch_free(s);
        return st;
    }
    vla_synth_batch_finish(s, S, T, (int32_t)(S * cams));
    return VLA_OK;
}


char *vla_synth_longest_task(const vla_policy_config *c) {
    size_t n = c->language.max_tokens > 0 ? (size_t)c->language.max_tokens : 0;
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memset(t, 'a', n);
    t[n] = 0;
    return t;
}
