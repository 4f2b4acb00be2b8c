/* bench_sim.c — `vla bench sim`: simulator throughput, environment steps per
 * second on one core, with state observations and with 96×96 pixel
 * observations, for each registered environment. One JSON object per line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "cli/cli.h"
#include "sim/env.h"

static vla_status bench_one(const char *name, bool pixels, vla_render_style style, double seconds, int size,
                            double *rate, int64_t *steps) {
    vla_env *env;
    VLA_TRY(vla_env_make(name, &env));
    vla_env_set_render_style(env, style);
    const vla_env_spec *sp = vla_env_get_spec(env);
    uint8_t *rgb = malloc((size_t)size * (size_t)size * 3);
    vla_rng g = vla_rng_stream(1, 2);
    vla_status st = rgb ? VLA_OK : vla_error(VLA_ERR_NOMEM, "bench: out of memory");
    double t0 = vla_now_s(), cmd[2] = {256, 256};
    int64_t n = 0;
    uint64_t seed = 0;
    while (st == VLA_OK) {
        st = vla_env_reset(env, seed++, NULL);
        /* a random walk of the commanded point: the agent moves and touches the block */
        for (int t = 0; st == VLA_OK && t < sp->max_episode_steps; t++) {
            for (int i = 0; i < 2; i++) cmd[i] = fmin(fmax(cmd[i] + 40 * (vla_rng_uniform_f64(&g) - 0.5), 0), 512);
            vla_env_step_result r;
            st = vla_env_step(env, cmd, &r);
            vla_env_obs obs = {.type = pixels ? VLA_OBS_PIXELS_AGENT_POS : VLA_OBS_STATE,
                               .width = size, .height = size, .pixels = rgb};
            if (st == VLA_OK) st = vla_env_observe(env, &obs);
            n++;
            if (r.terminated) break;
        }
        if (vla_now_s() - t0 > seconds) break;
    }
    *rate = n / (vla_now_s() - t0);
    *steps = n;
    free(rgb);
    vla_env_free(env);
    return st;
}

int vla_bench_sim(int argc, char **argv) {
    double seconds = 2.0;
    int64_t size = 96;
    const char *only = NULL;
    bool quick = false;
    const vla_flag flags[] = {
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "0.2 s per measurement (for smoke tests)"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time per measurement"},
        {"size", VLA_FLAG_INT, &size, "PX", "pixel observation size"},
        {"env", VLA_FLAG_STRING, &only, "NAME", "only this environment"},
    };
    const vla_command_spec spec = {"vla bench sim", NULL, "Environment steps per second per core.", NULL, flags,
                                   (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) seconds = 0.2;
    if (size < 8 || size > 2048) {
        fprintf(stderr, "vla: error: --size must be in 8..2048\n");
        return 2;
    }
    for (const char *const *nm = vla_env_names(); *nm; nm++) {
        if (only && strcmp(only, *nm)) continue;
        /* state; pixels drawn as gym-pusht (512 canvas + resize); pixels drawn directly */
        for (int mode = 0; mode < 3; mode++) {
            double rate;
            int64_t steps;
            vla_render_style style = mode == 2 ? VLA_RENDER_SMOOTH : VLA_RENDER_GYM;
            vla_status st = bench_one(*nm, mode > 0, style, seconds, (int)size, &rate, &steps);
            if (st != VLA_OK) return vla_cli_fail(st);
            printf("{\"bench\":\"sim\",\"env\":\"%s\",\"obs\":\"%s\",\"size\":%d,\"render\":\"%s\",\"threads\":1,"
                   "\"steps\":%lld,\"steps_per_s\":%.1f}\n",
                   *nm, mode ? "pixels_agent_pos" : "state", mode ? (int)size : 0,
                   mode == 0 ? "none" : mode == 1 ? "gym" : "smooth", (long long)steps, rate);
            fflush(stdout);
        }
    }
    return 0;
}
