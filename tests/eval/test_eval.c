/* test_eval.c — closed loop: a policy trained briefly on Reach expert data
 * (recorded here through the v3.0 writer) beats the random policy in the
 * simulator; eval_info.json holds aggregates and one entry per episode;
 * videos are written; a corrupted checkpoint is refused by `vla eval`.
 * groot-nano, not pi05-nano: π0.5 sees the state only as digits in its
 * prompt, and after 600 steps pi05-nano reached 15% against random's 12.5%;
 * GR00T's continuous state token gets 67.5% (40 episodes, ~4-7 s of training). */
#include "test_util.h"


#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot.h"
#include "train/loader.h"
#include "policy/config.h"
#include "sim/record.h"
#include "tensor/ops.h"
#include "eval/eval.h"
#include "sim/env.h"
#include "train/trainer.h"



static void test_trained_beats_random(void **state) {
    (void)state;
    const char *root = test_tmp_path("reach_eval_ds"), *out = test_tmp_path("reach_eval_run");
    test_record_reach(root, 40, 0, -1);
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.dataset_root = root;
    o.policy_type = getenv("EVAL_TYPE") ? getenv("EVAL_TYPE") : "groot";
    o.policy_config = getenv("EVAL_CFG") ? getenv("EVAL_CFG") : "groot-nano";
    o.output_dir = out;
    o.batch_size = 16;
    o.steps = 600;
    o.seed = 3;
    o.num_workers = 2;
    o.lr = 3e-3;
    o.log_freq = 100;
    o.save_freq = 0;
    o.progress = false;
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    printf("train: loss %.4f -> %.4f, %.1f s\n", r.first_loss, r.last_loss, r.seconds);

    vla_eval_opts e;
    vla_eval_opts_default(&e);
    e.policy_path = out;
    e.env = "reach";
    e.n_episodes = 40;
    e.seed = 5000;
    e.n_videos = 1;
    e.video_size = 64;
    e.output_dir = test_tmp_path("reach_eval_out");
    e.baselines = true;
    vla_eval_result er;
    st = vla_eval_run(&e, &er);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    printf("policy success %.3f coverage %.3f | random success %.3f coverage %.3f | zero success %.3f coverage %.3f\n",
           er.policy.success_rate, er.policy.mean_max_coverage, er.random.success_rate, er.random.mean_max_coverage,
           er.zero.success_rate, er.zero.mean_max_coverage);
    assert_true(er.policy.success_rate > er.random.success_rate);
    assert_true(er.policy.mean_max_coverage > er.random.mean_max_coverage);

    json_t *info;
    assert_int_equal(vla_json_load_file(er.eval_info, &info), VLA_OK);
    assert_int_equal(json_array_size(json_object_get(info, "per_episode")), 40);
    assert_non_null(json_object_get(json_object_get(info, "aggregated"), "pc_success"));
    json_t *vids = json_object_get(info, "video_paths");
    assert_int_equal(json_array_size(vids), 1);
    assert_true(vla_path_exists(json_string_value(json_array_get(vids, 0))));
    int64_t own_steps = json_integer_value(json_object_get(json_object_get(info, "config"), "flow_steps"));
    json_decref(info);
    assert_true(own_steps >= 2);

    /* --policy.num_inference_steps: the checkpoint's own count changes
     * nothing; one Euler step samples other actions (every policy copy is
     * remade with it) and eval_info says which count ran */
    e.baselines = false, e.n_videos = 0;
    e.flow_steps = (int)own_steps;
    vla_eval_result same, one;
    if (vla_eval_run(&e, &same) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(same.policy.mean_max_coverage == er.policy.mean_max_coverage);
    assert_true(same.policy.mean_sum_reward == er.policy.mean_sum_reward);
    e.flow_steps = 1;
    if (vla_eval_run(&e, &one) != VLA_OK) fail_msg("%s", vla_error_message());
    printf("%lld Euler steps: sum reward %.6f; 1 step: %.6f\n", (long long)own_steps, er.policy.mean_sum_reward,
           one.policy.mean_sum_reward);
    assert_true(one.policy.mean_sum_reward != er.policy.mean_sum_reward);
    assert_int_equal(vla_json_load_file(one.eval_info, &info), VLA_OK);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(info, "config"), "flow_steps")), 1);
    json_decref(info);
}

/* --eval.inference_delay: the schedules of late chunks (eval.h). groot-nano
 * predicts 4 actions; with 2 executed per chunk and a delay of 1, SYNC asks
 * for one chunk per 3 steps (it waits a step for each), the asynchronous
 * modes one per 2 (the first waited for); RTC's guided chunks differ from
 * NAIVE's; eval_info says how chunks were used; impossible timings are refused. */
static void test_inference_delay(void **state) {
    (void)state;
    vla_eval_opts e;
    vla_eval_opts_default(&e);
    e.policy_path = test_tmp_path("reach_eval_run");
    e.env = "reach", e.n_episodes = 6, e.seed = 7000, e.n_videos = 0, e.max_steps = 30, e.n_action_steps = 2;
    e.output_dir = test_tmp_path("delay_eval");
    e.inference_delay = 1;
    vla_eval_result r[3];
    for (int m = 0; m < 3; m++) {
        e.chunking = (vla_eval_chunking)m;
        if (vla_eval_run(&e, &r[m]) != VLA_OK) fail_msg("%s: %s", vla_eval_chunking_name(e.chunking), vla_error_message());
        printf("%s, delay 1: success %.2f, steps %.1f, chunks %.2f, jerk %.4f, at boundaries %.4f\n",
               vla_eval_chunking_name(e.chunking), r[m].policy.success_rate, r[m].policy.mean_steps, r[m].policy.chunks,
               r[m].policy.mean_jerk, r[m].policy.boundary_jerk);
    }
    /* episodes of 30 steps (reach ends early on success: count on the step totals) */
    for (int m = 0; m < 3; m++) {
        double per = r[m].policy.mean_steps / r[m].policy.chunks, want = m == 0 ? 3.0 : 2.0;
        assert_true(per <= want + 1e-9 && per > want - 1.0);
    }
    assert_true(r[1].policy.mean_jerk != r[2].policy.mean_jerk); /* guidance changed the chunks */
    json_t *info;
    assert_int_equal(vla_json_load_file(r[2].eval_info, &info), VLA_OK);
    json_t *cf = json_object_get(info, "config");
    assert_int_equal(json_integer_value(json_object_get(cf, "inference_delay")), 1);
    assert_string_equal(json_string_value(json_object_get(cf, "chunking")), "rtc");
    assert_non_null(json_object_get(json_object_get(info, "aggregated"), "avg_boundary_jerk"));
    json_decref(info);
    /* a chunk of 4 cannot cover 2 executed + a delay of 3 */
    e.inference_delay = 3;
    vla_eval_result bad;
    assert_int_equal(vla_eval_run(&e, &bad), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "n_action_steps + inference_delay <= the chunk length"));
}

static void test_eval_cli_refuses_corruption(void **state) {
    (void)state;
    const char *out = test_tmp_path("reach_eval_run");
    char cmd[4096], buf[8192];
    /* flip one byte of the newest checkpoint's weights: `vla eval` on that checkpoint refuses it */
    snprintf(cmd, sizeof cmd,
             "f=%s/checkpoints/last/pretrained_model/model.safetensors; "
             "printf '\\125' | dd of=$f bs=1 seek=$(( $(stat -c %%s $f) - 3 )) conv=notrunc 2>/dev/null; "
             "%s eval --policy.path=%s/checkpoints/last/pretrained_model --env.type=reach --eval.n_episodes=2 "
             "--output_dir=%s 2>&1",
             out, test_cli_path(), out, test_tmp_path("eval_bad"));
    int rc = test_run(cmd, buf, sizeof buf);
    printf("%s", buf);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(buf, "corrupted checkpoint"));
}


/* Two PushT expert episodes (state keys + a 32×32 camera) recorded fresh
 * into the test directory `name`, opened; root receives its path. */
static vla_lerobot *record_pusht(const char *name, uint64_t seed, char *root, size_t cap) {
    snprintf(root, cap, "%s", test_tmp_path(name));
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    vla_sim_record_opts ro = {.env = "pusht", .policy = "expert", .out = root, .episodes = 2, .seed = seed, .jobs = 1,
                              .image_size = 32, .keep_failures = true};
    vla_sim_record_result rr;
    if (vla_sim_record(&ro, &rr) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_lerobot *ds = NULL;
    if (vla_lerobot_open(root, &ds) != VLA_OK) fail_msg("%s", vla_error_message());
    return ds;
}

/* The data path end to end: PushT episodes recorded with the state keys
 * agent pos + block keypoints; for rows across each episode, the loader's
 * (normalised) state equals what eval builds from the env replayed to that
 * row with the recorded actions, normalised with the same statistics; the
 * action chunk is the recorded actions at offsets 0..H-1 (pad past the
 * episode's end) and unnormalises back to them. */
static void test_state_matches_env(void **state) {
    (void)state;
    char root[1024];
    const uint64_t seed0 = 7;
    vla_lerobot *ds = record_pusht("pusht_state_ds", seed0, root, sizeof root);
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("groot-nano", &cfg), VLA_OK);
    int64_t sw = 0;
    const char *keys = "observation.state,observation.environment_state";
    assert_int_equal(vla_loader_keys_width(ds, keys, &sw), VLA_OK);
    assert_int_equal(sw, 2 + 16);
    if (cfg.action.state_dim < sw) cfg.action.state_dim = sw;
    assert_int_equal(vla_policy_config_validate(cfg.name, &cfg), VLA_OK);
    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(&cfg, test_backend(), &p), VLA_OK);
    vla_loader_opts lo = {.ds = ds, .policy = p, .batch_size = 1, .seed = 1, .state_keys = keys, .image_keys = ""};
    vla_loader *L = NULL;
    if (vla_loader_create(&lo, &L) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_loader_state_width(L), sw);
    assert_int_equal(vla_loader_n_cameras(L), 0);
    vla_pretrained_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.state_width = sw;
    snprintf(meta.state_keys, sizeof meta.state_keys, "%s", vla_loader_state_keys(L));
    assert_string_equal(meta.state_keys, keys);
    const vla_lr_feature *fa = vla_lerobot_feature(ds, "action");
    const vla_normalizer *ns = vla_loader_state_norm(L), *na = vla_loader_action_norm(L);
    int64_t H = cfg.action.horizon, Ad = cfg.action.action_dim, checked = 0;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        int64_t len = ep->to - ep->from;
        const int64_t picks[] = {0, 1, len / 2, len - H / 2, len - 1};
        for (size_t pi = 0; pi < sizeof picks / sizeof picks[0]; pi++) {
            int64_t row = ep->from + picks[pi];
            vla_loader_batch *b = NULL;
            uint64_t key = (uint64_t)row;
            if (vla_loader_build(L, &row, &key, 1, &b) != VLA_OK) fail_msg("%s", vla_error_message());
            /* replay: reset with the episode's seed, the recorded actions up to the row */
            vla_env *env = NULL;
            assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
            vla_env_info info;
            assert_int_equal(vla_env_reset(env, seed0 + (uint64_t)e, &info), VLA_OK);
            for (int64_t r = ep->from; r < row; r++) {
                double a[VLA_ENV_MAX_DIM] = {0};
                for (int64_t d = 0; d < fa->width; d++) a[d] = fa->values[r * fa->width + d];
                vla_env_step_result sr;
                assert_int_equal(vla_env_step(env, a, &sr), VLA_OK);
            }
            vla_env_obs ob;
            memset(&ob, 0, sizeof ob);
            ob.type = VLA_OBS_STATE;
            vla_env_observe(env, &ob);
            vla_env_free(env);
            float want[64];
            if (vla_eval_policy_state("pusht", &meta, &ob, want) != VLA_OK) fail_msg("%s", vla_error_message());
            vla_normalize(ns, want, want, 1);
            for (int64_t k = 0; k < sw; k++)
                if (fabsf(b->batch.state[k] - want[k]) > 1e-5f)
                    fail_msg("row %lld state[%lld]: loader %g, eval %g", (long long)row, (long long)k,
                             b->batch.state[k], want[k]);
            for (int64_t h = 0; h < H; h++) {
                bool pad = row + h >= ep->to;
                assert_int_equal(b->batch.action_is_pad[h], pad);
                if (pad) continue;
                float a[64];
                memcpy(a, b->batch.actions + h * Ad, (size_t)Ad * sizeof(float));
                vla_unnormalize(na, a, a, 1);
                for (int64_t d = 0; d < fa->width; d++)
                    assert_true(fabsf(a[d] - fa->values[(row + h) * fa->width + d]) < 1e-3f);
            }
            vla_loader_release(L, b);
            checked++;
        }
    }
    assert_true(checked >= 10);
    vla_loader_free(L);
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

/* Per-step action statistics (--dataset.action_stats_per_step) reach eval:
 * a checkpoint whose H × 2 statistics repeat the pooled ones at the steps
 * eval executes (h < n_action_steps) and hold nonsense at the others acts
 * exactly as the pooled checkpoint, action for action; nonsense at step 0
 * changes what it does; a width that is neither 2 nor H × 2 is refused. */
static void per_step_statistics(vla_policy *p, const vla_normalizer *ns, const vla_normalizer *na,
                                vla_pretrained_meta *meta, vla_eval_opts *eo) {
    int64_t H = p->cfg.action.horizon;
    float lo[128], hi[128];
    assert_true(na->dim == 2 && H * 2 <= 128);
    vla_eval_trajectory *tr[3];
    vla_eval_result res[3];
    for (int v = 0; v < 3; v++) {
        const char *dir = test_tmp_path(v == 0 ? "pusht_pool_model" : v == 1 ? "pusht_step_model" : "pusht_step0_model");
        vla_normalizer per;
        const vla_normalizer *use = na;
        if (v > 0) {
            for (int64_t h = 0; h < H; h++)
                for (int d = 0; d < 2; d++) {
                    bool nonsense = v == 1 ? h >= eo->n_action_steps : h == 0;
                    lo[h * 2 + d] = nonsense ? na->lo[d] - 7.0f : na->lo[d]; /* valid in every mode */
                    hi[h * 2 + d] = nonsense ? na->hi[d] + 11.0f : na->hi[d];
                }
            assert_int_equal(vla_normalizer_init(&per, na->mode, na->style, H * 2, lo, hi, na->eps), VLA_OK);
            use = &per;
        }
        meta->action_stats_per_step = v > 0;
        json_t *cj = vla_pretrained_config_json(p, ns, use, meta);
        if (vla_pretrained_write_dir(dir, p, NULL, cj) != VLA_OK) fail_msg("%s", vla_error_message());
        json_decref(cj);
        if (v > 0) vla_normalizer_free(&per);
        eo->policy_path = dir;
        eo->output_dir = test_tmp_path("pusht_step_eval");
        eo->keep_trajectories = 2;
        if (vla_eval_run(eo, &res[v]) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_int_equal(res[v].n_traj, 2);
        tr[v] = res[v].traj;
    }
    bool step0_differs = false;
    for (int e = 0; e < 2; e++) {
        assert_int_equal(tr[1][e].steps, tr[0][e].steps);
        assert_memory_equal(tr[1][e].actions, tr[0][e].actions, (size_t)tr[0][e].steps * 2 * sizeof(double));
        for (int k = 0; k < tr[0][e].steps * 2 && k < tr[2][e].steps * 2; k++)
            step0_differs |= tr[2][e].actions[k] != tr[0][e].actions[k];
    }
    assert_true(step0_differs);
    for (int v = 0; v < 3; v++) vla_eval_result_free(&res[v]);
    /* the recorded width must match: a pooled normaliser marked per-step is refused */
    meta->action_stats_per_step = true;
    json_t *cj = vla_pretrained_config_json(p, ns, na, meta);
    const char *bad = test_tmp_path("pusht_step_bad_model");
    if (vla_pretrained_write_dir(bad, p, NULL, cj) != VLA_OK) fail_msg("%s", vla_error_message());
    json_decref(cj);
    vla_pretrained pm;
    assert_int_equal(vla_pretrained_load(bad, test_backend(), &pm), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "widths disagree"));
    meta->action_stats_per_step = false;
    eo->keep_trajectories = 0;
}

/* n_obs_steps = 3 in a closed loop: replaying each recorded PushT episode
 * in the env, pushing the observation after reset and after every step into
 * the eval's history (as vla_eval_run does), gives at every row the state
 * the loader built from the dataset rows t-2..t (clamped at the episode
 * start). Then a checkpoint that records n_obs_steps (random groot-nano
 * weights) loads with it and runs in `vla_eval_run`. */
static void test_history_matches_loader(void **state) {
    (void)state;
    char root[1024];
    const uint64_t seed0 = 11;
    vla_lerobot *ds = record_pusht("pusht_hist_ds", seed0, root, sizeof root);
    enum { K = 3, FW = 18 };
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("groot-nano", &cfg), VLA_OK);
    if (cfg.action.state_dim < K * FW) cfg.action.state_dim = K * FW;
    assert_int_equal(vla_policy_config_validate(cfg.name, &cfg), VLA_OK);
    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(&cfg, test_backend(), &p), VLA_OK);
    assert_int_equal(vla_policy_init_weights(p, 5), VLA_OK);
    const char *keys = "observation.state,observation.environment_state";
    vla_loader_opts lo = {.ds = ds, .policy = p, .batch_size = 1, .seed = 1, .state_keys = keys, .image_keys = "",
                          .n_obs_steps = K};
    vla_loader *L = NULL;
    if (vla_loader_create(&lo, &L) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_loader_state_width(L), K * FW);
    vla_pretrained_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.state_width = vla_loader_state_width(L);
    meta.n_obs_steps = vla_loader_n_obs_steps(L);
    meta.action_width = 2;
    meta.fps = ds->fps;
    snprintf(meta.state_keys, sizeof meta.state_keys, "%s", vla_loader_state_keys(L));
    vla_eval_history *h = NULL;
    if (vla_eval_history_create("pusht", &meta, &h) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_eval_history_width(h), K * FW);
    const vla_lr_feature *fa = vla_lerobot_feature(ds, "action");
    const vla_normalizer *ns = vla_loader_state_norm(L);
    int64_t checked = 0;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        vla_env *env = NULL;
        assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
        vla_env_info info;
        assert_int_equal(vla_env_reset(env, seed0 + (uint64_t)e, &info), VLA_OK);
        vla_eval_history_reset(h);
        for (int64_t row = ep->from; row < ep->to; row++) {
            vla_env_obs ob;
            memset(&ob, 0, sizeof ob);
            ob.type = VLA_OBS_STATE;
            vla_env_observe(env, &ob);
            vla_eval_history_push(h, &ob);
            float got[K * FW];
            vla_eval_history_state(h, got);
            vla_normalize(ns, got, got, 1);
            vla_loader_batch *b = NULL;
            uint64_t key = (uint64_t)row;
            if (vla_loader_build(L, &row, &key, 1, &b) != VLA_OK) fail_msg("%s", vla_error_message());
            for (int k = 0; k < K * FW; k++)
                if (fabsf(b->batch.state[k] - got[k]) > 1e-5f)
                    fail_msg("episode %lld row %lld state[%d]: loader %g, eval history %g", (long long)e,
                             (long long)row, k, b->batch.state[k], got[k]);
            vla_loader_release(L, b);
            checked++;
            double a[VLA_ENV_MAX_DIM] = {0};
            for (int64_t d = 0; d < fa->width; d++) a[d] = fa->values[row * fa->width + d];
            vla_env_step_result sr;
            assert_int_equal(vla_env_step(env, a, &sr), VLA_OK);
        }
        vla_env_free(env);
    }
    assert_true(checked > 40);
    vla_eval_history_free(h);

    /* the checkpoint records n_obs_steps; eval rebuilds K frames */
    snprintf(meta.task, sizeof meta.task, "%s", ds->n_tasks > 0 ? ds->tasks[0] : "");
    json_t *cj = vla_pretrained_config_json(p, ns, vla_loader_action_norm(L), &meta);
    assert_non_null(cj);
    const char *dir = test_tmp_path("pusht_hist_model");
    if (vla_pretrained_write_dir(dir, p, NULL, cj) != VLA_OK) fail_msg("%s", vla_error_message());
    json_decref(cj);
    vla_pretrained pm;
    if (vla_pretrained_load(dir, test_backend(), &pm) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(pm.meta.n_obs_steps, K);
    assert_int_equal(pm.meta.state_width, K * FW);
    assert_false(pm.meta.relative_actions);
    /* built for inference: no gradient memory, though the policy that wrote it trained every group */
    assert_true(p->n_grad_floats > 0);
    assert_true(pm.policy->n_grad_floats == 0 && pm.policy->grads == NULL);
    vla_pretrained_free(&pm);
    /* relative actions are recorded the same way (eval adds agent_pos back) */
    meta.relative_actions = true;
    cj = vla_pretrained_config_json(p, ns, vla_loader_action_norm(L), &meta);
    const char *rdir = test_tmp_path("pusht_hist_model_rel");
    if (vla_pretrained_write_dir(rdir, p, NULL, cj) != VLA_OK) fail_msg("%s", vla_error_message());
    json_decref(cj);
    if (vla_pretrained_load(rdir, test_backend(), &pm) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(pm.meta.relative_actions);
    vla_pretrained_free(&pm);
    vla_eval_opts eo;
    vla_eval_opts_default(&eo);
    eo.policy_path = dir;
    eo.env = "pusht";
    eo.n_episodes = 2;
    eo.max_steps = 12;
    eo.n_action_steps = 3;
    eo.output_dir = test_tmp_path("pusht_hist_eval");
    eo.n_videos = 0;
    eo.quiet = true;
    vla_eval_result er;
    if (vla_eval_run(&eo, &er) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(er.policy.episodes, 2);
    eo.policy_path = rdir;
    eo.output_dir = test_tmp_path("pusht_hist_eval_rel");
    vla_eval_result er2;
    if (vla_eval_run(&eo, &er2) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(er2.policy.episodes, 2);
    per_step_statistics(p, ns, vla_loader_action_norm(L), &meta, &eo);
    eo.output_dir = test_tmp_path("pusht_hist_eval");
    json_t *info;
    assert_int_equal(vla_json_load_file(er.eval_info, &info), VLA_OK);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(info, "config"), "n_obs_steps")), K);
    /* LeRobot's avg_max_reward is the mean of each episode's best step reward, clip(coverage / 0.95, 0, 1)
     * for PushT; raw coverage is reported beside it under its own name */
    json_t *agg = json_object_get(info, "aggregated"), *per = json_object_get(info, "per_episode");
    double sum_rew = 0, sum_cov = 0;
    for (size_t i = 0; i < json_array_size(per); i++) {
        json_t *e = json_array_get(per, i);
        double mr = json_number_value(json_object_get(e, "max_reward")), mc = json_number_value(json_object_get(e, "max_coverage"));
        double clip = mc / 0.95 > 1 ? 1 : mc / 0.95;
        assert_true(mr >= 0 && mr <= clip + 1e-12);
        sum_rew += mr, sum_cov += mc;
    }
    assert_true(fabs(json_number_value(json_object_get(agg, "avg_max_reward")) - sum_rew / 2) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(agg, "avg_max_coverage")) - sum_cov / 2) < 1e-12);
    json_decref(info);
    vla_loader_free(L);
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_matches_env),
        cmocka_unit_test(test_history_matches_loader),
        cmocka_unit_test(test_trained_beats_random),
        cmocka_unit_test(test_inference_delay),
        cmocka_unit_test(test_eval_cli_refuses_corruption),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
