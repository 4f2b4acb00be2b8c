/* micro_batches.c — the trainer's micro-batches from the sampler (see micro_batches.h). */
#include "train/micro_batches.h"

#include <stdlib.h>
#include <string.h>

#include "data/token_budget.h"

vla_status vla_micro_batches_init(vla_micro_batches *m, int64_t n_rows, uint64_t seed, int rank, int world, int64_t B,
                                  int64_t accum, const vla_mixture *mix, int64_t budget) {
    memset(m, 0, sizeof *m);
    VLA_TRY(vla_sampler_init(&m->s, n_rows, seed, true, rank, world, B, accum));
    m->accum = accum, m->B = B, m->rank = rank;
    m->mix = mix;
    m->budget = budget;
    if (budget <= 0) return VLA_OK;
    int64_t step_samples = B * accum;
    m->rows = calloc((size_t)step_samples, sizeof *m->rows);
    m->len = calloc((size_t)step_samples, sizeof *m->len);
    m->bin = calloc((size_t)step_samples, sizeof *m->bin);
    m->keys = calloc((size_t)step_samples, sizeof *m->keys);
    if (!m->rows || !m->len || !m->bin || !m->keys) return vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    return VLA_OK;
}

void vla_micro_batches_free(vla_micro_batches *m) {
    vla_sampler_free(&m->s);
    free(m->rows), free(m->len), free(m->bin), free(m->keys);
    m->rows = m->len = m->bin = NULL, m->keys = NULL;
}

/* This rank's rows and keys of micro-batch `micro` of the current step. */
static vla_status step_rows(vla_micro_batches *m, int64_t micro, int64_t *rows, uint64_t *keys) {
    vla_sampler_pos pos = m->s.pos;
    VLA_TRY(vla_sampler_indices(&m->s, micro, rows));
    int64_t base = pos.epoch * m->s.n + pos.cursor + (int64_t)m->rank * m->B * m->accum + micro * m->B;
    for (int64_t i = 0; i < m->B; i++) {
        keys[i] = (uint64_t)(base + i);
        if (m->mix) rows[i] = vla_mixture_row(m->mix, pos.epoch, rows[i], NULL);
    }
    return VLA_OK;
}

/* The whole step's samples, and their micro-batches by the token budget. */
static vla_status plan_step(vla_micro_batches *m) {
    int64_t n = m->B * m->accum;
    for (int64_t k = 0; k < m->accum; k++) VLA_TRY(step_rows(m, k, m->rows + k * m->B, m->keys + k * m->B));
    for (int64_t i = 0; i < n; i++) VLA_TRY(vla_loader_sample_tokens(m->L, m->rows[i], &m->len[i]));
    VLA_TRY(vla_token_budget_pack(m->len, n, m->budget, n, m->bin, &m->n_bins));
    m->next_bin = 0;
    return VLA_OK;
}

vla_status vla_micro_batches_source(void *user, int64_t job, int64_t cap, int64_t *rows, uint64_t *keys, int64_t *n,
                                    bool *last) {
    vla_micro_batches *m = user;
    if (m->budget <= 0) {
        int64_t micro = job % m->accum;
        if (cap < m->B) return vla_error(VLA_ERR_INTERNAL, "trainer: a job holds %lld samples", (long long)cap);
        VLA_TRY(step_rows(m, micro, rows, keys));
        *n = m->B, *last = micro == m->accum - 1;
        if (*last) VLA_TRY(vla_sampler_advance(&m->s));
        return VLA_OK;
    }
    if (m->next_bin == m->n_bins) VLA_TRY(plan_step(m));
    int64_t b = m->next_bin++, k = 0;
    for (int64_t i = 0; i < m->B * m->accum; i++) /* in the sampler's order within the micro-batch */
        if (m->bin[i] == b) {
            if (k == cap) return vla_error(VLA_ERR_INTERNAL, "trainer: a planned micro-batch exceeds %lld", (long long)cap);
            rows[k] = m->rows[i], keys[k] = m->keys[i], k++;
        }
    *n = k, *last = m->next_bin == m->n_bins;
    if (*last) VLA_TRY(vla_sampler_advance(&m->s));
    return VLA_OK;
}
