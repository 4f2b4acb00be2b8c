/* test_lerobot_alloc_fail.c — allocation-failure sweeps (tests/alloc_fail.h)
 * over reading LeRobot datasets: a v3.0 dataset with video (recorded here
 * with the Reach expert) opened, a window of rows read and a camera frame
 * decoded; the real LeRobot v3.0 fixture (stats.json, tasks.parquet); and
 * v2.1 metadata (episodes.jsonl, tasks.jsonl) from the fuzz seed; training
 * shards prepared and read back. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fail.h"
#include "base/fsutil.h"
#include "data/lerobot.h"
#include "data/shards.h"

typedef struct {
    const char *root;
    bool frame; /* the fixture has no mp4s */
    float window[4 * 2];
    uint8_t is_pad[4];
    uint8_t rgb[TEST_REACH_IMAGE_SIZE * TEST_REACH_IMAGE_SIZE * 3];
} read_case;

/* Open, read a window of actions around row 3 and (with videos) the camera
 * at row 5. */
static vla_status read_dataset(void *user) {
    read_case *c = user;
    vla_lerobot *ds;
    VLA_TRY(vla_lerobot_open(c->root, &ds));
    static const int offsets[4] = {-1, 0, 1, 2};
    vla_status st = vla_lerobot_window(ds, "action", 3, offsets, 4, c->window, c->is_pad);
    vla_lr_reader *r = NULL;
    if (st == VLA_OK && c->frame) st = vla_lr_reader_open(ds, &r);
    if (st == VLA_OK && r) st = vla_lr_reader_frame(r, 0, 5, 0, 0, 0, c->rgb);
    vla_lr_reader_close(r);
    vla_lerobot_close(ds);
    return st;
}

static void test_v30_with_video(void **state) {
    (void)state;
    static read_case c;
    c.root = test_tmp_path("reach_ds");
    c.frame = true;
    test_record_reach(c.root, 2, 0, -1);
    test_alloc_scenario s = {.name = "lerobot v3.0 + video", .run = read_dataset, .user = &c};
    test_alloc_sweep(&s);
}

static void test_v30_fixture(void **state) {
    (void)state;
    static read_case c;
    c.root = test_source_path("tests/fixtures/lerobot/so101-record-test-v3.0");
    test_alloc_scenario s = {.name = "lerobot v3.0 fixture", .run = read_dataset, .user = &c};
    test_alloc_sweep(&s);
}

typedef struct {
    char *text;
    size_t parts[3], lens[3];
} meta_case;

static vla_status read_meta(void *user) {
    meta_case *c = user;
    vla_lerobot *ds;
    VLA_TRY(vla_lerobot_open_meta_buffers(c->text + c->parts[0], c->lens[0], c->text + c->parts[1], c->lens[1],
                                          c->text + c->parts[2], c->lens[2], &ds));
    vla_lerobot_close(ds);
    return VLA_OK;
}

static void test_v21_meta(void **state) {
    (void)state;
    static meta_case c;
    size_t n;
    /* info.json, episodes.jsonl and tasks.jsonl separated by 0x01 bytes */
    c.text = test_slurp(test_source_path("fuzz/corpus/fuzz_lerobot_meta/v21_full"), &n);
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n && k < 3; i++)
        if (i == n || c.text[i] == 0x01) {
            c.parts[k] = start;
            c.lens[k++] = i - start;
            start = i + 1;
        }
    assert_int_equal(k, 3);
    test_alloc_scenario s = {.name = "lerobot v2.1 meta", .run = read_meta, .user = &c};
    test_alloc_sweep(&s);
    free(c.text);
}

/* Training shards: `vla data prepare` (one worker, so the allocations come
 * in one order) leaves no temporary file and, failed, no manifest; the set
 * it made opens, serves a window and a frame. */
typedef struct {
    const char *src, *out;
} prepare_case;

static vla_status prepare_shards(void *user) {
    prepare_case *c = user;
    vla_shards_prepare_opts o = {.out = c->out, .shard_mb = 0.01, .num_workers = 1};
    vla_shards_prepare_stats st;
    VLA_TRY(vla_shards_prepare(c->src, &o, &st));
    return vla_shards_finish(c->src, &o);
}

static void remove_out(void *user) { test_rmrf(((prepare_case *)user)->out); }

static void no_manifest(void *user) { assert_false(vla_shards_is_set(((prepare_case *)user)->out)); }

static void test_shards(void **state) {
    (void)state;
    static prepare_case p;
    p.src = test_tmp_path("reach_for_shards");
    p.out = strdup(test_tmp_path("shards"));
    test_record_reach(p.src, 2, 0, -1);
    /* 32 N in make test: each run decodes video and writes files (the full sweep, every N, is make fuzz-long's) */
    test_alloc_scenario s = {.name = "data prepare", .run = prepare_shards, .reset = remove_out, .check_failed = no_manifest,
                             .out_dir = p.out, .samples = 32, .user = &p};
    test_alloc_sweep(&s);
    assert_int_equal(prepare_shards(&p), VLA_OK);
    static read_case c;
    c.root = p.out;
    c.frame = true;
    test_alloc_scenario r = {.name = "shard set read", .run = read_dataset, .samples = 48, .user = &c};
    test_alloc_sweep(&r);
    free((void *)p.out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v30_with_video),
        cmocka_unit_test(test_v30_fixture),
        cmocka_unit_test(test_v21_meta),
        cmocka_unit_test(test_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
