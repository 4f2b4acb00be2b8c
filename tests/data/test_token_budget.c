/* test_token_budget.c — first-fit decreasing into token budgets
 * (data/token_budget.h): every item lands in exactly one bin, no bin holds
 * more than the budget (an over-long item sits alone) or more than the item
 * cap, equal lengths keep their order, and the bin count is within FFD's
 * bound 11/9·OPT + 6/9 of the optimum, which an exhaustive search (a second
 * algorithm) finds for small instances. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "data/token_budget.h"

/* The fewest bins of capacity `cap` for items len[0..n) by branch and bound:
 * items placed longest first into each open bin or a new one. */
static int best;
static void search(const int64_t *len, int n, int64_t cap, int k, int64_t *used, int nb) {
    if (nb >= best) return;
    if (k == n) {
        best = nb;
        return;
    }
    for (int b = 0; b < nb; b++)
        if (used[b] + len[k] <= cap) {
            used[b] += len[k];
            search(len, n, cap, k + 1, used, nb);
            used[b] -= len[k];
        }
    used[nb] = len[k];
    search(len, n, cap, k + 1, used, nb + 1);
    used[nb] = 0;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

static int optimum(const int64_t *len, int n, int64_t cap) {
    int64_t sorted[16], used[16] = {0};
    memcpy(sorted, len, (size_t)n * sizeof *len);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_desc);
    best = n + 1;
    search(sorted, n, cap, 0, used, 0);
    return best;
}

static void check_bins(const int64_t *len, int64_t n, int64_t cap, int64_t max_items, const int64_t *bin, int64_t nb) {
    int64_t *used = calloc((size_t)nb + 1, sizeof *used), *count = calloc((size_t)nb + 1, sizeof *count);
    assert_non_null(used), assert_non_null(count);
    for (int64_t i = 0; i < n; i++) {
        assert_true(bin[i] >= 0 && bin[i] < nb);
        used[bin[i]] += len[i], count[bin[i]]++;
    }
    for (int64_t b = 0; b < nb; b++) {
        assert_true(count[b] >= 1 && count[b] <= max_items);
        assert_true(used[b] <= cap || count[b] == 1);
    }
    free(used), free(count);
}

static void test_against_the_optimum(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(42, 0);
    int64_t len[12], bin[12], nb;
    for (int trial = 0; trial < 300; trial++) {
        int n = 4 + (int)(vla_rng_u64(&r) % 9);
        int64_t cap = 100;
        for (int i = 0; i < n; i++) len[i] = 5 + (int64_t)(vla_rng_u64(&r) % 90);
        assert_int_equal(vla_token_budget_pack(len, n, cap, n, bin, &nb), VLA_OK);
        check_bins(len, n, cap, n, bin, nb);
        int opt = optimum(len, n, cap);
        assert_true(nb >= opt);
        assert_true(9 * nb <= 11 * opt + 6);
    }
}

static void test_large_and_caps(void **state) {
    (void)state;
    enum { N = 2000 };
    static int64_t len[N], bin[N];
    vla_rng r = vla_rng_stream(7, 1);
    int64_t sum = 0, nb;
    for (int i = 0; i < N; i++) sum += len[i] = 20 + (int64_t)(vla_rng_u64(&r) % 600);
    assert_int_equal(vla_token_budget_pack(len, N, 4096, N, bin, &nb), VLA_OK);
    check_bins(len, N, 4096, N, bin, nb);
    assert_true(nb >= (sum + 4095) / 4096);
    assert_true(nb <= (sum + 4095) / 4096 + 2); /* small items fill the gaps */
    /* an item cap of 3 */
    assert_int_equal(vla_token_budget_pack(len, N, 4096, 3, bin, &nb), VLA_OK);
    check_bins(len, N, 4096, 3, bin, nb);
    /* an item longer than the budget sits alone */
    int64_t l2[4] = {50, 500, 50, 40}, b2[4];
    assert_int_equal(vla_token_budget_pack(l2, 4, 100, 4, b2, &nb), VLA_OK);
    assert_int_equal(nb, 3); /* {500}, {50, 50}, {40} */
    assert_int_equal(b2[1], 0);
    assert_int_equal(b2[0], 1), assert_int_equal(b2[2], 1);
    assert_int_equal(b2[3], 2);
    /* equal lengths keep their order: bins open in index order */
    int64_t l3[6] = {30, 30, 30, 30, 30, 30}, b3[6];
    assert_int_equal(vla_token_budget_pack(l3, 6, 60, 6, b3, &nb), VLA_OK);
    assert_int_equal(nb, 3);
    for (int i = 0; i < 6; i++) assert_int_equal(b3[i], i / 2);
    /* bad input */
    int64_t bad[2] = {10, 0};
    assert_int_equal(vla_token_budget_pack(bad, 2, 100, 2, b3, &nb), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_token_budget_pack(l3, 6, 0, 6, b3, &nb), VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_the_optimum),
        cmocka_unit_test(test_large_and_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
