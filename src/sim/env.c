/* env.c — the environment and scripted-policy registries and the generic
 * calls (reset, step with step counting and truncation, observe, render)
 * that rollout, eval and the CLI use. Adding an environment: its vtable in
 * `envs` and its name in `env_names`; adding a scripted policy: one line in
 * `policies`. */
#include <math.h>
#include <stdlib.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/rng.h"
#include "sim/env.h"

extern const vla_env_vtable vla_pusht_vtable;
extern const vla_env_vtable vla_reach_vtable;
extern const vla_env_vtable vla_aloha_vtable;
extern const vla_sim_policy_vtable vla_expert_pusht_vtable;
extern const vla_sim_policy_vtable vla_expert_reach_vtable;
extern const vla_sim_policy_vtable vla_expert_aloha_vtable;

static const vla_env_vtable *const envs[] = {&vla_pusht_vtable, &vla_reach_vtable, &vla_aloha_vtable};
static const char *const env_names[] = {"pusht", "reach", "aloha", NULL};
#define ENV_LIST "pusht, reach, aloha"

const char *const *vla_env_names(void) { return env_names; }

const vla_env_vtable *vla_env_find(const char *name) {
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++)
        if (name && !strcmp(envs[i]->spec->name, name)) return envs[i];
    return NULL;
}

vla_status vla_obs_type_parse(const char *name, vla_obs_type *out) {
    static const char *names[] = {"state", "environment_state_agent_pos", "pixels", "pixels_agent_pos"};
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (vla_obs_type)i;
            return VLA_OK;
        }
    return vla_error(VLA_ERR_INVALID_ARG,
                     "unknown observation type '%s' (state, environment_state_agent_pos, pixels, pixels_agent_pos)",
                     name ? name : "(null)");
}

const char *vla_obs_type_name(vla_obs_type t) {
    switch (t) {
    case VLA_OBS_STATE: return "state";
    case VLA_OBS_ENVIRONMENT_STATE_AGENT_POS: return "environment_state_agent_pos";
    case VLA_OBS_PIXELS: return "pixels";
    case VLA_OBS_PIXELS_AGENT_POS: return "pixels_agent_pos";
    }
    return "?";
}

vla_status vla_env_make(const char *name, vla_env **out) {
    *out = NULL;
    const vla_env_vtable *vt = vla_env_find(name);
    if (!vt) return vla_error(VLA_ERR_NOT_FOUND, "unknown environment '%s'; the simulators are: " ENV_LIST, name ? name : "(null)");
    vla_env *e = calloc(1, sizeof *e);
    if (!e) return vla_error(VLA_ERR_NOMEM, "env: out of memory");
    e->vt = vt;
    vla_status st = vt->create(&e->self);
    if (st != VLA_OK) {
        free(e);
        return st;
    }
    *out = e;
    return VLA_OK;
}

void vla_env_free(vla_env *env) {
    if (!env) return;
    env->vt->destroy(env->self);
    free(env->scratch.buf);
    free(env);
}

const vla_env_spec *vla_env_get_spec(const vla_env *env) { return env->vt->spec; }

vla_status vla_env_reset(vla_env *env, uint64_t seed, vla_env_info *info) {
    vla_env_info tmp;
    VLA_TRY(env->vt->reset(env->self, seed, info ? info : &tmp));
    env->steps = 0;
    env->seed = seed;
    env->has_last_action = false;
    return VLA_OK;
}

vla_status vla_env_step(vla_env *env, const double *action, vla_env_step_result *out) {
    const vla_env_spec *sp = env->vt->spec;
    for (int i = 0; i < sp->action_dim; i++)
        if (!isfinite(action[i]))
            return vla_error(VLA_ERR_NUMERIC, "%s: action[%d] is not finite at step %d", sp->name, i, env->steps);
    memset(out, 0, sizeof *out);
    vla_status st = env->vt->step(env->self, action, &out->reward, &out->terminated, &out->info);
    if (st != VLA_OK) return vla_error_context(st, "step %d", env->steps);
    env->steps++;
    memcpy(env->last_action, action, sizeof(double) * (size_t)sp->action_dim);
    env->has_last_action = true;
    out->truncated = env->steps >= sp->max_episode_steps;
    return VLA_OK;
}

vla_status vla_env_step_width(vla_env *env, const double *action, int width, vla_env_step_result *out) {
    const vla_env_spec *sp = env->vt->spec;
    if (width != sp->action_dim)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: an action has %d entries, this env takes %d", sp->name, width,
                         sp->action_dim);
    return vla_env_step(env, action, out);
}

void vla_env_engine_seconds(vla_env *env, double *step_s, double *render_s) {
    *step_s = *render_s = 0;
    if (env->vt->engine_seconds) env->vt->engine_seconds(env->self, step_s, render_s);
}

vla_status vla_env_observe(vla_env *env, vla_env_obs *obs) {
    env->vt->observe(env->self, obs);
    if (obs->type == VLA_OBS_PIXELS || obs->type == VLA_OBS_PIXELS_AGENT_POS) {
        if (!obs->pixels || obs->width <= 0 || obs->height <= 0)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: pixel observation needs a buffer and a size",
                             env->vt->spec->name);
        return vla_env_render(env, obs->width, obs->height, obs->pixels, obs->width * 3, false);
    }
    return VLA_OK;
}

vla_status vla_env_render(vla_env *env, int width, int height, uint8_t *rgb, int stride, bool draw_action) {
    if (width <= 0 || height <= 0 || width > 8192 || height > 8192)
        return vla_error(VLA_ERR_INVALID_ARG, "render: bad size %dx%d", width, height);
    if (stride == 0) stride = width * 3;
    if (env->vt->render) return env->vt->render(env->self, 0, width, height, rgb, stride);
    vla_draw_scene sc;
    memset(&sc, 0, sizeof sc);
    sc.world_size = env->vt->spec->world_size;
    env->vt->draw(env->self, &sc);
    if (draw_action && env->has_last_action) {
        sc.has_marker = true;
        sc.marker[0] = env->last_action[0], sc.marker[1] = env->last_action[1];
    }
    return vla_sim_draw(&sc, env->render_style, width, height, rgb, stride, &env->scratch);
}

void vla_env_set_render_style(vla_env *env, vla_render_style style) { env->render_style = style; }

vla_status vla_env_render_camera(vla_env *env, int camera, int width, int height, uint8_t *rgb, int stride) {
    const vla_env_spec *sp = env->vt->spec;
    int n = sp->n_cameras > 0 ? sp->n_cameras : 1;
    if (camera < 0 || camera >= n)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: camera %d does not exist (it has %d)", sp->name, camera, n);
    if (camera == 0 || !env->vt->render) return vla_env_render(env, width, height, rgb, stride, false);
    if (width <= 0 || height <= 0 || width > 8192 || height > 8192)
        return vla_error(VLA_ERR_INVALID_ARG, "render: bad size %dx%d", width, height);
    return env->vt->render(env->self, camera, width, height, rgb, stride ? stride : width * 3);
}

vla_status vla_env_camera_index(const vla_env_spec *sp, const char *name, int *index) {
    int n = sp->n_cameras > 0 ? sp->n_cameras : 1;
    for (int i = 0; name && i < n; i++) {
        const char *cam = sp->n_cameras > 0 ? sp->camera_names[i] : "default";
        const char *key = sp->n_cameras > 0 ? sp->image_keys[i] : "observation.image";
        if (!strcmp(name, cam) || !strcmp(name, key)) {
            *index = i;
            return VLA_OK;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t u = strlen(list);
        snprintf(list + u, sizeof list - u, "%s%s", i ? ", " : "", sp->n_cameras > 0 ? sp->camera_names[i] : "default");
    }
    return vla_error(VLA_ERR_NOT_FOUND, "%s: unknown camera '%s' (cameras: %s)", sp->name, name ? name : "(null)", list);
}

vla_status vla_env_parse_cameras(const vla_env_spec *spec, const char *list, int *index, int *n) {
    *n = 0;
    for (const char *q = list;;) {
        size_t len = strcspn(q, ",");
        char name[128];
        if (len == 0 || len >= sizeof name)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: camera list '%s': %s camera name", spec->name, list,
                             len ? "a too long" : "an empty");
        memcpy(name, q, len), name[len] = 0;
        int idx;
        VLA_TRY(vla_env_camera_index(spec, name, &idx));
        for (int c = 0; c < *n; c++)
            if (index[c] == idx) return vla_error(VLA_ERR_INVALID_ARG, "%s: camera '%s' named twice", spec->name, name);
        if (*n == VLA_ENV_MAX_CAMERAS)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: at most %d cameras", spec->name, VLA_ENV_MAX_CAMERAS);
        index[(*n)++] = idx;
        if (!q[len]) return VLA_OK;
        q += len + 1;
    }
}

/* LeRobot names a task by its gym id's tail ("AlohaTransferCube-v0"); the
 * env's task list names it in snake case ("transfer_cube"). Either works:
 * compare ignoring case and underscores, after dropping an "Aloha"-style
 * prefix equal to the type and a "-vN" suffix. */
static bool task_matches(const char *type, const char *want, const char *task) {
    size_t tl = strlen(type);
    if (!strncasecmp(want, type, tl)) want += tl;
    const char *end = strrchr(want, '-');
    size_t n = end && end[1] == 'v' ? (size_t)(end - want) : strlen(want);
    const char *a = want, *b = task;
    for (;;) {
        while ((size_t)(a - want) < n && *a == '_') a++;
        while (*b == '_') b++;
        bool ea = (size_t)(a - want) >= n, eb = !*b;
        if (ea || eb) return ea && eb;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
        a++, b++;
    }
}

vla_status vla_env_resolve(const char *type, const char *task, const char **name) {
    const vla_env_vtable *vt = vla_env_find(type);
    if (!vt) return vla_error(VLA_ERR_NOT_FOUND, "unknown environment '%s' (" ENV_LIST ")", type ? type : "(null)");
    *name = vt->spec->name;
    if (!task || !*task) return VLA_OK;
    const char *const *t = vt->spec->tasks;
    if (!t) { /* a single-task env: its gym id or its name */
        const char *id = strrchr(vt->spec->gym_id, '/');
        if (!strcmp(task, vt->spec->name) || !strcmp(task, vt->spec->gym_id) || (id && !strcmp(task, id + 1)))
            return VLA_OK;
        return vla_error(VLA_ERR_NOT_FOUND, "environment '%s' has no task '%s' (its one task is %s)", type, task,
                         id ? id + 1 : vt->spec->gym_id);
    }
    for (int i = 0; t[i]; i++)
        if (task_matches(type, task, t[i])) return VLA_OK;
    char list[256] = "";
    for (int i = 0; t[i]; i++) {
        size_t u = strlen(list);
        snprintf(list + u, sizeof list - u, "%s%s", i ? ", " : "", t[i]);
    }
    return vla_error(VLA_ERR_NOT_FOUND, "environment '%s' has no task '%s' (tasks: %s)", type, task, list);
}

vla_status vla_env_set_model_file(const char *name, const char *path) {
    const vla_env_vtable *vt = vla_env_find(name);
    if (!vt) return vla_error(VLA_ERR_NOT_FOUND, "unknown environment '%s' (" ENV_LIST ")", name ? name : "(null)");
    if (!vt->set_model_file)
        return vla_error(VLA_ERR_UNSUPPORTED, "environment '%s' is built in code and reads no model file", name);
    return vt->set_model_file(path);
}

void vla_env_get_state(vla_env *env, void *state) { env->vt->get_state(env->self, state); }
void vla_env_set_state(vla_env *env, const void *state) { env->vt->set_state(env->self, state); }

/* ---- scripted policies ---------------------------------------------------- */

/* Uniform random actions in the action box (gym's action_space.sample()). */
typedef struct {
    const vla_env_spec *spec;
    vla_rng rng;
} random_policy;

static vla_status random_create(const vla_env_spec *spec, void **self) {
    random_policy *p = calloc(1, sizeof *p);
    if (!p) return vla_error(VLA_ERR_NOMEM, "random policy: out of memory");
    p->spec = spec;
    *self = p;
    return VLA_OK;
}
static void random_destroy(void *self) { free(self); }
static void random_reset(void *self, vla_env *env, uint64_t seed) {
    (void)env;
    ((random_policy *)self)->rng = vla_rng_stream(seed, 0x72616e646f6dULL);
}
static vla_status random_act(void *self, vla_env *env, double *action) {
    random_policy *p = self;
    (void)env;
    for (int i = 0; i < p->spec->action_dim; i++)
        action[i] = p->spec->action_low[i] +
                    (p->spec->action_high[i] - p->spec->action_low[i]) * vla_rng_uniform_f64(&p->rng);
    return VLA_OK;
}
static const vla_sim_policy_vtable random_vtable = {"random", NULL, random_create, random_destroy, random_reset,
                                                    random_act};

static const vla_sim_policy_vtable *const policies[] = {&vla_expert_pusht_vtable, &vla_expert_reach_vtable,
                                                        &vla_expert_aloha_vtable, &random_vtable};

vla_status vla_sim_policy_make(const char *name, const vla_env_spec *spec, vla_sim_policy **out) {
    *out = NULL;
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        const vla_sim_policy_vtable *vt = policies[i];
        if (strcmp(vt->name, name ? name : "")) continue;
        if (vt->env_name && strcmp(vt->env_name, spec->name)) continue;
        vla_sim_policy *p = calloc(1, sizeof *p);
        if (!p) return vla_error(VLA_ERR_NOMEM, "policy: out of memory");
        p->vt = vt;
        vla_status st = vt->create(spec, &p->self);
        if (st != VLA_OK) {
            free(p);
            return st;
        }
        *out = p;
        return VLA_OK;
    }
    return vla_error(VLA_ERR_NOT_FOUND, "no scripted policy '%s' for environment '%s' (expert, random)",
                     name ? name : "(null)", spec->name);
}

void vla_sim_policy_free(vla_sim_policy *p) {
    if (!p) return;
    p->vt->destroy(p->self);
    free(p);
}

void vla_sim_policy_reset(vla_sim_policy *p, vla_env *env, uint64_t seed) { p->vt->reset(p->self, env, seed); }

vla_status vla_sim_policy_act(vla_sim_policy *p, vla_env *env, double *action) {
    return p->vt->act(p->self, env, action);
}
