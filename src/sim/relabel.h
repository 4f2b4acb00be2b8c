/* relabel.h — DAgger's correction data: the scripted expert taking over from
 * states a learned policy visited (`vla dagger`, docs/train.md "DAgger").
 *
 * WHICH STATES. A policy rollout (seed, its executed actions) is cut at
 * every `every`-th step t (t = every, 2·every, … while the rollout lasts;
 * rollouts that succeeded contribute none: nothing to correct). The state at
 * t is the policy's own: reached by replaying its actions from the seed —
 * trajectories are a function of (seed, actions), up to Chipmunk solving
 * contacts in an order that follows memory addresses (replays in fresh
 * spaces agree to ~1e-5 px) — so no state needs storing. A branch whose
 * expert success does not survive the dataset's replay is dropped there.
 *
 * WHAT THE EXPERT DOES THERE. A fresh expert is reset at that state (its
 * plan chosen from scratch there, its commanded point seeded with the
 * agent's position and velocity) and acts until success or the step limit.
 * Its first action is the label DAgger asks for — what the expert does in
 * the state the policy got itself into — and the rest of its run shows how
 * it recovers from there. A branch is kept only when the expert succeeds.
 *
 * WHAT IS RECORDED. A branch becomes one new episode: frames from step t to
 * the end, observations rendered by replay exactly as `vla sim record` does,
 * actions the expert's (record.h, `branches`). */
#ifndef VLA_SIM_RELABEL_H
#define VLA_SIM_RELABEL_H

#include <stdint.h>

#include "base/status.h"

typedef struct {
    uint64_t seed;     /* the rollout's env seed */
    double *actions;   /* steps × action_dim: the rollout's first `first` actions, then the expert's (malloc'd) */
    int steps;
    int first;         /* the branch point: frames before it are replayed, not recorded */
    int round;         /* DAgger round that produced it (recorded as dagger.round) */
} vla_sim_branch;

/* Expert branches from one rollout (env `env`, `seed`, its `steps` executed
 * actions): up to `max_branches` at t = every, 2·every, … < steps, each run
 * until success or `max_steps` in all (0: the env's limit). Successful ones
 * are appended to *out (grown with realloc; *n counts them). */
vla_status vla_sim_expert_branches(const char *env, uint64_t seed, const double *actions, int steps, int every,
                                   int max_branches, int max_steps, int round, vla_sim_branch **out, int *n);
void vla_sim_branches_free(vla_sim_branch *b, int n);

#endif
