/* token_budget.c — first-fit decreasing into token budgets (see token_budget.h). */
#include "data/token_budget.h"

#include <stdlib.h>

typedef struct {
    int64_t len, index;
} item;

static int by_length_desc(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

vla_status vla_token_budget_pack(const int64_t *len, int64_t n, int64_t budget, int64_t max_items, int64_t *bin,
                                 int64_t *n_bins) {
    *n_bins = 0;
    if (n < 0 || budget < 1 || max_items < 1)
        return vla_error(VLA_ERR_INVALID_ARG, "token budget: %lld items, budget %lld, at most %lld per bin",
                         (long long)n, (long long)budget, (long long)max_items);
    item *it = malloc((size_t)(n + 1) * sizeof *it);
    int64_t *used = calloc((size_t)n + 1, sizeof *used), *count = calloc((size_t)n + 1, sizeof *count);
    if (!it || !used || !count) {
        free(it), free(used), free(count);
        return vla_error(VLA_ERR_NOMEM, "token budget: out of memory for %lld items", (long long)n);
    }
    vla_status st = VLA_OK;
    for (int64_t i = 0; i < n; i++) {
        if (len[i] < 1) st = vla_error(VLA_ERR_INVALID_ARG, "token budget: item %lld has length %lld", (long long)i,
                                       (long long)len[i]);
        it[i] = (item){len[i], i};
    }
    if (st == VLA_OK) qsort(it, (size_t)n, sizeof *it, by_length_desc);
    int64_t nb = 0;
    for (int64_t k = 0; k < n && st == VLA_OK; k++) {
        int64_t b = 0;
        while (b < nb && (used[b] + it[k].len > budget || count[b] >= max_items)) b++;
        if (b == nb) nb++; /* a new bin (also for an item longer than the budget: alone in it) */
        used[b] += it[k].len, count[b]++;
        bin[it[k].index] = b;
    }
    free(it), free(used), free(count);
    if (st == VLA_OK) *n_bins = nb;
    return st;
}
