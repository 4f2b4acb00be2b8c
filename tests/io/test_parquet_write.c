/* test_parquet_write.c — vla.c's Parquet writer: LeRobot-like files across
 * codecs, v1/v2 pages, dictionary on/off, statistics and small pages, read
 * back by DuckDB, by arrow-rs (tools/oracle/oracle.mjs) and by vla.c, value
 * by value;
 * DuckDB's view of the statistics and encodings; and atomicity (a failed
 * write leaves the old file, an aborted one leaves no temp file). */
#include "io/parquet.h"
#include "parquet_oracle.h"

/* ---- vla.c's writer, read back by DuckDB and by vla.c ---- */

enum { W_STATE, W_ACTION, W_TS, W_FRAME, W_EP, W_INDEX, W_TASKI, W_DONE, W_SCORE, W_I32, W_TASK, W_NOTE, W_IMAGE,
       W_TAGS, W_STATS, W_COUNTS, W_CAT, W_NCOLS };

static const vla_parquet_field wfields[W_NCOLS] = {
    {"observation.state", VLA_PQW_FLOAT, 1, 0}, {"action", VLA_PQW_FLOAT, 1, 0},
    {"timestamp", VLA_PQW_FLOAT, 0, 0},         {"frame_index", VLA_PQW_INT64, 0, 0},
    {"episode_index", VLA_PQW_INT64, 0, 0},     {"index", VLA_PQW_INT64, 0, 0},
    {"task_index", VLA_PQW_INT64, 0, 0},        {"next.done", VLA_PQW_BOOLEAN, 0, 1},
    {"score", VLA_PQW_DOUBLE, 0, 1},            {"i32", VLA_PQW_INT32, 0, 1},
    {"task", VLA_PQW_STRING, 0, 0},             {"note", VLA_PQW_STRING, 0, 1},
    {"image", VLA_PQW_BINARY, 0, 0},            {"tags", VLA_PQW_STRING, 1, 1},
    {"stats/action/mean", VLA_PQW_DOUBLE, 1, 1}, {"stats/action/count", VLA_PQW_INT64, 1, 0},
    {"category", VLA_PQW_STRING, 0, 0}, /* 300 distinct values: dictionary indices of 9 bits */
};

/* All buffers of one generated row group, plus the expected JSON rows. */
typedef struct {
    float state[6 * 1000], action[6 * 1000], ts[1000];
    int64_t frame[1000], ep[1000], index[1000], taski[1000], list6[1001], counts[1000], counts_off[1001];
    uint8_t done[1000], done_valid[1000], score_valid[1000], i32_valid[1000], note_valid[1000];
    double score[1000];
    int32_t i32[1000];
    char task_bytes[40000], note_bytes[40000], tag_bytes[40000], cat_bytes[40000];
    int64_t cat_off[1001];
    uint8_t image_bytes[200000];
    int64_t task_off[1001], note_off[1001], image_off[1001], tag_off[4001], tags_list[1001];
    uint8_t tag_valid[4000], tags_row_valid[1000];
    double stats[3000];
    int64_t stats_list[1001];
    uint8_t stats_valid[3000], stats_row_valid[1000];
    vla_parquet_wcolumn cols[W_NCOLS];
} wgroup;

static void gen_group(wgroup *g, int ep, int64_t n, int64_t base, json_t *rows) {
    memset(g, 0, sizeof *g);
    int64_t tb = 0, nb = 0, ib = 0, gb = 0, nt = 0, ns = 0, cb = 0;
    g->list6[0] = g->tags_list[0] = g->stats_list[0] = g->counts_off[0] = 0;
    for (int64_t r = 0; r < n; r++) {
        int64_t gi = base + r;
        json_t *row = json_object();
        json_t *st = json_array(), *ac = json_array();
        for (int k = 0; k < 6; k++) {
            g->state[r * 6 + k] = (float)(0.25 * (double)gi + k);
            g->action[r * 6 + k] = (float)(-0.5 * (double)gi + 0.125 * k);
            json_array_append_new(st, json_real(g->state[r * 6 + k]));
            json_array_append_new(ac, json_real(g->action[r * 6 + k]));
        }
        g->list6[r + 1] = (r + 1) * 6;
        json_object_set_new(row, "observation.state", st);
        json_object_set_new(row, "action", ac);
        g->ts[r] = (float)r / 30.0f;
        json_object_set_new(row, "timestamp", json_real(g->ts[r]));
        g->frame[r] = r;
        g->ep[r] = ep;
        g->index[r] = gi;
        g->taski[r] = ep % 2;
        json_object_set_new(row, "frame_index", json_integer(r));
        json_object_set_new(row, "episode_index", json_integer(ep));
        json_object_set_new(row, "index", json_integer(gi));
        json_object_set_new(row, "task_index", json_integer(ep % 2));
        g->done[r] = r == n - 1;
        g->done_valid[r] = r % 10 != 3;
        json_object_set_new(row, "next.done", g->done_valid[r] ? json_boolean(g->done[r]) : json_null());
        g->score[r] = gi * 1.5 - 100;
        g->score_valid[r] = gi % 7 != 0;
        json_object_set_new(row, "score", g->score_valid[r] ? json_real(g->score[r]) : json_null());
        g->i32[r] = (int32_t)(gi * 1000 - 123456);
        g->i32_valid[r] = gi % 5 != 1;
        json_object_set_new(row, "i32", g->i32_valid[r] ? json_integer(g->i32[r]) : json_null());
        const char *task = ep % 2 ? "Pick up the cube" : "Place the cube in the box";
        g->task_off[r] = tb;
        memcpy(g->task_bytes + tb, task, strlen(task));
        tb += (int64_t)strlen(task);
        g->task_off[r + 1] = tb;
        json_object_set_new(row, "task", json_string(task));
        char note[64];
        snprintf(note, sizeof note, "note %lld", (long long)gi);
        g->note_valid[r] = gi % 4 != 2;
        g->note_off[r] = nb;
        if (g->note_valid[r]) {
            memcpy(g->note_bytes + nb, note, strlen(note));
            nb += (int64_t)strlen(note);
        }
        g->note_off[r + 1] = nb;
        json_object_set_new(row, "note", g->note_valid[r] ? json_string(note) : json_null());
        /* fake PNG: signature + a few varying bytes */
        static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        int len = 8 + (int)(gi % 50);
        g->image_off[r] = ib;
        char hexs[256];
        for (int k = 0; k < len; k++) {
            uint8_t b = k < 8 ? sig[k] : (uint8_t)(gi * 31 + k);
            g->image_bytes[ib + k] = b;
            snprintf(hexs + 2 * k, 3, "%02X", b);
        }
        ib += len;
        g->image_off[r + 1] = ib;
        json_object_set_new(row, "image", json_string(hexs));
        /* tags: null list every 9th row, empty every 11th, else 1..3 strings with null elements */
        g->tags_row_valid[r] = gi % 9 != 4;
        json_t *tags = g->tags_row_valid[r] ? json_array() : json_null();
        if (g->tags_row_valid[r] && gi % 11 != 5) {
            for (int k = 0; k < 1 + (int)(gi % 3); k++) {
                char t[32];
                snprintf(t, sizeof t, "tag%d", (int)((gi + k) % 4));
                g->tag_valid[nt] = (gi + k) % 6 != 1;
                g->tag_off[nt] = gb;
                if (g->tag_valid[nt]) {
                    memcpy(g->tag_bytes + gb, t, strlen(t));
                    gb += (int64_t)strlen(t);
                }
                g->tag_off[nt + 1] = gb;
                json_array_append_new(tags, g->tag_valid[nt] ? json_string(t) : json_null());
                nt++;
            }
        }
        g->tags_list[r + 1] = nt;
        json_object_set_new(row, "tags", tags);
        /* stats: null every 13th row, else 3 doubles, one null */
        g->stats_row_valid[r] = gi % 13 != 6;
        json_t *sa = g->stats_row_valid[r] ? json_array() : json_null();
        for (int k = 0; g->stats_row_valid[r] && k < 3; k++) {
            g->stats[ns] = gi / 3.0 + k;
            g->stats_valid[ns] = k != (int)(gi % 4);
            json_array_append_new(sa, g->stats_valid[ns] ? json_real(g->stats[ns]) : json_null());
            ns++;
        }
        g->stats_list[r + 1] = ns;
        json_object_set_new(row, "stats/action/mean", sa);
        g->counts[r] = gi;
        g->counts_off[r + 1] = r + 1;
        json_t *ca = json_array();
        json_array_append_new(ca, json_integer(gi));
        json_object_set_new(row, "stats/action/count", ca);
        char cat[64];
        int cl = snprintf(cat, sizeof cat, "category-string-number-%03d", (int)(gi * 7 % 300));
        g->cat_off[r] = cb;
        memcpy(g->cat_bytes + cb, cat, (size_t)cl);
        cb += cl;
        g->cat_off[r + 1] = cb;
        json_object_set_new(row, "category", json_string(cat));
        json_array_append_new(rows, row);
    }
    vla_parquet_wcolumn *c = g->cols;
    c[W_STATE] = (vla_parquet_wcolumn){.values = g->state, .list_offsets = g->list6};
    c[W_ACTION] = (vla_parquet_wcolumn){.values = g->action, .list_offsets = g->list6};
    c[W_TS] = (vla_parquet_wcolumn){.values = g->ts};
    c[W_FRAME] = (vla_parquet_wcolumn){.values = g->frame};
    c[W_EP] = (vla_parquet_wcolumn){.values = g->ep};
    c[W_INDEX] = (vla_parquet_wcolumn){.values = g->index};
    c[W_TASKI] = (vla_parquet_wcolumn){.values = g->taski};
    c[W_DONE] = (vla_parquet_wcolumn){.values = g->done, .valid = g->done_valid};
    c[W_SCORE] = (vla_parquet_wcolumn){.values = g->score, .valid = g->score_valid};
    c[W_I32] = (vla_parquet_wcolumn){.values = g->i32, .valid = g->i32_valid};
    c[W_TASK] = (vla_parquet_wcolumn){.byte_offsets = g->task_off, .bytes = (const uint8_t *)g->task_bytes};
    c[W_NOTE] = (vla_parquet_wcolumn){.byte_offsets = g->note_off, .bytes = (const uint8_t *)g->note_bytes, .valid = g->note_valid};
    c[W_IMAGE] = (vla_parquet_wcolumn){.byte_offsets = g->image_off, .bytes = g->image_bytes};
    c[W_TAGS] = (vla_parquet_wcolumn){.byte_offsets = g->tag_off, .bytes = (const uint8_t *)g->tag_bytes, .valid = g->tag_valid,
                                      .list_offsets = g->tags_list, .row_valid = g->tags_row_valid};
    c[W_STATS] = (vla_parquet_wcolumn){.values = g->stats, .valid = g->stats_valid, .list_offsets = g->stats_list,
                                       .row_valid = g->stats_row_valid};
    c[W_COUNTS] = (vla_parquet_wcolumn){.values = g->counts, .list_offsets = g->counts_off};
    c[W_CAT] = (vla_parquet_wcolumn){.byte_offsets = g->cat_off, .bytes = (const uint8_t *)g->cat_bytes};
}

/* Write a two-episode LeRobot-like file; return the expected rows. */
static json_t *write_lerobot_like(const char *path, const vla_parquet_write_options *opt) {
    vla_parquet_writer *w;
    if (vla_parquet_writer_open(path, wfields, W_NCOLS, opt, &w) != VLA_OK) fail_msg("open: %s", vla_error_message());
    assert_int_equal(vla_parquet_writer_add_kv(w, "huggingface", "{\"info\": {\"features\": {}}}"), VLA_OK);
    json_t *rows = json_array();
    wgroup *g = malloc(sizeof *g);
    const int64_t lens[] = {400, 300, 1};
    int64_t base = 0;
    for (int ep = 0; ep < 3; ep++) {
        gen_group(g, ep, lens[ep], base, rows);
        if (vla_parquet_writer_write_row_group(w, lens[ep], g->cols) != VLA_OK) fail_msg("write: %s", vla_error_message());
        base += lens[ep];
    }
    free(g);
    if (vla_parquet_writer_close(w) != VLA_OK) fail_msg("close: %s", vla_error_message());
    json_t *exp = json_object();
    json_t *cols = json_array();
    for (int i = 0; i < W_NCOLS; i++) json_array_append_new(cols, json_string(wfields[i].name));
    json_object_set_new(exp, "columns", cols);
    json_object_set_new(exp, "rows", rows);
    return exp;
}

/* Every value of `got` (DuckDB's or vla.c's reading) equals the expected. */
static void compare_rows(const char *label, json_t *expected, json_t *got) {
    json_t *erows = json_object_get(expected, "rows"), *grows = json_object_get(got, "rows");
    if (json_array_size(erows) != json_array_size(grows))
        fail_msg("%s: %zu rows read, %zu written", label, json_array_size(grows), json_array_size(erows));
    for (int c = 0; c < W_NCOLS; c++)
        for (size_t r = 0; r < json_array_size(erows); r++) {
            char why[512];
            json_t *a = json_object_get(json_array_get(erows, r), wfields[c].name);
            json_t *b = json_object_get(json_array_get(grows, r), wfields[c].name);
            if (!b || !same(a, b, why, sizeof why)) {
                char *as = json_dumps(a, JSON_ENCODE_ANY), *bs = b ? json_dumps(b, JSON_ENCODE_ANY) : NULL;
                fail_msg("%s: column '%s', row %zu: %s\n  written: %.300s\n  read:    %.300s", label, wfields[c].name, r,
                         b ? why : "missing", as, bs ? bs : "(none)");
            }
        }
}

static void check_written(const char *label, const char *path, const vla_parquet_write_options *opt, json_t *exp,
                          json_t *duck, json_t *arrow) {
    char what[160];
    snprintf(what, sizeof what, "%s, read by DuckDB", label);
    compare_rows(what, exp, duck);
    snprintf(what, sizeof what, "%s, read by arrow-rs", label);
    compare_rows(what, exp, arrow);
    vla_parquet_file *pq;
    assert_int_equal(vla_parquet_open(path, &pq), VLA_OK);
    assert_int_equal(vla_parquet_num_row_groups(pq), 3);
    assert_string_equal(vla_parquet_kv(pq, "huggingface"), "{\"info\": {\"features\": {}}}");
    json_t *mine;
    assert_int_equal(vla_parquet_to_json(pq, &mine), VLA_OK);
    snprintf(what, sizeof what, "%s, read by vla.c", label);
    compare_rows(what, exp, mine);
    /* dictionary where it pays: constant episode_index yes, unique floats no */
    vla_parquet_column col;
    assert_int_equal(vla_parquet_read_column_by_name(pq, 0, "episode_index", &col), VLA_OK);
    assert_int_equal(col.dict_pages, opt->dictionary ? 1 : 0);
    assert_int_equal(col.pages_v2 > 0, opt->page_version == 2);
    vla_parquet_column_free(&col);
    assert_int_equal(vla_parquet_read_column_by_name(pq, 0, "category", &col), VLA_OK);
    assert_int_equal(col.dict_pages, opt->dictionary ? 1 : 0);
    vla_parquet_column_free(&col);
    assert_int_equal(vla_parquet_read_column_by_name(pq, 0, "action", &col), VLA_OK);
    assert_int_equal(col.dict_pages, 0);
    vla_parquet_column_free(&col);
    float *m;
    int64_t rows;
    int width;
    assert_int_equal(vla_parquet_read_f32_matrix(pq, -1, "observation.state", &m, &rows, &width), VLA_OK);
    assert_int_equal(rows, 701);
    assert_int_equal(width, 6);
    assert_true(m[6 * 700 + 5] == (float)(0.25 * 700 + 5));
    free(m);
    vla_parquet_close(pq);
    printf("# %s: %zu rows written, equal in DuckDB, arrow-rs and vla.c\n", label, json_array_size(json_object_get(exp, "rows")));
    json_decref(mine);
}

static void test_written_files(void **state) {
    (void)state;
    require_oracle();
    enum { N = 5 };
    vla_parquet_write_options opt[N];
    const char *labels[N] = {"snappy+dict v1", "snappy+dict v2 small pages", "uncompressed v1 small pages", "gzip+stats", "zstd v2"};
    const int codecs[N] = {VLA_PQ_SNAPPY, VLA_PQ_SNAPPY, VLA_PQ_UNCOMPRESSED, VLA_PQ_GZIP, VLA_PQ_ZSTD};
    char paths[N][1024];
    const char *pp[N];
    json_t *exp[N], *duck[N];
    for (int i = 0; i < N; i++) {
        opt[i] = vla_parquet_write_defaults();
        opt[i].codec = codecs[i];
        opt[i].dictionary = i != 2;
        opt[i].statistics = i != 4;
        opt[i].page_version = i == 1 || i == 4 ? 2 : 1;
        if (i == 1 || i == 2) opt[i].page_bytes = 2000 + 1000 * i; /* many pages per chunk, v2 and v1 */
        char name[64];
        snprintf(name, sizeof name, "written-%d.parquet", i);
        snprintf(paths[i], sizeof paths[i], "%s", test_tmp_path(name));
        pp[i] = paths[i];
        exp[i] = write_lerobot_like(paths[i], &opt[i]);
    }
    json_t *arrow[N];
    oracle_read(pp, N, duck);
    oracle_read_arrow(pp, N, arrow);
    for (int i = 0; i < N; i++) {
        check_written(labels[i], paths[i], &opt[i], exp[i], duck[i], arrow[i]);
        json_decref(exp[i]);
        json_decref(duck[i]);
        json_decref(arrow[i]);
    }
    /* The statistics written with file 0, as DuckDB decodes them. */
    char cmd[8192], buf[64];
    const char *meta_path = test_tmp_path("meta.json");
    snprintf(cmd, sizeof cmd, "%s meta '%s' > '%s'", oracle_cmd, paths[0], meta_path);
    if (test_run(cmd, buf, sizeof buf) != 0) fail_msg("oracle meta failed");
    json_t *meta = load_json(meta_path);
    const int64_t base[3] = {0, 400, 700}, len[3] = {400, 300, 1};
    int checked = 0;
    for (size_t k = 0; k < json_array_size(meta); k++) {
        json_t *e = json_array_get(meta, k);
        const char *col = json_string_value(json_object_get(e, "path_in_schema"));
        int g = atoi(json_string_value(json_object_get(e, "row_group_id")));
        if (strcmp(col, "index") == 0) {
            assert_int_equal(strtoll(json_string_value(json_object_get(e, "stats_min_value")), NULL, 10), base[g]);
            assert_int_equal(strtoll(json_string_value(json_object_get(e, "stats_max_value")), NULL, 10), base[g] + len[g] - 1);
            checked++;
        } else if (strcmp(col, "score") == 0) {
            int64_t nulls = 0;
            for (int64_t r = base[g]; r < base[g] + len[g]; r++) nulls += r % 7 == 0;
            assert_int_equal(strtoll(json_string_value(json_object_get(e, "stats_null_count")), NULL, 10), nulls);
            checked++;
        } else if (strcmp(col, "episode_index") == 0 && g < 2) { /* a 1-row group gains nothing from a dictionary */
            assert_non_null(strstr(json_string_value(json_object_get(e, "encodings")), "RLE_DICTIONARY"));
            assert_string_equal(json_string_value(json_object_get(e, "compression")), "SNAPPY");
            checked++;
        }
    }
    assert_int_equal(checked, 8);
    json_decref(meta);
}

/* A failed write leaves the previous file in place. */
static void test_write_is_atomic(void **state) {
    (void)state;
    const char *path = test_tmp_path("atomic.parquet");
    assert_int_equal(vla_write_file_atomic(path, "old", 3), VLA_OK);
    vla_parquet_writer *w;
    vla_parquet_write_options opt = vla_parquet_write_defaults();
    assert_int_equal(vla_parquet_writer_open(path, wfields, W_NCOLS, &opt, &w), VLA_OK);
    wgroup *g = malloc(sizeof *g);
    json_t *rows = json_array();
    gen_group(g, 0, 100, 0, rows);
    assert_int_equal(vla_parquet_writer_write_row_group(w, 100, g->cols), VLA_OK);
    g->cols[W_STATE].list_offsets = NULL; /* invalid input: the row group fails */
    assert_int_not_equal(vla_parquet_writer_write_row_group(w, 100, g->cols), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "observation.state"));
    assert_int_not_equal(vla_parquet_writer_close(w), VLA_OK);
    char *data;
    size_t n;
    assert_int_equal(vla_read_file(path, &data, &n), VLA_OK);
    assert_int_equal(n, 3);
    free(data);
    /* and an aborted writer leaves no temp file behind */
    assert_int_equal(vla_parquet_writer_open(path, wfields, W_NCOLS, &opt, &w), VLA_OK);
    vla_parquet_writer_abort(w);
    char cmd[1200], out[64];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c tmp-", test_tmp_dir());
    test_run(cmd, out, sizeof out);
    assert_int_equal(atoi(out), 0);
    free(g);
    json_decref(rows);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_files),
        cmocka_unit_test(test_write_is_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
