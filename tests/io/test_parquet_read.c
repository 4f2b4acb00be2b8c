/* test_parquet_read.c — reader behaviour that needs no oracle: row groups and
 * columns read in any order give the same values (projection, random
 * access), several threads can decode from one open file at once, and the
 * dense helpers agree with the general column reader. The data comes from
 * vla.c's writer; its values are checked against DuckDB in
 * test_parquet_write.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/parquet.h"
#include "test_util.h"

enum { GROUPS = 6, ROWS = 250 };

static void write_file(const char *path) {
    vla_parquet_field f[] = {{"action", VLA_PQW_FLOAT, 1, 0}, {"episode_index", VLA_PQW_INT64, 0, 0},
                             {"score", VLA_PQW_DOUBLE, 0, 1}, {"task", VLA_PQW_STRING, 0, 0}};
    static float act[ROWS * 6];
    static int64_t lo[ROWS + 1], ep[ROWS], so[ROWS + 1];
    static double score[ROWS];
    static uint8_t sv[ROWS];
    static char sb[ROWS * 16];
    vla_parquet_writer *w;
    vla_parquet_write_options o = vla_parquet_write_defaults();
    o.page_bytes = 1500; /* several pages per chunk */
    assert_int_equal(vla_parquet_writer_open(path, f, 4, &o, &w), VLA_OK);
    for (int g = 0; g < GROUPS; g++) {
        int64_t sbn = 0;
        lo[0] = so[0] = 0;
        for (int r = 0; r < ROWS; r++) {
            for (int k = 0; k < 6; k++) act[r * 6 + k] = (float)(g * 1000 + r) + 0.125f * (float)k;
            lo[r + 1] = (r + 1) * 6;
            ep[r] = g;
            score[r] = g + r / 8.0;
            sv[r] = (r + g) % 5 != 0;
            sbn += snprintf(sb + sbn, 16, "task-%d", (g + r) % 4);
            so[r + 1] = sbn;
        }
        vla_parquet_wcolumn c[] = {{.values = act, .list_offsets = lo}, {.values = ep}, {.values = score, .valid = sv},
                                   {.byte_offsets = so, .bytes = (const uint8_t *)sb}};
        assert_int_equal(vla_parquet_writer_write_row_group(w, ROWS, c), VLA_OK);
    }
    assert_int_equal(vla_parquet_writer_close(w), VLA_OK);
}

/* A checksum over everything a decoded column holds. */
static uint64_t digest(const vla_parquet_column *c) {
    uint64_t h = 1469598103934665603ull;
#define MIX(p, n)                                                                 \
    for (size_t i_ = 0; i_ < (size_t)(n); i_++) h = (h ^ ((const uint8_t *)(p))[i_]) * 1099511628211ull
    int w = c->type == VLA_PQ_INT64 || c->type == VLA_PQ_DOUBLE ? 8 : 4;
    MIX(c->valid, c->num_values);
    if (c->values) MIX(c->values, c->num_values * w);
    if (c->offsets) {
        MIX(c->offsets, (c->num_values + 1) * 8);
        MIX(c->data, c->data_size);
    }
    for (int l = 0; l < c->max_rep; l++) {
        MIX(c->list[l].offsets, (c->list[l].count + 1) * 8);
        MIX(c->list[l].valid, c->list[l].count);
    }
#undef MIX
    return h;
}

static uint64_t expected[GROUPS][4];

typedef struct {
    const vla_parquet_file *pq;
    int seed, bad;
} worker;

static void *work(void *arg) {
    worker *wk = arg;
    for (int it = 0; it < 3 * GROUPS * 4; it++) {
        int k = (it * 7 + wk->seed * 5) % (GROUPS * 4), g = k / 4, c = k % 4;
        vla_parquet_column col;
        if (vla_parquet_read_column(wk->pq, g, c, &col) != VLA_OK || digest(&col) != expected[g][c]) wk->bad++;
        vla_parquet_column_free(&col);
    }
    return NULL;
}

static void test_random_access_and_threads(void **state) {
    (void)state;
    const char *path = test_tmp_path("read.parquet");
    write_file(path);
    vla_parquet_file *pq;
    assert_int_equal(vla_parquet_open(path, &pq), VLA_OK);
    assert_int_equal(vla_parquet_num_row_groups(pq), GROUPS);
    /* in order */
    for (int g = 0; g < GROUPS; g++)
        for (int c = 0; c < 4; c++) {
            vla_parquet_column col;
            assert_int_equal(vla_parquet_read_column(pq, g, c, &col), VLA_OK);
            expected[g][c] = digest(&col);
            if (c == 3) assert_int_equal(col.num_rows, ROWS);
            vla_parquet_column_free(&col);
        }
    /* backwards, one column at a time: the same values */
    for (int g = GROUPS - 1; g >= 0; g--) {
        vla_parquet_column col;
        assert_int_equal(vla_parquet_read_column_by_name(pq, g, "episode_index", &col), VLA_OK);
        assert_true(digest(&col) == expected[g][1]);
        assert_int_equal(((int64_t *)col.values)[ROWS - 1], g);
        vla_parquet_column_free(&col);
    }
    /* four threads on one handle */
    pthread_t th[4];
    worker wk[4];
    for (int i = 0; i < 4; i++) {
        wk[i] = (worker){pq, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, work, &wk[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(wk[i].bad, 0);
    }
    /* the dense helper agrees with the column reader */
    float *m;
    int64_t rows;
    int width;
    assert_int_equal(vla_parquet_read_f32_matrix(pq, 3, "action", &m, &rows, &width), VLA_OK);
    assert_int_equal(rows, ROWS);
    assert_int_equal(width, 6);
    assert_true(m[17 * 6 + 5] == 3017.625f);
    free(m);
    assert_int_equal(vla_parquet_read_f32_matrix(pq, -1, "action", &m, &rows, &width), VLA_OK);
    assert_int_equal(rows, GROUPS * ROWS);
    assert_true(m[(5 * ROWS + 249) * 6] == 5249.0f);
    free(m);
    int64_t *v;
    assert_int_equal(vla_parquet_read_i64(pq, -1, "episode_index", &v, &rows), VLA_OK);
    assert_int_equal(v[ROWS * 2], 2);
    free(v);
    /* a column with nulls is not a dense one */
    assert_int_equal(vla_parquet_read_f32_matrix(pq, 0, "score", &m, &rows, &width), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "column 'score', row group 0, row 0: null element"));
    vla_parquet_close(pq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_access_and_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
