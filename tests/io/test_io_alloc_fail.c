/* test_io_alloc_fail.c — allocation-failure sweeps (tests/alloc_fail.h)
 * over the io layer: reading Parquet files (vla.c's own, with lists, nulls,
 * dictionaries and several pages, and arrow-rs's with v2 pages) and writing
 * one; loading and writing safetensors; opening a video and decoding
 * frames; PNG encode and decode. A failed write must leave the previous
 * file as it was and no temporary file. */
#include "test_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fail.h"
#include "base/fsutil.h"
#include "io/image.h"
#include "io/parquet.h"
#include "io/safetensors.h"
#include "io/video.h"

/* ---- Parquet ---------------------------------------------------------------- */

/* Open, decode every column of every row group, read a column as a float
 * matrix and the whole file as JSON. */
static vla_status read_parquet(void *user) {
    const char *path = user;
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    vla_status st = VLA_OK;
    for (int g = 0; st == VLA_OK && g < vla_parquet_num_row_groups(pq); g++)
        for (int c = 0; st == VLA_OK && c < vla_parquet_num_columns(pq); c++) {
            vla_parquet_column col;
            st = vla_parquet_read_column(pq, g, c, &col);
            vla_parquet_column_free(&col);
        }
    float *m = NULL;
    int64_t rows;
    int width;
    if (st == VLA_OK && vla_parquet_find_column(pq, "observation.state") >= 0)
        st = vla_parquet_read_f32_matrix(pq, -1, "observation.state", &m, &rows, &width);
    free(m);
    json_t *j = NULL;
    if (st == VLA_OK) st = vla_parquet_to_json(pq, &j);
    json_decref(j);
    vla_parquet_close(pq);
    return st;
}

static void test_parquet_read(void **state) {
    (void)state;
    static char ours[1024];
    snprintf(ours, sizeof ours, "%s", test_tmp_path("sample.parquet"));
    test_write_sample_parquet(ours, VLA_PQ_SNAPPY, 1);
    test_alloc_scenario s = {.name = "parquet read (vla.c's)", .run = read_parquet, .user = ours, .samples = 128};
    test_alloc_sweep(&s);
    static char arrow[1024];
    snprintf(arrow, sizeof arrow, "%s", test_source_path("fuzz/corpus/fuzz_parquet_file/arrowrs_snappy_v2_dict.parquet"));
    test_alloc_scenario s2 = {.name = "parquet read (arrow-rs v2 dict)", .run = read_parquet, .user = arrow};
    test_alloc_sweep(&s2);
}

typedef struct {
    char dir[1024], path[1100];
    char *old;
    size_t old_n;
} write_case;


/* The target still holds the old bytes. */
static void old_file_intact(void *user) {
    write_case *c = user;
    size_t n;
    char *now = test_slurp(c->path, &n);
    if (n != c->old_n || memcmp(now, c->old, n) != 0) fail_msg("%s: a failed write changed the file", c->path);
    free(now);
}

/* Put the old file back after a successful write. */
static void restore_old(void *user) {
    write_case *c = user;
    assert_int_equal(vla_write_file_atomic(c->path, c->old, c->old_n), VLA_OK);
}

/* Sweep `run`, which writes dir/file over an older file. */
static void sweep_write(const char *name, const char *dir, const char *file, vla_status (*run)(void *)) {
    static write_case c;
    snprintf(c.dir, sizeof c.dir, "%s", test_tmp_path(dir));
    assert_int_equal(vla_mkdirs(c.dir), VLA_OK);
    snprintf(c.path, sizeof c.path, "%s/%s", c.dir, file);
    assert_int_equal(vla_write_file_atomic(c.path, "old", 3), VLA_OK);
    assert_int_equal(vla_read_file(c.path, &c.old, &c.old_n), VLA_OK);
    test_alloc_scenario s = {.name = name, .run = run, .reset = restore_old, .check_failed = old_file_intact,
                             .out_dir = c.dir, .user = &c};
    test_alloc_sweep(&s);
    free(c.old);
}

static vla_status write_parquet(void *user) {
    write_case *c = user;
    static const vla_parquet_field f[] = {{"i", VLA_PQW_INT64, 0, 0}, {"s", VLA_PQW_STRING, 1, 1}};
    int64_t v[8], so[9], lo[9];
    const char sb[] = "abababab";
    so[0] = lo[0] = 0;
    for (int i = 0; i < 8; i++) v[i] = i % 2, so[i + 1] = i + 1, lo[i + 1] = i + 1;
    vla_parquet_wcolumn cols[] = {{.values = v}, {.byte_offsets = so, .bytes = (const uint8_t *)sb, .list_offsets = lo}};
    vla_parquet_write_options o = vla_parquet_write_defaults();
    vla_parquet_writer *w;
    VLA_TRY(vla_parquet_writer_open(c->path, f, 2, &o, &w));
    vla_status st = vla_parquet_writer_add_kv(w, "k", "v");
    for (int g = 0; st == VLA_OK && g < 2; g++) st = vla_parquet_writer_write_row_group(w, 8, cols);
    if (st != VLA_OK) {
        vla_parquet_writer_abort(w);
        return st;
    }
    return vla_parquet_writer_close(w);
}

static void test_parquet_write(void **state) {
    (void)state;
    sweep_write("parquet write", "pqw", "out.parquet", write_parquet);
}

/* ---- safetensors ------------------------------------------------------------- */

static vla_status read_safetensors(void *user) {
    vla_safetensors st;
    VLA_TRY(vla_safetensors_open(user, &st));
    vla_status s = VLA_OK;
    float buf[64];
    for (size_t i = 0; s == VLA_OK && i < vla_safetensors_count(&st); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&st, i);
        if (t->numel <= 64) s = vla_safetensors_tensor_to_f32(&st, t, buf, (size_t)t->numel);
    }
    if (s == VLA_OK && !vla_safetensors_meta_get(&st, "format")) s = vla_error(VLA_ERR_NOT_FOUND, "no 'format'");
    vla_safetensors_close(&st);
    return s;
}

static void test_safetensors_read(void **state) {
    (void)state;
    static char path[1024];
    snprintf(path, sizeof path, "%s", test_tmp_path("sample.safetensors"));
    test_write_sample_safetensors(path);
    test_alloc_scenario s = {.name = "safetensors load", .run = read_safetensors, .user = path};
    test_alloc_sweep(&s);
}

static vla_status write_safetensors(void *user) {
    write_case *c = user;
    float a[12] = {0};
    const int64_t shape[2] = {3, 4};
    vla_safetensors_writer *w;
    VLA_TRY(vla_safetensors_writer_new(&w));
    vla_status st = vla_safetensors_writer_add(w, "a", VLA_F32, 2, shape, a);
    if (st == VLA_OK) st = vla_safetensors_writer_add(w, "b", VLA_BF16, 1, shape, a);
    if (st == VLA_OK) st = vla_safetensors_writer_set_meta(w, "format", "pt");
    if (st == VLA_OK) st = vla_safetensors_writer_write(w, c->path);
    vla_safetensors_writer_free(w);
    return st;
}

static void test_safetensors_write(void **state) {
    (void)state;
    sweep_write("safetensors write", "stw", "model.safetensors", write_safetensors);
}

/* ---- video and PNG ----------------------------------------------------------- */

static vla_status read_video(void *user) {
    vla_video_decoder *d;
    VLA_TRY(vla_video_decoder_open(user, NULL, &d));
    static uint8_t rgb[64 * 64 * 3], small[8 * 8 * 3];
    const vla_video_info *in = vla_video_decoder_info(d);
    vla_status st = in->width * in->height <= 64 * 64 ? VLA_OK : vla_error(VLA_ERR_INVALID_ARG, "clip too big");
    if (st == VLA_OK) st = vla_video_decoder_read(d, 0.0, 1e-4, 0, 0, rgb, NULL);
    if (st == VLA_OK) st = vla_video_decoder_read(d, 0.3, 1e-4, 8, 8, small, NULL);
    const double ts[2] = {0.1, 0.2};
    vla_video_request q = {.dec = d, .ts = ts, .n = 2, .tol = 1e-4, .out_w = 8, .out_h = 8, .rgb = small};
    uint8_t two[2 * 8 * 8 * 3];
    q.rgb = two;
    if (st == VLA_OK) st = vla_video_read_batch(&q, 1);
    vla_video_decoder_close(d);
    return st;
}

static void test_video_read(void **state) {
    (void)state;
    static char path[1024];
    snprintf(path, sizeof path, "%s", test_source_path("fuzz/corpus/fuzz_video_file/h264.mp4"));
    test_alloc_scenario s = {.name = "video decode", .run = read_video, .user = path};
    test_alloc_sweep(&s);
}

static vla_status png_round_trip(void *user) {
    (void)user;
    uint8_t rgb[12 * 10 * 3];
    for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(i * 7);
    uint8_t *png, *back = NULL;
    size_t n;
    int w, h;
    VLA_TRY(vla_image_encode_png(rgb, 12, 10, 12 * 3, &png, &n));
    vla_status st = vla_image_decode_png(png, n, &back, &w, &h);
    free(png);
    free(back);
    return st;
}

static void test_png(void **state) {
    (void)state;
    test_alloc_scenario s = {.name = "png encode + decode", .run = png_round_trip};
    test_alloc_sweep(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parquet_read),  cmocka_unit_test(test_parquet_write),
        cmocka_unit_test(test_safetensors_read), cmocka_unit_test(test_safetensors_write),
        cmocka_unit_test(test_video_read),    cmocka_unit_test(test_png),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
