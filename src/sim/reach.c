/* reach.c — "reach": a tiny, very fast 2-D environment for closed-loop tests.
 *
 * The same agent and controller as PushT (a disc driven toward the action,
 * a target position in [0,512]², by PD control k_p 100, k_v 20, dt 0.01, 10
 * substeps per step) but no physics engine and no block: the task is to
 * bring the agent within SUCCESS_DIST of a target drawn at reset. A policy
 * that maps state (agent x,y, target x,y) to an action learns it in seconds,
 * which is what a train → eval test needs. Resets use Philox keyed by the
 * seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "sim/env.h"

#define WORLD 512.0
#define SUCCESS_DIST 12.0
#define TARGET_RADIUS 20.0

typedef struct {
    double p[2], v[2], target[2];
} reach_state;

typedef struct {
    reach_state s;
} reach;

static const vla_env_spec reach_spec = {
    .name = "reach",
    .gym_id = "vla/Reach-v0",
    .task = "Move the blue disc onto the green target.",
    .action_dim = 2,
    .action_low = {0, 0},
    .action_high = {WORLD, WORLD},
    .state_dim = 4,
    .env_state_dim = 2,
    .agent_pos_dim = 2,
    .max_episode_steps = 50,
    .fps = 10,
    .world_size = WORLD,
};

static vla_status reach_create(void **self) {
    reach *r = calloc(1, sizeof *r);
    if (!r) return vla_error(VLA_ERR_NOMEM, "reach: out of memory");
    *self = r;
    return VLA_OK;
}
static void reach_destroy(void *self) { free(self); }

static double dist(const reach *r) { return hypot(r->s.p[0] - r->s.target[0], r->s.p[1] - r->s.target[1]); }

static void fill_info(reach *r, vla_env_info *info) {
    memset(info, 0, sizeof *info);
    double d = dist(r);
    info->coverage = fmax(0.0, 1.0 - d / 256.0);
    info->is_success = d < SUCCESS_DIST;
    info->agent_pos[0] = r->s.p[0], info->agent_pos[1] = r->s.p[1];
    info->agent_vel[0] = r->s.v[0], info->agent_vel[1] = r->s.v[1];
    info->object_pose[0] = info->goal_pose[0] = r->s.target[0];
    info->object_pose[1] = info->goal_pose[1] = r->s.target[1];
}

static vla_status reach_reset(void *self, uint64_t seed, vla_env_info *info) {
    reach *r = self;
    vla_rng g = vla_rng_stream(seed, 0x7265616368ULL);
    memset(&r->s, 0, sizeof r->s);
    do {
        for (int i = 0; i < 2; i++) r->s.p[i] = 50 + 412 * vla_rng_uniform_f64(&g);
        for (int i = 0; i < 2; i++) r->s.target[i] = 50 + 412 * vla_rng_uniform_f64(&g);
    } while (dist(r) < 100);
    fill_info(r, info);
    return VLA_OK;
}

static vla_status reach_step(void *self, const double *action, double *reward, bool *terminated, vla_env_info *info) {
    reach *r = self;
    double a[2] = {fmin(fmax(action[0], 0), WORLD), fmin(fmax(action[1], 0), WORLD)};
    for (int k = 0; k < 10; k++)
        for (int i = 0; i < 2; i++) {
            r->s.v[i] += (100.0 * (a[i] - r->s.p[i]) - 20.0 * r->s.v[i]) * 0.01;
            r->s.p[i] += r->s.v[i] * 0.01;
        }
    fill_info(r, info);
    *reward = info->coverage;
    *terminated = info->is_success;
    return VLA_OK;
}

static void reach_observe(void *self, vla_env_obs *obs) {
    reach *r = self;
    obs->state_dim = 4;
    obs->state[0] = r->s.p[0], obs->state[1] = r->s.p[1];
    obs->state[2] = r->s.target[0], obs->state[3] = r->s.target[1];
    obs->env_state_dim = 2;
    obs->env_state[0] = r->s.target[0], obs->env_state[1] = r->s.target[1];
    obs->agent_pos_dim = 2;
    obs->agent_pos[0] = r->s.p[0], obs->agent_pos[1] = r->s.p[1];
}

static void reach_draw(void *self, vla_draw_scene *scene) {
    reach *r = self;
    vla_draw_item *g = &scene->items[scene->n_items++];
    g->role = VLA_DRAW_GOAL, g->kind = 0, g->n = 8;
    for (int k = 0; k < 8; k++) {
        g->pts[k][0] = r->s.target[0] + TARGET_RADIUS * cos(k * M_PI / 4);
        g->pts[k][1] = r->s.target[1] + TARGET_RADIUS * sin(k * M_PI / 4);
    }
    vla_draw_item *a = &scene->items[scene->n_items++];
    a->role = VLA_DRAW_AGENT, a->kind = 1, a->radius = 15;
    a->pts[0][0] = r->s.p[0], a->pts[0][1] = r->s.p[1];
}

static int reach_state_size(void) { return (int)sizeof(reach_state); }
static void reach_get_state(void *self, void *out) { memcpy(out, &((reach *)self)->s, sizeof(reach_state)); }
static void reach_set_state(void *self, const void *in) { memcpy(&((reach *)self)->s, in, sizeof(reach_state)); }

const vla_env_vtable vla_reach_vtable = {
    .spec = &reach_spec,
    .create = reach_create,
    .destroy = reach_destroy,
    .reset = reach_reset,
    .step = reach_step,
    .observe = reach_observe,
    .draw = reach_draw,
    .state_size = reach_state_size,
    .get_state = reach_get_state,
    .set_state = reach_set_state,
};

/* ---- the reach expert: point at the target ------------------------------------ */

/* The expert commands the target itself; the PD controller (critically
 * damped) turns that into a smooth approach. Its action is a linear function
 * of the observation, so a test can learn it exactly in milliseconds. */
static vla_status rexp_create(const vla_env_spec *spec, void **self) {
    (void)spec;
    *self = NULL;
    return VLA_OK;
}
static void rexp_destroy(void *self) { (void)self; }
static void rexp_reset(void *self, vla_env *env, uint64_t seed) { (void)self, (void)env, (void)seed; }
static vla_status rexp_act(void *self, vla_env *env, double *action) {
    (void)self;
    reach *r = env->self;
    action[0] = r->s.target[0], action[1] = r->s.target[1];
    return VLA_OK;
}

const vla_sim_policy_vtable vla_expert_reach_vtable = {"expert", "reach", rexp_create, rexp_destroy, rexp_reset,
                                                       rexp_act};
