/* timer.h — monotonic clocks for rates, ETAs and benchmarks. */
#ifndef VLA_BASE_TIMER_H
#define VLA_BASE_TIMER_H

#include <stddef.h>
#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC (arbitrary origin). */
double vla_now_s(void);
/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t vla_now_ns(void);
/* Seconds since the first call of any timer function in this process. */
double vla_elapsed_s(void);
/* Seconds as h:mm:ss ("--:--:--" when unknown or negative), for ETAs. */
const char *vla_format_hms(double seconds, char *buf, size_t cap);
/* Remaining time from the pace so far: elapsed / done · left (-1: unknown). */
double vla_eta_s(double elapsed_s, int64_t done, int64_t left);

#endif
