/* pusht.c — PushT (gym_pusht/PushT-v0) on Chipmunk2D, the engine under pymunk.
 *
 * The world is built exactly as gym-pusht's _setup() builds it
 * (huggingface/gym-pusht 0.1.5, gym_pusht/envs/pusht.py): a 512×512 space
 * with gravity 0 and damping 0 (Chipmunk's damping is a per-second retention
 * factor, so 0 means the block keeps no velocity from one step to the next:
 * it moves only while pushed), four static wall segments of radius 2, a
 * kinematic circular agent of radius 15 driven by a PD controller (k_p 100,
 * k_v 20) at dt = 0.01 for 10 substeps per step, and a T block of mass 1 made
 * of two polygons whose moment of inertia repeats the bar's (gym-pusht's
 * quirk) and whose centre of gravity is the mean of the two shapes'
 * centroids. Shapes keep Chipmunk's default friction and elasticity 0:
 * gym-pusht sets `friction = 1` on the Body objects, where pymunk ignores it.
 * Shapes are created in gym-pusht's order so Chipmunk assigns the same hash
 * ids.
 *
 * Reset seeds: we reimplement numpy's legacy RandomState (MT19937 + masked
 * randint + polar gauss, sim/np_random.c, ~100 lines) rather than use Philox,
 * so that `reset(seed)` gives the same initial agent and block poses as
 * gym-pusht for the same seed; tests check the draws against numpy. Seeds
 * must fit in 32 bits, as numpy requires.
 *
 * Coverage is exact: the block's two convex polygons are clipped against the
 * goal's two (Sutherland–Hodgman), the pieces of each T touch only along an
 * edge, so the area of the intersection of the unions is the sum of the four
 * pairwise areas — what shapely computes, without pixels. */
#include <chipmunk/chipmunk_structs.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/env.h"
#include "sim/np_random.h"

#define WORLD 512.0
#define DT 0.01
#define SUBSTEPS 10
#define KP 100.0
#define KV 20.0

const double vla_pusht_goal_pose[3] = {256.0, 256.0, M_PI / 4};
const double vla_pusht_shape_verts[2][4][2] = {
    {{-60, 30}, {60, 30}, {60, 0}, {-60, 0}},   /* bar: (-length*scale/2, scale) … */
    {{-15, 30}, {-15, 120}, {15, 120}, {15, 30}}, /* stem */
};
const double vla_pusht_cog[2] = {0.0, 45.0};

/* Vertices as Chipmunk stores them after its convex hull (cpPolyShapeGetVert
 * order), which is what gym-pusht's get_vertices() and get_keypoints() see.
 * Checked against the live shapes in the tests. */
static const double hull_verts[2][4][2] = {
    {{-60, 0}, {60, 0}, {60, 30}, {-60, 30}},
    {{-15, 30}, {15, 30}, {15, 120}, {-15, 120}},
};

typedef struct {
    cpSpace *space;
    cpBody *agent, *block;
    cpShape *shapes[7]; /* walls 0..3, agent 4, bar 5, stem 6 */
    int n_contacts;
} pusht;

static const vla_env_spec pusht_spec = {
    .name = "pusht",
    .gym_id = "gym_pusht/PushT-v0",
    .task = "Push the T-shaped block onto the T-shaped target.",
    .action_dim = 2,
    .action_low = {0, 0},
    .action_high = {WORLD, WORLD},
    .state_dim = 5,
    .env_state_dim = 16,
    .agent_pos_dim = 2,
    .max_episode_steps = 300,
    .fps = 10,
    .world_size = WORLD,
};

/* ---- geometry ---------------------------------------------------------------- */

/* Body-to-world as Chipmunk's cpTransformPoint for a body whose centre of
 * gravity is its origin (the goal body): x' = cos·x − sin·y + tx. */
static void pose_point(double x, double y, double a, const double v[2], double out[2]) {
    cpVect rot = cpvforangle(a);
    cpTransform t = cpTransformNewTranspose(rot.x, -rot.y, x, rot.y, rot.x, y);
    cpVect w = cpTransformPoint(t, cpv(v[0], v[1]));
    out[0] = w.x, out[1] = w.y;
}

static double poly_area(const double (*p)[2], int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        s += p[i][0] * p[j][1] - p[j][0] * p[i][1];
    }
    return 0.5 * s;
}

/* Area of the intersection of two convex polygons (any orientation). */
static double convex_intersection_area(const double (*a)[2], int na, const double (*b)[2], int nb) {
    double buf1[16][2], buf2[16][2];
    double (*in)[2] = buf1, (*out)[2] = buf2;
    int n = na;
    memcpy(in, a, sizeof(double) * 2 * (size_t)na);
    double orient = poly_area(b, nb) >= 0 ? 1.0 : -1.0;
    for (int e = 0; e < nb && n > 0; e++) {
        const double *p = b[e], *q = b[(e + 1) % nb];
        double ex = q[0] - p[0], ey = q[1] - p[1];
        int m = 0;
        for (int i = 0; i < n; i++) {
            const double *s = in[i], *t = in[(i + 1) % n];
            double ds = orient * (ex * (s[1] - p[1]) - ey * (s[0] - p[0]));
            double dt = orient * (ex * (t[1] - p[1]) - ey * (t[0] - p[0]));
            if (ds >= 0) out[m][0] = s[0], out[m][1] = s[1], m++;
            if ((ds >= 0) != (dt >= 0)) {
                double k = ds / (ds - dt);
                out[m][0] = s[0] + k * (t[0] - s[0]);
                out[m][1] = s[1] + k * (t[1] - s[1]);
                m++;
            }
        }
        double (*tmp)[2] = in;
        in = out, out = tmp, n = m;
    }
    return n >= 3 ? fabs(poly_area(in, n)) : 0.0;
}

static double coverage_of(double blk[2][4][2]) {
    double goal[2][4][2];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++)
            pose_point(vla_pusht_goal_pose[0], vla_pusht_goal_pose[1], vla_pusht_goal_pose[2], hull_verts[s][k],
                       goal[s][k]);
    double inter = 0, goal_area = 0;
    for (int g = 0; g < 2; g++) {
        goal_area += fabs(poly_area((const double (*)[2])goal[g], 4));
        for (int s = 0; s < 2; s++)
            inter += convex_intersection_area((const double (*)[2])blk[s], 4, (const double (*)[2])goal[g], 4);
    }
    return inter / goal_area;
}

double vla_pusht_coverage_at(double x, double y, double angle) {
    double blk[2][4][2];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) pose_point(x, y, angle, hull_verts[s][k], blk[s][k]);
    return coverage_of(blk);
}

/* gym-pusht get_keypoints(): v.rotated(angle) + position, shape by shape. */
void vla_pusht_keypoints_at(double x, double y, double angle, double out[16]) {
    double c = cos(angle), s = sin(angle);
    for (int sh = 0; sh < 2; sh++)
        for (int k = 0; k < 4; k++) {
            const double *v = hull_verts[sh][k];
            out[(sh * 4 + k) * 2 + 0] = v[0] * c - v[1] * s + x;
            out[(sh * 4 + k) * 2 + 1] = v[0] * s + v[1] * c + y;
        }
}

void vla_pusht_block_pose(const vla_pusht_state *st, double pose[3]) {
    /* origin = p − R(a)·cog, as Chipmunk's SetTransform computes it */
    cpVect rot = cpvforangle(st->block_a);
    pose[0] = st->block_p[0] - (vla_pusht_cog[0] * rot.x - vla_pusht_cog[1] * rot.y);
    pose[1] = st->block_p[1] - (vla_pusht_cog[0] * rot.y + vla_pusht_cog[1] * rot.x);
    pose[2] = st->block_a;
}

/* ---- world ---------------------------------------------------------------------- */

static void post_solve(cpArbiter *arb, cpSpace *space, cpDataPointer data) {
    (void)space;
    ((pusht *)data)->n_contacts += cpArbiterGetCount(arb);
}

static void teardown(pusht *p) {
    if (!p->space) return;
    for (int i = 0; i < 7; i++)
        if (p->shapes[i]) {
            cpSpaceRemoveShape(p->space, p->shapes[i]);
            cpShapeFree(p->shapes[i]);
            p->shapes[i] = NULL;
        }
    cpSpaceRemoveBody(p->space, p->agent);
    cpSpaceRemoveBody(p->space, p->block);
    cpBodyFree(p->agent);
    cpBodyFree(p->block);
    cpSpaceFree(p->space);
    p->space = NULL;
}

/* gym-pusht _setup(): a fresh space every reset. */
static void setup(pusht *p) {
    teardown(p);
    cpSpace *sp = p->space = cpSpaceNew();
    cpSpaceSetGravity(sp, cpv(0, 0));
    cpSpaceSetDamping(sp, 0.0);
    cpBody *ground = cpSpaceGetStaticBody(sp);
    static const double walls[4][4] = {{5, 506, 5, 5}, {5, 5, 506, 5}, {506, 5, 506, 506}, {5, 506, 506, 506}};
    for (int i = 0; i < 4; i++) {
        p->shapes[i] = cpSegmentShapeNew(ground, cpv(walls[i][0], walls[i][1]), cpv(walls[i][2], walls[i][3]), 2);
        cpSpaceAddShape(sp, p->shapes[i]);
    }
    p->agent = cpBodyNewKinematic();
    cpBodySetPosition(p->agent, cpv(256, 400));
    p->shapes[4] = cpCircleShapeNew(p->agent, VLA_PUSHT_AGENT_RADIUS, cpvzero);
    cpSpaceAddBody(sp, p->agent);
    cpSpaceAddShape(sp, p->shapes[4]);

    cpVect v[2][4];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) v[s][k] = cpv(vla_pusht_shape_verts[s][k][0], vla_pusht_shape_verts[s][k][1]);
    double inertia1 = cpMomentForPoly(1.0, 4, v[0], cpvzero, 0.0);
    double inertia2 = cpMomentForPoly(1.0, 4, v[0], cpvzero, 0.0); /* sic: the bar again */
    p->block = cpBodyNew(1.0, inertia1 + inertia2);
    p->shapes[5] = cpPolyShapeNew(p->block, 4, v[0], cpTransformIdentity, 0.0);
    p->shapes[6] = cpPolyShapeNew(p->block, 4, v[1], cpTransformIdentity, 0.0);
    cpVect c1 = cpShapeGetCenterOfGravity(p->shapes[5]), c2 = cpShapeGetCenterOfGravity(p->shapes[6]);
    cpBodySetCenterOfGravity(p->block, cpvmult(cpvadd(c1, c2), 0.5));
    cpBodySetPosition(p->block, cpv(256, 300));
    cpBodySetAngle(p->block, 0.0);
    cpSpaceAddBody(sp, p->block);
    cpSpaceAddShape(sp, p->shapes[5]);
    cpSpaceAddShape(sp, p->shapes[6]);

    cpCollisionHandler *h = cpSpaceAddCollisionHandler(sp, 0, 0);
    h->postSolveFunc = post_solve;
    h->userData = p;
    p->n_contacts = 0;
}

static void fill_info(pusht *p, vla_env_info *info) {
    memset(info, 0, sizeof *info);
    double blk[2][4][2];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) {
            cpVect w = cpBodyLocalToWorld(p->block, cpv(hull_verts[s][k][0], hull_verts[s][k][1]));
            blk[s][k][0] = w.x, blk[s][k][1] = w.y;
        }
    info->coverage = coverage_of(blk);
    info->is_success = info->coverage > VLA_PUSHT_SUCCESS;
    info->n_contacts = p->n_contacts;
    cpVect a = cpBodyGetPosition(p->agent), av = cpBodyGetVelocity(p->agent), b = cpBodyGetPosition(p->block);
    info->agent_pos[0] = a.x, info->agent_pos[1] = a.y;
    info->agent_vel[0] = av.x, info->agent_vel[1] = av.y;
    info->object_pose[0] = b.x, info->object_pose[1] = b.y, info->object_pose[2] = cpBodyGetAngle(p->block);
    memcpy(info->goal_pose, vla_pusht_goal_pose, sizeof info->goal_pose);
}

/* Debian's libchipmunk is a debug build whose first cpSpaceNew() prints a
 * banner on stdout, which would corrupt `--json` output. Create the first
 * space once with stdout pointed at /dev/null. */
static void chipmunk_quiet_init(void) {
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *null = fopen("/dev/null", "w");
    if (saved >= 0 && null) dup2(fileno(null), STDOUT_FILENO);
    cpSpaceFree(cpSpaceNew());
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    if (null) fclose(null);
}

static vla_status pusht_create(void **self) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, chipmunk_quiet_init);
    pusht *p = calloc(1, sizeof *p);
    if (!p) return vla_error(VLA_ERR_NOMEM, "pusht: out of memory");
    setup(p);
    *self = p;
    return VLA_OK;
}

static void pusht_destroy(void *self) {
    if (!self) return;
    teardown(self);
    free(self);
}

void vla_pusht_reset_draw(uint32_t seed, double state[5]) {
    vla_np_random rs;
    vla_np_random_seed(&rs, seed);
    state[0] = (double)vla_np_random_randint(&rs, 50, 450);
    state[1] = (double)vla_np_random_randint(&rs, 50, 450);
    state[2] = (double)vla_np_random_randint(&rs, 100, 400);
    state[3] = (double)vla_np_random_randint(&rs, 100, 400);
    state[4] = vla_np_random_randn(&rs) * 2 * M_PI - M_PI;
}

/* gym-pusht _set_state(): agent position, block position, then angle (which
 * turns the block about its centre of gravity, so the origin moves), then
 * one physics step. */
static void set_state5(pusht *p, const double s[5]) {
    cpBodySetPosition(p->agent, cpv(s[0], s[1]));
    cpBodySetPosition(p->block, cpv(s[2], s[3]));
    cpBodySetAngle(p->block, s[4]);
    cpSpaceStep(p->space, DT);
}

static vla_status pusht_reset(void *self, uint64_t seed, vla_env_info *info) {
    pusht *p = self;
    if (seed > 0xffffffffu)
        return vla_error(VLA_ERR_INVALID_ARG, "pusht: seed %llu does not fit in 32 bits (numpy RandomState)",
                         (unsigned long long)seed);
    setup(p);
    double s[5];
    vla_pusht_reset_draw((uint32_t)seed, s);
    set_state5(p, s);
    p->n_contacts = 0;
    fill_info(p, info);
    info->is_success = false;
    return VLA_OK;
}

extern const vla_env_vtable vla_pusht_vtable;

vla_status vla_pusht_reset_to_state(vla_env *env, const double state[5]) {
    if (env->vt != &vla_pusht_vtable)
        return vla_error(VLA_ERR_INVALID_ARG, "reset_to_state: environment '%s' is not pusht", env->vt->spec->name);
    for (int i = 0; i < 5; i++)
        if (!isfinite(state[i])) return vla_error(VLA_ERR_NUMERIC, "reset_to_state: state[%d] is not finite", i);
    pusht *p = env->self;
    setup(p);
    set_state5(p, state);
    p->n_contacts = 0;
    env->steps = 0;
    env->has_last_action = false;
    return VLA_OK;
}

static vla_status pusht_step(void *self, const double *action, double *reward, bool *terminated, vla_env_info *info) {
    pusht *p = self;
    cpVect act = cpv(fmin(fmax(action[0], 0.0), WORLD), fmin(fmax(action[1], 0.0), WORLD));
    p->n_contacts = 0;
    for (int i = 0; i < SUBSTEPS; i++) {
        cpVect pos = cpBodyGetPosition(p->agent), vel = cpBodyGetVelocity(p->agent);
        cpVect acc = cpvadd(cpvmult(cpvsub(act, pos), KP), cpvmult(cpvsub(cpvzero, vel), KV));
        cpBodySetVelocity(p->agent, cpvadd(vel, cpvmult(acc, DT)));
        cpSpaceStep(p->space, DT);
    }
    fill_info(p, info);
    double r = info->coverage / VLA_PUSHT_SUCCESS;
    *reward = r < 0 ? 0 : r > 1 ? 1 : r;
    *terminated = info->is_success;
    return VLA_OK;
}

/* Python's float modulo: the result takes the sign of the divisor. */
static double py_mod(double a, double w) {
    double m = fmod(a, w);
    if (m != 0) {
        if ((w < 0) != (m < 0)) m += w;
    } else {
        m = copysign(0.0, w);
    }
    return m;
}

static void pusht_observe(void *self, vla_env_obs *obs) {
    pusht *p = self;
    cpVect a = cpBodyGetPosition(p->agent), b = cpBodyGetPosition(p->block);
    double ang = cpBodyGetAngle(p->block);
    obs->agent_pos_dim = 2;
    obs->agent_pos[0] = a.x, obs->agent_pos[1] = a.y;
    obs->state_dim = 5;
    obs->state[0] = a.x, obs->state[1] = a.y, obs->state[2] = b.x, obs->state[3] = b.y;
    obs->state[4] = py_mod(ang, 2 * M_PI);
    obs->env_state_dim = 16;
    vla_pusht_keypoints_at(b.x, b.y, ang, obs->env_state);
}

static void pusht_draw(void *self, vla_draw_scene *scene) {
    pusht *p = self;
    for (int s = 0; s < 2; s++) {
        vla_draw_item *it = &scene->items[scene->n_items++];
        it->role = VLA_DRAW_GOAL, it->kind = 0, it->n = 4;
        for (int k = 0; k < 4; k++)
            pose_point(vla_pusht_goal_pose[0], vla_pusht_goal_pose[1], vla_pusht_goal_pose[2], hull_verts[s][k],
                       it->pts[k]);
    }
    for (int s = 0; s < 2; s++) {
        vla_draw_item *it = &scene->items[scene->n_items++];
        it->role = VLA_DRAW_BLOCK, it->kind = 0, it->n = 4;
        for (int k = 0; k < 4; k++) {
            cpVect w = cpBodyLocalToWorld(p->block, cpv(hull_verts[s][k][0], hull_verts[s][k][1]));
            it->pts[k][0] = w.x, it->pts[k][1] = w.y;
        }
    }
    vla_draw_item *ag = &scene->items[scene->n_items++];
    cpVect a = cpBodyGetPosition(p->agent);
    ag->role = VLA_DRAW_AGENT, ag->kind = 1, ag->radius = VLA_PUSHT_AGENT_RADIUS;
    ag->pts[0][0] = a.x, ag->pts[0][1] = a.y;
    for (int i = 0; i < 4; i++) {
        vla_draw_item *it = &scene->items[scene->n_items++];
        cpVect wa = cpSegmentShapeGetA(p->shapes[i]), wb = cpSegmentShapeGetB(p->shapes[i]);
        it->role = VLA_DRAW_WALL, it->kind = 2, it->radius = 2;
        it->pts[0][0] = wa.x, it->pts[0][1] = wa.y, it->pts[1][0] = wb.x, it->pts[1][1] = wb.y;
    }
}

static int pusht_state_size(void) { return (int)sizeof(vla_pusht_state); }

static void pusht_get_state(void *self, void *out) {
    pusht *p = self;
    vla_pusht_state *s = out;
    memset(s, 0, sizeof *s);
    s->agent_p[0] = p->agent->p.x, s->agent_p[1] = p->agent->p.y;
    s->agent_v[0] = p->agent->v.x, s->agent_v[1] = p->agent->v.y;
    s->block_p[0] = p->block->p.x, s->block_p[1] = p->block->p.y;
    s->block_v[0] = p->block->v.x, s->block_v[1] = p->block->v.y;
    s->block_a = p->block->a, s->block_w = p->block->w;
}

/* A fresh space holding exactly the given bodies' states, indexed at once as
 * a reset's settling step would index it. A copy taken right after reset
 * continues bit for bit (tested). Later copies hold the same body states but
 * not Chipmunk's warm-start caches or broadphase tree, which decide the order
 * contacts are solved in; pushing amplifies such differences, so a long
 * continuation through contacts drifts from the original. */
static void pusht_set_state(void *self, const void *in) {
    pusht *p = self;
    const vla_pusht_state *s = in;
    setup(p);
    p->agent->p = cpv(s->agent_p[0], s->agent_p[1]);
    cpBodySetAngle(p->agent, 0.0); /* recomputes the transform from p */
    cpBodySetVelocity(p->agent, cpv(s->agent_v[0], s->agent_v[1]));
    p->block->p = cpv(s->block_p[0], s->block_p[1]);
    cpBodySetAngle(p->block, s->block_a);
    cpBodySetVelocity(p->block, cpv(s->block_v[0], s->block_v[1]));
    cpBodySetAngularVelocity(p->block, s->block_w);
    cpSpaceReindexShapesForBody(p->space, p->agent);
    cpSpaceReindexShapesForBody(p->space, p->block);
    p->n_contacts = 0;
}

const vla_env_vtable vla_pusht_vtable = {
    .spec = &pusht_spec,
    .create = pusht_create,
    .destroy = pusht_destroy,
    .reset = pusht_reset,
    .step = pusht_step,
    .observe = pusht_observe,
    .draw = pusht_draw,
    .state_size = pusht_state_size,
    .get_state = pusht_get_state,
    .set_state = pusht_set_state,
};
