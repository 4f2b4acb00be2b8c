/* test_groot.c — the GR00T-N1.5-style policy on groot-nano: loss and every
 * parameter gradient against the PyTorch reference (tools/ref_groot.py,
 * same weights and inputs from a safetensors file written here), whole-
 * policy finite differences per module group (published freezing and
 * everything trainable), sampling with the VL features cached equal to
 * recomputing them each Euler step, a pack of 3 samples equal to the 3
 * alone, and overfitting one small batch.
 *
 * Regenerating the goldens (only when the architecture changes):
 *   VLA_GROOT_WRITE_GOLDEN=1 build-groot/tests/test_groot   # writes tests/policy/goldens/groot_nano_inputs.safetensors
 *   /usr/bin/python3 tools/ref_groot.py                     # writes tests/policy/goldens/groot_nano_expected.safetensors */
#include "test_util.h"
#include "policy/region.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "io/safetensors.h"
#include "policy/flow.h"
#include "policy/groot.h"
#include "policy/precision.h"
#include "policy/policy.h"
#include "tensor/cpu/parallel.h"

#define MAXS 4
static const char *const TASKS[] = {"push the T", "", "pick up the red block please", "go left"};

/* groot-nano, or with `deep` every stack two layers deeper (a recomputed
 * stack recomputes all but its last layer: one layer would show nothing). */
static vla_policy *make_policy_deep(bool all_trainable, bool deep) {
    vla_policy_config cfg;
    if (vla_policy_config_load("groot-nano", &cfg) != VLA_OK) fail_msg("config: %s", vla_error_message());
    if (all_trainable) memset(cfg.frozen, 0, sizeof cfg.frozen);
    if (deep) cfg.vision.depth += 2, cfg.language.depth += 2, cfg.head.vl_layers += 2, cfg.head.dit_layers += 2;
    vla_policy *p = NULL;
    if (vla_policy_create(&cfg, test_backend(), &p) != VLA_OK) fail_msg("create: %s", vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 7), VLA_OK);
    /* Tests use unit-gain weights instead of the published 0.02·randn: with
     * 0.02 every layer shrinks its input ~10×, so gradients reaching the
     * backbone are ~1e-8 — below the f32 rounding of the loss, and finite
     * differences would check nothing. Matrices get std 1/sqrt(fan_in),
     * embedding tables 0.5; zero/one inits (biases, norms) move off their
     * defaults so every term matters. (On a host copy: the weights are the backend's.) */
    float *hw = test_weights_get(p);
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *sp = &p->specs.items[i];
        float *w = hw + (p->params[i].data - p->weights);
        bool random = sp->init == VLA_INIT_NORMAL || sp->init == VLA_INIT_UNIFORM;
        if (random && sp->ndim >= 2) {
            double fan_in = sp->ndim == 2 ? (double)sp->shape[1]
                            : sp->ndim == 3 ? (double)sp->shape[1] /* GR00T [n_emb, in, out] */
                                            : (double)(sp->numel / sp->shape[0]);
            double std = sp->apply == VLA_APPLY_LOOKUP ? 0.5 : 1.0 / sqrt(fan_in);
            double now = sp->init == VLA_INIT_UNIFORM ? sp->init_scale / sqrt(3.0) : sp->init_scale;
            for (int64_t k = 0; k < sp->numel; k++) w[k] *= (float)(std / now);
        } else if (!random) { /* nn.Linear biases (U(±1/√in)) are already off zero */
            vla_rng r = vla_rng_stream(8, (uint64_t)i);
            for (int64_t k = 0; k < sp->numel; k++) w[k] += (float)(0.1 * vla_rng_normal(&r));
        }
    }
    test_weights_set(p, hw);
    free(hw);
    return p;
}

static vla_policy *make_policy(bool all_trainable) { return make_policy_deep(all_trainable, false); }

/* ---- batches: sample content depends only on its id ---- */

typedef struct {
    int32_t S, cu[MAXS + 1], cu_img[MAXS + 1], rd[MAXS], emb[MAXS];
    uint64_t keys[MAXS];
    const char *tasks[MAXS];
    uint8_t *roles, *pad, valid[MAXS];
    int32_t *groups, *pos, *tok;
    float *images, *obs_images, *state, *actions; /* images packed (valid only); obs_images [S, 1 camera] */
    vla_batch b;
} tbatch;

static void tbatch_free(tbatch *t) {
    free(t->roles), free(t->pad), free(t->groups), free(t->pos), free(t->tok);
    free(t->images), free(t->obs_images), free(t->state), free(t->actions);
}

static int g_no_image_id = -1; /* this sample id comes without its camera */
static bool g_no_images;        /* no sample has its camera (a state-only batch) */

static void make_batch(vla_policy *p, const int *ids, int S, tbatch *t) {
    const vla_policy_config *c = &p->cfg;
    memset(t, 0, sizeof *t);
    t->S = S;
    int64_t H = c->action.horizon, ad = c->action.action_dim, sd = c->action.state_dim;
    int64_t imgf = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int32_t txt[MAXS][64];
    int64_t ntxt[MAXS];
    for (int s = 0; s < S; s++) {
        t->tasks[s] = TASKS[ids[s] % 4];
        int32_t ni = ids[s] != g_no_image_id && !g_no_images;
        assert_int_equal(vla_policy_tokenize(p, t->tasks[s], NULL, 0, ni, txt[s], 64, &ntxt[s]), VLA_OK);
        t->cu[s + 1] = t->cu[s] + (int32_t)vla_policy_sample_layout(p, ni, NULL, (int32_t)ntxt[s], NULL, NULL, NULL);
        t->cu_img[s + 1] = t->cu_img[s] + ni;
    }
    int64_t T = t->cu[S];
    t->roles = malloc((size_t)T), t->groups = malloc((size_t)T * 4), t->pos = malloc((size_t)T * 4);
    t->tok = malloc((size_t)T * 4), t->images = malloc((size_t)(S * imgf) * 4);
    t->obs_images = malloc((size_t)(S * imgf) * 4);
    t->state = malloc((size_t)(S * sd) * 4), t->actions = malloc((size_t)(S * H * ad) * 4);
    t->pad = malloc((size_t)(S * H));
    for (int s = 0; s < S; s++) {
        vla_policy_sample_layout(p, t->cu_img[s + 1] - t->cu_img[s], txt[s], (int32_t)ntxt[s], t->roles + t->cu[s],
                                 t->groups + t->cu[s], t->pos + t->cu[s]);
        int64_t k = 0;
        for (int64_t i = t->cu[s]; i < t->cu[s + 1]; i++) t->tok[i] = t->roles[i] == VLA_ROLE_TEXT ? txt[s][k++] : 0;
        vla_rng r = vla_rng_stream(100, (uint64_t)ids[s]);
        for (int64_t i = 0; i < imgf; i++) {
            float u = vla_rng_uniform(&r);
            t->obs_images[s * imgf + i] = u;
            if (t->cu_img[s + 1] > t->cu_img[s]) t->images[t->cu_img[s] * imgf + i] = u;
        }
        for (int64_t i = 0; i < sd; i++) t->state[s * sd + i] = (float)vla_rng_normal(&r);
        for (int64_t i = 0; i < H * ad; i++) t->actions[s * H * ad + i] = (float)vla_rng_normal(&r);
        for (int64_t h = 0; h < H; h++) t->pad[s * H + h] = ids[s] % 3 == 1 && h == H - 1;
        t->rd[s] = ids[s] % 2 ? 1 : (int32_t)ad;
        t->valid[s] = t->cu_img[s + 1] > t->cu_img[s];
        t->emb[s] = ids[s] % 2;
        t->keys[s] = 1000 + (uint64_t)ids[s];
    }
    vla_batch *b = &t->b;
    b->n_samples = S, b->n_tokens = T, b->cu_seqlens = t->cu, b->roles = t->roles, b->positions = t->pos;
    b->groups = t->groups, b->token_ids = t->tok, b->n_images = t->cu_img[S], b->cu_images = t->cu_img;
    b->images = t->images;
    b->state = t->state, b->actions = t->actions, b->action_is_pad = t->pad, b->real_action_dim = t->rd;
    b->embodiment = t->emb, b->seed = 42, b->sample_keys = t->keys;
}

static vla_observation make_obs(const tbatch *t) {
    vla_observation o = {0};
    o.n_samples = t->S, o.task = t->tasks, o.images = t->obs_images, o.image_valid = t->valid;
    o.state = t->state, o.embodiment = t->emb, o.seed = 5, o.sample_keys = t->keys;
    return o;
}

static double run_loss(vla_policy *p, const vla_batch *b, vla_loss_info *info) {
    vla_loss_info tmp;
    if (!info) info = &tmp;
    if (vla_policy_loss(p, b, true, info) != VLA_OK) fail_msg("loss: %s", vla_error_message());
    return info->loss;
}

static float *grads_of(vla_policy *p, const vla_batch *b, double *loss, int64_t *count) {
    vla_loss_info info;
    vla_policy_zero_grad(p);
    *loss = run_loss(p, b, &info);
    if (count) *count = info.real_entries;
    if (vla_policy_backward(p) != VLA_OK) fail_msg("backward: %s", vla_error_message());
    return test_grads_get(p);
}

/* ---- finite differences, per module group ---- */

static void fd_policy(bool all_trainable) {
    vla_policy *p = make_policy(all_trainable);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(p, ids, 3, &t);
    double L0;
    float *g = grads_of(p, &t.b, &L0, NULL);
    vla_rng r = vla_rng_stream(3, all_trainable);
    int checked = 0;
    for (vla_param_group grp = 0; grp < VLA_GROUP_COUNT; grp++) {
        int64_t n = 0;
        for (int64_t i = 0; i < p->specs.n; i++)
            if (p->params[i].grad && p->specs.items[i].group == grp) n++;
        if (!n) continue;
        for (int trial = 0; trial < 2; trial++) {
            /* trial 0: a random ±1 direction over the group; 1: the largest-gradient
             * coordinate of a random tensor of the group that has a gradient */
            int64_t pick = -1, coord = -1;
            if (trial == 1) {
                for (int tries = 0; tries < 50 && pick < 0; tries++) {
                    int64_t i = vla_rng_int(&r, 0, p->specs.n);
                    if (!p->params[i].grad || p->specs.items[i].group != grp) continue;
                    const float *gi = g + (p->params[i].grad - p->grads);
                    float best = 0;
                    for (int64_t k = 0; k < p->specs.items[i].numel; k++)
                        if (fabsf(gi[k]) > best) best = fabsf(gi[k]), coord = k;
                    if (best > 1e-7f) pick = i; /* skip exact zeros (e.g. k_proj.bias: softmax shift) */
                }
                if (pick < 0) continue;
            }
            double analytic = 0;
            float *saved = test_weights_get(p), *cur = test_weights_get(p);
            /* central differences: truncation O(h²) along a whole-group direction needs a small
             * step; one coordinate tolerates a larger one, which lifts it above f32 noise */
            const double h = trial == 1 ? 1e-3 : 1e-4;
            double Lpm[2];
            for (int side = 0; side < 2; side++) {
                vla_rng rd = vla_rng_stream(77, (uint64_t)(grp * 10 + trial));
                double sgn = side == 0 ? 1.0 : -1.0;
                for (int64_t i = 0; i < p->specs.n; i++) {
                    if (!p->params[i].grad || p->specs.items[i].group != grp) continue;
                    if (trial == 1 && i != pick) continue;
                    float *w = cur + (p->params[i].data - p->weights);
                    const float *w0 = saved + (p->params[i].data - p->weights), *gi = g + (p->params[i].grad - p->grads);
                    for (int64_t k = 0; k < p->specs.items[i].numel; k++) {
                        double u = trial == 1 ? (k == coord) : (vla_rng_u32(&rd) & 1 ? 1.0 : -1.0);
                        if (u == 0) continue;
                        w[k] = (float)((double)w0[k] + sgn * h * u);
                        if (side == 1) analytic += (double)gi[k] * ((double)(float)((double)w0[k] + h * u) - (double)w[k]);
                    }
                }
                test_weights_set(p, cur);
                Lpm[side] = run_loss(p, &t.b, NULL);
                test_weights_set(p, saved);
            }
            /* analytic uses the rounded steps: Σ g·(w⁺ − w⁻) */
            double numeric = Lpm[0] - Lpm[1];
            double tol = 1e-2 * fabs(analytic) + 3e-7 * fmax(1.0, fabs(L0)); /* + f32 rounding of the loss */
            if (!(fabs(numeric - analytic) <= tol))
                fail_msg("%s group %s trial %d: numeric %.9g vs analytic %.9g (tol %.3g)",
                         all_trainable ? "all-trainable" : "published", vla_param_group_name(grp), trial, numeric,
                         analytic, tol);
            print_message("  fd %-10s %s: numeric %+.6e analytic %+.6e\n", vla_param_group_name(grp),
                          trial ? "max coord " : "direction ", numeric, analytic);
            free(saved), free(cur);
            checked++;
        }
    }
    assert_true(checked >= (all_trainable ? 12 : 6));
    free(g);
    tbatch_free(&t);
    vla_policy_free(p);
}

static void test_fd_published_freezing(void **state) {
    (void)state;
    fd_policy(false);
}

static void test_fd_all_trainable(void **state) {
    (void)state;
    fd_policy(true);
}

/* ---- packing: a pack of 3 equals the 3 alone ---- */

static void pack_check(bool all_trainable) {
    vla_policy *p = make_policy(all_trainable);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(p, ids, 3, &t);
    double Lp;
    int64_t cp;
    float *gp = grads_of(p, &t.b, &Lp, &cp);
    int64_t n = p->n_grad_floats;
    double *acc = calloc((size_t)n, sizeof(double)), lsum = 0;
    int64_t csum = 0;
    for (int s = 0; s < 3; s++) {
        tbatch one;
        make_batch(p, &ids[s], 1, &one);
        double Li;
        int64_t ci;
        float *gi = grads_of(p, &one.b, &Li, &ci);
        for (int64_t k = 0; k < n; k++) acc[k] += (double)gi[k] * (double)ci;
        lsum += Li * (double)ci, csum += ci;
        free(gi);
        tbatch_free(&one);
    }
    /* the pack's loss is Σ err² / Σ count, each alone Σ_s err² / count_s */
    assert_int_equal(cp, csum);
    if (fabs(Lp * (double)cp - lsum) > test_tol(1e-5) * fabs(lsum)) fail_msg("pack loss %.9g vs alone %.9g", Lp * cp, lsum);
    double dn = 0, an = 0;
    for (int64_t k = 0; k < n; k++) {
        double d = (double)gp[k] * (double)cp - acc[k];
        dn += d * d, an += acc[k] * acc[k];
    }
    if (!(sqrt(dn) <= test_tol(1e-5) * sqrt(an))) fail_msg("pack gradients differ: |Δ| %.3g vs |g| %.3g", sqrt(dn), sqrt(an));

    /* sampling: the 3 observations at once vs one by one */
    int64_t HA = p->cfg.action.horizon * p->cfg.action.action_dim;
    float *a3 = malloc((size_t)(3 * HA) * sizeof(float)), *a1 = malloc((size_t)HA * sizeof(float));
    vla_observation o = make_obs(&t);
    assert_int_equal(vla_policy_sample_actions(p, &o, a3), VLA_OK);
    for (int s = 0; s < 3; s++) {
        tbatch one;
        make_batch(p, &ids[s], 1, &one);
        vla_observation o1 = make_obs(&one);
        assert_int_equal(vla_policy_sample_actions(p, &o1, a1), VLA_OK);
        for (int64_t k = 0; k < HA; k++)
            if (fabsf(a1[k] - a3[s * HA + k]) > 1e-5f * (1 + fabsf(a1[k])))
                fail_msg("sample %d action %lld: alone %.9g, packed %.9g", s, (long long)k, a1[k], a3[s * HA + k]);
        tbatch_free(&one);
    }
    free(a3), free(a1), free(acc), free(gp);
    tbatch_free(&t);
    vla_policy_free(p);
}

static void test_pack_equals_alone(void **state) {
    (void)state;
    pack_check(false);
    pack_check(true);
    /* sample id 1 has an empty task; without its camera it has no VL tokens at all
     * (its cross-attention sees nothing: output 0, as flash attention) */
    g_no_image_id = 1;
    pack_check(true);
    g_no_image_id = -1;
}

/* ---- sampling: VL features once == recomputed every Euler step ---- */

static void test_sample_cached(void **state) {
    (void)state;
    vla_policy *p = make_policy(false);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(p, ids, 3, &t);
    int64_t n = 3 * p->cfg.action.horizon * p->cfg.action.action_dim;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    vla_observation o = make_obs(&t);
    int64_t w0 = p->tops->host_waits ? p->tops->host_waits() : 0;
    assert_int_equal(vla_policy_sample_actions(p, &o, a), VLA_OK);
    /* a backend that counts its host waits (checked): one per chunk, reading it back */
    if (p->tops->host_waits) assert_int_equal(p->tops->host_waits() - w0, 1);
    assert_int_equal(vla_groot_sample_actions_uncached(p, &o, b), VLA_OK);
    for (int64_t k = 0; k < n; k++) {
        assert_true(isfinite(a[k]));
        if (a[k] != b[k]) fail_msg("action %lld: cached %.9g, uncached %.9g", (long long)k, a[k], b[k]);
    }
    /* a missing camera is allowed (no image tokens for that sample) */
    uint8_t valid[3] = {1, 0, 1};
    o.image_valid = valid;
    assert_int_equal(vla_policy_sample_actions(p, &o, a), VLA_OK);
    for (int64_t k = 0; k < n; k++) assert_true(isfinite(a[k]));
    free(a), free(b);
    tbatch_free(&t);
    vla_policy_free(p);
}

/* ---- a chunk's flow steps as a captured region (policy/flow.h) ---- */

/* As test_pi05's test_chunks_replay: repeated chunks are the first's; a new
 * observation of the same layout (other state values, other pixels), another
 * prompt, another layout (a missing camera) and new weights inside the hold
 * give a fresh policy's actions; on checked, calls after the recording are
 * held to it. The prefix region's host side runs as a replay leaves it
 * (policy/region.h: vla_region_emulate_replays): its VL tokens and cross K/V
 * are restored from what the first call of the key kept, so a key that does
 * not pin the prefix's layout shows here as actions that differ. */
static void test_chunks_replay(void **state) {
    (void)state;
    vla_policy *p = make_policy(false), *q = make_policy(false);
    assert_int_equal(vla_policy_set_precision(p, VLA_PREC_BF16, NULL), VLA_OK);
    assert_int_equal(vla_policy_set_precision(q, VLA_PREC_BF16, NULL), VLA_OK);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(p, ids, 3, &t);
    int64_t n = 3 * p->cfg.action.horizon * p->cfg.action.action_dim;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *first = malloc((size_t)n * 4);
    vla_observation o = make_obs(&t);
    bool counts = p->tops->stat && p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) >= 0;
    int64_t r0 = counts ? p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) : 0;
    vla_region_emulate_replays(true);
    long restored0 = vla_region_restored();
    vla_policy_weights_hold(p);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(vla_policy_sample_actions(p, &o, k ? a : first), VLA_OK);
        if (k) assert_memory_equal(a, first, (size_t)n * 4);
    }
    if (counts) assert_true(p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) - r0 >= 2);
    /* the prefix restored in each call after its key's first: the first chunk makes the weights' copies (a
     * backend that keeps them), so from the second on the key names them (policy/precision.h) */
    assert_true(vla_region_restored() - restored0 >= 3);
    float *st = (float *)o.state; /* the next observation: other state values, the same layout */
    for (int64_t i = 0; i < 3 * p->cfg.action.state_dim; i++) st[i] += 0.25f;
    /* another prompt of as many tokens as sample 0's: the same layout, other token ids (only the key's
     * token ids tell the two apart) */
    static const char *const candidates[] = {"push the O", "pull the T", "push a T", "move the T", "push the L",
                                             "grab the T", "push the V"};
    const char *other_tasks[3] = {NULL, t.tasks[1], t.tasks[2]};
    {
        int32_t ref[64], ids2[64];
        int64_t nref = 0, n2 = 0;
        assert_int_equal(vla_policy_tokenize(p, t.tasks[0], NULL, 0, 1, ref, 64, &nref), VLA_OK);
        for (size_t c = 0; c < sizeof candidates / sizeof *candidates && !other_tasks[0]; c++) {
            assert_int_equal(vla_policy_tokenize(p, candidates[c], NULL, 0, 1, ids2, 64, &n2), VLA_OK);
            if (n2 == nref && memcmp(ids2, ref, (size_t)nref * 4)) other_tasks[0] = candidates[c];
        }
        if (!other_tasks[0]) fail_msg("no candidate prompt has %lld tokens like \"%s\"", (long long)nref, t.tasks[0]);
    }
    uint8_t valid[3] = {1, 0, 1};
    int64_t plane = p->cfg.vision.channels * p->cfg.vision.image_size * p->cfg.vision.image_size;
    for (int round = 0; round < 5; round++) {
        if (round == 1) /* other pixels, the same layout */
            for (int64_t i = 0; i < 3 * plane; i++) /* obs_images: one camera per sample */
                ((float *)o.images)[i] = 1.0f - ((float *)o.images)[i];
        if (round == 2) o.task = other_tasks; /* another prompt: other token ids */
        if (round == 3) o.image_valid = valid; /* another layout: one sample without its camera */
        if (round == 4) {                      /* new weights inside the hold */
            o.image_valid = NULL;
            float *w = test_weights_get(p);
            for (int64_t i = 0; i < p->n_weight_floats; i++) w[i] *= 0.9f;
            test_weights_set(p, w), test_weights_set(q, w);
            vla_policy_weights_changed(p);
            free(w);
        }
        for (int k = 0; k < 3; k++) {
            assert_int_equal(vla_policy_sample_actions(p, &o, a), VLA_OK);
            assert_int_equal(vla_policy_sample_actions(q, &o, b), VLA_OK);
            if (memcmp(a, b, (size_t)n * 4)) fail_msg("round %d, chunk %d: p %.9g, fresh %.9g", round, k, a[0], b[0]);
        }
    }
    vla_region_emulate_replays(false);
    vla_policy_weights_release(p);
    free(a), free(b), free(first);
    tbatch_free(&t);
    vla_policy_free(p), vla_policy_free(q);
}

/* ---- overfitting one small batch with plain SGD ---- */

static void test_overfit(void **state) {
    (void)state;
    vla_policy *p = make_policy(false);
    static const int ids[] = {0, 2};
    tbatch t;
    make_batch(p, ids, 2, &t);
    double first = 0, last = 0;
    const float lr = 0.05f;
    for (int step = 0; step < 50; step++) {
        double L;
        float *g = grads_of(p, &t.b, &L, NULL);
        if (step == 0) first = L;
        last = L;
        float *hw = test_weights_get(p);
        for (int64_t i = 0; i < p->specs.n; i++) {
            if (!p->params[i].grad) continue;
            const float *gi = g + (p->params[i].grad - p->grads);
            float *w = hw + (p->params[i].data - p->weights);
            for (int64_t k = 0; k < p->specs.items[i].numel; k++) w[k] -= lr * gi[k];
        }
        test_weights_set(p, hw);
        free(g), free(hw);
    }
    print_message("groot-nano overfit: loss %.4f -> %.4f in 50 SGD steps\n", first, last);
    if (!(last < 0.5 * first)) fail_msg("loss did not fall enough: %.5f -> %.5f", first, last);
    tbatch_free(&t);
    vla_policy_free(p);
}

/* ---- PyTorch goldens ---- */

#define IN_PATH "tests/policy/goldens/groot_nano_inputs.safetensors"
#define EXP_PATH "tests/policy/goldens/groot_nano_expected.safetensors"

static void write_inputs(void) {
    vla_policy *p = make_policy(true);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(p, ids, 3, &t);
    run_loss(p, &t.b, NULL);
    const float *tt, *noise;
    int32_t S;
    assert_int_equal(vla_groot_last_flow(p, &tt, &noise, &S), VLA_OK);
    const vla_policy_config *c = &p->cfg;
    int64_t H = c->action.horizon, ad = c->action.action_dim;
    int32_t bucket[MAXS];
    vla_flow f;
    vla_flow_from_config(&f, c);
    for (int s = 0; s < S; s++) bucket[s] = vla_flow_time_bucket(&f, tt[s]);
    float *x0 = malloc((size_t)(S * H * ad) * 4);
    for (int s = 0; s < S; s++) vla_flow_sample_noise(5, t.keys[s], VLA_FLOW_RNG_SAMPLING, x0 + s * H * ad, H * ad);
    int32_t pad32[MAXS * 64];
    for (int64_t i = 0; i < S * H; i++) pad32[i] = t.pad[i];
    int32_t *roles32 = malloc((size_t)t.b.n_tokens * 4);
    for (int64_t i = 0; i < t.b.n_tokens; i++) roles32[i] = t.roles[i];
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    float *hw = test_weights_get(p);
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *sp = &p->specs.items[i];
        assert_int_equal(vla_safetensors_writer_add(w, sp->name, VLA_F32, sp->ndim, sp->shape,
                                                    hw + (p->params[i].data - p->weights)),
                         VLA_OK);
    }
    int64_t T = t.b.n_tokens, imgf = c->vision.channels * c->vision.image_size * c->vision.image_size;
#define ADD(name, dt, nd, data, ...)                                                                            \
    assert_int_equal(vla_safetensors_writer_add(w, name, dt, nd, (const int64_t[]){__VA_ARGS__}, data), VLA_OK)
    ADD("batch.cu_seqlens", VLA_I32, 1, t.cu, S + 1);
    ADD("batch.roles", VLA_I32, 1, roles32, T);
    ADD("batch.positions", VLA_I32, 1, t.pos, T);
    ADD("batch.groups", VLA_I32, 1, t.groups, T);
    ADD("batch.token_ids", VLA_I32, 1, t.tok, T);
    ADD("batch.cu_images", VLA_I32, 1, t.cu_img, S + 1);
    ADD("batch.images", VLA_F32, 2, t.images, S, imgf);
    ADD("batch.state", VLA_F32, 2, t.state, S, c->action.state_dim);
    ADD("batch.actions", VLA_F32, 3, t.actions, S, H, ad);
    ADD("batch.action_is_pad", VLA_I32, 2, pad32, S, H);
    ADD("batch.real_action_dim", VLA_I32, 1, t.rd, S);
    ADD("batch.embodiment", VLA_I32, 1, t.emb, S);
    ADD("batch.sample_keys", VLA_I64, 1, t.keys, S);
    ADD("flow.t", VLA_F32, 1, tt, S);
    ADD("flow.bucket", VLA_I32, 1, bucket, S);
    ADD("flow.noise", VLA_F32, 3, noise, S, H, ad);
    ADD("sample.noise", VLA_F32, 3, x0, S, H, ad);
#undef ADD
    char key[32];
    for (int s = 0; s < S; s++) {
        snprintf(key, sizeof key, "task.%d", s);
        assert_int_equal(vla_safetensors_writer_set_meta(w, key, t.tasks[s]), VLA_OK);
    }
    assert_int_equal(vla_safetensors_writer_set_meta(w, "config", "groot-nano"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "seed", "42"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "sample_seed", "5"), VLA_OK);
    if (vla_safetensors_writer_write(w, test_source_path(IN_PATH)) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_safetensors_writer_free(w);
    free(x0), free(roles32), free(hw);
    tbatch_free(&t);
    vla_policy_free(p);
}

static const float *tensor_f32(vla_safetensors *st, const char *name, int64_t numel) {
    const vla_safetensors_tensor *tt;
    if (vla_safetensors_get(st, name, &tt) != VLA_OK) fail_msg("%s", vla_error_message());
    if (tt->dtype != VLA_F32 || tt->numel != numel)
        fail_msg("%s: dtype %d, %lld elements (want f32, %lld)", name, (int)tt->dtype, (long long)tt->numel,
                 (long long)numel);
    return tt->data;
}

static const void *tensor_any(vla_safetensors *st, const char *name) {
    const vla_safetensors_tensor *tt;
    if (vla_safetensors_get(st, name, &tt) != VLA_OK) fail_msg("%s", vla_error_message());
    return tt->data;
}

static double dot_self(const float *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

/* ‖got − want‖₂ / max(‖want‖₂, floor): the norm-wise relative error of one
 * tensor. The floor (1e-4 × the norm of all gradients together) keeps
 * tensors whose exact gradient is 0 — attn to_k biases, which only shift
 * every score of a query by the same amount — from dividing rounding noise
 * by ~0. */
static double rel_err(const float *got, const float *want, int64_t n, double floor_norm) {
    double d = 0, w = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)got[i] - (double)want[i];
        d += e * e, w += (double)want[i] * want[i];
    }
    return sqrt(d) / fmax(sqrt(w), floor_norm);
}

static void golden_check(bool all_trainable) {
    vla_safetensors in, ex;
    if (vla_safetensors_open(test_source_path(IN_PATH), &in) != VLA_OK)
        fail_msg("%s (see the top of this file)", vla_error_message());
    if (vla_safetensors_open(test_source_path(EXP_PATH), &ex) != VLA_OK)
        fail_msg("%s (run /usr/bin/python3 tools/ref_groot.py)", vla_error_message());
    vla_policy *p = make_policy(all_trainable);
    for (int64_t i = 0; i < p->specs.n; i++) test_param_load(p, i, &in, p->specs.items[i].name);
    const vla_policy_config *c = &p->cfg;
    const int32_t *cu = tensor_any(&in, "batch.cu_seqlens");
    const vla_safetensors_tensor *ck;
    assert_int_equal(vla_safetensors_get(&in, "batch.cu_seqlens", &ck), VLA_OK);
    int32_t S = (int32_t)ck->numel - 1;
    int64_t T = cu[S], H = c->action.horizon, ad = c->action.action_dim;
    const int32_t *roles32 = tensor_any(&in, "batch.roles"), *pad32 = tensor_any(&in, "batch.action_is_pad");
    uint8_t *roles = malloc((size_t)T), *pad = malloc((size_t)(S * H));
    for (int64_t i = 0; i < T; i++) roles[i] = (uint8_t)roles32[i];
    for (int64_t i = 0; i < S * H; i++) pad[i] = (uint8_t)pad32[i];
    vla_batch b = {0};
    b.n_samples = S, b.n_tokens = T, b.cu_seqlens = cu, b.roles = roles;
    b.positions = tensor_any(&in, "batch.positions"), b.groups = tensor_any(&in, "batch.groups");
    b.token_ids = tensor_any(&in, "batch.token_ids"), b.n_images = S;
    b.cu_images = tensor_any(&in, "batch.cu_images"), b.images = tensor_any(&in, "batch.images");
    b.state = tensor_any(&in, "batch.state"), b.actions = tensor_any(&in, "batch.actions");
    b.action_is_pad = pad, b.real_action_dim = tensor_any(&in, "batch.real_action_dim");
    b.embodiment = tensor_any(&in, "batch.embodiment"), b.seed = 42;
    b.sample_keys = tensor_any(&in, "batch.sample_keys");
    double L;
    float *g = grads_of(p, &b, &L, NULL);
    /* the same draws as exported */
    const float *tt, *noise;
    int32_t S2;
    assert_int_equal(vla_groot_last_flow(p, &tt, &noise, &S2), VLA_OK);
    assert_memory_equal(tt, tensor_f32(&in, "flow.t", S), (size_t)S * 4);
    assert_memory_equal(noise, tensor_f32(&in, "flow.noise", S * H * ad), (size_t)(S * H * ad) * 4);

    double want = tensor_f32(&ex, "loss", 1)[0];
    if (fabs(L - want) > test_tol(1e-5) * fabs(want)) /* widened by the backend's declared tolerance */ fail_msg("loss %.9g, PyTorch %.9g", L, want);
    double total = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        char name[200];
        snprintf(name, sizeof name, "grad.%s", p->specs.items[i].name);
        const float *r = tensor_f32(&ex, name, p->specs.items[i].numel);
        for (int64_t k = 0; k < p->specs.items[i].numel; k++) total += (double)r[k] * r[k];
    }
    total = sqrt(total);
    double worst = 0, worst_big = 0; /* all tensors / those above the floor */
    const char *worst_name = "";
    int compared = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        if (!p->params[i].grad) continue;
        char name[200];
        snprintf(name, sizeof name, "grad.%s", p->specs.items[i].name);
        const float *r = tensor_f32(&ex, name, p->specs.items[i].numel);
        double e = rel_err(g + (p->params[i].grad - p->grads), r, p->specs.items[i].numel, 1e-4 * total);
        if (e > worst) worst = e, worst_name = p->specs.items[i].name;
        double rn = sqrt(dot_self(r, p->specs.items[i].numel));
        if (rn >= 1e-4 * total && e > worst_big) worst_big = e;
        compared++;
    }
    print_message("groot-nano %s: loss %.9g (PyTorch %.9g), %d gradient tensors, worst relative error %.3g (%s); "
                  "%.3g among tensors above the floor\n",
                  all_trainable ? "all trainable" : "published freezing", L, want, compared, worst, worst_name,
                  worst_big);
    if (!(worst <= test_tol(1e-4))) fail_msg("gradient %s: relative error %.3g > 1e-4", worst_name, worst);

    /* sampling from the exported noise: obs built from the same tasks/images/state */
    const char *tasks[MAXS];
    char key[32];
    for (int s = 0; s < S; s++) {
        snprintf(key, sizeof key, "task.%d", s);
        tasks[s] = vla_safetensors_meta_get(&in, key);
        assert_non_null(tasks[s]);
    }
    vla_observation o = {0};
    o.n_samples = S, o.task = tasks, o.images = b.images, o.state = b.state, o.embodiment = b.embodiment;
    o.seed = 5, o.sample_keys = b.sample_keys;
    float *act = malloc((size_t)(S * H * ad) * 4);
    assert_int_equal(vla_policy_sample_actions(p, &o, act), VLA_OK);
    const float *ref = tensor_f32(&ex, "sample.actions", S * H * ad);
    double e = rel_err(act, ref, S * H * ad, 0);
    print_message("groot-nano sampled actions: relative error %.3g\n", e);
    if (!(e <= test_tol(1e-4))) fail_msg("sampled actions: relative error %.3g", e);
    free(act), free(g), free(roles), free(pad);
    vla_policy_free(p);
    vla_safetensors_close(&in);
    vla_safetensors_close(&ex);
}

static void test_golden(void **state) {
    (void)state;
    if (getenv("VLA_GROOT_WRITE_GOLDEN")) {
        write_inputs();
        print_message("wrote %s; now run /usr/bin/python3 tools/ref_groot.py\n", IN_PATH);
        return;
    }
    golden_check(false);
    golden_check(true);
}

/* Freezing: no gradients and no saved backbone activations; results do
 * not depend on the thread count; two calls give the same bits. */
/* recompute_layers (activation checkpointing): every stack (ViT, LM, VL
 * adapter, DiT with its two block kinds) runs each layer's forward again in
 * the backward; the loss, the gradients and (FP8) the next step's loss —
 * its scales come from this step's amax — are the bits of the same policy
 * keeping every layer, and less is kept for the backward. */
static void test_recompute_layers_same_bits(void **state) {
    (void)state;
    static const int ids[] = {0, 1, 2};
    for (int m = 0; m < 4; m++) {
        bool all = m & 1;
        vla_precision mode = m & 2 ? VLA_PREC_FP8 : VLA_PREC_FP32;
        vla_policy *p[2];
        double L[2], L2[2];
        float *g[2];
        size_t kept[2];
        tbatch t;
        for (int k = 0; k < 2; k++) {
            p[k] = make_policy_deep(all, true);
            if (mode != VLA_PREC_FP32) assert_int_equal(vla_policy_set_precision(p[k], mode, NULL), VLA_OK);
            p[k]->recompute_layers = k == 1;
            if (k == 0) make_batch(p[k], ids, 3, &t);
            g[k] = grads_of(p[k], &t.b, &L[k], NULL);
            kept[k] = vla_groot_saved_bytes(p[k]);
            if (mode == VLA_PREC_FP8) vla_policy_fp8_update(p[k]);
            L2[k] = run_loss(p[k], &t.b, NULL);
        }
        print_message("groot-nano (deep, %s, %s) kept for backward: %zu bytes, %zu recomputing\n",
                      all ? "all trainable" : "published freezing", vla_precision_name(mode), kept[0], kept[1]);
        assert_true(L[0] == L[1]);
        assert_true(L2[0] == L2[1]);
        assert_memory_equal(g[0], g[1], (size_t)p[0]->n_grad_floats * sizeof(float));
        assert_true(kept[1] < kept[0]);
        assert_true(p[1]->act_peak_bytes > 0 && p[1]->act_peak_bytes < p[0]->act_peak_bytes);
        for (int k = 0; k < 2; k++) free(g[k]), vla_policy_free(p[k]);
        tbatch_free(&t);
    }
}

static void test_frozen_and_deterministic(void **state) {
    (void)state;
    vla_policy *pf = make_policy(false), *pa = make_policy(true);
    static const int ids[] = {0, 1, 2};
    tbatch t;
    make_batch(pf, ids, 3, &t);
    for (int64_t i = 0; i < pf->specs.n; i++)
        assert_true((pf->params[i].grad != NULL) == (pf->specs.items[i].group >= VLA_GROUP_VL_ADAPTER));
    double Lf, La;
    float *gf = grads_of(pf, &t.b, &Lf, NULL), *ga = grads_of(pa, &t.b, &La, NULL);
    size_t bf = vla_groot_saved_bytes(pf), ba = vla_groot_saved_bytes(pa);
    print_message("groot-nano saved for backward: %zu bytes (published freezing) vs %zu (all trainable)\n", bf, ba);
    assert_true(Lf == La);
    assert_true(2 * bf < ba);
    /* the head's gradients do not depend on what upstream trains */
    for (int64_t i = 0; i < pf->specs.n; i++) {
        if (!pf->params[i].grad) continue;
        const float *x = gf + (pf->params[i].grad - pf->grads), *y = ga + (pa->params[i].grad - pa->grads);
        assert_memory_equal(x, y, (size_t)pf->specs.items[i].numel * sizeof(float));
    }
    int threads = omp_get_max_threads();
    vla_parallel_always = 1; /* give every loop a team: this batch is below the thresholds */
    omp_set_num_threads(1);
    double L1;
    float *g1 = grads_of(pa, &t.b, &L1, NULL);
    omp_set_num_threads(threads > 1 ? threads : 2);
    double L2;
    float *g2 = grads_of(pa, &t.b, &L2, NULL);
    omp_set_num_threads(threads);
    vla_parallel_always = 0;
    assert_true(L1 == La && L2 == La);
    assert_memory_equal(g1, ga, (size_t)pa->n_grad_floats * sizeof(float));
    assert_memory_equal(g2, ga, (size_t)pa->n_grad_floats * sizeof(float));
    free(gf), free(ga), free(g1), free(g2);
    tbatch_free(&t);
    vla_policy_free(pf);
    vla_policy_free(pa);
}

/* Shared prefixes: a state-only batch that repeats a prompt runs the
 * backbone and the VL adapter once per distinct prompt, and its loss and
 * gradients are the unshared run's (checked by finite differences above) up
 * to summation order; a batch with images shares nothing. */
static void shared_check(bool all_trainable) {
    vla_policy *p = make_policy(all_trainable);
    static const int ids[] = {0, 4, 2, 0}; /* prompts: "push the T" (ids 0, 4, 0) and "pick up the red block please" */
    tbatch t;
    g_no_images = true;
    make_batch(p, ids, 4, &t);
    g_no_images = false;
    double Ls, Lu;
    float *gs = grads_of(p, &t.b, &Ls, NULL);
    assert_int_equal(vla_groot_last_prefix_count(p), 2);
    vla_groot_set_share_prefixes(p, false);
    float *gu = grads_of(p, &t.b, &Lu, NULL);
    assert_int_equal(vla_groot_last_prefix_count(p), 4);
    vla_groot_set_share_prefixes(p, true);
    if (fabs(Ls - Lu) > 1e-6 * fabs(Lu)) fail_msg("shared loss %.9g vs unshared %.9g", Ls, Lu);
    /* a floor of 1e-6 of the whole gradient: K biases have exact gradient 0
     * (softmax ignores a shift shared by a query's scores), so both runs
     * hold rounding noise there */
    double floor = 1e-6 * sqrt(test_cpu_backend()->sum_squares(gu, p->n_grad_floats));
    bool lm_seen = false;
    for (int64_t i = 0; i < p->specs.n; i++) {
        if (!p->params[i].grad) continue;
        int64_t off = p->params[i].grad - p->grads, n = p->specs.items[i].numel;
        double dn = 0, un = 0;
        for (int64_t k = 0; k < n; k++) {
            double d = (double)gs[off + k] - (double)gu[off + k];
            dn += d * d, un += (double)gu[off + k] * gu[off + k];
        }
        if (!(sqrt(dn) <= test_tol(1e-5) * sqrt(un) + floor))
            fail_msg("%s: shared gradient differs, |Δ| %.3g vs |g| %.3g", p->specs.items[i].name, sqrt(dn), sqrt(un));
        if (p->specs.items[i].group == VLA_GROUP_LANGUAGE && un > 0) lm_seen = true;
    }
    assert_true(lm_seen == all_trainable); /* the shared rows' gradient reached the LM when it trains */
    tbatch ti;
    make_batch(p, ids, 4, &ti);
    run_loss(p, &ti.b, NULL);
    assert_int_equal(vla_groot_last_prefix_count(p), 4);
    free(gs), free(gu);
    tbatch_free(&t), tbatch_free(&ti);
    vla_policy_free(p);
}

static void test_shared_prefixes(void **state) {
    (void)state;
    shared_check(true);
    shared_check(false);
}

/* groot-tiny (PushT size, nothing frozen, one embodiment) through the
 * interface with the optional arrays left NULL. */
static void test_tiny_smoke(void **state) {
    (void)state;
    vla_policy_config cfg;
    if (vla_policy_config_load("groot-tiny", &cfg) != VLA_OK) fail_msg("config: %s", vla_error_message());
    vla_policy *p = NULL;
    if (vla_policy_create(&cfg, test_backend(), &p) != VLA_OK) fail_msg("create: %s", vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 1), VLA_OK);
    assert_int_equal(p->n_grad_floats, p->n_weight_floats);
    static const int ids[] = {0, 1};
    tbatch t;
    make_batch(p, ids, 2, &t);
    t.b.embodiment = NULL, t.b.real_action_dim = NULL, t.b.sample_keys = NULL;
    memset(t.emb, 0, sizeof t.emb);
    double L;
    float *g = grads_of(p, &t.b, &L, NULL);
    assert_true(isfinite(L) && L > 0);
    assert_int_equal(test_cpu_backend()->count_nonfinite(g, p->n_grad_floats), 0);
    assert_true(test_cpu_backend()->sum_squares(g, p->n_grad_floats) > 0);
    int64_t n = 2 * cfg.action.horizon * cfg.action.action_dim;
    float *a = malloc((size_t)n * 4);
    vla_observation o = make_obs(&t);
    o.sample_keys = NULL, o.embodiment = NULL;
    assert_int_equal(vla_policy_sample_actions(p, &o, a), VLA_OK);
    assert_int_equal(test_cpu_backend()->count_nonfinite(a, n), 0);
    free(a), free(g);
    tbatch_free(&t);
    vla_policy_free(p);
}

static void test_bad_batch(void **state) {
    (void)state;
    vla_policy *p = make_policy(false);
    static const int ids[] = {0, 2};
    tbatch t;
    make_batch(p, ids, 2, &t);
    int32_t emb[2] = {0, 5};
    t.b.embodiment = emb;
    vla_loss_info info;
    assert_int_equal(vla_policy_loss(p, &t.b, true, &info), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_policy_backward(p), VLA_ERR_INVALID_ARG);
    t.b.embodiment = t.emb;
    t.roles[t.cu[1] - 1] = VLA_ROLE_STATE; /* an action token turned into a second state token */
    assert_int_equal(vla_policy_loss(p, &t.b, true, &info), VLA_ERR_INVALID_ARG);
    tbatch_free(&t);
    vla_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_fd_published_freezing),
        cmocka_unit_test(test_fd_all_trainable),
        cmocka_unit_test(test_pack_equals_alone),
        cmocka_unit_test(test_sample_cached),
        cmocka_unit_test(test_chunks_replay),
        cmocka_unit_test(test_overfit),
        cmocka_unit_test(test_frozen_and_deterministic),
        cmocka_unit_test(test_recompute_layers_same_bits),
        cmocka_unit_test(test_shared_prefixes),
        cmocka_unit_test(test_tiny_smoke),
        cmocka_unit_test(test_bad_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
