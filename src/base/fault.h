/* fault.h — named fault points for tests, in the manner of SQLite's
 * sqlite3FaultSim(): production code calls vla_fault_at(point, n) once at
 * each place a test may want to break (n counts something there, such as the
 * training step), and acts on what it returns; a test — or the CLI's testing
 * flags (`vla train --crash_at_step` …) — arms faults through one setter.
 *
 * Off by default: with nothing armed vla_fault_at is one branch on a global.
 * Arming is not thread-safe: arm before starting the code under test, clear
 * after (the points themselves are called from one thread each).
 *
 * Byte-level I/O faults (the N-th byte written fails with EIO) are a
 * different mechanism with a byte budget: vla_fault_inject_write in
 * base/fsutil.h. */
#ifndef VLA_BASE_FAULT_H
#define VLA_BASE_FAULT_H

#include <stdint.h>

/* Where a fault can fire; each point says what its count n is. */
typedef enum {
    VLA_FAULT_TRAIN_GRADS,    /* trainer: step n's gradients are summed, before the update */
    VLA_FAULT_TRAIN_STEP_END, /* trainer: step n is done (updated, logged, checkpointed if due) */
    VLA_FAULT_SHARD_FRAME,    /* data prepare: this process has written n frames into shards */
    VLA_FAULT_TRAIN_FP8_AMAX, /* trainer: step n's FP8 amaxes are all-reduced, before the scale update */
    VLA_FAULT_N_POINTS
} vla_fault_point;

/* What an armed fault does when it fires. */
typedef enum {
    VLA_FAULT_NONE = 0, /* nothing fired */
    VLA_FAULT_POISON,   /* the caller makes its data non-finite (e.g. a NaN into the gradients) */
    VLA_FAULT_STOP,     /* the caller stops at once, writing nothing more, as if killed */
    VLA_FAULT_KILL,     /* never returned: the process SIGKILLs itself inside vla_fault_at */
} vla_fault_action;

/* The last count a fault can be armed to: "from `first` on". */
#define VLA_FAULT_FOREVER INT64_MAX

/* Arm `action` at `point` for every count n in [first, last]. Several faults
 * may be armed (at most 8 in all); when more than one matches, KILL wins,
 * else the one armed first. */
void vla_fault_set(vla_fault_point point, vla_fault_action action, int64_t first, int64_t last);
/* Disarm every fault. */
void vla_fault_clear(void);

/* How many faults are armed (read by vla_fault_at; change it only through
 * vla_fault_set/vla_fault_clear). */
extern int vla_fault_armed;
/* The slow path of vla_fault_at. */
vla_fault_action vla_fault_fire(vla_fault_point point, int64_t n);

/* What fires at `point` for count `n` (VLA_FAULT_NONE when nothing is armed). */
static inline vla_fault_action vla_fault_at(vla_fault_point point, int64_t n) {
    return vla_fault_armed ? vla_fault_fire(point, n) : VLA_FAULT_NONE;
}

#endif
