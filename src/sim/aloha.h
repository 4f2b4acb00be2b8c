/* aloha.h — the ALOHA TransferCube environment's internals, shared by
 * aloha.c (the env) and expert_aloha.c (its scripted expert); everything
 * else uses env.h. */
#ifndef VLA_SIM_ALOHA_H
#define VLA_SIM_ALOHA_H

#include "sim/mujoco_api.h"
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

/* gym-aloha's constants (gym_aloha/constants.py): the finger joint's
 * positions that the normalised gripper value 0 (closed) and 1 (open) stand
 * for, and the arms' start pose (per arm: 6 joints, then the two fingers). */
#define VLA_ALOHA_GRIPPER_CLOSE 0.01844
#define VLA_ALOHA_GRIPPER_OPEN 0.05800
extern const double vla_aloha_start_pose[16];

/* Indices into the model, looked up by name once per loaded model. */
typedef struct {
    int qpos_arm[2][8];  /* qpos address of [arm][waist..wrist_rotate, left_finger, right_finger]; arm 0 left */
    int dof_arm[2][6];   /* dof addresses of the 6 arm joints */
    int jnt_arm[2][6];   /* joint ids (ranges) */
    int act[2][8];       /* actuators, same order as qpos_arm */
    int qpos_box;        /* the cube's free joint: x y z qw qx qy qz */
    int geom_box, geom_table;
    int geom_finger[2][2]; /* [arm][left finger, right finger] */
    int site_grip[2];      /* between each gripper's finger pads */
    int cam[4];            /* top, angle, left_wrist, right_wrist */
} vla_aloha_ids;

/* A loaded model with what the env needs of it. Shared read-only by every env
 * made from it (mjModel is not written by mj_step). */
typedef struct {
    mjModel *m;
    vla_aloha_ids id;
    uint64_t gen;  /* distinct per loaded model (the renderer's cache key) */
    int refs;
} vla_aloha_model;

typedef struct {
    vla_aloha_model *model;
    mjData *d;
    int warned_unstable;
    double render_s; /* seconds in mjr_render alone, summed (bench sim) */
    double step_s;   /* seconds in mj_step alone, summed */
} vla_aloha;

/* gym-aloha's reward stage of the current contacts: 1 the right gripper
 * touches the cube, 2 … and the cube is off the table, 3 the left gripper
 * touches it, 4 … and the cube is off the table (success). */
int vla_aloha_reward(const vla_aloha *a);
/* Whether geoms g1 and g2 are in contact now. */
bool vla_aloha_touching(const vla_aloha *a, int g1, int g2);
/* The normalised gripper value (0 closed, 1 open) of a finger joint position, and back. */
double vla_aloha_gripper_normalize(double q);
double vla_aloha_gripper_unnormalize(double g);

#endif
