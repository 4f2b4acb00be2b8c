/* test_sim_expert.c — the scripted PushT expert and the episode runner:
 * success on a handful of seeds, smooth actions, results independent of the
 * thread count, replays that reproduce parallel episodes, per-frame records
 * for datasets, and `vla sim play --json`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/video.h"
#include "sim/env.h"
#include "test_util.h"

static void test_expert_succeeds(void **state) {
    (void)state;
    vla_sim_run_opts o = {.env = "pusht", .policy = "expert", .episodes = 6, .seed = 0, .jobs = 2, .keep_actions = 6};
    vla_sim_run_result r;
    assert_int_equal(vla_sim_run(&o, &r), VLA_OK);
    assert_true(r.success_rate == 1.0);
    assert_true(r.mean_max_coverage > 0.95);
    assert_true(r.mean_steps < 300);
    for (int i = 0; i < r.episodes; i++) {
        const vla_sim_episode *ep = &r.per_episode[i];
        assert_true(ep->success && ep->steps < 300);
        /* smooth commands: the target point never jumps */
        for (int t = 1; t < ep->steps; t++) {
            double d = hypot(ep->actions[2 * t] - ep->actions[2 * t - 2], ep->actions[2 * t + 1] - ep->actions[2 * t - 1]);
            assert_true(d <= 26.0 + 1e-9);
        }
    }
    /* the same episodes on one thread are identical */
    vla_sim_run_opts o1 = o;
    o1.jobs = 1;
    vla_sim_run_result r1;
    assert_int_equal(vla_sim_run(&o1, &r1), VLA_OK);
    for (int i = 0; i < r.episodes; i++) {
        assert_int_equal(r.per_episode[i].steps, r1.per_episode[i].steps);
        assert_true(r.per_episode[i].max_coverage == r1.per_episode[i].max_coverage);
        assert_memory_equal(r.per_episode[i].actions, r1.per_episode[i].actions, sizeof(double) * 2 * (size_t)r.per_episode[i].steps);
    }
    /* replaying the recorded actions reproduces the episode (videos rely on it) */
    vla_env *env;
    assert_int_equal(vla_env_make("pusht", &env), VLA_OK);
    const vla_sim_episode *ep = &r.per_episode[2];
    assert_int_equal(vla_env_reset(env, 2, NULL), VLA_OK);
    vla_env_step_result sr = {0};
    for (int t = 0; t < ep->steps; t++) assert_int_equal(vla_env_step(env, ep->actions + 2 * t, &sr), VLA_OK);
    assert_true(sr.terminated && sr.info.is_success && sr.info.coverage == ep->max_coverage);
    vla_env_free(env);
    vla_sim_run_result_free(&r);
    vla_sim_run_result_free(&r1);
}

typedef struct {
    int frames, last_frame, episodes_done;
    bool last_success;
    uint64_t pixel_sum;
} frame_log;

static vla_status on_frame(void *user, const vla_sim_frame *f) {
    frame_log *l = user;
    assert_int_equal(f->frame, l->last_frame + 1);
    l->last_frame = f->done ? -1 : f->frame;
    l->frames++;
    assert_int_equal(f->obs->agent_pos_dim, 2);
    assert_int_equal(f->obs->env_state_dim, 16);
    assert_non_null(f->obs->pixels);
    for (int i = 0; i < 96 * 96 * 3; i += 97) l->pixel_sum += f->obs->pixels[i];
    assert_true(f->action[0] >= 0 && f->action[0] <= 512);
    assert_true(f->reward >= 0 && f->reward <= 1);
    if (f->done) l->episodes_done++, l->last_success = f->success;
    return VLA_OK;
}

static void test_frames_for_recording(void **state) {
    (void)state;
    frame_log l = {0, -1, 0, false, 0};
    vla_sim_run_opts o = {.env = "pusht", .policy = "expert", .episodes = 2, .seed = 10,
                          .on_frame = on_frame, .user = &l, .image_width = 96, .image_height = 96};
    vla_sim_run_result r;
    assert_int_equal(vla_sim_run(&o, &r), VLA_OK);
    assert_int_equal(l.episodes_done, 2);
    assert_int_equal(l.frames, r.per_episode[0].steps + r.per_episode[1].steps);
    assert_true(l.last_success);
    assert_true(l.pixel_sum > 0);
    vla_sim_run_result_free(&r);
}

static vla_status count_image(void *user, const uint8_t *rgb, int w, int h) {
    (void)rgb;
    assert_int_equal(w, 64);
    assert_int_equal(h, 64);
    (*(int *)user)++;
    return VLA_OK;
}

static void test_replay_and_random(void **state) {
    (void)state;
    vla_sim_run_opts o = {.env = "pusht", .policy = "random", .episodes = 3, .seed = 5, .max_steps = 40, .keep_actions = 1};
    vla_sim_run_result r;
    assert_int_equal(vla_sim_run(&o, &r), VLA_OK);
    assert_int_equal(r.per_episode[0].steps, 40);
    int n = 0;
    assert_int_equal(vla_sim_replay("pusht", 5, r.per_episode[0].actions, 40, 0, 64, 64, VLA_RENDER_GYM, count_image, &n), VLA_OK);
    assert_int_equal(n, 41); /* the reset frame and one per step */
    vla_sim_run_result_free(&r);
    vla_sim_run_opts bad = {.env = "pusht", .policy = "nope", .episodes = 1};
    assert_int_not_equal(vla_sim_run(&bad, &r), VLA_OK);
    bad.policy = "expert", bad.env = "nope";
    assert_int_not_equal(vla_sim_run(&bad, &r), VLA_OK);
}

static void test_cli_play_json(void **state) {
    (void)state;
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "%s sim play --env pusht --policy expert --episodes 3 --seed 7 --json", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"episodes\":3"));
    assert_non_null(strstr(out, "\"success_rate\":1.0000"));
    assert_non_null(strstr(out, "\"mean_max_coverage\":"));
    assert_true(out[0] == '{'); /* nothing else on stdout */
    snprintf(cmd, sizeof cmd, "%s sim play --env pusht --policy nope --episodes 1 2>/dev/null", test_cli_path());
    assert_int_not_equal(test_run(cmd, out, sizeof out), 0);
}

/* --video replays the episodes into an MP4: one frame per step plus the reset frame. */
static void test_cli_video(void **state) {
    (void)state;
    char cmd[1024], out[4096];
    const char *mp4 = test_tmp_path("reach.mp4");
    snprintf(cmd, sizeof cmd, "%s sim play --env reach --episodes 3 --video %s --size 64 --json 2>/dev/null",
             test_cli_path(), mp4);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    const char *ms = strstr(out, "\"mean_steps\":");
    assert_non_null(ms);
    double mean_steps = atof(ms + strlen("\"mean_steps\":"));
    vla_video_decoder *d;
    assert_int_equal(vla_video_decoder_open(mp4, NULL, &d), VLA_OK);
    const vla_video_info *info = vla_video_decoder_info(d);
    assert_int_equal(info->width, 64);
    assert_int_equal(info->height, 64);
    assert_int_equal(info->frame_count, (int64_t)llround(3 * mean_steps) + 3);
    vla_video_decoder_close(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expert_succeeds),
        cmocka_unit_test(test_frames_for_recording),
        cmocka_unit_test(test_replay_and_random),
        cmocka_unit_test(test_cli_play_json),
        cmocka_unit_test(test_cli_video),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
