/* np_random.h — numpy's legacy RandomState (MT19937 + its randint and randn),
 * so that a PushT seed gives the same initial state as gym-pusht. */
#ifndef VLA_SIM_NP_RANDOM_H
#define VLA_SIM_NP_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint32_t key[624];
    int pos;
    bool has_gauss;
    double gauss;
} vla_np_random;

/* np.random.RandomState(seed) for an integer seed. */
void vla_np_random_seed(vla_np_random *r, uint32_t seed);
uint32_t vla_np_random_u32(vla_np_random *r);
/* random_sample(): 53-bit double in [0, 1). */
double vla_np_random_double(vla_np_random *r);
/* randint(low, high) with the default int64 dtype: masked rejection sampling. */
int64_t vla_np_random_randint(vla_np_random *r, int64_t low, int64_t high);
/* randn(): the legacy polar Box–Muller with its cached second value. */
double vla_np_random_randn(vla_np_random *r);

#endif
