/* fault.c — the table of armed fault points (see fault.h). */
#include "base/fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_FAULTS 8

typedef struct {
    vla_fault_point point;
    vla_fault_action action;
    int64_t first, last;
} armed_fault;

static armed_fault faults[MAX_FAULTS];
int vla_fault_armed;

void vla_fault_set(vla_fault_point point, vla_fault_action action, int64_t first, int64_t last) {
    if (action == VLA_FAULT_NONE || first > last) return; /* an empty range: nothing can fire */
    if (vla_fault_armed == MAX_FAULTS) {
        /* more test faults than a test can mean: a broken test, not bad input */
        fprintf(stderr, "vla_fault_set: more than %d faults armed\n", MAX_FAULTS);
        abort();
    }
    faults[vla_fault_armed++] = (armed_fault){point, action, first, last};
}

void vla_fault_clear(void) { vla_fault_armed = 0; }

vla_fault_action vla_fault_fire(vla_fault_point point, int64_t n) {
    vla_fault_action found = VLA_FAULT_NONE;
    for (int i = 0; i < vla_fault_armed; i++) {
        const armed_fault *f = &faults[i];
        if (f->point != point || n < f->first || n > f->last) continue;
        if (f->action == VLA_FAULT_KILL) {
            /* a real kill: no atexit handlers, no cleanup; what reached the
             * files by now is all that survives */
            fflush(NULL);
            raise(SIGKILL);
        }
        if (found == VLA_FAULT_NONE) found = f->action;
    }
    return found;
}
