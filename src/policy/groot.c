/* groot.c — the GR00T-N1.5-style policy behind policy.h: binds the weights
 * by checkpoint name, turns a packed batch into the backbone's prefix and
 * the action head's [state, future, action] sequence, and runs the loss
 * (forward keeping activations), its backward, and 4-step Euler sampling
 * with the VL features computed once per sample (see groot.h). */
#include "policy/groot.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/groot_internal.h"

/* ---- weights ------------------------------------------------------------- */

static vla_status bind(vla_policy *p, groot_t *t, int64_t numel, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vla_status bind(vla_policy *p, groot_t *t, int64_t numel, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    float *w = NULL;
    vla_status st = vla_policy_vbind(p, numel, &w, &t->g, fmt, ap);
    va_end(ap);
    t->w = w;
    return st;
}

static vla_status bind_block(vla_policy *p, groot_block *b, const char *pre, int64_t dim, int64_t kv_dim, bool ada,
                             int64_t ff_mult) {
    if (ada) {
        VLA_TRY(bind(p, &b->n1_w, 2 * dim * dim, "%s.norm1.linear.weight", pre));
        VLA_TRY(bind(p, &b->n1_b, 2 * dim, "%s.norm1.linear.bias", pre));
    } else {
        VLA_TRY(bind(p, &b->n1_w, dim, "%s.norm1.weight", pre));
        VLA_TRY(bind(p, &b->n1_b, dim, "%s.norm1.bias", pre));
        VLA_TRY(bind(p, &b->n3_w, dim, "%s.norm3.weight", pre));
        VLA_TRY(bind(p, &b->n3_b, dim, "%s.norm3.bias", pre));
    }
    VLA_TRY(bind(p, &b->q_w, dim * dim, "%s.attn1.to_q.weight", pre));
    VLA_TRY(bind(p, &b->q_b, dim, "%s.attn1.to_q.bias", pre));
    VLA_TRY(bind(p, &b->k_w, dim * kv_dim, "%s.attn1.to_k.weight", pre));
    VLA_TRY(bind(p, &b->k_b, dim, "%s.attn1.to_k.bias", pre));
    VLA_TRY(bind(p, &b->v_w, dim * kv_dim, "%s.attn1.to_v.weight", pre));
    VLA_TRY(bind(p, &b->v_b, dim, "%s.attn1.to_v.bias", pre));
    VLA_TRY(bind(p, &b->o_w, dim * dim, "%s.attn1.to_out.0.weight", pre));
    VLA_TRY(bind(p, &b->o_b, dim, "%s.attn1.to_out.0.bias", pre));
    VLA_TRY(bind(p, &b->f1_w, ff_mult * dim * dim, "%s.ff.net.0.proj.weight", pre));
    VLA_TRY(bind(p, &b->f1_b, ff_mult * dim, "%s.ff.net.0.proj.bias", pre));
    VLA_TRY(bind(p, &b->f2_w, ff_mult * dim * dim, "%s.ff.net.2.weight", pre));
    VLA_TRY(bind(p, &b->f2_b, dim, "%s.ff.net.2.bias", pre));
    return VLA_OK;
}

static vla_status bind_cat(vla_policy *p, groot_t *w, groot_t *b, const char *name, int64_t in, int64_t out) {
    int64_t ne = p->cfg.head.embodiments;
    VLA_TRY(bind(p, w, ne * in * out, "action_head.%s.W", name));
    VLA_TRY(bind(p, b, ne * out, "action_head.%s.b", name));
    return VLA_OK;
}

static vla_status bind_all(vla_policy *p) {
    groot_impl *g = groot_of(p);
    const vla_policy_config *c = &p->cfg;
    const vla_lm_config *l = &c->language;
    const vla_groot_head_config *h = &c->head;
    int64_t L = l->width, Q = l->heads * l->head_dim, K = l->kv_heads * l->head_dim;
    int64_t D = h->dit_heads * h->dit_head_dim;
    char pre[200];
    VLA_TRY(vla_vit_bind(&g->vit, &c->vision, p->tops, p->params, &p->specs,
                         "backbone.eagle_model.vision_model.vision_model"));
    g->have_vit = true;
    VLA_TRY(bind(p, &g->mlp1_w, c->vision.width * L, "backbone.eagle_model.mlp1.0.weight"));
    VLA_TRY(bind(p, &g->mlp1_b, L, "backbone.eagle_model.mlp1.0.bias"));
    const char *lm = "backbone.eagle_model.language_model.model";
    VLA_TRY(bind(p, &g->embed, l->vocab * L, "%s.embed_tokens.weight", lm));
    for (int64_t i = 0; i < l->depth; i++) {
        groot_lm_layer *w = &g->lm[i];
        snprintf(pre, sizeof pre, "%s.layers.%lld", lm, (long long)i);
        VLA_TRY(bind(p, &w->in_ln, L, "%s.input_layernorm.weight", pre));
        VLA_TRY(bind(p, &w->q, Q * L, "%s.self_attn.q_proj.weight", pre));
        VLA_TRY(bind(p, &w->k, K * L, "%s.self_attn.k_proj.weight", pre));
        VLA_TRY(bind(p, &w->v, K * L, "%s.self_attn.v_proj.weight", pre));
        VLA_TRY(bind(p, &w->o, L * Q, "%s.self_attn.o_proj.weight", pre));
        if (l->qk_norm) {
            VLA_TRY(bind(p, &w->q_norm, l->head_dim, "%s.self_attn.q_norm.weight", pre));
            VLA_TRY(bind(p, &w->k_norm, l->head_dim, "%s.self_attn.k_norm.weight", pre));
        }
        VLA_TRY(bind(p, &w->post_ln, L, "%s.post_attention_layernorm.weight", pre));
        VLA_TRY(bind(p, &w->gate, l->mlp * L, "%s.mlp.gate_proj.weight", pre));
        VLA_TRY(bind(p, &w->up, l->mlp * L, "%s.mlp.up_proj.weight", pre));
        VLA_TRY(bind(p, &w->down, L * l->mlp, "%s.mlp.down_proj.weight", pre));
    }
    VLA_TRY(bind(p, &g->final_norm, L, "%s.norm.weight", lm));
    VLA_TRY(bind(p, &g->vlln_w, L, "action_head.vlln.weight"));
    VLA_TRY(bind(p, &g->vlln_b, L, "action_head.vlln.bias"));
    for (int64_t i = 0; i < h->vl_layers; i++) {
        snprintf(pre, sizeof pre, "action_head.vl_self_attention.transformer_blocks.%lld", (long long)i);
        VLA_TRY(bind_block(p, &g->vl[i], pre, L, L, false, h->ff_mult));
    }
    const char *te = "action_head.model.timestep_encoder.timestep_embedder";
    VLA_TRY(bind(p, &g->te1_w, D * h->timestep_channels, "%s.linear_1.weight", te));
    VLA_TRY(bind(p, &g->te1_b, D, "%s.linear_1.bias", te));
    VLA_TRY(bind(p, &g->te2_w, D * D, "%s.linear_2.weight", te));
    VLA_TRY(bind(p, &g->te2_b, D, "%s.linear_2.bias", te));
    for (int64_t i = 0; i < h->dit_layers; i++) {
        snprintf(pre, sizeof pre, "action_head.model.transformer_blocks.%lld", (long long)i);
        VLA_TRY(bind_block(p, &g->dit[i], pre, D, i % 2 == 0 ? L : D, true, h->ff_mult));
    }
    VLA_TRY(bind(p, &g->po1_w, 2 * D * D, "action_head.model.proj_out_1.weight"));
    VLA_TRY(bind(p, &g->po1_b, 2 * D, "action_head.model.proj_out_1.bias"));
    VLA_TRY(bind(p, &g->po2_w, h->output_dim * D, "action_head.model.proj_out_2.weight"));
    VLA_TRY(bind(p, &g->po2_b, h->output_dim, "action_head.model.proj_out_2.bias"));
    VLA_TRY(bind_cat(p, &g->st1_w, &g->st1_b, "state_encoder.layer1", c->action.state_dim, h->state_hidden));
    VLA_TRY(bind_cat(p, &g->st2_w, &g->st2_b, "state_encoder.layer2", h->state_hidden, D));
    VLA_TRY(bind_cat(p, &g->a1_w, &g->a1_b, "action_encoder.W1", c->action.action_dim, D));
    VLA_TRY(bind_cat(p, &g->a2_w, &g->a2_b, "action_encoder.W2", 2 * D, D));
    VLA_TRY(bind_cat(p, &g->a3_w, &g->a3_b, "action_encoder.W3", D, D));
    VLA_TRY(bind_cat(p, &g->d1_w, &g->d1_b, "action_decoder.layer1", h->output_dim, h->output_dim));
    VLA_TRY(bind_cat(p, &g->d2_w, &g->d2_b, "action_decoder.layer2", h->output_dim, c->action.action_dim));
    VLA_TRY(bind(p, &g->pos, h->max_seq_len * D, "action_head.position_embedding.weight"));
    if (h->future_tokens > 0) VLA_TRY(bind(p, &g->fut, h->future_tokens * D, "action_head.future_tokens.weight"));

    bool tr[VLA_GROUP_COUNT] = {false};
    for (int64_t i = 0; i < p->specs.n; i++)
        if (p->specs.items[i].trainable) tr[p->specs.items[i].group] = true;
    g->need_vision = tr[VLA_GROUP_VISION];
    g->need_conn = g->need_vision || tr[VLA_GROUP_CONNECTOR];
    g->need_lm = g->need_conn || tr[VLA_GROUP_LANGUAGE];
    g->need_vl = g->need_lm || tr[VLA_GROUP_VL_ADAPTER];
    return VLA_OK;
}

/* ---- packing --------------------------------------------------------------- */

/* The networks' view of a packed batch (arrays from arena a). */
static vla_status make_pack(vla_policy *p, vla_arena *a, const vla_batch *b, groot_pack *pk) {
    const vla_policy_config *c = &p->cfg;
    int32_t S = b->n_samples;
    int64_t H = c->action.horizon, F = c->head.future_tokens, itok = vla_policy_image_tokens(c);
    memset(pk, 0, sizeof *pk);
    pk->S = S;
    if (!b->state) return vla_error(VLA_ERR_INVALID_ARG, "groot: batch has no state");
    int64_t P = 0, n_txt = 0, n_imgtok = 0;
    for (int64_t t = 0; t < b->n_tokens; t++) {
        if (b->roles[t] == VLA_ROLE_IMAGE) P++, n_imgtok++;
        else if (b->roles[t] == VLA_ROLE_TEXT) P++, n_txt++;
    }
    if (n_txt > 0 && !b->token_ids) return vla_error(VLA_ERR_INVALID_ARG, "groot: text tokens but no token_ids");
    int64_t n_img = b->n_images > 0 ? b->n_images : 0;
    if (n_imgtok != n_img * itok)
        return vla_error(VLA_ERR_INVALID_ARG, "groot: %lld image tokens for %lld images of %lld tokens",
                         (long long)n_imgtok, (long long)n_img, (long long)itok);
    pk->P = P, pk->n_img = n_img, pk->n_img_tok = n_imgtok, pk->n_txt = n_txt;
    pk->N = (int64_t)S * (1 + F + H), pk->A = (int64_t)S * H;
    pk->images = b->images;
    GROOT_ALLOC(a, pk->cu_pre, S + 1);
    GROOT_ALLOC(a, pk->cu_dit, S + 1);
    GROOT_ALLOC(a, pk->cu_act, S + 1);
    GROOT_ALLOC(a, pk->cu_one, S + 1);
    GROOT_ALLOC(a, pk->pre_pos, P);
    GROOT_ALLOC(a, pk->pre_group, P);
    GROOT_ALLOC(a, pk->img_rows, n_imgtok);
    GROOT_ALLOC(a, pk->txt_rows, n_txt);
    GROOT_ALLOC(a, pk->txt_ids, n_txt);
    GROOT_ALLOC(a, pk->act_pos, pk->A);
    GROOT_ALLOC(a, pk->emb, S);
    float *state;
    GROOT_ALLOC(a, state, (int64_t)S * c->action.state_dim);
    memcpy(state, b->state, (size_t)((int64_t)S * c->action.state_dim) * sizeof(float));
    pk->state = state;
    int64_t r = 0, ti = 0;
    pk->cu_pre[0] = pk->cu_dit[0] = pk->cu_act[0] = pk->cu_one[0] = 0;
    for (int32_t s = 0; s < S; s++) {
        int64_t n_state = 0, n_act = 0, ii = 0;
        int64_t img0 = b->n_images > 0 ? (int64_t)b->cu_images[s] * itok : 0;
        int64_t want_img = b->n_images > 0 ? (int64_t)(b->cu_images[s + 1] - b->cu_images[s]) * itok : 0;
        for (int64_t t = b->cu_seqlens[s]; t < b->cu_seqlens[s + 1]; t++) {
            switch (b->roles[t]) {
            case VLA_ROLE_IMAGE:
            case VLA_ROLE_TEXT:
                if (b->roles[t] == VLA_ROLE_IMAGE) {
                    if (ii >= want_img)
                        return vla_error(VLA_ERR_INVALID_ARG, "groot: sample %d has more image tokens than its images",
                                         s);
                    pk->img_rows[img0 + ii++] = (int32_t)r;
                } else {
                    pk->txt_rows[ti] = (int32_t)r;
                    pk->txt_ids[ti++] = b->token_ids[t];
                }
                pk->pre_pos[r] = b->positions[t];
                pk->pre_group[r] = b->groups[t];
                r++;
                break;
            case VLA_ROLE_STATE: n_state++; break;
            case VLA_ROLE_ACTION:
                if (n_act < H) {
                    if (b->positions[t] >= c->head.max_seq_len)
                        return vla_error(VLA_ERR_INVALID_ARG,
                                         "groot: action token %lld has position %d beyond max_seq_len %lld",
                                         (long long)t, b->positions[t], (long long)c->head.max_seq_len);
                    pk->act_pos[(int64_t)s * H + n_act] = b->positions[t];
                }
                n_act++;
                break;
            default: break;
            }
        }
        if (n_state != 1 || n_act != H)
            return vla_error(VLA_ERR_INVALID_ARG, "groot: sample %d has %lld state and %lld action tokens (want 1 and %lld)",
                             s, (long long)n_state, (long long)n_act, (long long)H);
        if (ii != want_img)
            return vla_error(VLA_ERR_INVALID_ARG, "groot: sample %d has %lld image tokens for %lld", s, (long long)ii,
                             (long long)want_img);
        pk->cu_pre[s + 1] = (int32_t)r;
        pk->cu_dit[s + 1] = (int32_t)((s + 1) * (1 + F + H));
        pk->cu_act[s + 1] = (int32_t)((s + 1) * H);
        pk->cu_one[s + 1] = s + 1;
        pk->emb[s] = b->embodiment ? b->embodiment[s] : 0;
    }
    return VLA_OK;
}

/* Model FLOPs of one forward (2·weights·tokens per matrix + attention). */
static double forward_flops(const vla_policy *p, const groot_pack *pk) {
    const vla_policy_config *c = &p->cfg;
    double f = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *s = &p->specs.items[i];
        double tok = 0;
        switch (s->apply) {
        case VLA_APPLY_IMAGE: tok = (double)pk->n_img_tok; break;
        case VLA_APPLY_PREFIX: tok = (double)pk->P; break;
        case VLA_APPLY_ACTION: tok = (double)pk->A; break;
        case VLA_APPLY_DIT: tok = (double)pk->N; break;
        case VLA_APPLY_SAMPLE: tok = pk->S; break;
        default: break;
        }
        f += 2.0 * (double)s->numel / (double)(s->n_emb > 0 ? s->n_emb : 1) * tok;
    }
    double pp = 0, nn = 0, np = 0, it = (double)vla_policy_image_tokens(c);
    for (int32_t s = 0; s < pk->S; s++) {
        double ps = pk->cu_pre[s + 1] - pk->cu_pre[s], ns = pk->cu_dit[s + 1] - pk->cu_dit[s];
        pp += ps * ps, nn += ns * ns, np += ns * ps;
    }
    const vla_groot_head_config *h = &c->head;
    double inner = (double)(h->dit_heads * h->dit_head_dim);
    f += c->vision.depth * 4.0 * (double)pk->n_img * it * it * c->vision.width;
    f += c->language.depth * 2.0 * pp * (double)(c->language.heads * c->language.head_dim);
    f += h->vl_layers * 4.0 * pp * (double)(h->vl_heads * h->vl_head_dim);
    f += (double)((h->dit_layers + 1) / 2) * 4.0 * np * inner + (double)(h->dit_layers / 2) * 4.0 * nn * inner;
    return f;
}

/* ---- interface ------------------------------------------------------------- */

/* Reset an arena for a new call. Once a call has needed more than one
 * chunk, the arena is rebuilt with one chunk of the high-water mark (+1/8),
 * which reset keeps: later calls of the same shape allocate nothing. */
static void arena_begin(vla_arena *a, size_t *cap) {
    if (a->peak > *cap) {
        size_t want = a->peak + a->peak / 8;
        vla_arena_free(a);
        vla_arena_init(a, want);
        *cap = want;
    }
    vla_arena_reset(a);
}

static void groot_destroy(vla_policy *p) {
    groot_impl *g = groot_of(p);
    if (g) {
        if (g->have_vit) vla_vit_release(&g->vit);
        free(g->lm);
        free(g->vl);
        free(g->dit);
        vla_arena_free(&g->arena);
        vla_arena_free(&g->sarena);
        free(g);
    }
    vla_policy_free_params(p);
    free(p);
}

static vla_status groot_loss(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info) {
    groot_impl *g = groot_of(p);
    const vla_policy_config *c = &p->cfg;
    vla_arena *a = &g->arena;
    (void)training; /* no dropout (groot.h) */
    g->have_fwd = false;
    arena_begin(a, &g->arena_cap);
    VLA_TRY(vla_batch_check(b, c));
    if (!b->actions) return vla_error(VLA_ERR_INVALID_ARG, "groot loss: batch has no actions");
    groot_pack *pk = &g->pk;
    VLA_TRY(make_pack(p, a, b, pk));
    int32_t S = pk->S;
    int64_t H = c->action.horizon, ad = c->action.action_dim, A = pk->A;
    float *bucket, *x_t;
    GROOT_ALLOC(a, g->t, S);
    GROOT_ALLOC(a, bucket, S);
    GROOT_ALLOC(a, g->noise, A * ad);
    GROOT_ALLOC(a, g->target, A * ad);
    GROOT_ALLOC(a, g->d_pred, A * ad);
    GROOT_ALLOC(a, x_t, A * ad);
    double tsum = 0;
    for (int32_t s = 0; s < S; s++) {
        uint64_t key = b->sample_keys ? b->sample_keys[s] : (uint64_t)s;
        g->t[s] = vla_flow_sample_time(&g->flow, b->seed, key);
        bucket[s] = (float)vla_flow_time_bucket(&g->flow, g->t[s]);
        vla_flow_sample_noise(b->seed, key, VLA_FLOW_RNG_NOISE, g->noise + s * H * ad, H * ad);
        vla_flow_interpolate(&g->flow, g->t[s], b->actions + s * H * ad, g->noise + s * H * ad, x_t + s * H * ad,
                             g->target + s * H * ad, H * ad);
        tsum += g->t[s];
    }
    /* A frozen backbone runs in the scratch arena: only its output is kept. */
    const float *feats;
    if (g->need_lm) {
        VLA_TRY(groot_backbone_forward(p, a, pk, true, &g->bb));
        feats = g->bb.feats;
    } else {
        arena_begin(&g->sarena, &g->sarena_cap);
        VLA_TRY(groot_backbone_forward(p, &g->sarena, pk, false, &g->bb));
        float *f;
        GROOT_ALLOC(a, f, pk->P * c->language.width);
        memcpy(f, g->bb.feats, (size_t)(pk->P * c->language.width) * sizeof(float));
        vla_arena_reset(&g->sarena);
        memset(&g->bb, 0, sizeof g->bb);
        feats = f;
    }
    VLA_TRY(groot_vl_forward(p, a, pk, feats, g->need_vl, &g->vla));
    VLA_TRY(groot_head_forward(p, a, pk, g->vla.out, bucket, x_t, NULL, NULL, &g->ha));
    double loss = vla_flow_masked_mse(g->ha.pred, g->target, S, H, ad, b->action_is_pad, b->real_action_dim,
                                      VLA_MSE_MEAN_REAL, b->loss_divisor, g->d_pred);
    g->have_fwd = true;
    g->saved_bytes = a->used_total;
    if (info) {
        memset(info, 0, sizeof *info);
        info->loss = loss;
        int64_t real = 0;
        for (int32_t s = 0; s < S; s++) {
            int64_t rd = b->real_action_dim ? b->real_action_dim[s] : ad;
            for (int64_t h = 0; h < H; h++)
                if (!b->action_is_pad || !b->action_is_pad[s * H + h]) real += rd;
        }
        info->real_entries = real;
        info->mean_time = tsum / S;
        info->tokens = pk->P + pk->N;
        info->flops = forward_flops(p, pk);
    }
    return VLA_OK;
}

static vla_status groot_backward(vla_policy *p) {
    groot_impl *g = groot_of(p);
    if (!g->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "groot backward: no loss to differentiate");
    vla_arena *a = &g->arena;
    vla_arena_mark m = vla_arena_get_mark(a);
    const groot_pack *pk = &g->pk;
    int64_t PL = pk->P * p->cfg.language.width;
    float *d_vl = NULL, *d_feats = NULL;
    vla_status st = VLA_OK;
    if (g->need_vl) {
        d_vl = vla_arena_alloc(a, (size_t)(PL > 0 ? PL : 1) * sizeof(float), 64);
        if (g->need_lm) d_feats = vla_arena_alloc(a, (size_t)(PL > 0 ? PL : 1) * sizeof(float), 64);
        if (!d_vl || (g->need_lm && !d_feats)) st = vla_error(VLA_ERR_NOMEM, "groot backward: out of memory");
        else {
            p->tops->fill(d_vl, 0.0f, PL);
            if (d_feats) p->tops->fill(d_feats, 0.0f, PL);
        }
    }
    vla_policy_ready_begin(p);
    if (st == VLA_OK) st = groot_head_backward(p, a, pk, &g->ha, g->d_pred, d_vl);
    if (st == VLA_OK && g->need_vl) st = groot_vl_backward(p, a, pk, &g->vla, d_vl, d_feats);
    if (st == VLA_OK && g->need_lm) st = groot_backbone_backward(p, a, pk, &g->bb, d_feats);
    if (st == VLA_OK) vla_policy_ready_rest(p); /* frozen stages, and what the batch did not reach */
    vla_arena_rewind(a, m);
    return st;
}

/* Sampling: pack the observations, VL features once, Euler on the head. */
typedef struct {
    vla_policy *p;
    groot_pack pk;
    const float *vl;
    float *ck, *cv; /* cross-attention K/V of the VL tokens, once per call */
    float *bucket;
    bool recompute;
} sample_ctx;

static vla_status vl_features(vla_policy *p, vla_arena *a, const groot_pack *pk, const float **vl) {
    groot_bb_acts bb;
    groot_vl_acts va;
    VLA_TRY(groot_backbone_forward(p, a, pk, false, &bb));
    VLA_TRY(groot_vl_forward(p, a, pk, bb.feats, false, &va));
    *vl = va.out;
    return VLA_OK;
}

static vla_status velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *sc = vctx;
    groot_impl *g = groot_of(sc->p);
    vla_arena_mark m = vla_arena_get_mark(&g->sarena);
    for (int32_t s = 0; s < sc->pk.S; s++) sc->bucket[s] = (float)vla_flow_time_bucket(&g->flow, t);
    const float *vl = sc->vl;
    vla_status st = VLA_OK;
    if (sc->recompute) st = vl_features(sc->p, &g->sarena, &sc->pk, &vl);
    groot_head_acts ha;
    if (st == VLA_OK) st = groot_head_forward(sc->p, &g->sarena, &sc->pk, vl, sc->bucket, x, sc->ck, sc->cv, &ha);
    if (st == VLA_OK) memcpy(v, ha.pred, (size_t)n * sizeof(float));
    vla_arena_rewind(&g->sarena, m);
    return st;
}

static vla_status sample_impl(vla_policy *p, const vla_observation *obs, float *actions, bool recompute) {
    groot_impl *g = groot_of(p);
    const vla_policy_config *c = &p->cfg;
    vla_arena *a = &g->sarena;
    arena_begin(a, &g->sarena_cap);
    int32_t S = obs->n_samples;
    if (S < 1 || !obs->state || (c->vision.cameras > 0 && !obs->images))
        return vla_error(VLA_ERR_INVALID_ARG, "groot sample_actions: need n_samples >= 1, state and images");
    int64_t cams = c->vision.cameras, H = c->action.horizon, ad = c->action.action_dim;
    int64_t img_floats = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t maxtok = c->language.max_tokens;
    int32_t *ids, *cu, *cu_img, *n_txt, *n_im;
    GROOT_ALLOC(a, ids, S * maxtok);
    GROOT_ALLOC(a, n_txt, S);
    GROOT_ALLOC(a, n_im, S);
    GROOT_ALLOC(a, cu, S + 1);
    GROOT_ALLOC(a, cu_img, S + 1);
    cu[0] = cu_img[0] = 0;
    for (int32_t s = 0; s < S; s++) {
        int64_t n = 0;
        VLA_TRY(vla_policy_tokenize(p, obs->task ? obs->task[s] : "", obs->state + s * c->action.state_dim,
                               c->action.state_dim, ids + s * maxtok, maxtok, &n));
        n_txt[s] = (int32_t)n;
        n_im[s] = 0;
        for (int64_t k = 0; k < cams; k++) n_im[s] += !obs->image_valid || obs->image_valid[s * cams + k];
        cu[s + 1] = cu[s] + (int32_t)vla_policy_sample_layout(p, n_im[s], n_txt[s], NULL, NULL, NULL);
        cu_img[s + 1] = cu_img[s] + n_im[s];
    }
    int64_t T = cu[S];
    uint8_t *roles;
    int32_t *groups, *pos, *tok;
    float *images;
    GROOT_ALLOC(a, roles, T);
    GROOT_ALLOC(a, groups, T);
    GROOT_ALLOC(a, pos, T);
    GROOT_ALLOC(a, tok, T);
    GROOT_ALLOC(a, images, (int64_t)cu_img[S] * img_floats);
    for (int32_t s = 0; s < S; s++) {
        vla_policy_sample_layout(p, n_im[s], n_txt[s], roles + cu[s], groups + cu[s], pos + cu[s]);
        int64_t ti = 0;
        for (int64_t t = cu[s]; t < cu[s + 1]; t++)
            tok[t] = roles[t] == VLA_ROLE_TEXT ? ids[s * maxtok + ti++] : 0;
        int64_t k2 = cu_img[s];
        for (int64_t k = 0; k < cams; k++)
            if (!obs->image_valid || obs->image_valid[s * cams + k])
                memcpy(images + k2++ * img_floats, obs->images + (s * cams + k) * img_floats,
                       (size_t)img_floats * sizeof(float));
    }
    vla_batch b = {0};
    b.n_samples = S, b.n_tokens = T, b.cu_seqlens = cu, b.roles = roles, b.positions = pos, b.groups = groups;
    b.token_ids = tok, b.n_images = cu_img[S], b.cu_images = cu_img, b.images = images, b.state = obs->state;
    b.embodiment = obs->embodiment;
    VLA_TRY(vla_batch_check(&b, c));
    sample_ctx sc = {p, {0}, NULL, NULL, NULL, NULL, recompute};
    VLA_TRY(make_pack(p, a, &b, &sc.pk));
    GROOT_ALLOC(a, sc.bucket, S);
    if (!recompute) {
        VLA_TRY(vl_features(p, a, &sc.pk, &sc.vl));
        VLA_TRY(groot_head_cross_kv(p, a, &sc.pk, sc.vl, &sc.ck, &sc.cv));
    }
    float *v;
    GROOT_ALLOC(a, v, S * H * ad);
    for (int32_t s = 0; s < S; s++)
        vla_flow_sample_noise(obs->seed, obs->sample_keys ? obs->sample_keys[s] : (uint64_t)s, VLA_FLOW_RNG_SAMPLING,
                              actions + s * H * ad, H * ad);
    VLA_TRY(vla_flow_euler(&g->flow, velocity, &sc, actions, v, S * H * ad));
    return VLA_OK;
}

static vla_status groot_sample(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample_impl(p, obs, actions, false);
}

vla_status vla_groot_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample_impl(p, obs, actions, true);
}

vla_status vla_groot_last_flow(vla_policy *p, const float **t, const float **noise, int32_t *n_samples) {
    groot_impl *g = groot_of(p);
    if (!g->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "groot: no loss call yet");
    *t = g->t, *noise = g->noise, *n_samples = g->pk.S;
    return VLA_OK;
}

size_t vla_groot_saved_bytes(const vla_policy *p) { return ((const groot_impl *)p->impl)->saved_bytes; }

static const vla_policy_ops groot_ops = {
    "groot", groot_destroy, NULL, NULL, NULL, /* init, tokenize, layout: policy.h defaults */
    groot_loss, groot_backward, groot_sample,
};

vla_status vla_groot_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (cfg->kind != VLA_POLICY_GROOT) return vla_error(VLA_ERR_INVALID_ARG, "groot: config %s is not GR00T", cfg->name);
    const vla_groot_head_config *h = &cfg->head;
    if (h->vl_heads * h->vl_head_dim != cfg->language.width)
        return vla_error(VLA_ERR_INVALID_ARG, "groot %s: vl_heads·vl_head_dim must equal language.width", cfg->name);
    if (cfg->action.horizon > h->max_seq_len)
        return vla_error(VLA_ERR_INVALID_ARG, "groot %s: horizon exceeds max_seq_len", cfg->name);
    vla_policy *p = calloc(1, sizeof *p);
    groot_impl *g = calloc(1, sizeof *g);
    if (!p || !g) {
        free(p), free(g);
        return vla_error(VLA_ERR_NOMEM, "groot: out of memory");
    }
    p->ops = &groot_ops;
    p->cfg = *cfg;
    p->tops = ops;
    p->tokenizer = vla_tokenizer_bytes();
    p->impl = g;
    g->cfg = &p->cfg;
    g->arena_cap = g->sarena_cap = (size_t)1 << 20;
    vla_arena_init(&g->arena, g->arena_cap);
    vla_arena_init(&g->sarena, g->sarena_cap);
    vla_flow_from_config(&g->flow, cfg);
    g->lm = calloc((size_t)(cfg->language.depth > 0 ? cfg->language.depth : 1), sizeof *g->lm);
    g->vl = calloc((size_t)(h->vl_layers > 0 ? h->vl_layers : 1), sizeof *g->vl);
    g->dit = calloc((size_t)(h->dit_layers > 0 ? h->dit_layers : 1), sizeof *g->dit);
    vla_status st = g->lm && g->vl && g->dit ? VLA_OK : vla_error(VLA_ERR_NOMEM, "groot: out of memory");
    if (st == VLA_OK) st = vla_policy_alloc_params(p);
    if (st == VLA_OK) st = bind_all(p);
    g->vit.owner = p; /* the ViT's backward reports its layers' gradients ready */
    if (st != VLA_OK) {
        groot_destroy(p);
        return vla_error_context(st, "groot %s", cfg->name);
    }
    *out = p;
    return VLA_OK;
}
