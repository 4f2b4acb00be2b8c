/* cmd_eval.c — `vla eval`: closed-loop evaluation of a checkpoint in a
 * simulator (eval/eval.h), LeRobot-style flags. */
#include "cli/cli.h"
#include "eval/eval.h"

#include <stdio.h>
#include <string.h>

int vla_cmd_eval(int argc, char **argv) {
    vla_eval_opts o;
    vla_eval_opts_default(&o);
    int64_t pthreads = 0;
    int64_t n = o.n_episodes, seed = (int64_t)o.seed, n_act = 0, flow_steps = 0, max_steps = 0, n_videos = o.n_videos, vsize = 256;
    bool baselines = false, json = false;
    const char *out = "outputs/eval", *pretrained = NULL, *task = NULL, *model = NULL;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &o.policy_path, "DIR",
         "pretrained_model dir, checkpoint step dir, or a training output dir (newest valid checkpoint)"},
        {"policy.pretrained_path", VLA_FLAG_STRING, &pretrained, "DIR",
         "the same as --policy.path (LeRobot's other name for it); also a published fine-tune (LeRobot, openpi or "
         "Isaac-GR00T), read with the normalisation statistics stored beside it (docs/checkpoints.md); a published "
         "base carries none: fine-tune it first (vla train --policy.pretrained_path)"},
        {"policy.config", VLA_FLAG_STRING, &o.policy_config, "NAME|PATH",
         "a published checkpoint's architecture preset (default: the family's full size, pi05 or groot-n1.5)"},
        {"env.type", VLA_FLAG_STRING, &o.env, "NAME", "pusht | reach | aloha (default pusht)"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"policy.embodiment", VLA_FLAG_STRING, &o.embodiment, "NAME|ID",
         "which of a mixture-trained policy's embodiments drives the env (default: the one whose dataset's "
         "robot_type is the env's name); for a published fine-tune, its openpi asset id or GR00T embodiment tag"},
        {"eval.n_episodes", VLA_FLAG_INT, &n, "N", "episodes (episode i resets with seed+i; default 50)"},
        {"eval.n_videos", VLA_FLAG_INT, &n_videos, "N", "MP4s of the first N episodes (default 2)"},
        {"eval.baselines", VLA_FLAG_BOOL, &baselines, NULL, "also evaluate zero-action and random policies"},
        {"policy.n_action_steps", VLA_FLAG_INT, &n_act, "N", "actions executed per predicted chunk (default min(horizon, 8))"},
        {"policy.num_inference_steps", VLA_FLAG_INT, &flow_steps, "N",
         "Euler steps of flow-matching sampling (default: the checkpoint's flow.steps)"},
        {"eval.policy_threads", VLA_FLAG_INT, &pthreads, "N",
         "policy copies running groups of episodes in parallel (0: one per core; 1: one batched call)"},
        {"max_steps", VLA_FLAG_INT, &max_steps, "N", "episode step limit (default: the env's)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "first episode seed and noise seed (default 100000)"},
        {"output_dir", VLA_FLAG_STRING, &out, "DIR", "eval_info.json and videos/ (default outputs/eval)"},
        {"video_size", VLA_FLAG_INT, &vsize, "PX", "video frame size (default 256)"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print the summary as one JSON object"},
    };
    const vla_command_spec spec = {
        "vla eval", NULL, "Evaluate a trained policy in closed loop in a simulator.",
        "Episodes run in lockstep: every re-plan is one batched policy call over all running episodes,\n"
        "environment steps run in parallel. Writes OUTPUT/eval_info.json (aggregates + per episode) and\n"
        "OUTPUT/videos/eval_episode_<i>.mp4.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (pretrained && o.policy_path && strcmp(pretrained, o.policy_path)) {
        fprintf(stderr, "vla: error: vla eval: --policy.path and --policy.pretrained_path name different checkpoints\n");
        return 2;
    }
    if (pretrained) o.policy_path = pretrained;
    if ((rc = vla_cli_env(&o.env, task, model)) >= 0) return rc;
    if (!o.policy_path) {
        fprintf(stderr, "vla: error: vla eval: --policy.path=DIR is required\n");
        return 2;
    }
    o.n_episodes = (int)n, o.seed = (uint64_t)seed, o.n_action_steps = (int)n_act, o.max_steps = (int)max_steps;
    if (flow_steps < 0 || flow_steps > 1000) {
        fprintf(stderr, "vla: error: vla eval: --policy.num_inference_steps must be 1..1000 (0: the checkpoint's)\n");
        return 2;
    }
    o.flow_steps = (int)flow_steps;
    o.n_videos = (int)n_videos, o.video_size = (int)vsize, o.baselines = baselines, o.output_dir = out;
    o.quiet = json;
    o.policy_threads = (int)pthreads;
    vla_eval_result r;
    vla_status st = vla_eval_run(&o, &r);
    if (st != VLA_OK) return vla_cli_fail(st);
    /* mean_max_coverage: raw coverage; mean_max_reward: LeRobot's avg_max_reward (PushT: clip(coverage / 0.95)) */
    printf("{\"env\":\"%s\",\"episodes\":%d,\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,\"mean_max_reward\":%.4f,"
           "\"mean_sum_reward\":%.4f,\"mean_steps\":%.1f,\"seconds\":%.2f",
           o.env, r.policy.episodes, r.policy.success_rate, r.policy.mean_max_coverage, r.policy.mean_max_reward,
           r.policy.mean_sum_reward, r.policy.mean_steps, r.policy.seconds);
    if (r.has_baselines)
        printf(",\"zero_action\":{\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,\"mean_max_reward\":%.4f,"
               "\"mean_sum_reward\":%.4f},\"random\":{\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,"
               "\"mean_max_reward\":%.4f,\"mean_sum_reward\":%.4f}",
               r.zero.success_rate, r.zero.mean_max_coverage, r.zero.mean_max_reward, r.zero.mean_sum_reward,
               r.random.success_rate, r.random.mean_max_coverage, r.random.mean_max_reward, r.random.mean_sum_reward);
    printf(",\"eval_info\":\"%s\"}\n", r.eval_info);
    return 0;
}
