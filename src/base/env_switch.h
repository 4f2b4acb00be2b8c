/* env_switch.h — an on/off switch read from the environment once: on unless the
 * variable is exactly "0" (VLA_PRODUCER_CASTS, VLA_FP8_SHARED_CASTS,
 * VLA_TRAIN_GRAPHS, VLA_WEIGHT_COPIES: the A/B switches of docs/cuda.md),
 * decided at the first use and kept in *state (-1: not read yet), which a
 * test may set to 0 or 1 to override the environment. */
#ifndef VLA_BASE_ENV_SWITCH_H
#define VLA_BASE_ENV_SWITCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool vla_env_switch(atomic_int *state, const char *name) {
    int on = atomic_load(state);
    if (on < 0) {
        const char *e = getenv(name);
        on = !(e && !strcmp(e, "0"));
        atomic_store(state, on);
    }
    return on;
}

#endif
