/* test_sim_pusht.c — PushT on Chipmunk2D: numpy-compatible reset draws,
 * reset bounds, bit-identical determinism, exact coverage on analytic cases,
 * gym-pusht's keypoint order and legacy set-state order, and rendering. */
#include <chipmunk/chipmunk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "sim/env.h"
#include "sim/np_random.h"
#include "test_util.h"

/* From Debian's numpy: rs = np.random.RandomState(s);
 * [rs.randint(50,450), rs.randint(50,450), rs.randint(100,400), rs.randint(100,400), rs.randn()*2*np.pi-np.pi] */
static const struct {
    uint32_t seed;
    double v[5];
} np_golden[] = {
    {0, {222, 97, 217, 292, 3.0079994677219553}},
    {1, {87, 285, 172, 355, -6.595749753457083}},
    {42, {152, 398, 370, 206, -0.16423722535645258}},
    {100000, {235, 124, 335, 128, -0.9049274284249247}},
    {4294967295u, {340, 62, 171, 164, -2.6307466406555617}},
};

static void test_reset_draws_match_numpy(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof np_golden / sizeof np_golden[0]; i++) {
        double s[5];
        vla_pusht_reset_draw(np_golden[i].seed, s);
        for (int k = 0; k < 5; k++) assert_true(s[k] == np_golden[i].v[k]);
    }
}

static void test_reset_bounds(void **state) {
    (void)state;
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    for (uint32_t seed = 0; seed < 300; seed++) {
        double s[5];
        vla_pusht_reset_draw(seed, s);
        assert_true(s[0] >= 50 && s[0] <= 449 && s[1] >= 50 && s[1] <= 449);
        assert_true(s[2] >= 100 && s[2] <= 399 && s[3] >= 100 && s[3] <= 399);
        assert_true(isfinite(s[4]));
        vla_env_info info;
        assert_int_equal(vla_env_reset(env, seed, &info), VLA_OK);
        assert_false(info.is_success);
        vla_env_obs obs = {.type = VLA_OBS_STATE};
        assert_int_equal(vla_env_observe(env, &obs), VLA_OK);
        assert_int_equal(obs.state_dim, 5);
        /* the kinematic agent is not moved by the settling step */
        assert_true(obs.state[0] == s[0] && obs.state[1] == s[1]);
        assert_true(obs.state[4] >= 0 && obs.state[4] < 2 * M_PI);
        assert_true(fabs(remainder(obs.state[4] - s[4], 2 * M_PI)) < 1e-9);
    }
    assert_int_not_equal(vla_env_reset(env, 1ull << 33, NULL), VLA_OK); /* numpy's seed range */
    vla_env_free(env);
}

static void run_trajectory(uint64_t seed, int steps, vla_pusht_state *states, double *obs_out) {
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    assert_int_equal(vla_env_reset(env, seed, NULL), VLA_OK);
    vla_rng g = vla_rng_stream(7, seed);
    double cmd[2] = {256, 256};
    for (int t = 0; t < steps; t++) {
        /* a random walk that sweeps the agent through the block */
        for (int i = 0; i < 2; i++) cmd[i] = fmin(fmax(cmd[i] + 60 * (vla_rng_uniform_f64(&g) - 0.5), 0), 512);
        if (t % 50 == 0) {
            vla_env_obs o = {.type = VLA_OBS_STATE};
            vla_env_observe(env, &o);
            cmd[0] = o.state[2], cmd[1] = o.state[3];
        }
        vla_env_step_result r;
        assert_int_equal(vla_env_step(env, cmd, &r), VLA_OK);
        vla_env_get_state(env, &states[t]);
        vla_env_obs o = {.type = VLA_OBS_ENVIRONMENT_STATE_AGENT_POS};
        vla_env_observe(env, &o);
        memcpy(obs_out + 16 * t, o.env_state, 16 * sizeof(double));
    }
    vla_env_free(env);
}

static void test_determinism(void **state) {
    (void)state;
    enum { T = 300 };
    vla_pusht_state *a = calloc(T, sizeof *a), *b = calloc(T, sizeof *b), *c = calloc(T, sizeof *c);
    double *oa = calloc(T * 16, sizeof(double)), *ob = calloc(T * 16, sizeof(double)), *oc = calloc(T * 16, sizeof(double));
    run_trajectory(3, T, a, oa);
    run_trajectory(3, T, b, ob);
    run_trajectory(4, T, c, oc);
    assert_memory_equal(a, b, sizeof *a * T);
    assert_memory_equal(oa, ob, sizeof(double) * T * 16);
    assert_memory_not_equal(a, c, sizeof *a * T);
    /* the random walk did push the block */
    double p0[3], p1[3];
    vla_pusht_block_pose(&a[0], p0);
    vla_pusht_block_pose(&a[T - 1], p1);
    assert_true(hypot(p1[0] - p0[0], p1[1] - p0[1]) > 1.0 || fabs(p1[2] - p0[2]) > 0.01);
    free(a), free(b), free(c), free(oa), free(ob), free(oc);
}

/* A state copied into another env right after reset continues the same
 * trajectory bit for bit, through violent contacts. */
static void test_state_clone(void **state) {
    (void)state;
    vla_env *a, *b;
    assert_int_equal(vla_env_make("pusht", &a), VLA_OK);
    assert_int_equal(vla_env_make("pusht", &b), VLA_OK);
    assert_int_equal(vla_env_reset(a, 11, NULL), VLA_OK);
    vla_pusht_state sa, sb;
    vla_env_get_state(a, &sa);
    vla_env_set_state(b, &sa);
    vla_env_get_state(b, &sb);
    assert_memory_equal(&sa, &sb, sizeof sa);
    vla_env_obs oa = {.type = VLA_OBS_STATE}, ob = {.type = VLA_OBS_STATE};
    vla_rng g = vla_rng_stream(5, 5);
    double max_dev = 0;
    for (int t = 0; t < 60; t++) {
        vla_env_observe(a, &oa);
        /* walk the agent into the block */
        double cmd[2] = {oa.state[2] + 40 * (vla_rng_uniform_f64(&g) - 0.5), oa.state[3] + 40 * (vla_rng_uniform_f64(&g) - 0.5)};
        vla_env_step_result ra, rb;
        assert_int_equal(vla_env_step(a, cmd, &ra), VLA_OK);
        assert_int_equal(vla_env_step(b, cmd, &rb), VLA_OK);
        vla_env_observe(a, &oa);
        vla_env_observe(b, &ob);
        for (int i = 0; i < 5; i++) max_dev = fmax(max_dev, fabs(oa.state[i] - ob.state[i]));
    }
    assert_true(max_dev == 0.0); /* bit for bit, through violent contacts */
    vla_env_free(a);
    vla_env_free(b);
}

static void test_coverage_analytic(void **state) {
    (void)state;
    const double *g = vla_pusht_goal_pose;
    assert_true(fabs(vla_pusht_coverage_at(g[0], g[1], g[2]) - 1.0) < 1e-12);
    assert_true(vla_pusht_coverage_at(60, 60, 0.3) == 0.0);
    assert_true(vla_pusht_coverage_at(g[0], g[1], g[2] + M_PI) < 0.2);
    /* shifting the T by d along either of its own axes (d < 30) loses 120·d
     * of its 6300 area: the bars lose 30·d or gain back the stem's overlap */
    double c = cos(g[2]), s = sin(g[2]);
    for (int axis = 0; axis < 2; axis++)
        for (double d = 2.5; d < 30; d += 5) {
            double lx = axis == 0 ? d : 0, ly = axis == 1 ? d : 0;
            double cov = vla_pusht_coverage_at(g[0] + c * lx - s * ly, g[1] + s * lx + c * ly, g[2]);
            assert_true(fabs(cov - (6300 - 120 * d) / 6300) < 1e-12);
        }
    /* a live env at the goal pose: success at once */
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    vla_pusht_state st = {0};
    st.agent_p[0] = 450, st.agent_p[1] = 450;
    /* centre of gravity of a block whose origin is at the goal */
    st.block_p[0] = g[0] + c * vla_pusht_cog[0] - s * vla_pusht_cog[1];
    st.block_p[1] = g[1] + s * vla_pusht_cog[0] + c * vla_pusht_cog[1];
    st.block_a = g[2];
    vla_env_set_state(env, &st);
    double hold[2] = {450, 450};
    vla_env_step_result r;
    assert_int_equal(vla_env_step(env, hold, &r), VLA_OK);
    assert_true(r.info.coverage > 0.999999);
    assert_true(r.terminated && r.info.is_success);
    assert_true(r.reward == 1.0);
    vla_env_free(env);
}

/* Against shapely, as gym-pusht computes coverage (tools/sim/pusht_coverage_golden.py). */
static void test_coverage_matches_shapely(void **state) {
    (void)state;
    FILE *f = fopen(test_source_path("tests/sim/data/pusht_coverage.txt"), "r");
    assert_non_null(f);
    char line[256];
    int n = 0, partial = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        double x, y, a, cov;
        assert_int_equal(sscanf(line, "%lf %lf %lf %lf", &x, &y, &a, &cov), 4);
        double mine = vla_pusht_coverage_at(x, y, a);
        if (fabs(mine - cov) > 1e-9) fail_msg("pose %g %g %g: coverage %.12f, shapely %.12f", x, y, a, mine, cov);
        n++;
        partial += cov > 0 && cov < 1;
    }
    fclose(f);
    assert_int_equal(n, 64);
    assert_true(partial > 40);
}

static void test_keypoint_order_and_legacy_set_state(void **state) {
    (void)state;
    /* keypoints follow Chipmunk's vertex order of each shape, as gym-pusht's get_keypoints() */
    cpBody *body = cpBodyNew(1, 1);
    double kp[16];
    vla_pusht_keypoints_at(0, 0, 0, kp);
    for (int sh = 0; sh < 2; sh++) {
        cpVect v[4];
        for (int k = 0; k < 4; k++) v[k] = cpv(vla_pusht_shape_verts[sh][k][0], vla_pusht_shape_verts[sh][k][1]);
        cpShape *poly = cpPolyShapeNew(body, 4, v, cpTransformIdentity, 0);
        assert_int_equal(cpPolyShapeGetCount(poly), 4);
        for (int k = 0; k < 4; k++) {
            cpVect w = cpPolyShapeGetVert(poly, k);
            assert_true(w.x == kp[(sh * 4 + k) * 2] && w.y == kp[(sh * 4 + k) * 2 + 1]);
        }
        cpShapeFree(poly);
    }
    cpBodyFree(body);
    /* reset_to_state sets position then angle, which turns about the centre of gravity */
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    const double s5[5] = {100, 100, 300, 250, M_PI / 2};
    assert_int_equal(vla_pusht_reset_to_state(env, s5), VLA_OK);
    vla_env_obs o = {.type = VLA_OBS_STATE};
    vla_env_observe(env, &o);
    /* origin = (x, y) + cog − R(θ)·cog with cog = (0, 45): R(π/2)·cog = (−45, 0) */
    assert_true(fabs(o.state[2] - (300 + 45)) < 1e-9 && fabs(o.state[3] - (250 + 45)) < 1e-9);
    assert_true(fabs(o.state[4] - M_PI / 2) < 1e-12);
    vla_env_obs k = {.type = VLA_OBS_ENVIRONMENT_STATE_AGENT_POS};
    vla_env_observe(env, &k);
    assert_int_equal(k.env_state_dim, 16);
    assert_int_equal(k.agent_pos_dim, 2);
    /* first keypoint is body (−60, 0) → origin + R(π/2)(−60, 0) = origin + (0, −60) */
    assert_true(fabs(k.env_state[0] - 345) < 1e-9 && fabs(k.env_state[1] - (295 - 60)) < 1e-9);
    vla_env_free(env);
}

static int near(const uint8_t *p, int r, int g, int b, int tol) {
    return abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol;
}

static void test_render(void **state) {
    (void)state;
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    const double s5[5] = {400, 120, 120, 380, 0.0};
    assert_int_equal(vla_pusht_reset_to_state(env, s5), VLA_OK);
    enum { W = 96 };
    uint8_t img[W * W * 3];
    vla_env_obs o = {.type = VLA_OBS_PIXELS_AGENT_POS, .width = W, .height = W, .pixels = img};
    assert_int_equal(vla_env_observe(env, &o), VLA_OK);
    const uint8_t *bg = img + (20 * W + 60) * 3;
    assert_true(near(bg, 255, 255, 255, 0)); /* white background */
    /* goal: body point (0, 15) of the goal T */
    double gx = 256 + cos(M_PI / 4) * 0 - sin(M_PI / 4) * 15, gy = 256 + sin(M_PI / 4) * 0 + cos(M_PI / 4) * 15;
    const uint8_t *gp = img + ((int)(gy / 512 * W) * W + (int)(gx / 512 * W)) * 3;
    assert_true(near(gp, 144, 238, 144, 6)); /* LightGreen */
    const uint8_t *ap = img + ((int)(120.0 / 512 * W) * W + (int)(400.0 / 512 * W)) * 3;
    assert_true(near(ap, 78, 126, 255, 10)); /* RoyalBlue, lighter inside */
    /* the block's bar centre: origin (120, 380) + (0, 15) */
    const uint8_t *bp = img + ((int)(395.0 / 512 * W) * W + (int)(120.0 / 512 * W)) * 3;
    assert_true(near(bp, 142, 163, 183, 10)); /* LightSlateGray tint */
    /* any size, odd included, and a PNG through cairo */
    uint8_t *big = malloc(301 * 177 * 3);
    assert_int_equal(vla_env_render(env, 301, 177, big, 0, false), VLA_OK);
    assert_int_equal(vla_sim_write_png(test_tmp_path("pusht.png"), big, 301, 177, 0), VLA_OK);
    free(big);
    /* rendering is deterministic too */
    uint8_t img2[W * W * 3];
    assert_int_equal(vla_env_render(env, W, W, img2, 0, false), VLA_OK);
    assert_memory_equal(img, img2, sizeof img);
    vla_env_free(env);
}

static void test_bad_input(void **state) {
    (void)state;
    vla_env *env;
    assert_int_not_equal(vla_env_make("nope", &env), VLA_OK);
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    assert_int_equal(vla_env_reset(env, 0, NULL), VLA_OK);
    double bad[2] = {NAN, 1};
    vla_env_step_result r;
    assert_int_not_equal(vla_env_step(env, bad, &r), VLA_OK);
    double far[2] = {1e9, -1e9}; /* clipped to the box */
    assert_int_equal(vla_env_step(env, far, &r), VLA_OK);
    assert_true(r.info.agent_pos[0] <= 512 + 60 && r.info.agent_pos[1] >= -60);
    vla_env_obs o = {.type = VLA_OBS_PIXELS, .width = 0, .height = 0, .pixels = NULL};
    assert_int_not_equal(vla_env_observe(env, &o), VLA_OK);
    vla_env *reach;
    assert_int_equal(vla_env_make("reach", &reach), VLA_OK);
    const double s5[5] = {1, 2, 3, 4, 5};
    assert_int_not_equal(vla_pusht_reset_to_state(reach, s5), VLA_OK);
    vla_env_free(reach);
    const double nan5[5] = {1, 2, NAN, 4, 5};
    assert_int_not_equal(vla_pusht_reset_to_state(env, nan5), VLA_OK);
    vla_obs_type t;
    assert_int_equal(vla_obs_type_parse("pixels_agent_pos", &t), VLA_OK);
    assert_int_equal(t, VLA_OBS_PIXELS_AGENT_POS);
    assert_int_not_equal(vla_obs_type_parse("pixel", &t), VLA_OK);
    vla_env_free(env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reset_draws_match_numpy),
        cmocka_unit_test(test_reset_bounds),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_state_clone),
        cmocka_unit_test(test_coverage_analytic),
        cmocka_unit_test(test_coverage_matches_shapely),
        cmocka_unit_test(test_keypoint_order_and_legacy_set_state),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
