/* expert_aloha.c — the scripted expert of ALOHA TransferCube ("expert" for
 * env "aloha"): end-effector waypoints turned into joint targets by inverse
 * kinematics (not mocap), recomputed from the true state at every step.
 *
 * WHY A STATE-FEEDBACK EXPERT. ACT's scripted policy plays a trajectory
 * timed from the episode start. Ours decides every action from the state
 * alone (arm joints, gripper openings, the cube's pose, which geoms touch),
 * with no clock and no memory: DAgger can start it from any state a policy
 * reaches (sim/relabel.h), and a policy that sees the same state can learn
 * the same function. Each step:
 *
 *  right arm  not holding the cube: go above it (grip point 8 cm over the
 *             cube's centre, gripper pointing down, fingers across two faces:
 *             the gripper turns with the cube's yaw), open; once within 1 cm
 *             horizontally, descend to the centre; within 6 mm, close.
 *             Holding it (both fingers touch the cube and the fingers are
 *             closed past 38 mm): carry it to the meeting point M.
 *  left arm   wait at P = M − 12 cm along x, pointing at M (+x) with the
 *             fingers above and below, open; once the right arm holds the
 *             cube within 2 cm of M, move the grip point onto the cube's
 *             centre; within 1 cm, close: its upper finger touches the
 *             cube's top face while the cube is in the air — reward 4.
 *
 * A waypoint becomes a target pose at most 15 mm and 0.15 rad away from the
 * gripper's present pose (so motions stay smooth and a far goal does not
 * ask for a jump), and that pose becomes the arm's 6 joint targets by
 * damped least squares on the site Jacobian (mj_jacSite), started from the
 * present joint positions, on a scratch copy of the state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/aloha.h"
#include "sim/env.h"
#include "sim/mj_render.h"

#define STEP_POS 0.015   /* m per control step toward a waypoint */
#define STEP_ROT 0.15    /* rad per control step */
#define ABOVE 0.08       /* approach height over the cube's centre */
#define ALIGN_XY 0.010   /* start descending */
#define GRASP_Z 0.006    /* start closing */
#define HOLD_FINGER 0.038 /* finger joint closed past this on the cube: holding (open 0.057, on the cube ≈0.032) */
#define MEET_TOL 0.02
#define LEFT_CLOSE 0.010
#define IK_ITERS 30
#define IK_DAMP 0.02

static const double meet[3] = {0.05, 0.5, 0.22};
static const double pre_meet_dx = -0.12;

typedef struct {
    mjData *s;        /* scratch state for IK */
    const mjModel *m; /* the model s was made for */
} expert;

static vla_status ex_create(const vla_env_spec *spec, void **self) {
    (void)spec;
    expert *e = calloc(1, sizeof *e);
    if (!e) return vla_error(VLA_ERR_NOMEM, "aloha expert: out of memory");
    *self = e;
    return VLA_OK;
}

static void ex_destroy(void *self) {
    expert *e = self;
    if (!e) return;
    if (e->s) mj_deleteData(e->s);
    free(e);
}

static void ex_reset(void *self, vla_env *env, uint64_t seed) { (void)self, (void)env, (void)seed; }

/* c = a × b */
static void cross(const double a[3], const double b[3], double c[3]) {
    c[0] = a[1] * b[2] - a[2] * b[1], c[1] = a[2] * b[0] - a[0] * b[2], c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Rotation matrix (row-major, as MuJoCo's xmat) whose columns are x, y, x × y. */
static void frame(const double x[3], const double y[3], double mat[9]) {
    double z[3];
    cross(x, y, z);
    for (int r = 0; r < 3; r++) mat[3 * r] = x[r], mat[3 * r + 1] = y[r], mat[3 * r + 2] = z[r];
}

/* The cube's yaw about the world z axis, folded to the face direction nearest
 * `prefer` (a cube looks the same every 90°): from the cube's axis that is
 * most horizontal-free, i.e. of the two axes nearest the horizontal plane. */
static double cube_face_angle(const double quat[4], double prefer) {
    double mat[9];
    mju_quat2Mat(mat, quat);
    int up = 0;
    for (int c = 1; c < 3; c++)
        if (fabs(mat[6 + c]) > fabs(mat[6 + up])) up = c;
    int h = (up + 1) % 3;
    double a = atan2(mat[3 + h], mat[h]);
    double best = a, bd = 1e9;
    for (int k = -4; k <= 4; k++) {
        double c = a + k * M_PI / 2, dd = fabs(remainder(c - prefer, 2 * M_PI));
        if (dd < bd) bd = dd, best = c;
    }
    return best;
}

/* A target pose at most STEP_POS / STEP_ROT from the present one toward the goal. */
static void limit_pose(const double cur_p[3], const double cur_m[9], const double goal_p[3], const double goal_m[9],
                       double out_p[3], double out_m[9]) {
    double d[3], n = 0;
    for (int k = 0; k < 3; k++) d[k] = goal_p[k] - cur_p[k], n += d[k] * d[k];
    n = sqrt(n);
    double f = n > STEP_POS ? STEP_POS / n : 1.0;
    for (int k = 0; k < 3; k++) out_p[k] = cur_p[k] + f * d[k];
    double qc[4], qg[4], qi[4], qe[4], v[3];
    mju_mat2Quat(qc, cur_m);
    mju_mat2Quat(qg, goal_m);
    mju_negQuat(qi, qc);
    mju_mulQuat(qe, qg, qi); /* the rotation from present to goal, in the world frame */
    mju_quat2Vel(v, qe, 1.0);
    double ang = mju_norm3(v);
    if (ang <= STEP_ROT) {
        memcpy(out_m, goal_m, 9 * sizeof(double));
        return;
    }
    double axis[3] = {v[0] / ang, v[1] / ang, v[2] / ang}, qs[4], qo[4];
    mju_axisAngle2Quat(qs, axis, STEP_ROT);
    mju_mulQuat(qo, qs, qc);
    mju_quat2Mat(out_m, qo);
}

/* Solve a small symmetric positive definite system in place (Gaussian elimination). */
static void solve6(double A[36], double b[6]) {
    for (int i = 0; i < 6; i++) {
        double p = A[i * 6 + i];
        for (int j = i + 1; j < 6; j++) {
            double f = A[j * 6 + i] / p;
            for (int k = i; k < 6; k++) A[j * 6 + k] -= f * A[i * 6 + k];
            b[j] -= f * b[i];
        }
    }
    for (int i = 5; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < 6; k++) s -= A[i * 6 + k] * b[k];
        b[i] = s / A[i * 6 + i];
    }
}

/* Joint targets q[6] of arm `arm` that put its grip site at (p, mat), by
 * damped least squares from the scratch state's present joints. */
static void ik(expert *e, const vla_aloha_ids *id, int arm, const double p[3], const double mat[9], double q[6]) {
    const mjModel *m = e->m;
    mjData *s = e->s;
    int site = id->site_grip[arm];
    double jacp[3 * 64], jacr[3 * 64];
    for (int it = 0; it < IK_ITERS; it++) {
        mj_kinematics(m, s);
        mj_comPos(m, s);
        const double *sp = s->site_xpos + 3 * site, *sm = s->site_xmat + 9 * site;
        double err[6];
        for (int k = 0; k < 3; k++) err[k] = p[k] - sp[k];
        /* orientation error: ½ Σ (present column × target column) */
        err[3] = err[4] = err[5] = 0;
        for (int c = 0; c < 3; c++) {
            double a[3] = {sm[c], sm[3 + c], sm[6 + c]}, b[3] = {mat[c], mat[3 + c], mat[6 + c]}, x[3];
            cross(a, b, x);
            for (int k = 0; k < 3; k++) err[3 + k] += 0.5 * x[k];
        }
        double en = 0;
        for (int k = 0; k < 6; k++) en += err[k] * err[k];
        if (en < 1e-12) break;
        mj_jacSite(m, s, jacp, jacr, site);
        double J[36], A[36], y[6];
        for (int r = 0; r < 6; r++)
            for (int j = 0; j < 6; j++) {
                int dof = id->dof_arm[arm][j];
                J[r * 6 + j] = r < 3 ? jacp[r * m->nv + dof] : jacr[(r - 3) * m->nv + dof];
            }
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) {
                double acc = r == c ? IK_DAMP * IK_DAMP : 0;
                for (int j = 0; j < 6; j++) acc += J[r * 6 + j] * J[c * 6 + j];
                A[r * 6 + c] = acc;
            }
        memcpy(y, err, sizeof y);
        solve6(A, y);
        for (int j = 0; j < 6; j++) {
            double dq = 0;
            for (int r = 0; r < 6; r++) dq += J[r * 6 + j] * y[r];
            int jid = id->jnt_arm[arm][j], adr = id->qpos_arm[arm][j];
            double v = s->qpos[adr] + dq;
            if (m->jnt_limited[jid]) v = fmin(fmax(v, m->jnt_range[2 * jid]), m->jnt_range[2 * jid + 1]);
            s->qpos[adr] = v;
        }
    }
    for (int j = 0; j < 6; j++) q[j] = s->qpos[id->qpos_arm[arm][j]];
}

/* Move arm `arm` toward (goal_p, goal_m): its 6 joint targets into a[0..5]. */
static void servo(expert *e, const vla_aloha *al, int arm, const double goal_p[3], const double goal_m[9], double *a) {
    const vla_aloha_ids *id = &al->model->id;
    const mjData *d = al->d;
    int site = id->site_grip[arm];
    double tp[3], tm[9];
    limit_pose(d->site_xpos + 3 * site, d->site_xmat + 9 * site, goal_p, goal_m, tp, tm);
    ik(e, id, arm, tp, tm, a);
}

static double dist3(const double *a, const double *b) {
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

static vla_status ex_act(void *self, vla_env *env, double *action) {
    expert *e = self;
    if (strcmp(vla_env_get_spec(env)->name, "aloha"))
        return vla_error(VLA_ERR_INVALID_ARG, "aloha expert: env is '%s'", vla_env_get_spec(env)->name);
    const vla_aloha *al = env->self;
    const mjModel *m = al->model->m;
    const vla_aloha_ids *id = &al->model->id;
    const mjData *d = al->d;
    if (e->m != m) {
        if (e->s) mj_deleteData(e->s);
        e->s = NULL;
        volatile vla_status st = VLA_OK;
        VLA_MJ_TRY(st, "aloha expert", e->s = mj_makeData(m));
        if (st != VLA_OK) return st;
        if (!e->s) return vla_error(VLA_ERR_NOMEM, "aloha expert: out of memory");
        e->m = m;
    }
    memcpy(e->s->qpos, d->qpos, sizeof(double) * (size_t)m->nq);

    const double *cube = d->qpos + id->qpos_box, *R = d->site_xpos + 3 * id->site_grip[1],
                 *L = d->site_xpos + 3 * id->site_grip[0];
    double *la = action, *ra = action + 7;

    /* right arm */
    bool holding = vla_aloha_touching(al, id->geom_box, id->geom_finger[1][0]) &&
                   vla_aloha_touching(al, id->geom_box, id->geom_finger[1][1]) &&
                   d->qpos[id->qpos_arm[1][6]] < HOLD_FINGER;
    double yaw = cube_face_angle(cube + 3, -M_PI / 2);
    double down[3] = {0, 0, -1}, fy[3] = {cos(yaw), sin(yaw), 0}, rm[9], goal[3];
    frame(down, fy, rm);
    if (holding) {
        memcpy(goal, meet, sizeof goal);
        ra[6] = 0;
    } else {
        double dxy = hypot(R[0] - cube[0], R[1] - cube[1]);
        memcpy(goal, cube, sizeof goal);
        ra[6] = 1;
        if (dxy > ALIGN_XY) {
            goal[2] = cube[2] + ABOVE;
            /* low and off to the side (a missed grasp, a knocked cube): rise before moving across */
            if (R[2] < cube[2] + 0.5 * ABOVE && dxy > 2 * ALIGN_XY) goal[0] = R[0], goal[1] = R[1];
        } else if (fabs(R[2] - cube[2]) < GRASP_Z ||
                   (fabs(R[2] - cube[2]) < 2 * GRASP_Z && d->qpos[id->qpos_arm[1][6]] < 0.05)) {
            ra[6] = 0; /* close; once the fingers are on their way, keep closing (no chatter at the threshold) */
        }
    }
    servo(e, al, 1, goal, rm, ra);

    /* left arm */
    double fwd[3] = {1, 0, 0}, up[3] = {0, 0, 1}, lm[9], lgoal[3];
    frame(fwd, up, lm);
    la[6] = 1;
    if (holding && dist3(cube, meet) < MEET_TOL) {
        memcpy(lgoal, cube, sizeof lgoal);
        if (dist3(L, cube) < LEFT_CLOSE) la[6] = 0;
    } else {
        memcpy(lgoal, meet, sizeof lgoal);
        lgoal[0] += pre_meet_dx;
    }
    memcpy(e->s->qpos, d->qpos, sizeof(double) * (size_t)m->nq);
    servo(e, al, 0, lgoal, lm, la);
    return VLA_OK;
}

const vla_sim_policy_vtable vla_expert_aloha_vtable = {"expert", "aloha", ex_create, ex_destroy, ex_reset, ex_act};
