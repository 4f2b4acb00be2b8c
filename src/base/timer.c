/* timer.c — monotonic clocks (see timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/timer.h"

#include <math.h>
#include <stdio.h>
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

const char *vla_format_hms(double seconds, char *buf, size_t cap) {
    if (!isfinite(seconds) || seconds < 0 || seconds > 1e9) {
        snprintf(buf, cap, "--:--:--");
        return buf;
    }
    long long s = (long long)(seconds + 0.5);
    snprintf(buf, cap, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    return buf;
}

double vla_eta_s(double elapsed_s, int64_t done, int64_t left) {
    if (done <= 0 || !(elapsed_s >= 0)) return -1;
    if (left <= 0) return 0;
    return elapsed_s / (double)done * (double)left;
}
