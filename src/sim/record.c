/* record.c — scripted episodes → LeRobot v3.0 dataset (see record.h). */
#include "sim/record.h"
#include "sim/env.h"
#include "data/lerobot.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* Replay one episode from its seed and actions, writing every observation
 * with the action taken from it and what the step returned. The action is
 * executed as stored (rounded to f32), so the dataset replays exactly; that
 * rounding can change a chaotic push slightly, so success is re-judged here.
 * With labels (noise injection) the executed actions still drive the replay,
 * but the dataset's action is the label: what the policy wanted there. */
/* What one recording writes per frame: which cameras, at what size, and
 * whether the privileged environment_state is a feature. */
typedef struct {
    int n_cams, cams[VLA_ENV_MAX_CAMERAS];
    int width, height;
    bool env_state;
    uint8_t *pixels[VLA_ENV_MAX_CAMERAS];
} rec_layout;

/* `first` > 0 (a DAgger branch): steps before it are replayed, not written.
 * `round` ≥ 0: the dagger.round value of every frame (the dataset has the feature). */
static vla_status record_episode(vla_env *env, vla_lr_writer *w, uint64_t seed, const double *actions,
                                 const double *labels, int steps, int first, int round, const rec_layout *ly,
                                 int64_t *frames, bool *success_out) {
    const vla_env_spec *spec = vla_env_get_spec(env);
    VLA_TRY(vla_sim_replay_prefix(env, seed, actions, first));
    float state[VLA_ENV_MAX_DIM], env_state[VLA_ENV_MAX_DIM], action[VLA_ENV_MAX_DIM];
    float reward, done, success = 0.0f, round_f = (float)round;
    /* the numeric features in the order vla_sim_record declares them */
    const float *values[7];
    int nv = 0;
    values[nv++] = state;
    if (ly->env_state) values[nv++] = env_state;
    values[nv++] = action, values[nv++] = &reward, values[nv++] = &done, values[nv++] = &success;
    values[nv++] = &round_f;
    const uint8_t *images[VLA_ENV_MAX_CAMERAS];
    for (int c = 0; c < ly->n_cams; c++) images[c] = ly->pixels[c];
    for (int t = first; t < steps; t++) {
        vla_env_obs obs = {.type = VLA_OBS_STATE};
        VLA_TRY(vla_env_observe(env, &obs));
        for (int c = 0; c < ly->n_cams; c++)
            VLA_TRY(vla_env_render_camera(env, ly->cams[c], ly->width, ly->height, ly->pixels[c], 0));
        double a[VLA_ENV_MAX_DIM];
        for (int i = 0; i < spec->action_dim; i++) {
            action[i] = (float)actions[(size_t)t * spec->action_dim + i];
            a[i] = action[i];
            if (labels) action[i] = (float)labels[(size_t)t * spec->action_dim + i];
        }
        vla_env_step_result r;
        VLA_TRY(vla_env_step(env, a, &r));
        for (int i = 0; i < obs.agent_pos_dim; i++) state[i] = (float)obs.agent_pos[i];
        for (int i = 0; i < obs.env_state_dim; i++) env_state[i] = (float)obs.env_state[i];
        bool last = r.terminated || r.truncated || t == steps - 1;
        reward = (float)r.reward;
        done = last ? 1.0f : 0.0f;
        success = r.info.is_success ? 1.0f : 0.0f;
        VLA_TRY(vla_lr_writer_add_frame(w, spec->task, values, images));
        (*frames)++;
        if (last) break;
    }
    *success_out = success == 1.0f;
    return VLA_OK;
}

/* The cameras to record: a comma-separated list of names or keys (NULL: the first). */
static vla_status parse_cameras(const vla_env_spec *spec, const char *list, rec_layout *ly) {
    if (!list || !*list) {
        ly->n_cams = 1, ly->cams[0] = 0;
        return VLA_OK;
    }
    return vla_env_parse_cameras(spec, list, ly->cams, &ly->n_cams);
}

vla_status vla_sim_record(const vla_sim_record_opts *o, vla_sim_record_result *out) {
    memset(out, 0, sizeof *out);
    double t0 = vla_now_s();
    if (o->episodes <= 0) return vla_error(VLA_ERR_INVALID_ARG, "sim record: --episodes must be positive");
    const vla_env_vtable *vt = vla_env_find(o->env);
    if (!vt) return vla_error(VLA_ERR_INVALID_ARG, "sim record: unknown environment '%s'; the simulators are: pusht, reach, aloha", o->env);
    const vla_env_spec *spec = vt->spec;
    rec_layout ly = {.env_state = !o->no_env_state};
    if (o->image_height > 0 && o->image_width > 0) {
        ly.height = o->image_height, ly.width = o->image_width;
    } else if (o->image_size > 0) {
        ly.height = ly.width = o->image_size;
    } else if (spec->default_height > 0) {
        ly.height = spec->default_height, ly.width = spec->default_width;
    } else {
        ly.height = ly.width = 96;
    }
    if ((ly.height | ly.width) & 1)
        return vla_error(VLA_ERR_INVALID_ARG, "sim record: image size %dx%d must have even sides (yuv420p video)",
                         ly.width, ly.height);
    VLA_TRY(parse_cameras(spec, o->cameras, &ly));

    /* 1. run episodes in parallel, keeping their actions; 2. replay the kept
     * ones into the writer, in seed order. Attempts run in waves sized to
     * what is still missing (plus a margin for failures), not all
     * max_attempts at once: the expert succeeds ~99% of the time, so one
     * wave usually suffices where running every allowed attempt simulated 4×
     * the episodes kept. The episodes kept — the first successful ones in
     * seed order — are the same however the waves fall. */
    int attempts = o->max_attempts > 0 ? o->max_attempts : 4 * o->episodes;
    if (o->keep_failures) attempts = o->episodes;
    static const char *const xy[2] = {"x", "y"};
    const char *const *state_names = spec->state_names ? spec->state_names : spec->agent_pos_dim == 2 ? xy : NULL;
    const char *const *action_names = spec->action_names;
    vla_lr_feature_spec features[8 + VLA_ENV_MAX_CAMERAS];
    int nf = 0;
    for (int c = 0; c < ly.n_cams; c++)
        features[nf++] = (vla_lr_feature_spec){spec->n_cameras > 0 ? spec->image_keys[ly.cams[c]] : "observation.image",
                                               "video", 3, {ly.height, ly.width, 3}, NULL, 0};
    features[nf++] = (vla_lr_feature_spec){"observation.state", "float32", 1, {spec->agent_pos_dim}, state_names,
                                           state_names ? spec->agent_pos_dim : 0};
    if (ly.env_state)
        features[nf++] = (vla_lr_feature_spec){"observation.environment_state", "float32", 1, {spec->env_state_dim}, NULL, 0};
    features[nf++] = (vla_lr_feature_spec){"action", "float32", 1, {spec->action_dim}, action_names,
                                           action_names ? spec->action_dim : 0};
    features[nf++] = (vla_lr_feature_spec){"next.reward", "float32", 1, {1}, NULL, 0};
    features[nf++] = (vla_lr_feature_spec){"next.done", "bool", 1, {1}, NULL, 0};
    features[nf++] = (vla_lr_feature_spec){"next.success", "bool", 1, {1}, NULL, 0};
    features[nf++] = (vla_lr_feature_spec){"dagger.round", "int64", 1, {1}, NULL, 0};
    bool dagger = o->branches && o->n_branches > 0;
    vla_lr_writer_opts wo = {.fps = spec->fps, .robot_type = spec->robot_type ? spec->robot_type : spec->name,
                             .features = features, .n_features = dagger ? nf : nf - 1, .video_codec = o->video_codec};
    vla_lr_writer *w = NULL;
    vla_env *env = NULL;
    vla_status st = VLA_OK;
    for (int c = 0; c < ly.n_cams && st == VLA_OK; c++)
        if (!(ly.pixels[c] = malloc((size_t)ly.width * ly.height * 3)))
            st = vla_error(VLA_ERR_NOMEM, "sim record: out of memory");
    if (st == VLA_OK) st = vla_lr_writer_open(o->out, &wo, &w);
    if (st == VLA_OK) st = vla_env_make(o->env, &env);
    const char *policy = o->policy ? o->policy : "expert";
    double successes = 0;
    vla_progress prog;
    vla_progress_start(&prog, "sim record", o->episodes, o->progress);
    while (st == VLA_OK && out->episodes_kept < o->episodes && out->episodes_run < attempts) {
        int need = o->episodes - out->episodes_kept;
        int wave = need + need / 8 + 2; /* with keep_failures attempts = episodes caps it at need */
        if (wave > attempts - out->episodes_run) wave = attempts - out->episodes_run;
        uint64_t seed0 = o->seed + (uint64_t)out->episodes_run;
        vla_sim_run_opts ro = {.env = o->env, .policy = policy, .episodes = wave, .seed = seed0, .jobs = o->jobs,
                               .keep_actions = wave, .action_noise = o->action_noise};
        vla_sim_run_result rr;
        if ((st = vla_sim_run(&ro, &rr)) != VLA_OK) break;
        out->episodes_run += rr.episodes;
        successes += rr.success_rate * rr.episodes;
        for (int e = 0; st == VLA_OK && e < rr.episodes && out->episodes_kept < o->episodes; e++) {
            const vla_sim_episode *ep = &rr.per_episode[e];
            if (!ep->success && !o->keep_failures) {
                out->episodes_failed++;
                continue;
            }
            bool success = false;
            int64_t frames = 0;
            st = record_episode(env, w, seed0 + (uint64_t)e, ep->actions, ep->labels, ep->steps, 0, 0, &ly, &frames,
                                &success);
            if (st == VLA_OK && !success && !o->keep_failures) { /* diverged under f32 actions: drop it */
                vla_lr_writer_discard_episode(w);
                out->episodes_failed++;
                continue;
            }
            if (st == VLA_OK) st = vla_lr_writer_save_episode(w);
            if (st == VLA_OK) out->episodes_kept++, out->frames += frames;
            if (st == VLA_OK) {
                char detail[128];
                snprintf(detail, sizeof detail, "%d/%d episodes recorded, %lld frames", out->episodes_kept, o->episodes,
                         (long long)out->frames);
                vla_progress_update(&prog, out->episodes_kept, detail);
            }
        }
        vla_sim_run_result_free(&rr);
    }
    out->success_rate = out->episodes_run > 0 ? successes / out->episodes_run : 0;
    for (int b = 0; st == VLA_OK && dagger && out->episodes_kept == o->episodes && b < o->n_branches; b++) {
        const vla_sim_branch *br = &o->branches[b];
        bool success = false;
        int64_t frames = 0;
        st = record_episode(env, w, br->seed, br->actions, NULL, br->steps, br->first, br->round, &ly, &frames,
                            &success);
        if (st == VLA_OK && !success) {
            vla_lr_writer_discard_episode(w);
            continue;
        }
        if (st == VLA_OK) st = vla_lr_writer_save_episode(w);
        if (st == VLA_OK) out->branches_kept++, out->frames += frames;
    }
    vla_progress_end(&prog);
    if (st == VLA_OK && out->episodes_kept < o->episodes)
        st = vla_error(VLA_ERR_INVALID_ARG,
                       "sim record: only %d of %d episodes succeeded in %d attempts (policy '%s'); ask for fewer "
                       "episodes, raise --max_attempts or pass --keep_failures",
                       out->episodes_kept, o->episodes, out->episodes_run, policy);
    if (st == VLA_OK) {
        st = vla_lr_writer_close(w);
    } else if (w) {
        vla_lr_writer_abort(w);
    }
    vla_env_free(env);
    for (int c = 0; c < ly.n_cams; c++) free(ly.pixels[c]);
    out->seconds = vla_now_s() - t0;
    return st;
}
