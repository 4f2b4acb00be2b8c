/* rollout.c — runs scripted-policy episodes in an environment, in parallel
 * across cores (one env and one policy per episode; episode i uses seed+i,
 * so results do not depend on the thread count), and replays recorded
 * actions to render videos of episodes that ran in parallel. Only vla_env_*
 * and vla_sim_policy_* are used, so any registered environment works. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "sim/env.h"

typedef struct {
    vla_status st;
    char msg[256];
} ep_error;

static vla_status run_episode(const vla_sim_run_opts *o, int ep, vla_sim_episode *out) {
    vla_env *env = NULL;
    vla_sim_policy *pol = NULL;
    uint8_t *pixels = NULL;
    vla_status st = vla_env_make(o->env, &env);
    if (st != VLA_OK) return st;
    const vla_env_spec *spec = vla_env_get_spec(env);
    int max_steps = o->max_steps > 0 ? o->max_steps : spec->max_episode_steps;
    double t0 = vla_now_s();
    memset(out, 0, sizeof *out);
    uint64_t seed = o->seed + (uint64_t)ep;
    if ((st = vla_sim_policy_make(o->policy, spec, &pol)) != VLA_OK) goto done;
    size_t act_bytes = sizeof(double) * (size_t)spec->action_dim * (size_t)max_steps;
    if (ep < o->keep_actions && (!(out->actions = malloc(act_bytes)) ||
                                 (o->action_noise > 0 && !(out->labels = malloc(act_bytes))))) {
        st = vla_error(VLA_ERR_NOMEM, "rollout: out of memory");
        goto done;
    }
    vla_rng noise = vla_rng_stream(0x44415254ULL /* "DART" */, seed);
    bool want_pixels = o->on_frame && o->image_width > 0 && o->image_height > 0;
    if (want_pixels && !(pixels = malloc((size_t)o->image_width * (size_t)o->image_height * 3))) {
        st = vla_error(VLA_ERR_NOMEM, "rollout: out of memory");
        goto done;
    }
    vla_env_info info;
    if ((st = vla_env_reset(env, seed, &info)) != VLA_OK) goto done;
    vla_sim_policy_reset(pol, env, seed);
    out->max_coverage = info.coverage;
    for (int t = 0; t < max_steps; t++) {
        vla_env_obs obs;
        if (o->on_frame) {
            memset(&obs, 0, sizeof obs);
            obs.type = want_pixels ? VLA_OBS_PIXELS_AGENT_POS : VLA_OBS_ENVIRONMENT_STATE_AGENT_POS;
            obs.width = o->image_width, obs.height = o->image_height, obs.pixels = pixels;
            if ((st = vla_env_observe(env, &obs)) != VLA_OK) goto done;
        }
        double action[VLA_ENV_MAX_DIM];
        if ((st = vla_sim_policy_act(pol, env, action)) != VLA_OK) goto done;
        if (out->labels) memcpy(out->labels + (size_t)t * (size_t)spec->action_dim, action, sizeof(double) * (size_t)spec->action_dim);
        if (o->action_noise > 0) /* executed = the policy's + noise; the label stays the policy's */
            for (int d = 0; d < spec->action_dim; d++) action[d] += o->action_noise * vla_rng_normal(&noise);
        vla_env_step_result r;
        if ((st = vla_env_step(env, action, &r)) != VLA_OK) goto done;
        if (out->actions) memcpy(out->actions + (size_t)t * (size_t)spec->action_dim, action, sizeof(double) * (size_t)spec->action_dim);
        out->steps = t + 1;
        out->sum_reward += r.reward;
        if (r.reward > out->max_reward) out->max_reward = r.reward;
        if (r.info.coverage > out->max_coverage) out->max_coverage = r.info.coverage;
        if (r.info.is_success) out->success = true;
        bool done = r.terminated || t + 1 == max_steps;
        if (o->on_frame) {
            vla_sim_frame f = {ep, seed, t, &obs, action, r.reward, done, r.info.is_success, r.info.coverage};
            if ((st = o->on_frame(o->user, &f)) != VLA_OK) goto done;
        }
        if (r.terminated) break;
    }
done:
    out->seconds = vla_now_s() - t0;
    free(pixels);
    vla_sim_policy_free(pol);
    vla_env_free(env);
    return st;
}

vla_status vla_sim_run(const vla_sim_run_opts *o, vla_sim_run_result *res) {
    memset(res, 0, sizeof *res);
    if (o->episodes <= 0) return vla_error(VLA_ERR_INVALID_ARG, "sim: --episodes must be positive (got %d)", o->episodes);
    if (!vla_env_find(o->env)) return vla_error(VLA_ERR_NOT_FOUND, "unknown environment '%s'; the simulators are: pusht, reach, aloha", o->env ? o->env : "(null)");
    vla_sim_episode *eps = calloc((size_t)o->episodes, sizeof *eps);
    ep_error *errs = calloc((size_t)o->episodes, sizeof *errs);
    if (!eps || !errs) {
        free(eps), free(errs);
        return vla_error(VLA_ERR_NOMEM, "sim: out of memory");
    }
    double t0 = vla_now_s();
    int jobs = o->jobs > 0 ? o->jobs : omp_get_max_threads();
    if (o->on_frame) jobs = 1; /* frames reach the callback in episode order */
#pragma omp parallel for schedule(dynamic, 1) num_threads(jobs)
    for (int i = 0; i < o->episodes; i++) {
        vla_status st = run_episode(o, i, &eps[i]);
        if (st != VLA_OK) {
            errs[i].st = st;
            snprintf(errs[i].msg, sizeof errs[i].msg, "%s", vla_error_message());
        }
    }
    res->seconds = vla_now_s() - t0;
    for (int i = 0; i < o->episodes; i++)
        if (errs[i].st != VLA_OK) {
            vla_status st = vla_error(errs[i].st, "episode %d (seed %llu): %s", i,
                                      (unsigned long long)(o->seed + (uint64_t)i), errs[i].msg);
            for (int j = 0; j < o->episodes; j++) free(eps[j].actions), free(eps[j].labels);
            free(eps), free(errs);
            return st;
        }
    free(errs);
    double steps = 0;
    res->episodes = o->episodes;
    res->per_episode = eps;
    for (int i = 0; i < o->episodes; i++) {
        res->success_rate += eps[i].success;
        res->mean_max_coverage += eps[i].max_coverage;
        res->mean_steps += eps[i].steps;
        res->mean_sum_reward += eps[i].sum_reward;
        res->mean_max_reward += eps[i].max_reward;
        steps += eps[i].steps;
    }
    res->success_rate /= o->episodes;
    res->mean_max_coverage /= o->episodes;
    res->mean_steps /= o->episodes;
    res->mean_sum_reward /= o->episodes;
    res->mean_max_reward /= o->episodes;
    res->env_steps_per_s = res->seconds > 0 ? steps / res->seconds : 0;
    return VLA_OK;
}

void vla_sim_run_result_free(vla_sim_run_result *r) {
    if (!r->per_episode) return;
    for (int i = 0; i < r->episodes; i++) free(r->per_episode[i].actions), free(r->per_episode[i].labels);
    free(r->per_episode);
    r->per_episode = NULL;
}

vla_status vla_sim_replay_prefix(vla_env *env, uint64_t seed, const double *actions, int steps) {
    int A = vla_env_get_spec(env)->action_dim;
    VLA_TRY(vla_env_reset(env, seed, NULL));
    for (int t = 0; t < steps; t++) {
        double a[VLA_ENV_MAX_DIM];
        for (int i = 0; i < A; i++) a[i] = (float)actions[(size_t)t * A + i];
        vla_env_step_result r;
        VLA_TRY(vla_env_step(env, a, &r));
        if (r.terminated && t + 1 < steps)
            return vla_error(VLA_ERR_INVALID_ARG, "replay: the episode of seed %llu ended at step %d of %d",
                             (unsigned long long)seed, t + 1, steps);
    }
    return VLA_OK;
}

vla_status vla_sim_replay(const char *env_name, uint64_t seed, const double *actions, int steps, int camera,
                          int width, int height, vla_render_style style, vla_sim_image_fn fn, void *user) {
    vla_env *env;
    VLA_TRY(vla_env_make(env_name, &env));
    vla_env_set_render_style(env, style);
    uint8_t *rgb = malloc((size_t)width * (size_t)height * 3);
    vla_status st = rgb ? VLA_OK : vla_error(VLA_ERR_NOMEM, "replay: out of memory");
    if (st == VLA_OK) st = vla_env_reset(env, seed, NULL);
    if (st == VLA_OK)
        st = camera ? vla_env_render_camera(env, camera, width, height, rgb, 0) : vla_env_render(env, width, height, rgb, 0, false);
    if (st == VLA_OK) st = fn(user, rgb, width, height);
    int ad = vla_env_get_spec(env)->action_dim;
    for (int t = 0; t < steps && st == VLA_OK; t++) {
        vla_env_step_result r;
        st = vla_env_step(env, actions + (size_t)t * (size_t)ad, &r);
        if (st == VLA_OK)
            st = camera ? vla_env_render_camera(env, camera, width, height, rgb, 0) : vla_env_render(env, width, height, rgb, 0, true);
        if (st == VLA_OK) st = fn(user, rgb, width, height);
    }
    free(rgb);
    vla_env_free(env);
    return st;
}
