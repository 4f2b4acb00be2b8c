/* micro_batches.h — the trainer's micro-batches, as the loader's index
 * source (train/loader.h): the distributed sampler walked in job order.
 * A sample's key is its position in the global stream (epoch·n + position
 * in the epoch's order), the same whatever the rank count. A mixture maps
 * each index to the global row it stands for (data/mixture.h).
 *
 * Micro-batches: `accum` of `B` samples each, in the sampler's order; or,
 * with a token budget, this rank's B·accum samples of the step packed first-
 * fit decreasing into micro-batches of at most `budget` tokens (the same
 * samples and keys, so the same step up to the order of the sums). */
#ifndef VLA_TRAIN_MICRO_BATCHES_H
#define VLA_TRAIN_MICRO_BATCHES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "data/mixture.h"
#include "distributed/sampler.h"
#include "train/loader.h"

typedef struct {
    vla_sampler s;          /* seek it to resume */
    int64_t accum, B;
    int rank;
    const vla_mixture *mix; /* NULL: one dataset, the index is the row */
    const vla_loader *L;    /* sample lengths for the token budget: set once the loader exists */
    int64_t budget;         /* > 0: plan micro-batches by tokens */
    /* the current step's plan (budget > 0): B·accum rows and keys, their bins */
    int64_t *rows, *len, *bin;
    uint64_t *keys;
    int64_t n_bins, next_bin;
} vla_micro_batches;

/* Over n_rows samples (seed, this rank of world); mix may be NULL; budget
 * 0 for fixed micro-batches of B. */
vla_status vla_micro_batches_init(vla_micro_batches *m, int64_t n_rows, uint64_t seed, int rank, int world, int64_t B,
                                  int64_t accum, const vla_mixture *mix, int64_t budget);
void vla_micro_batches_free(vla_micro_batches *m);
/* The loader's source (vla_loader_source_fn; user: the vla_micro_batches). */
vla_status vla_micro_batches_source(void *user, int64_t job, int64_t cap, int64_t *rows, uint64_t *keys, int64_t *n,
                                    bool *last);

#endif
