/* test_shards.c — training shards (`vla data prepare`, data/shards.h) against
 * the direct read of the same dataset: every row's values and every frame
 * (at a resized, non-square size) equal; loader batches equal byte for byte
 * (state history, chunks with is_pad, augmented images, prompts); the same
 * files whatever the rank count (in-process shares and `mpirun -np 2`); a
 * prepare killed mid-shard resumes, keeping whole shards and ending with
 * the uninterrupted files; damaged shards (bit flips, truncations, a missing
 * file) refused naming the file, and rewritten by the next prepare; episode
 * selections at prepare and at open; a policy size other than the stored one
 * refused when the loader is made. */
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/fsutil.h"
#include "data/lerobot.h"
#include "train/loader.h"
#include "data/shards.h"
#include "data/shards_internal.h"
#include "policy/policy.h"

static const char *g_src; /* 6 Reach episodes with video, recorded once */

static void prepare(const char *out, const vla_lr_open_opts *sel, int h, int w, int world) {
    for (int r = 0; r < world; r++) {
        vla_shards_prepare_opts o = {.out = out, .sel = sel, .image_h = h, .image_w = w, .shard_mb = 0.01, .rank = r, .world = world,
                                     .num_workers = 2};
        vla_shards_prepare_stats s;
        if (vla_shards_prepare(g_src, &o, &s) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_int_equal(s.kept + s.written, s.mine);
    }
    vla_shards_prepare_opts o = {.out = out, .sel = sel, .image_h = h, .image_w = w, .shard_mb = 0.01};
    if (vla_shards_finish(g_src, &o) != VLA_OK) fail_msg("%s", vla_error_message());
}

static int count_shards(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".vshard") != NULL;
    closedir(d);
    return n;
}

/* Every shard file and the manifest of a and b are the same bytes. */
static void assert_same_files(const char *a, const char *b) {
    int n = count_shards(a);
    assert_int_equal(n, count_shards(b));
    for (int k = 0; k <= n; k++) {
        char name[64], pa[4096], pb[4096];
        if (k < n) vla_shard_file_name(k, name, sizeof name);
        else snprintf(name, sizeof name, "%s", VLA_SHARDS_MANIFEST);
        snprintf(pa, sizeof pa, "%s/%s", a, name);
        snprintf(pb, sizeof pb, "%s/%s", b, name);
        size_t na, nb;
        char *x = test_slurp(pa, &na), *y = test_slurp(pb, &nb);
        if (k == n) { /* the manifest names its source: the same in both */
            assert_non_null(strstr(x, "\"source\""));
        }
        assert_int_equal(na, nb);
        assert_memory_equal(x, y, na);
        free(x);
        free(y);
    }
}

static void test_rows_and_frames_equal_direct(void **state) {
    (void)state;
    const char *out = test_tmp_path("sh_rows");
    prepare(out, NULL, 20, 24, 1); /* 20 high, 24 wide: a mixed-up H and W shows */
    assert_true(count_shards(out) >= 3);
    vla_lerobot *a, *b;
    assert_int_equal(vla_lerobot_open(g_src, &a), VLA_OK);
    if (vla_lerobot_open(out, &b) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_non_null(b->shards);
    assert_int_equal(a->n_rows, b->n_rows);
    assert_int_equal(a->n_episodes, b->n_episodes);
    for (int i = 0; i < a->n_features; i++) {
        const vla_lr_feature *fa = &a->features[i], *fb = vla_lerobot_feature(b, fa->key);
        assert_non_null(fb);
        assert_int_equal(fa->values != NULL, fb->values != NULL);
        if (fa->values) assert_memory_equal(fa->values, fb->values, (size_t)(a->n_rows * fa->width) * sizeof(float));
    }
    assert_memory_equal(a->timestamp, b->timestamp, (size_t)a->n_rows * sizeof(float));
    assert_memory_equal(a->index, b->index, (size_t)a->n_rows * sizeof(int64_t));
    assert_memory_equal(a->frame_index, b->frame_index, (size_t)a->n_rows * sizeof(int64_t));
    assert_memory_equal(a->episode_index, b->episode_index, (size_t)a->n_rows * sizeof(int64_t));
    assert_memory_equal(a->task_index, b->task_index, (size_t)a->n_rows * sizeof(int64_t));
    assert_memory_equal(a->row_episode, b->row_episode, (size_t)a->n_rows * sizeof(int64_t));
    vla_lr_reader *ra, *rb;
    assert_int_equal(vla_lr_reader_open(a, &ra), VLA_OK);
    assert_int_equal(vla_lr_reader_open(b, &rb), VLA_OK);
    uint8_t fa[24 * 20 * 3], fb[24 * 20 * 3];
    int differ = 0;
    for (int64_t r = a->n_rows - 1; r >= 0; r -= 3) { /* backwards: the direct reader seeks, the shards do not care */
        assert_int_equal(vla_lr_reader_frame(ra, 0, r, 24, 20, 0.05, fa), VLA_OK);
        if (vla_lr_reader_frame(rb, 0, r, 24, 20, 0.05, fb) != VLA_OK) fail_msg("%s", vla_error_message());
        differ += memcmp(fa, fb, sizeof fa) != 0;
    }
    assert_int_equal(differ, 0);
    /* the stored size is the set's camera size; another is refused, naming the flag */
    assert_int_equal(b->features[b->camera_feature[0]].height, 20);
    assert_int_equal(b->features[b->camera_feature[0]].width_px, 24);
    assert_int_not_equal(vla_lr_reader_frame(rb, 0, 0, 64, 64, 0.05, fb), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "--image_size"));
    vla_lr_reader_close(ra);
    vla_lr_reader_close(rb);
    vla_lerobot_close(a);
    vla_lerobot_close(b);
}

typedef struct {
    int64_t n;
} src_ctx;

static vla_status source(void *user, int64_t job, int64_t cap, int64_t *rows, uint64_t *keys, int64_t *n, bool *last) {
    src_ctx *c = user;
    for (int64_t i = 0; i < cap; i++) rows[i] = (job * 7 + i * 5) % c->n, keys[i] = (uint64_t)(job * 100 + i);
    *n = cap, *last = true;
    return VLA_OK;
}

static vla_policy *make_policy(void) {
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    cfg.action.state_dim = 8;
    assert_int_equal(vla_policy_config_validate("t", &cfg), VLA_OK);
    vla_policy *p;
    if (vla_policy_create(&cfg, test_cpu_backend(), &p) != VLA_OK) fail_msg("%s", vla_error_message());
    return p;
}

static void test_loader_batches_equal(void **state) {
    (void)state;
    vla_policy *p = make_policy();
    int img = (int)p->cfg.vision.image_size;
    const char *out = test_tmp_path("sh_loader");
    prepare(out, NULL, img, img, 1);
    vla_lerobot *a, *b;
    assert_int_equal(vla_lerobot_open(g_src, &a), VLA_OK);
    assert_int_equal(vla_lerobot_open(out, &b), VLA_OK);
    src_ctx c = {a->n_rows};
    vla_loader_opts o = {.ds = a, .policy = p, .batch_size = 5, .source = source, .source_user = &c, .seed = 3, .augment = true,
                         .n_obs_steps = 2, .num_workers = 2};
    vla_loader *La, *Lb;
    assert_int_equal(vla_loader_create(&o, &La), VLA_OK);
    o.ds = b;
    if (vla_loader_create(&o, &Lb) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_loader_start(La), VLA_OK);
    assert_int_equal(vla_loader_start(Lb), VLA_OK);
    int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim, S = p->cfg.action.state_dim;
    for (int j = 0; j < 8; j++) {
        vla_loader_batch *x, *y;
        double w;
        assert_int_equal(vla_loader_next(La, &x, &w), VLA_OK);
        assert_int_equal(vla_loader_next(Lb, &y, &w), VLA_OK);
        const vla_batch *u = &x->batch, *v = &y->batch;
        assert_int_equal(u->n_tokens, v->n_tokens);
        assert_memory_equal(u->token_ids, v->token_ids, (size_t)u->n_tokens * 4);
        assert_memory_equal(u->roles, v->roles, (size_t)u->n_tokens);
        assert_memory_equal(u->state, v->state, (size_t)(5 * S) * 4);
        assert_memory_equal(u->actions, v->actions, (size_t)(5 * H * A) * 4);
        assert_memory_equal(u->action_is_pad, v->action_is_pad, (size_t)(5 * H));
        assert_int_equal(u->n_images, v->n_images);
        assert_memory_equal(u->images, v->images, (size_t)(u->n_images * 3 * img * img) * 4);
        vla_loader_release(La, x);
        vla_loader_release(Lb, y);
    }
    vla_loader_free(La);
    vla_loader_free(Lb);
    /* a set stored at another size is refused when the loader is made, naming the size to prepare */
    const char *other = test_tmp_path("sh_other_size");
    prepare(other, NULL, img + 2, img + 2, 1);
    vla_lerobot *d;
    assert_int_equal(vla_lerobot_open(other, &d), VLA_OK);
    o.ds = d;
    assert_int_not_equal(vla_loader_create(&o, &Lb), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "--image_size"));
    vla_lerobot_close(d);
    vla_lerobot_close(a);
    vla_lerobot_close(b);
    vla_policy_free(p);
}

static void test_ranks_and_resume(void **state) {
    (void)state;
    const char *one = test_tmp_path("sh_one"), *three = test_tmp_path("sh_three"), *killed = test_tmp_path("sh_killed");
    prepare(one, NULL, 16, 16, 1);
    prepare(three, NULL, 16, 16, 3);
    assert_same_files(one, three);
    /* killed mid-shard: whole shards stay, the partial one is a temp file, no manifest */
    int n = count_shards(one);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(one, &ds), VLA_OK);
    int64_t kill_at = ds->n_rows / 2 + 3; /* mid-set, and (3 frames in) mid-shard */
    vla_lerobot_close(ds);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vla_fault_set(VLA_FAULT_SHARD_FRAME, VLA_FAULT_KILL, kill_at, kill_at);
        vla_shards_prepare_opts o = {.out = killed, .image_h = 16, .image_w = 16, .shard_mb = 0.01, .num_workers = 1};
        vla_shards_prepare_stats s;
        vla_shards_prepare(g_src, &o, &s);
        _exit(0); /* not reached: the fault kills */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_false(vla_shards_is_set(killed));
    int left = count_shards(killed);
    assert_true(left >= 2 && left < n + 1); /* whole ones + one temp file */
    vla_shards_prepare_opts o = {.out = killed, .image_h = 16, .image_w = 16, .shard_mb = 0.01, .num_workers = 1};
    vla_shards_prepare_stats s;
    assert_int_equal(vla_shards_prepare(g_src, &o, &s), VLA_OK);
    assert_true(s.kept >= 1);
    assert_int_equal(s.kept + s.written, n);
    assert_int_equal(vla_shards_finish(g_src, &o), VLA_OK);
    assert_same_files(one, killed); /* and the temp file is gone */
    /* MPI: two ranks write the same files one does */
    char cmd[8192], outbuf[4096];
    const char *mpi = test_tmp_path("sh_mpi");
    snprintf(cmd, sizeof cmd,
             "env ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
             "--allow-run-as-root --bind-to none --mca btl self,vader,tcp -x ASAN_OPTIONS -np 2 %s data prepare "
             "--dataset.root=%s --out=%s --image_size=16,16 --shard_mb=0.01 --quiet 2>&1",
             test_cli_path(), g_src, mpi);
    int rc = test_run(cmd, outbuf, sizeof outbuf);
    if (rc != 0) fail_msg("mpirun prepare failed (%d): %s", rc, outbuf);
    assert_non_null(strstr(outbuf, "\"ranks\": 2"));
    assert_same_files(one, mpi);
}

static vla_status parse_verified(const uint8_t *data, size_t n, void *user) {
    (void)user;
    vla_shard_header h;
    vla_status st = vla_shard_parse("shard", data, n, true, &h);
    if (st == VLA_OK) vla_shard_header_free(&h);
    return st;
}

static void test_damage_refused(void **state) {
    (void)state;
    const char *good = test_tmp_path("sh_good"), *bad = test_tmp_path("sh_bad");
    prepare(good, NULL, 16, 16, 1);
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/shard-00001.vshard", good);
    uint8_t *orig = (uint8_t *)test_slurp(path, &n);
    vla_shard_header h;
    assert_int_equal(vla_shard_parse("good", orig, n, true, &h), VLA_OK);
    /* every byte is covered by a CRC, a size or the magic: every sampled bit flip is caught */
    assert_int_equal(test_sweep_bit_flips("shard", orig, n, 0, 300, 7, parse_verified, NULL), 300);
    size_t marks[VLA_SHARD_MAX_SECTIONS];
    for (int i = 0; i < h.n_sections; i++) marks[i] = (size_t)h.sec[i].offset;
    test_sweep_prefixes("shard", orig, n, 997, marks, h.n_sections, parse_verified, NULL);
    /* in a set: a flipped frame byte, a truncation, a missing file — each refused naming the file */
    const size_t flips[] = {20, (size_t)h.sec[0].offset + 3, (size_t)h.sec[h.n_sections - 1].offset + 100, n - 10};
    snprintf(path, sizeof path, "%s/shard-00001.vshard", bad);
    for (int i = 0; i < 5; i++) {
        test_rmrf(bad);
        assert_int_equal(vla_copy_tree(good, bad), VLA_OK);
        uint8_t *d = malloc(n);
        memcpy(d, orig, n);
        size_t len = n;
        if (i < 4) d[flips[i]] ^= 0x10;
        else len = n / 2;
        assert_int_equal(vla_write_file_atomic(path, d, len), VLA_OK);
        free(d);
        vla_lerobot *ds;
        assert_int_not_equal(vla_lerobot_open(bad, &ds), VLA_OK);
        if (!strstr(vla_error_message(), "shard-00001.vshard")) fail_msg("case %d: %s", i, vla_error_message());
    }
    /* the next prepare rewrites the damaged shard and keeps the rest */
    vla_shards_prepare_opts o = {.out = bad, .image_h = 16, .image_w = 16, .shard_mb = 0.01, .num_workers = 1};
    vla_shards_prepare_stats s;
    assert_int_equal(vla_shards_prepare(g_src, &o, &s), VLA_OK);
    assert_int_equal(s.written, 1);
    assert_int_equal(vla_shards_finish(g_src, &o), VLA_OK);
    assert_same_files(good, bad);
    unlink(path);
    vla_lerobot *ds;
    assert_int_not_equal(vla_lerobot_open(bad, &ds), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "shard-00001.vshard: shard is missing"));
    vla_shard_header_free(&h);
    free(orig);
}

static void test_episode_selection(void **state) {
    (void)state;
    const int64_t eps[] = {4, 1, 3};
    vla_lr_open_opts sel = {.episodes = eps, .n_episodes = 3};
    const char *out = test_tmp_path("sh_sel");
    prepare(out, &sel, 16, 16, 1);
    vla_lerobot *a, *b;
    assert_int_equal(vla_lerobot_open_opts(g_src, &sel, &a), VLA_OK);
    assert_int_equal(vla_lerobot_open(out, &b), VLA_OK);
    assert_int_equal(b->n_episodes, 3);
    assert_int_equal(a->n_rows, b->n_rows);
    assert_memory_equal(a->index, b->index, (size_t)a->n_rows * sizeof(int64_t));
    const vla_lr_feature *fa = vla_lerobot_feature(a, "action"), *fb = vla_lerobot_feature(b, "action");
    assert_memory_equal(fa->values, fb->values, (size_t)(a->n_rows * fa->width) * sizeof(float));
    /* a subset of the prepared episodes opens; one that was not prepared is named */
    const int64_t three[] = {3}, two[] = {2};
    vla_lr_open_opts o = {.episodes = three, .n_episodes = 1};
    vla_lerobot *c;
    assert_int_equal(vla_lerobot_open_opts(out, &o, &c), VLA_OK);
    assert_int_equal(c->n_episodes, 1);
    assert_int_equal(c->episodes[0].episode_index, 3);
    assert_int_equal(c->index[0], a->index[a->episodes[1].from]);
    vla_lerobot_close(c);
    o.episodes = two;
    assert_int_not_equal(vla_lerobot_open_opts(out, &o, &c), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "episode 2 was not prepared"));
    /* a shard set is not a source */
    vla_shards_prepare_opts po = {.out = test_tmp_path("sh_again")};
    vla_shards_prepare_stats s;
    assert_int_not_equal(vla_shards_prepare(out, &po, &s), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "already a shard set"));
    vla_lerobot_close(a);
    vla_lerobot_close(b);
}

int main(void) {
    g_src = strdup(test_tmp_path("reach_src"));
    test_record_reach(g_src, 6, 0, -1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_and_frames_equal_direct), cmocka_unit_test(test_loader_batches_equal),
        cmocka_unit_test(test_ranks_and_resume),             cmocka_unit_test(test_damage_refused),
        cmocka_unit_test(test_episode_selection),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free((void *)g_src);
    return rc;
}
