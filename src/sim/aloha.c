/* aloha.c — "aloha": ALOHA TransferCube (gym_aloha/AlohaTransferCube-v0) on
 * MuJoCo's C API. Two 6-DoF arms with parallel grippers (our own MJCF,
 * aloha_model.c), a table and a 4 cm cube placed at random; joint-position
 * control at 50 Hz (10 physics steps of 2 ms per action), 400 steps per
 * episode. What follows gym-aloha (huggingface/gym-aloha, gym_aloha/env.py,
 * tasks/sim.py, utils.py, constants.py):
 *
 *  - action (14): per arm (left, then right) 6 absolute joint targets and
 *    one gripper value normalised as ALOHA does (0 closed, 1 open:
 *    finger = close + g·(open − close), the two fingers at ±finger);
 *  - observation.state (14): the joint positions in the same order, the
 *    gripper as the left finger's position normalised the same way;
 *  - observation.environment_state (7, privileged): the cube's free joint,
 *    x y z qw qx qy qz (gym-aloha's env_state = qpos[16:]);
 *  - reset(seed): numpy RandomState(seed).uniform over x ∈ [0, 0.2],
 *    y ∈ [0.4, 0.6], z = 0.05 for the cube (sample_box_pose), identity
 *    orientation, arms at START_ARM_POSE; seeds must fit 32 bits;
 *  - reward (after each step): 1 the right gripper's finger touches the
 *    cube, 2 … and the cube does not touch the table, 3 the left gripper's
 *    finger touches it, 4 … and the cube does not touch the table;
 *    terminated = success = (reward == 4), as gym-aloha's step();
 *  - positions and contacts are those of the state after the step (dm_control's
 *    legacy step: mj_step2, mj_step × 9, mj_step1), so the reward, the
 *    observation and a rendered frame all describe the same state.
 *
 * Same seed and same actions → the same episode, byte for byte: MuJoCo
 * runs single-threaded and deterministically, and the full state (time,
 * qpos, qvel, ctrl, the solver's warm start) is what get/set_state copy. */
#include "sim/aloha.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "sim/env.h"
#include "sim/mj_render.h"
#include "sim/np_random.h"

extern const char vla_aloha_transfer_cube_xml[];

#define SUBSTEPS 10
/* How far a servo's target moves per 50 Hz step toward the commanded one: the
 * ViperX's servos run a velocity profile (≤ 5 rad/s at the joints, 0.25 m/s at
 * the fingers here). Without it a target may jump a radian in 20 ms, the
 * kp-1600 servos swing the arms through the cube at metres per second, and a
 * random policy passed gym-aloha's success test in 3–7% of episodes by
 * knocking the cube into the air as a left finger struck it. */
#define MAX_JOINT_STEP 0.1
#define MAX_FINGER_STEP 0.005
#define NQ 23
#define NV 22
#define NU 16

const double vla_aloha_start_pose[16] = {0, -0.96, 1.16, 0, -0.3, 0, 0.02239, -0.02239,
                                         0, -0.96, 1.16, 0, -0.3, 0, 0.02239, -0.02239};

static const char *const motor_names[14] = {
    "left_waist",  "left_shoulder",  "left_elbow",  "left_forearm_roll",  "left_wrist_angle",  "left_wrist_rotate",
    "left_gripper", "right_waist", "right_shoulder", "right_elbow", "right_forearm_roll", "right_wrist_angle",
    "right_wrist_rotate", "right_gripper"};
static const char *const tasks[] = {"transfer_cube", NULL};

static const vla_env_spec aloha_spec = {
    .name = "aloha",
    .gym_id = "gym_aloha/AlohaTransferCube-v0",
    /* the task string of LeRobot's aloha_sim_transfer_cube_* datasets */
    .task = "Pick up the cube with the right arm and transfer it to the left arm.",
    .action_dim = 14,
    /* gym-aloha's action_space, Box(-1, 1): what the random baseline samples (the actuators clip to the joint ranges) */
    .action_low = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
    .action_high = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    .state_dim = 21,
    .env_state_dim = 7,
    .agent_pos_dim = 14,
    .max_episode_steps = 400,
    .fps = 50,
    .world_size = 0,
    .n_cameras = 4,
    .camera_names = {"top", "angle", "left_wrist", "right_wrist"},
    .image_keys = {"observation.images.top", "observation.images.angle", "observation.images.left_wrist",
                   "observation.images.right_wrist"},
    .default_height = 480,
    .default_width = 640,
    .robot_type = "aloha",
    .state_names = motor_names,
    .action_names = motor_names,
    .tasks = tasks,
};

double vla_aloha_gripper_normalize(double q) {
    return (q - VLA_ALOHA_GRIPPER_CLOSE) / (VLA_ALOHA_GRIPPER_OPEN - VLA_ALOHA_GRIPPER_CLOSE);
}
double vla_aloha_gripper_unnormalize(double g) {
    return g * (VLA_ALOHA_GRIPPER_OPEN - VLA_ALOHA_GRIPPER_CLOSE) + VLA_ALOHA_GRIPPER_CLOSE;
}

/* ---- the model: built in or from a file, loaded once, shared ---------------------- */

static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static vla_aloha_model *current; /* what new envs use (NULL: the built-in, loaded on first use) */
static uint64_t next_gen = 1;

static vla_status find_id(const mjModel *m, int type, const char *name, const char *what, const char *src, int *id) {
    *id = mj_name2id(m, type, name);
    if (*id < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: the aloha env needs a %s named '%s'", src, what, name);
    return VLA_OK;
}

/* Look up every name the env uses; a user's model must keep them. */
static vla_status resolve_ids(const mjModel *m, const char *src, vla_aloha_ids *id) {
    static const char *joints[8] = {"waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate",
                                    "left_finger", "right_finger"};
    static const char *cams[4] = {"top", "angle", "left_wrist", "right_wrist"};
    if (m->nq != NQ || m->nv != NV || m->nu != NU || m->na != 0)
        return vla_error(VLA_ERR_FORMAT,
                         "%s: the aloha env needs 16 arm joints, the cube's free joint and 16 position actuators "
                         "(nq %d, nv %d, nu %d; this model has nq %d, nv %d, nu %d, na %d)",
                         src, NQ, NV, NU, m->nq, m->nv, m->nu, m->na);
    char name[128];
    for (int a = 0; a < 2; a++) {
        const char *side = a ? "right" : "left";
        for (int j = 0; j < 8; j++) {
            int jid, aid;
            snprintf(name, sizeof name, "vx300s_%s/%s", side, joints[j]);
            VLA_TRY(find_id(m, mjOBJ_JOINT, name, "joint", src, &jid));
            VLA_TRY(find_id(m, mjOBJ_ACTUATOR, name, "position actuator", src, &aid));
            if (m->actuator_trntype[aid] != mjTRN_JOINT || m->actuator_trnid[2 * aid] != jid)
                return vla_error(VLA_ERR_FORMAT, "%s: actuator '%s' must drive joint '%s'", src, name, name);
            id->qpos_arm[a][j] = m->jnt_qposadr[jid];
            id->act[a][j] = aid;
            if (j < 6) id->dof_arm[a][j] = m->jnt_dofadr[jid], id->jnt_arm[a][j] = jid;
        }
        snprintf(name, sizeof name, "vx300s_%s/10_left_gripper_finger", side);
        VLA_TRY(find_id(m, mjOBJ_GEOM, name, "geom", src, &id->geom_finger[a][0]));
        snprintf(name, sizeof name, "vx300s_%s/10_right_gripper_finger", side);
        VLA_TRY(find_id(m, mjOBJ_GEOM, name, "geom", src, &id->geom_finger[a][1]));
        snprintf(name, sizeof name, "vx300s_%s/grip", side);
        VLA_TRY(find_id(m, mjOBJ_SITE, name, "site", src, &id->site_grip[a]));
    }
    int jbox;
    VLA_TRY(find_id(m, mjOBJ_JOINT, "red_box_joint", "free joint", src, &jbox));
    if (m->jnt_type[jbox] != mjJNT_FREE) return vla_error(VLA_ERR_FORMAT, "%s: joint 'red_box_joint' must be free", src);
    id->qpos_box = m->jnt_qposadr[jbox];
    VLA_TRY(find_id(m, mjOBJ_GEOM, "red_box", "geom", src, &id->geom_box));
    VLA_TRY(find_id(m, mjOBJ_GEOM, "table", "geom", src, &id->geom_table));
    for (int c = 0; c < 4; c++) VLA_TRY(find_id(m, mjOBJ_CAMERA, cams[c], "camera", src, &id->cam[c]));
    return VLA_OK;
}

static vla_status model_load(const char *path, vla_aloha_model **out) {
    mjModel *m;
    VLA_TRY(vla_mj_load(path, vla_aloha_transfer_cube_xml, "aloha_transfer_cube.xml", &m));
    vla_aloha_model *am = calloc(1, sizeof *am);
    vla_status st = am ? resolve_ids(m, path ? path : "aloha_transfer_cube.xml (built in)", &am->id)
                       : vla_error(VLA_ERR_NOMEM, "aloha: out of memory");
    if (st != VLA_OK) {
        free(am);
        mj_deleteModel(m);
        return st;
    }
    am->m = m;
    *out = am;
    return VLA_OK;
}

static void model_unref_locked(vla_aloha_model *am) {
    if (am && --am->refs == 0) {
        mj_deleteModel(am->m);
        free(am);
    }
}

/* A reference to the model new envs use, loading the built-in one first. */
static vla_status model_acquire(vla_aloha_model **out) {
    pthread_mutex_lock(&model_lock);
    volatile vla_status st = VLA_OK;
    if (!current && (st = model_load(NULL, &current)) == VLA_OK) current->refs = 1, current->gen = next_gen++;
    if (st == VLA_OK) current->refs++, *out = current;
    pthread_mutex_unlock(&model_lock);
    return st;
}

static vla_status aloha_set_model_file(const char *path) {
    vla_aloha_model *am = NULL;
    if (path) VLA_TRY(model_load(path, &am));
    pthread_mutex_lock(&model_lock);
    if (am) am->refs = 1, am->gen = next_gen++;
    model_unref_locked(current); /* envs made from it keep their own references */
    current = am;
    pthread_mutex_unlock(&model_lock);
    return VLA_OK;
}

/* ---- the env ---------------------------------------------------------------------------- */

static vla_status aloha_create(void **self) {
    vla_mj_init();
    vla_aloha *a = calloc(1, sizeof *a);
    if (!a) return vla_error(VLA_ERR_NOMEM, "aloha: out of memory");
    volatile vla_status st = model_acquire(&a->model);
    if (st == VLA_OK) VLA_MJ_TRY(st, "aloha", a->d = mj_makeData(a->model->m));
    if (st == VLA_OK && !a->d) st = vla_error(VLA_ERR_NOMEM, "aloha: MuJoCo could not allocate its data");
    if (st != VLA_OK) {
        if (a->model) {
            pthread_mutex_lock(&model_lock);
            model_unref_locked(a->model);
            pthread_mutex_unlock(&model_lock);
        }
        free(a);
        return st;
    }
    *self = a;
    return VLA_OK;
}

static void aloha_destroy(void *self) {
    vla_aloha *a = self;
    if (!a) return;
    mj_deleteData(a->d);
    pthread_mutex_lock(&model_lock);
    model_unref_locked(a->model);
    pthread_mutex_unlock(&model_lock);
    free(a);
}

bool vla_aloha_touching(const vla_aloha *a, int g1, int g2) {
    const mjData *d = a->d;
    for (int i = 0; i < d->ncon; i++) {
        int x = d->contact[i].geom1, y = d->contact[i].geom2;
        if ((x == g1 && y == g2) || (x == g2 && y == g1)) return true;
    }
    return false;
}

int vla_aloha_reward(const vla_aloha *a) {
    const vla_aloha_ids *id = &a->model->id;
    /* gym-aloha looks at one finger per gripper: the right arm's right finger, the left arm's left finger */
    bool touch_left = vla_aloha_touching(a, id->geom_box, id->geom_finger[0][0]);
    bool touch_right = vla_aloha_touching(a, id->geom_box, id->geom_finger[1][1]);
    bool touch_table = vla_aloha_touching(a, id->geom_box, id->geom_table);
    int r = 0;
    if (touch_right) r = 1;
    if (touch_right && !touch_table) r = 2; /* lifted */
    if (touch_left) r = 3;                  /* attempted transfer */
    if (touch_left && !touch_table) r = 4;  /* successful transfer */
    return r;
}

static void fill_info(vla_aloha *a, int reward, vla_env_info *info) {
    memset(info, 0, sizeof *info);
    const mjData *d = a->d;
    const vla_aloha_ids *id = &a->model->id;
    info->coverage = reward / 4.0; /* task progress in [0, 1]: the reward stage reached */
    info->is_success = reward == 4;
    for (int k = 0; k < 3; k++) info->object_pose[k] = d->qpos[id->qpos_box + k];
    const double *g = d->site_xpos + 3 * id->site_grip[1];
    info->agent_pos[0] = g[0], info->agent_pos[1] = g[1];
}

/* gym-aloha's sample_box_pose(seed): RandomState(seed).uniform(low, high) over
 * the three ranges at once, which draws x, y, z in order as low + (high − low)·u. */
static void box_pose(uint32_t seed, double pose[7]) {
    static const double lo[3] = {0.0, 0.4, 0.05}, hi[3] = {0.2, 0.6, 0.05};
    vla_np_random rs;
    vla_np_random_seed(&rs, seed);
    for (int k = 0; k < 3; k++) pose[k] = lo[k] + (hi[k] - lo[k]) * vla_np_random_double(&rs);
    pose[3] = 1, pose[4] = pose[5] = pose[6] = 0;
}

static vla_status aloha_reset(void *self, uint64_t seed, vla_env_info *info) {
    vla_aloha *a = self;
    if (seed > 0xffffffffu)
        return vla_error(VLA_ERR_INVALID_ARG, "aloha: seed %llu does not fit in 32 bits (numpy RandomState)",
                         (unsigned long long)seed);
    const mjModel *m = a->model->m;
    const vla_aloha_ids *id = &a->model->id;
    mjData *d = a->d;
    volatile vla_status st = VLA_OK;
    VLA_MJ_TRY(st, "aloha: reset", {
        mj_resetData(m, d);
        for (int arm = 0; arm < 2; arm++)
            for (int j = 0; j < 8; j++) {
                d->qpos[id->qpos_arm[arm][j]] = vla_aloha_start_pose[arm * 8 + j];
                d->ctrl[id->act[arm][j]] = vla_aloha_start_pose[arm * 8 + j];
            }
        box_pose((uint32_t)seed, d->qpos + id->qpos_box);
        mj_forward(m, d);
    });
    if (st != VLA_OK) return st;
    a->warned_unstable = d->warning[mjWARN_BADQACC].number;
    fill_info(a, 0, info);
    return VLA_OK;
}

static vla_status aloha_step(void *self, const double *action, double *reward, bool *terminated,
                             vla_env_info *info) {
    vla_aloha *a = self;
    const mjModel *m = a->model->m;
    const vla_aloha_ids *id = &a->model->id;
    mjData *d = a->d;
    for (int arm = 0; arm < 2; arm++) {
        const double *u = action + 7 * arm;
        double f = vla_aloha_gripper_unnormalize(u[6]);
        for (int j = 0; j < 8; j++) {
            int k = id->act[arm][j];
            double want = j < 6 ? u[j] : j == 6 ? f : -f;
            want = fmin(fmax(want, m->actuator_ctrlrange[2 * k]), m->actuator_ctrlrange[2 * k + 1]);
            double lim = j < 6 ? MAX_JOINT_STEP : MAX_FINGER_STEP, dv = want - d->ctrl[k];
            d->ctrl[k] += fmin(fmax(dv, -lim), lim);
        }
    }
    volatile vla_status st = VLA_OK;
    double t0 = vla_now_s();
    VLA_MJ_TRY(st, "aloha: step", {
        mj_step2(m, d);
        for (int k = 1; k < SUBSTEPS; k++) mj_step(m, d);
        mj_step1(m, d);
    });
    a->step_s += vla_now_s() - t0;
    if (st != VLA_OK) return st;
    /* MuJoCo resets the whole simulation when an acceleration is not finite; an episode cannot go on from that */
    if (d->warning[mjWARN_BADQACC].number != a->warned_unstable)
        return vla_error(VLA_ERR_NUMERIC, "aloha: the simulation became unstable (MuJoCo: bad acceleration at dof %d) "
                         "after the action given", d->warning[mjWARN_BADQACC].lastinfo);
    int r = vla_aloha_reward(a);
    *reward = r;
    *terminated = r == 4;
    fill_info(a, r, info);
    return VLA_OK;
}

static void aloha_observe(void *self, vla_env_obs *obs) {
    vla_aloha *a = self;
    const vla_aloha_ids *id = &a->model->id;
    const double *q = a->d->qpos;
    obs->agent_pos_dim = 14;
    for (int arm = 0; arm < 2; arm++) {
        for (int j = 0; j < 6; j++) obs->agent_pos[7 * arm + j] = q[id->qpos_arm[arm][j]];
        obs->agent_pos[7 * arm + 6] = vla_aloha_gripper_normalize(q[id->qpos_arm[arm][6]]);
    }
    obs->env_state_dim = 7;
    for (int k = 0; k < 7; k++) obs->env_state[k] = q[id->qpos_box + k];
    obs->state_dim = 21;
    memcpy(obs->state, obs->agent_pos, 14 * sizeof(double));
    memcpy(obs->state + 14, obs->env_state, 7 * sizeof(double));
}

static void aloha_draw(void *self, vla_draw_scene *scene) { (void)self, (void)scene; } /* renders itself */

static vla_status aloha_render(void *self, int camera, int width, int height, uint8_t *rgb, int stride) {
    vla_aloha *a = self;
    double s = 0;
    vla_status st = vla_mj_render(a->model->m, a->d, a->model->gen, a->model->id.cam[camera], width, height, rgb,
                                  stride, &s);
    a->render_s += s;
    return st;
}

/* The full physical state: enough for mj_step to continue exactly. */
typedef struct {
    double time;
    double qpos[NQ], qvel[NV], ctrl[NU], qacc_warmstart[NV];
} aloha_state;

static int aloha_state_size(void) { return (int)sizeof(aloha_state); }

static void aloha_get_state(void *self, void *out) {
    const mjData *d = ((vla_aloha *)self)->d;
    aloha_state *s = out;
    s->time = d->time;
    memcpy(s->qpos, d->qpos, sizeof s->qpos), memcpy(s->qvel, d->qvel, sizeof s->qvel);
    memcpy(s->ctrl, d->ctrl, sizeof s->ctrl), memcpy(s->qacc_warmstart, d->qacc_warmstart, sizeof s->qacc_warmstart);
}

static void aloha_set_state(void *self, const void *in) {
    vla_aloha *a = self;
    mjData *d = a->d;
    const aloha_state *s = in;
    d->time = s->time;
    memcpy(d->qpos, s->qpos, sizeof s->qpos), memcpy(d->qvel, s->qvel, sizeof s->qvel);
    memcpy(d->ctrl, s->ctrl, sizeof s->ctrl), memcpy(d->qacc_warmstart, s->qacc_warmstart, sizeof s->qacc_warmstart);
    volatile vla_status st = VLA_OK;
    /* positions and contacts of this state, as the step that left it computed them (mj_step1); mj_forward
     * would also run the constraint solver, which overwrites the warm start the next step begins from */
    VLA_MJ_TRY(st, "aloha: set_state", mj_step1(a->model->m, d));
    memcpy(d->qacc_warmstart, s->qacc_warmstart, sizeof s->qacc_warmstart);
    (void)st;
}

static void aloha_engine_seconds(void *self, double *step_s, double *render_s) {
    vla_aloha *a = self;
    *step_s = a->step_s, *render_s = a->render_s;
}

const vla_env_vtable vla_aloha_vtable = {
    .spec = &aloha_spec,
    .create = aloha_create,
    .destroy = aloha_destroy,
    .reset = aloha_reset,
    .step = aloha_step,
    .observe = aloha_observe,
    .draw = aloha_draw,
    .state_size = aloha_state_size,
    .get_state = aloha_get_state,
    .set_state = aloha_set_state,
    .render = aloha_render,
    .set_model_file = aloha_set_model_file,
    .engine_seconds = aloha_engine_seconds,
};
