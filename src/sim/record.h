/* record.h — record scripted-policy episodes of a simulator as a LeRobot v3.0
 * dataset (the data `vla train` learns from), through data/lerobot.h.
 *
 * Features, as LeRobot's lerobot/pusht and aloha_sim_transfer_cube_*:
 * the cameras' videos under the env's keys (PushT: observation.image,
 * default 96×96; ALOHA: observation.images.top and the other cameras asked
 * for, default 480×640 as LeRobot's), observation.state (PushT: the agent
 * position; ALOHA: the 14 joint positions, named left_waist … right_gripper
 * as LeRobot's), observation.environment_state (privileged: PushT's 16-D
 * block keypoints, ALOHA's cube pose; left out with no_env_state), action
 * (named as observation.state), next.reward, next.done, next.success; one task
 * string (the env's); fps = the env's control rate; robot_type the env's.
 *
 * Episodes first run in parallel (--jobs) with their actions kept, in waves
 * sized to the episodes still missing; the ones to keep (the first successful
 * ones in seed order, unless keep_failures) are then replayed in order
 * — trajectories are a pure function of (seed, actions) — rendering each
 * observation and writing frames. The dataset appears at `out` complete or
 * not at all. */
#ifndef VLA_SIM_RECORD_H
#define VLA_SIM_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/relabel.h"

typedef struct {
    const char *env;        /* "pusht", "reach" */
    const char *policy;     /* "expert" (default) or "random" */
    const char *out;        /* dataset root; must not exist */
    int episodes;           /* episodes to keep */
    int max_attempts;       /* give up after this many episodes run (0: 4 × episodes) */
    uint64_t seed;          /* episode i of the run uses seed + i */
    int jobs;               /* threads for the parallel run (0: OpenMP default) */
    int image_size;         /* square video size (0: the env's default size, else 96); must be even */
    int image_height, image_width; /* > 0: a non-square size instead of image_size (even sides) */
    const char *cameras;    /* comma-separated camera names or keys to record (NULL: the env's first camera);
                               each becomes its LeRobot key (aloha: observation.images.top, …) */
    bool no_env_state;      /* leave out observation.environment_state (privileged: PushT's keypoints, the
                               ALOHA cube's pose), for a dataset with LeRobot's features only */
    bool keep_failures;     /* keep unsuccessful episodes too */
    const char *video_codec;/* NULL: the writer's default (libsvtav1) */
    bool progress;          /* progress line on stderr */
    double action_noise;    /* > 0: noise injection (vla_sim_run_opts.action_noise): episodes run with noisy
                               actions, the dataset's action is the policy's noise-free one (so it does
                               not replay the episode: the executed actions are not stored) */
    /* DAgger (relabel.h): after the expert's episodes, one episode per branch, frames from its branch
     * point on; with branches every frame also gets an int64 `dagger.round` (0: the expert's own
     * episodes, k: a branch of round k). NULL/0: none. */
    const vla_sim_branch *branches;
    int n_branches;
} vla_sim_record_opts;

typedef struct {
    int episodes_kept, episodes_run;
    int episodes_failed;    /* of those run, unsuccessful (or diverged when replayed) and discarded; the rest of
                               episodes_run − episodes_kept succeeded but were not needed (a wave runs a margin) */
    int branches_kept;      /* of opts.branches (one that no longer succeeds under f32 replay is dropped) */
    int64_t frames;
    double success_rate;    /* over all episodes run */
    double seconds;
} vla_sim_record_result;

vla_status vla_sim_record(const vla_sim_record_opts *opts, vla_sim_record_result *out);

#endif
