/* test_dev_index.c — tensor/cuda/dev_index.h, the index preparation behind the
 * cuda backend's deterministic scatter-adds and column sums: the CSR of a
 * scatter map regroups exactly the map (every i once, destinations
 * distinct, sources in increasing i), and a scatter-add walked through it
 * gives the cpu backend's result bit for bit (the same order of additions);
 * row chunks and per-sample chunks cover every row once, inside their
 * segment, within the size bounds. */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/backend.h"
#include "tensor/cuda/dev_index.h"

#include <stdlib.h>
#include <string.h>

static void test_csr_is_the_map(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(21, 0);
    const vla_ops *cpu = vla_backend_find("cpu");
    for (int trial = 0; trial < 50; trial++) {
        int64_t n = 1 + (int64_t)(vla_rng_uniform(&r) * 300), w = 1 + trial % 7, rows = 1 + trial % 13;
        int32_t *idx = malloc(sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)(vla_rng_uniform(&r) * (double)rows);
        vla_rows_csr c;
        assert_int_equal(vla_rows_csr_make(&c, trial % 10 ? idx : NULL, n), VLA_OK);
        char *seen = calloc((size_t)n, 1);
        for (int32_t g = 0; g < c.n_groups; g++) {
            if (g) assert_true(c.dst[g] > c.dst[g - 1]);
            for (int32_t k = c.off[g]; k < c.off[g + 1]; k++) {
                int32_t i = c.items[k];
                assert_true(!seen[i]);
                seen[i] = 1;
                assert_int_equal(trial % 10 ? idx[i] : i, c.dst[g]);
                if (k > c.off[g]) assert_true(c.items[k] > c.items[k - 1]);
            }
        }
        for (int64_t i = 0; i < n; i++) assert_true(seen[i]);
        /* the walk the kernel does equals the cpu backend's add_rows bit for bit */
        float *src = malloc(sizeof(float) * (size_t)(n * w)), *a = calloc((size_t)(rows > n ? rows : n) * (size_t)w, 4);
        float *b = calloc((size_t)(rows > n ? rows : n) * (size_t)w, 4);
        for (int64_t i = 0; i < n * w; i++) src[i] = (float)vla_rng_normal(&r);
        cpu->add_rows(a, w, trial % 10 ? idx : NULL, src, w, NULL, n, w, 0.7f);
        for (int32_t g = 0; g < c.n_groups; g++)
            for (int64_t col = 0; col < w; col++) {
                float acc = b[(int64_t)c.dst[g] * w + col];
                for (int32_t k = c.off[g]; k < c.off[g + 1]; k++) acc += 0.7f * src[(int64_t)c.items[k] * w + col];
                b[(int64_t)c.dst[g] * w + col] = acc;
            }
        assert_memory_equal(a, b, sizeof(float) * (size_t)((rows > n ? rows : n) * w));
        vla_rows_csr_free(&c);
        free(idx), free(seen), free(src), free(a), free(b);
    }
}

static void test_chunks_cover(void **state) {
    (void)state;
    const int64_t rows_list[] = {0, 1, 127, 128, 129, 5000, 100000, 3000000};
    for (unsigned i = 0; i < sizeof rows_list / sizeof rows_list[0]; i++)
        for (int64_t cols = 1; cols <= 1 << 16; cols *= 16) {
            vla_row_chunks c = vla_row_chunks_for(rows_list[i], cols);
            assert_true(c.n_chunks >= 1 && c.n_chunks <= 512);
            assert_true(c.n_chunks * cols <= ((int64_t)4 << 20) || c.n_chunks == 1);
            assert_true(c.n_chunks * c.rows_per_chunk >= rows_list[i]);
            assert_true((c.n_chunks - 1) * c.rows_per_chunk < rows_list[i] || rows_list[i] == 0);
        }
    int32_t cu[6] = {0, 0, 300, 301, 301, 700};
    /* the column sums' 128-row chunks, and the per-segment linear's 16-row tiles: every row once, in order,
     * each chunk inside one segment */
    const int32_t sizes[2] = {128, 16};
    for (int z = 0; z < 2; z++) {
        vla_seg_chunks s;
        assert_int_equal(z ? vla_seg_chunks_make_rows(&s, cu, 5, 16) : vla_seg_chunks_make(&s, cu, 5), VLA_OK);
        int32_t next = 0;
        for (int32_t seg = 0; seg < 5; seg++) {
            for (int32_t k = s.first[seg]; k < s.first[seg + 1]; k++) {
                assert_int_equal(s.seg[k], seg);
                assert_int_equal(s.start[k], next);
                assert_true(s.end[k] > s.start[k] && s.end[k] - s.start[k] <= sizes[z] && s.end[k] <= cu[seg + 1]);
                next = s.end[k];
            }
            assert_int_equal(next, cu[seg + 1]);
        }
        assert_int_equal(s.n_chunks, s.first[5]);
        vla_seg_chunks_free(&s);
    }
    vla_seg_chunks bad;
    assert_int_equal(vla_seg_chunks_make_rows(&bad, cu, 5, 0), VLA_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csr_is_the_map),
        cmocka_unit_test(test_chunks_cover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
