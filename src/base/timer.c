/* timer.c — monotonic clocks (see timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/timer.h"

#include <time.h>

uint64_t vla_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double vla_now_s(void) { return (double)vla_now_ns() * 1e-9; }

double vla_elapsed_s(void) {
    static uint64_t start; /* first caller wins; a benign race only shifts the origin */
    uint64_t now = vla_now_ns();
    if (start == 0) start = now;
    return (double)(now - start) * 1e-9;
}
