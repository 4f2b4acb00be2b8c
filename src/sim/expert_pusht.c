/* expert_pusht.c — a scripted PushT expert: contact-point pushing planned with
 * the simulator itself as the model.
 *
 * The expert repeats one cycle: choose a push, walk to it, push, back off.
 *  1. Choose. Candidate pushes are fixed in the block's frame: points along
 *     each of the T's eight outer edges pushed along the inward normal, and
 *     the six convex corners pushed in five directions inside their normal
 *     cones (a corner can push through the centre of gravity, an edge of a
 *     frictionless T only along its normal). For each, a copy of the true state with the agent placed at rest
 *     at the pre-contact point is stepped with the commanded point moving
 *     along the push direction; the cost after every step is the mean
 *     distance of the eight T vertices to the goal's (a success, coverage >
 *     0.95, beats everything). The candidate with the lowest cost plus a small
 *     charge per pixel of the path to its pre-contact point wins.
 *  2. Walk. A collision-free path to the pre-contact point goes through
 *     waypoints around the block's convex hull (shortest path on a small
 *     visibility graph); the commanded point moves along it at a bounded
 *     speed, slowing down at the end, so the actions are smooth, as a human's
 *     mouse would be.
 *  3. Push. On arrival the push is simulated again from a copy of the true
 *     current state (the bodies copied exactly into a fresh space; over a
 *     push of a few steps the prediction matches what happens closely) to
 *     pick how many steps to push; if no length improves, the cycle restarts.
 *  4. Back off from the block and choose again.
 * Greedy pushes can stall close to the goal, where every single push makes
 * the vertex distance worse (a frictionless push moves and turns the block
 * together); then the expert turns the block first (an angle cost), or else
 * moves it (a centre-of-gravity cost), and returns to the vertex distance
 * afterwards. Pushes are slower near the goal, where 2–3 px decide success.
 *
 * Measured (vla sim play --env pusht --policy expert --episodes N --seed S):
 * 100% success on seeds 0–99 (mean max coverage 0.959, 125 steps per
 * episode, ~3 s on one core for all 100), 98.6% on seeds 5000–5499, 99.0%
 * on seeds 100000–100499. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sim/env.h"

#define R_AGENT VLA_PUSHT_AGENT_RADIUS
#define GAP 4.0          /* pre-contact clearance between agent and block */
#define V_WALK 22.0      /* commanded-point speed while walking, px per step */
#define V_MAX 26.0       /* hard limit on the action's change per step */
#define A_MAX 12.0       /* limit on the change of that change while walking, px per step² */
#define K_PUSH 12        /* push lookahead, steps */
#define PATH_COST 0.03   /* cost units per px of walking */
#define MAX_CANDS 96
#define CORNER_DIRS 5     /* push directions per convex corner */
#define EDGE_SPACING 22.0 /* px between pushing points along an edge */
#define MAX_PATH 16

typedef struct {
    double c[2], d[2]; /* contact point and unit push direction, block frame */
} cand;

typedef enum { PLAN, WALK, PUSH } mode_t_;

typedef struct {
    vla_env *model;
    cand cands[MAX_CANDS];
    int n_cands;
    double hull_wp[8][2]; /* walking waypoints, block frame */
    int n_wp;
    double goal_kp[16];
    /* episode state */
    mode_t_ mode;
    double cmd[2], vel[2];
    bool has_cmd;
    double path[MAX_PATH][2];
    int n_path, path_i;
    double push_p0[2], push_d[2], push_s;
    int push_k, push_j, cur_cand, walk_steps;
    int banned[MAX_CANDS];
    int metric; /* 0: vertex distance; 1: mostly the angle (to leave a local minimum) */
} expert;

/* ---- block geometry ----------------------------------------------------------- */

/* The T's outline, counter-clockwise in the block frame (y down on screen). */
static const double outline[8][2] = {{-60, 0}, {60, 0}, {60, 30}, {15, 30}, {15, 120}, {-15, 120}, {-15, 30}, {-60, 30}};

static void to_world(const double pose[3], const double l[2], double w[2]) {
    double c = cos(pose[2]), s = sin(pose[2]);
    w[0] = pose[0] + c * l[0] - s * l[1];
    w[1] = pose[1] + s * l[0] + c * l[1];
}
static void dir_to_world(const double pose[3], const double l[2], double w[2]) {
    double c = cos(pose[2]), s = sin(pose[2]);
    w[0] = c * l[0] - s * l[1];
    w[1] = s * l[0] + c * l[1];
}
static void to_local(const double pose[3], const double w[2], double l[2]) {
    double c = cos(pose[2]), s = sin(pose[2]), dx = w[0] - pose[0], dy = w[1] - pose[1];
    l[0] = c * dx + s * dy;
    l[1] = -s * dx + c * dy;
}

static double rect_dist(const double q[2], double x0, double x1, double y0, double y1, double near[2]) {
    double cx = fmin(fmax(q[0], x0), x1), cy = fmin(fmax(q[1], y0), y1);
    near[0] = cx, near[1] = cy;
    return hypot(q[0] - cx, q[1] - cy);
}

/* Distance from a world point to the T (0 inside); `away` gets the unit
 * direction from the nearest T point to the point (world). */
static double t_dist(const double pose[3], const double w[2], double away[2]) {
    double q[2], n1[2], n2[2];
    to_local(pose, w, q);
    double d1 = rect_dist(q, -60, 60, 0, 30, n1), d2 = rect_dist(q, -15, 15, 30, 120, n2);
    double *n = d1 < d2 ? n1 : n2, d = fmin(d1, d2);
    if (away) {
        double l[2] = {q[0] - n[0], q[1] - n[1]};
        if (d < 1e-9) l[0] = q[0] - 0, l[1] = q[1] - 45; /* inside: away from the centre */
        double m = hypot(l[0], l[1]);
        l[0] /= m, l[1] /= m;
        dir_to_world(pose, l, away);
    }
    return d;
}

/* Whether the agent can move from a to b keeping `clearance` from the T.
 * Near a start that is already closer (the agent just pushed), it only has
 * to not get closer than it is. */
static bool segment_clear(const double pose[3], const double a[2], const double b[2], double clearance) {
    double len = hypot(b[0] - a[0], b[1] - a[1]);
    double da = t_dist(pose, a, NULL), near_clear = fmin(clearance, da - 1.0);
    int n = (int)(len / 3.0) + 1;
    for (int i = 0; i <= n; i++) {
        double t = (double)i / n, p[2] = {a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])};
        double need = t * len < 15.0 ? near_clear : clearance;
        if (t_dist(pose, p, NULL) < need) return false;
    }
    return true;
}

static void keypoint_goal(expert *e) {
    vla_pusht_keypoints_at(vla_pusht_goal_pose[0], vla_pusht_goal_pose[1], vla_pusht_goal_pose[2], e->goal_kp);
}

/* Mean distance of the eight T vertices to the goal's; under metric 1
 * mostly the angle error (100 px per radian). */
static double pose_cost(const expert *e, const double pose[3]) {
    double kp[16], s = 0;
    vla_pusht_keypoints_at(pose[0], pose[1], pose[2], kp);
    for (int i = 0; i < 8; i++) s += hypot(kp[2 * i] - e->goal_kp[2 * i], kp[2 * i + 1] - e->goal_kp[2 * i + 1]);
    if (e->metric == 1) return 100.0 * fabs(remainder(pose[2] - vla_pusht_goal_pose[2], 2 * M_PI)) + 0.05 * s / 8;
    if (e->metric == 2) {
        /* centre of gravity (mean of the 8 vertices, body (0, 52.5)): translation only */
        double cx = 0, cy = 0, gx = 0, gy = 0;
        for (int i = 0; i < 8; i++) cx += kp[2 * i], cy += kp[2 * i + 1], gx += e->goal_kp[2 * i], gy += e->goal_kp[2 * i + 1];
        return hypot(cx - gx, cy - gy) / 8 + 0.05 * s / 8;
    }
    return s / 8;
}

static void build_candidates(expert *e) {
    e->n_cands = 0;
    /* edges: inward normal pushes; keep the agent clear of concave corners */
    for (int i = 0; i < 8; i++) {
        const double *a = outline[i], *b = outline[(i + 1) % 8];
        double ex = b[0] - a[0], ey = b[1] - a[1], len = hypot(ex, ey);
        ex /= len, ey /= len;
        /* counter-clockwise in a y-down frame drawn as given: outward normal is (ey, -ex) */
        double nx = ey, ny = -ex;
        bool concave_a = (a[0] == 15 || a[0] == -15) && a[1] == 30, concave_b = (b[0] == 15 || b[0] == -15) && b[1] == 30;
        double m0 = concave_a ? R_AGENT + 2 : 5, m1 = concave_b ? R_AGENT + 2 : 5;
        double usable = len - m0 - m1;
        if (usable < 0) continue;
        int n = (int)floor(usable / EDGE_SPACING) + 1;
        for (int k = 0; k < n && e->n_cands < MAX_CANDS; k++) {
            double t = n == 1 ? m0 + usable / 2 : m0 + usable * k / (n - 1);
            cand *c = &e->cands[e->n_cands++];
            c->c[0] = a[0] + ex * t, c->c[1] = a[1] + ey * t;
            c->d[0] = -nx, c->d[1] = -ny;
        }
    }
    /* convex corners: three directions inside the normal cone */
    for (int i = 0; i < 8; i++) {
        const double *p = outline[i];
        if ((p[0] == 15 || p[0] == -15) && p[1] == 30) continue;
        const double *pa = outline[(i + 7) % 8], *pb = outline[(i + 1) % 8];
        double e1x = p[0] - pa[0], e1y = p[1] - pa[1], l1 = hypot(e1x, e1y);
        double e2x = pb[0] - p[0], e2y = pb[1] - p[1], l2 = hypot(e2x, e2y);
        double n1[2] = {e1y / l1, -e1x / l1}, n2[2] = {e2y / l2, -e2x / l2};
        double a1 = atan2(n1[1], n1[0]), a2 = atan2(n2[1], n2[0]), da = remainder(a2 - a1, 2 * M_PI);
        for (int k = 1; k <= CORNER_DIRS && e->n_cands < MAX_CANDS; k++) {
            double ang = a1 + da * k / (CORNER_DIRS + 1.0);
            cand *c = &e->cands[e->n_cands++];
            c->c[0] = p[0], c->c[1] = p[1];
            c->d[0] = -cos(ang), c->d[1] = -sin(ang);
        }
    }
    /* walking waypoints: the convex hull pushed out by the agent radius + margin */
    static const double hull[6][2] = {{-60, 0}, {60, 0}, {60, 30}, {15, 120}, {-15, 120}, {-60, 30}};
    e->n_wp = 0;
    for (int i = 0; i < 6; i++) {
        const double *p = hull[i], *pa = hull[(i + 5) % 6], *pb = hull[(i + 1) % 6];
        double e1x = p[0] - pa[0], e1y = p[1] - pa[1], l1 = hypot(e1x, e1y);
        double e2x = pb[0] - p[0], e2y = pb[1] - p[1], l2 = hypot(e2x, e2y);
        double bx = e1y / l1 + e2y / l2, by = -e1x / l1 - e2x / l2, bl = hypot(bx, by);
        double cos_half = bl / 2;
        double off = (R_AGENT + 9) / cos_half;
        e->hull_wp[e->n_wp][0] = p[0] + bx / bl * off;
        e->hull_wp[e->n_wp][1] = p[1] + by / bl * off;
        e->n_wp++;
    }
    /* notch mouths, to reach pre-contact points under the bar */
    e->hull_wp[e->n_wp][0] = 40, e->hull_wp[e->n_wp][1] = 52, e->n_wp++;
    e->hull_wp[e->n_wp][0] = -40, e->hull_wp[e->n_wp][1] = 52, e->n_wp++;
}

/* ---- walking ---------------------------------------------------------------------- */

/* Shortest path from a to b around the block (visibility graph over the
 * waypoints). Returns the length (DBL_MAX if none) and, if path is not NULL,
 * the points after a. */
static double plan_path(const expert *e, const double pose[3], const double a[2], const double b[2],
                        double path[MAX_PATH][2], int *n_path) {
    const double clear = R_AGENT + 1.5;
    enum { N = 12 };
    double pts[N][2];
    int n = 0;
    pts[n][0] = a[0], pts[n][1] = a[1], n++;
    pts[n][0] = b[0], pts[n][1] = b[1], n++;
    for (int i = 0; i < e->n_wp; i++) {
        to_world(pose, e->hull_wp[i], pts[n]);
        pts[n][0] = fmin(fmax(pts[n][0], 1), 511), pts[n][1] = fmin(fmax(pts[n][1], 1), 511);
        n++;
    }
    if (segment_clear(pose, a, b, clear)) {
        if (path) path[0][0] = b[0], path[0][1] = b[1], *n_path = 1;
        return hypot(b[0] - a[0], b[1] - a[1]);
    }
    double dist[N];
    int prev[N];
    bool done[N] = {false};
    for (int i = 0; i < n; i++) dist[i] = DBL_MAX, prev[i] = -1;
    dist[0] = 0;
    for (;;) {
        int u = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && dist[i] < DBL_MAX && (u < 0 || dist[i] < dist[u])) u = i;
        if (u < 0 || u == 1) break;
        done[u] = true;
        for (int v = 0; v < n; v++) {
            if (done[v] || v == u) continue;
            double w = hypot(pts[v][0] - pts[u][0], pts[v][1] - pts[u][1]);
            if (dist[u] + w >= dist[v]) continue;
            if (!segment_clear(pose, pts[u], pts[v], clear)) continue;
            dist[v] = dist[u] + w, prev[v] = u;
        }
    }
    if (dist[1] == DBL_MAX) return DBL_MAX;
    if (path) {
        int idx[N], m = 0;
        for (int v = 1; v != 0; v = prev[v]) idx[m++] = v;
        *n_path = 0;
        for (int i = m - 1; i >= 0; i--) {
            path[*n_path][0] = pts[idx[i]][0], path[*n_path][1] = pts[idx[i]][1];
            (*n_path)++;
        }
    }
    return dist[1];
}

/* ---- model rollouts ----------------------------------------------------------------- */

/* Push from `st` with the commanded point moving from p0 along d at s px per
 * step for up to K_PUSH steps; returns the best cost and its step count. */
static double simulate_push(expert *e, const vla_pusht_state *st, const double p0[2], const double d[2], double s,
                            int *best_k) {
    vla_env *m = e->model;
    vla_env_set_state(m, st);
    double best = DBL_MAX;
    *best_k = 0;
    for (int k = 1; k <= K_PUSH; k++) {
        double act[2] = {p0[0] + d[0] * s * k, p0[1] + d[1] * s * k}, reward;
        bool term;
        vla_env_info info;
        (void)m->vt->step(m->self, act, &reward, &term, &info); /* PushT steps never fail */
        double c = info.is_success ? -1000.0 + k : pose_cost(e, info.object_pose);
        if (c < best) best = c, *best_k = k;
        if (info.is_success || c > best + 25) break;
    }
    return best;
}

static void state_of(vla_env *env, vla_pusht_state *st) { vla_env_get_state(env, st); }

static double push_speed(double cost) { return fmin(fmax(0.25 * cost, 3.0), 12.0); }

/* Choose the next push and the path to it, under the current metric; sets
 * *gain to the predicted improvement. */
static bool choose_metric(expert *e, vla_env *env, double *gain) {
    vla_pusht_state st;
    state_of(env, &st);
    double pose[3];
    vla_pusht_block_pose(&st, pose);
    double cur = pose_cost(e, pose), s = push_speed(cur);
    double agent[2] = {st.agent_p[0], st.agent_p[1]};
    /* start walking from a point clear of the block */
    double start[2] = {agent[0], agent[1]}, away[2];
    double dd = t_dist(pose, agent, away);
    if (dd < R_AGENT + 6) {
        double back = R_AGENT + 8 - dd;
        start[0] += away[0] * back, start[1] += away[1] * back;
    }
    double best = DBL_MAX;
    int best_i = -1;
    for (int i = 0; i < e->n_cands; i++) {
        if (e->banned[i] > 0) continue;
        const cand *c = &e->cands[i];
        double cw[2], dw[2], p0[2];
        to_world(pose, c->c, cw);
        dir_to_world(pose, c->d, dw);
        p0[0] = cw[0] - dw[0] * (R_AGENT + GAP), p0[1] = cw[1] - dw[1] * (R_AGENT + GAP);
        if (p0[0] < 2 || p0[0] > 510 || p0[1] < 2 || p0[1] > 510) continue;
        if (t_dist(pose, p0, NULL) < R_AGENT + 1) continue;
        double walk = hypot(p0[0] - start[0], p0[1] - start[1]);
        vla_pusht_state ms = st;
        ms.agent_p[0] = p0[0], ms.agent_p[1] = p0[1], ms.agent_v[0] = ms.agent_v[1] = 0;
        int k;
        double cost = simulate_push(e, &ms, p0, dw, s, &k);
        if (cost + PATH_COST * walk >= best) continue; /* the straight line is a lower bound */
        double len = plan_path(e, pose, start, p0, NULL, NULL);
        if (len == DBL_MAX) continue;
        double total = cost + PATH_COST * len;
        if (total < best) best = total, best_i = i;
    }
    if (best_i < 0) return false;
    *gain = cur - best;
    VLA_DEBUG("pusht expert: t=%d metric %d cand %d predicted %.2f (now %.2f)", env->steps, e->metric, best_i, best, cur);
    const cand *c = &e->cands[best_i];
    double cw[2];
    to_world(pose, c->c, cw);
    dir_to_world(pose, c->d, e->push_d);
    e->push_p0[0] = cw[0] - e->push_d[0] * (R_AGENT + GAP), e->push_p0[1] = cw[1] - e->push_d[1] * (R_AGENT + GAP);
    e->push_s = s;
    e->cur_cand = best_i;
    e->n_path = 0;
    if (start[0] != agent[0] || start[1] != agent[1]) {
        e->path[0][0] = start[0], e->path[0][1] = start[1];
        e->n_path = 1;
    }
    int np = 0;
    plan_path(e, pose, start, e->push_p0, e->path + e->n_path, &np);
    e->n_path += np;
    e->path_i = 0;
    e->walk_steps = 0;
    return true;
}

/* Greedy pushes can stall where every single push makes the vertex distance
 * worse (typically: close, but turned); then turn first and translate later. */
static bool choose(expert *e, vla_env *env) {
    double gain;
    e->metric = 0;
    if (!choose_metric(e, env, &gain)) return false;
    if (gain > 0.5) return true;
    e->metric = 1;
    double gain1;
    if (choose_metric(e, env, &gain1) && gain1 > 1.0) return true;
    e->metric = 2;
    if (choose_metric(e, env, &gain1) && gain1 > 1.0) return true;
    e->metric = 0;
    return choose_metric(e, env, &gain);
}

/* ---- the policy ---------------------------------------------------------------------- */

static vla_status exp_create(const vla_env_spec *spec, void **self) {
    (void)spec;
    expert *e = calloc(1, sizeof *e);
    if (!e) return vla_error(VLA_ERR_NOMEM, "pusht expert: out of memory");
    vla_status st = vla_env_make("pusht", &e->model);
    if (st != VLA_OK) {
        free(e);
        return st;
    }
    build_candidates(e);
    keypoint_goal(e);
    *self = e;
    return VLA_OK;
}

static void exp_destroy(void *self) {
    expert *e = self;
    if (!e) return;
    vla_env_free(e->model);
    free(e);
}

static void exp_reset(void *self, vla_env *env, uint64_t seed) {
    expert *e = self;
    (void)seed;
    e->mode = PLAN;
    e->has_cmd = false;
    memset(e->banned, 0, sizeof e->banned);
    vla_pusht_state st;
    state_of(env, &st);
    e->cmd[0] = st.agent_p[0], e->cmd[1] = st.agent_p[1];
    /* Re-planned mid-episode (DAgger, sim/relabel.h) the agent may be moving:
     * the commanded point starts with the agent's velocity per control step,
     * so the turn limit (A_MAX) bends its path smoothly instead of stopping
     * it dead. At an episode's start the agent is at rest and this is 0. */
    double fps = vla_env_get_spec(env)->fps;
    e->vel[0] = st.agent_v[0] / fps, e->vel[1] = st.agent_v[1] / fps;
}

/* Move the commanded point toward `to` by at most v. Returns the distance left. */
static double move_cmd(expert *e, const double to[2], double v) {
    double dx = to[0] - e->cmd[0], dy = to[1] - e->cmd[1], d = hypot(dx, dy);
    if (d <= v) {
        e->cmd[0] = to[0], e->cmd[1] = to[1];
        return 0;
    }
    e->cmd[0] += dx / d * v, e->cmd[1] += dy / d * v;
    return d - v;
}

static vla_status exp_act(void *self, vla_env *env, double *action) {
    expert *e = self;
    double prev[2] = {e->cmd[0], e->cmd[1]};
    for (int guard = 0; guard < 4; guard++) {
        if (e->mode == PLAN) {
            for (int i = 0; i < e->n_cands; i++)
                if (e->banned[i] > 0) e->banned[i]--;
            if (!choose(e, env)) {
                memset(e->banned, 0, sizeof e->banned);
                if (!choose(e, env)) break; /* nothing reachable: hold still */
            }
            e->mode = WALK;
        }
        if (e->mode == WALK) {
            e->walk_steps++;
            /* slow down over the last stretch so the agent arrives without lag */
            double left = 0;
            for (int i = e->path_i; i < e->n_path; i++) {
                const double *a = i == e->path_i ? e->cmd : e->path[i - 1];
                left += hypot(e->path[i][0] - a[0], e->path[i][1] - a[1]);
            }
            double v = fmin(V_WALK, fmax(3.0, left * 0.45));
            while (v > 0 && e->path_i < e->n_path) {
                double before = hypot(e->path[e->path_i][0] - e->cmd[0], e->path[e->path_i][1] - e->cmd[1]);
                move_cmd(e, e->path[e->path_i], v);
                if (e->cmd[0] == e->path[e->path_i][0] && e->cmd[1] == e->path[e->path_i][1]) {
                    v -= before;
                    e->path_i++;
                } else {
                    v = 0;
                }
            }
            if (e->path_i < e->n_path && e->walk_steps < 60) break;
            vla_pusht_state st;
            state_of(env, &st);
            double lag = hypot(st.agent_p[0] - e->push_p0[0], st.agent_p[1] - e->push_p0[1]);
            if (lag > 3.0 && e->walk_steps < 60) break; /* let the agent catch up */
            /* arrived: decide the push length from the exact state */
            int k;
            double pose[3];
            vla_pusht_block_pose(&st, pose);
            double cur = pose_cost(e, pose);
            double c = simulate_push(e, &st, e->push_p0, e->push_d, e->push_s, &k);
            if (k == 0 || c > cur - 0.5) {
                VLA_DEBUG("pusht expert: t=%d cand %d rejected on arrival (now %.2f, best push %.2f)", env->steps,
                          e->cur_cand, cur, c);
                e->banned[e->cur_cand] = 3;
                e->mode = PLAN;
                continue;
            }
            VLA_DEBUG("pusht expert: t=%d push cand %d for %d steps at %.1f px/step: %.2f -> %.2f", env->steps,
                      e->cur_cand, k, e->push_s, cur, c);
            e->push_k = k, e->push_j = 0;
            e->mode = PUSH;
        }
        if (e->mode == PUSH) {
            e->push_j++;
            e->cmd[0] = e->push_p0[0] + e->push_d[0] * e->push_s * e->push_j;
            e->cmd[1] = e->push_p0[1] + e->push_d[1] * e->push_s * e->push_j;
            if (e->push_j >= e->push_k) e->mode = PLAN;
            break;
        }
    }
    /* hard limits on how fast the commanded point may move and, while
     * walking, turn: no jumps, no jerks */
    double dx = e->cmd[0] - prev[0], dy = e->cmd[1] - prev[1];
    if (e->mode == WALK) {
        double ax = dx - e->vel[0], ay = dy - e->vel[1], a = hypot(ax, ay);
        if (a > A_MAX) dx = e->vel[0] + ax / a * A_MAX, dy = e->vel[1] + ay / a * A_MAX;
    }
    double d = hypot(dx, dy);
    if (d > V_MAX) dx *= V_MAX / d, dy *= V_MAX / d;
    e->cmd[0] = prev[0] + dx, e->cmd[1] = prev[1] + dy;
    e->vel[0] = dx, e->vel[1] = dy;
    action[0] = fmin(fmax(e->cmd[0], 0), 512);
    action[1] = fmin(fmax(e->cmd[1], 0), 512);
    return VLA_OK;
}

const vla_sim_policy_vtable vla_expert_pusht_vtable = {"expert", "pusht", exp_create, exp_destroy, exp_reset,
                                                       exp_act};
