/* cmd_eval.c — `vla eval`: closed-loop evaluation of a checkpoint in a
 * simulator (eval/eval.h), LeRobot-style flags. */
#include "base/run_dir.h"
#include "cli/cli.h"
#include "eval/eval.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The human summary: what ran, how it did against the baselines, where it is. */
static void print_summary(const vla_eval_opts *o, const vla_eval_result *r, const char *dir) {
    const vla_eval_summary *p = &r->policy;
    printf("eval %s: %d episodes of %s (%d actions per chunk, %d frame(s) of state, %d flow steps), %.1f s\n", o->env,
           p->episodes, o->policy_path, r->n_action_steps, r->n_obs_steps, r->flow_steps, p->seconds);
    printf("  success      %.1f%% (%d of %d)\n", 100 * p->success_rate, (int)(p->success_rate * p->episodes + 0.5),
           p->episodes);
    printf("  coverage     mean max %.3f (LeRobot avg_max_reward %.3f), mean reward %.2f, %.0f steps per episode\n",
           p->mean_max_coverage, p->mean_max_reward, p->mean_sum_reward, p->mean_steps);
    if (r->has_baselines)
        printf("  baselines    zero-action %.1f%% (coverage %.3f), random %.1f%% (coverage %.3f)\n",
               100 * r->zero.success_rate, r->zero.mean_max_coverage, 100 * r->random.success_rate,
               r->random.mean_max_coverage);
    if (o->inference_delay > 0)
        printf("  chunking     %s, chunks %d steps late: jerk %.4f overall, %.4f where chunks meet\n",
               vla_eval_chunking_name(o->chunking), o->inference_delay, p->mean_jerk, p->boundary_jerk);
    printf("  output       %s\n", dir);
    printf("  eval_info    %s\n", r->eval_info);
    if (r->video_success[0]) printf("  video        a success: %s\n", r->video_success);
    if (r->video_failure[0]) printf("  video        a failure: %s\n", r->video_failure);
}

int vla_cmd_eval(int argc, char **argv) {
    vla_eval_opts o;
    vla_eval_opts_default(&o);
    int64_t n = o.n_episodes, seed = (int64_t)o.seed, n_act = 0, flow_steps = 0, max_steps = 0, n_videos = o.n_videos, vsize = 256;
    bool baselines = false, json = false, overwrite = false, no_jac = false;
    const char *out = NULL, *pretrained = NULL, *job_name = NULL, *chunking = NULL, *schedule = "exp";
    const char *task = NULL, *model = NULL;
    o.env = NULL; /* not given: the checkpoint's (vla_eval_infer_env) */
    int64_t delay = 0;
    double beta = o.rtc_beta;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &o.policy_path, "DIR",
         "pretrained_model dir, checkpoint step dir, or a training output dir (newest valid checkpoint)"},
        {"policy.pretrained_path", VLA_FLAG_STRING, &pretrained, "DIR",
         "the same as --policy.path (LeRobot's other name for it); also a published fine-tune (LeRobot, openpi or "
         "Isaac-GR00T), read with the normalisation statistics stored beside it (docs/checkpoints.md); a published "
         "base carries none: fine-tune it first (vla train --policy.pretrained_path)"},
        {"policy.config", VLA_FLAG_STRING, &o.policy_config, "NAME|PATH",
         "a published checkpoint's architecture preset (default: the family's full size, pi05 or groot-n1.5)"},
        {"env.type", VLA_FLAG_STRING, &o.env, "NAME",
         "pusht | reach | aloha (default: the one the checkpoint was trained for, from its dataset's robot_type, "
         "cameras or widths; printed)"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"env.allow_mismatch", VLA_FLAG_BOOL, &o.allow_mismatch, NULL,
         "run a checkpoint trained on another robot than the env (refused by default; state and action widths "
         "must still fit)"},
        {"policy.embodiment", VLA_FLAG_STRING, &o.embodiment, "NAME|ID",
         "which of a mixture-trained policy's embodiments drives the env (default: the one whose dataset's "
         "robot_type is the env's name); for a published fine-tune, its openpi asset id or GR00T embodiment tag"},
        {"eval.n_episodes", VLA_FLAG_INT, &n, "N", "episodes (episode i resets with seed+i; default 50)"},
        {"eval.n_videos", VLA_FLAG_INT, &n_videos, "N", "MP4s of the first N episodes (default 2)"},
        {"eval.baselines", VLA_FLAG_BOOL, &baselines, NULL, "also evaluate zero-action and random policies"},
        {"policy.n_action_steps", VLA_FLAG_INT, &n_act, "N",
         "actions executed per predicted chunk (default: the checkpoint's, as training decided; else min(horizon, 8))"},
        {"policy.num_inference_steps", VLA_FLAG_INT, &flow_steps, "N",
         "Euler steps of flow-matching sampling (default: the checkpoint's flow.steps)"},
        {"device", VLA_FLAG_STRING, &o.device, "NAME", VLA_CLI_DEVICE_HELP},
        {"precision", VLA_FLAG_STRING, &o.precision, "auto|fp32|bf16",
         "how the transformer blocks' large linears run: auto is $VLA_PRECISION, else bf16 on a GPU (each weight "
         "cast once and kept on the device) and fp32 on the CPU (default auto)"},
        {"max_steps", VLA_FLAG_INT, &max_steps, "N", "episode step limit (default: the env's)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "first episode seed and noise seed (default 100000)"},
        {"output_dir", VLA_FLAG_STRING, &out, "DIR",
         "eval_info.json and videos/; must be empty (default: a new outputs/eval/<date>/<time>_<job_name>)"},
        {"job_name", VLA_FLAG_STRING, &job_name, "NAME", "the default output directory's name (default <env>_<policy>)"},
        {"overwrite", VLA_FLAG_BOOL, &overwrite, NULL,
         "a non-empty --output_dir is moved aside to DIR.old-<date>_<time> (nothing deleted)"},
        {"video_size", VLA_FLAG_INT, &vsize, "PX", "video frame size (default 256)"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print the summary as one JSON object on stdout instead of the human one"},
        {"eval.inference_delay", VLA_FLAG_INT, &delay, "D",
         "simulate a policy that answers D control steps late"},
        {"eval.chunking", VLA_FLAG_STRING, &chunking, "MODE",
         "how late chunks are used: sync (the robot waits) | naive (asynchronous, the new chunk ignores the old) | "
         "rtc (asynchronous, real-time chunking); rtc when --eval.inference_delay > 0, else sync"},
        {"rtc.schedule", VLA_FLAG_STRING, &schedule, "NAME", "real-time chunking's prefix weights: exp | linear | ones | zeros"},
        {"rtc.max_guidance_weight", VLA_FLAG_FLOAT, &beta, "B", "real-time chunking's guidance cap beta"},
        {"rtc.no_jacobian", VLA_FLAG_BOOL, &no_jac, NULL, "guide without the vector-Jacobian product (an ablation)"},
    };
    const vla_command_spec spec = {
        "vla eval", NULL, "Evaluate a trained policy in closed loop in a simulator.",
        "Episodes run in lockstep: every re-plan is one batched policy call over all running episodes,\n"
        "environment steps run in parallel. Writes OUTPUT/eval_info.json (aggregates + per episode) and\n"
        "OUTPUT/videos/eval_episode_<i>.mp4. With --eval.inference_delay=D each chunk arrives D steps after\n"
        "its observation (docs/serve.md, \"Real-time chunking\"); the summary gives the actions' jerk overall\n"
        "and where chunks meet.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (pretrained && o.policy_path && strcmp(pretrained, o.policy_path)) {
        fprintf(stderr, "vla: error: vla eval: --policy.path and --policy.pretrained_path name different checkpoints\n");
        return 2;
    }
    if (pretrained) o.policy_path = pretrained;
    if (!o.policy_path) {
        fprintf(stderr, "vla: error: vla eval: --policy.path=DIR is required\n");
        return 2;
    }
    if (!o.env) { /* the simulator the checkpoint was trained for, said aloud */
        char why[2048];
        vla_status ist = vla_eval_infer_env(o.policy_path, o.embodiment, &o.env, why, sizeof why);
        if (ist != VLA_OK) return vla_cli_fail(ist);
        fprintf(stderr, "vla eval: --env.type=%s, from %s\n", o.env, why);
    }
    if ((rc = vla_cli_env(&o.env, task, model)) >= 0) return rc;
    const char *cmd = "vla eval";
    if (!vla_cli_int_in(cmd, "eval.n_episodes", n, 1, 1 << 20) ||
        (vla_flags_given(&spec, &res, "policy.n_action_steps") && !vla_cli_int_in(cmd, "policy.n_action_steps", n_act, 1, 4096)) ||
        (vla_flags_given(&spec, &res, "policy.num_inference_steps") &&
         !vla_cli_int_in(cmd, "policy.num_inference_steps", flow_steps, 1, 1000)) ||
        !vla_cli_int_in(cmd, "eval.n_videos", n_videos, 0, INT_MAX) || !vla_cli_int_in(cmd, "max_steps", max_steps, 0, INT_MAX) ||
        !vla_cli_int_in(cmd, "seed", seed, 0, INT64_MAX) ||
        !vla_cli_int_in(cmd, "video_size", vsize, 16, 4096))
        return 2;
    if (vla_flags_given(&spec, &res, "video_size") && n_videos == 0)
        return vla_cli_ignored(cmd, "video_size", "no videos are written (--eval.n_videos=0)");
    if (job_name && out) return vla_cli_ignored(cmd, "job_name", "it names the default output directory, and --output_dir is given");
    if (overwrite && !out) return vla_cli_ignored(cmd, "overwrite", "the default output directory is always new");
    o.n_episodes = (int)n, o.seed = (uint64_t)seed, o.n_action_steps = (int)n_act, o.max_steps = (int)max_steps;
    o.flow_steps = (int)flow_steps;
    /* a run directory of its own (base/run_dir.h): eval_info.json and the videos of one evaluation */
    char dir[4096], moved[4200], job[256];
    vla_status cst;
    if (out) {
        if (snprintf(dir, sizeof dir, "%s", out) >= (int)sizeof dir) /* cut, it would name another directory */
            return vla_cli_fail(vla_error(VLA_ERR_INVALID_ARG, "eval: --output_dir is %zu bytes long (at most %zu)",
                                          strlen(out), sizeof dir - 1));
        cst = vla_run_dir_claim(dir, overwrite, "", moved, sizeof moved);
        if (cst == VLA_OK && moved[0]) fprintf(stderr, "vla eval: moved the previous %s aside to %s\n", out, moved);
    } else {
        if (!job_name) { /* LeRobot's <env>_<policy>: the checkpoint's directory names the policy */
            const char *p = o.policy_path;
            size_t l = strlen(p), b;
            while (l > 1 && p[l - 1] == '/') l--;
            for (b = l; b > 0 && p[b - 1] != '/'; b--) {}
            int len = (int)(l - b < 200 ? l - b : 200); /* a longer name is cut: it only names the directory */
            if (snprintf(job, sizeof job, "%s_%.*s", o.env, len, p + b) < 0) job[0] = 0;
            job_name = job;
        }
        cst = vla_run_dir_default("eval", job_name, dir, sizeof dir);
    }
    if (cst != VLA_OK) return vla_cli_fail(cst);
    o.n_videos = (int)n_videos, o.video_size = (int)vsize, o.baselines = baselines, o.output_dir = dir;
    o.quiet = true, o.progress = true; /* this command prints its own summary, below */
    if (delay < 0 || delay > 1000 || !(beta > 0)) {
        fprintf(stderr, "vla: error: vla eval: --eval.inference_delay must be 0..1000, --rtc.max_guidance_weight > 0\n");
        return 2;
    }
    o.inference_delay = (int)delay, o.rtc_beta = beta, o.rtc_no_jacobian = no_jac;
    o.chunking = delay > 0 ? VLA_EVAL_RTC : VLA_EVAL_SYNC;
    if ((chunking && vla_eval_chunking_parse(chunking, &o.chunking) != VLA_OK) ||
        vla_rtc_schedule_parse(schedule, &o.rtc_schedule) != VLA_OK) {
        fprintf(stderr, "vla: error: vla eval: %s\n", vla_error_message());
        return 2;
    }
    vla_eval_result r;
    vla_status st = vla_eval_run(&o, &r);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (!json) {
        print_summary(&o, &r, dir);
        vla_eval_result_free(&r);
        return 0;
    }
    /* --json: one object; mean_max_coverage: raw coverage; mean_max_reward: LeRobot's avg_max_reward (PushT:
     * clip(coverage / 0.95)) */
    printf("{\"env\":\"%s\",\"episodes\":%d,\"n_action_steps\":%d,\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,"
           "\"mean_max_reward\":%.4f,\"mean_sum_reward\":%.4f,\"mean_steps\":%.1f,\"inference_delay\":%d,\"chunking\":\"%s\","
           "\"mean_jerk\":%.4f,\"boundary_jerk\":%.4f,\"chunks\":%.2f,\"seconds\":%.2f",
           o.env, r.policy.episodes, r.n_action_steps, r.policy.success_rate, r.policy.mean_max_coverage,
           r.policy.mean_max_reward, r.policy.mean_sum_reward, r.policy.mean_steps, o.inference_delay,
           vla_eval_chunking_name(o.chunking), r.policy.mean_jerk, r.policy.boundary_jerk, r.policy.chunks,
           r.policy.seconds);
    if (r.has_baselines)
        printf(",\"zero_action\":{\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,\"mean_max_reward\":%.4f,"
               "\"mean_sum_reward\":%.4f},\"random\":{\"success_rate\":%.4f,\"mean_max_coverage\":%.4f,"
               "\"mean_max_reward\":%.4f,\"mean_sum_reward\":%.4f}",
               r.zero.success_rate, r.zero.mean_max_coverage, r.zero.mean_max_reward, r.zero.mean_sum_reward,
               r.random.success_rate, r.random.mean_max_coverage, r.random.mean_max_reward, r.random.mean_sum_reward);
    printf(",\"output_dir\":\"%s\",\"eval_info\":\"%s\"}\n", dir, r.eval_info);
    vla_eval_result_free(&r);
    return 0;
}
