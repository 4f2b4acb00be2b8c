/* sampler.h — the distributed sampler: one global shuffled order per epoch,
 * each rank's slice of every global batch, and a cursor that resumes on any
 * world size.
 *
 * The order of epoch e is a Fisher–Yates shuffle of 0..n-1 drawn from the
 * Philox stream (seed, e) — a pure function of (seed, e), the same on every
 * rank. An optimizer step consumes one global batch of
 *     G = per_rank_batch × world × accum
 * consecutive entries of that order, starting at the cursor. Rank r takes the
 * contiguous block [cursor + r·B·A, cursor + (r+1)·B·A) and micro-batch k of
 * the step is the k-th B of it. So the *set* of samples in a step depends only
 * on (seed, epoch, cursor, G): 2 ranks × B/2 and 1 rank × B (or 1 rank × B/2
 * × 2 accumulation steps) see the same samples, and a resume on another world
 * size with the same G continues exactly where the last one stopped.
 * A tail shorter than G is dropped (every rank takes the same number of
 * steps); then the epoch advances and the cursor returns to 0. */
#ifndef VLA_DISTRIBUTED_SAMPLER_H
#define VLA_DISTRIBUTED_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef struct {
    int64_t epoch;
    int64_t cursor; /* samples of the epoch's order already consumed */
} vla_sampler_pos;

typedef struct {
    int64_t n;
    uint64_t seed;
    bool shuffle;
    int rank, world;
    int64_t per_rank_batch, accum;
    vla_sampler_pos pos;
    int64_t *order;     /* order of pos.epoch */
    int64_t order_epoch;
} vla_sampler;

vla_status vla_sampler_init(vla_sampler *s, int64_t n, uint64_t seed, bool shuffle, int rank, int world,
                            int64_t per_rank_batch, int64_t accum);
void vla_sampler_free(vla_sampler *s);

int64_t vla_sampler_global_batch(const vla_sampler *s);
int64_t vla_sampler_steps_per_epoch(const vla_sampler *s);

/* This rank's sample indices (per_rank_batch of them) for micro-batch
 * `micro` (0 ≤ micro < accum) of the current step. */
vla_status vla_sampler_indices(vla_sampler *s, int64_t micro, int64_t *idx);
/* Move the cursor past the current step's global batch. */
vla_status vla_sampler_advance(vla_sampler *s);

vla_sampler_pos vla_sampler_tell(const vla_sampler *s);
/* Resume at `pos`; the cursor must fall on a whole step of this global batch
 * size within the epoch. */
vla_status vla_sampler_seek(vla_sampler *s, vla_sampler_pos pos);

/* The epoch's global order (n entries) — for tests and tools. */
vla_status vla_sampler_order(uint64_t seed, int64_t epoch, bool shuffle, int64_t n, int64_t *out);

#endif
