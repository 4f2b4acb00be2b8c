/* cmd_sim_record.c — `vla sim record`: scripted episodes → LeRobot v3.0 dataset. */
#include "cli/cli.h"
#include "sim/record.h"

#include <stdio.h>

int vla_cmd_sim_record(int argc, char **argv) {
    const char *env = "pusht", *policy = "expert", *out = NULL, *codec = NULL, *size_text = NULL, *task = NULL;
    const char *model = NULL, *cameras = NULL;
    int64_t episodes = 50, seed = 0, jobs = 0, max_attempts = 0;
    bool keep_failures = false, json = false, env_state = true;
    double noise = 0;
    const vla_flag flags[] = {
        {"env", VLA_FLAG_STRING, &env, "NAME", "environment: pusht | reach | aloha (also --env.type)"},
        {"env.type", VLA_FLAG_STRING, &env, "NAME", "the same as --env"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"cameras", VLA_FLAG_STRING, &cameras, "A,B",
         "cameras to record, each as its LeRobot key (aloha: top, angle, left_wrist, right_wrist → "
         "observation.images.<name>; default: the env's first, top)"},
        {"environment_state", VLA_FLAG_BOOL, &env_state, NULL,
         "record the privileged observation.environment_state (PushT: block keypoints; aloha: the cube's pose; "
         "default true; false: LeRobot's features only)"},
        {"policy", VLA_FLAG_STRING, &policy, "NAME", "scripted policy: expert | random"},
        {"episodes", VLA_FLAG_INT, &episodes, "N", "episodes to keep"},
        {"out", VLA_FLAG_STRING, &out, "DIR", "dataset root to create (must not exist)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "episode i uses seed S+i"},
        {"jobs", VLA_FLAG_INT, &jobs, "N", "threads running episodes (0: all cores)"},
        {"image_size", VLA_FLAG_STRING, &size_text, "N|H,W",
         "video size: N (square) or H,W (default: pusht 96, aloha 480,640 as LeRobot's datasets)"},
        {"max_attempts", VLA_FLAG_INT, &max_attempts, "N", "episodes to try before giving up (0: 4 x episodes)"},
        {"keep_failures", VLA_FLAG_BOOL, &keep_failures, NULL, "keep unsuccessful episodes too"},
        {"video_codec", VLA_FLAG_STRING, &codec, "NAME", "encoder (default libsvtav1, libx264 fallback)"},
        {"action_noise", VLA_FLAG_FLOAT, &noise, "STD",
         "noise injection: execute the policy's action plus Gaussian noise of this std (PushT: px) and record "
         "the policy's own action as the label, so the data covers recoveries (default 0: off)"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print the summary as JSON"},
    };
    const vla_command_spec spec = {
        "vla sim record", NULL, "Record scripted episodes as a LeRobot v3.0 dataset.",
        "Runs --episodes successful episodes of the scripted policy (in parallel), then writes them with the\n"
        "cameras' videos, observation.state, observation.environment_state, action, next.reward, next.done and\n"
        "next.success, as LeRobot's pusht and aloha_sim_transfer_cube_scripted datasets (pusht: observation.image;\n"
        "aloha: observation.images.top, 14 joints named as LeRobot's, 50 fps). The dataset appears complete or\n"
        "not at all.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (!out) {
        fprintf(stderr, "vla: error: vla sim record: --out=DIR is required\n");
        return 2;
    }
    int height = 0, width = 0;
    if (size_text && (rc = vla_cli_image_size("image_size", size_text, &height, &width)) >= 0) return rc;
    if ((rc = vla_cli_env(&env, task, model)) >= 0) return rc;
    vla_sim_record_opts o = {.env = env, .policy = policy, .out = out, .episodes = (int)episodes,
                             .max_attempts = (int)max_attempts, .seed = (uint64_t)seed, .jobs = (int)jobs,
                             .image_height = height, .image_width = width, .cameras = cameras,
                             .no_env_state = !env_state, .keep_failures = keep_failures, .video_codec = codec,
                             .progress = !json, .action_noise = noise};
    vla_sim_record_result r;
    vla_status st = vla_sim_record(&o, &r);
    if (st != VLA_OK) return vla_cli_fail(st);
    /* the count is what was recorded; the attempts beyond it are accounted for (record.h: a wave runs a margin
     * for failures, and what it ran past the last episode needed is not recorded) */
    int spare = r.episodes_run - r.episodes_kept - r.episodes_failed;
    if (json)
        printf("{\"out\":\"%s\",\"env\":\"%s\",\"episodes\":%d,\"episodes_run\":%d,\"episodes_failed\":%d,"
               "\"episodes_not_needed\":%d,\"frames\":%lld,\"policy_success_rate\":%.4f,\"seconds\":%.2f}\n",
               out, env, r.episodes_kept, r.episodes_run, r.episodes_failed, spare, (long long)r.frames,
               r.success_rate, r.seconds);
    else {
        char extra[256] = "";
        if (r.episodes_run > r.episodes_kept)
            snprintf(extra, sizeof extra, " (%d run: %d failed and %s discarded, %d more than needed %s not recorded)",
                     r.episodes_run, r.episodes_failed, r.episodes_failed == 1 ? "was" : "were", spare,
                     spare == 1 ? "was" : "were");
        printf("%d episodes recorded%s, %lld frames of %s/%s, into %s in %.1f s; the policy succeeded in %.1f%% of "
               "its runs\n",
               r.episodes_kept, extra, (long long)r.frames, env, policy, out, r.seconds, 100.0 * r.success_rate);
    }
    return 0;
}
