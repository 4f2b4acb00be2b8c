/* test_sim_reach.c — the fast Reach environment: the interface contract,
 * its expert, and a whole closed loop in well under a second: record expert
 * frames, fit a linear policy (least squares), evaluate it in the env. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/env.h"
#include "test_util.h"

#define NF 5 /* features: agent x, y, target x, y, 1 */

typedef struct {
    double xtx[NF][NF], xty[NF][2];
    int n;
} lsq;

static vla_status collect(void *user, const vla_sim_frame *f) {
    lsq *l = user;
    double x[NF] = {f->obs->agent_pos[0] / 512, f->obs->agent_pos[1] / 512, f->obs->env_state[0] / 512,
                    f->obs->env_state[1] / 512, 1};
    for (int i = 0; i < NF; i++) {
        for (int j = 0; j < NF; j++) l->xtx[i][j] += x[i] * x[j];
        for (int k = 0; k < 2; k++) l->xty[i][k] += x[i] * f->action[k] / 512;
    }
    l->n++;
    return VLA_OK;
}

/* Solve (XᵀX + λI) W = XᵀY by Gauss–Jordan elimination. */
static void solve(lsq *l, double w[NF][2]) {
    double a[NF][NF + 2];
    for (int i = 0; i < NF; i++) {
        for (int j = 0; j < NF; j++) a[i][j] = l->xtx[i][j] + (i == j ? 1e-6 : 0);
        a[i][NF] = l->xty[i][0], a[i][NF + 1] = l->xty[i][1];
    }
    for (int c = 0; c < NF; c++) {
        int p = c;
        for (int r = c + 1; r < NF; r++)
            if (fabs(a[r][c]) > fabs(a[p][c])) p = r;
        for (int j = 0; j < NF + 2; j++) {
            double t = a[c][j];
            a[c][j] = a[p][j], a[p][j] = t;
        }
        for (int r = 0; r < NF; r++) {
            if (r == c) continue;
            double f = a[r][c] / a[c][c];
            for (int j = 0; j < NF + 2; j++) a[r][j] -= f * a[c][j];
        }
    }
    for (int i = 0; i < NF; i++) w[i][0] = a[i][NF] / a[i][i], w[i][1] = a[i][NF + 1] / a[i][i];
}

static void test_reach_interface(void **state) {
    (void)state;
    vla_env *env;
    assert_int_equal(vla_env_make("reach", &env), VLA_OK);
    const vla_env_spec *sp = vla_env_get_spec(env);
    assert_int_equal(sp->action_dim, 2);
    vla_env_info info;
    assert_int_equal(vla_env_reset(env, 3, &info), VLA_OK);
    assert_false(info.is_success);
    vla_env_obs o = {.type = VLA_OBS_STATE};
    assert_int_equal(vla_env_observe(env, &o), VLA_OK);
    assert_int_equal(o.state_dim, 4);
    double target[2] = {o.state[2], o.state[3]};
    vla_env_step_result r = {0};
    for (int t = 0; t < 20 && !r.terminated; t++) assert_int_equal(vla_env_step(env, target, &r), VLA_OK);
    assert_true(r.terminated && r.info.is_success);
    uint8_t img[48 * 48 * 3];
    assert_int_equal(vla_env_render(env, 48, 48, img, 0, true), VLA_OK);
    vla_env_free(env);
}

static void test_train_and_eval_linear_policy(void **state) {
    (void)state;
    lsq l;
    memset(&l, 0, sizeof l);
    vla_sim_run_opts o = {.env = "reach", .policy = "expert", .episodes = 50, .seed = 0, .on_frame = collect, .user = &l};
    vla_sim_run_result r;
    assert_int_equal(vla_sim_run(&o, &r), VLA_OK);
    assert_true(r.success_rate == 1.0);
    vla_sim_run_result_free(&r);
    assert_true(l.n > 100);
    double w[NF][2];
    solve(&l, w);
    /* closed-loop evaluation on unseen seeds */
    vla_env *env;
    assert_int_equal(vla_env_make("reach", &env), VLA_OK);
    int success = 0, episodes = 50;
    for (int ep = 0; ep < episodes; ep++) {
        assert_int_equal(vla_env_reset(env, 10000 + (uint64_t)ep, NULL), VLA_OK);
        vla_env_step_result sr = {0};
        while (!sr.terminated && !sr.truncated) {
            vla_env_obs ob = {.type = VLA_OBS_ENVIRONMENT_STATE_AGENT_POS};
            vla_env_observe(env, &ob);
            double x[NF] = {ob.agent_pos[0] / 512, ob.agent_pos[1] / 512, ob.env_state[0] / 512, ob.env_state[1] / 512, 1};
            double a[2] = {0, 0};
            for (int i = 0; i < NF; i++) a[0] += x[i] * w[i][0] * 512, a[1] += x[i] * w[i][1] * 512;
            assert_int_equal(vla_env_step(env, a, &sr), VLA_OK);
        }
        success += sr.info.is_success;
    }
    vla_env_free(env);
    print_message("linear policy: %d/%d; w = [%.3f %.3f %.3f %.3f %.3f | %.3f %.3f %.3f %.3f %.3f]\n", success, episodes,
                  w[0][0], w[1][0], w[2][0], w[3][0], w[4][0], w[0][1], w[1][1], w[2][1], w[3][1], w[4][1]);
    assert_true(success >= 45);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reach_interface),
        cmocka_unit_test(test_train_and_eval_linear_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
