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
#include "base/progress.h"
#include "base/timer.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/pretrained.h"
#include "checkpoint/published.h"
#include "eval/state_map.h"
#include "policy/precision.h"
#include "io/video.h"
#include "sim/env.h"
#include "tensor/backend.h"

void vla_eval_opts_default(vla_eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->env = "pusht";
    o->n_episodes = 50;
    o->seed = 100000;
    o->n_videos = 2;
    o->chunking = VLA_EVAL_SYNC;
    o->rtc_schedule = VLA_RTC_EXP;
    o->rtc_beta = 5.0;
}

static const char *const CHUNKINGS[] = {"sync", "naive", "rtc"};

vla_status vla_eval_chunking_parse(const char *s, vla_eval_chunking *out) {
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, CHUNKINGS[i])) return *out = (vla_eval_chunking)i, VLA_OK;
    return vla_error(VLA_ERR_INVALID_ARG, "eval: chunking '%s' is not one of sync, naive, rtc", s ? s : "");
}

const char *vla_eval_chunking_name(vla_eval_chunking c) { return (unsigned)c < 3 ? CHUNKINGS[c] : "?"; }

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
    /* chunks in env units (absolute): the one executing and the one computed for the next switch */
    float *chunk, *next;
    bool has_chunk;
    double hold[VLA_ENV_MAX_DIM];        /* what "waiting" executes: the last action (the agent's position at first) */
    double past[3][VLA_ENV_MAX_DIM];     /* the last three actions, newest first (jerk) */
    int n_past;
    bool switching;                      /* the next action is a new chunk's first */
    double jerk_sum, bjerk_sum;
    int jerk_n, bjerk_n, chunks;
} episode;

typedef enum { ROLL_POLICY, ROLL_ZERO } roll_kind;

/* The env's current observation into the episode's state history. */
static void episode_observe(episode *e) {
    vla_env_obs ob;
    memset(&ob, 0, sizeof ob);
    ob.type = VLA_OBS_STATE;
    vla_env_observe(e->env, &ob);
    vla_eval_history_push(e->hist, &ob);
    if (e->ref_src >= 0)
        memcpy(e->ref, e->ref_src == VLA_SRC_AGENT_POS ? ob.agent_pos : ob.state, sizeof e->ref);
}

/* One rollout's fixed inputs and the batch buffers each re-plan reuses. */
typedef struct {
    const vla_eval_opts *o;
    roll_kind kind;
    const vla_env_spec *spec;
    vla_pretrained *pm;
    vla_policy *pol;
    int N, A, max_steps, n_act;
    int64_t H, Sd, Ad, img, cams, pcams;
    int cam_idx[VLA_ENV_MAX_CAMERAS]; /* the env camera feeding each trained image slot */
    float *state, *images, *acts; /* per running episode: normalised state, images, action chunk */
    uint8_t *valid;               /* per running episode and image slot: trained on it */
    uint64_t *keys;
    int32_t *emb;                 /* per running episode: the checkpoint's embodiment id for this env */
    const char **tasks;
    int *active;                  /* the running episodes, this re-plan */
    vla_progress *prog;           /* the policy's rollout reports progress (NULL: silent) */
} roll_ctx;

static void roll_ctx_free(roll_ctx *c) {
    free(c->state), free(c->images), free(c->valid), free(c->acts), free(c->keys), free(c->emb), free(c->tasks),
        free(c->active);
}

/* Does the checkpoint fit the env? Its robot (the dataset's robot_type, for
 * a vla.c checkpoint) must be the env's unless o->allow_mismatch, and its
 * state and action widths must map onto the env's vectors in any case. The
 * message names both sides. */
static vla_status check_fit(const vla_eval_opts *o, const vla_env_spec *spec, const vla_pretrained *pm) {
    const vla_pretrained_meta *m = &pm->meta;
    char trained[2400], env_side[256];
    snprintf(trained, sizeof trained, "robot '%s'%s%s%s, state %lld (%s) x %d frame(s), action %lld",
             m->embodiment_name[0] ? m->embodiment_name : "?", m->dataset[0] ? " (dataset " : "", m->dataset,
             m->dataset[0] ? ")" : "", (long long)(m->n_obs_steps > 1 ? m->state_width / m->n_obs_steps : m->state_width),
             m->state_keys[0] ? m->state_keys : "observation.state", m->n_obs_steps > 1 ? m->n_obs_steps : 1,
             (long long)m->action_width);
    snprintf(env_side, sizeof env_side, "env '%s' is robot '%s' (agent_pos %d, state %d, environment_state %d, action %d)",
             spec->name, spec->name, spec->agent_pos_dim, spec->state_dim, spec->env_state_dim, spec->action_dim);
    /* another robot: one of the simulators here that is not this env (a robot_type no simulator has, a real
     * robot or a published embodiment tag, is judged by its widths alone) */
    bool named = m->embodiment_name[0] && strcmp(m->embodiment_name, spec->name) != 0 && !o->published;
    bool other_robot = named && vla_env_find(m->embodiment_name) != NULL;
    if (other_robot && !o->allow_mismatch)
        return vla_error(VLA_ERR_INVALID_ARG, "eval: the checkpoint was trained on %s; %s. Evaluate it on its own env "
                         "(--env.type=%s), or pass --env.allow_mismatch=true to run it here anyway",
                         trained, env_side, m->embodiment_name);
    vla_state_map smap;
    char why[512] = "";
    vla_status sst = VLA_OK;
    if (m->action_width != spec->action_dim) {
        sst = VLA_ERR_INVALID_ARG;
        snprintf(why, sizeof why, "the policy predicts %lld action dims, the env takes %d", (long long)m->action_width,
                 spec->action_dim);
    } else if ((sst = vla_state_mapping(spec, m, &smap)) != VLA_OK) {
        snprintf(why, sizeof why, "%s", vla_error_message());
    }
    if (sst != VLA_OK)
        return vla_error(VLA_ERR_INVALID_ARG, "eval: the checkpoint was trained on %s; %s: its state or action widths "
                         "do not fit this env (%s), so it cannot run here%s", trained, env_side, why,
                         other_robot ? "" : "; evaluate it on the env of its training data");
    if (other_robot)
        VLA_WARN("eval: --env.allow_mismatch=true: running a checkpoint trained on %s in %s", trained, env_side);
    return VLA_OK;
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
        VLA_TRY(check_fit(c->o, spec, pm));
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
            if (c->pm->meta.relative_actions) VLA_TRY(vla_state_source(c->spec, c->A, &eps[i].ref_src));
            episode_observe(&eps[i]);
            if (!(eps[i].chunk = calloc((size_t)(2 * c->H * c->A), sizeof(float))))
                return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
            eps[i].next = eps[i].chunk + c->H * c->A;
        }
        { /* waiting holds the agent where it is (PushT's action is a target position) */
            vla_env_obs ob;
            memset(&ob, 0, sizeof ob);
            ob.type = VLA_OBS_STATE;
            vla_env_observe(eps[i].env, &ob);
            if (ob.agent_pos_dim == c->A)
                for (int d = 0; d < c->A; d++) eps[i].hold[d] = ob.agent_pos[d];
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

/* One action chunk per running episode, in env units, into each episode's
 * `next`: ONE batched policy call for every running episode (the backend
 * parallelises inside its ops; no host threads around model compute); then
 * unnormalised, and made absolute for a policy trained on relative actions.
 * With real-time chunking, an episode that has a chunk executing is sampled
 * with guidance toward that chunk's actions from step `from` on (the
 * observation's step), the first d of them committed. */
static vla_status sample_chunks(roll_ctx *c, episode *eps, int na, bool guided, int from) {
    int64_t H = c->H, Ad = c->Ad;
    /* the action normaliser's channels: one step's, or every step's (action_stats_per_step) */
    int64_t aw = c->pm->action_norm.dim / (c->pm->meta.action_stats_per_step ? H : 1);
    float *target = NULL, *weights = NULL;
    int32_t *rd = NULL;
    if (guided) {
        target = calloc((size_t)(na * H * Ad), sizeof(float)), weights = calloc((size_t)(na * H), sizeof(float));
        rd = malloc((size_t)na * sizeof *rd);
        if (!target || !weights || !rd) {
            free(target), free(weights), free(rd);
            return vla_error(VLA_ERR_NOMEM, "eval: out of memory");
        }
        for (int j = 0; j < na; j++) {
            const episode *e = &eps[c->active[j]];
            rd[j] = c->A;
            if (!e->has_chunk) continue; /* nothing executing: sampled free */
            int n_prev = (int)H - from;
            vla_rtc_prefix_from_env(&c->pm->action_norm, e->chunk + (int64_t)from * c->A, n_prev, c->A,
                                    e->ref_src >= 0 ? e->ref : NULL, H, Ad, target + (int64_t)j * H * Ad);
            vla_rtc_prefix_weights(c->o->rtc_schedule, c->o->inference_delay, n_prev, (int)H, weights + (int64_t)j * H);
        }
    }
    vla_observation obs = {.n_samples = na, .task = c->tasks, .images = c->images, .image_valid = c->valid,
                           .state = c->state, .embodiment = c->emb, .seed = c->o->seed, .sample_keys = c->keys};
    vla_status st;
    if (guided) {
        vla_rtc_guide gd = {target, weights, rd, c->o->rtc_beta > 0 ? c->o->rtc_beta : 5.0, c->o->rtc_no_jacobian};
        st = vla_rtc_sample(c->pol, &obs, &gd, c->acts);
    } else {
        st = vla_policy_sample_actions(c->pol, &obs, c->acts);
    }
    free(target), free(weights), free(rd);
    if (st != VLA_OK) return vla_error_context(st, "eval: sample_actions");
    for (int j = 0; j < na; j++) {
        float *a = c->acts + (int64_t)j * H * Ad;
        episode *e = &eps[c->active[j]];
        vla_unnormalize_chunk(&c->pm->action_norm, a, H, aw, Ad);
        for (int64_t h = 0; h < H; h++)
            for (int d = 0; d < c->A; d++) /* relative actions: to observation.state at this re-plan */
                e->next[h * c->A + d] = a[h * Ad + d] + (e->ref_src >= 0 ? (float)e->ref[d] : 0.0f);
        e->chunks++;
    }
    return VLA_OK;
}

/* The chunk computed last becomes the one executing, from its step `from`. */
static void switch_chunks(roll_ctx *c, episode *eps, int na) {
    for (int j = 0; j < na; j++) {
        episode *e = &eps[c->active[j]];
        float *t = e->chunk;
        e->chunk = e->next, e->next = t;
        e->has_chunk = true, e->switching = true;
    }
}

/* Env steps of each running episode, in parallel, until the episode ends:
 * the executing chunk's steps [lo, hi) (zeros for ROLL_ZERO), or, with
 * hold, hi − lo steps of the last action (waiting for a chunk). */
static vla_status act(roll_ctx *c, episode *eps, int na, int lo, int hi, bool hold) {
    int A = c->A;
#pragma omp parallel for schedule(dynamic)
    for (int j = 0; j < na; j++) {
        episode *e = &eps[c->active[j]];
        for (int k = lo; k < hi && !e->done; k++) {
            double a[VLA_ENV_MAX_DIM] = {0};
            if (hold) memcpy(a, e->hold, sizeof a);
            else if (c->kind == ROLL_POLICY)
                for (int d = 0; d < A; d++) a[d] = e->chunk[(int64_t)k * A + d];
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
            if (e->n_past == 3) { /* the third difference a_t − 3a_{t−1} + 3a_{t−2} − a_{t−3} */
                double j3 = 0;
                for (int d = 0; d < A; d++) {
                    double v = a[d] - 3 * e->past[0][d] + 3 * e->past[1][d] - e->past[2][d];
                    j3 += v * v;
                }
                j3 = sqrt(j3);
                e->jerk_sum += j3, e->jerk_n++;
                if (e->switching && !hold) e->bjerk_sum += j3, e->bjerk_n++;
            }
            if (!hold) e->switching = false;
            memmove(e->past[1], e->past[0], 2 * sizeof e->past[0]);
            memcpy(e->past[0], a, sizeof e->past[0]);
            if (e->n_past < 3) e->n_past++;
            memcpy(e->hold, a, sizeof e->hold);
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

/* The running episodes into c->active; returns how many. With progress on:
 * an ended episode counts whole, a running one by its share of the step limit. */
static int running(roll_ctx *c, const episode *eps) {
    int na = 0, ended = 0, ok = 0;
    double done = 0, steps = 0;
    for (int i = 0; i < c->N; i++) {
        if (!eps[i].done) c->active[na++] = i;
        ended += eps[i].done, ok += eps[i].success, steps += eps[i].steps;
        done += eps[i].done ? 1.0 : (double)eps[i].steps / c->max_steps;
    }
    if (c->prog) {
        double el = vla_now_s() - c->prog->t0;
        char detail[160];
        snprintf(detail, sizeof detail, "%d/%d episodes done, %d successful so far, %.0f env steps/s", ended, c->N, ok,
                 el > 0 ? steps / el : 0.0);
        vla_progress_update(c->prog, done, detail);
    }
    return na;
}

static void summarize(const episode *eps, int N, double t0, vla_eval_summary *sum) {
    memset(sum, 0, sizeof *sum);
    sum->episodes = N;
    double jn = 0, bn = 0;
    for (int i = 0; i < N; i++) {
        sum->success_rate += eps[i].success;
        sum->mean_max_coverage += eps[i].max_cov;
        sum->mean_max_reward += eps[i].max_rew;
        sum->mean_sum_reward += eps[i].sum_rew;
        sum->mean_steps += eps[i].steps;
        sum->mean_jerk += eps[i].jerk_sum, jn += eps[i].jerk_n;
        sum->boundary_jerk += eps[i].bjerk_sum, bn += eps[i].bjerk_n;
        sum->chunks += eps[i].chunks;
    }
    sum->success_rate /= N, sum->mean_max_coverage /= N, sum->mean_max_reward /= N, sum->mean_sum_reward /= N;
    sum->mean_steps /= N, sum->chunks /= N;
    sum->mean_jerk = jn > 0 ? sum->mean_jerk / jn : 0, sum->boundary_jerk = bn > 0 ? sum->boundary_jerk / bn : 0;
    sum->seconds = vla_now_s() - t0;
}

/* N episodes in closed loop: re-plan a chunk for every running episode,
 * execute n_act actions of it, until every episode has ended. */
static vla_status rollout(const vla_eval_opts *o, roll_kind kind, vla_pretrained *pm, vla_policy *pol, int N,
                          episode *eps, int keep_actions, vla_eval_summary *sum) {
    double t0 = vla_now_s();
    const vla_env_vtable *vt = vla_env_find(o->env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'", o->env);
    roll_ctx c = {.o = o, .kind = kind, .spec = vt->spec, .pm = pm, .pol = pol, .N = N,
                  .A = vt->spec->action_dim, .H = 1};
    vla_progress prog;
    if (kind == ROLL_POLICY && o->progress) {
        char what[96];
        snprintf(what, sizeof what, "eval %s", o->env);
        vla_progress_start(&prog, what, N, true);
        c.prog = &prog;
    }
    c.max_steps = o->max_steps > 0 ? o->max_steps : vt->spec->max_episode_steps;
    c.n_act = c.max_steps;
    vla_status st = rollout_prepare(&c);
    if (st == VLA_OK) st = start_episodes(&c, eps, keep_actions);
    if (st != VLA_OK) goto done;
    const int d = kind == ROLL_POLICY ? o->inference_delay : 0, sn = c.n_act;
    if (kind != ROLL_POLICY || (d == 0 && o->chunking != VLA_EVAL_RTC)) {
        /* chunks arrive at once: re-plan, execute n_act actions, repeat */
        for (int64_t replan = 0;; replan++) {
            int na = running(&c, eps);
            if (na == 0) break;
            if (kind == ROLL_POLICY) {
                if ((st = gather_observations(&c, eps, na, replan)) != VLA_OK) goto done;
                if ((st = sample_chunks(&c, eps, na, false, 0)) != VLA_OK) goto done;
                switch_chunks(&c, eps, na);
            }
            if ((st = act(&c, eps, na, 0, c.n_act, false)) != VLA_OK) goto done;
        }
    } else if (o->chunking == VLA_EVAL_SYNC) {
        /* the robot waits d steps for every chunk, then runs its first s actions */
        for (int64_t replan = 0;; replan++) {
            int na = running(&c, eps);
            if (na == 0) break;
            if ((st = gather_observations(&c, eps, na, replan)) != VLA_OK) goto done;
            if ((st = sample_chunks(&c, eps, na, false, 0)) != VLA_OK) goto done;
            if ((st = act(&c, eps, na, 0, d, true)) != VLA_OK) goto done;
            if ((na = running(&c, eps)) == 0) break;
            switch_chunks(&c, eps, na);
            if ((st = act(&c, eps, na, 0, sn, false)) != VLA_OK) goto done;
        }
    } else {
        /* asynchronous: chunk k is asked for at T_k from that observation, arrives
         * d steps later and runs its steps d .. s+d−1; chunk k+1 is asked for at
         * T_k + s, while steps s .. s+d−1 of chunk k run */
        if (d > sn || sn + d > c.H) {
            st = vla_error(VLA_ERR_INVALID_ARG, "eval: asynchronous chunks need inference_delay (%d) <= n_action_steps "
                           "(%d) and n_action_steps + inference_delay <= the chunk length (%lld)", d, sn, (long long)c.H);
            goto done;
        }
        bool guided = o->chunking == VLA_EVAL_RTC;
        if (guided && !vla_rtc_supported(pm->policy)) {
            st = vla_error(VLA_ERR_UNSUPPORTED, "eval: real-time chunking needs a family with a velocity field; '%s' "
                           "has none", pm->policy->ops->name);
            goto done;
        }
        int na = running(&c, eps);
        if ((st = gather_observations(&c, eps, na, 0)) != VLA_OK) goto done;
        if ((st = sample_chunks(&c, eps, na, false, 0)) != VLA_OK) goto done;
        if ((st = act(&c, eps, na, 0, d, true)) != VLA_OK) goto done; /* the first chunk is waited for */
        for (int64_t replan = 1;; replan++) {
            if ((na = running(&c, eps)) == 0) break;
            switch_chunks(&c, eps, na);
            if ((st = act(&c, eps, na, d, sn, false)) != VLA_OK) goto done;
            if ((na = running(&c, eps)) == 0) break;
            if ((st = gather_observations(&c, eps, na, replan)) != VLA_OK) goto done;
            if ((st = sample_chunks(&c, eps, na, guided, sn)) != VLA_OK) goto done;
            if ((st = act(&c, eps, na, sn, sn + d, false)) != VLA_OK) goto done;
        }
    }
    summarize(eps, N, t0, sum);
done:
    if (c.prog) vla_progress_end(c.prog);
    for (int i = 0; i < N; i++) {
        vla_env_free(eps[i].env);
        vla_eval_history_free(eps[i].hist);
        free(eps[i].chunk < eps[i].next ? eps[i].chunk : eps[i].next); /* one allocation holds both */
        eps[i].env = NULL, eps[i].hist = NULL, eps[i].chunk = eps[i].next = NULL;
    }
    roll_ctx_free(&c);
    return st;
}

static json_t *summary_json(const vla_eval_summary *s) {
    /* LeRobot's names; avg_max_reward is its reward (PushT: clip(coverage / 0.95)), the raw coverage beside it */
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "n_episodes", s->episodes, "pc_success",
                     100 * s->success_rate, "avg_max_reward", s->mean_max_reward, "avg_max_coverage",
                     s->mean_max_coverage, "avg_sum_reward", s->mean_sum_reward, "avg_steps", s->mean_steps,
                     "avg_jerk", s->mean_jerk, "avg_boundary_jerk", s->boundary_jerk, "avg_chunks", s->chunks, "eval_s",
                     s->seconds);
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
    if (!vla_env_find(o->env)) {
        char names[256] = "";
        for (const char *const *n = vla_env_names(); *n; n++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n == vla_env_names() ? "" : ", ", *n);
        return vla_error(VLA_ERR_INVALID_ARG, "eval: unknown environment '%s'; the simulators are: %s", o->env, names);
    }
    VLA_TRY(vla_published_check_path("--policy.path", o->policy_path));
    const vla_ops *ops;
    VLA_TRY(vla_backend_get(o->device ? o->device : vla_backend_default_name(), &ops));
    vla_pretrained pm;
    vla_eval_opts oc = *o; /* with what the checkpoint decides filled in */
    oc.published = vla_published_detect(o->policy_path);
    if (oc.published) { /* a published fine-tune, read with its own statistics */
        VLA_TRY(vla_published_open(o->policy_path, o->policy_config, o->embodiment, ops, &pm));
    } else {
        if (o->policy_config)
            return vla_error(VLA_ERR_INVALID_ARG, "eval: %s is a vla.c checkpoint, which carries its config; drop "
                             "--policy.config", o->policy_path);
        VLA_TRY(vla_pretrained_load(o->policy_path, ops, &pm));
        vla_status est = vla_pretrained_select_embodiment(&pm, o->embodiment, o->env);
        if (est != VLA_OK) {
            vla_pretrained_free(&pm);
            return est;
        }
    }
    /* actions per chunk: the flag, else what training decided, else min(horizon, 8) */
    int64_t H = pm.policy->cfg.action.horizon;
    if (oc.n_action_steps <= 0) oc.n_action_steps = pm.meta.n_action_steps > 0 ? pm.meta.n_action_steps : (int)(H < 8 ? H : 8);
    if (oc.n_action_steps > H) {
        vla_pretrained_free(&pm);
        return vla_error(VLA_ERR_INVALID_ARG, "eval: --policy.n_action_steps=%d: the policy predicts chunks of %lld "
                         "actions; give 1..%lld", oc.n_action_steps, (long long)H, (long long)H);
    }
    o = &oc;
    out->n_action_steps = oc.n_action_steps;
    out->n_obs_steps = pm.meta.n_obs_steps > 1 ? pm.meta.n_obs_steps : 1;
    out->flow_steps = o->flow_steps > 0 ? o->flow_steps : pm.policy->cfg.flow.steps;
    int N = o->n_episodes;
    int nv = o->output_dir ? (o->n_videos < N ? o->n_videos : N) : 0;
    if (nv < 0) nv = 0;
    int nt = o->keep_trajectories < N ? o->keep_trajectories : N, nkeep = nv > nt ? nv : nt;
    if (nt < 0) nt = 0;
    episode *eps = calloc((size_t)N, sizeof *eps);
    json_t *info = NULL;
    vla_status st = eps ? VLA_OK : vla_error(VLA_ERR_NOMEM, "eval: out of memory");
    /* with another number of Euler steps the policy is made again from the
     * checkpoint's config with that number (a policy fixes it at creation) */
    vla_policy_config cfg = pm.policy->cfg;
    if (o->flow_steps > 0) cfg.flow.steps = o->flow_steps;
    vla_policy *pol = pm.policy;
    if (st == VLA_OK && o->flow_steps > 0 && o->flow_steps != pm.policy->cfg.flow.steps) {
        st = vla_policy_create(&cfg, ops, &pol);
        if (st == VLA_OK)
            ops->copy_bytes(pol->weights, pm.policy->weights, (size_t)pm.policy->n_weight_floats * sizeof(float));
    }
    vla_precision prec = VLA_PREC_FP32;
    if (st == VLA_OK) st = vla_inference_precision(o->precision, ops, &prec);
    if (st == VLA_OK) st = vla_policy_set_precision(pol, prec, NULL);
    if (st == VLA_OK) {
        vla_policy_weights_hold(pol); /* the weights do not change over the rollouts: each cast once */
        st = rollout(o, ROLL_POLICY, &pm, pol, N, eps, nkeep, &out->policy);
        vla_policy_weights_release(pol);
    }
    if (pol != pm.policy) vla_policy_free(pol);
    if (st != VLA_OK) goto done;
    if (!o->quiet)
        fprintf(stderr, "eval %s on %s: %d episodes, success %.1f%%, mean max coverage %.3f (LeRobot avg_max_reward %.3f), mean reward %.2f (%.1f s)\n",
                pm.dir, o->env, N, 100 * out->policy.success_rate, out->policy.mean_max_coverage, out->policy.mean_max_reward,
                out->policy.mean_sum_reward, out->policy.seconds);
    json_t *agg = summary_json(&out->policy);
    info = json_pack("{s:o, s:o, s:{s:s, s:s, s:I, s:i, s:i, s:i, s:I}}", "aggregated", agg, "per_episode",
                     episodes_json(o, eps, N), "config", "policy_path", pm.dir, "env", o->env, "seed",
                     (json_int_t)o->seed, "n_action_steps", o->n_action_steps, "n_episodes", N, "n_obs_steps", pm.meta.n_obs_steps > 1 ? pm.meta.n_obs_steps : 1, "flow_steps",
                     (json_int_t)cfg.flow.steps);
    if (info) { /* how late chunks were used (eval.h) */
        json_t *cf = json_object_get(info, "config");
        json_object_set_new(cf, "inference_delay", json_integer(o->inference_delay));
        json_object_set_new(cf, "chunking", json_string(vla_eval_chunking_name(o->chunking)));
        json_object_set_new(cf, "precision", json_string(vla_precision_name(prec)));
        if (o->chunking == VLA_EVAL_RTC) {
            json_object_set_new(cf, "rtc_schedule", json_string(vla_rtc_schedule_name(o->rtc_schedule)));
            json_object_set_new(cf, "rtc_max_guidance_weight", json_real(o->rtc_beta > 0 ? o->rtc_beta : 5.0));
            json_object_set_new(cf, "rtc_jacobian", json_boolean(!o->rtc_no_jacobian));
        }
    }
    if (o->output_dir && nv > 0) {
        json_t *vids = json_array();
        json_object_set_new(info, "video_paths", vids); /* LeRobot's name */
        if ((st = write_videos(o, eps, nv, vids)) != VLA_OK) goto done;
        for (int i = 0; i < nv; i++) { /* one of each, for the summary */
            char *slot = eps[i].success ? out->video_success : out->video_failure;
            if (!slot[0]) snprintf(slot, sizeof out->video_success, "%s", json_string_value(json_array_get(vids, (size_t)i)));
        }
    }
    if (o->baselines) {
        episode *b = calloc((size_t)N, sizeof *b);
        if (!b) {
            st = vla_error(VLA_ERR_NOMEM, "eval: out of memory");
            goto done;
        }
        st = rollout(o, ROLL_ZERO, NULL, NULL, N, b, 0, &out->zero);
        free(b);
        if (st != VLA_OK) goto done;
        vla_sim_run_opts ro = {.env = o->env, .policy = "random", .episodes = N, .seed = o->seed,
                               .max_steps = o->max_steps};
        vla_sim_run_result rr;
        if ((st = vla_sim_run(&ro, &rr)) != VLA_OK) goto done;
        out->random = (vla_eval_summary){.episodes = rr.episodes, .success_rate = rr.success_rate,
                                         .mean_max_coverage = rr.mean_max_coverage, .mean_sum_reward = rr.mean_sum_reward,
                                         .mean_steps = rr.mean_steps, .seconds = rr.seconds,
                                         .mean_max_reward = rr.mean_max_reward}; /* no jerk: the random walk is not chunked */
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
