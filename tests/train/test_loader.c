/* test_loader.c — training batches from a LeRobot dataset (Reach expert
 * episodes written here through the v3.0 writer): packed layout valid for
 * the policy, normalised state/actions equal to the formulas on the raw
 * rows, action chunks padded past the episode end with is_pad set, images
 * in [0, 1], prompt tokens on the text slots; batches identical with 0 and
 * 3 worker threads (content depends on the job, not the thread); NaN
 * datasets refused; with n_obs_steps the state is the rows t-K+1..t clamped
 * to the episode start; relative actions are the chunk minus the state at t,
 * normalised with the differences' statistics, pooled over the chunk or
 * per step; the random shift (augment_shift) is a hand-checkable edge-padded
 * crop, the identity at shift 0 or the centre offset, and the same batches
 * with 0 and 3 workers. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot.h"
#include "train/loader.h"
#include "policy/policy.h"
#include "sim/env.h"
#include "sim/record.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))



typedef struct {
    int64_t n;
} src_ctx;

/* job j: rows (5j + 3i) mod n, keys 1000j + i */
static vla_status source(void *user, int64_t job, int64_t cap, int64_t *rows, uint64_t *keys, int64_t *n, bool *last) {
    src_ctx *c = user;
    for (int64_t i = 0; i < cap; i++) rows[i] = (job * 5 + i * 3) % c->n, keys[i] = (uint64_t)(job * 1000 + i);
    *n = cap, *last = true;
    return VLA_OK;
}

static vla_policy *make_policy(void) {
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    cfg.action.state_dim = 4;
    assert_int_equal(vla_policy_config_validate("t", &cfg), VLA_OK);
    vla_policy *p;
    vla_status st = vla_policy_create(&cfg, test_cpu_backend(), &p);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    return p;
}

/* Reach expert episodes recorded under the test's temporary folder, opened. */
static vla_lerobot *record_and_open(const char *name, int episodes) {
    const char *root = test_tmp_path(name);
    test_record_reach(root, episodes, 0, -1);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    return ds;
}

/* Two loaders of the same options, started: one on the caller's thread, one with 3 workers. */
static void start_0_and_3_workers(vla_loader_opts o, vla_loader **L0, vla_loader **L3) {
    o.num_workers = 0;
    assert_int_equal(vla_loader_create(&o, L0), VLA_OK);
    o.num_workers = 3;
    assert_int_equal(vla_loader_create(&o, L3), VLA_OK);
    assert_int_equal(vla_loader_start(*L0), VLA_OK);
    assert_int_equal(vla_loader_start(*L3), VLA_OK);
}

static void test_batches(void **state) {
    (void)state;
    vla_lerobot *ds = record_and_open("loader_ds", 6);
    vla_policy *p = make_policy();
    src_ctx c = {ds->n_rows};
    vla_loader_opts o = {.ds = ds, .policy = p, .batch_size = 4, .source = source, .source_user = &c, .seed = 1};
    vla_loader *L0, *L3;
    start_0_and_3_workers(o, &L0, &L3);
    const vla_lr_feature *fs = vla_lerobot_feature(ds, "observation.state");
    const vla_lr_feature *fa = vla_lerobot_feature(ds, "action");
    int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim, img = p->cfg.vision.image_size;
    int saw_pad = 0;
    for (int j = 0; j < 6; j++) {
        vla_loader_batch *a, *b;
        double w;
        assert_int_equal(vla_loader_next(L0, &a, &w), VLA_OK);
        assert_int_equal(vla_loader_next(L3, &b, &w), VLA_OK);
        assert_int_equal(a->job, j);
        assert_int_equal(b->job, j);
        const vla_batch *x = &a->batch, *y = &b->batch;
        if (vla_batch_check(x, &p->cfg) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_int_equal(x->n_tokens, y->n_tokens);
        assert_memory_equal(x->token_ids, y->token_ids, (size_t)x->n_tokens * 4);
        assert_memory_equal(x->roles, y->roles, (size_t)x->n_tokens);
        assert_memory_equal(x->state, y->state, (size_t)(4 * p->cfg.action.state_dim) * 4);
        assert_memory_equal(x->actions, y->actions, (size_t)(4 * H * A) * 4);
        assert_memory_equal(x->action_is_pad, y->action_is_pad, (size_t)(4 * H));
        assert_int_equal(x->n_images, 4);
        assert_memory_equal(x->images, y->images, (size_t)(4 * 3 * img * img) * 4);
        for (int64_t k = 0; k < 4 * 3 * img * img; k++) assert_true(x->images[k] >= 0 && x->images[k] <= 1);
        for (int i = 0; i < 4; i++) {
            int64_t row = a->rows[i];
            assert_int_equal(row, (j * 5 + i * 3) % ds->n_rows);
            assert_int_equal(x->sample_keys[i], (uint64_t)(j * 1000 + i));
            float sn[4];
            vla_normalize(vla_loader_state_norm(L0), sn, fs->values + row * 4, 1);
            assert_memory_equal(sn, x->state + i * p->cfg.action.state_dim, sizeof sn);
            const vla_lerobot *d = ds;
            int64_t ep_end = d->episodes[d->row_episode[row]].to;
            for (int64_t h = 0; h < H; h++) {
                bool pad = row + h >= ep_end;
                assert_int_equal(x->action_is_pad[i * H + h], pad);
                saw_pad += pad;
                int64_t r = pad ? ep_end - 1 : row + h;
                float an[2];
                vla_normalize(vla_loader_action_norm(L0), an, fa->values + r * 2, 1);
                assert_memory_equal(an, x->actions + (i * H + h) * A, sizeof an);
            }
            int64_t ntext = 0;
            for (int64_t t = x->cu_seqlens[i]; t < x->cu_seqlens[i + 1]; t++)
                if (x->roles[t] == VLA_ROLE_TEXT) ntext++, assert_true(x->token_ids[t] >= 0 && x->token_ids[t] < 259);
            assert_true(ntext > 10);
        }
        vla_loader_release(L0, a);
        vla_loader_release(L3, b);
    }
    assert_true(saw_pad > 0);
    vla_loader_free(L0);
    vla_loader_free(L3);
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

/* --dataset.n_obs_steps=3: the state is rows t-2, t-1, t of observation.state
 * (oldest first; rows before the episode's first clamped to it), each
 * normalised with the feature's statistics; the normaliser spans all three. */
static void test_history(void **state) {
    (void)state;
    const char *root = test_tmp_path("loader_hist_ds");
    test_record_reach(root, 3, 0, -1);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    enum { K = 3, W = 4 };
    cfg.action.state_dim = K * W;
    assert_int_equal(vla_policy_config_validate("t", &cfg), VLA_OK);
    vla_policy *p;
    assert_int_equal(vla_policy_create(&cfg, test_cpu_backend(), &p), VLA_OK);
    vla_loader_opts o = {.ds = ds, .policy = p, .batch_size = 4, .seed = 1, .n_obs_steps = K, .image_keys = ""};
    vla_loader *L;
    if (vla_loader_create(&o, &L) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_loader_n_obs_steps(L), K);
    assert_int_equal(vla_loader_state_width(L), K * W);
    assert_int_equal(vla_loader_state_norm(L)->dim, K * W);
    const vla_lr_feature *fs = vla_lerobot_feature(ds, "observation.state");
    vla_normalizer one; /* one frame's statistics */
    assert_int_equal(vla_norm_from_stats(ds, "observation.state", cfg.norm_state, &one), VLA_OK);
    int checked = 0;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        int64_t rows[4] = {ep->from, ep->from + 1, ep->from + 2, ep->to - 1};
        uint64_t keys[4] = {0, 1, 2, 3};
        vla_loader_batch *b;
        if (vla_loader_build(L, rows, keys, 4, &b) != VLA_OK) fail_msg("%s", vla_error_message());
        for (int i = 0; i < 4; i++)
            for (int f = 0; f < K; f++) {
                int64_t r = rows[i] - (K - 1 - f);
                if (r < ep->from) r = ep->from;
                float want[W];
                vla_normalize(&one, want, fs->values + r * W, 1);
                assert_memory_equal(want, b->batch.state + i * cfg.action.state_dim + f * W, sizeof want);
                checked++;
            }
        /* the first row's history is that row three times; the next rows shift in */
        assert_memory_equal(b->batch.state, b->batch.state + W, W * sizeof(float));
        assert_memory_equal(b->batch.state + (K - 1) * W, b->batch.state + cfg.action.state_dim + (K - 2) * W,
                            W * sizeof(float));
        vla_loader_release(L, b);
    }
    assert_int_equal(checked, 3 * 4 * K);
    /* the policy's padded state must hold K frames */
    cfg.action.state_dim = K * W - 1;
    vla_policy *small;
    assert_int_equal(vla_policy_create(&cfg, test_cpu_backend(), &small), VLA_OK);
    o.policy = small;
    vla_loader *Lsmall = NULL;
    assert_int_equal(vla_loader_create(&o, &Lsmall), VLA_ERR_INVALID_ARG);
    vla_normalizer_free(&one);
    vla_loader_free(L);
    vla_policy_free(small);
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

/* --dataset.relative_actions: the chunk is action[t+h] − observation.state[t]
 * (rows clamped to the episode), normalised with min/max of those
 * differences over every chunk of the dataset. */
static void test_relative_actions(void **state) {
    (void)state;
    const char *root = test_tmp_path("loader_rel_ds");
    test_record_reach(root, 3, 4, -1);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    vla_policy *p = make_policy();
    vla_loader_opts o = {.ds = ds, .policy = p, .batch_size = 4, .seed = 1, .image_keys = "", .relative_actions = true};
    vla_loader *L;
    /* Reach's observation.state is 4 wide (agent + target), its action 2: no reference to subtract */
    assert_int_equal(vla_loader_create(&o, &L), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "relative actions"));
    vla_lerobot_close(ds);
    vla_policy_free(p);

    root = test_tmp_path("loader_rel_pusht");
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    vla_sim_record_opts ro = {.env = "pusht", .policy = "expert", .out = root, .episodes = 2, .seed = 3, .jobs = 1,
                              .image_size = 32, .keep_failures = true};
    vla_sim_record_result rr;
    if (vla_sim_record(&ro, &rr) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    p = make_policy();
    p->cfg.norm_action = VLA_NORM_MIN_MAX; /* the check below is of min/max */
    o.ds = ds, o.policy = p;
    if (vla_loader_create(&o, &L) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(vla_loader_relative_actions(L));
    const vla_lr_feature *fs = vla_lerobot_feature(ds, "observation.state"), *fa = vla_lerobot_feature(ds, "action");
    int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim;
    /* the statistics: min/max of every chunk's differences */
    float lo[2] = {1e30f, 1e30f}, hi[2] = {-1e30f, -1e30f};
    for (int64_t r = 0; r < ds->n_rows; r++) {
        int64_t to = ds->episodes[ds->row_episode[r]].to;
        for (int64_t h = 0; h < H; h++)
            for (int d = 0; d < 2; d++) {
                int64_t q = r + h < to ? r + h : to - 1;
                float v = fa->values[q * 2 + d] - fs->values[r * 2 + d];
                lo[d] = fminf(lo[d], v), hi[d] = fmaxf(hi[d], v);
            }
    }
    const vla_normalizer *na = vla_loader_action_norm(L);
    for (int d = 0; d < 2; d++) assert_true(na->lo[d] == lo[d] && na->hi[d] == hi[d]);
    int64_t rows[4] = {0, 5, ds->episodes[0].to - 3, ds->episodes[1].from + 7};
    uint64_t keys[4] = {0, 1, 2, 3};
    vla_loader_batch *b;
    if (vla_loader_build(L, rows, keys, 4, &b) != VLA_OK) fail_msg("%s", vla_error_message());
    for (int i = 0; i < 4; i++) {
        int64_t to = ds->episodes[ds->row_episode[rows[i]]].to;
        for (int64_t h = 0; h < H; h++) {
            int64_t q = rows[i] + h < to ? rows[i] + h : to - 1;
            float want[2], raw[2] = {fa->values[q * 2] - fs->values[rows[i] * 2],
                                     fa->values[q * 2 + 1] - fs->values[rows[i] * 2 + 1]};
            vla_normalize(na, want, raw, 1);
            assert_memory_equal(want, b->batch.actions + (i * H + h) * A, sizeof want);
        }
    }
    vla_loader_release(L, b);
    vla_loader_free(L);
    /* --dataset.action_stats_per_step, relative and absolute: H × 2 channels,
     * channel h·2 + d the min/max of step h's values alone */
    for (int rel = 1; rel >= 0; rel--) {
        o.relative_actions = rel, o.action_stats_per_step = true;
        if (vla_loader_create(&o, &L) != VLA_OK) fail_msg("%s", vla_error_message());
        assert_true(vla_loader_action_stats_per_step(L));
        na = vla_loader_action_norm(L);
        assert_int_equal(na->dim, H * 2);
        float slo[64][2], shi[64][2];
        assert_true(H <= 64);
        for (int64_t h = 0; h < H; h++)
            for (int d = 0; d < 2; d++) {
                slo[h][d] = 1e30f, shi[h][d] = -1e30f;
                for (int64_t r = 0; r < ds->n_rows; r++) {
                    int64_t to = ds->episodes[ds->row_episode[r]].to, q = r + h < to ? r + h : to - 1;
                    float v = fa->values[q * 2 + d] - (rel ? fs->values[r * 2 + d] : 0.0f);
                    slo[h][d] = fminf(slo[h][d], v), shi[h][d] = fmaxf(shi[h][d], v);
                }
                assert_true(na->lo[h * 2 + d] == slo[h][d] && na->hi[h * 2 + d] == shi[h][d]);
            }
        /* relative chunks spread with h: the far steps' range is wider than the first's */
        if (rel) assert_true(shi[H - 1][0] - slo[H - 1][0] > shi[0][0] - slo[0][0]);
        if (vla_loader_build(L, rows, keys, 4, &b) != VLA_OK) fail_msg("%s", vla_error_message());
        for (int i = 0; i < 4; i++) {
            int64_t to = ds->episodes[ds->row_episode[rows[i]]].to;
            for (int64_t h = 0; h < H; h++)
                for (int d = 0; d < 2; d++) {
                    int64_t q = rows[i] + h < to ? rows[i] + h : to - 1;
                    float raw = fa->values[q * 2 + d] - (rel ? fs->values[rows[i] * 2 + d] : 0.0f);
                    float want = 2.0f * (raw - slo[h][d]) / (shi[h][d] - slo[h][d]) - 1.0f;
                    NEAR(b->batch.actions[(i * H + h) * A + d], want, 1e-6);
                }
        }
        vla_loader_release(L, b);
        vla_loader_free(L);
    }
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

static void test_nan_refused(void **state) {
    (void)state;
    const char *root = test_tmp_path("loader_nan");
    test_record_reach(root, 2, 9, 3);
    vla_lerobot *ds;
    assert_int_equal(vla_lerobot_open(root, &ds), VLA_OK);
    vla_policy *p = make_policy();
    src_ctx c = {ds->n_rows};
    vla_loader_opts o = {.ds = ds, .policy = p, .batch_size = 2, .source = source, .source_user = &c};
    vla_loader *L;
    assert_int_equal(vla_loader_create(&o, &L), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "non-finite"));
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

/* The shift itself on a 3×3 frame whose pixel (y, x) is 3y + x + 1 in every channel: pad 1 and
 * offset (dy, dx) = (0, 2) read in(clamp(y − 1), clamp(x + 1)), worked out by hand below; the
 * centre offset and pad 0 give the frame back. */
static void test_shift_by_hand(void **state) {
    (void)state;
    uint8_t in[27], out[27];
    for (int p = 0; p < 9; p++) in[p * 3] = in[p * 3 + 1] = in[p * 3 + 2] = (uint8_t)(p + 1);
    static const uint8_t want[9] = {2, 3, 3, /* row 0 reads row 0 (row −1 clamped) */
                                    2, 3, 3, /* row 1 reads row 0 */
                                    5, 6, 6}; /* row 2 reads row 1; column 2 reads column 2 (3 clamped) */
    vla_loader_shift_rgb8(in, 3, 3, 1, 0, 2, out);
    for (int p = 0; p < 9; p++)
        for (int ch = 0; ch < 3; ch++) assert_int_equal(out[p * 3 + ch], want[p]);
    vla_loader_shift_rgb8(in, 3, 3, 1, 1, 1, out);
    assert_memory_equal(out, in, sizeof in);
    vla_loader_shift_rgb8(in, 3, 3, 0, 0, 0, out);
    assert_memory_equal(out, in, sizeof in);
    /* offsets: within [0, 2·pad], a function of (seed, key, camera) alone, and not all the centre */
    int off_centre = 0;
    for (uint64_t key = 0; key < 64; key++) {
        int dy, dx, dy2, dx2;
        vla_loader_shift_offset(7, key, 1, 4, &dy, &dx);
        vla_loader_shift_offset(7, key, 1, 4, &dy2, &dx2);
        assert_int_equal(dy, dy2);
        assert_int_equal(dx, dx2);
        assert_true(dy >= 0 && dy <= 8 && dx >= 0 && dx <= 8);
        off_centre += dy != 4 || dx != 4;
    }
    assert_true(off_centre > 32);
}

/* Through the loader: with augment_shift = 4 each sample's image is exactly its unshifted image
 * (the same loader at shift 0, same rows and keys) shifted by vla_loader_shift_offset of its key;
 * with brightness/contrast on too, 0 and 3 workers give the same bytes. */
static void test_shift_batches(void **state) {
    (void)state;
    vla_lerobot *ds = record_and_open("loader_shift", 3);
    vla_policy *p = make_policy();
    src_ctx c = {ds->n_rows};
    const int pad = 4;
    int64_t img = p->cfg.vision.image_size, plane = img * img;
    vla_loader_opts o = {.ds = ds, .policy = p, .batch_size = 4, .source = source, .source_user = &c, .seed = 5};
    vla_loader *plain, *shifted;
    assert_int_equal(vla_loader_create(&o, &plain), VLA_OK);
    o.augment_shift = pad;
    assert_int_equal(vla_loader_create(&o, &shifted), VLA_OK);
    int64_t rows[4] = {0, 7 % ds->n_rows, 19 % ds->n_rows, ds->n_rows - 1};
    uint64_t keys[4] = {11, 12, 13, 9000};
    vla_loader_batch *a, *b;
    if (vla_loader_build(plain, rows, keys, 4, &a) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_loader_build(shifted, rows, keys, 4, &b), VLA_OK);
    assert_int_equal(a->batch.n_images, 4);
    assert_int_equal(b->batch.n_images, 4);
    assert_memory_equal(a->batch.state, b->batch.state, (size_t)(4 * p->cfg.action.state_dim) * 4);
    int moved = 0;
    for (int i = 0; i < 4; i++) {
        int dy, dx;
        vla_loader_shift_offset(o.seed, keys[i], 0, pad, &dy, &dx);
        moved += dy != pad || dx != pad;
        const float *src = a->batch.images + (int64_t)i * 3 * plane, *got = b->batch.images + (int64_t)i * 3 * plane;
        for (int ch = 0; ch < 3; ch++)
            for (int64_t y = 0; y < img; y++)
                for (int64_t x = 0; x < img; x++) {
                    int64_t sy = y + dy - pad, sx = x + dx - pad;
                    sy = sy < 0 ? 0 : sy >= img ? img - 1 : sy;
                    sx = sx < 0 ? 0 : sx >= img ? img - 1 : sx;
                    float want = src[ch * plane + sy * img + sx], have = got[ch * plane + y * img + x];
                    assert_memory_equal(&want, &have, sizeof want);
                }
    }
    assert_true(moved > 0);
    vla_loader_release(plain, a);
    vla_loader_release(shifted, b);
    vla_loader_free(plain);
    vla_loader_free(shifted);
    /* a shift of more than half the image is refused */
    vla_loader *bad = NULL;
    o.augment_shift = (int)img;
    assert_int_equal(vla_loader_create(&o, &bad), VLA_ERR_INVALID_ARG);
    /* 0 and 3 workers: the same batches */
    o.augment_shift = pad, o.augment = true;
    vla_loader *L0, *L3;
    start_0_and_3_workers(o, &L0, &L3);
    for (int j = 0; j < 5; j++) {
        double w;
        assert_int_equal(vla_loader_next(L0, &a, &w), VLA_OK);
        assert_int_equal(vla_loader_next(L3, &b, &w), VLA_OK);
        assert_int_equal(a->batch.n_images, b->batch.n_images);
        assert_memory_equal(a->batch.images, b->batch.images, (size_t)(a->batch.n_images * 3 * plane) * 4);
        vla_loader_release(L0, a);
        vla_loader_release(L3, b);
    }
    vla_loader_free(L0);
    vla_loader_free(L3);
    vla_policy_free(p);
    vla_lerobot_close(ds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_nan_refused),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_relative_actions),
        cmocka_unit_test(test_shift_by_hand),
        cmocka_unit_test(test_shift_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
