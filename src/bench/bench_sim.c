/* bench_sim.c — `vla bench sim`: simulator throughput, environment steps per
 * second on one core, with state observations and with pixel observations,
 * for each registered environment, then episodes in parallel on every core.
 * One JSON object per line.
 *
 * The 2-D envs are driven by a random walk of the commanded point (the agent
 * moves and touches the block). ALOHA replays the scripted expert's own
 * episodes (recorded first, untimed): reaching, grasps, the hand-over — the
 * contacts its episodes really have. For an env whose engine reports its own
 * time (ALOHA: the seconds inside mj_step and inside mjr_render +
 * mjr_readPixels), each row also gives that floor and vla.c's overhead over
 * it: total time / engine time − 1. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/timer.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "sim/env.h"

/* Actions to drive `name` with: the expert's episodes for a 3-D env, else none (a random walk). */
typedef struct {
    double *actions; /* n_eps × max_steps × action_dim */
    int *steps;
    int n_eps, max_steps, dim;
} drive;

static vla_status drive_make(const char *name, drive *dv) {
    memset(dv, 0, sizeof *dv);
    const vla_env_spec *sp = vla_env_find(name)->spec;
    if (sp->n_cameras == 0) return VLA_OK;
    vla_sim_run_opts o = {.env = name, .policy = "expert", .episodes = 8, .seed = 0, .jobs = 1, .keep_actions = 8};
    vla_sim_run_result r;
    VLA_TRY(vla_sim_run(&o, &r));
    dv->n_eps = r.episodes, dv->max_steps = sp->max_episode_steps, dv->dim = sp->action_dim;
    dv->actions = malloc(sizeof(double) * (size_t)dv->n_eps * dv->max_steps * dv->dim);
    dv->steps = malloc(sizeof(int) * (size_t)dv->n_eps);
    if (!dv->actions || !dv->steps) {
        vla_sim_run_result_free(&r);
        return vla_error(VLA_ERR_NOMEM, "bench: out of memory");
    }
    for (int e = 0; e < dv->n_eps; e++) {
        dv->steps[e] = r.per_episode[e].steps;
        memcpy(dv->actions + (size_t)e * dv->max_steps * dv->dim, r.per_episode[e].actions,
               sizeof(double) * (size_t)r.per_episode[e].steps * dv->dim);
    }
    vla_sim_run_result_free(&r);
    return VLA_OK;
}

typedef struct {
    int64_t steps;
    double seconds, step_s, render_s;
} bench_out;

/* Steps with observations (pixels: camera 0 at w×h) for `seconds`, on this thread. */
static vla_status bench_one(const char *name, const drive *dv, bool pixels, vla_render_style style, double seconds,
                            int w, int h, uint64_t seed0, bench_out *out) {
    vla_env *env;
    VLA_TRY(vla_env_make(name, &env));
    vla_env_set_render_style(env, style);
    const vla_env_spec *sp = vla_env_get_spec(env);
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    vla_rng g = vla_rng_stream(1, 2 + seed0);
    vla_status st = rgb ? VLA_OK : vla_error(VLA_ERR_NOMEM, "bench: out of memory");
    double t0 = vla_now_s(), cmd[VLA_ENV_MAX_DIM] = {256, 256};
    int64_t n = 0;
    uint64_t ep = seed0;
    while (st == VLA_OK) {
        int e = dv->n_eps ? (int)(ep % (uint64_t)dv->n_eps) : 0;
        st = vla_env_reset(env, dv->n_eps ? (uint64_t)e : ep, NULL);
        ep++;
        int len = dv->n_eps ? dv->steps[e] : sp->max_episode_steps;
        for (int t = 0; st == VLA_OK && t < len; t++) {
            const double *a = cmd;
            if (dv->n_eps) {
                a = dv->actions + ((size_t)e * dv->max_steps + t) * dv->dim;
            } else { /* a random walk of the commanded point: the agent moves and touches the block */
                for (int i = 0; i < 2; i++) cmd[i] = fmin(fmax(cmd[i] + 40 * (vla_rng_uniform_f64(&g) - 0.5), 0), 512);
            }
            vla_env_step_result r;
            st = vla_env_step(env, a, &r);
            vla_env_obs obs = {.type = pixels ? VLA_OBS_PIXELS_AGENT_POS : VLA_OBS_STATE, .width = w, .height = h,
                               .pixels = rgb};
            if (st == VLA_OK) st = vla_env_observe(env, &obs);
            n++;
            if (r.terminated) break;
        }
        if (vla_now_s() - t0 > seconds) break;
    }
    out->seconds = vla_now_s() - t0;
    out->steps = n;
    vla_env_engine_seconds(env, &out->step_s, &out->render_s);
    free(rgb);
    vla_env_free(env);
    return st;
}

static void print_row(const char *name, const char *obs, int w, int h, const char *render, int threads,
                      const bench_out *b, int substeps) {
    double rate = b->steps / b->seconds;
    printf("{\"bench\":\"sim\",\"env\":\"%s\",\"obs\":\"%s\",\"size\":%d,\"width\":%d,\"height\":%d,\"render\":\"%s\","
           "\"threads\":%d,\"steps\":%lld,\"steps_per_s\":%.1f,\"steps_per_s_per_core\":%.1f",
           name, obs, w == h ? w : 0, w, h, render, threads, (long long)b->steps, rate, rate / threads);
    if (b->step_s > 0) {
        /* the engine's own time is summed over threads: compare per thread */
        double engine = (b->step_s + b->render_s) / threads;
        printf(",\"physics_steps_per_s\":%.1f,\"mj_step_s\":%.3f,\"mjr_render_s\":%.3f,\"engine_steps_per_s\":%.1f,"
               "\"overhead\":%.4f",
               rate * substeps, b->step_s / threads, b->render_s / threads, b->steps / engine, b->seconds / engine - 1);
        if (strcmp(obs, "state")) printf(",\"frames_per_s\":%.1f,\"mjr_frames_per_s\":%.1f", rate,
                                         b->render_s > 0 ? b->steps / (b->render_s / threads) : 0.0);
    }
    printf("}\n");
    fflush(stdout);
}

int vla_bench_sim(int argc, char **argv) {
    double seconds = 2.0;
    int64_t size = 96, threads = 0;
    const char *only = NULL;
    bool quick = false;
    const vla_flag flags[] = {
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "0.2 s per measurement (for smoke tests)"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time per measurement"},
        {"size", VLA_FLAG_INT, &size, "PX", "pixel observation size (square; aloha also renders 640x480)"},
        {"env", VLA_FLAG_STRING, &only, "NAME", "only this environment"},
        {"threads", VLA_FLAG_INT, &threads, "N", "episodes in parallel in the last rows (default: every core)"},
    };
    const vla_command_spec spec = {
        "vla bench sim", NULL, "Environment steps per second per core, and episodes in parallel on every core.",
        "ALOHA rows also give the time inside mj_step and mjr_render alone (the floor) and vla.c's overhead over it.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) seconds = 0.2;
    if (size < 8 || size > 2048) {
        fprintf(stderr, "vla: error: --size must be in 8..2048\n");
        return 2;
    }
    if (only && !vla_env_find(only)) {
        fprintf(stderr, "vla: error: --env: unknown environment '%s'\n", only);
        return 2;
    }
    int nth = threads > 0 ? (int)threads : omp_get_max_threads();
    for (const char *const *nm = vla_env_names(); *nm; nm++) {
        if (only && strcmp(only, *nm)) continue;
        const vla_env_spec *sp = vla_env_find(*nm)->spec;
        bool three_d = sp->n_cameras > 0;
        int substeps = three_d ? 10 : 1; /* ALOHA: 10 physics steps of 2 ms per 50 Hz action */
        drive dv;
        vla_status st = drive_make(*nm, &dv);
        if (st != VLA_OK) return vla_cli_fail(st);
        /* state; pixels (2-D: drawn as gym-pusht, 512 canvas + resize, and drawn directly; 3-D: the top
         * camera at --size and at LeRobot's 640x480); then state and pixels with episodes on every core */
        int n_modes = three_d ? 3 : 3;
        for (int mode = 0; mode < n_modes + 2 && st == VLA_OK; mode++) {
            bool par = mode >= n_modes, pixels = par ? mode == n_modes + 1 : mode > 0;
            int w = (int)size, h = (int)size;
            if (three_d && mode == 2) w = sp->default_width, h = sp->default_height;
            vla_render_style style = !three_d && mode == 2 ? VLA_RENDER_SMOOTH : VLA_RENDER_GYM;
            const char *render = !pixels ? "none" : three_d ? "mujoco" : mode == 2 ? "smooth" : "gym";
            int T = par ? nth : 1;
            bench_out per[64] = {{0}};
            vla_status ts[64];
            if (T > 64) T = 64;
#pragma omp parallel for num_threads(T) schedule(static, 1)
            for (int i = 0; i < T; i++) ts[i] = bench_one(*nm, &dv, pixels, style, seconds, w, h, (uint64_t)i * 1000, &per[i]);
            bench_out b = {0};
            for (int i = 0; i < T; i++) {
                if (ts[i] != VLA_OK) st = ts[i];
                b.steps += per[i].steps, b.step_s += per[i].step_s, b.render_s += per[i].render_s;
                if (per[i].seconds > b.seconds) b.seconds = per[i].seconds;
            }
            if (st == VLA_OK) print_row(*nm, pixels ? "pixels_agent_pos" : "state", pixels ? w : 0, pixels ? h : 0, render, T, &b, substeps);
        }
        free(dv.actions), free(dv.steps);
        if (st != VLA_OK) return vla_cli_fail(st);
    }
    return 0;
}
