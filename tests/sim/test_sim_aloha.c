/* test_sim_aloha.c — ALOHA TransferCube on MuJoCo: gym-aloha's reset draws
 * (against numpy), its reward stages (the truth table of gym_aloha/tasks/
 * sim.py, and a by-name recomputation from MuJoCo's contact list at every
 * step of expert episodes), determinism (same seed → same bytes, state
 * copies continue exactly, frames render the same in any thread), the
 * camera (the cube's pixels where a pinhole projection puts them), the
 * expert on a subset of seeds 0–99 (the full range: docs/sim.md), and bad
 * input: missing and malformed model files, unknown task and camera, NaN
 * actions, actions of the wrong width. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/aloha.h"
#include "sim/env.h"
#include "test_util.h"

extern const char vla_aloha_transfer_cube_xml[]; /* the built-in scene (src/sim/aloha_model.c) */

static vla_env *make(void) {
    vla_env *env = NULL;
    if (vla_env_make("aloha", &env) != VLA_OK) fail_msg("%s", vla_error_message());
    return env;
}

static void test_reset_matches_numpy(void **state) {
    (void)state;
    size_t n;
    char *txt = test_slurp(test_source_path("tests/sim/data/aloha_box_pose.txt"), &n);
    vla_env *env = make();
    int rows = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        unsigned long long seed;
        double want[3];
        assert_int_equal(sscanf(line, "%llu %lf %lf %lf", &seed, &want[0], &want[1], &want[2]), 4);
        assert_int_equal(vla_env_reset(env, seed, NULL), VLA_OK);
        vla_env_obs ob = {.type = VLA_OBS_STATE};
        assert_int_equal(vla_env_observe(env, &ob), VLA_OK);
        for (int k = 0; k < 3; k++) assert_true(ob.env_state[k] == want[k]); /* bit for bit: the same doubles */
        assert_true(ob.env_state[3] == 1 && ob.env_state[4] == 0 && ob.env_state[5] == 0 && ob.env_state[6] == 0);
        /* the arms start at gym-aloha's START_ARM_POSE; the gripper normalised as its constants.py does */
        assert_true(ob.agent_pos[1] == -0.96 && ob.agent_pos[2] == 1.16 && ob.agent_pos[11] == -0.3);
        double g = (0.02239 - 0.01844) / (0.05800 - 0.01844);
        assert_true(fabs(ob.agent_pos[6] - g) < 1e-12 && fabs(ob.agent_pos[13] - g) < 1e-12);
        rows++;
    }
    assert_int_equal(rows, 9);
    /* numpy's RandomState takes 32-bit seeds */
    assert_int_not_equal(vla_env_reset(env, 1ull << 32, NULL), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "32 bits"));
    vla_env_free(env);
    free(txt);
}

/* gym-aloha's TransferCubeTask.get_reward, written from its source as a table. */
static int gym_reward(bool left, bool right, bool table) {
    int r = 0;
    if (right) r = 1;
    if (right && !table) r = 2;
    if (left) r = 3;
    if (left && !table) r = 4;
    return r;
}

static void test_reward_truth_table(void **state) {
    (void)state;
    vla_env *env = make();
    assert_int_equal(vla_env_reset(env, 0, NULL), VLA_OK);
    vla_aloha *a = env->self;
    const vla_aloha_ids *id = &a->model->id;
    mjData *d = a->d;
    int saved = d->ncon;
    /* every combination of the three contacts gym-aloha looks at, with contacts it ignores mixed in:
     * the other finger of each gripper and finger–table */
    for (int mask = 0; mask < 64; mask++) {
        int n = 0;
        if (mask & 1) d->contact[n].geom1 = id->geom_box, d->contact[n++].geom2 = id->geom_finger[0][0];
        if (mask & 2) d->contact[n].geom1 = id->geom_finger[1][1], d->contact[n++].geom2 = id->geom_box;
        if (mask & 4) d->contact[n].geom1 = id->geom_table, d->contact[n++].geom2 = id->geom_box;
        if (mask & 8) d->contact[n].geom1 = id->geom_box, d->contact[n++].geom2 = id->geom_finger[0][1];
        if (mask & 16) d->contact[n].geom1 = id->geom_finger[1][0], d->contact[n++].geom2 = id->geom_box;
        if (mask & 32) d->contact[n].geom1 = id->geom_finger[1][1], d->contact[n++].geom2 = id->geom_table;
        d->ncon = n;
        assert_int_equal(vla_aloha_reward(a), gym_reward(mask & 1, mask & 2, mask & 4));
    }
    d->ncon = saved;
    vla_env_free(env);
}

/* The stage from MuJoCo's contact list, looked up by geom name as gym-aloha does. */
static int reward_by_name(const vla_aloha *a) {
    const mjModel *m = a->model->m;
    bool left = false, right = false, table = false;
    for (int i = 0; i < a->d->ncon; i++) {
        const char *g1 = mj_id2name(m, mjOBJ_GEOM, a->d->contact[i].geom1);
        const char *g2 = mj_id2name(m, mjOBJ_GEOM, a->d->contact[i].geom2);
        if (!g1 || !g2) continue;
        const char *other = !strcmp(g1, "red_box") ? g2 : !strcmp(g2, "red_box") ? g1 : NULL;
        if (!other) continue;
        left |= !strcmp(other, "vx300s_left/10_left_gripper_finger");
        right |= !strcmp(other, "vx300s_right/10_right_gripper_finger");
        table |= !strcmp(other, "table");
    }
    return gym_reward(left, right, table);
}

static void test_expert_stages_and_success(void **state) {
    (void)state;
    vla_env *env = make();
    vla_sim_policy *ex;
    assert_int_equal(vla_sim_policy_make("expert", vla_env_get_spec(env), &ex), VLA_OK);
    int seen[5] = {0};
    for (uint64_t seed = 0; seed < 10; seed++) {
        assert_int_equal(vla_env_reset(env, seed, NULL), VLA_OK);
        vla_sim_policy_reset(ex, env, seed);
        int best = 0;
        bool success = false;
        for (int t = 0; t < 400 && !success; t++) {
            double act[14];
            assert_int_equal(vla_sim_policy_act(ex, env, act), VLA_OK);
            vla_env_step_result r;
            if (vla_env_step(env, act, &r) != VLA_OK) fail_msg("%s", vla_error_message());
            int by_name = reward_by_name(env->self);
            assert_int_equal((int)r.reward, by_name);
            assert_true(r.info.coverage == r.reward / 4.0);
            assert_int_equal(r.terminated, by_name == 4);
            seen[by_name]++;
            if (by_name > best) best = by_name;
            success = r.info.is_success;
        }
        assert_true(success);
        assert_int_equal(best, 4);
    }
    /* the expert's grasps pass through "touching on the table" and "lifted"; 4 ends each episode */
    assert_true(seen[0] > 0 && seen[2] > 0 && seen[4] == 10);
    printf("stage counts over 10 expert episodes: 0:%d 1:%d 2:%d 3:%d 4:%d\n", seen[0], seen[1], seen[2], seen[3], seen[4]);
    vla_sim_policy_free(ex);
    vla_env_free(env);

    /* the expert on seeds 0–19 in parallel (docs/sim.md measures 0–99 with vla sim play) */
    vla_sim_run_opts o = {.env = "aloha", .policy = "expert", .episodes = 20, .seed = 0, .jobs = 2};
    vla_sim_run_result rr;
    assert_int_equal(vla_sim_run(&o, &rr), VLA_OK);
    printf("expert, seeds 0-19: success %.2f, mean steps %.1f\n", rr.success_rate, rr.mean_steps);
    assert_true(rr.success_rate >= 0.95);
    vla_sim_run_result_free(&rr);
}

/* One episode's observations, actions and a frame hash from `seed`. */
static void run_expert(uint64_t seed, int steps, double *obs_out, double *act_out, uint64_t *frame_hash) {
    vla_env *env = make();
    vla_sim_policy *ex;
    assert_int_equal(vla_sim_policy_make("expert", vla_env_get_spec(env), &ex), VLA_OK);
    assert_int_equal(vla_env_reset(env, seed, NULL), VLA_OK);
    uint8_t rgb[64 * 48 * 3];
    uint64_t h = 1469598103934665603ull;
    for (int t = 0; t < steps; t++) {
        vla_env_obs ob = {.type = VLA_OBS_STATE};
        assert_int_equal(vla_env_observe(env, &ob), VLA_OK);
        memcpy(obs_out + 21 * t, ob.state, 21 * sizeof(double));
        assert_int_equal(vla_sim_policy_act(ex, env, act_out + 14 * t), VLA_OK);
        vla_env_step_result r;
        assert_int_equal(vla_env_step(env, act_out + 14 * t, &r), VLA_OK);
        if (t % 20 == 0) {
            assert_int_equal(vla_env_render(env, 64, 48, rgb, 0, false), VLA_OK);
            for (size_t i = 0; i < sizeof rgb; i++) h = (h ^ rgb[i]) * 1099511628211ull;
        }
        if (r.terminated) break;
    }
    *frame_hash = h;
    vla_sim_policy_free(ex);
    vla_env_free(env);
}

static void test_determinism(void **state) {
    (void)state;
    enum { T = 80 };
    double *o1 = calloc(21 * T, sizeof(double)), *o2 = calloc(21 * T, sizeof(double));
    double *a1 = calloc(14 * T, sizeof(double)), *a2 = calloc(14 * T, sizeof(double));
    uint64_t h1, h2, h3 = 0;
    run_expert(7, T, o1, a1, &h1);
    run_expert(7, T, o2, a2, &h2);
    assert_memory_equal(o1, o2, 21 * T * sizeof(double));
    assert_memory_equal(a1, a2, 14 * T * sizeof(double));
    assert_true(h1 == h2);
    /* the same episode rendered from another thread (its own GL context) gives the same bytes */
    double *o3 = calloc(21 * T, sizeof(double)), *a3 = calloc(14 * T, sizeof(double));
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) run_expert(7, T, o3, a3, &h3);
    assert_true(h3 == h1);
    assert_memory_equal(o1, o3, 21 * T * sizeof(double));

    /* a state copied mid-episode (the cube in the gripper) continues exactly */
    vla_env *e1 = make(), *e2 = make();
    assert_int_equal(vla_env_reset(e1, 7, NULL), VLA_OK);
    assert_int_equal(vla_env_reset(e2, 3, NULL), VLA_OK);
    vla_env_step_result r;
    for (int t = 0; t < 70; t++) assert_int_equal(vla_env_step(e1, a1 + 14 * t, &r), VLA_OK);
    char *snap = malloc((size_t)e1->vt->state_size());
    vla_env_get_state(e1, snap);
    vla_env_set_state(e2, snap);
    for (int t = 70; t < T; t++) {
        vla_env_step_result r1, r2;
        assert_int_equal(vla_env_step(e1, a1 + 14 * t, &r1), VLA_OK);
        assert_int_equal(vla_env_step(e2, a1 + 14 * t, &r2), VLA_OK);
        vla_env_obs b1 = {.type = VLA_OBS_STATE}, b2 = {.type = VLA_OBS_STATE};
        vla_env_observe(e1, &b1), vla_env_observe(e2, &b2);
        assert_memory_equal(b1.state, b2.state, 21 * sizeof(double));
        assert_true(r1.reward == r2.reward);
        if (r1.terminated) break;
    }
    free(snap);
    vla_env_free(e1), vla_env_free(e2);
    free(o1), free(o2), free(o3), free(a1), free(a2), free(a3);
}

/* The cube's red pixels in the top camera lie where a pinhole camera with
 * the model's camera pose and fovy projects the cube's top face. */
static void test_camera_projection(void **state) {
    (void)state;
    vla_env *env = make();
    for (uint64_t seed = 0; seed < 4; seed++) {
        assert_int_equal(vla_env_reset(env, seed, NULL), VLA_OK);
        vla_env_step_result r;
        double hold[14];
        for (int arm = 0; arm < 2; arm++) {
            for (int j = 0; j < 6; j++) hold[7 * arm + j] = vla_aloha_start_pose[8 * arm + j];
            hold[7 * arm + 6] = vla_aloha_gripper_normalize(vla_aloha_start_pose[8 * arm + 6]);
        }
        for (int t = 0; t < 25; t++) assert_int_equal(vla_env_step(env, hold, &r), VLA_OK); /* the cube settles */
        enum { W = 160, H = 120 };
        static uint8_t rgb[W * H * 3];
        assert_int_equal(vla_env_render_camera(env, 0, W, H, rgb, 0), VLA_OK);
        double su = 0, sv = 0;
        int n = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const uint8_t *p = rgb + 3 * (y * W + x);
                if (p[0] > 150 && p[1] < 90 && p[2] < 90) su += x + 0.5, sv += y + 0.5, n++;
            }
        vla_aloha *a = env->self;
        const mjModel *m = a->model->m;
        int cam = a->model->id.cam[0];
        const double *cp = a->d->cam_xpos + 3 * cam, *cm = a->d->cam_xmat + 9 * cam;
        const double *box = a->d->qpos + a->model->id.qpos_box;
        double P[3] = {box[0], box[1], box[2] + 0.02}, v[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) v[i] += cm[3 * k + i] * (P[k] - cp[k]); /* Rᵀ (P − c) */
        double f = (H / 2.0) / tan(m->cam_fovy[cam] * M_PI / 360.0);
        double u = W / 2.0 + f * v[0] / -v[2], w = H / 2.0 - f * v[1] / -v[2];
        printf("seed %llu: %d red pixels, centroid (%.2f, %.2f), projected (%.2f, %.2f)\n", (unsigned long long)seed, n,
               su / n, sv / n, u, w);
        assert_true(n > 4);
        assert_true(fabs(su / n - u) < 1.0 && fabs(sv / n - w) < 1.0);
    }
    vla_env_free(env);
}

static void test_bad_input(void **state) {
    (void)state;
    vla_env *env = make();
    assert_int_equal(vla_env_reset(env, 1, NULL), VLA_OK);
    double act[14] = {0};
    vla_env_step_result r;
    /* NaN and infinite actions: refused, naming the entry; the env goes on */
    act[9] = NAN;
    assert_int_equal(vla_env_step(env, act, &r), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "action[9]"));
    act[9] = INFINITY;
    assert_int_equal(vla_env_step(env, act, &r), VLA_ERR_NUMERIC);
    act[9] = 0;
    assert_int_equal(vla_env_step(env, act, &r), VLA_OK);
    /* a width other than 14 */
    assert_int_equal(vla_env_step_width(env, act, 2, &r), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "2 entries"));
    assert_non_null(strstr(vla_error_message(), "14"));
    assert_int_equal(vla_env_step_width(env, act, 14, &r), VLA_OK);
    /* cameras and tasks by name */
    int cam = -1;
    assert_int_equal(vla_env_camera_index(vla_env_get_spec(env), "left_wrist", &cam), VLA_OK);
    assert_int_equal(cam, 2);
    assert_int_equal(vla_env_camera_index(vla_env_get_spec(env), "observation.images.top", &cam), VLA_OK);
    assert_int_equal(cam, 0);
    assert_int_not_equal(vla_env_camera_index(vla_env_get_spec(env), "wrist", &cam), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "unknown camera 'wrist'"));
    assert_non_null(strstr(vla_error_message(), "left_wrist"));
    assert_int_not_equal(vla_env_render_camera(env, 9, 32, 32, (uint8_t[32 * 32 * 3]){0}, 0), VLA_OK);
    uint8_t big[8];
    assert_int_not_equal(vla_env_render(env, 1280, 960, big, 0, false), VLA_OK); /* larger than the offscreen buffer */
    assert_non_null(strstr(vla_error_message(), "offwidth"));
    const char *name;
    assert_int_equal(vla_env_resolve("aloha", "transfer_cube", &name), VLA_OK);
    assert_string_equal(name, "aloha");
    assert_int_equal(vla_env_resolve("aloha", "AlohaTransferCube-v0", &name), VLA_OK);
    assert_int_equal(vla_env_resolve("aloha", NULL, &name), VLA_OK);
    assert_int_not_equal(vla_env_resolve("aloha", "insertion_peg", &name), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "no task 'insertion_peg'"));
    assert_non_null(strstr(vla_error_message(), "transfer_cube"));
    assert_int_not_equal(vla_env_resolve("alohaa", NULL, &name), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "unknown environment 'alohaa'"));
    vla_env_free(env);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_model_files(void **state) {
    (void)state;
    /* missing */
    const char *missing = test_tmp_path("no_such_scene.xml");
    assert_int_not_equal(vla_env_set_model_file("aloha", missing), VLA_OK);
    assert_non_null(strstr(vla_error_message(), missing));
    /* malformed XML: MuJoCo's parser names the line, passed on with the file */
    const char *bad = test_tmp_path("bad_scene.xml");
    write_text(bad, "<mujoco>\n  <worldbody>\n    <geom type='box' size='1 1 1'>\n  </worldbody>\n</mujoco>\n");
    assert_int_not_equal(vla_env_set_model_file("aloha", bad), VLA_OK);
    printf("malformed: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), bad));
    assert_non_null(strstr(vla_error_message(), "line 3"));
    /* a schema error: an unknown attribute, with its element and line */
    write_text(bad, "<mujoco>\n  <worldbody>\n    <geom type='box' size='1 1 1' colour='red'/>\n  </worldbody>\n</mujoco>\n");
    assert_int_not_equal(vla_env_set_model_file("aloha", bad), VLA_OK);
    printf("schema: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), "colour"));
    assert_non_null(strstr(vla_error_message(), "line 3"));
    /* valid MJCF without the scene the env needs */
    write_text(bad, "<mujoco>\n  <worldbody>\n    <geom name='table' type='box' size='1 1 1'/>\n  </worldbody>\n</mujoco>\n");
    assert_int_not_equal(vla_env_set_model_file("aloha", bad), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "needs"));
    /* a scene that keeps the names loads, and envs made after use it: the
     * built-in one with a red_box twice the size falls to rest 2 cm higher */
    vla_env *env = make();
    const char *good = test_tmp_path("scene.xml");
    char *xml = strdup(vla_aloha_transfer_cube_xml);
    char *p = strstr(xml, "name='red_box' type='box' size='0.02 0.02 0.02'");
    assert_non_null(p);
    memcpy(strstr(p, "0.02 0.02 0.02"), "0.04 0.04 0.04", 14);
    write_text(good, xml);
    free(xml);
    if (vla_env_set_model_file("aloha", good) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_env *big = make();
    double zs[2];
    vla_env *envs[2] = {env, big};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(vla_env_reset(envs[i], 0, NULL), VLA_OK);
        double hold[14];
        for (int arm = 0; arm < 2; arm++) {
            for (int j = 0; j < 6; j++) hold[7 * arm + j] = vla_aloha_start_pose[8 * arm + j];
            hold[7 * arm + 6] = 0.1;
        }
        vla_env_step_result r;
        for (int t = 0; t < 30; t++) assert_int_equal(vla_env_step(envs[i], hold, &r), VLA_OK);
        vla_env_obs ob = {.type = VLA_OBS_STATE};
        vla_env_observe(envs[i], &ob);
        zs[i] = ob.env_state[2];
    }
    printf("cube at rest: built-in z %.4f, 8 cm cube z %.4f\n", zs[0], zs[1]);
    assert_true(fabs(zs[0] - 0.02) < 0.003 && fabs(zs[1] - 0.04) < 0.003);
    assert_int_equal(vla_env_set_model_file("aloha", NULL), VLA_OK); /* back to the built-in */
    vla_env_free(big);
    vla_env_free(env);
    assert_int_not_equal(vla_env_set_model_file("pusht", good), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "no model file"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_matches_numpy),     cmocka_unit_test(test_reward_truth_table),
        cmocka_unit_test(test_expert_stages_and_success), cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_camera_projection),       cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_model_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
