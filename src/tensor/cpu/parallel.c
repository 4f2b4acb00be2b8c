/* parallel.c — host work on a team (parallel.h): the one place outside the
 * CPU kernels where OpenMP runs, for host-side work the layers above hand
 * over (drawing initial weights on the host). */
#include "tensor/cpu/parallel.h"

void vla_host_parallel_for(int64_t n, bool team, void (*fn)(void *ctx, int64_t i), void *ctx) {
#pragma omp parallel for schedule(dynamic, 1) if (team)
    for (int64_t i = 0; i < n; i++) fn(ctx, i);
}
