/* test_fixtures.c — small datasets several tests train or load from,
 * recorded through the real simulator and the real dataset writer. */
#include "test_util.h"
#include "data/lerobot.h"
#include "sim/env.h"

#include <math.h>
#include <string.h>

#define IMG TEST_REACH_IMAGE_SIZE

/* Record `episodes` expert episodes of Reach (seed0 + e); nan_frame ≥ 0
 * poisons that frame's action. */
void test_record_reach(const char *root, int episodes, uint64_t seed0, int nan_frame) {
    vla_lr_feature_spec f[] = {
        {"observation.image", "video", 3, {IMG, IMG, 3}, NULL, 0},
        {"observation.state", "float32", 1, {4}, NULL, 0},
        {"action", "float32", 1, {2}, NULL, 0},
    };
    vla_lr_writer_opts o = {10, "reach", f, 3, NULL};
    vla_lr_writer *w;
    assert_int_equal(vla_lr_writer_open(root, &o, &w), VLA_OK);
    vla_env *env;
    assert_int_equal(vla_env_make("reach", &env), VLA_OK);
    vla_sim_policy *pol;
    assert_int_equal(vla_sim_policy_make("expert", vla_env_get_spec(env), &pol), VLA_OK);
    uint8_t rgb[IMG * IMG * 3];
    int frame = 0;
    for (int e = 0; e < episodes; e++) {
        vla_env_info info;
        assert_int_equal(vla_env_reset(env, seed0 + (uint64_t)e, &info), VLA_OK);
        vla_sim_policy_reset(pol, env, seed0 + (uint64_t)e);
        for (int t = 0; t < 50; t++) {
            vla_env_obs ob;
            memset(&ob, 0, sizeof ob);
            ob.type = VLA_OBS_STATE;
            assert_int_equal(vla_env_observe(env, &ob), VLA_OK);
            assert_int_equal(vla_env_render(env, IMG, IMG, rgb, 0, false), VLA_OK);
            double a[2];
            assert_int_equal(vla_sim_policy_act(pol, env, a), VLA_OK);
            float s[4] = {(float)ob.state[0], (float)ob.state[1], (float)ob.state[2], (float)ob.state[3]};
            float af[2] = {(float)a[0], (float)a[1]};
            if (frame == nan_frame) af[1] = NAN;
            const float *vals[] = {s, af};
            const uint8_t *imgs[] = {rgb};
            assert_int_equal(vla_lr_writer_add_frame(w, vla_env_get_spec(env)->task, vals, imgs), VLA_OK);
            frame++;
            vla_env_step_result r;
            assert_int_equal(vla_env_step(env, a, &r), VLA_OK);
            if (r.terminated || r.truncated) break;
        }
        assert_int_equal(vla_lr_writer_save_episode(w), VLA_OK);
    }
    vla_sim_policy_free(pol);
    vla_env_free(env);
    assert_int_equal(vla_lr_writer_close(w), VLA_OK);
}
