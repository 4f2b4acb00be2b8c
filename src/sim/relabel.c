/* relabel.c — the expert taking over from a policy's states (see relabel.h). */
#include "sim/relabel.h"

#include <stdlib.h>
#include <string.h>

#include "sim/env.h"

void vla_sim_branches_free(vla_sim_branch *b, int n) {
    for (int i = 0; b && i < n; i++) free(b[i].actions);
    free(b);
}

/* One branch at step t: replay the rollout's first t actions, then the expert. */
static vla_status branch_at(vla_env *env, vla_sim_policy *expert, uint64_t seed, const double *actions, int t,
                            int max_steps, double *buf, int *steps, bool *success) {
    int A = vla_env_get_spec(env)->action_dim;
    VLA_TRY(vla_sim_replay_prefix(env, seed, actions, t));
    for (int64_t i = 0; i < (int64_t)t * A; i++) buf[i] = (float)actions[i]; /* the prefix as record replays it */
    vla_env_step_result r;
    vla_sim_policy_reset(expert, env, seed);
    *success = false;
    int s = t;
    for (; s < max_steps && !*success; s++) {
        double a[VLA_ENV_MAX_DIM];
        VLA_TRY(vla_sim_policy_act(expert, env, a));
        for (int i = 0; i < A; i++) buf[(size_t)s * A + i] = (float)a[i];
        VLA_TRY(vla_env_step(env, buf + (size_t)s * A, &r));
        *success = r.info.is_success;
    }
    *steps = s;
    return VLA_OK;
}

vla_status vla_sim_expert_branches(const char *env_name, uint64_t seed, const double *actions, int steps, int every,
                                   int max_branches, int max_steps, int round, vla_sim_branch **out, int *n) {
    if (every < 1) return vla_error(VLA_ERR_INVALID_ARG, "dagger: branch spacing must be at least 1 step");
    vla_env *env = NULL;
    vla_sim_policy *expert = NULL;
    VLA_TRY(vla_env_make(env_name, &env));
    const vla_env_spec *spec = vla_env_get_spec(env);
    if (max_steps <= 0) max_steps = spec->max_episode_steps;
    double *buf = malloc((size_t)max_steps * spec->action_dim * sizeof *buf);
    vla_status st = buf ? vla_sim_policy_make("expert", spec, &expert)
                        : vla_error(VLA_ERR_NOMEM, "dagger: out of memory");
    int made = 0;
    for (int t = every; st == VLA_OK && t < steps && t < max_steps && made < max_branches; t += every) {
        int len = 0;
        bool ok = false;
        st = branch_at(env, expert, seed, actions, t, max_steps, buf, &len, &ok);
        if (st != VLA_OK || !ok) continue;
        vla_sim_branch *g = realloc(*out, (size_t)(*n + 1) * sizeof *g);
        double *copy = malloc((size_t)len * spec->action_dim * sizeof *copy);
        if (!g || !copy) {
            free(copy);
            if (g) *out = g;
            st = vla_error(VLA_ERR_NOMEM, "dagger: out of memory");
            break;
        }
        *out = g;
        memcpy(copy, buf, (size_t)len * spec->action_dim * sizeof *copy);
        g[*n] = (vla_sim_branch){seed, copy, len, t, round};
        (*n)++;
        made++;
    }
    free(buf);
    vla_sim_policy_free(expert);
    vla_env_free(env);
    return st;
}
