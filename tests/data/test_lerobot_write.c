/* test_lerobot_write.c — the v3.0 writer round trip (every value and every
 * frame back, DuckDB agrees on the parquet files, validate clean), a v2.1
 * dataset built here (JSONL meta, per-episode parquet and mp4) that opens
 * and converts to a clean v3.0, and corruptions that validate lists with
 * file and reason (exit 1 from the CLI). Videos are 64×64 and a few frames. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot.h"
#include "io/parquet.h"
#include "io/video.h"

#define S 64
static const int EP_LEN[3] = {5, 7, 4};
static const char *TASKS[2] = {"push the block", "lift the cube"};

static double num(json_t *v) { return json_is_string(v) ? atof(json_string_value(v)) : json_number_value(v); }

/* Smooth frames (AV1 at crf 30 keeps them well above 30 dB). */
static void make_frame(uint8_t *rgb, int cam, int64_t g) {
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            uint8_t *p = rgb + (y * S + x) * 3;
            p[0] = (uint8_t)(x * 3 + cam * 40);
            p[1] = (uint8_t)(y * 3 + 20);
            p[2] = (uint8_t)((g * 13 + cam * 60) & 255);
        }
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) se += (double)(a[i] - b[i]) * (a[i] - b[i]);
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / (double)n));
}

static float act_val(int64_t g, int k) { return (float)(0.25 * g - k + 0.125); }
static float st_val(int64_t g, int k) { return (float)sin(0.1 * g + k); }

/* Write a v3.0 dataset: action[2], observation.state[3], reward (scalar),
 * done (bool), two 64×64 cameras; 3 episodes, the 2nd with both tasks;
 * one discarded episode in between whose frames stay unreferenced. */
static void write_v3(const char *root, int nan_row, const vla_lr_writer_opts *roll) {
    const char *an[] = {"x", "y"};
    vla_lr_feature_spec f[] = {
        {"action", "float32", 1, {2}, an, 2},
        {"observation.state", "float32", 1, {3}, NULL, 0},
        {"next.reward", "float32", 1, {1}, NULL, 0},
        {"next.done", "bool", 1, {1}, NULL, 0},
        {"observation.images.a", "video", 3, {S, S, 3}, NULL, 0},
        {"observation.images.b", "video", 3, {S, S, 3}, NULL, 0},
    };
    vla_lr_writer_opts o = {.fps = 10, .robot_type = "test_bot", .features = f, .n_features = 6};
    if (roll) { /* roll-over sizes and the codec of test_roll_over */
        o.data_files_size_in_mb = roll->data_files_size_in_mb, o.video_files_size_in_mb = roll->video_files_size_in_mb;
        o.chunks_size = roll->chunks_size, o.video_codec = roll->video_codec;
    }
    vla_lr_writer *w;
    assert_int_equal(vla_lr_writer_open(root, &o, &w), VLA_OK);
    uint8_t img[2][S * S * 3];
    int64_t g = 0;
    for (int e = 0; e < 4; e++) {
        int len = e == 2 ? 3 : EP_LEN[e < 2 ? e : e - 1];
        for (int k = 0; k < len; k++) {
            float a[2] = {act_val(g, 0), act_val(g, 1)}, s[3] = {st_val(g, 0), st_val(g, 1), st_val(g, 2)};
            float r = (float)k / 10, d = k == len - 1;
            if (g == nan_row) a[1] = NAN;
            const float *vals[] = {a, s, &r, &d};
            make_frame(img[0], 0, g);
            make_frame(img[1], 1, g);
            const uint8_t *imgs[] = {img[0], img[1]};
            assert_int_equal(vla_lr_writer_add_frame(w, TASKS[e == 1 && k >= 3], vals, imgs), VLA_OK);
            if (e != 2) g++;
        }
        if (e == 2) vla_lr_writer_discard_episode(w); /* discarded: g not advanced */
        else assert_int_equal(vla_lr_writer_save_episode(w), VLA_OK);
    }
    assert_int_equal(vla_lr_writer_num_episodes(w), 3);
    assert_int_equal(vla_lr_writer_close(w), VLA_OK);
}

static json_t *oracle_read(const char *file) {
    char cmd[4096], out[256];
    const char *dst = test_tmp_path("duck.json");
    snprintf(cmd, sizeof cmd, "node '%s' read '%s' > '%s'", test_source_path("tools/oracle/oracle.mjs"), file, dst);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("oracle read %s failed", file);
    json_error_t err;
    json_t *j = json_load_file(dst, 0, &err);
    if (!j) fail_msg("oracle output: %s", err.text);
    return j;
}

static int validate_count(const char *root, json_t **problems_out) {
    json_t *p = json_array();
    vla_lerobot_validate(root, p);
    int n = (int)json_array_size(p);
    if (n && !problems_out) {
        char *s = json_dumps(p, JSON_INDENT(1));
        fprintf(stderr, "problems: %s\n", s);
        free(s);
    }
    if (problems_out) *problems_out = p;
    else json_decref(p);
    return n;
}

static void test_round_trip(void **state) {
    (void)state;
    const char *root = test_tmp_path("rt");
    write_v3(root, -1, NULL);
    char p[4096];
    snprintf(p, sizeof p, "%s.partial-%d", root, (int)getpid());
    assert_false(vla_path_exists(p));
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    assert_int_equal(ds->version, 30);
    assert_int_equal(ds->n_episodes, 3);
    assert_int_equal(ds->n_rows, 16);
    assert_int_equal(ds->n_tasks, 2);
    assert_string_equal(ds->tasks[0], TASKS[0]);
    assert_string_equal(ds->tasks[1], TASKS[1]);
    assert_int_equal(ds->episodes[1].n_tasks, 2);
    assert_int_equal(ds->n_cameras, 2);
    const vla_lr_feature *a = vla_lerobot_feature(ds, "action"), *s = vla_lerobot_feature(ds, "observation.state");
    const vla_lr_feature *r = vla_lerobot_feature(ds, "next.reward"), *d = vla_lerobot_feature(ds, "next.done");
    assert_non_null(a);
    assert_non_null(d);
    assert_int_equal(d->dtype, VLA_LR_BOOL);
    int64_t g = 0;
    for (int e = 0; e < 3; e++)
        for (int k = 0; k < EP_LEN[e]; k++, g++) {
            assert_true(a->values[g * 2] == act_val(g, 0) && a->values[g * 2 + 1] == act_val(g, 1));
            for (int c = 0; c < 3; c++) assert_true(s->values[g * 3 + c] == st_val(g, c));
            assert_true(r->values[g] == (float)k / 10);
            assert_true(d->values[g] == (k == EP_LEN[e] - 1));
            assert_int_equal(ds->frame_index[g], k);
            assert_int_equal(ds->episode_index[g], e);
            assert_int_equal(ds->index[g], g);
            assert_int_equal(ds->task_index[g], e == 1 && k >= 3);
            assert_true(fabs(ds->timestamp[g] - k / 10.0) < 1e-6);
        }
    /* every frame, both cameras, decoded in parallel */
    vla_lr_reader *rd;
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    uint8_t got[2][S * S * 3], want[S * S * 3];
    double worst = 99;
    for (int64_t e = 0; e < ds->n_episodes; e++)
        for (int64_t row = ds->episodes[e].from; row < ds->episodes[e].to; row++) {
            int cams[2] = {0, 1};
            uint8_t *outs[2] = {got[0], got[1]};
            vla_status st = vla_lr_reader_sample(rd, cams, 2, &row, 1, 0, 0, 0, outs);
            if (st != VLA_OK) fail_msg("row %lld: %s", (long long)row, vla_error_message());
            for (int c = 0; c < 2; c++) {
                make_frame(want, c, row);
                double q = psnr(got[c], want, sizeof want);
                if (q < worst) worst = q;
            }
        }
    fprintf(stderr, "round trip: worst PSNR %.2f dB over %lld frames × 2 cameras\n", worst, (long long)ds->n_rows);
    assert_true(worst > 30);
    /* a window of frames, scaled */
    int64_t rows[3] = {5, 6, 7};
    uint8_t small[3 * 32 * 32 * 3];
    assert_int_equal(vla_lr_reader_frames(rd, 1, rows, 3, 32, 32, 0, small), VLA_OK);
    vla_lr_reader_close(rd);
    /* stored stats agree with a recomputation */
    json_t *comp, *rep = json_array();
    int bad = -1;
    assert_int_equal(vla_lerobot_compute_stats(ds, true, &comp), VLA_OK);
    assert_int_equal(vla_lerobot_compare_stats(ds, comp, rep, &bad), VLA_OK);
    if (bad) {
        char *x = json_dumps(rep, 0);
        fprintf(stderr, "%s\n", x);
        free(x);
    }
    assert_int_equal(bad, 0);
    const vla_lr_stats *sa = vla_lerobot_stats(ds, "action");
    assert_non_null(sa->q01);
    assert_int_equal(sa->count, 16);
    const vla_lr_stats *si = vla_lerobot_stats(ds, "observation.images.a");
    assert_int_equal(si->n, 3);
    assert_true(si->max[0] <= 1 && si->min[2] >= 0);
    json_decref(comp);
    json_decref(rep);
    assert_int_equal(validate_count(root, NULL), 0);

    /* file layout as LeRobot writes it: one row group per episode, SNAPPY;
     * tasks.parquet carries pandas metadata naming the index "task" */
    snprintf(p, sizeof p, "%s/data/chunk-000/file-000.parquet", root);
    vla_parquet_file *pq;
    assert_int_equal(vla_parquet_open(p, &pq), VLA_OK);
    assert_int_equal(vla_parquet_num_row_groups(pq), 3);
    assert_int_equal(vla_parquet_row_group_rows(pq, 1), EP_LEN[1]);
    assert_int_equal(vla_parquet_chunk_codec(pq, 0, 0), VLA_PQ_SNAPPY);
    assert_non_null(vla_parquet_kv(pq, "huggingface"));
    vla_parquet_close(pq);
    snprintf(p, sizeof p, "%s/meta/tasks.parquet", root);
    assert_int_equal(vla_parquet_open(p, &pq), VLA_OK);
    json_t *pandas;
    const char *pm = vla_parquet_kv(pq, "pandas");
    assert_non_null(pm);
    assert_int_equal(vla_json_parse("pandas", pm, strlen(pm), &pandas), VLA_OK);
    assert_string_equal(json_string_value(json_array_get(json_object_get(pandas, "index_columns"), 0)), "__index_level_0__");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(pandas, "columns"), 1), "name")), "task");
    json_decref(pandas);
    vla_parquet_close(pq);
    snprintf(p, sizeof p, "%s/meta/info.json", root);
    json_t *info;
    assert_int_equal(vla_json_load_file(p, &info), VLA_OK);
    json_t *feats = json_object_get(info, "features");
    assert_true(json_number_value(json_object_get(json_object_get(feats, "action"), "fps")) == 10);
    json_t *vinfo = json_object_get(json_object_get(feats, "observation.images.a"), "info");
    assert_string_equal(json_string_value(json_object_get(vinfo, "video.pix_fmt")), "yuv420p");
    assert_non_null(json_object_get(vinfo, "video.codec"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(info, "splits"), "train")), "0:3");
    json_decref(info);

    /* DuckDB reads what we wrote */
    snprintf(p, sizeof p, "%s/data/chunk-000/file-000.parquet", root);
    json_t *dd = oracle_read(p), *rows_j = json_object_get(dd, "rows");
    assert_int_equal(json_array_size(rows_j), 16);
    for (size_t i = 0; i < 16; i++) {
        json_t *o = json_array_get(rows_j, i);
        assert_true((float)num(json_array_get(json_object_get(o, "action"), 1)) == a->values[i * 2 + 1]);
        assert_true((float)num(json_array_get(json_object_get(o, "observation.state"), 2)) == s->values[i * 3 + 2]);
        assert_true((float)num(json_object_get(o, "next.reward")) == r->values[i]);
        assert_int_equal(json_is_true(json_object_get(o, "next.done")), d->values[i] != 0);
        assert_int_equal((int64_t)num(json_object_get(o, "index")), (int64_t)i);
        assert_int_equal((int64_t)num(json_object_get(o, "task_index")), ds->task_index[i]);
    }
    json_decref(dd);
    snprintf(p, sizeof p, "%s/meta/episodes/chunk-000/file-000.parquet", root);
    dd = oracle_read(p);
    rows_j = json_object_get(dd, "rows");
    assert_int_equal(json_array_size(rows_j), 3);
    for (size_t e = 0; e < 3; e++) {
        json_t *o = json_array_get(rows_j, e);
        assert_int_equal((int64_t)num(json_object_get(o, "dataset_from_index")), ds->episodes[e].from);
        assert_int_equal((int64_t)num(json_object_get(o, "length")), EP_LEN[e]);
        assert_true(num(json_object_get(o, "videos/observation.images.b/from_timestamp")) == ds->episodes[e].video[1].from_ts);
        assert_int_equal(json_array_size(json_object_get(o, "stats/action/q99")), 2);
        assert_int_equal((int64_t)num(json_array_get(json_object_get(o, "stats/action/count"), 0)), EP_LEN[e]);
    }
    /* the discarded episode's 3 frames sit between episodes 1 and 2 */
    assert_true(fabs(ds->episodes[2].video[0].from_ts - 1.5) < 1e-9);
    assert_int_equal(json_array_size(json_object_get(json_array_get(rows_j, 1), "tasks")), 2);
    json_decref(dd);
    snprintf(p, sizeof p, "%s/meta/tasks.parquet", root);
    dd = oracle_read(p);
    rows_j = json_object_get(dd, "rows");
    assert_int_equal(json_array_size(rows_j), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows_j, 1), "__index_level_0__")), TASKS[1]);
    assert_int_equal((int64_t)num(json_object_get(json_array_get(rows_j, 1), "task_index")), 1);
    json_decref(dd);
    vla_lerobot_close(ds);

    /* CLI on the written dataset */
    char cmd[4096], out[16384];
    const char *png = test_tmp_path("f.png");
    snprintf(cmd, sizeof cmd, "'%s' dataset frame '%s' --index 7 --camera observation.images.b --png '%s' --json", test_cli_path(), root, png);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"next.done\""));
    assert_true(vla_path_exists(png));
    snprintf(cmd, sizeof cmd, "'%s' dataset validate '%s'", test_cli_path(), root);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "'%s' dataset stats '%s' >/dev/null", test_cli_path(), root);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    /* the writer refuses an existing root */
    vla_lr_feature_spec f1 = {"x", "float32", 1, {1}, NULL, 0};
    vla_lr_writer_opts o = {.fps = 10, .features = &f1, .n_features = 1};
    vla_lr_writer *w;
    assert_int_not_equal(vla_lr_writer_open(root, &o, &w), VLA_OK);
}

/* ---- v2.1, built by hand ---------------------------------------------------- */

static void write_text(const char *path, const char *text) {
    assert_int_equal(vla_write_file_atomic(path, text, strlen(text)), VLA_OK);
}

/* index_gap: add 1 to `index` from that global row on (-1: none). */
static void write_v21(const char *root, int index_gap) {
    char p[4096];
    snprintf(p, sizeof p, "%s/meta", root);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    snprintf(p, sizeof p, "%s/data/chunk-000", root);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    snprintf(p, sizeof p, "%s/videos/chunk-000/observation.images.cam", root);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    int total = EP_LEN[0] + EP_LEN[1];
    char info[4096];
    snprintf(info, sizeof info,
             "{\"codebase_version\": \"v2.1\", \"robot_type\": \"koch\", \"total_episodes\": 2, \"total_frames\": %d,"
             " \"total_tasks\": 1, \"total_videos\": 2, \"total_chunks\": 1, \"chunks_size\": 1000, \"fps\": 10,"
             " \"splits\": {\"train\": \"0:2\"},"
             " \"data_path\": \"data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet\","
             " \"video_path\": \"videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4\","
             " \"features\": {\"action\": {\"dtype\": \"float32\", \"shape\": [2], \"names\": null},"
             " \"observation.images.cam\": {\"dtype\": \"video\", \"shape\": [%d, %d, 3], \"names\": [\"height\", \"width\", \"channels\"],"
             "   \"info\": {\"video.fps\": 10.0, \"video.height\": %d, \"video.width\": %d, \"video.codec\": \"av1\", \"video.pix_fmt\": \"yuv420p\"}},"
             " \"timestamp\": {\"dtype\": \"float32\", \"shape\": [1], \"names\": null},"
             " \"frame_index\": {\"dtype\": \"int64\", \"shape\": [1], \"names\": null},"
             " \"episode_index\": {\"dtype\": \"int64\", \"shape\": [1], \"names\": null},"
             " \"index\": {\"dtype\": \"int64\", \"shape\": [1], \"names\": null},"
             " \"task_index\": {\"dtype\": \"int64\", \"shape\": [1], \"names\": null}}}",
             total, S, S, S, S);
    snprintf(p, sizeof p, "%s/meta/info.json", root);
    write_text(p, info);
    snprintf(p, sizeof p, "%s/meta/tasks.jsonl", root);
    write_text(p, "{\"task_index\": 0, \"task\": \"push the block\"}\n");
    snprintf(p, sizeof p, "%s/meta/episodes.jsonl", root);
    char eps[512];
    snprintf(eps, sizeof eps, "{\"episode_index\": 0, \"tasks\": [\"push the block\"], \"length\": %d}\n"
                              "{\"episode_index\": 1, \"tasks\": [\"push the block\"], \"length\": %d}\n", EP_LEN[0], EP_LEN[1]);
    write_text(p, eps);
    snprintf(p, sizeof p, "%s/meta/episodes_stats.jsonl", root);
    write_text(p, "{\"episode_index\": 0, \"stats\": {\"action\": {\"min\": [0, -1], \"max\": [1, 0], \"mean\": [0.5, -0.5], \"std\": [0.1, 0.1], \"count\": [5]}}}\n"
                  "{\"episode_index\": 1, \"stats\": {\"action\": {\"min\": [1, -1], \"max\": [2, 1], \"mean\": [1.5, 0.5], \"std\": [0.1, 0.1], \"count\": [5]}}}\n");
    int64_t g = 0;
    for (int e = 0; e < 2; e++) {
        int n = EP_LEN[e];
        float act[16 * 2], ts[16];
        int64_t fi[16], ei[16], ix[16], ti[16], lo[17];
        for (int k = 0; k < n; k++, g++) {
            act[k * 2] = act_val(g, 0);
            act[k * 2 + 1] = act_val(g, 1);
            ts[k] = (float)(k / 10.0);
            fi[k] = k;
            ei[k] = e;
            ix[k] = g + (index_gap >= 0 && g >= index_gap);
            ti[k] = 0;
            lo[k] = k * 2;
        }
        lo[n] = n * 2;
        vla_parquet_field fields[] = {{"action", VLA_PQW_FLOAT, 1, 0}, {"timestamp", VLA_PQW_FLOAT, 0, 0},
                                      {"frame_index", VLA_PQW_INT64, 0, 0}, {"episode_index", VLA_PQW_INT64, 0, 0},
                                      {"index", VLA_PQW_INT64, 0, 0}, {"task_index", VLA_PQW_INT64, 0, 0}};
        vla_parquet_wcolumn cols[] = {{.values = act, .list_offsets = lo}, {.values = ts}, {.values = fi}, {.values = ei}, {.values = ix}, {.values = ti}};
        snprintf(p, sizeof p, "%s/data/chunk-000/episode_%06d.parquet", root, e);
        vla_parquet_write_options o = vla_parquet_write_defaults();
        vla_parquet_writer *pw;
        assert_int_equal(vla_parquet_writer_open(p, fields, 6, &o, &pw), VLA_OK);
        assert_int_equal(vla_parquet_writer_write_row_group(pw, n, cols), VLA_OK);
        assert_int_equal(vla_parquet_writer_close(pw), VLA_OK);
        snprintf(p, sizeof p, "%s/videos/chunk-000/observation.images.cam/episode_%06d.mp4", root, e);
        vla_video_writer_opts vo = {S, S, 10, NULL, -1, -1};
        vla_video_writer *vw;
        assert_int_equal(vla_video_writer_open(p, &vo, &vw), VLA_OK);
        uint8_t img[S * S * 3];
        for (int k = 0; k < n; k++) {
            make_frame(img, 0, g - n + k);
            assert_int_equal(vla_video_writer_add_rgb(vw, img, S * 3), VLA_OK);
        }
        assert_int_equal(vla_video_writer_close(vw), VLA_OK);
    }
}

static void test_v21_open_and_convert(void **state) {
    (void)state;
    const char *root = test_tmp_path("v21");
    write_v21(root, -1);
    vla_lerobot *ds;
    vla_status st = vla_lerobot_open(root, &ds);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(ds->version, 21);
    assert_int_equal(ds->n_rows, 12);
    assert_int_equal(ds->episodes[1].from, 5);
    assert_int_equal(ds->episodes[1].to, 12);
    const vla_lr_stats *sa = vla_lerobot_stats(ds, "action");
    assert_non_null(sa);
    assert_null(sa->q01);
    assert_true(fabs(sa->mean[0] - 1.0) < 1e-12 && sa->min[0] == 0 && sa->max[1] == 1 && sa->count == 10);
    assert_true(fabs(sa->std[0] - sqrt(0.01 + 0.25)) < 1e-12); /* pooled: within 0.1², between 0.5² */
    vla_lr_reader *rd;
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    uint8_t got[S * S * 3], want[S * S * 3];
    for (int64_t row = 0; row < 12; row++) {
        assert_int_equal(vla_lr_reader_frame(rd, 0, row, 0, 0, 0, got), VLA_OK);
        make_frame(want, 0, row);
        assert_true(psnr(got, want, sizeof got) > 30);
    }
    vla_lr_reader_close(rd);
    vla_lerobot_close(ds);
    assert_int_equal(validate_count(root, NULL), 0);

    /* convert remuxes: the per-episode mp4s' packets are copied into one file, so every frame decodes to
     * exactly the source's pixels; ffprobe counts the packets */
    const char *dst = test_tmp_path("v21-as-v30");
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' dataset convert '%s' '%s'", test_cli_path(), root, dst);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(validate_count(dst, NULL), 0);
    vla_lerobot *src;
    assert_int_equal(vla_lerobot_open(root, &src), VLA_OK);
    assert_int_equal(vla_lerobot_open(dst, &ds), VLA_OK);
    assert_int_equal(ds->version, 30);
    assert_int_equal(ds->n_rows, 12);
    assert_int_equal(ds->n_episodes, 2);
    const vla_lr_feature *a = vla_lerobot_feature(ds, "action");
    for (int64_t g = 0; g < 12; g++) assert_true(a->values[g * 2 + 1] == act_val(g, 1));
    vla_lr_reader *rs;
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    assert_int_equal(vla_lr_reader_open(src, &rs), VLA_OK);
    uint8_t orig[S * S * 3];
    for (int64_t row = 11; row >= 0; row--) {
        assert_int_equal(vla_lr_reader_frame(rd, 0, row, 0, 0, 0, got), VLA_OK);
        assert_int_equal(vla_lr_reader_frame(rs, 0, row, 0, 0, 0, orig), VLA_OK);
        assert_memory_equal(got, orig, sizeof got);
    }
    vla_lr_reader_close(rs);
    vla_lr_reader_close(rd);
    vla_lerobot_close(src);
    vla_lerobot_close(ds);
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "
             "'%s/videos/observation.images.cam/chunk-000/file-000.mp4'",
             dst);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(atoi(out), 12);
    /* asked to, it re-encodes (the frames change, a little) */
    const char *dst2 = test_tmp_path("v21-as-v30-x264");
    snprintf(cmd, sizeof cmd, "'%s' dataset convert --vcodec=libx264 '%s' '%s'", test_cli_path(), root, dst2);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(vla_lerobot_open(dst2, &ds), VLA_OK);
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    assert_int_equal(vla_lr_reader_frame(rd, 0, 9, 0, 0, 0, got), VLA_OK);
    make_frame(want, 0, 9);
    assert_true(psnr(got, want, sizeof got) > 28); /* encoded twice */
    vla_lr_reader_close(rd);
    vla_lerobot_close(ds);
    /* a v3.0 source whose second episode starts on frame 5 (keyframes every 2 frames): not cut by episode, so
     * convert says so and re-encodes */
    const char *v3 = test_tmp_path("v3-for-convert"), *dst3 = test_tmp_path("v3-reencoded");
    write_v3(v3, -1, NULL);
    snprintf(cmd, sizeof cmd, "'%s' dataset convert '%s' '%s' 2>&1", test_cli_path(), v3, dst3);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    if (!strstr(out, "re-encoding the videos") || !strstr(out, "keyframe")) fail_msg("no fallback message: %s", out);
    assert_int_equal(validate_count(dst3, NULL), 0);
    assert_int_equal(vla_lerobot_open(dst3, &ds), VLA_OK);
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    assert_int_equal(vla_lr_reader_frame(rd, 1, 9, 0, 0, 0, got), VLA_OK);
    make_frame(want, 1, 9);
    assert_true(psnr(got, want, sizeof got) > 28);
    vla_lr_reader_close(rd);
    vla_lerobot_close(ds);
}

/* A partial download (LeRobot's episodes=[…]): info.json lists both
 * episodes, episode 0's data and video are gone. Selected reads equal the
 * full read row for row and frame for frame; the strict open says what is
 * missing and how to go on; info, frame and validate serve what is there. */
static void test_partial_download(void **state) {
    (void)state;
    const char *root = test_tmp_path("v21-partial");
    test_rmrf(root);
    write_v21(root, -1);
    vla_lerobot *full, *sel;
    assert_int_equal(vla_lerobot_open(root, &full), VLA_OK);
    int64_t one[1] = {1};
    vla_lr_open_opts o = {one, 1, false};
    vla_status st = vla_lerobot_open_opts(root, &o, &sel);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(sel->selected);
    assert_int_equal(sel->n_episodes, 1);
    assert_int_equal(sel->n_episodes_listed, 2);
    assert_int_equal(sel->n_rows, EP_LEN[1]);
    assert_int_equal(sel->episodes[0].from, 0);
    assert_int_equal(sel->episodes[0].index_from, EP_LEN[0]);
    const vla_lr_feature *fa = vla_lerobot_feature(full, "action"), *sa = vla_lerobot_feature(sel, "action");
    vla_lr_reader *rf, *rs;
    assert_int_equal(vla_lr_reader_open(full, &rf), VLA_OK);
    assert_int_equal(vla_lr_reader_open(sel, &rs), VLA_OK);
    uint8_t a[S * S * 3], b[S * S * 3];
    for (int64_t r = 0; r < sel->n_rows; r++) {
        int64_t fr = r + EP_LEN[0];
        assert_int_equal(sel->index[r], full->index[fr]);
        assert_int_equal(vla_lerobot_row_of_index(sel, full->index[fr]), r);
        assert_true(sa->values[r * 2] == fa->values[fr * 2] && sa->values[r * 2 + 1] == fa->values[fr * 2 + 1]);
        assert_int_equal(sel->frame_index[r], full->frame_index[fr]);
        assert_int_equal(vla_lr_reader_frame(rf, 0, fr, 0, 0, 0, a), VLA_OK);
        assert_int_equal(vla_lr_reader_frame(rs, 0, r, 0, 0, 0, b), VLA_OK);
        assert_memory_equal(a, b, sizeof a);
    }
    assert_int_equal(vla_lerobot_row_of_index(sel, 0), -1);
    vla_lr_reader_close(rf);
    vla_lr_reader_close(rs);
    vla_lerobot_close(sel);
    vla_lerobot_close(full);
    /* selections that cannot be */
    int64_t bad[2] = {1, 5};
    o = (vla_lr_open_opts){bad, 2, false};
    assert_int_equal(vla_lerobot_open_opts(root, &o, &sel), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "episode 5 is not in the dataset"));
    int64_t twice[2] = {1, 1};
    o = (vla_lr_open_opts){twice, 2, false};
    assert_int_equal(vla_lerobot_open_opts(root, &o, &sel), VLA_ERR_INVALID_ARG);
    int64_t *eps, n;
    assert_int_equal(vla_lerobot_parse_episodes("[0, 2-4,7]", &eps, &n), VLA_OK);
    assert_int_equal(n, 5);
    assert_true(eps[0] == 0 && eps[1] == 2 && eps[3] == 4 && eps[4] == 7);
    free(eps);
    assert_int_equal(vla_lerobot_parse_episodes("1,x", &eps, &n), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_lerobot_parse_episodes("3-1", &eps, &n), VLA_ERR_INVALID_ARG);

    /* the download that lacks episode 0 */
    char p[4096], cmd[8192], out[16384];
    snprintf(p, sizeof p, "%s/data/chunk-000/episode_000000.parquet", root);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof p, "%s/videos/chunk-000/observation.images.cam/episode_000000.mp4", root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(vla_lerobot_open(root, &sel), VLA_ERR_NOT_FOUND);
    const char *msg = vla_error_message();
    if (!strstr(msg, "1 of 2 episodes have no data file") || !strstr(msg, "episode_000000.parquet") ||
        !strstr(msg, "--dataset.episodes=1"))
        fail_msg("unhelpful message: %s", msg);
    o = (vla_lr_open_opts){one, 1, false};
    assert_int_equal(vla_lerobot_open_opts(root, &o, &sel), VLA_OK);
    assert_int_equal(sel->n_rows, EP_LEN[1]);
    vla_lerobot_close(sel);
    int64_t zero[1] = {0};
    o = (vla_lr_open_opts){zero, 1, false};
    assert_int_equal(vla_lerobot_open_opts(root, &o, &sel), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "episode_000000.parquet: data file is missing (episode 0)"));

    /* the CLI: info reads meta/ only; frame reads the row's episode; validate over the selection */
    snprintf(cmd, sizeof cmd, "'%s' dataset info --json '%s'", test_cli_path(), root);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "total_episodes")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "episodes_present")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "present_list")), "1");
    json_decref(j);
    snprintf(cmd, sizeof cmd, "'%s' dataset frame --json --index=%d '%s'", test_cli_path(), EP_LEN[0] + 2, root);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    j = json_loads(out, 0, &err);
    assert_non_null(j);
    json_t *row = json_object_get(j, "row");
    assert_int_equal(json_integer_value(json_object_get(row, "frame_index")), 2);
    assert_int_equal(json_integer_value(json_object_get(row, "episode_index")), 1);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "'%s' dataset frame --index=1 '%s' 2>&1", test_cli_path(), root);
    assert_int_not_equal(test_run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "data file is missing (episode 0)"));
    snprintf(cmd, sizeof cmd, "'%s' dataset validate --dataset.episodes=1 '%s'", test_cli_path(), root);
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("validate over the present episode: %s", out);
    snprintf(cmd, sizeof cmd, "'%s' dataset validate '%s'", test_cli_path(), root);
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "data file is missing (episode 0)"));
    snprintf(cmd, sizeof cmd, "'%s' dataset stats --images=false --dataset.episodes=1 '%s' 2>&1", test_cli_path(), root);
    test_run(cmd, out, sizeof out); /* stored stats are whole-dataset: may differ, must not fail to run */
    assert_non_null(strstr(out, "mismatch"));
    const char *dst = test_tmp_path("v21-partial-as-v30");
    test_rmrf(dst);
    snprintf(cmd, sizeof cmd, "'%s' dataset convert --dataset.episodes=1 '%s' '%s'", test_cli_path(), root, dst);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(vla_lerobot_open(dst, &sel), VLA_OK);
    assert_int_equal(sel->n_rows, EP_LEN[1]);
    assert_int_equal(sel->n_episodes, 1);
    vla_lerobot_close(sel);
    test_rmrf(dst);
    test_rmrf(root);
}

/* An `image` feature (PNG bytes in a {bytes, path} struct column, written
 * by DuckDB) reads back pixel for pixel. The PNGs are frames of a written
 * dataset, exported by `vla dataset frame --png`. */
static void test_image_feature(void **state) {
    (void)state;
    const char *src = test_tmp_path("img-src");
    write_v3(src, -1, NULL);
    const char *root = test_tmp_path("img");
    char p[4096], cmd[16384], out[4096];
    snprintf(p, sizeof p, "%s/meta", root);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    snprintf(p, sizeof p, "%s/data/chunk-000", root);
    assert_int_equal(vla_mkdirs(p), VLA_OK);
    enum { N = 4 };
    int at = snprintf(cmd, sizeof cmd, "node '%s' '%s/data/chunk-000/episode_000000.parquet' observation.images.wrist 10",
                      test_source_path("tools/oracle/lerobot_images.mjs"), root);
    for (int i = 0; i < N; i++) {
        char png[4096], c2[8192];
        snprintf(png, sizeof png, "%s/f%d.png", test_tmp_dir(), i);
        snprintf(c2, sizeof c2, "'%s' dataset frame '%s' --index %d --camera observation.images.a --png '%s' >/dev/null", test_cli_path(), src, i, png);
        assert_int_equal(test_run(c2, out, sizeof out), 0);
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " '%s'", png);
    }
    if (test_run(cmd, out, sizeof out) != 0) fail_msg("DuckDB could not write the image parquet: %s", cmd);
    snprintf(p, sizeof p, "%s/meta/info.json", root);
    char info[2048];
    snprintf(info, sizeof info,
             "{\"codebase_version\": \"v2.1\", \"robot_type\": \"x\", \"total_episodes\": 1, \"total_frames\": %d, \"total_tasks\": 1,"
             " \"chunks_size\": 1000, \"fps\": 10, \"data_path\": \"data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet\","
             " \"video_path\": null, \"features\": {\"observation.images.wrist\": {\"dtype\": \"image\", \"shape\": [%d, %d, 3],"
             " \"names\": [\"height\", \"width\", \"channel\"]}, \"timestamp\": {\"dtype\": \"float32\", \"shape\": [1]},"
             " \"frame_index\": {\"dtype\": \"int64\", \"shape\": [1]}, \"episode_index\": {\"dtype\": \"int64\", \"shape\": [1]},"
             " \"index\": {\"dtype\": \"int64\", \"shape\": [1]}, \"task_index\": {\"dtype\": \"int64\", \"shape\": [1]}}}", N, S, S);
    write_text(p, info);
    snprintf(p, sizeof p, "%s/meta/tasks.jsonl", root);
    write_text(p, "{\"task_index\": 0, \"task\": \"look\"}\n");
    snprintf(p, sizeof p, "%s/meta/episodes.jsonl", root);
    char eps[128];
    snprintf(eps, sizeof eps, "{\"episode_index\": 0, \"tasks\": [\"look\"], \"length\": %d}\n", N);
    write_text(p, eps);

    vla_lerobot *a, *b;
    vla_status st = vla_lerobot_open(root, &a);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_lerobot_open(src, &b), VLA_OK);
    assert_int_equal(a->n_cameras, 1);
    assert_int_equal(a->features[a->camera_feature[0]].dtype, VLA_LR_IMAGE);
    vla_lr_reader *ra, *rb;
    assert_int_equal(vla_lr_reader_open(a, &ra), VLA_OK);
    assert_int_equal(vla_lr_reader_open(b, &rb), VLA_OK);
    uint8_t x[S * S * 3], y[S * S * 3];
    for (int64_t i = 0; i < N; i++) {
        st = vla_lr_reader_frame(ra, 0, i, 0, 0, 0, x);
        if (st != VLA_OK) fail_msg("%s", vla_error_message());
        assert_int_equal(vla_lr_reader_frame(rb, 0, i, 0, 0, 0, y), VLA_OK);
        assert_memory_equal(x, y, sizeof x);
    }
    uint8_t small[16 * 16 * 3];
    assert_int_equal(vla_lr_reader_frame(ra, 0, 2, 16, 16, 0, small), VLA_OK);
    vla_lr_reader_close(ra);
    vla_lr_reader_close(rb);
    vla_lerobot_close(a);
    vla_lerobot_close(b);
    assert_int_equal(validate_count(root, NULL), 0);
}

/* ---- corruptions ------------------------------------------------------------- */

static int has_problem(json_t *probs, const char *file_part, const char *reason_part) {
    for (size_t i = 0; i < json_array_size(probs); i++) {
        const char *f = json_string_value(json_object_get(json_array_get(probs, i), "file"));
        const char *r = json_string_value(json_object_get(json_array_get(probs, i), "reason"));
        if (f && r && strstr(f, file_part) && strstr(r, reason_part)) return 1;
    }
    char *s = json_dumps(probs, JSON_INDENT(1));
    fprintf(stderr, "no problem (%s, %s) in %s\n", file_part, reason_part, s);
    free(s);
    return 0;
}

static void cli_validate_fails(const char *root, const char *needle) {
    char cmd[4096], out[16384];
    snprintf(cmd, sizeof cmd, "'%s' dataset validate '%s' --json", test_cli_path(), root);
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, needle));
}

static void test_corruptions(void **state) {
    (void)state;
    char p[4096], cmd[8192], out[1024];
    const char *base = test_tmp_path("good");
    write_v3(base, -1, NULL);
    json_t *probs;

    /* truncated info.json */
    const char *t1 = test_tmp_path("trunc");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && truncate -s 100 '%s/meta/info.json'", base, t1, t1);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(validate_count(t1, &probs), 1);
    assert_true(has_problem(probs, "meta/info.json", ""));
    json_decref(probs);
    vla_lerobot *ds;
    assert_int_not_equal(vla_lerobot_open(t1, &ds), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "info.json"));
    cli_validate_fails(t1, "info.json");

    /* missing data file */
    const char *t2 = test_tmp_path("nodata");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && rm '%s/data/chunk-000/file-000.parquet'", base, t2, t2);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    validate_count(t2, &probs);
    assert_true(has_problem(probs, "data/chunk-000/file-000.parquet", "missing"));
    assert_true(has_problem(probs, "meta/info.json", "total_frames"));
    json_decref(probs);
    assert_int_equal(vla_lerobot_open(t2, &ds), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "file-000.parquet: data file is missing"));
    cli_validate_fails(t2, "data file is missing");

    /* total_frames mismatch */
    const char *t3 = test_tmp_path("frames");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", base, t3);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    snprintf(p, sizeof p, "%s/meta/info.json", t3);
    json_t *info;
    assert_int_equal(vla_json_load_file(p, &info), VLA_OK);
    json_object_set_new(info, "total_frames", json_integer(17));
    assert_int_equal(vla_json_write_file(p, info), VLA_OK);
    json_decref(info);
    assert_int_equal(validate_count(t3, &probs), 1);
    assert_true(has_problem(probs, "meta/info.json", "total_frames is 17 but the data files hold 16 rows"));
    json_decref(probs);
    assert_int_equal(vla_lerobot_open(t3, &ds), VLA_ERR_FORMAT);
    cli_validate_fails(t3, "total_frames is 17");

    /* NaN in action */
    const char *t4 = test_tmp_path("nan");
    write_v3(t4, 9, NULL);
    assert_int_equal(vla_lerobot_open(t4, &ds), VLA_OK); /* opens, but says so */
    assert_int_equal(ds->n_nonfinite, 1);
    vla_lerobot_close(ds);
    assert_int_equal(validate_count(t4, &probs), 1);
    assert_true(has_problem(probs, "data/chunk-000/file-000.parquet", "feature 'action' has 1 non-finite values (NaN/Inf), first at row 9, element 1"));
    json_decref(probs);
    cli_validate_fails(t4, "non-finite");

    /* non-contiguous index (v2.1 files written here) */
    const char *t5 = test_tmp_path("gap");
    write_v21(t5, 7);
    validate_count(t5, &probs);
    assert_true(has_problem(probs, "data/chunk-000/episode_000001.parquet", "column 'index' is not contiguous: row 7 has index 8"));
    json_decref(probs);
    assert_int_equal(vla_lerobot_open(t5, &ds), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "episode_000001.parquet: column 'index' is not contiguous"));
    cli_validate_fails(t5, "not contiguous");

    /* unreadable video: garbage bytes in place of an mp4 */
    const char *t6 = test_tmp_path("badvideo");
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && head -c 3000 /dev/urandom > '%s/videos/observation.images.a/chunk-000/file-000.mp4'", base, t6, t6);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    validate_count(t6, &probs);
    assert_true(has_problem(probs, "videos/observation.images.a/chunk-000/file-000.mp4", "video does not open"));
    json_decref(probs);
    snprintf(cmd, sizeof cmd, "'%s' dataset frame '%s' --index 3 2>&1", test_cli_path(), t6);
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "file-000.mp4"));

    /* missing root and not-a-dataset */
    snprintf(cmd, sizeof cmd, "'%s' dataset info '%s/nope' 2>&1", test_cli_path(), base);
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "nope"));
    snprintf(cmd, sizeof cmd, "'%s' dataset info 2>&1", test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 2);
}

/* Files roll over by size as LeRobot's do: with tiny limits and 2 files per
 * chunk every episode starts a new data file (chunk-000/file-000, file-001,
 * chunk-001/file-000) and the cameras' mp4s roll over too; DuckDB reads the
 * episodes metadata and each data file, and vla.c reads every value and
 * frame back, validate clean. mpeg4 emits a packet per frame, so the video
 * sizes are known as frames arrive (AV1 encoders hold frames back). */
static void test_roll_over(void **state) {
    (void)state;
    const char *root = test_tmp_path("roll");
    vla_lr_writer_opts roll = {.data_files_size_in_mb = 1e-4, .video_files_size_in_mb = 1e-5, .chunks_size = 2, .video_codec = "mpeg4"};
    write_v3(root, -1, &roll);
    char p[4096];
    snprintf(p, sizeof p, "%s/meta/episodes/chunk-000/file-000.parquet", root);
    json_t *dd = oracle_read(p), *rows_j = json_object_get(dd, "rows");
    assert_int_equal(json_array_size(rows_j), 3);
    int64_t from = 0, video_files = 1, prev_file = 0, prev_chunk = 0;
    for (int e = 0; e < 3; e++) {
        json_t *o = json_array_get(rows_j, (size_t)e);
        int64_t dc = (int64_t)num(json_object_get(o, "data/chunk_index")), df = (int64_t)num(json_object_get(o, "data/file_index"));
        assert_int_equal(dc, e / 2);
        assert_int_equal(df, e % 2);
        int64_t vc = (int64_t)num(json_object_get(o, "videos/observation.images.b/chunk_index"));
        int64_t vf = (int64_t)num(json_object_get(o, "videos/observation.images.b/file_index"));
        if (e > 0 && (vc != prev_chunk || vf != prev_file)) {
            video_files++;
            /* a new file starts at its first frame */
            assert_true(num(json_object_get(o, "videos/observation.images.b/from_timestamp")) == 0);
        }
        prev_chunk = vc, prev_file = vf;
        /* the data file DuckDB reads holds exactly this episode's rows */
        snprintf(p, sizeof p, "%s/data/chunk-%03lld/file-%03lld.parquet", root, (long long)dc, (long long)df);
        json_t *dr = oracle_read(p), *rr = json_object_get(dr, "rows");
        assert_int_equal(json_array_size(rr), EP_LEN[e]);
        for (size_t i = 0; i < json_array_size(rr); i++) {
            assert_int_equal((int64_t)num(json_object_get(json_array_get(rr, i), "episode_index")), e);
            assert_int_equal((int64_t)num(json_object_get(json_array_get(rr, i), "index")), from + (int64_t)i);
        }
        from += EP_LEN[e];
        json_decref(dr);
    }
    json_decref(dd);
    assert_true(video_files >= 2);
    /* read back by vla.c: every value and frame, validate clean */
    vla_lerobot *ds;
    if (vla_lerobot_open(root, &ds) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(ds->n_rows, 16);
    const vla_lr_feature *a = vla_lerobot_feature(ds, "action");
    for (int64_t g = 0; g < 16; g++) assert_true(a->values[g * 2] == act_val(g, 0) && a->values[g * 2 + 1] == act_val(g, 1));
    vla_lr_reader *rd;
    assert_int_equal(vla_lr_reader_open(ds, &rd), VLA_OK);
    uint8_t got[S * S * 3], want[S * S * 3];
    double worst = 99;
    for (int c = 0; c < 2; c++)
        for (int64_t row = 0; row < ds->n_rows; row++) {
            if (vla_lr_reader_frame(rd, c, row, 0, 0, 0, got) != VLA_OK) fail_msg("row %lld: %s", (long long)row, vla_error_message());
            make_frame(want, c, row);
            double q = psnr(got, want, sizeof want);
            if (q < worst) worst = q;
        }
    assert_true(worst > 25);
    vla_lr_reader_close(rd);
    json_t *info = json_object_get(ds->info, "chunks_size");
    assert_int_equal(json_integer_value(info), 2);
    vla_lerobot_close(ds);
    assert_int_equal(validate_count(root, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_roll_over),
        cmocka_unit_test(test_v21_open_and_convert),
        cmocka_unit_test(test_partial_download),
        cmocka_unit_test(test_image_feature),
        cmocka_unit_test(test_corruptions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
