/* mixture.h — sampling weights over a mixture of datasets, as one index
 * space the distributed sampler shuffles.
 *
 * The sampler draws indices 0..N−1 each epoch (N = the datasets' rows
 * together). The mixture cuts that range into one block per dataset whose
 * size is the dataset's quota, round(w_d · N) by largest remainder so the
 * quotas sum to N; index v in dataset d's block stands for row
 *     (⌊(v − start_d) · rows_d / quota_d⌋ + shift_d(epoch)) mod rows_d
 * of it. So within every epoch dataset d is drawn exactly quota_d times —
 * its weight, up to rounding, and not merely in expectation — and its rows
 * evenly: an up-weighted dataset repeats each row ⌊quota/rows⌋ or ⌈…⌉ times,
 * a down-weighted one takes every (rows/quota)-th row from an offset that
 * moves each epoch (shift_d, a pure function of (seed, epoch, d)), so over
 * epochs every row is seen. Without weights the quotas are the row counts
 * and the mixture is the datasets concatenated, each row once per epoch.
 * Everything is a pure function of (seed, epoch, v): resuming, the rank count
 * and the worker count change nothing (distributed/sampler.h). */
#ifndef VLA_DATA_MIXTURE_H
#define VLA_DATA_MIXTURE_H

#include <stdint.h>

#include "base/status.h"

#define VLA_MIXTURE_MAX 16

typedef struct {
    int n;
    uint64_t seed;
    int64_t total;                       /* N: the rows of all datasets */
    int64_t rows[VLA_MIXTURE_MAX];       /* rows of dataset d */
    int64_t first_row[VLA_MIXTURE_MAX];  /* its row 0 in the global row space (datasets in order) */
    int64_t quota[VLA_MIXTURE_MAX];      /* indices per epoch that stand for dataset d */
    int64_t start[VLA_MIXTURE_MAX + 1];  /* its block [start_d, start_d + quota_d) */
    double weight[VLA_MIXTURE_MAX];      /* normalised to sum 1 */
} vla_mixture;

/* weights: n positive finite numbers (any scale), or NULL for the datasets'
 * sizes. Fails when a weight is not positive or so small that its dataset
 * would get no index of an epoch. */
vla_status vla_mixture_init(vla_mixture *m, int n, const int64_t *rows, const double *weights, uint64_t seed);
/* The dataset and the global row that sampler index v of `epoch` stands for. */
int64_t vla_mixture_row(const vla_mixture *m, int64_t epoch, int64_t v, int *dataset);

/* "0.7,0.3" into n weights (n must match). */
vla_status vla_mixture_parse_weights(const char *text, int n, double *weights);

#endif
