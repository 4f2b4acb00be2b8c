/* token_budget.h — micro-batches by a token budget: first-fit decreasing.
 *
 * A step's samples differ in length (a mixture's camera counts, prompt
 * lengths). Instead of cutting them into micro-batches of a fixed count, the
 * trainer can fill micro-batches up to a budget of tokens, so each costs
 * about the same compute and memory whatever it holds. First-fit decreasing
 * (longest first, each into the first micro-batch with room) uses at most
 * 11/9·OPT + 6/9 bins (Dósa 2007); a sample longer than the budget gets a
 * micro-batch of its own. Deterministic: equal lengths keep their order. */
#ifndef VLA_DATA_TOKEN_BUDGET_H
#define VLA_DATA_TOKEN_BUDGET_H

#include <stdint.h>

#include "base/status.h"

/* bin[i] ∈ [0, *n_bins) for each of the n items of lengths len[] (> 0): every
 * bin holds at most `budget` tokens (or one over-long item) and at most
 * max_items items. Bins are numbered in the order they were opened. */
vla_status vla_token_budget_pack(const int64_t *len, int64_t n, int64_t budget, int64_t max_items, int64_t *bin,
                                 int64_t *n_bins);

#endif
