/* mujoco_api.h — MuJoCo as vla.c calls it (the ALOHA scenes and their
 * renderer): loaded at the first use, not at process start (base/dynlib.h
 * says why and how). Include this instead of <mujoco/mujoco.h>; a new MuJoCo
 * call goes into VLA_MUJOCO_SYMBOLS and gets its redirect below, or the link
 * fails. */
#ifndef VLA_SIM_MUJOCO_API_H
#define VLA_SIM_MUJOCO_API_H

#include "base/dynlib.h"

#include <mujoco/mujoco.h>

#define VLA_MUJOCO_SYMBOLS(X) \
    X(mj_comPos) \
    X(mj_defaultVFS) \
    X(mj_deleteData) \
    X(mj_deleteModel) \
    X(mj_deleteVFS) \
    X(mj_findFileVFS) \
    X(mj_forward) \
    X(mj_jacSite) \
    X(mj_kinematics) \
    X(mj_loadXML) \
    X(mj_makeData) \
    X(mj_makeEmptyFileVFS) \
    X(mj_name2id) \
    X(mj_resetData) \
    X(mj_step) \
    X(mj_step1) \
    X(mj_step2) \
    X(mjr_defaultContext) \
    X(mjr_freeContext) \
    X(mjr_makeContext) \
    X(mjr_readPixels) \
    X(mjr_render) \
    X(mjr_setBuffer) \
    X(mju_axisAngle2Quat) \
    X(mju_mat2Quat) \
    X(mju_mulQuat) \
    X(mju_negQuat) \
    X(mju_norm3) \
    X(mju_quat2Mat) \
    X(mju_quat2Vel) \
    X(mjv_defaultCamera) \
    X(mjv_defaultOption) \
    X(mjv_defaultScene) \
    X(mjv_freeScene) \
    X(mjv_makeScene) \
    X(mjv_updateScene) \
    X(mj_id2name) \
    X(mju_user_error) \
    X(mju_user_warning)
VLA_DYNLIB_DECLARE(mujoco, VLA_MUJOCO_SYMBOLS)

/* mju_user_error and mju_user_warning are MuJoCo's variables (hooks it calls),
 * so they redirect to the variable the table points at. */
#ifndef VLA_MUJOCO_API_IMPL
#define mj_comPos (vla_mujoco()->mj_comPos)
#define mj_defaultVFS (vla_mujoco()->mj_defaultVFS)
#define mj_deleteData (vla_mujoco()->mj_deleteData)
#define mj_deleteModel (vla_mujoco()->mj_deleteModel)
#define mj_deleteVFS (vla_mujoco()->mj_deleteVFS)
#define mj_findFileVFS (vla_mujoco()->mj_findFileVFS)
#define mj_forward (vla_mujoco()->mj_forward)
#define mj_jacSite (vla_mujoco()->mj_jacSite)
#define mj_kinematics (vla_mujoco()->mj_kinematics)
#define mj_loadXML (vla_mujoco()->mj_loadXML)
#define mj_makeData (vla_mujoco()->mj_makeData)
#define mj_makeEmptyFileVFS (vla_mujoco()->mj_makeEmptyFileVFS)
#define mj_name2id (vla_mujoco()->mj_name2id)
#define mj_resetData (vla_mujoco()->mj_resetData)
#define mj_step (vla_mujoco()->mj_step)
#define mj_step1 (vla_mujoco()->mj_step1)
#define mj_step2 (vla_mujoco()->mj_step2)
#define mjr_defaultContext (vla_mujoco()->mjr_defaultContext)
#define mjr_freeContext (vla_mujoco()->mjr_freeContext)
#define mjr_makeContext (vla_mujoco()->mjr_makeContext)
#define mjr_readPixels (vla_mujoco()->mjr_readPixels)
#define mjr_render (vla_mujoco()->mjr_render)
#define mjr_setBuffer (vla_mujoco()->mjr_setBuffer)
#define mju_axisAngle2Quat (vla_mujoco()->mju_axisAngle2Quat)
#define mju_mat2Quat (vla_mujoco()->mju_mat2Quat)
#define mju_mulQuat (vla_mujoco()->mju_mulQuat)
#define mju_negQuat (vla_mujoco()->mju_negQuat)
#define mju_norm3 (vla_mujoco()->mju_norm3)
#define mju_quat2Mat (vla_mujoco()->mju_quat2Mat)
#define mju_quat2Vel (vla_mujoco()->mju_quat2Vel)
#define mjv_defaultCamera (vla_mujoco()->mjv_defaultCamera)
#define mjv_defaultOption (vla_mujoco()->mjv_defaultOption)
#define mjv_defaultScene (vla_mujoco()->mjv_defaultScene)
#define mjv_freeScene (vla_mujoco()->mjv_freeScene)
#define mjv_makeScene (vla_mujoco()->mjv_makeScene)
#define mjv_updateScene (vla_mujoco()->mjv_updateScene)
#define mj_id2name (vla_mujoco()->mj_id2name)
#define mju_user_error (*vla_mujoco()->mju_user_error)
#define mju_user_warning (*vla_mujoco()->mju_user_warning)
#endif

#endif
