/* aloha_off.c — the `aloha` environment and its expert in a VLA_MEDIA=OFF
 * build (no MuJoCo, no OSMesa): registered under the same name so
 * `--env=aloha` says why it cannot run here instead of "unknown env".
 * Stands in for src/sim/aloha.c, src/sim/expert_aloha.c and
 * src/sim/mj_render.c (src/sim/aloha_model.c, the MJCF text, stays). */
#include "nomedia/media_off.h"
#include "sim/env.h"

static const vla_env_spec aloha_off_spec = {
    .name = "aloha",
    .gym_id = "gym_aloha/AlohaTransferCube-v0",
    .task = "Pick up the cube with the right arm and transfer it to the left arm.",
    .action_dim = 14,
    .max_episode_steps = 400,
    .fps = 50,
    .n_cameras = 1,
    .camera_names = {"top"},
    .image_keys = {"observation.images.top"},
    .robot_type = "aloha",
};

static vla_status aloha_off_create(void **self) {
    *self = NULL;
    return vla_error(VLA_ERR_UNSUPPORTED, "env aloha: this build has no MuJoCo (VLA_MEDIA=OFF, a training-node "
                                          "build): simulate ALOHA on a full build");
}
static int aloha_off_state_size(void) { return 0; }

const vla_env_vtable vla_aloha_vtable = {
    .spec = &aloha_off_spec,
    .create = aloha_off_create,
    .state_size = aloha_off_state_size,
};

static vla_status expert_off_create(const vla_env_spec *spec, void **self) {
    (void)spec;
    return aloha_off_create(self);
}

const vla_sim_policy_vtable vla_expert_aloha_vtable = {"expert", "aloha", expert_off_create, NULL, NULL, NULL};
