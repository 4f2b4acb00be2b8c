/* eval.c — closed-loop evaluation with action chunking (see eval.h). */
#include "eval/eval.h"

#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "base/timer.h"
#include "io/video.h"
#include "sim/env.h"
#include "train/pretrained.h"
#include "train/published.h"

void vla_eval_opts_default(vla_eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->env = "pusht";
    o->n_episodes = 50;
    o->seed = 100000;
    o->n_videos = 2;
}

typedef struct {
    vla_env *env;
    vla_eval_history *hist; /* the policy's state history (policy rollouts) */
    int ref_src;            /* relative actions: where observation.state comes from (-1: absolute actions) */
    double ref[VLA_ENV_MAX_DIM]; /* observation.state now: relative actions are added to it */
    bool done, success;
    int steps;
    double max_cov, max_rew, sum_rew;
    double *actions; /* kept for videos */
    vla_status st;
    char err[512];
} episode;

typedef enum { ROLL_POLICY, ROLL_ZERO } roll_kind;

/* Which env vector feeds a state feature: observation.state is agent_pos when
 * widths agree (PushT, as LeRobot's pusht) else the full state vector (Reach);
 * observation.environment_state is env_state (PushT's block keypoints). */
enum { SRC_AGENT_POS, SRC_STATE, SRC_ENV_STATE };
#define MAX_SKEYS 8

typedef struct {
    int n, src[MAX_SKEYS], width[MAX_SKEYS];
    int frame_w, K; /* one frame's width; frames of history (the state is K frames) */
} state_map;

static vla_status state_source(const vla_env_spec *spec, int64_t width, int *src) {
    if (width == spec->agent_pos_dim) *src = SRC_AGENT_POS;
    else if (width == spec->state_dim) *src = SRC_STATE;
    else
        return vla_error(VLA_ERR_INVALID_ARG,
                         "eval: the policy's observation.state has %lld dims; env '%s' offers agent_pos (%d) or "
                         "state (%d)",
                         (long long)width, spec->name, spec->agent_pos_dim, spec->state_dim);
    return VLA_OK;
}

/* The checkpoint's state keys (features.state_keys; none: observation.state
 * alone) → env vectors, checked against the state width it was trained on
 * (one frame's: state_width / n_obs_steps). */
static vla_status state_mapping(const vla_env_spec *spec, const vla_pretrained_meta *m, state_map *map) {
    memset(map, 0, sizeof *map);
    map->K = m->n_obs_steps > 1 ? m->n_obs_steps : 1;
    if (m->state_width % map->K != 0)
        return vla_error(VLA_ERR_INVALID_ARG, "eval: state width %lld is not %d frames of history",
                         (long long)m->state_width, map->K);
    int64_t fw = m->state_width / map->K;
    map->frame_w = (int)fw;
    if (!m->state_keys[0]) {
        map->n = 1, map->width[0] = (int)fw;
        return state_source(spec, fw, &map->src[0]);
    }
    int total = 0;
    for (const char *q = m->state_keys; *q;) {
        size_t len = strcspn(q, ",");
        if (map->n >= MAX_SKEYS) return vla_error(VLA_ERR_INVALID_ARG, "eval: too many state keys '%s'", m->state_keys);
        int i = map->n++;
        if (len == 17 && !strncmp(q, "observation.state", len)) {
            /* its width: what is left once the other keys are counted */
            int rest = 0;
            for (const char *r = q + len + (q[len] == ','); *r;) {
                size_t l2 = strcspn(r, ",");
                if (l2 == 29 && !strncmp(r, "observation.environment_state", l2)) rest += spec->env_state_dim;
                r += l2 + (r[l2] == ',');
            }
            map->width[i] = (int)fw - total - rest;
            VLA_TRY(state_source(spec, map->width[i], &map->src[i]));
        } else if (len == 29 && !strncmp(q, "observation.environment_state", len)) {
            map->src[i] = SRC_ENV_STATE, map->width[i] = spec->env_state_dim;
        } else {
            return vla_error(VLA_ERR_UNSUPPORTED,
                             "eval: state key '%.*s' has no counterpart in env '%s' (observation.state, "
                             "observation.environment_state)",
                             (int)len, q, spec->name);
        }
        total += map->width[i];
        q += len + (q[len] == ',');
    }
    if (total != fw)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "eval: state keys '%s' give %d dims in env '%s', the policy was trained on %lld per frame",
                         m->state_keys, total, spec->name, (long long)fw);
    return VLA_OK;
}

/* The policy's raw (unnormalised) state for an observation, as the loader
 * concatenates the dataset features. */
static void state_from_obs(const state_map *map, const vla_env_obs *ob, float *out) {
    for (int i = 0, off = 0; i < map->n; off += map->width[i], i++) {
        const double *v = map->src[i] == SRC_AGENT_POS ? ob->agent_pos : map->src[i] == SRC_STATE ? ob->state : ob->env_state;
        for (int k = 0; k < map->width[i]; k++) out[off + k] = (float)v[k];
    }
}

vla_status vla_eval_policy_state(const char *env, const vla_pretrained_meta *meta, const vla_env_obs *ob, float *out) {
    const vla_env_vtable *vt = vla_env_find(env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", env);
    state_map map;
    VLA_TRY(state_mapping(vt->spec, meta, &map));
    state_from_obs(&map, ob, out);
    return VLA_OK;
}

/* ---- state history (n_obs_steps) ----------------------------------------------
 * A ring of the last K frames' raw state vectors; before K frames were seen the
 * oldest slots repeat the first frame, as the loader clamps rows to the
 * episode's first. */
struct vla_eval_history {
    state_map map;
    int64_t pushed;
    float *ring; /* [K × frame_w]; frame n lives at slot n % K */
};

vla_status vla_eval_history_create(const char *env, const vla_pretrained_meta *meta, vla_eval_history **out) {
    *out = NULL;
    const vla_env_vtable *vt = vla_env_find(env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", env);
    vla_eval_history *h = calloc(1, sizeof *h);
    if (!h) return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    vla_status st = state_mapping(vt->spec, meta, &h->map);
    if (st == VLA_OK && !(h->ring = calloc((size_t)(h->map.K * h->map.frame_w) + 1, sizeof(float))))
        st = vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    if (st != VLA_OK) {
        vla_eval_history_free(h);
        return st;
    }
    *out = h;
    return VLA_OK;
}

void vla_eval_history_free(vla_eval_history *h) {
    if (!h) return;
    free(h->ring);
    free(h);
}

void vla_eval_history_reset(vla_eval_history *h) { h->pushed = 0; }

void vla_eval_history_push(vla_eval_history *h, const vla_env_obs *ob) {
    state_from_obs(&h->map, ob, h->ring + (h->pushed % h->map.K) * h->map.frame_w);
    h->pushed++;
}

int64_t vla_eval_history_width(const vla_eval_history *h) { return (int64_t)h->map.K * h->map.frame_w; }

void vla_eval_history_state(const vla_eval_history *h, float *out) {
    int K = h->map.K, fw = h->map.frame_w;
    for (int f = 0; f < K; f++) {
        /* frame index of slot f (oldest first), clamped to the first frame */
        int64_t n = h->pushed - K + f;
        if (n < 0) n = 0;
        if (h->pushed == 0) {
            memset(out + f * fw, 0, (size_t)fw * sizeof(float));
            continue;
        }
        memcpy(out + f * fw, h->ring + (n % K) * fw, (size_t)fw * sizeof(float));
    }
}

#define MAX_POLICIES 16

/* The env's current observation into the episode's state history. */
static void episode_observe(episode *e) {
    vla_env_obs ob;
    memset(&ob, 0, sizeof ob);
    ob.type = VLA_OBS_STATE;
    vla_env_observe(e->env, &ob);
    vla_eval_history_push(e->hist, &ob);
    if (e->ref_src >= 0)
        memcpy(e->ref, e->ref_src == SRC_AGENT_POS ? ob.agent_pos : ob.state, sizeof e->ref);
}

/* One rollout's fixed inputs and the batch buffers each re-plan reuses. */
typedef struct {
    const vla_eval_opts *o;
    roll_kind kind;
    const vla_env_spec *spec;
    vla_pretrained *pm;
    vla_policy *const *pols;
    int npol, N, A, max_steps, n_act;
    int64_t H, Sd, Ad, img, cams, pcams;
    int cam_idx[VLA_ENV_MAX_CAMERAS]; /* the env camera feeding each trained image slot */
    float *state, *images, *acts; /* per running episode: normalised state, images, action chunk */
    uint8_t *valid;               /* per running episode and image slot: trained on it */
    uint64_t *keys;
    int32_t *emb;                 /* per running episode: the checkpoint's embodiment id for this env */
    const char **tasks;
    int *active;                  /* the running episodes, this re-plan */
} roll_ctx;

static void roll_ctx_free(roll_ctx *c) {
    free(c->state), free(c->images), free(c->valid), free(c->acts), free(c->keys), free(c->emb), free(c->tasks),
        free(c->active);
}

/* The policy's shapes, checked against the env and the checkpoint, and the
 * buffers: (kind ROLL_ZERO needs only the list of running episodes). */
static vla_status rollout_prepare(roll_ctx *c) {
    const vla_env_spec *spec = c->spec;
    int N = c->N;
    if (c->kind == ROLL_POLICY) {
        vla_pretrained *pm = c->pm;
        vla_policy *p = pm->policy;
        c->H = p->cfg.action.horizon, c->Sd = p->cfg.action.state_dim, c->Ad = p->cfg.action.action_dim;
        /* cams: the cameras the policy was trained on; pcams: its image slots. A
         * state-only policy (trained with no camera) must see no image tokens
         * here either: the slots it has but was not trained on are marked invalid. */
        c->img = p->cfg.vision.image_size, c->cams = pm->meta.cameras, c->pcams = p->cfg.vision.cameras;
        if (c->cams > c->pcams)
            return vla_error(VLA_ERR_FORMAT, "eval: the checkpoint says %lld cameras, the policy has %lld image slots",
                             (long long)c->cams, (long long)c->pcams);
        if (c->cams > VLA_ENV_MAX_CAMERAS)
            return vla_error(VLA_ERR_UNSUPPORTED, "eval: the policy takes %lld cameras, envs have at most %d",
                             (long long)c->cams, VLA_ENV_MAX_CAMERAS);
        /* the camera each slot was trained on, by its dataset key; older checkpoints: the env's order */
        const char *q = pm->meta.image_keys;
        int n_env_cams = spec->n_cameras > 0 ? spec->n_cameras : 1;
        for (int64_t k = 0; k < c->cams; k++) {
            if (*q) {
                char key[256];
                size_t len = strcspn(q, ",");
                snprintf(key, sizeof key, "%.*s", (int)(len < sizeof key ? len : sizeof key - 1), q);
                q += len + (q[len] == ',');
                vla_status cs = vla_env_camera_index(spec, key, &c->cam_idx[k]);
                if (cs != VLA_OK) return vla_error_context(cs, "eval: the policy was trained on camera '%s'", key);
            } else if (k < n_env_cams) {
                c->cam_idx[k] = (int)k;
            } else {
                return vla_error(VLA_ERR_INVALID_ARG, "eval: the policy takes %lld cameras, env '%s' has %d",
                                 (long long)c->cams, spec->name, n_env_cams);
            }
        }
        if (pm->meta.action_width != c->A)
            return vla_error(VLA_ERR_INVALID_ARG, "eval: the policy predicts %lld action dims, env '%s' takes %d",
                             (long long)pm->meta.action_width, spec->name, c->A);
        state_map smap;
        vla_status sst = state_mapping(spec, &pm->meta, &smap);
        if (sst != VLA_OK && pm->meta.embodiment_name[0] && strcmp(pm->meta.embodiment_name, spec->name) != 0)
            return vla_error_context(sst, "the checkpoint's embodiment '%s' (id %d) was trained on another robot than "
                                     "env '%s'", pm->meta.embodiment_name, (int)pm->meta.embodiment, spec->name);
        VLA_TRY(sst);
        c->n_act = c->o->n_action_steps > 0 ? c->o->n_action_steps : (int)(c->H < 8 ? c->H : 8);
        if (c->n_act > c->H) c->n_act = (int)c->H;
        c->state = calloc((size_t)(N * c->Sd) + 1, sizeof *c->state);
        c->images = calloc((size_t)(N * c->pcams * 3 * c->img * c->img) + 1, sizeof *c->images);
        c->valid = calloc((size_t)(N * c->pcams) + 1, 1);
        for (int64_t k = 0; c->valid && k < N * c->pcams; k++) c->valid[k] = k % c->pcams < c->cams;
        c->acts = calloc((size_t)(N * c->H * c->Ad) + 1, sizeof *c->acts);
        c->keys = calloc((size_t)N, sizeof *c->keys);
        c->emb = calloc((size_t)N, sizeof *c->emb);
        for (int i = 0; c->emb && i < N; i++) c->emb[i] = pm->meta.embodiment;
        c->tasks = calloc((size_t)N, sizeof *c->tasks);
    }
    c->active = calloc((size_t)N, sizeof *c->active);
    if (!c->active ||
        (c->kind == ROLL_POLICY && (!c->state || !c->images || !c->valid || !c->acts || !c->keys || !c->emb || !c->tasks)))
        return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    return VLA_OK;
}

/* Every episode's env made and reset to its seed, its state history seeded
 * with the first observation; the first `keep_actions` record their actions. */
static vla_status start_episodes(roll_ctx *c, episode *eps, int keep_actions) {
    const vla_eval_opts *o = c->o;
    for (int i = 0; i < c->N; i++) {
        memset(&eps[i], 0, sizeof eps[i]);
        VLA_TRY(vla_env_make(o->env, &eps[i].env));
        vla_env_info info;
        VLA_TRY(vla_env_reset(eps[i].env, o->seed + (uint64_t)i, &info));
        eps[i].max_cov = info.coverage;
        if (c->kind == ROLL_POLICY) {
            VLA_TRY(vla_eval_history_create(o->env, &c->pm->meta, &eps[i].hist));
            eps[i].ref_src = -1;
            if (c->pm->meta.relative_actions) VLA_TRY(state_source(c->spec, c->A, &eps[i].ref_src));
            episode_observe(&eps[i]);
        }
        if (i < keep_actions && !(eps[i].actions = calloc((size_t)(c->max_steps * c->A), sizeof(double))))
            return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    }
    return VLA_OK;
}

/* The policy's inputs for the `na` running episodes, in parallel: the last
 * K frames of state (normalised), the rendered camera, the noise key. */
static vla_status gather_observations(roll_ctx *c, episode *eps, int na, int64_t replan) {
    vla_pretrained *pm = c->pm;
    int64_t Sd = c->Sd, img = c->img, cams = c->cams, pcams = c->pcams;
    int bad = -1;
#pragma omp parallel for schedule(dynamic)
    for (int j = 0; j < na; j++) {
        episode *e = &eps[c->active[j]];
        float *sd = c->state + (int64_t)j * Sd;
        memset(sd, 0, (size_t)Sd * sizeof(float));
        vla_eval_history_state(e->hist, sd); /* the last K frames, oldest first */
        vla_normalize(&pm->state_norm, sd, sd, 1);
        if (cams > 0) {
            uint8_t *rgb = malloc((size_t)(img * img * 3));
            int64_t plane = img * img;
            for (int64_t cam = 0; cam < cams; cam++) {
                if (!rgb || vla_env_render_camera(e->env, c->cam_idx[cam], (int)img, (int)img, rgb, 0) != VLA_OK) {
#pragma omp critical
                    bad = c->active[j];
                    break;
                }
                float *dst = c->images + ((int64_t)j * pcams + cam) * 3 * plane;
                for (int64_t q = 0; q < plane; q++)
                    for (int ch = 0; ch < 3; ch++) dst[ch * plane + q] = rgb[q * 3 + ch] * (1.0f / 255.0f);
            }
            free(rgb);
        }
        c->keys[j] = (uint64_t)c->active[j] * 1000003ULL + (uint64_t)replan;
        c->tasks[j] = pm->meta.task[0] ? pm->meta.task : c->spec->task; /* a published fine-tune stores no task */
    }
    if (bad >= 0) return vla_error(VLA_ERR_INTERNAL, "eval: rendering episode %d failed", bad);
    return VLA_OK;
}

/* One action chunk per running episode, in env units: G groups of episodes,
 * one policy copy each, in parallel (one group, npol = 1, leaves the policy
 * its own OpenMP threads); then unnormalised, and made absolute for a policy
 * trained on relative actions. */
static vla_status sample_chunks(roll_ctx *c, const episode *eps, int na) {
    int64_t H = c->H, Ad = c->Ad, Sd = c->Sd, pcams = c->pcams;
    int G = c->npol < na ? c->npol : na;
    vla_status gst[MAX_POLICIES];
    char gerr[MAX_POLICIES][256];
    int64_t img_fl = pcams * 3 * c->img * c->img;
#pragma omp parallel for num_threads(G) schedule(static, 1) if (G > 1)
    for (int g = 0; g < G; g++) {
        int lo = na * g / G, hi = na * (g + 1) / G;
        vla_observation obs = {.n_samples = hi - lo, .task = c->tasks + lo, .images = c->images + lo * img_fl,
                               .image_valid = c->valid + lo * pcams, .state = c->state + (int64_t)lo * Sd, .embodiment = c->emb + lo,
                               .seed = c->o->seed, .sample_keys = c->keys + lo};
        gst[g] = vla_policy_sample_actions(c->pols[g], &obs, c->acts + (int64_t)lo * H * Ad);
        if (gst[g] != VLA_OK) snprintf(gerr[g], sizeof gerr[g], "%s", vla_error_message());
    }
    for (int g = 0; g < G; g++)
        if (gst[g] != VLA_OK) return vla_error(gst[g], "eval: sample_actions: %s", gerr[g]);
    /* the action normaliser's channels: one step's, or every step's (action_stats_per_step) */
    int64_t aw = c->pm->action_norm.dim / (c->pm->meta.action_stats_per_step ? H : 1);
    for (int j = 0; j < na; j++) {
        float *a = c->acts + (int64_t)j * H * Ad;
        const episode *e = &eps[c->active[j]];
        vla_unnormalize_chunk(&c->pm->action_norm, a, H, aw, Ad);
        if (e->ref_src >= 0) /* relative to observation.state at this re-plan */
            for (int64_t h = 0; h < H; h++)
                for (int d = 0; d < c->A; d++) a[h * Ad + d] += (float)e->ref[d];
    }
    return VLA_OK;
}

/* Up to n_act env steps of each running episode, in parallel: the chunk's
 * actions (zeros for ROLL_ZERO), until the episode ends. */
static vla_status act(roll_ctx *c, episode *eps, int na) {
    int A = c->A;
#pragma omp parallel for schedule(dynamic)
    for (int j = 0; j < na; j++) {
        episode *e = &eps[c->active[j]];
        for (int k = 0; k < c->n_act && !e->done; k++) {
            double a[VLA_ENV_MAX_DIM] = {0};
            if (c->kind == ROLL_POLICY)
                for (int d = 0; d < A; d++) a[d] = c->acts[((int64_t)j * c->H + k) * c->Ad + d];
            for (int d = 0; d < A; d++)
                if (!isfinite(a[d])) a[d] = 0; /* a diverged policy still gets an episode, not a crash */
            vla_env_step_result r;
            vla_status s = vla_env_step_width(e->env, a, A, &r);
            if (s != VLA_OK) {
                e->st = s;
                snprintf(e->err, sizeof e->err, "%s", vla_error_message());
                e->done = true;
                break;
            }
            if (e->actions) memcpy(e->actions + (int64_t)e->steps * A, a, (size_t)A * sizeof(double));
            if (e->hist) episode_observe(e);
            e->steps++;
            e->sum_rew += r.reward;
            if (r.reward > e->max_rew) e->max_rew = r.reward;
            if (r.info.coverage > e->max_cov) e->max_cov = r.info.coverage;
            if (r.info.is_success) e->success = true;
            if (r.terminated || r.truncated || e->steps >= c->max_steps) e->done = true;
        }
    }
    for (int j = 0; j < na; j++)
        if (eps[c->active[j]].st != VLA_OK)
            return vla_error(eps[c->active[j]].st, "eval: episode %d: %s", c->active[j], eps[c->active[j]].err);
    return VLA_OK;
}

static void summarize(const episode *eps, int N, double t0, vla_eval_summary *sum) {
    memset(sum, 0, sizeof *sum);
    sum->episodes = N;
    for (int i = 0; i < N; i++) {
        sum->success_rate += eps[i].success;
        sum->mean_max_coverage += eps[i].max_cov;
        sum->mean_max_reward += eps[i].max_rew;
        sum->mean_sum_reward += eps[i].sum_rew;
        sum->mean_steps += eps[i].steps;
    }
    sum->success_rate /= N, sum->mean_max_coverage /= N, sum->mean_max_reward /= N, sum->mean_sum_reward /= N;
    sum->mean_steps /= N;
    sum->seconds = vla_now_s() - t0;
}

/* N episodes in closed loop: re-plan a chunk for every running episode,
 * execute n_act actions of it, until every episode has ended. */
static vla_status rollout(const vla_eval_opts *o, roll_kind kind, vla_pretrained *pm, vla_policy *const *pols,
                          int npol, int N, episode *eps, int keep_actions, vla_eval_summary *sum) {
    double t0 = vla_now_s();
    const vla_env_vtable *vt = vla_env_find(o->env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", o->env);
    roll_ctx c = {.o = o, .kind = kind, .spec = vt->spec, .pm = pm, .pols = pols, .npol = npol, .N = N,
                  .A = vt->spec->action_dim, .H = 1};
    c.max_steps = o->max_steps > 0 ? o->max_steps : vt->spec->max_episode_steps;
    c.n_act = c.max_steps;
    vla_status st = rollout_prepare(&c);
    if (st == VLA_OK) st = start_episodes(&c, eps, keep_actions);
    if (st != VLA_OK) goto done;
    for (int64_t replan = 0;; replan++) {
        int na = 0;
        for (int i = 0; i < N; i++)
            if (!eps[i].done) c.active[na++] = i;
        if (na == 0) break;
        if (kind == ROLL_POLICY) {
            if ((st = gather_observations(&c, eps, na, replan)) != VLA_OK) goto done;
            if ((st = sample_chunks(&c, eps, na)) != VLA_OK) goto done;
        }
        if ((st = act(&c, eps, na)) != VLA_OK) goto done;
    }
    summarize(eps, N, t0, sum);
done:
    for (int i = 0; i < N; i++) {
        vla_env_free(eps[i].env);
        vla_eval_history_free(eps[i].hist);
        eps[i].env = NULL, eps[i].hist = NULL;
    }
    roll_ctx_free(&c);
    return st;
}

static json_t *summary_json(const vla_eval_summary *s) {
    /* LeRobot's names; avg_max_reward is its reward (PushT: clip(coverage / 0.95)), the raw coverage beside it */
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "n_episodes", s->episodes, "pc_success", 100 * s->success_rate,
                     "avg_max_reward", s->mean_max_reward, "avg_max_coverage", s->mean_max_coverage, "avg_sum_reward",
                     s->mean_sum_reward, "avg_steps", s->mean_steps, "eval_s", s->seconds);
}

static json_t *episodes_json(const vla_eval_opts *o, const episode *eps, int N) {
    json_t *a = json_array();
    for (int i = 0; i < N; i++)
        json_array_append_new(a, json_pack("{s:i, s:I, s:b, s:f, s:f, s:f, s:i}", "episode_ix", i, "seed",
                                           (json_int_t)(o->seed + (uint64_t)i), "success", eps[i].success,
                                           "max_coverage", eps[i].max_cov, "max_reward", eps[i].max_rew, "sum_reward", eps[i].sum_rew, "steps",
                                           eps[i].steps));
    return a;
}

typedef struct {
    vla_video_writer *w;
} vid_ctx;

static vla_status vid_frame(void *user, const uint8_t *rgb, int width, int height) {
    (void)height;
    return vla_video_writer_add_rgb(((vid_ctx *)user)->w, rgb, width * 3);
}

static vla_status write_videos(const vla_eval_opts *o, const episode *eps, int n, json_t *list) {
    int size = o->video_size > 0 ? o->video_size : 256;
    size += size & 1;
    const vla_env_vtable *vt = vla_env_find(o->env);
    /* the env's own aspect (ALOHA's cameras are 4:3, as LeRobot's videos), `size` pixels high */
    int width = size;
    if (vt->spec->default_height > 0) width = (int)((double)size * vt->spec->default_width / vt->spec->default_height + 0.5);
    width += width & 1;
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/videos", o->output_dir);
    VLA_TRY(vla_mkdirs(dir));
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/eval_episode_%d.mp4", dir, i);
        vla_video_writer_opts vo = {width, size, vt->spec->fps, NULL, -1, -1};
        vid_ctx c;
        VLA_TRY(vla_video_writer_open(path, &vo, &c.w));
        vla_status st = vla_sim_replay(o->env, o->seed + (uint64_t)i, eps[i].actions, eps[i].steps, 0, width, size,
                                       VLA_RENDER_GYM, vid_frame, &c);
        if (st != VLA_OK) {
            vla_video_writer_abort(c.w);
            return st;
        }
        VLA_TRY(vla_video_writer_close(c.w));
        json_array_append_new(list, json_string(path));
    }
    return VLA_OK;
}

void vla_eval_result_free(vla_eval_result *r) {
    for (int i = 0; r && i < r->n_traj; i++) free(r->traj[i].actions);
    if (r) free(r->traj), r->traj = NULL, r->n_traj = 0;
}

vla_status vla_eval_run(const vla_eval_opts *o, vla_eval_result *out) {
    memset(out, 0, sizeof *out);
    if (o->n_episodes < 1) return vla_error(VLA_ERR_INVALID_ARG, "eval: --eval.n_episodes must be at least 1");
    if (!o->policy_path) return vla_error(VLA_ERR_INVALID_ARG, "eval: --policy.path is required");
    if (!vla_env_find(o->env)) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", o->env);
    vla_pretrained pm;
    if (vla_published_detect(o->policy_path)) { /* a published fine-tune, read with its own statistics */
        VLA_TRY(vla_published_open(o->policy_path, o->policy_config, o->embodiment, vla_ops_cpu(), &pm));
    } else {
        if (o->policy_config)
            return vla_error(VLA_ERR_INVALID_ARG, "eval: %s is a vla.c checkpoint, which carries its config; drop "
                             "--policy.config", o->policy_path);
        VLA_TRY(vla_pretrained_load(o->policy_path, vla_ops_cpu(), &pm));
        vla_status est = vla_pretrained_select_embodiment(&pm, o->embodiment, o->env);
        if (est != VLA_OK) {
            vla_pretrained_free(&pm);
            return est;
        }
    }
    int N = o->n_episodes;
    int nv = o->output_dir ? (o->n_videos < N ? o->n_videos : N) : 0;
    if (nv < 0) nv = 0;
    int nt = o->keep_trajectories < N ? o->keep_trajectories : N, nkeep = nv > nt ? nv : nt;
    if (nt < 0) nt = 0;
    episode *eps = calloc((size_t)N, sizeof *eps);
    json_t *info = NULL;
    vla_status st = eps ? VLA_OK : vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    /* policy copies for parallel groups of episodes (see eval.h); with another
     * number of Euler steps every copy, the first too, is made from the
     * checkpoint's config with that number (a policy fixes it at creation) */
    vla_policy_config cfg = pm.policy->cfg;
    if (o->flow_steps > 0) cfg.flow.steps = o->flow_steps;
    int first = o->flow_steps > 0 && o->flow_steps != pm.policy->cfg.flow.steps ? 0 : 1;
    vla_policy *pols[MAX_POLICIES] = {pm.policy};
    int npol = o->policy_threads > 0 ? o->policy_threads : omp_get_max_threads();
    if (npol > MAX_POLICIES) npol = MAX_POLICIES;
    if (npol > N) npol = N;
    if (npol < 1) npol = 1;
    for (int i = first; st == VLA_OK && i < npol; i++) {
        st = vla_policy_create(&cfg, vla_ops_cpu(), &pols[i]);
        if (st == VLA_OK)
            memcpy(pols[i]->weights, pm.policy->weights, (size_t)pm.policy->n_weight_floats * sizeof(float));
    }
    if (st == VLA_OK) st = rollout(o, ROLL_POLICY, &pm, pols, npol, N, eps, nkeep, &out->policy);
    for (int i = first; i < npol; i++)
        if (pols[i] != pm.policy) vla_policy_free(pols[i]);
    if (st != VLA_OK) goto done;
    if (!o->quiet)
        fprintf(stderr, "eval %s on %s: %d episodes, success %.1f%%, mean max coverage %.3f (LeRobot avg_max_reward %.3f), mean reward %.2f (%.1f s)\n",
                pm.dir, o->env, N, 100 * out->policy.success_rate, out->policy.mean_max_coverage, out->policy.mean_max_reward,
                out->policy.mean_sum_reward, out->policy.seconds);
    json_t *agg = summary_json(&out->policy);
    info = json_pack("{s:o, s:o, s:{s:s, s:s, s:I, s:i, s:i, s:i, s:I}}", "aggregated", agg, "per_episode",
                     episodes_json(o, eps, N), "config", "policy_path", pm.dir, "env", o->env, "seed",
                     (json_int_t)o->seed, "n_action_steps",
                     o->n_action_steps > 0 ? o->n_action_steps
                                           : (int)(pm.policy->cfg.action.horizon < 8 ? pm.policy->cfg.action.horizon : 8),
                     "n_episodes", N, "n_obs_steps", pm.meta.n_obs_steps > 1 ? pm.meta.n_obs_steps : 1, "flow_steps",
                     (json_int_t)cfg.flow.steps);
    if (o->output_dir && nv > 0) {
        json_t *vids = json_array();
        json_object_set_new(info, "videos", vids);
        if ((st = write_videos(o, eps, nv, vids)) != VLA_OK) goto done;
    }
    if (o->baselines) {
        episode *b = calloc((size_t)N, sizeof *b);
        if (!b) {
            st = vla_error(VLA_ERR_NOMEM, "eval: out of memory");
            goto done;
        }
        st = rollout(o, ROLL_ZERO, NULL, NULL, 0, N, b, 0, &out->zero);
        free(b);
        if (st != VLA_OK) goto done;
        vla_sim_run_opts ro = {.env = o->env, .policy = "random", .episodes = N, .seed = o->seed,
                               .max_steps = o->max_steps};
        vla_sim_run_result rr;
        if ((st = vla_sim_run(&ro, &rr)) != VLA_OK) goto done;
        out->random = (vla_eval_summary){rr.episodes, rr.success_rate, rr.mean_max_coverage, rr.mean_sum_reward,
                                         rr.mean_steps, rr.seconds, rr.mean_max_reward};
        vla_sim_run_result_free(&rr);
        out->has_baselines = true;
        json_object_set_new(info, "baselines",
                            json_pack("{s:o, s:o}", "zero_action", summary_json(&out->zero), "random",
                                      summary_json(&out->random)));
        if (!o->quiet)
            fprintf(stderr, "baselines: zero-action success %.1f%% (coverage %.3f), random success %.1f%% (coverage %.3f)\n",
                    100 * out->zero.success_rate, out->zero.mean_max_coverage, 100 * out->random.success_rate,
                    out->random.mean_max_coverage);
    }
    if (o->output_dir) {
        if ((st = vla_mkdirs(o->output_dir)) != VLA_OK) goto done;
        snprintf(out->eval_info, sizeof out->eval_info, "%s/eval_info.json", o->output_dir);
        st = vla_json_write_file(out->eval_info, info);
    }
done:
    json_decref(info);
    if (st == VLA_OK && nt > 0 && !(out->traj = calloc((size_t)nt, sizeof *out->traj)))
        st = vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    for (int i = 0; st == VLA_OK && i < nt; i++) { /* the kept actions change hands: the caller frees them */
        out->traj[i] = (vla_eval_trajectory){o->seed + (uint64_t)i, eps[i].steps, eps[i].success, eps[i].actions};
        eps[i].actions = NULL;
        out->n_traj = i + 1;
    }
    for (int i = 0; eps && i < N; i++) free(eps[i].actions);
    free(eps);
    vla_pretrained_free(&pm);
    return st;
}
