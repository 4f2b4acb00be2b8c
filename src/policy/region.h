/* region.h — a captured region (tensor/ops.h, run_captured) whose body
 * leaves host state behind: the blocks it carves from an arena and the
 * pointers into them that the caller reads afterwards (GR00T's prefix: the
 * VL tokens and their cross-attention K/V, policy/groot.c).
 *
 * A replayed region does not call its body, so that state would be
 * missing. It is a function of the key, though — the key names the arena's
 * position and every size the body allocates — so the first call that runs
 * the body keeps its outputs and the arena position it ended at, per key,
 * and a replay restores them: the arena moves forward over the blocks the
 * body would have carved (vla_arena_advance), and the outputs are copied
 * back. Where nothing can be restored (the entry was evicted, or the arena
 * is not where it was), the body runs again plainly: the same ops on the
 * same memory, the same results, one chunk slower.
 *
 * On the CPU no backend skips a body (checked runs it to compare), so the
 * restoring path is proven by vla_region_emulate_replays: every call that
 * has a kept entry then forgets what its body left (the arena rewound, the
 * outputs overwritten) and restores it as a replay does — a key that does
 * not pin the body's layout gives wrong pointers, and the policy's actions
 * then differ from a fresh policy's (tests/policy/test_groot.c). */
#ifndef VLA_POLICY_REGION_H
#define VLA_POLICY_REGION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/status.h"
#include "tensor/key_cache.h"
#include "tensor/ops.h"

typedef struct vla_region_outs vla_region_outs; /* each key's kept outputs (created on first use) */

/* body(ctx) as a captured region under key (released here), carving from
 * `arena` and leaving out_bytes of host output at `out`. A failed key
 * runs the body plainly. */
vla_status vla_region_run(const vla_ops *ops, vla_region_outs **outs, vla_key *key, vla_arena *arena,
                          vla_status (*body)(void *ctx), void *ctx, void *out, size_t out_bytes);
void vla_region_outs_free(vla_region_outs *o);
/* A training step's regions see a new batch every call, and where the
 * batches' layouts do not repeat (prompts of many lengths, packing to a
 * token budget) every call is a key of its own: three plain calls before a
 * recording, and a device's recordings holding memory, for nothing. A
 * trial counts the calls and the new keys among them; after
 * VLA_REGION_TRIAL_CALLS calls with more than half of them new it stops for
 * good, said once, naming `who`. */
#define VLA_REGION_TRIAL_CALLS 16
typedef struct {
    int64_t calls, new_keys;
    bool stopped;
} vla_region_trial;
/* Counts key (new when outs has no entry for it); a stopped trial releases it and marks it failed,
 * so the caller's region runs its body plainly. */
void vla_region_trial_check(vla_region_trial *t, vla_region_outs *outs, vla_key *key, const char *who);
/* Whether a training step's regions run under trial t: not with VLA_TRAIN_GRAPHS=0, not once t
 * has given up. FP8 runs them too: its scales and amaxes change every step but live in backend memory
 * at fixed addresses, read and written by the ops alone (the scale update runs after the step). */
bool vla_train_regions_open(const vla_region_trial *t);

/* Whether a training step runs its captured regions (policy/groot.c, policy/pi05.c): on unless
 * VLA_TRAIN_GRAPHS=0 (gpu_check's comparison on a device; the kill switch); tests set it. */
bool vla_train_regions_on(void);
void vla_train_regions_set(bool on);

/* Tests: restore the host state of every call that can be, as a replay
 * would (above). Off by default. */
void vla_region_emulate_replays(bool on);
/* Calls restored so far (replays, and emulated ones). */
long vla_region_restored(void);

#endif
