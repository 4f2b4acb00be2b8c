/* cmd_sim.c — `vla sim`: run simulator episodes with scripted policies
 * (`play`), record them as datasets (`record`, in cmd_sim_record.c), and the
 * simulator benchmark (`bench`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "io/video.h"
#include "sim/env.h"

static vla_status add_frame(void *user, const uint8_t *rgb, int width, int height) {
    (void)height;
    return vla_video_writer_add_rgb(user, rgb, width * 3);
}

/* Replay the first n episodes (trajectories depend only on seed and actions)
 * and encode them one after another. */
static vla_status write_video(const char *path, const char *env, uint64_t seed, const vla_sim_run_result *r, int n,
                              int camera, int width, int height, vla_render_style style) {
    const vla_env_vtable *vt = vla_env_find(env);
    vla_video_writer_opts vo = {.width = width, .height = height, .fps = vt->spec->fps, .codec = NULL, .crf = -1, .gop = -1};
    vla_video_writer *w;
    VLA_TRY(vla_video_writer_open(path, &vo, &w));
    for (int i = 0; i < n && i < r->episodes; i++) {
        vla_status st = vla_sim_replay(env, seed + (uint64_t)i, r->per_episode[i].actions, r->per_episode[i].steps,
                                       camera, width, height, style, add_frame, w);
        if (st != VLA_OK) {
            vla_video_writer_abort(w);
            return vla_error_context(st, "%s", path);
        }
    }
    return vla_video_writer_close(w);
}

static int cmd_play(int argc, char **argv) {
    const char *env = "pusht", *policy = "expert", *video = NULL, *png = NULL, *style_name = "gym", *size_text = "384";
    const char *task = NULL, *model = NULL, *camera = NULL;
    int64_t episodes = 10, seed = 0, jobs = 0, max_steps = 0, video_episodes = 10;
    bool json = false, verbose = false;
    const vla_flag flags[] = {
        {"env", VLA_FLAG_STRING, &env, "NAME", "environment: pusht | reach | aloha (also --env.type)"},
        {"env.type", VLA_FLAG_STRING, &env, "NAME", "the same as --env"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"camera", VLA_FLAG_STRING, &camera, "NAME", "camera of the video and PNG (aloha: top, angle, left_wrist, right_wrist; default: the env's first)"},
        {"policy", VLA_FLAG_STRING, &policy, "NAME", "scripted policy: expert | random"},
        {"episodes", VLA_FLAG_INT, &episodes, "N", "number of episodes (episode i uses seed S+i)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "first seed"},
        {"jobs", VLA_FLAG_INT, &jobs, "N", "parallel episodes (0: all cores)"},
        {"max-steps", VLA_FLAG_INT, &max_steps, "N", "step limit (0: the environment's, 300 for pusht)"},
        {"video", VLA_FLAG_STRING, &video, "OUT.mp4", "write the first --video-episodes episodes to an MP4"},
        {"video-episodes", VLA_FLAG_INT, &video_episodes, "N", "episodes in the video"},
        {"size", VLA_FLAG_STRING, &size_text, "N|H,W", "video/PNG frame size: N (square) or H,W (default 384)"},
        {"render", VLA_FLAG_STRING, &style_name, "STYLE", "gym (as gym-pusht: pygame + cv2.resize) | smooth (antialiased)"},
        {"png", VLA_FLAG_STRING, &png, "OUT.png", "save the last frame of the first episode as PNG"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print a JSON summary"},
        {"verbose", VLA_FLAG_BOOL, &verbose, NULL, "print one line per episode"},
    };
    const vla_command_spec spec = {"vla sim play", NULL, "Run episodes of a scripted policy in a simulator.",
                                   "Episodes run in parallel; trajectories depend only on the seeds, so a video is "
                                   "rendered afterwards by replaying the recorded actions.",
                                   flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (episodes <= 0 || episodes > 1000000) {
        fprintf(stderr, "vla: error: --episodes must be in 1..1000000 (got %lld)\n", (long long)episodes);
        return 2;
    }
    if (seed < 0) {
        fprintf(stderr, "vla: error: --seed must be non-negative\n");
        return 2;
    }
    vla_render_style style;
    if (!strcmp(style_name, "gym")) {
        style = VLA_RENDER_GYM;
    } else if (!strcmp(style_name, "smooth")) {
        style = VLA_RENDER_SMOOTH;
    } else {
        fprintf(stderr, "vla: error: --render must be gym or smooth (got '%s')\n", style_name);
        return 2;
    }
    if (video_episodes < 1 || video_episodes > 100000) {
        fprintf(stderr, "vla: error: --video-episodes must be in 1..100000\n");
        return 2;
    }
    int height, width, cam = 0;
    if ((rc = vla_cli_image_size("size", size_text, &height, &width)) >= 0) return rc;
    if ((rc = vla_cli_env(&env, task, model)) >= 0) return rc;
    if (camera) {
        vla_status cst = vla_env_camera_index(vla_env_find(env)->spec, camera, &cam);
        if (cst != VLA_OK) return vla_cli_fail(cst);
    }
    vla_sim_run_opts o = {.env = env, .policy = policy, .episodes = (int)episodes, .seed = (uint64_t)seed,
                          .max_steps = (int)max_steps, .jobs = (int)jobs,
                          .keep_actions = video ? (int)video_episodes : png ? 1 : 0};
    vla_sim_run_result r;
    vla_status st = vla_sim_run(&o, &r);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (verbose)
        for (int i = 0; i < r.episodes; i++)
            fprintf(stderr, "episode %d seed %lld: steps %d success %d max_coverage %.4f (%.2f s)\n", i,
                    (long long)(seed + i), r.per_episode[i].steps, r.per_episode[i].success,
                    r.per_episode[i].max_coverage, r.per_episode[i].seconds);
    if (png) {
        const vla_sim_episode *ep = &r.per_episode[0];
        vla_env *e;
        st = vla_env_make(env, &e);
        uint8_t *rgb = malloc((size_t)width * (size_t)height * 3);
        if (st == VLA_OK && !rgb) st = vla_error(VLA_ERR_NOMEM, "out of memory");
        if (st == VLA_OK) st = vla_env_reset(e, (uint64_t)seed, NULL);
        if (st == VLA_OK) vla_env_set_render_style(e, style);
        for (int t = 0; st == VLA_OK && t < ep->steps; t++) {
            vla_env_step_result sr;
            st = vla_env_step(e, ep->actions + (size_t)vla_env_get_spec(e)->action_dim * (size_t)t, &sr);
        }
        if (st == VLA_OK)
            st = cam ? vla_env_render_camera(e, cam, width, height, rgb, 0) : vla_env_render(e, width, height, rgb, 0, true);
        if (st == VLA_OK) st = vla_sim_write_png(png, rgb, width, height, 0);
        free(rgb);
        vla_env_free(e);
        if (st != VLA_OK) {
            vla_sim_run_result_free(&r);
            return vla_cli_fail(st);
        }
    }
    if (video) {
        double t0 = vla_now_s();
        st = write_video(video, env, (uint64_t)seed, &r, (int)video_episodes, cam, width, height, style);
        if (st != VLA_OK) {
            vla_sim_run_result_free(&r);
            return vla_cli_fail(st);
        }
        fprintf(stderr, "wrote %s (%lld episodes, %.1f s)\n", video,
                (long long)(video_episodes < r.episodes ? video_episodes : r.episodes), vla_now_s() - t0);
    }
    if (json)
        printf("{\"env\":\"%s\",\"policy\":\"%s\",\"episodes\":%d,\"seed\":%lld,\"success_rate\":%.4f,"
               "\"mean_max_coverage\":%.4f,\"mean_steps\":%.2f,\"avg_sum_reward\":%.4f,\"avg_max_reward\":%.4f,"
               "\"seconds\":%.3f,\"env_steps_per_s\":%.1f}\n",
               env, policy, r.episodes, (long long)seed, r.success_rate, r.mean_max_coverage, r.mean_steps,
               r.mean_sum_reward, r.mean_max_reward, r.seconds, r.env_steps_per_s);
    else
        printf("%s / %s: %d episodes, success %.1f%%, mean max coverage %.3f, mean steps %.1f (%.1f s)\n", env,
               policy, r.episodes, 100 * r.success_rate, r.mean_max_coverage, r.mean_steps, r.seconds);
    vla_sim_run_result_free(&r);
    return 0;
}

static const vla_cli_command sim_commands[] = {
    {"play", "run episodes of a scripted policy (expert, random) and report success", cmd_play},
    {"record", "record scripted episodes as a LeRobot v3.0 dataset", vla_cmd_sim_record},
    {"bench", "environment steps per second per core (state and 96x96 pixels)", vla_bench_sim},
};

int vla_cmd_sim(int argc, char **argv) {
    return vla_cli_dispatch("vla sim", sim_commands, (int)(sizeof sim_commands / sizeof sim_commands[0]), argc, argv);
}
