/* groot.c — the GR00T-N1.5-style policy behind policy.h: turns a packed
 * batch into the backbone's prefix and the action head's [state, future,
 * action] sequence, and runs the loss (forward keeping activations), its
 * backward, and 4-step Euler sampling with the VL features computed once per
 * sample (see groot.h; the inventory is groot_family.c). */
#include "policy/groot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/acts.h"
#include "policy/family.h"
#include "policy/groot_internal.h"
#include "policy/region.h"
#include "policy/precision.h"
#include "tensor/profile.h"

/* ---- packing --------------------------------------------------------------- */

/* The networks' view of a packed batch: index maps from the host arena ha,
 * the uploaded state and images from the backend arena a. */
static vla_status make_pack(vla_policy *p, vla_arena *ha, vla_arena *a, const vla_batch *b, groot_pack *pk) {
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
#define PACK_MAPS(X)                                                                                             \
    X(cu_pre, S + 1) X(cu_dit, S + 1) X(cu_act, S + 1) X(cu_one, S + 1) X(pre_pos, P) X(pre_group, P)            \
        X(img_rows, n_imgtok) X(txt_rows, n_txt) X(txt_ids, n_txt) X(act_pos, pk->A) X(emb, S)                   \
            X(act_rows, pk->A) X(state_rows, S) X(fut_rows, S * F) X(fut_src, S * F) X(act_sample, pk->A)
    const vla_vit_config *vc = &c->vision;
    const int64_t isz[] = {PACK_MAPS(VLA_ACTS_SIZE)};
    const int64_t fsz[] = {(int64_t)S * c->action.state_dim, n_img * vc->channels * vc->image_size * vc->image_size};
    struct {
        PACK_MAPS(VLA_ACTS_FIELD_I32)
    } m;
    float *up[2];
    VLA_TRY(vla_acts_from_arena_i32(ha, isz, VLA_ACTS_COUNT(isz), (int32_t **)&m));
    VLA_TRY(vla_acts_from_arena(a, fsz, 2, up));
    pk->cu_pre = m.cu_pre, pk->cu_dit = m.cu_dit, pk->cu_act = m.cu_act, pk->cu_one = m.cu_one;
    pk->pre_pos = m.pre_pos, pk->pre_group = m.pre_group, pk->img_rows = m.img_rows, pk->txt_rows = m.txt_rows;
    pk->txt_ids = m.txt_ids, pk->act_pos = m.act_pos, pk->emb = m.emb;
    pk->act_rows = m.act_rows, pk->state_rows = m.state_rows, pk->fut_rows = m.fut_rows, pk->fut_src = m.fut_src;
    pk->act_sample = m.act_sample;
    p->tops->to_device(up[0], b->state, (size_t)fsz[0] * sizeof(float));
    if (n_img > 0) p->tops->to_device(up[1], b->images, (size_t)fsz[1] * sizeof(float));
    pk->state = up[0], pk->images = n_img > 0 ? up[1] : NULL;
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
        int32_t d0 = pk->cu_dit[s];
        pk->state_rows[s] = d0;
        for (int64_t k = 0; k < F; k++) pk->fut_rows[s * F + k] = (int32_t)(d0 + 1 + k), pk->fut_src[s * F + k] = (int32_t)k;
        for (int64_t j = 0; j < H; j++)
            pk->act_rows[s * H + j] = (int32_t)(d0 + 1 + F + j), pk->act_sample[s * H + j] = s;
    }
    return VLA_OK;
}

/* ---- shared prefixes -------------------------------------------------------
 * A state-only batch of one task (every PushT sample: no camera, the same
 * prompt) holds S identical prefixes, and the backbone and the VL adapter
 * would compute the same rows S times — at the demo's size a sixth of the
 * step. They run once per distinct prefix instead, on upk (one sample per
 * distinct prefix); the VL tokens are copied to every sample's rows for the
 * action head (whose cross-attention stays per sample), and in backward the
 * head's gradient for those rows is summed per distinct prefix, in sample
 * order, before the VL adapter's and the backbone's backward. The result is
 * the unshared run's up to summation order (tests/policy/test_groot.c).
 * Prefixes with image rows are never compared: frames differ. */

static bool same_prefix(const groot_pack *pk, int32_t a, int32_t b) {
    int32_t a0 = pk->cu_pre[a], b0 = pk->cu_pre[b], n = pk->cu_pre[a + 1] - a0;
    if (pk->cu_pre[b + 1] - b0 != n) return false;
    /* without images every prefix row is a text row, text index = row */
    for (int32_t i = 0; i < n; i++)
        if (pk->txt_ids[a0 + i] != pk->txt_ids[b0 + i] || pk->pre_pos[a0 + i] != pk->pre_pos[b0 + i] ||
            pk->pre_group[a0 + i] != pk->pre_group[b0 + i])
            return false;
    return true;
}

/* g->ppk: the pack the prefix stages run on (g->upk when samples share);
 * the maps go to the host arena a. */
static vla_status share_prefixes(groot_impl *g, vla_arena *a) {
    const groot_pack *pk = &g->pk;
    g->ppk = pk;
    g->prefix_of = NULL;
    g->spread_src = NULL;
    if (!g->share_prefixes || pk->n_img > 0 || pk->S < 2) return VLA_OK;
    const int64_t isz[] = {pk->S, pk->S};
    int32_t *m[2];
    VLA_TRY(vla_acts_from_arena_i32(a, isz, 2, m));
    int32_t *of = m[0], *first = m[1], U = 0; /* first[u]: the pk sample that stands for distinct prefix u */
    int64_t P = 0;
    for (int32_t s = 0; s < pk->S; s++) {
        int32_t u = 0;
        while (u < U && !same_prefix(pk, first[u], s)) u++;
        if (u == U) first[U++] = s, P += pk->cu_pre[s + 1] - pk->cu_pre[s];
        of[s] = u;
    }
    if (U == pk->S) return VLA_OK;
    groot_pack *u = &g->upk;
    memset(u, 0, sizeof *u);
    u->S = U, u->P = u->n_txt = P;
    const int64_t usz[] = {U + 1, P, P, P, P};
    int32_t *um[5];
    VLA_TRY(vla_acts_from_arena_i32(a, usz, 5, um));
    u->cu_pre = um[0], u->pre_pos = um[1], u->pre_group = um[2], u->txt_rows = um[3], u->txt_ids = um[4];
    u->cu_pre[0] = 0;
    for (int32_t k = 0; k < U; k++) {
        int32_t s0 = pk->cu_pre[first[k]], n = pk->cu_pre[first[k] + 1] - s0, r0 = u->cu_pre[k];
        for (int32_t i = 0; i < n; i++) {
            u->pre_pos[r0 + i] = pk->pre_pos[s0 + i], u->pre_group[r0 + i] = pk->pre_group[s0 + i];
            u->txt_rows[r0 + i] = r0 + i, u->txt_ids[r0 + i] = pk->txt_ids[s0 + i];
        }
        u->cu_pre[k + 1] = r0 + n;
    }
    g->ppk = u;
    g->prefix_of = of;
    /* every pk prefix row → the upk row it shares (spread_prefix_rows and its backward) */
    const int64_t ssz[] = {pk->P};
    VLA_TRY(vla_acts_from_arena_i32(a, ssz, 1, &g->spread_src));
    for (int32_t s = 0; s < pk->S; s++)
        for (int32_t r = pk->cu_pre[s]; r < pk->cu_pre[s + 1]; r++)
            g->spread_src[r] = u->cu_pre[of[s]] + (r - pk->cu_pre[s]);
    return VLA_OK;
}

/* The VL tokens the head reads: *vl itself when nothing was shared, else
 * every sample's rows [pk->P, L] copied (in g->arena) from the distinct
 * prefixes' [upk->P, L]. */
static vla_status spread_prefix_rows(groot_impl *g, int64_t L, const float **vl) {
    const groot_pack *pk = &g->pk, *u = g->ppk;
    if (u == pk) return VLA_OK;
    const int64_t sizes[] = {pk->P * L};
    float *dst;
    VLA_TRY(vla_acts_from_arena(&g->arena, sizes, 1, &dst));
    g->ops->copy_rows(dst, L, NULL, *vl, L, g->spread_src, pk->P, L, 1.0f);
    *vl = dst;
    return VLA_OK;
}

/* Its backward: dst [upk->P, L] = Σ over the samples sharing each prefix, in sample order. */
static void gather_prefix_grads(const groot_impl *g, const vla_ops *ops, int64_t L, const float *src, float *dst) {
    const groot_pack *pk = &g->pk, *u = g->ppk;
    ops->fill(dst, 0.0f, u->P * L);
    ops->add_rows(dst, L, g->spread_src, src, L, NULL, pk->P, L, 1.0f);
}

/* Model FLOPs of one forward (2·weights·tokens per matrix + attention). */
static double forward_flops(const vla_policy *p, const groot_pack *pk, const groot_pack *ppk) {
    const vla_policy_config *c = &p->cfg;
    double f = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *s = &p->specs.items[i];
        double tok = 0;
        switch (s->apply) {
        case VLA_APPLY_IMAGE: tok = (double)pk->n_img_tok; break;
        /* the LM and VL adapter run on the distinct prefixes; the DiT's cross K/V on every sample's rows */
        case VLA_APPLY_PREFIX: tok = (double)(s->group == VLA_GROUP_EXPERT ? pk->P : ppk->P); break;
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
        nn += ns * ns, np += ns * ps;
    }
    for (int32_t s = 0; s < ppk->S; s++) {
        double ps = ppk->cu_pre[s + 1] - ppk->cu_pre[s];
        pp += ps * ps;
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

static void groot_destroy(vla_policy *p) {
    groot_impl *g = groot_of(p);
    if (g) {
        vla_vit_release(&g->W.vit);
        vla_arena_free(&g->arena);
        vla_arena_free(&g->sarena);
        vla_arena_free(&g->harena);
        vla_arena_free(&g->sharena);
        vla_arena_free(&g->params_arena);
        vla_region_outs_free(g->prefix_outs);
        vla_region_outs_free(g->train_fwd_outs);
        vla_region_outs_free(g->train_bwd_outs);
        vla_region_outs_free(g->backbone_outs);
        free(g);
    }
    vla_policy_free_params(p);
    free(p);
}

/* The flow draws of a loss call: time, bucket, noise, x_t, target (and room
 * for ∂loss/∂prediction). */
static vla_status flow_draws(vla_policy *p, groot_impl *g, const vla_batch *b, float **bucket, float **x_t,
                             double *tsum) {
    const groot_pack *pk = &g->pk;
    const vla_ops *ops = p->tops;
    int32_t S = pk->S;
    int64_t H = p->cfg.action.horizon, ad = p->cfg.action.action_dim, A = pk->A;
    /* the draws on the host (kept for vla_groot_last_flow), then uploaded */
    const int64_t hsz[] = {S, S, A * ad};
    float *h[3];
    VLA_TRY(vla_acts_from_arena(&g->harena, hsz, 3, h));
    g->t = h[0], g->noise = h[2];
    float *hbucket = h[1];
#define LOSS_TABLE(X) X(bucket, S) X(actions, A * ad) X(noise, A * ad) X(target, A * ad) X(d_pred, A * ad) X(x_t, A * ad)
    const int64_t sizes[] = {LOSS_TABLE(VLA_ACTS_SIZE)};
    struct {
        LOSS_TABLE(VLA_ACTS_FIELD)
    } t;
    VLA_TRY(vla_acts_from_arena(&g->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&t));
    g->target = t.target, g->d_pred = t.d_pred;
    *bucket = t.bucket, *x_t = t.x_t, *tsum = 0;
    for (int32_t s = 0; s < S; s++) {
        uint64_t key = b->sample_keys ? b->sample_keys[s] : (uint64_t)s;
        g->t[s] = vla_flow_sample_time(&g->flow, b->seed, key);
        hbucket[s] = (float)vla_flow_time_bucket(&g->flow, g->t[s]);
        vla_flow_sample_noise(b->seed, key, VLA_FLOW_RNG_NOISE, g->noise + s * H * ad, H * ad);
        *tsum += g->t[s];
    }
    ops->to_device(t.bucket, hbucket, (size_t)S * sizeof(float));
    ops->to_device(t.actions, b->actions, (size_t)(A * ad) * sizeof(float));
    ops->to_device(t.noise, g->noise, (size_t)(A * ad) * sizeof(float));
    ops->flow_interpolate(VLA_FLOW_GROOT, t.x_t, g->target, t.actions, t.noise, g->t, S, H * ad);
    return VLA_OK;
}

/* What a training forward's stacks keep for the backward (policy.h's
 * recompute_layers: each layer's input only). */
static vla_block_keep train_keep(const vla_policy *p) {
    return p->recompute_layers ? VLA_STACK_RECOMPUTE : VLA_STACK_ALL;
}

/* k with the index maps the prefix (ViT, LM, VL adapter) follows: token ranges, positions, groups, the
 * image and text rows, the token ids, the embodiments (a NULL map keys as zeros) */
static void prefix_maps_key(const groot_pack *pk, vla_key *k) {
    const int64_t S = pk->S;
    const struct {
        const int32_t *a;
        int64_t n;
    } maps[] = {{pk->cu_pre, S + 1},      {pk->cu_one, S + 1},           {pk->pre_pos, pk->P},
                {pk->pre_group, pk->P},   {pk->img_rows, pk->n_img_tok}, {pk->txt_rows, pk->n_txt},
                {pk->txt_ids, pk->n_txt}, {pk->emb, S}};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) vla_key_add_i32s(k, maps[i].a, maps[i].n);
}

/* ---- a training step's captured regions ----------------------------------------------------
 * The trainable part of a loss call — the VL adapter, the prefix rows' spread and the action head —
 * and of its backward run as two captured regions (tensor/ops.h, run_captured; cuda: two graphs per
 * micro-batch where there were ~40 launches per DiT layer). What varies from batch to batch stays
 * outside them: the uploads and the flow draws (make_pack, flow_draws), the loss (its pad masks)
 * and the optimizer (its step's learning rate); the frozen backbone is a region of its own, keyed by
 * the prompt's token ids too, with its own trial (policy/region.h). Inside, the ops follow from what the key holds: the packs' sizes and index maps,
 * the addresses they read and write (the features, the flow's buffers, the arena's next block, the
 * gradient buffers), which stages train and keep what, and the weight copies' state — which the
 * step brings up to date before its regions (vla_policy_weights_refresh, train/step.c), so the key
 * is the same step after step and a device replays its recordings (FP8's too: its scales and
 * amaxes are backend memory the ops alone read and write). A step with a gradient-ready hook (the all-reduce buckets of several
 * ranks) runs the backward plainly: its hooks are host calls. */

/* The frozen backbone's key: the prefix pack's sizes and index maps (the prompt's token ids among them),
 * the images' and the features' addresses, where its blocks start in the scratch arena, the copies. */
static void frozen_backbone_key(vla_policy *p, groot_impl *g, const float *f, vla_key *k) {
    const groot_pack *pk = g->ppk;
    if (!vla_train_regions_open(&g->backbone_trial)) {
        k->failed = true;
        return;
    }
    struct {
        char tag[16];
        int64_t S, P, n_img, n_img_tok, n_txt;
        const void *images, *f, *at;
    } head;
    memset(&head, 0, sizeof head);
    memcpy(head.tag, "groot frozen bb", 15);
    head.S = pk->S, head.P = pk->P, head.n_img = pk->n_img, head.n_img_tok = pk->n_img_tok, head.n_txt = pk->n_txt;
    head.images = pk->images, head.f = f, head.at = vla_arena_next_block(&g->sarena, 64);
    vla_key_add(k, &head, sizeof head);
    vla_policy_region_key_add(p, k);
    prefix_maps_key(pk, k);
}

typedef struct {
    vla_policy *p;
    groot_impl *g;
    float *f;
} frozen_backbone;

/* the frozen backbone's forward in the scratch arena, its features copied to f */
static vla_status frozen_backbone_body(void *v) {
    frozen_backbone *r = v;
    groot_bb_acts bb;
    VLA_TRY(vla_groot_backbone_forward(r->p, &r->g->sarena, r->g->ppk, VLA_STACK_NONE, &bb));
    r->p->tops->copy(r->f, bb.feats, r->g->ppk->P * r->p->cfg.language.width);
    return VLA_OK;
}

/* The backbone's output; a frozen backbone runs in the scratch arena and
 * only its output is kept. */
static vla_status backbone_features(vla_policy *p, groot_impl *g, const float **feats) {
    const groot_pack *pk = g->ppk;
    if (g->need_lm) {
        VLA_TRY(vla_groot_backbone_forward(p, &g->arena, pk, train_keep(p), &g->bb));
        *feats = g->bb.feats;
        return VLA_OK;
    }
    const int64_t sizes[] = {pk->P * p->cfg.language.width};
    float *f;
    VLA_TRY(vla_acts_from_arena(&g->arena, sizes, 1, &f));
    vla_arena_begin_call(&g->sarena);
    /* a captured region of its own (above): its ops follow from the prompt's
     * token ids too, so a dataset of many prompts gives this one up and keeps the head's */
    vla_key key = {0};
    frozen_backbone_key(p, g, f, &key);
    vla_region_trial_check(&g->backbone_trial, g->backbone_outs, &key, "groot backbone");
    frozen_backbone r = {p, g, f};
    VLA_TRY(vla_region_run(p->tops, &g->backbone_outs, &key, &g->sarena, frozen_backbone_body, &r, NULL, 0));
    vla_arena_reset(&g->sarena);
    memset(&g->bb, 0, sizeof g->bb);
    *feats = f;
    return VLA_OK;
}

/* k with what both training regions depend on (see above); the key of `tag` */
static void train_key(vla_policy *p, const groot_impl *g, const char *tag, const void *const *ptrs, int n_ptrs,
                      vla_key *k) {
    const groot_pack *pk = &g->pk, *u = g->ppk;
    if (!vla_train_regions_open(&g->train_trial)) {
        k->failed = true;
        return;
    }
    const int64_t S = pk->S, F = pk->A > 0 && S > 0 ? (pk->N - pk->A) / S - 1 : 0;
    struct {
        char tag[16];
        int64_t S, P, N, A, F, US, UP, need_vl, need_lm, recompute;
        const void *at;
    } head;
    memset(&head, 0, sizeof head);
    snprintf(head.tag, sizeof head.tag, "%s", tag);
    head.S = S, head.P = pk->P, head.N = pk->N, head.A = pk->A, head.F = F, head.US = u->S, head.UP = u->P;
    head.need_vl = g->need_vl, head.need_lm = g->need_lm, head.recompute = p->recompute_layers;
    head.at = vla_arena_next_block((vla_arena *)&g->arena, 64); /* where the body's blocks start */
    vla_key_add(k, &head, sizeof head);
    vla_key_add(k, ptrs, (size_t)n_ptrs * sizeof *ptrs);
    vla_policy_region_key_add(p, k);
    const struct {
        const int32_t *a;
        int64_t n;
    } maps[] = {{pk->cu_pre, S + 1},      {pk->cu_dit, S + 1},    {pk->cu_act, S + 1},  {pk->cu_one, S + 1},
                {pk->pre_pos, pk->P},     {pk->pre_group, pk->P}, {pk->act_pos, pk->A}, {pk->emb, S},
                {pk->act_rows, pk->A},    {pk->state_rows, S},    {pk->fut_rows, S * F}, {pk->fut_src, S * F},
                {pk->act_sample, pk->A},  {u->cu_pre, u->S + 1},  {u->pre_pos, u->P},   {u->pre_group, u->P},
                {g->spread_src, u == pk ? 0 : pk->P}};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) vla_key_add_i32s(k, maps[i].a, maps[i].n);
}

typedef struct {
    vla_policy *p;
    groot_impl *g;
    const float *feats, *bucket, *x_t;
    struct {
        groot_vl_acts vla;
        groot_head_acts ha;
    } out;
} train_fwd;

static vla_status train_fwd_body(void *v) {
    train_fwd *r = v;
    vla_policy *p = r->p;
    groot_impl *g = r->g;
    VLA_TRY(vla_groot_vl_forward(p, &g->arena, g->ppk, r->feats, g->need_vl ? train_keep(p) : VLA_STACK_NONE,
                                 &r->out.vla));
    const float *vl = r->out.vla.out;
    VLA_TRY(spread_prefix_rows(g, p->cfg.language.width, &vl));
    return vla_groot_head_forward(p, &g->arena, &g->pk, vl, r->bucket, r->x_t, NULL, NULL, &r->out.ha);
}

/* The loss call's VL adapter and action head: g->vla, g->ha. */
static vla_status train_forward(vla_policy *p, groot_impl *g, const float *feats, const float *bucket,
                                const float *x_t) {
    train_fwd r = {.p = p, .g = g, .feats = feats, .bucket = bucket, .x_t = x_t};
    memset(&r.out, 0, sizeof r.out); /* padding too: the outputs are kept and keyed as bytes */
    const void *ptrs[] = {feats, bucket, x_t, g->pk.state, g->target};
    vla_key key = {0};
    train_key(p, g, "groot train fwd", ptrs, (int)(sizeof ptrs / sizeof ptrs[0]), &key);
    vla_region_trial_check(&g->train_trial, g->train_fwd_outs, &key, "groot"); /* layouts that do not repeat */
    g->dit_recompute = p->recompute_layers; /* the head forward's host setting, also on a replay */
    VLA_TRY(vla_region_run(p->tops, &g->train_fwd_outs, &key, &g->arena, train_fwd_body, &r, &r.out, sizeof r.out));
    g->vla = r.out.vla, g->ha = r.out.ha;
    return VLA_OK;
}

static vla_status groot_loss(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info) {
    groot_impl *g = groot_of(p);
    const vla_policy_config *c = &p->cfg;
    (void)training; /* no dropout (groot.h) */
    g->have_fwd = false;
    vla_arena_begin_call(&g->arena);
    vla_arena_reset(&g->harena);
    VLA_TRY(vla_batch_check(b, c));
    if (!b->actions) return vla_error(VLA_ERR_INVALID_ARG, "groot loss: batch has no actions");
    groot_pack *pk = &g->pk;
    VLA_TRY(make_pack(p, &g->harena, &g->arena, b, pk));
    float *bucket, *x_t;
    double tsum;
    VLA_TRY(flow_draws(p, g, b, &bucket, &x_t, &tsum));
    VLA_TRY(share_prefixes(g, &g->harena));
    const float *feats;
    VLA_TRY(backbone_features(p, g, &feats));
    VLA_TRY(train_forward(p, g, feats, bucket, x_t));
    double loss = vla_flow_masked_mse(p->tops, g->ha.pred, g->target, pk->S, c->action.horizon, c->action.action_dim,
                                      b->action_is_pad, b->real_action_dim, VLA_MSE_MEAN_REAL, b->loss_divisor,
                                      g->d_pred, p->loss_sum);
    g->have_fwd = true;
    g->saved_bytes = g->arena.used_total;
    p->act_peak_bytes = g->arena.peak + g->sarena.peak;
    if (info) {
        memset(info, 0, sizeof *info);
        info->loss = loss;
        info->real_entries = vla_batch_real_entries(b, c);
        info->mean_time = tsum / pk->S;
        info->tokens = pk->P + pk->N;
        info->flops = forward_flops(p, pk, g->ppk);
    }
    return VLA_OK;
}

/* The backward's region (a training step's captured regions, above): the head's, the prefix rows'
 * sum and the VL adapter's backward, into d_feats. */
typedef struct {
    vla_policy *p;
    groot_impl *g;
    float *d_vl, *d_shared, *d_feats;
} train_bwd;

static vla_status train_bwd_body(void *v) {
    train_bwd *r = v;
    vla_policy *p = r->p;
    groot_impl *g = r->g;
    int64_t L = p->cfg.language.width;
    float *d_vl = r->d_vl;
    if (d_vl) p->tops->fill(d_vl, 0.0f, g->pk.P * L);
    if (r->d_feats) p->tops->fill(r->d_feats, 0.0f, g->ppk->P * L);
    VLA_TRY(vla_groot_head_backward(p, &g->arena, &g->pk, &g->ha, g->d_pred, d_vl));
    if (g->need_vl && g->ppk != &g->pk) {
        gather_prefix_grads(g, p->tops, L, d_vl, r->d_shared);
        d_vl = r->d_shared;
    }
    if (g->need_vl) VLA_TRY(vla_groot_vl_backward(p, &g->arena, g->ppk, &g->vla, d_vl, r->d_feats));
    return VLA_OK;
}

static vla_status backward_in(vla_policy *p, groot_impl *g) {
    vla_arena *a = &g->arena;
    const groot_pack *pk = &g->pk, *ppk = g->ppk;
    int64_t L = p->cfg.language.width, PL = pk->P * L, UL = ppk->P * L;
    bool shared = ppk != pk;
    const int64_t sizes[] = {g->need_vl ? PL : 0, g->need_vl && shared ? UL : 0, g->need_lm ? UL : 0};
    float *d[3];
    VLA_TRY(vla_acts_from_arena(a, sizes, 3, d));
    train_bwd r = {p, g, d[0], d[1], d[2]};
    vla_policy_ready_begin(p);
    const void *ptrs[] = {d[0], d[1], d[2], g->d_pred, p->grads, g->ha.pred};
    vla_key key = {0};
    if (p->grad_ready) key.failed = true;
    else train_key(p, g, "groot train bwd", ptrs, (int)(sizeof ptrs / sizeof ptrs[0]), &key);
    vla_key_add(&key, &g->ha, sizeof g->ha); /* the forward's activations it reads, by address */
    vla_key_add(&key, &g->vla, sizeof g->vla);
    VLA_TRY(vla_region_run(p->tops, &g->train_bwd_outs, &key, a, train_bwd_body, &r, NULL, 0));
    if (g->need_lm) VLA_TRY(vla_groot_backbone_backward(p, a, ppk, &g->bb, d[2]));
    vla_policy_ready_rest(p); /* frozen stages, and what the batch did not reach */
    return VLA_OK;
}

static vla_status groot_backward(vla_policy *p) {
    groot_impl *g = groot_of(p);
    if (!g->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "groot backward: no loss to differentiate");
    vla_arena_mark m = vla_arena_get_mark(&g->arena);
    vla_status st = backward_in(p, g);
    p->act_peak_bytes = g->arena.peak + g->sarena.peak;
    vla_arena_rewind(&g->arena, m);
    return st;
}

/* Sampling: pack the observations, VL features once, Euler on the head. */
typedef struct {
    vla_policy *p;
    groot_pack pk;
    const float *vl;
    float *ck, *cv; /* cross-attention K/V of the VL tokens, once per call */
    float *bucket;  /* [S] backend */
    float *hbucket; /* [S] host */
    bool recompute;
} sample_ctx;

static vla_status vl_features(vla_policy *p, vla_arena *a, const groot_pack *pk, const float **vl) {
    groot_bb_acts bb;
    groot_vl_acts va;
    VLA_TRY(vla_groot_backbone_forward(p, a, pk, VLA_STACK_NONE, &bb));
    VLA_TRY(vla_groot_vl_forward(p, a, pk, bb.feats, VLA_STACK_NONE, &va));
    *vl = va.out;
    return VLA_OK;
}

static vla_status velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *sc = vctx;
    groot_impl *g = groot_of(sc->p);
    vla_arena_mark m = vla_arena_get_mark(&g->sarena);
    for (int32_t s = 0; s < sc->pk.S; s++) sc->hbucket[s] = (float)vla_flow_time_bucket(&g->flow, t);
    sc->p->tops->to_device(sc->bucket, sc->hbucket, (size_t)sc->pk.S * sizeof(float));
    const float *vl = sc->vl;
    vla_status st = VLA_OK;
    if (sc->recompute) st = vl_features(sc->p, &g->sarena, &sc->pk, &vl);
    groot_head_acts ha;
    if (st == VLA_OK) st = vla_groot_head_forward(sc->p, &g->sarena, &sc->pk, vl, sc->bucket, x, sc->ck, sc->cv, &ha);
    if (st == VLA_OK) sc->p->tops->copy(v, ha.pred, n);
    vla_arena_rewind(&g->sarena, m);
    return st;
}

/* RTC's velocity field (flow.h vla_flow_field): each velocity call keeps its
 * activations for a VJP that may follow, and computes the cross K/V itself
 * (the head's backward reads them as activations; the numbers equal the cached ones). */
typedef struct {
    sample_ctx *sc;
    groot_head_acts ha;
    vla_arena_mark mark;
} field_ctx;

static vla_status field_velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    field_ctx *fc = vctx;
    groot_impl *g = groot_of(fc->sc->p);
    vla_arena_rewind(&g->sarena, fc->mark); /* the previous step's activations */
    for (int32_t s = 0; s < fc->sc->pk.S; s++) fc->sc->hbucket[s] = (float)vla_flow_time_bucket(&g->flow, t);
    fc->sc->p->tops->to_device(fc->sc->bucket, fc->sc->hbucket, (size_t)fc->sc->pk.S * sizeof(float));
    VLA_TRY(vla_groot_head_forward(fc->sc->p, &g->sarena, &fc->sc->pk, fc->sc->vl, fc->sc->bucket, x, NULL, NULL, &fc->ha));
    fc->sc->p->tops->copy(v, fc->ha.pred, n);
    return VLA_OK;
}

static vla_status field_vjp(void *vctx, const float *cot, float *out, int64_t n) {
    field_ctx *fc = vctx;
    (void)n;
    return vla_groot_head_vjp(fc->sc->p, &groot_of(fc->sc->p)->sarena, &fc->sc->pk, &fc->ha, cot, out);
}

/* The Euler loop as a captured region (policy/flow.h). The head's ops follow from the pack's sizes and
 * the index maps they upload (token ranges, rows, positions, embodiments); they read the batch's state,
 * the VL tokens and their cross K/V, and the step's buffers in the arena, by address. */
static vla_status euler_captured(vla_policy *p, sample_ctx *sc, float *x, float *v, int64_t n) {
    groot_impl *g = groot_of(p);
    const groot_pack *pk = &sc->pk;
    const void *at = vla_arena_next_block(&g->sarena, 64); /* where each step's activations start */
    const int64_t S = pk->S, F = pk->A > 0 && S > 0 ? (pk->N - pk->A) / S - 1 : 0;
    struct {
        int64_t P, N, A, F;
        const void *state, *vl, *ck, *cv, *bucket;
    } head;
    memset(&head, 0, sizeof head);
    head.P = pk->P, head.N = pk->N, head.A = pk->A, head.F = F;
    head.state = pk->state, head.vl = sc->vl, head.ck = sc->ck, head.cv = sc->cv, head.bucket = sc->bucket;
    const struct {
        const int32_t *a;
        int64_t n;
    } maps[] = {{pk->cu_pre, S + 1},    {pk->cu_dit, S + 1},    {pk->cu_act, S + 1},  {pk->cu_one, S + 1},
                {pk->pre_group, pk->P}, {pk->act_pos, pk->A},   {pk->emb, S},         {pk->act_rows, pk->A},
                {pk->state_rows, S},    {pk->fut_rows, S * F},  {pk->fut_src, S * F}, {pk->act_sample, pk->A}};
    vla_key key = {0};
    vla_key_add(&key, &head, sizeof head);
    vla_policy_region_key_add(p, &key);
    vla_key_add(&key, &at, sizeof at);
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) vla_key_add_i32s(&key, maps[i].a, maps[i].n);
    vla_flow_chunk chunk = {x, v, n};
    return vla_flow_euler_captured(p->tops, &g->flow, velocity, sc, &chunk, n, &key);
}

/* The prefix — ViT, the LM layers, the VL adapter and (for plain Euler) every cross block's K/V of the
 * VL tokens — as a captured region with host outputs (policy/region.h): a chunk is then two launches on
 * cuda, as π0.5's. Its ops follow from the pack's sizes and index maps (the prompt's token ids among
 * them: another prompt is another recording) and read the images (uploaded before it, by make_pack)
 * and the weights' copies by address; what it carves from the arena starts at the key's address. */
typedef struct {
    vla_policy *p;
    vla_arena *a;
    const groot_pack *pk;
    bool kv;
    struct {
        const float *vl;
        float *ck, *cv;
    } out;
} prefix_region;

static vla_status prefix_body(void *vr) {
    prefix_region *r = vr;
    r->out.ck = r->out.cv = NULL;
    VLA_TRY(vl_features(r->p, r->a, r->pk, &r->out.vl));
    if (r->kv) VLA_TRY(vla_groot_head_cross_kv(r->p, r->a, r->pk, r->out.vl, &r->out.ck, &r->out.cv));
    return VLA_OK;
}

static vla_status prefix_captured(vla_policy *p, sample_ctx *sc, vla_arena *a, bool kv) {
    groot_impl *g = groot_of(p);
    const groot_pack *pk = &sc->pk;
    struct {
        int64_t S, P, n_img, n_img_tok, n_txt, N, A, kv;
        const void *images, *at;
    } head;
    memset(&head, 0, sizeof head);
    head.S = pk->S, head.P = pk->P, head.n_img = pk->n_img, head.n_img_tok = pk->n_img_tok, head.n_txt = pk->n_txt;
    head.N = pk->N, head.A = pk->A, head.kv = kv, head.images = pk->images;
    head.at = vla_arena_next_block(a, 64); /* where the body's blocks start */
    vla_key key = {0};
    vla_key_add(&key, "groot prefix", 12);
    vla_key_add(&key, &head, sizeof head);
    vla_policy_region_key_add(p, &key);
    prefix_maps_key(pk, &key);
    prefix_region r = {p, a, pk, kv, {NULL, NULL, NULL}};
    VLA_TRY(vla_region_run(p->tops, &g->prefix_outs, &key, a, prefix_body, &r, &r.out, sizeof r.out));
    sc->vl = r.out.vl, sc->ck = r.out.ck, sc->cv = r.out.cv;
    return VLA_OK;
}

/* integ NULL: plain Euler (sample_actions); else the caller's integrator on the field above. */
static vla_status sample_packed(vla_policy *p, const vla_observation *obs, const vla_batch *b, float *actions,
                                bool recompute, vla_flow_integrator integ, void *user) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    vla_arena *a = &g->sarena;
    int32_t S = obs->n_samples;
    int64_t H = p->cfg.action.horizon, ad = p->cfg.action.action_dim;
    VLA_TRY(vla_batch_check(b, &p->cfg));
    sample_ctx sc = {p, {0}, NULL, NULL, NULL, NULL, NULL, recompute};
    VLA_TRY(make_pack(p, &g->sharena, a, b, &sc.pk));
    const int64_t sizes[] = {S, S * H * ad, S * H * ad}, hsz[] = {S};
    float *t[3];
    VLA_TRY(vla_acts_from_arena(a, sizes, 3, t));
    VLA_TRY(vla_acts_from_arena(&g->sharena, hsz, 1, &sc.hbucket));
    sc.bucket = t[0];
    vla_profile_phase("prefix");
    if (!recompute) VLA_TRY(prefix_captured(p, &sc, a, !integ));
    vla_profile_phase("flow");
    /* the starting noise on the host (into `actions`), integrated in backend memory */
    for (int32_t s = 0; s < S; s++)
        vla_flow_sample_noise(obs->seed, obs->sample_keys ? obs->sample_keys[s] : (uint64_t)s, VLA_FLOW_RNG_SAMPLING,
                              actions + s * H * ad, H * ad);
    float *x = t[2];
    ops->to_device(x, actions, (size_t)(S * H * ad) * sizeof(float));
    if (!integ && !recompute) {
        VLA_TRY(euler_captured(p, &sc, x, t[1], S * H * ad));
    } else if (!integ) { /* the uncached reference recomputes the prefix per step: left plain */
        VLA_TRY(vla_flow_euler(ops, &g->flow, velocity, &sc, x, t[1], S * H * ad));
    } else {
        field_ctx fc = {&sc, {0}, vla_arena_get_mark(a)};
        vla_flow_field field = {field_velocity, field_vjp, &fc, ops};
        VLA_TRY(integ(user, &g->flow, &field, x, S * H * ad));
    }
    p->act_peak_bytes = g->arena.peak + g->sarena.peak; /* a chunk's, as a step's (policy.h) */
    vla_profile_phase("readback");
    ops->to_host(actions, x, (size_t)(S * H * ad) * sizeof(float));
    return VLA_OK;
}

static vla_status sample_impl(vla_policy *p, const vla_observation *obs, float *actions, bool recompute,
                              vla_flow_integrator integ, void *user) {
    groot_impl *g = groot_of(p);
    const vla_policy_config *c = &p->cfg;
    vla_arena_begin_call(&g->sarena);
    vla_arena_reset(&g->sharena);
    if (!obs || obs->n_samples < 1 || !obs->state || (c->vision.cameras > 0 && !obs->images))
        return vla_error(VLA_ERR_INVALID_ARG, "groot sample_actions: need n_samples >= 1, state and images");
    vla_obs_pack o;
    vla_profile_phase("inputs"); /* a profile's phases (tensor/profile.h): inputs, prefix, flow, readback */
    VLA_TRY(vla_obs_pack_build(p, obs, true, &o));
    vla_status st = sample_packed(p, obs, &o.b, actions, recompute, integ, user);
    vla_profile_phase(NULL);
    vla_obs_pack_free(&o);
    return st;
}

static vla_status groot_sample_with(vla_policy *p, const vla_observation *obs, vla_flow_integrator integ, void *user,
                                    float *actions) {
    return sample_impl(p, obs, actions, false, integ, user);
}

static vla_status groot_sample(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample_impl(p, obs, actions, false, NULL, NULL);
}

vla_status vla_groot_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample_impl(p, obs, actions, true, NULL, NULL);
}

vla_status vla_groot_last_flow(vla_policy *p, const float **t, const float **noise, int32_t *n_samples) {
    groot_impl *g = groot_of(p);
    if (!g->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "groot: no loss call yet");
    *t = g->t, *noise = g->noise, *n_samples = g->pk.S;
    return VLA_OK;
}

size_t vla_groot_saved_bytes(const vla_policy *p) { return ((const groot_impl *)p->impl)->saved_bytes; }

void vla_groot_set_share_prefixes(vla_policy *p, bool on) { groot_of(p)->share_prefixes = on; }

int32_t vla_groot_last_prefix_count(const vla_policy *p) {
    const groot_impl *g = p->impl;
    return g->have_fwd && g->ppk ? g->ppk->S : 0;
}

static const vla_policy_ops groot_ops = {
    "groot", groot_destroy, NULL, NULL, NULL, /* init, tokenize, layout: the family's */
    groot_loss, groot_backward, groot_sample, groot_sample_with,
};

/* The layers as blocks: Qwen3 (backbone), the VL adapter's, the DiT's (self and cross). */
static void block_configs(groot_impl *g, const vla_policy_config *c) {
    const vla_lm_config *l = &c->language;
    const vla_groot_head_config *h = &c->head;
    vla_block_config b = {0};
    b.dim = l->width;
    b.norm1 = b.norm2 = VLA_BLOCK_NORM_RMS;
    b.norm_eps = (float)l->norm_eps;
    b.attn = (vla_attn_config){.n_heads = (int32_t)l->heads, .n_kv_heads = (int32_t)l->kv_heads,
                               .head_dim = (int32_t)l->head_dim};
    b.qk_norm = l->qk_norm;
    b.rope_theta = l->rope_theta;
    b.mlp = (vla_mlp_config){.gated = true, .act = VLA_ACT_SILU, .dim = l->width, .hidden = l->mlp};
    g->lm_cfg = b;
    memset(&b, 0, sizeof b);
    b.dim = l->width;
    b.norm1 = b.norm2 = VLA_BLOCK_NORM_LAYER;
    b.norm_eps = 1e-5f; /* diffusers / nn.LayerNorm default */
    b.attn = (vla_attn_config){.n_heads = (int32_t)h->vl_heads, .n_kv_heads = (int32_t)h->vl_heads,
                               .head_dim = (int32_t)h->vl_head_dim};
    b.qkv_bias = b.o_bias = b.mlp_bias = true;
    b.mlp = (vla_mlp_config){.gated = false, .act = VLA_ACT_GELU_TANH, .dim = l->width, .hidden = h->ff_mult * l->width};
    g->vl_cfg = b;
    int64_t D = h->dit_heads * h->dit_head_dim;
    b.dim = b.cond_dim = D;
    b.norm1 = VLA_BLOCK_NORM_ADALN, b.norm2 = VLA_BLOCK_NORM_LAYER_PLAIN;
    b.attn = (vla_attn_config){.n_heads = (int32_t)h->dit_heads, .n_kv_heads = (int32_t)h->dit_heads,
                               .head_dim = (int32_t)h->dit_head_dim};
    b.mlp = (vla_mlp_config){.gated = false, .act = VLA_ACT_GELU_TANH, .dim = D, .hidden = h->ff_mult * D};
    g->dit_self = b;
    b.cross = true, b.kv_dim = l->width;
    g->dit_cross = b;
}

/* Which stages run backward: a stage iff it or something upstream trains. */
static void gradient_flow(vla_policy *p, groot_impl *g) {
    bool tr[VLA_GROUP_COUNT] = {false};
    for (int64_t i = 0; i < p->specs.n; i++)
        if (p->specs.items[i].trainable) tr[p->specs.items[i].group] = true;
    g->need_vision = tr[VLA_GROUP_VISION];
    g->need_conn = g->need_vision || tr[VLA_GROUP_CONNECTOR];
    g->need_lm = g->need_conn || tr[VLA_GROUP_LANGUAGE];
    g->need_vl = g->need_lm || tr[VLA_GROUP_VL_ADAPTER];
}

vla_status vla_groot_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (cfg->family != &vla_groot_family)
        return vla_error(VLA_ERR_INVALID_ARG, "groot: config %s is not GR00T", cfg->name);
    vla_policy *p = calloc(1, sizeof *p);
    groot_impl *g = calloc(1, sizeof *g);
    if (!p || !g) {
        free(p), free(g);
        return vla_error(VLA_ERR_NOMEM, "groot: out of memory");
    }
    p->ops = &groot_ops;
    p->cfg = *cfg;
    p->tops = ops;
    p->impl = g;
    g->cfg = &p->cfg;
    g->ops = ops;
    g->share_prefixes = true;
    vla_arena_init_with(&g->arena, (size_t)1 << 20, ops->alloc, ops->free);
    vla_arena_init_with(&g->sarena, (size_t)1 << 20, ops->alloc, ops->free);
    vla_arena_init(&g->harena, 0);
    vla_arena_init(&g->sharena, 0);
    vla_arena_init(&g->params_arena, 0);
    vla_flow_from_config(&g->flow, cfg);
    block_configs(g, cfg);
    vla_status st = vla_policy_alloc_params(p);
    /* GR00T reads either the task alone in bytes (the small presets) or
     * Eagle's chat template with Eagle's vocabulary (groot_family.c) */
    if (st == VLA_OK && cfg->tokenizer[0] && strcmp(cfg->tokenizer, "bytes") && strcmp(cfg->tokenizer, "eagle"))
        st = vla_error(VLA_ERR_UNSUPPORTED, "tokenizer '%s': a GR00T policy reads Eagle's chat template, so its "
                       "tokenizer is \"eagle\" (or \"bytes\" for the from-scratch presets)", cfg->tokenizer);
    if (st == VLA_OK) st = vla_policy_open_tokenizer(p);
    if (st == VLA_OK) st = vla_param_bind(&p->cfg, &p->specs, p->weights, p->grads, &g->params_arena, &g->W, &p->blocks);
    if (st == VLA_OK) st = vla_vit_setup(&g->W.vit, &cfg->vision, ops);
    const vla_block_config *blocks[] = {&g->lm_cfg, &g->vl_cfg, &g->dit_self, &g->dit_cross};
    for (int i = 0; i < 4 && st == VLA_OK; i++) st = vla_block_check(blocks[i]);
    if (st == VLA_OK) { /* whether they keep bf16 copies follows the precision (policy/precision.h) */
        vla_block_config *kinds[] = {&g->lm_cfg, &g->vl_cfg, &g->dit_self, &g->dit_cross, &g->W.vit.block};
        for (int i = 0; i < 5; i++) vla_policy_block_config(p, kinds[i]);
    }
    g->W.vit.owner = p; /* the ViT's backward reports its layers' gradients ready */
    if (st != VLA_OK) {
        groot_destroy(p);
        return vla_error_context(st, "groot %s", cfg->name);
    }
    gradient_flow(p, g);
    *out = p;
    return VLA_OK;
}
