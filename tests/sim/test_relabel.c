/* test_relabel.c — DAgger's correction data (sim/relabel.h, record.h's
 * branches, `vla dagger`): branches start exactly in the state the rollout
 * reached, the expert recovers from states a random policy leaves, the
 * recorded episodes start at the branch point with the rollout's state (up
 * to Chipmunk's address-ordered contacts: replays agree to ~1e-5 px) and
 * are marked with their round, and `vla dagger` runs its rounds end to end
 * and writes its metrics. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot.h"
#include "sim/env.h"
#include "sim/record.h"
#include "sim/relabel.h"
#include "train/trainer.h"

/* The env state after replaying `t` actions (as f32, as record does) from `seed`. */
static void state_after(uint64_t seed, const double *actions, int t, vla_pusht_state *st) {
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    vla_env_info info;
    assert_int_equal(vla_env_reset(env, seed, &info), VLA_OK);
    for (int s = 0; s < t; s++) {
        double a[2] = {(float)actions[2 * s], (float)actions[2 * s + 1]};
        vla_env_step_result r;
        assert_int_equal(vla_env_step(env, a, &r), VLA_OK);
    }
    vla_env_get_state(env, st);
    vla_env_free(env);
}

static vla_sim_branch *random_branches(int *n) {
    vla_sim_run_opts ro = {.env = "pusht", .policy = "random", .episodes = 3, .seed = 77, .keep_actions = 3};
    vla_sim_run_result rr;
    assert_int_equal(vla_sim_run(&ro, &rr), VLA_OK);
    vla_sim_branch *b = NULL;
    *n = 0;
    for (int e = 0; e < rr.episodes; e++) {
        const vla_sim_episode *ep = &rr.per_episode[e];
        int before = *n;
        assert_int_equal(vla_sim_expert_branches("pusht", 77 + (uint64_t)e, ep->actions, ep->steps, 25, 2, 0, 3, &b, n),
                         VLA_OK);
        for (int i = before; i < *n; i++) {
            assert_int_equal(b[i].seed, 77 + (uint64_t)e);
            assert_int_equal(b[i].round, 3);
            assert_true(b[i].first == 25 || b[i].first == 50);
            assert_true(b[i].steps > b[i].first && b[i].steps <= 300);
            /* the branch starts where the rollout was */
            int diffs = 0;
            for (int s2 = 0; s2 < 2 * b[i].first; s2++) diffs += b[i].actions[s2] != (double)(float)ep->actions[s2];
            if (diffs) fail_msg("prefix differs in %d values", diffs);
            vla_pusht_state a, c;
            state_after(b[i].seed, ep->actions, b[i].first, &a);
            state_after(b[i].seed, b[i].actions, b[i].first, &c);
            /* equal up to Chipmunk's contact order, which follows memory addresses (~1e-5 px seen) */
            double dist = hypot(a.agent_p[0] - c.agent_p[0], a.agent_p[1] - c.agent_p[1]) +
                          hypot(a.block_p[0] - c.block_p[0], a.block_p[1] - c.block_p[1]);
            if (dist > 1e-2) fail_msg("episode %d branch at %d: the branch starts %.3g px away from the rollout", e,
                                      b[i].first, dist);
        }
    }
    vla_sim_run_result_free(&rr);
    return b;
}

static void test_branches_and_recording(void **state) {
    (void)state;
    int n;
    vla_sim_branch *b = random_branches(&n);
    assert_true(n >= 4); /* the expert recovers from a random policy's states (it succeeds ~99% from a reset) */
    const char *root = test_tmp_path("dagger_ds");
    test_rmrf(root);
    vla_sim_record_opts o = {.env = "pusht", .policy = "expert", .out = root, .episodes = 2, .seed = 0,
                             .branches = b, .n_branches = n};
    vla_sim_record_result r;
    assert_int_equal(vla_sim_record(&o, &r), VLA_OK);
    assert_true(r.branches_kept >= n - 1); /* f32 replay can, rarely, undo a success */
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    assert_int_equal(ds->n_episodes, 2 + r.branches_kept);
    const vla_lr_feature *rf = vla_lerobot_feature(ds, "dagger.round"), *sf = vla_lerobot_feature(ds, "observation.state");
    assert_non_null(rf);
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        for (int64_t row = ep->from; row < ep->to; row++) assert_true(rf->values[row] == (e < 2 ? 0.0f : 3.0f));
    }
    /* each branch episode opens on the rollout's state at the branch point (kept branches in order) */
    int64_t e = 2;
    for (int i = 0; i < n && e < ds->n_episodes; i++) {
        vla_pusht_state st;
        state_after(b[i].seed, b[i].actions, b[i].first, &st);
        const float *s0 = sf->values + ds->episodes[e].from * sf->width;
        if (fabs(s0[0] - st.agent_p[0]) > 1e-3 || fabs(s0[1] - st.agent_p[1]) > 1e-3) continue; /* a dropped one */
        assert_int_equal(ds->episodes[e].length, b[i].steps - b[i].first);
        e++;
    }
    assert_int_equal(e, ds->n_episodes);
    vla_lerobot_close(ds);
    vla_sim_branches_free(b, n);
}

/* `vla dagger` end to end at toy sizes: round 0 and one round, metrics and files. */
static void test_dagger_cli(void **state) {
    (void)state;
    const char *data = test_tmp_path("dagger_base"), *run = test_tmp_path("dagger_run"), *out = test_tmp_path("dagger_out");
    test_rmrf(data), test_rmrf(run), test_rmrf(out);
    vla_sim_record_opts ro = {.env = "pusht", .policy = "expert", .out = data, .episodes = 3, .seed = 0};
    vla_sim_record_result rr;
    assert_int_equal(vla_sim_record(&ro, &rr), VLA_OK);
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.dataset_root = data, o.policy_type = "groot", o.policy_config = "groot-nano", o.output_dir = run;
    o.image_keys = "", o.batch_size = 8, o.steps = 10, o.num_workers = 0, o.progress = false;
    vla_train_result tr;
    if (vla_train(&o, &tr) != VLA_OK) fail_msg("%s", vla_error_message());
    char cmd[8192], buf[16384];
    snprintf(cmd, sizeof cmd,
             "'%s' dagger --policy.path='%s' --output_dir='%s' --dagger.rounds=1 --dagger.rollouts=3 --dagger.every=40 "
             "--dagger.per_rollout=1 --dagger.expert_episodes=3 --steps=4 --batch_size=8 --num_workers=0 "
             "--eval.n_episodes=2 2>&1",
             test_cli_path(), run, out);
    if (test_run(cmd, buf, sizeof buf) != 0) fail_msg("vla dagger failed: %s", buf);
    assert_non_null(strstr(buf, "corrections"));
    char path[2048];
    snprintf(path, sizeof path, "%s/dagger.jsonl", out);
    size_t len;
    char *text = test_slurp(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    assert_int_equal(lines, 2); /* round 0 (the starting policy) and round 1 */
    json_error_t err;
    json_t *last = json_loads(strchr(text, '\n') + 1, 0, &err);
    assert_non_null(last);
    assert_int_equal(json_integer_value(json_object_get(last, "round")), 1);
    int corrections = (int)json_integer_value(json_object_get(last, "corrections"));
    json_decref(last);
    free(text);
    snprintf(path, sizeof path, "%s/round-1/data", out);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(path, &ds), VLA_OK);
    assert_true(ds->n_episodes >= 3 && ds->n_episodes <= 3 + corrections);
    assert_non_null(vla_lerobot_feature(ds, "dagger.round"));
    vla_lerobot_close(ds);
    snprintf(path, sizeof path, "%s/dagger.png", out);
    assert_true(vla_path_exists(path));
    snprintf(path, sizeof path, "%s/round-1/train/checkpoints", out);
    assert_true(vla_is_dir(path));
    /* the fine-tuned policy kept the starting checkpoint's normalisation (--dagger.keep_normalization),
     * though the grown dataset's statistics differ */
    char p0[2048], p1[2048];
    snprintf(p0, sizeof p0, "%s/checkpoints/last/pretrained_model/config.json", run);
    snprintf(p1, sizeof p1, "%s/round-1/train/checkpoints/last/pretrained_model/config.json", out);
    json_t *c0 = json_load_file(p0, 0, &err), *c1 = json_load_file(p1, 0, &err);
    assert_non_null(c0);
    assert_non_null(c1);
    assert_true(json_equal(json_object_get(c0, "normalization"), json_object_get(c1, "normalization")));
    json_decref(c0), json_decref(c1);
    test_rmrf(data), test_rmrf(run), test_rmrf(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_branches_and_recording),
        cmocka_unit_test(test_dagger_cli),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
