/* timer.h — monotonic clocks for rates, ETAs and benchmarks. */
#ifndef VLA_BASE_TIMER_H
#define VLA_BASE_TIMER_H

#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC (arbitrary origin). */
double vla_now_s(void);
/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t vla_now_ns(void);
/* Seconds since the first call of any timer function in this process. */
double vla_elapsed_s(void);

#endif
