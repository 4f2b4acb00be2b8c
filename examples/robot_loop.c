/* robot_loop.c — a robot's control loop on libvla's public API (vla.h),
 * with the PushT simulator standing in for the robot: load a trained
 * checkpoint, and every few control steps hand the policy the current
 * observation and execute the first actions of the chunk it returns.
 *
 * Build against an installed libvla (make install PREFIX=DIR):
 *   cc robot_loop.c -o robot_loop $(pkg-config --cflags --libs vla) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir vla)
 * Run:
 *   ./robot_loop CHECKPOINT [EPISODES=1] [SEED=100000] [ACTIONS_PER_CHUNK=4]
 * Prints one JSON line per episode (steps, success, best coverage, the first
 * action); episode i starts from seed SEED+i and draws its flow noise with
 * the keys `vla eval` uses, so `vla eval --seed=SEED` on one episode runs the
 * same trajectory. */
#include <stdio.h>
#include <stdlib.h>

#include <vla.h>

static int fail(const char *what) {
    fprintf(stderr, "robot_loop: %s: %s\n", what, vla_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CHECKPOINT [EPISODES] [SEED] [ACTIONS_PER_CHUNK (default: the checkpoint's)]\n", argv[0]);
        return 2;
    }
    int episodes = argc > 2 ? atoi(argv[2]) : 1, n_act = argc > 4 ? atoi(argv[4]) : 0;
    unsigned long long seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
    vla_robot_options opt = {NULL, 0, seed, 0};
    vla_robot *robot;
    if (vla_robot_open(argv[1], &opt, &robot) != VLA_RC_OK) return fail("loading the checkpoint");
    vla_robot_info info;
    vla_robot_get_info(robot, &info);
    if (n_act == 0) n_act = info.n_action_steps; /* what the checkpoint was trained to execute */
    if (n_act < 1 || n_act > info.horizon) n_act = info.horizon;
    vla_simulator *sim;
    if (vla_simulator_open("pusht", &sim) != VLA_RC_OK) return fail("opening the simulator");
    float *chunk = malloc(sizeof(float) * (size_t)(info.horizon * info.action_dim));
    if (!chunk) return 1;
    int successes = 0;
    for (int ep = 0; ep < episodes; ep++) {
        if (vla_simulator_reset(sim, seed + (unsigned long long)ep) != VLA_RC_OK) return fail("reset");
        vla_robot_reset(robot);
        int done = 0, success = 0, steps = 0;
        double coverage = 0, best = 0;
        float first[2] = {0, 0};
        for (long replan = 0; !done; replan++) {
            vla_robot_obs obs;
            if (vla_simulator_observe(sim, info.n_cameras ? info.image_size : 0, &obs) != VLA_RC_OK) return fail("observe");
            obs.noise_key = (long long)ep * 1000003LL + replan; /* vla eval's keys */
            if (vla_robot_act(robot, &obs, NULL, chunk) != VLA_RC_OK) return fail("act");
            if (replan == 0) first[0] = chunk[0], first[1] = chunk[1];
            for (int k = 0; k < n_act && !done; k++) {
                if (vla_simulator_step(sim, chunk + k * info.action_dim, &done, &success, &coverage) != VLA_RC_OK)
                    return fail("step");
                steps++;
                if (coverage > best) best = coverage;
                /* the steps between re-plans still enter the policy's state history */
                if (!done && k + 1 < n_act) {
                    if (vla_simulator_observe(sim, info.n_cameras ? info.image_size : 0, &obs) != VLA_RC_OK ||
                        vla_robot_observe(robot, &obs) != VLA_RC_OK)
                        return fail("observe between re-plans");
                }
            }
        }
        successes += success;
        printf("{\"episode\":%d,\"seed\":%llu,\"steps\":%d,\"success\":%s,\"max_coverage\":%.6f,\"first_action\":[%.6f,%.6f]}\n",
               ep, seed + (unsigned long long)ep, steps, success ? "true" : "false", best, first[0], first[1]);
    }
    fprintf(stderr, "robot_loop: %s (%s), %d/%d episodes succeeded\n", info.config, info.family, successes, episodes);
    free(chunk);
    vla_simulator_close(sim);
    vla_robot_close(robot);
    return 0;
}
