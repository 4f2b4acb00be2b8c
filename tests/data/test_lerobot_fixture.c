/* test_lerobot_fixture.c — the real LeRobot v3.0 dataset
 * SamueleSandrini/record-test (tests/fixtures, parquet + meta, no mp4s):
 * metadata, every row against DuckDB's reading (tools/oracle), windows with
 * is_pad at episode edges, stats, and missing videos reported, not crashed on. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "data/lerobot.h"

#define FIXTURE "tests/fixtures/lerobot/so101-record-test-v3.0"

static vla_lerobot *ds;
static json_t *duck_data, *duck_eps;

static double num(json_t *v) {
    if (json_is_string(v)) return atof(json_string_value(v));
    return json_number_value(v);
}

/* DuckDB's reading of a parquet file ({"columns","rows"}). */
static json_t *oracle_read(const char *file) {
    char cmd[4096], out[256];
    const char *dst = test_tmp_path("duck.json");
    if (test_run("command -v node >/dev/null && echo yes", out, sizeof out) != 0 || strncmp(out, "yes", 3))
        fail_msg("node is not installed: the DuckDB oracle needs it (scripts/setup.sh test)");
    snprintf(cmd, sizeof cmd, "node '%s' read '%s' > '%s'", test_source_path("tools/oracle/oracle.mjs"), file, dst);
    int rc = test_run(cmd, out, sizeof out);
    if (rc != 0) fail_msg("oracle read %s failed (%d)", file, rc);
    json_error_t err;
    json_t *j = json_load_file(dst, 0, &err);
    if (!j) fail_msg("oracle output: %s", err.text);
    return j;
}

static int setup(void **state) {
    (void)state;
    char p[4096];
    vla_status st = vla_lerobot_open(test_source_path(FIXTURE), &ds);
    if (st != VLA_OK) {
        fprintf(stderr, "open: %s\n", vla_error_message());
        return -1;
    }
    snprintf(p, sizeof p, "%s/data/chunk-000/file-000.parquet", test_source_path(FIXTURE));
    duck_data = oracle_read(p);
    snprintf(p, sizeof p, "%s/meta/episodes/chunk-000/file-000.parquet", test_source_path(FIXTURE));
    duck_eps = oracle_read(p);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vla_lerobot_close(ds);
    json_decref(duck_data);
    json_decref(duck_eps);
    return 0;
}

static void test_info(void **state) {
    (void)state;
    assert_int_equal(ds->version, 30);
    assert_string_equal(ds->codebase_version, "v3.0");
    assert_true(ds->fps == 30);
    assert_string_equal(ds->robot_type, "so101_follower");
    assert_int_equal(ds->n_episodes, 4);
    assert_int_equal(ds->total_episodes, 4);
    assert_int_equal(ds->n_rows, 1492);
    assert_int_equal(ds->total_frames, 1492);
    assert_int_equal(ds->n_tasks, 1);
    assert_string_equal(ds->tasks[0], "Pick the orange cube and place it in the box");
    assert_int_equal(ds->n_cameras, 2);
    for (int c = 0; c < 2; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        assert_int_equal(f->dtype, VLA_LR_VIDEO);
        assert_int_equal(f->height, 480);
        assert_int_equal(f->width_px, 640);
        assert_string_equal(f->codec, "av1");
        assert_string_equal(f->pix_fmt, "yuv420p");
    }
    assert_int_equal(vla_lerobot_camera(ds, "observation.images.top"), 1);
    const char *six[] = {"action", "observation.state"};
    for (int k = 0; k < 2; k++) {
        const vla_lr_feature *f = vla_lerobot_feature(ds, six[k]);
        assert_non_null(f);
        assert_int_equal(f->dtype, VLA_LR_FLOAT32);
        assert_int_equal(f->ndim, 1);
        assert_int_equal(f->width, 6);
        assert_non_null(f->values);
    }
    assert_int_equal(ds->n_nonfinite, 0);
    /* episodes tile the rows; tasks per episode */
    int64_t row = 0;
    for (int64_t e = 0; e < 4; e++) {
        assert_int_equal(ds->episodes[e].episode_index, e);
        assert_int_equal(ds->episodes[e].from, row);
        row = ds->episodes[e].to;
        assert_int_equal(ds->episodes[e].n_tasks, 1);
    }
    assert_int_equal(row, 1492);
    /* stats.json: all 10 keys, count 1492 */
    const vla_lr_stats *s = vla_lerobot_stats(ds, "action");
    assert_non_null(s);
    assert_int_equal(s->n, 6);
    assert_non_null(s->q99);
    assert_int_equal(s->count, 1492);
    const vla_lr_stats *im = vla_lerobot_stats(ds, "observation.images.front");
    assert_non_null(im);
    assert_int_equal(im->n, 3); /* 3×1×1 flattened */
    assert_true(im->mean[0] > 0 && im->mean[0] < 1);
}

/* Every row against DuckDB. */
static void test_rows_match_duckdb(void **state) {
    (void)state;
    json_t *rows = json_object_get(duck_data, "rows");
    assert_int_equal(json_array_size(rows), 1492);
    const vla_lr_feature *act = vla_lerobot_feature(ds, "action"), *obs = vla_lerobot_feature(ds, "observation.state");
    for (size_t r = 0; r < json_array_size(rows); r++) {
        json_t *row = json_array_get(rows, r);
        for (int k = 0; k < 6; k++) {
            assert_true((float)num(json_array_get(json_object_get(row, "action"), k)) == act->values[r * 6 + k]);
            assert_true((float)num(json_array_get(json_object_get(row, "observation.state"), k)) == obs->values[r * 6 + k]);
        }
        assert_true((float)num(json_object_get(row, "timestamp")) == ds->timestamp[r]);
        assert_int_equal((int64_t)num(json_object_get(row, "index")), ds->index[r]);
        assert_int_equal((int64_t)num(json_object_get(row, "frame_index")), ds->frame_index[r]);
        assert_int_equal((int64_t)num(json_object_get(row, "episode_index")), ds->episode_index[r]);
        assert_int_equal((int64_t)num(json_object_get(row, "task_index")), ds->task_index[r]);
    }
    /* spot check against values read by hand from DuckDB */
    assert_true(act->values[0] == -6.891271114349365f);
    assert_true(obs->values[1 * 6 + 2] == 68.34467315673828f);
    json_t *er = json_object_get(duck_eps, "rows");
    assert_int_equal(json_array_size(er), 4);
    for (size_t e = 0; e < 4; e++) {
        json_t *o = json_array_get(er, e);
        assert_int_equal((int64_t)num(json_object_get(o, "dataset_from_index")), ds->episodes[e].from);
        assert_int_equal((int64_t)num(json_object_get(o, "dataset_to_index")), ds->episodes[e].to);
        assert_int_equal((int64_t)num(json_object_get(o, "length")), ds->episodes[e].length);
        assert_true(num(json_object_get(o, "videos/observation.images.top/from_timestamp")) == ds->episodes[e].video[1].from_ts);
        assert_true(num(json_object_get(o, "videos/observation.images.front/to_timestamp")) == ds->episodes[e].video[0].to_ts);
    }
}

/* Windows: expectations from DuckDB's episode ranges and rows. */
static void test_windows(void **state) {
    (void)state;
    const double deltas[] = {-3 / 30.0, -1 / 30.0, 0, 1 / 30.0, 2 / 30.0, 0.5};
    int off[6];
    assert_int_equal(vla_lerobot_delta_offsets(ds, deltas, 6, 1e-4, off), VLA_OK);
    const int want_off[6] = {-3, -1, 0, 1, 2, 15};
    for (int i = 0; i < 6; i++) assert_int_equal(off[i], want_off[i]);
    const double bad = 0.05; /* 1.5 frames */
    assert_int_not_equal(vla_lerobot_delta_offsets(ds, &bad, 1, 1e-4, off), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "not a multiple"));
    json_t *er = json_object_get(duck_eps, "rows"), *rows = json_object_get(duck_data, "rows");
    for (size_t e = 0; e < 4; e++) {
        int64_t from = (int64_t)num(json_object_get(json_array_get(er, e), "dataset_from_index"));
        int64_t to = (int64_t)num(json_object_get(json_array_get(er, e), "dataset_to_index"));
        int64_t probes[] = {from, from + 1, from + 2, (from + to) / 2, to - 3, to - 2, to - 1};
        for (int p = 0; p < 7; p++) {
            float got[6 * 6];
            uint8_t pad[6];
            assert_int_equal(vla_lerobot_window(ds, "action", probes[p], off, 6, got, pad), VLA_OK);
            for (int i = 0; i < 6; i++) {
                int64_t q = probes[p] + want_off[i];
                uint8_t want_pad = q < from || q >= to;
                if (q < from) q = from;
                if (q > to - 1) q = to - 1;
                assert_int_equal(pad[i], want_pad);
                json_t *a = json_object_get(json_array_get(rows, (size_t)q), "action");
                for (int k = 0; k < 6; k++) assert_true(got[i * 6 + k] == (float)num(json_array_get(a, k)));
            }
        }
    }
    /* the first row of episode 1 pads backwards, its last forwards */
    int64_t wr[6];
    uint8_t pad[6];
    vla_lerobot_window_rows(ds, ds->episodes[1].from, off, 6, wr, pad);
    assert_int_equal(pad[0], 1);
    assert_int_equal(pad[1], 1);
    assert_int_equal(pad[2], 0);
    assert_int_equal(wr[0], ds->episodes[1].from);
}

static void test_stats_recompute(void **state) {
    (void)state;
    json_t *computed;
    assert_int_equal(vla_lerobot_compute_stats(ds, false, &computed), VLA_OK);
    json_t *report = json_array();
    int bad = -1;
    assert_int_equal(vla_lerobot_compare_stats(ds, computed, report, &bad), VLA_OK);
    assert_int_equal(bad, 0);
    json_t *m = json_object_get(json_object_get(computed, "action"), "mean");
    const vla_lr_stats *s = vla_lerobot_stats(ds, "action");
    for (int k = 0; k < 6; k++) assert_true(fabs(json_number_value(json_array_get(m, k)) - s->mean[k]) < 1e-3);
    json_decref(report);
    json_decref(computed);
}

/* The fixture has no mp4s: frame requests and validate name the file. */
static void test_missing_videos(void **state) {
    (void)state;
    vla_lr_reader *r;
    assert_int_equal(vla_lr_reader_open(ds, &r), VLA_OK);
    uint8_t px[3 * 4 * 4];
    vla_status st = vla_lr_reader_frame(r, 0, 10, 4, 4, 0, px);
    assert_int_equal(st, VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "videos/observation.images.front/chunk-000/file-000.mp4"));
    assert_non_null(strstr(vla_error_message(), "missing"));
    vla_lr_reader_close(r);

    char cmd[4096], out[16384];
    snprintf(cmd, sizeof cmd, "'%s' dataset frame '%s' --index 10 --json 2>&1", test_cli_path(), test_source_path(FIXTURE));
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    assert_non_null(strstr(out, "file-000.mp4: video file is missing"));
    assert_non_null(strstr(out, "\"observation.state\""));
    snprintf(cmd, sizeof cmd, "'%s' dataset validate '%s' --json", test_cli_path(), test_source_path(FIXTURE));
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    assert_non_null(j);
    json_t *probs = json_object_get(j, "problems");
    assert_int_equal(json_array_size(probs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(probs, 0), "file")),
                        "videos/observation.images.front/chunk-000/file-000.mp4");
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(probs, 0), "reason")), "missing"));
    json_decref(j);
    snprintf(cmd, sizeof cmd, "'%s' dataset info '%s' --json", test_cli_path(), test_source_path(FIXTURE));
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    j = json_loads(out, 0, &err);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "total_frames")), 1492);
    assert_int_equal(json_array_size(json_object_get(j, "cameras")), 2);
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_rows_match_duckdb),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_stats_recompute),
        cmocka_unit_test(test_missing_videos),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
