/* test_sim_aloha_record.c — `vla sim record --env aloha` end to end: the
 * dataset has the features, shapes, names and fps of LeRobot's
 * aloha_sim_transfer_cube_scripted (tests/sim/data/aloha_lerobot_features.json,
 * copied from the Hub), validates with every frame decoded, and replaying its
 * actions in a fresh env reproduces its observations exactly and ends in
 * success; cameras and the privileged cube pose are chosen by flag; the CLI
 * refuses an unknown task, camera or model file with a message naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "data/lerobot.h"
#include "sim/env.h"
#include "test_util.h"

/* Every feature LeRobot's dataset has, with its dtype, shape and names, is in ours. */
static void check_lerobot_features(const char *root) {
    json_t *want, *got;
    char path[4200];
    assert_int_equal(vla_json_load_file(test_source_path("tests/sim/data/aloha_lerobot_features.json"), &want), VLA_OK);
    snprintf(path, sizeof path, "%s/meta/info.json", root);
    assert_int_equal(vla_json_load_file(path, &got), VLA_OK);
    assert_int_equal(json_integer_value(json_object_get(got, "fps")), json_integer_value(json_object_get(want, "fps")));
    assert_string_equal(json_string_value(json_object_get(got, "robot_type")),
                        json_string_value(json_object_get(want, "robot_type")));
    const char *key;
    json_t *wf;
    json_object_foreach(json_object_get(want, "features"), key, wf) {
        json_t *gf = json_object_get(json_object_get(got, "features"), key);
        if (!gf) fail_msg("feature '%s' of LeRobot's dataset is missing", key);
        assert_string_equal(json_string_value(json_object_get(gf, "dtype")), json_string_value(json_object_get(wf, "dtype")));
        if (!json_equal(json_object_get(gf, "shape"), json_object_get(wf, "shape")))
            fail_msg("feature '%s': shape %s, LeRobot's %s", key, json_dumps(json_object_get(gf, "shape"), 0),
                     json_dumps(json_object_get(wf, "shape"), 0));
        json_t *wn = json_object_get(wf, "names");
        if (wn && !json_equal(json_object_get(gf, "names"), wn)) fail_msg("feature '%s': names differ", key);
    }
    json_decref(want), json_decref(got);
}

static void test_record_matches_lerobot_and_replays(void **state) {
    (void)state;
    const char *root = test_tmp_path("aloha1");
    char cmd[8192], out[4096];
    /* LeRobot's default: observation.images.top at 480×640 */
    snprintf(cmd, sizeof cmd, "%s sim record --env.type=aloha --env.task=AlohaTransferCube-v0 --episodes=1 --seed=3 "
             "--out=%s --json 2>&1", test_cli_path(), root);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("%s", out);
    check_lerobot_features(root);
    snprintf(cmd, sizeof cmd, "%s dataset validate %s --frames=all 2>&1", test_cli_path(), root);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("%s", out);

    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    assert_int_equal(ds->n_episodes, 1);
    assert_string_equal(ds->tasks[0], "Pick up the cube with the right arm and transfer it to the left arm.");
    const vla_lr_feature *st = vla_lerobot_feature(ds, "observation.state");
    const vla_lr_feature *es = vla_lerobot_feature(ds, "observation.environment_state");
    const vla_lr_feature *act = vla_lerobot_feature(ds, "action");
    const vla_lr_feature *rew = vla_lerobot_feature(ds, "next.reward");
    const vla_lr_feature *succ = vla_lerobot_feature(ds, "next.success");
    assert_non_null(st), assert_non_null(es), assert_non_null(act), assert_non_null(rew), assert_non_null(succ);
    assert_int_equal(es->width, 7);
    vla_env *env;
    assert_int_equal(vla_env_make("aloha", &env), VLA_OK);
    assert_int_equal(vla_env_reset(env, 3, NULL), VLA_OK);
    int max_reward = 0;
    for (int64_t row = 0; row < ds->n_rows; row++) {
        vla_env_obs ob = {.type = VLA_OBS_STATE};
        assert_int_equal(vla_env_observe(env, &ob), VLA_OK);
        for (int i = 0; i < 14; i++)
            if (st->values[row * 14 + i] != (float)ob.agent_pos[i])
                fail_msg("row %lld: state[%d] %g vs env %g", (long long)row, i, st->values[row * 14 + i], ob.agent_pos[i]);
        for (int i = 0; i < 7; i++) assert_true(es->values[row * 7 + i] == (float)ob.env_state[i]);
        double a[14];
        for (int i = 0; i < 14; i++) a[i] = act->values[row * 14 + i];
        vla_env_step_result r;
        assert_int_equal(vla_env_step(env, a, &r), VLA_OK);
        assert_true(rew->values[row] == (float)r.reward);
        assert_true(succ->values[row] == (r.info.is_success ? 1.0f : 0.0f));
        if (r.reward > max_reward) max_reward = (int)r.reward;
    }
    assert_int_equal(max_reward, 4);
    assert_true(succ->values[ds->n_rows - 1] == 1.0f);
    vla_env_free(env);
    vla_lerobot_close(ds);
}

static void test_record_cameras_and_no_env_state(void **state) {
    (void)state;
    const char *root = test_tmp_path("aloha_cams");
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "%s sim record --env=aloha --episodes=1 --cameras=top,left_wrist --image_size=48,64 "
             "--environment_state=false --out=%s --json 2>&1", test_cli_path(), root);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("%s", out);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    assert_int_equal(ds->n_cameras, 2);
    assert_true(vla_lerobot_camera(ds, "observation.images.top") >= 0);
    int wrist = vla_lerobot_camera(ds, "observation.images.left_wrist");
    assert_true(wrist >= 0);
    const vla_lr_feature *f = &ds->features[ds->camera_feature[wrist]];
    assert_int_equal(f->height, 48);
    assert_int_equal(f->width_px, 64);
    assert_null(vla_lerobot_feature(ds, "observation.environment_state"));
    vla_lerobot_close(ds);
    snprintf(cmd, sizeof cmd, "%s dataset validate %s --frames=all 2>&1", test_cli_path(), root);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("%s", out);
}

/* A bad flag: a non-zero exit and a message containing `want`. */
static void refused(const char *flags, const char *want) {
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "%s sim record --env=aloha --episodes=1 --out=%s %s 2>&1", test_cli_path(),
             test_tmp_path("never"), flags);
    int rc = test_run(cmd, out, sizeof out);
    if (rc == 0 || !strstr(out, want)) fail_msg("'%s': exit %d, output: %s", flags, rc, out);
    assert_false(strstr(out, "Segmentation") || strstr(out, "Abort"));
}

static void test_cli_refusals(void **state) {
    (void)state;
    refused("--env.task=insertion", "no task 'insertion'");
    refused("--cameras=top,wrist", "unknown camera 'wrist'");
    refused("--cameras=top,top", "named twice");
    refused("--env.model=/nonexistent/scene.xml", "/nonexistent/scene.xml");
    refused("--image_size=95", "even");
    const char *bad = test_tmp_path("broken.xml");
    FILE *f = fopen(bad, "w");
    fputs("<mujoco>\n<worldbody>\n<body>\n</worldbody>\n</mujoco>\n", f);
    fclose(f);
    char flags[4200];
    snprintf(flags, sizeof flags, "--env.model=%s", bad);
    refused(flags, "line 3: XMLElement name=body"); /* tinyxml2 names the element left open and its line */
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "%s sim play --env=aloha --episodes=1 --camera=nope 2>&1", test_cli_path());
    assert_int_not_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "unknown camera 'nope'"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_matches_lerobot_and_replays),
        cmocka_unit_test(test_record_cameras_and_no_env_state),
        cmocka_unit_test(test_cli_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
