/* robot.c — the public C API of include/vla.h: a policy for a robot's own
 * loop on the serve engine (the same request checks and conversions as
 * `vla serve`), and the simulators behind it. */
#include "vla.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "serve/engine.h"
#include "sim/env.h"

_Static_assert(VLA_RC_OK == (int)VLA_OK && VLA_RC_INVALID_ARG == (int)VLA_ERR_INVALID_ARG &&
                   VLA_RC_IO == (int)VLA_ERR_IO && VLA_RC_FORMAT == (int)VLA_ERR_FORMAT &&
                   VLA_RC_NOT_FOUND == (int)VLA_ERR_NOT_FOUND && VLA_RC_UNSUPPORTED == (int)VLA_ERR_UNSUPPORTED &&
                   VLA_RC_NOMEM == (int)VLA_ERR_NOMEM && VLA_RC_NUMERIC == (int)VLA_ERR_NUMERIC &&
                   VLA_RC_INTERNAL == (int)VLA_ERR_INTERNAL && VLA_STATUS_COUNT == 9,
               "vla.h's codes are vla_status's");

#define MAX_FEATURES 32

struct vla_robot {
    vla_engine *e;
    vla_session *s;
    vla_robot_info info;
};

const char *vla_last_error(void) { return vla_error_message(); }
const char *vla_rc_name(vla_rc rc) { return vla_status_name((vla_status)rc); }
const char *vla_version_string(void) { return VLA_VERSION; }

vla_rc vla_robot_open(const char *checkpoint, const vla_robot_options *opt, vla_robot **out) {
    if (!out) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_open: out is NULL");
    *out = NULL;
    if (!checkpoint) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_open: no checkpoint path");
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = checkpoint;
    if (opt) {
        o.embodiment = opt->embodiment, o.flow_steps = opt->flow_steps, o.seed = opt->seed;
        if (opt->rtc_max_guidance > 0) o.rtc_beta = opt->rtc_max_guidance;
    }
    vla_robot *r = calloc(1, sizeof *r);
    if (!r) return (vla_rc)vla_error(VLA_ERR_NOMEM, "vla_robot_open: out of memory");
    vla_status st = vla_engine_open(&o, &r->e);
    if (st == VLA_OK) st = vla_session_create(r->e, 1, &r->s);
    if (st != VLA_OK) {
        vla_robot_close(r);
        return (vla_rc)st;
    }
    const vla_engine_info *in = vla_engine_get_info(r->e);
    vla_robot_info *i = &r->info;
    i->family = in->family, i->config = in->config, i->task = in->task;
    i->horizon = (int)in->horizon, i->action_dim = (int)in->action_dim, i->state_dim = (int)in->state_frame;
    i->n_state_keys = in->n_state_keys;
    for (int k = 0; k < in->n_state_keys && k < VLA_MAX_STATE_KEYS; k++) i->state_keys[k] = in->state_keys[k];
    i->n_obs_steps = in->n_obs_steps, i->n_cameras = in->cameras, i->image_size = (int)in->image_size;
    i->fps = in->fps, i->relative_actions = in->relative_actions, i->rtc = in->rtc;
    i->n_action_steps = in->n_action_steps;
    *out = r;
    return VLA_RC_OK;
}

void vla_robot_close(vla_robot *r) {
    if (!r) return;
    vla_session_free(r->s);
    vla_engine_free(r->e);
    free(r);
}

vla_rc vla_robot_get_info(const vla_robot *r, vla_robot_info *info) {
    if (!r || !info) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_get_info: NULL argument");
    *info = r->info;
    return VLA_RC_OK;
}

vla_rc vla_robot_reset(vla_robot *r) {
    if (!r) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_reset: NULL robot");
    vla_session_reset(r->s);
    return VLA_RC_OK;
}

static void set_dtype(vla_np_field *f, const char *s) { vla_np_parse_dtype(s, strlen(s), &f->dtype); }

/* The C structs as the request map the engine reads from a client. */
static vla_status build_map(const vla_robot *r, const vla_robot_obs *obs, const vla_robot_rtc *rtc, vla_np_field *f,
                            vla_np_map *m) {
    memset(m, 0, sizeof *m);
    m->fields = f;
    if (!obs || (obs->n_features > 0 && !obs->features) || obs->n_features < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "observation: NULL, or features missing");
    if (obs->n_features > MAX_FEATURES - 5)
        return vla_error(VLA_ERR_INVALID_ARG, "observation: %d features (at most %d)", obs->n_features, MAX_FEATURES - 5);
    for (int i = 0; i < obs->n_features; i++) {
        const vla_feature *x = &obs->features[i];
        vla_np_field *y = &f[m->n++];
        memset(y, 0, sizeof *y);
        if (!x->key || strlen(x->key) >= sizeof y->key)
            return vla_error(VLA_ERR_INVALID_ARG, "observation: feature %d has no key (or one too long)", i);
        strcpy(y->key, x->key);
        y->kind = VLA_NP_ARRAY;
        if (x->pixels) {
            if (x->height <= 0 || x->width <= 0)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: image of %d × %d pixels", x->key, x->height, x->width);
            set_dtype(y, "|u1");
            y->ndim = 3, y->shape[0] = x->height, y->shape[1] = x->width, y->shape[2] = 3;
            y->numel = (int64_t)x->height * x->width * 3, y->data = x->pixels;
        } else {
            if (!x->values || x->n <= 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: no values (and no pixels)", x->key);
            set_dtype(y, "<f4"); /* the host's floats: vla.c builds for little-endian machines */
            y->ndim = 1, y->shape[0] = x->n, y->numel = x->n, y->data = (const uint8_t *)x->values;
        }
    }
    if (obs->task) {
        vla_np_field *y = &f[m->n++];
        memset(y, 0, sizeof *y);
        strcpy(y->key, "task");
        y->kind = VLA_NP_STRING, y->str = obs->task, y->len = strlen(obs->task);
    }
    if (obs->noise_key >= 0) {
        vla_np_field *y = &f[m->n++];
        memset(y, 0, sizeof *y);
        strcpy(y->key, "seed");
        y->kind = VLA_NP_INT, y->i = obs->noise_key, y->f = (double)obs->noise_key;
    }
    if (rtc) {
        if (!rtc->committed || rtc->n <= 0)
            return vla_error(VLA_ERR_INVALID_ARG, "rtc: committed actions missing (n = %d)", rtc->n);
        vla_np_field *y = &f[m->n++];
        memset(y, 0, sizeof *y);
        strcpy(y->key, "prev_chunk_left_over");
        y->kind = VLA_NP_ARRAY;
        set_dtype(y, "<f4");
        y->ndim = 2, y->shape[0] = rtc->n, y->shape[1] = r->info.action_dim;
        y->numel = (int64_t)rtc->n * r->info.action_dim, y->data = (const uint8_t *)rtc->committed;
        const char *names[2] = {"inference_delay", "execution_horizon"};
        int vals[2] = {rtc->delay, rtc->end};
        for (int k = 0; k < 2; k++) {
            if (k == 1 && rtc->end <= 0) break;
            y = &f[m->n++];
            memset(y, 0, sizeof *y);
            strcpy(y->key, names[k]);
            y->kind = VLA_NP_INT, y->i = vals[k], y->f = vals[k];
        }
    }
    return VLA_OK;
}

vla_rc vla_robot_observe(vla_robot *r, const vla_robot_obs *obs) {
    if (!r) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_observe: NULL robot");
    vla_np_field f[MAX_FEATURES];
    vla_np_map m;
    vla_status bst = build_map(r, obs, NULL, f, &m);
    if (bst != VLA_OK) return (vla_rc)bst;
    vla_request *req = NULL;
    vla_status st = vla_request_prepare(r->e, r->s, &m, &req); /* checks it, and the history takes the frame */
    vla_request_free(req);
    return (vla_rc)st;
}

vla_rc vla_robot_act(vla_robot *r, const vla_robot_obs *obs, const vla_robot_rtc *rtc, float *actions) {
    if (!r || !actions) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_robot_act: NULL robot or actions");
    vla_np_field f[MAX_FEATURES];
    vla_np_map m;
    vla_status bst = build_map(r, obs, rtc, f, &m);
    if (bst != VLA_OK) return (vla_rc)bst;
    vla_request *req = NULL;
    vla_status st = vla_request_prepare(r->e, r->s, &m, &req);
    if (st == VLA_OK) st = vla_engine_run(r->e, &req, 1);
    if (st == VLA_OK)
        memcpy(actions, vla_request_actions(req), (size_t)r->info.horizon * (size_t)r->info.action_dim * sizeof(float));
    vla_request_free(req);
    return (vla_rc)st;
}

/* ---- simulators ---- */

struct vla_simulator {
    vla_env *env;
    vla_env_obs ob;
    float agent[VLA_ENV_MAX_DIM], envst[VLA_ENV_MAX_DIM];
    uint8_t *rgb;
    int rgb_size;
    vla_feature feat[3];
};

vla_rc vla_simulator_open(const char *env, vla_simulator **out) {
    if (!out) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_simulator_open: out is NULL");
    *out = NULL;
    vla_simulator *s = calloc(1, sizeof *s);
    if (!s) return (vla_rc)vla_error(VLA_ERR_NOMEM, "vla_simulator_open: out of memory");
    vla_status st = vla_env_make(env ? env : "", &s->env);
    if (st != VLA_OK) {
        free(s);
        return (vla_rc)st;
    }
    *out = s;
    return VLA_RC_OK;
}

void vla_simulator_close(vla_simulator *s) {
    if (!s) return;
    vla_env_free(s->env);
    free(s->rgb), free(s);
}

vla_rc vla_simulator_reset(vla_simulator *s, uint64_t seed) {
    if (!s) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_simulator_reset: NULL simulator");
    vla_env_info info;
    return (vla_rc)vla_env_reset(s->env, seed, &info);
}

vla_rc vla_simulator_observe(vla_simulator *s, int image_size, vla_robot_obs *obs) {
    if (!s || !obs) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_simulator_observe: NULL argument");
    if (image_size < 0 || image_size > 4096)
        return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_simulator_observe: image size %d", image_size);
    memset(&s->ob, 0, sizeof s->ob);
    s->ob.type = VLA_OBS_STATE;
    vla_status st = vla_env_observe(s->env, &s->ob);
    if (st != VLA_OK) return (vla_rc)st;
    /* LeRobot's PushT: observation.state is the agent's position (gym-pusht's agent_pos) */
    for (int i = 0; i < s->ob.agent_pos_dim; i++) s->agent[i] = (float)s->ob.agent_pos[i];
    for (int i = 0; i < s->ob.env_state_dim; i++) s->envst[i] = (float)s->ob.env_state[i];
    int n = 0;
    s->feat[n++] = (vla_feature){"observation.state", s->agent, s->ob.agent_pos_dim, NULL, 0, 0};
    if (s->ob.env_state_dim > 0)
        s->feat[n++] = (vla_feature){"observation.environment_state", s->envst, s->ob.env_state_dim, NULL, 0, 0};
    if (image_size > 0) {
        if (image_size != s->rgb_size) {
            free(s->rgb);
            if (!(s->rgb = malloc((size_t)image_size * (size_t)image_size * 3)))
                return (vla_rc)vla_error(VLA_ERR_NOMEM, "vla_simulator_observe: out of memory");
            s->rgb_size = image_size;
        }
        if ((st = vla_env_render(s->env, image_size, image_size, s->rgb, 0, false)) != VLA_OK) return (vla_rc)st;
        s->feat[n++] = (vla_feature){"observation.image", NULL, 0, s->rgb, image_size, image_size};
    }
    obs->features = s->feat, obs->n_features = n, obs->task = NULL, obs->noise_key = -1;
    return VLA_RC_OK;
}

vla_rc vla_simulator_step(vla_simulator *s, const float *action, int *done, int *success, double *coverage) {
    if (!s || !action) return (vla_rc)vla_error(VLA_ERR_INVALID_ARG, "vla_simulator_step: NULL argument");
    const vla_env_spec *sp = vla_env_get_spec(s->env);
    double a[VLA_ENV_MAX_DIM];
    for (int d = 0; d < sp->action_dim; d++) a[d] = action[d];
    vla_env_step_result res;
    vla_status st = vla_env_step(s->env, a, &res);
    if (st != VLA_OK) return (vla_rc)st;
    if (done) *done = res.terminated || res.truncated;
    if (success) *success = res.info.is_success;
    if (coverage) *coverage = res.info.coverage;
    return VLA_RC_OK;
}

int vla_simulator_action_dim(const vla_simulator *s) { return s ? vla_env_get_spec(s->env)->action_dim : 0; }
int vla_simulator_max_steps(const vla_simulator *s) { return s ? vla_env_get_spec(s->env)->max_episode_steps : 0; }
