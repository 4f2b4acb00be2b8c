/* pi05_sample.c — π0.5 action sampling: the prefix (images, text) through
 * the network once, its K/V per layer kept, then each flow step runs the
 * action expert alone against them (cached); the uncached path runs the
 * whole training forward per step (the reference the cache is tested
 * against); and real-time chunking's velocity field with its VJP
 * (policy/rtc.h). The forward it shares is pi05.c's (pi05_internal.h). */
#include <stdlib.h>

#include "base/arena.h"
#include "nn/acts.h"
#include "nn/adarmsnorm.h"
#include "nn/attention.h"
#include "nn/linear.h"
#include "policy/flow.h"
#include "policy/pi05.h"
#include "policy/pi05_internal.h"
#include "policy/precision.h"
#include "tensor/profile.h"

/* ---- cached and uncached sampling ----------------------------------------------------------------------------------- */

typedef struct {
    vla_policy *p;
    vla_batch b;      /* the observations packed (host) */
    float *tvec;      /* [S] host */
    vla_arena_mark mark, hmark; /* after the prefix-only forward (cached sampling) */
} sample_ctx;

/* Uncached: the whole sequence through the training forward. */
static vla_status velocity_uncached(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *ctx = vctx;
    pi05_impl *I = pi05_of(ctx->p);
    pi05_arena_begin(I);
    for (int32_t s = 0; s < ctx->b.n_samples; s++) ctx->tvec[s] = t;
    VLA_TRY(vla_pi05_forward(ctx->p, &ctx->b, x, ctx->tvec));
    ctx->p->tops->copy(v, I->f.a.vpred, n);
    I->have_fwd = false;
    return VLA_OK;
}

/* The expert's rows of one Euler step (cached sampling): S·H rows, RoPE
 * positions after each sample's prefix, attention group 1 (prefix-LM).
 * keep (real-time chunking's VJP, policy/rtc.h): every layer keeps its own
 * input, block activations, q/k/v/o and log-sum-exp instead of sharing one. */
#define PI05_STEP(X)                                                                                             \
    X(acu, S + 1)                                                                                                \
    X(apos, Na)                                                                                                  \
    X(agrp, Na)
#define PI05_STEP_ACTS(X)                                                                                        \
    X(tdev, S)                                                                                                   \
    X(temb, S * We)                                                                                              \
    X(tm1, S * We)                                                                                               \
    X(tm1s, S * We)                                                                                              \
    X(tm2, S * We)                                                                                               \
    X(cond, S * We)                                                                                              \
    X(xs, (keep ? L + 1 : 2) * Na * We)                                                                          \
    X(blk, (keep ? L : 1) * ba)                                                                                  \
    X(q, (keep ? L : 1) * Na * HD)                                                                               \
    X(k, (keep ? L : 1) * Na * KD)                                                                               \
    X(v, (keep ? L : 1) * Na * KD)                                                                               \
    X(o, (keep ? L : 1) * Na * HD)                                                                               \
    X(lse, keep * L * Na * H)                                                                                    \
    X(mod, S * 3 * We)                                                                                           \
    X(an, Na * We)                                                                                               \
    X(arstd, keep * Na)

typedef struct {
    PI05_STEP(VLA_ACTS_FIELD_I32)
} step_maps;
typedef struct {
    PI05_STEP_ACTS(VLA_ACTS_FIELD)
} step_acts;

/* One pass of the expert alone: its queries against the prefix K/V of each
 * layer (computed once by a prefix-only forward) and its own new K/V; what
 * it computed stays in *m, *a (in the arena, from ctx->mark on). */
static vla_status expert_pass(sample_ctx *ctx, float t, const float *x, float *v, bool keep, step_maps *m,
                              step_acts *a) {
    vla_policy *p = ctx->p;
    pi05_impl *I = pi05_of(p);
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const int64_t Hz = c->action.horizon;
    PI05_DIMS(I, c, f->S, f->T, f->Np, (int64_t)f->S * Hz, f->n_img, 1);
    vla_arena_rewind(&I->arena, ctx->mark);
    vla_arena_rewind(&I->harena, ctx->hmark);
    const int64_t isz[] = {PI05_STEP(VLA_ACTS_SIZE)}, fsz[] = {PI05_STEP_ACTS(VLA_ACTS_SIZE)};
    VLA_TRY(vla_acts_from_arena_i32(&I->harena, isz, VLA_ACTS_COUNT(isz), (int32_t **)m));
    VLA_TRY(vla_acts_from_arena(&I->arena, fsz, VLA_ACTS_COUNT(fsz), (float **)a));
    int32_t *acu = m->acu, *apos = m->apos, *agrp = m->agrp;
    for (int32_t s = 0; s <= f->S; s++) acu[s] = (int32_t)(s * Hz);
    for (int32_t s = 0; s < f->S; s++)
        for (int64_t k = 0; k < Hz; k++) {
            apos[s * Hz + k] = (int32_t)(f->m.cu[s + 1] - f->m.cu[s] + k);
            agrp[s * Hz + k] = 1;
        }
    for (int32_t s = 0; s < f->S; s++) ctx->tvec[s] = t;
    vla_pi05_time_forward(p, I, ctx->tvec, a->tdev, f->S, a->temb, a->tm1, a->tm1s, a->tm2, a->cond);
    vla_pi05_lin(I, ops, a->xs, x, I->W.ain_w, I->W.ain_b, Na, A, We);
    vla_block_io io = {0};
    io.n = Na, io.n_seg = f->S, io.cu = acu, io.pos = apos, io.cond = a->cond;
    vla_attn_seqs qs = {f->S, acu, agrp}, cs = {f->S, f->m.cu, f->m.grp};
    for (int64_t li = 0; li < L; li++) {
        int64_t kl = keep ? li : 0;
        float *xin = a->xs + (keep ? li : li & 1) * Na * We, *xout = a->xs + (keep ? li + 1 : (li + 1) & 1) * Na * We;
        vla_block_acts ba_;
        vla_block_acts_carve(&I->ex_cfg, Na, 0, f->S, a->blk + kl * ba, &ba_);
        ba_.q = a->q + kl * Na * HD, ba_.k = a->k + kl * Na * KD, ba_.v = a->v + kl * Na * KD;
        ba_.att = a->o + kl * Na * HD, ba_.lse = keep ? a->lse + li * Na * H : NULL;
        layer_view lv;
        vla_pi05_view_layer(I, c, li, &lv); /* the prefix-only forward's layer: K, V in token order */
        VLA_TRY(vla_block_attn_in(ops, &I->ex_cfg, &I->W.ex[li], &io, xin, &ba_));
        vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.ex[li]);
        VLA_TRY(vla_attention_forward_cached(ops, &ac, ba_.att, ba_.lse, ba_.q, &qs, lv.K, lv.V, &cs, ba_.k,
                                             ba_.v, &qs, NULL));
        VLA_TRY(vla_block_attn_out(ops, &I->ex_cfg, &I->W.ex[li], &io, xin, xout, &ba_));
    }
    const float *xL = a->xs + (keep ? L : L & 1) * Na * We;
    vla_pi05_lin(I, ops, a->mod, a->cond, I->W.fin_w, I->W.fin_b, S, We, 3 * We);
    VLA_TRY(vla_adarmsnorm_forward(ops, a->an, keep ? a->arstd : NULL, xL, a->mod, acu, f->S, Na, We,
                                   (float)c->language.norm_eps, NULL));
    vla_pi05_lin(I, ops, v, a->an, I->W.aout_w, I->W.aout_b, Na, We, A);
    return VLA_OK;
}

static vla_status velocity_cached(void *vctx, float t, const float *x, float *v, int64_t n) {
    step_maps m;
    step_acts a;
    (void)n;
    return expert_pass(vctx, t, x, v, false, &m, &a);
}

/* ---- real-time chunking: the expert's velocity field and its VJP (policy/rtc.h) ----------------------
 * The VJP runs the training backward's expert halves on a view of the
 * weights without gradients (nothing reaches p->grads), with the prefix's
 * K/V held fixed: the attention's backward sees the expert's queries
 * against [prefix K/V ; its own K/V] per sample, and only the expert rows'
 * ∂K/∂V go on. The time condition does not depend on x: its ∂ is dropped. */
typedef struct {
    sample_ctx *sc;
    step_maps m;
    step_acts a;
} pi05_field;

static vla_status field_velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    pi05_field *fc = vctx;
    (void)n;
    return expert_pass(fc->sc, t, x, v, true, &fc->m, &fc->a);
}

#define PI05_VJP(X)                                                                                              \
    X(dan, Na * We)                                                                                              \
    X(dx, Na * We)                                                                                               \
    X(dmod, S * 3 * We)                                                                                          \
    X(dcond, S * We)                                                                                             \
    X(sa, bsa)                                                                                                   \
    X(kj, (Tp + Na) * KD)                                                                                        \
    X(vj, (Tp + Na) * KD)                                                                                        \
    X(dkj, (Tp + Na) * KD)                                                                                       \
    X(dvj, (Tp + Na) * KD)
/* host maps: the joint key side, and where each prefix token / expert row lands in it */
#define PI05_VJP_I32(X) X(jcu, S + 1) X(jgrp, Tp + Na) X(jpre, Tp) X(jexp, Na)

static vla_status field_vjp(void *vctx, const float *cot, float *out, int64_t n) {
    pi05_field *fc = vctx;
    vla_policy *p = fc->sc->p;
    pi05_impl *I = pi05_of(p);
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const int64_t Hz = c->action.horizon, Tp = f->T;
    PI05_DIMS(I, c, f->S, f->T, f->Np, (int64_t)f->S * Hz, f->n_img, 1);
    (void)n;
    vla_arena_mark mark = vla_arena_get_mark(&I->arena), hmark = vla_arena_get_mark(&I->harena);
    const int64_t fsz[] = {PI05_VJP(VLA_ACTS_SIZE)}, isz[] = {PI05_VJP_I32(VLA_ACTS_SIZE)};
    struct {
        PI05_VJP(VLA_ACTS_FIELD)
    } g;
    struct {
        PI05_VJP_I32(VLA_ACTS_FIELD_I32)
    } gi;
    vla_status st = vla_acts_from_arena(&I->arena, fsz, VLA_ACTS_COUNT(fsz), (float **)&g);
    if (st == VLA_OK) st = vla_acts_from_arena_i32(&I->harena, isz, VLA_ACTS_COUNT(isz), (int32_t **)&gi);
    vla_block_weights *ex = st == VLA_OK ? vla_arena_alloc(&I->harena, (size_t)L * sizeof *ex, 16) : NULL;
    if (st == VLA_OK && !ex) st = vla_error(VLA_ERR_NOMEM, "pi05: out of memory for the VJP");
    if (st != VLA_OK) return st;
    for (int64_t li = 0; li < L; li++) { /* the frozen view of the expert's layers */
        ex[li] = I->W.ex[li];
        vla_wg *w = (vla_wg *)&ex[li];
        for (int k = 0; k < VLA_BLOCK_N_WG; k++) w[k].g = NULL;
    }
    const step_maps *m = &fc->m;
    const step_acts *a = &fc->a;
    vla_block_io io = {0};
    io.n = Na, io.n_seg = f->S, io.cu = m->acu, io.pos = m->apos, io.cond = a->cond;
    vla_block_scratch sa;
    vla_block_scratch_carve(&I->ex_cfg, Na, 0, f->S, g.sa, &sa);
    /* the joint key rows per sample: the prefix's (group 0), then the expert's (group 1) */
    for (int32_t s = 0; s <= f->S; s++) gi.jcu[s] = f->m.cu[s] + (int32_t)(s * Hz);
    for (int32_t s = 0; s < f->S; s++) {
        for (int32_t r = f->m.cu[s]; r < f->m.cu[s + 1]; r++) {
            gi.jpre[r] = gi.jcu[s] + r - f->m.cu[s];
            gi.jgrp[gi.jpre[r]] = 0;
        }
        for (int64_t k = 0; k < Hz; k++) {
            gi.jexp[s * Hz + k] = (int32_t)(gi.jcu[s + 1] - Hz + k);
            gi.jgrp[gi.jexp[s * Hz + k]] = 1;
        }
    }
    vla_attn_seqs qs = {f->S, m->acu, m->agrp}, ks = {f->S, gi.jcu, gi.jgrp};
    /* head: v = aout(AdaRMS(x_L)) */
    vla_linear_backward_fresh(ops, g.dan, NULL, NULL, cot, a->an, I->W.aout_w.w, Na, We, A);
    ops->fill(g.dmod, 0.0f, S * 3 * We);
    ops->fill(g.dx, 0.0f, Na * We); /* nn/ backward passes accumulate */
    st = vla_adarmsnorm_backward(ops, g.dx, g.dmod, g.dan, a->xs + L * Na * We, a->mod, a->arstd, m->acu, f->S, Na, We);
    for (int64_t li = L - 1; st == VLA_OK && li >= 0; li--) {
        vla_block_acts ba_;
        vla_block_acts_carve(&I->ex_cfg, Na, 0, f->S, a->blk + li * ba, &ba_);
        ba_.q = a->q + li * Na * HD, ba_.k = a->k + li * Na * KD, ba_.v = a->v + li * Na * KD;
        ba_.att = a->o + li * Na * HD, ba_.lse = a->lse + li * Na * H;
        ops->fill(g.dcond, 0.0f, S * We);
        st = vla_block_attn_out_backward(ops, &I->ex_cfg, &ex[li], &io, &ba_, &sa, g.dx, g.dcond);
        if (st != VLA_OK) break;
        layer_view lv;
        vla_pi05_view_layer(I, c, li, &lv);
        /* [prefix K/V ; expert K/V] per sample */
        ops->copy_rows(g.kj, KD, gi.jpre, lv.K, KD, NULL, Tp, KD, 1.0f);
        ops->copy_rows(g.vj, KD, gi.jpre, lv.V, KD, NULL, Tp, KD, 1.0f);
        ops->copy_rows(g.kj, KD, gi.jexp, ba_.k, KD, NULL, Na, KD, 1.0f);
        ops->copy_rows(g.vj, KD, gi.jexp, ba_.v, KD, NULL, Na, KD, 1.0f);
        ops->fill(sa.dq, 0.0f, Na * HD);
        ops->fill(g.dkj, 0.0f, (Tp + Na) * KD);
        ops->fill(g.dvj, 0.0f, (Tp + Na) * KD);
        vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.ex[li]);
        st = vla_attention_backward(ops, &ac, sa.dq, g.dkj, g.dvj, sa.datt, ba_.q, g.kj, g.vj, ba_.att, ba_.lse,
                                    &qs, &ks, NULL);
        if (st != VLA_OK) break;
        /* the expert rows' own ∂K, ∂V (the prefix's are constants) */
        ops->copy_rows(sa.dk, KD, NULL, g.dkj, KD, gi.jexp, Na, KD, 1.0f);
        ops->copy_rows(sa.dv, KD, NULL, g.dvj, KD, gi.jexp, Na, KD, 1.0f);
        st = vla_block_attn_in_backward(ops, &I->ex_cfg, &ex[li], &io, a->xs + li * Na * We, &ba_, &sa, g.dx, NULL,
                                        g.dcond);
    }
    if (st == VLA_OK) { /* x_0 = ain(x) */
        vla_linear_backward_fresh(ops, out, NULL, NULL, g.dx, NULL, I->W.ain_w.w, Na, A, We);
    }
    vla_arena_rewind(&I->arena, mark);
    vla_arena_rewind(&I->harena, hmark);
    return st;
}

/* The cached Euler loop as a captured region (policy/flow.h): besides what every family's loop
 * depends on, the expert's ops follow from the batch's sizes and the prefix's layout — each sample's
 * token range and attention groups, which the steps' attention reads and whose lengths place the
 * actions' RoPE positions. */
static vla_status euler_captured(vla_policy *p, pi05_impl *I, sample_ctx *ctx, int64_t n) {
    const fwd_state *f = &I->f;
    vla_arena_rewind(&I->arena, ctx->mark);
    const void *at = vla_arena_next_block(&I->arena, 64); /* where each step's activations start */
    vla_key key = {0};
    vla_policy_region_key_add(p, &key);
    vla_key_add(&key, &at, sizeof at);
    vla_key_add_i32s(&key, f->m.cu, f->S + 1);
    vla_key_add_i32s(&key, f->m.grp, f->T);
    return vla_flow_euler_captured(p->tops, &I->flow, velocity_cached, ctx, &I->chunk, n, &key);
}

/* integ NULL: Euler (sample_actions); else the caller's integrator on the expert's velocity field. */
static vla_status sample(vla_policy *p, const vla_observation *obs, float *actions, bool cached,
                         vla_flow_integrator integ, void *user) {
    pi05_impl *I = pi05_of(p);
    const vla_policy_config *c = &p->cfg;
    if (!obs || !obs->state || (c->vision.cameras > 0 && !obs->images))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 sample: observation needs state and images");
    vla_obs_pack o;
    vla_profile_phase("inputs"); /* a profile's phases (tensor/profile.h): inputs, prefix, flow, readback */
    VLA_TRY(vla_obs_pack_build(p, obs, !cached, &o));
    vla_status st = vla_batch_check(&o.b, c);
    int32_t S = obs->n_samples;
    const vla_ops *ops = p->tops;
    int64_t n = (int64_t)S * c->action.horizon * c->action.action_dim, per = n / S;
    /* x (the chunk being integrated) and v live in backend memory the policy keeps (fixed addresses:
     * the flow steps can run as a captured region, policy/flow.h); the starting noise is drawn on the
     * host into `actions` and uploaded */
    if (st == VLA_OK) st = vla_flow_chunk_reserve(ops, &I->chunk, n);
    float *x = I->chunk.x, *scratch = I->chunk.v;
    float *tvec = malloc((size_t)S * sizeof(float));
    if (st == VLA_OK && !tvec) st = vla_error(VLA_ERR_NOMEM, "pi05 sample: out of memory");
    if (st == VLA_OK) {
        for (int32_t s = 0; s < S; s++)
            vla_flow_sample_noise(obs->seed, obs->sample_keys ? obs->sample_keys[s] : (uint64_t)s,
                                  VLA_FLOW_RNG_SAMPLING, actions + s * per, per);
        ops->to_device(x, actions, (size_t)n * sizeof(float));
        sample_ctx ctx = {p, o.b, tvec, {0}, {0}};
        pi05_arena_begin(I);
        if (cached) {
            vla_profile_phase("prefix");
            st = vla_pi05_forward(p, &o.b, NULL, NULL); /* the prefix once: K/V per layer stay in the arena */
            vla_profile_phase("flow");
            ctx.mark = vla_arena_get_mark(&I->arena);
            ctx.hmark = vla_arena_get_mark(&I->harena);
            pi05_field fc = {&ctx, {0}, {0}};
            vla_flow_field field = {field_velocity, field_vjp, &fc, ops};
            if (st == VLA_OK && integ) st = integ(user, &I->flow, &field, x, n);
            else if (st == VLA_OK) st = euler_captured(p, I, &ctx, n);
        } else {
            st = vla_flow_euler(ops, &I->flow, velocity_uncached, &ctx, x, scratch, n);
        }
        p->act_peak_bytes = I->arena.peak; /* a chunk's, as a step's (policy.h) */
        vla_profile_phase("readback");
        if (st == VLA_OK) ops->to_host(actions, x, (size_t)n * sizeof(float));
        vla_profile_phase(NULL);
        I->have_fwd = false;
    }
    vla_profile_phase(NULL);
    free(tvec);
    vla_obs_pack_free(&o);
    return st != VLA_OK ? vla_error_context(st, "pi05 sample_actions") : VLA_OK;
}

vla_status vla_pi05_sample_cached(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample(p, obs, actions, true, NULL, NULL);
}

vla_status vla_pi05_sample_with(vla_policy *p, const vla_observation *obs, vla_flow_integrator integ, void *user,
                                   float *actions) {
    return sample(p, obs, actions, true, integ, user);
}

vla_status vla_pi05_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions) {
    if (!p || p->cfg.family != &vla_pi05_family) return vla_error(VLA_ERR_INVALID_ARG, "not a pi05 policy");
    return sample(p, obs, actions, false, NULL, NULL);
}
