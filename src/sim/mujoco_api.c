/* mujoco_api.c — MuJoCo's table of entry points, filled at the first use
 * (sim/mujoco_api.h). */
#define VLA_MUJOCO_API_IMPL
#include "sim/mujoco_api.h"

#include "vla_sonames.h" /* the build's MuJoCo soname (CMakeLists.txt, vla_sonames) */

VLA_DYNLIB_DEFINE(mujoco, VLA_MUJOCO_SYMBOLS, "MuJoCo", "libmujoco2.2.2", VLA_SONAMES_MUJOCO);
