/* sampler.c — global shuffled order, per-rank slices, resumable cursor
 * (see sampler.h). */
#include "distributed/sampler.h"

#include "base/rng.h"

#include <stdlib.h>

vla_status vla_sampler_order(uint64_t seed, int64_t epoch, bool shuffle, int64_t n, int64_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = i;
    if (shuffle) {
        vla_rng r = vla_rng_stream(seed, (uint64_t)epoch);
        vla_rng_shuffle_i64(&r, out, n);
    }
    return VLA_OK;
}

vla_status vla_sampler_init(vla_sampler *s, int64_t n, uint64_t seed, bool shuffle, int rank, int world,
                            int64_t per_rank_batch, int64_t accum) {
    *s = (vla_sampler){0};
    if (world < 1 || rank < 0 || rank >= world || per_rank_batch < 1 || accum < 1)
        return vla_error(VLA_ERR_INVALID_ARG, "sampler: rank %d, world %d, batch %lld, accumulation %lld", rank,
                         world, (long long)per_rank_batch, (long long)accum);
    int64_t g = per_rank_batch * world * accum;
    if (n < g)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "sampler: %lld samples are fewer than one global batch of %lld (= %lld per rank × %d "
                         "ranks × %lld accumulation)", (long long)n, (long long)g, (long long)per_rank_batch,
                         world, (long long)accum);
    s->n = n, s->seed = seed, s->shuffle = shuffle, s->rank = rank, s->world = world;
    s->per_rank_batch = per_rank_batch, s->accum = accum;
    s->order = malloc(sizeof(int64_t) * (size_t)n);
    if (!s->order) return vla_error(VLA_ERR_NOMEM, "sampler: order of %lld samples", (long long)n);
    s->order_epoch = -1;
    return VLA_OK;
}

void vla_sampler_free(vla_sampler *s) {
    free(s->order);
    s->order = NULL;
}

int64_t vla_sampler_global_batch(const vla_sampler *s) { return s->per_rank_batch * s->world * s->accum; }
int64_t vla_sampler_steps_per_epoch(const vla_sampler *s) { return s->n / vla_sampler_global_batch(s); }

vla_status vla_sampler_indices(vla_sampler *s, int64_t micro, int64_t *idx) {
    if (micro < 0 || micro >= s->accum)
        return vla_error(VLA_ERR_INVALID_ARG, "sampler: micro-batch %lld of %lld", (long long)micro,
                         (long long)s->accum);
    if (s->order_epoch != s->pos.epoch) {
        VLA_TRY(vla_sampler_order(s->seed, s->pos.epoch, s->shuffle, s->n, s->order));
        s->order_epoch = s->pos.epoch;
    }
    int64_t b = s->per_rank_batch;
    int64_t start = s->pos.cursor + (int64_t)s->rank * b * s->accum + micro * b;
    for (int64_t i = 0; i < b; i++) idx[i] = s->order[start + i];
    return VLA_OK;
}

vla_status vla_sampler_advance(vla_sampler *s) {
    int64_t g = vla_sampler_global_batch(s);
    s->pos.cursor += g;
    if (s->pos.cursor + g > s->n) {
        s->pos.epoch++;
        s->pos.cursor = 0;
    }
    return VLA_OK;
}

vla_sampler_pos vla_sampler_tell(const vla_sampler *s) { return s->pos; }

vla_status vla_sampler_seek(vla_sampler *s, vla_sampler_pos pos) {
    int64_t g = vla_sampler_global_batch(s);
    if (pos.epoch < 0 || pos.cursor < 0 || pos.cursor + g > s->n)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "sampler: cannot resume at epoch %lld, sample %lld with a global batch of %lld over %lld "
                         "samples", (long long)pos.epoch, (long long)pos.cursor, (long long)g, (long long)s->n);
    s->pos = pos;
    return VLA_OK;
}
