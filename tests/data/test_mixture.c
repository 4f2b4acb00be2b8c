/* test_mixture.c — weighted mixtures of datasets (data/mixture.h) and the
 * loader over several datasets (train/loader.h "Mixtures").
 *
 * Sampling: within every epoch each dataset is drawn exactly its quota, the
 * quotas are the weights' shares of the epoch to within one sample and sum to
 * it; the rows of an up-weighted dataset repeat evenly, a down-weighted one's
 * rows are all reached over epochs; without weights the mixture is the
 * datasets concatenated (every row once per epoch); a prefix of the sampler's
 * shuffled stream shows each dataset at its weight within a 5-sigma bound;
 * bad weights are refused with the flag's name.
 * Loader: a mixture of a Reach dataset recorded here (4-D state, 2-D action,
 * 10 fps) and the SO-101 LeRobot fixture (6-D, 30 fps) builds every sample
 * exactly as a loader over that dataset alone builds it (state, action chunk,
 * is_pad, real action dims, prompt tokens), with its dataset's embodiment id
 * and per-dataset normalisers; a dataset without a camera the flags name is
 * refused naming it.
 * Prepared mixtures: `vla data prepare --dataset.root=A,B` writes a shard set
 * per dataset and mixture.json; its sets, in order, load to batches equal to
 * the mixture of the datasets read directly (frames included); a set left
 * incomplete is refused naming it. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "data/lerobot.h"
#include "train/loader.h"
#include "data/mixture.h"
#include "data/shards.h"
#include "distributed/sampler.h"
#include "policy/policy.h"

static void test_quotas_and_rows(void **state) {
    (void)state;
    const int64_t rows[3] = {454, 32, 1492};
    const double w[3] = {0.5, 0.3, 0.2};
    vla_mixture m;
    assert_int_equal(vla_mixture_init(&m, 3, rows, w, 9), VLA_OK);
    int64_t N = 454 + 32 + 1492, sum = 0;
    assert_int_equal(m.total, N);
    for (int d = 0; d < 3; d++) {
        sum += m.quota[d];
        assert_true(fabs((double)m.quota[d] - w[d] * (double)N) < 1.0);
    }
    assert_int_equal(sum, N);
    int64_t *seen = calloc((size_t)N, sizeof *seen);
    int64_t *ever = calloc((size_t)N, sizeof *ever);
    assert_non_null(seen), assert_non_null(ever);
    for (int64_t e = 0; e < 60; e++) {
        int64_t count[3] = {0};
        memset(seen, 0, (size_t)N * sizeof *seen);
        for (int64_t v = 0; v < N; v++) {
            int d;
            int64_t r = vla_mixture_row(&m, e, v, &d);
            assert_true(d >= 0 && d < 3);
            assert_true(r >= m.first_row[d] && r < m.first_row[d] + rows[d]);
            count[d]++, seen[r]++, ever[r]++;
        }
        for (int d = 0; d < 3; d++) assert_int_equal(count[d], m.quota[d]);
        /* the up-weighted datasets (0 and 1): every row ⌊q/n⌋ or ⌈q/n⌉ times */
        for (int d = 0; d < 2; d++) {
            int64_t lo = m.quota[d] / rows[d], hi = (m.quota[d] + rows[d] - 1) / rows[d];
            for (int64_t r = m.first_row[d]; r < m.first_row[d] + rows[d]; r++)
                assert_true(seen[r] >= lo && seen[r] <= hi);
        }
        /* the down-weighted one: at most once per epoch */
        for (int64_t r = m.first_row[2]; r < N; r++) assert_true(seen[r] <= 1);
    }
    /* ... and over 60 epochs every one of its rows at least once */
    for (int64_t r = m.first_row[2]; r < N; r++) assert_true(ever[r] >= 1);
    free(seen), free(ever);
}

static void test_concatenation_without_weights(void **state) {
    (void)state;
    const int64_t rows[2] = {100, 37};
    vla_mixture m;
    assert_int_equal(vla_mixture_init(&m, 2, rows, NULL, 1), VLA_OK);
    for (int64_t e = 0; e < 3; e++)
        for (int64_t v = 0; v < 137; v++) assert_int_equal(vla_mixture_row(&m, e, v, NULL), v);
    /* weights equal to the sizes, at any scale, are the same mixture */
    const double w[2] = {1000, 370};
    assert_int_equal(vla_mixture_init(&m, 2, rows, w, 1), VLA_OK);
    for (int64_t v = 0; v < 137; v++) assert_int_equal(vla_mixture_row(&m, 5, v, NULL), v);
}

/* What training sees: the sampler's shuffled stream through the mixture. A
 * prefix of n draws of one epoch holds dataset d about w_d·n times; sampling
 * without replacement from the epoch's N indices has a smaller variance than
 * binomial, so 5 binomial sigmas bound it. */
static void test_stream_frequencies(void **state) {
    (void)state;
    const int64_t rows[3] = {5000, 800, 20000};
    const double w[3] = {0.6, 0.3, 0.1};
    vla_mixture m;
    assert_int_equal(vla_mixture_init(&m, 3, rows, w, 77), VLA_OK);
    int64_t N = m.total, n = 4000;
    int64_t *order = malloc((size_t)N * sizeof *order);
    assert_non_null(order);
    for (int64_t e = 0; e < 4; e++) {
        assert_int_equal(vla_sampler_order(77, e, true, N, order), VLA_OK);
        int64_t count[3] = {0};
        for (int64_t i = 0; i < n; i++) {
            int d;
            (void)vla_mixture_row(&m, e, order[i], &d);
            count[d]++;
        }
        for (int d = 0; d < 3; d++) {
            double p = (double)m.quota[d] / (double)N, sigma = sqrt((double)n * p * (1 - p));
            assert_true(fabs((double)count[d] - (double)n * p) < 5 * sigma);
            assert_true(fabs(p - w[d]) < 1.0 / (double)N);
        }
    }
    free(order);
}

static void test_bad_weights(void **state) {
    (void)state;
    const int64_t rows[2] = {10, 10};
    vla_mixture m;
    const double zero[2] = {1, 0}, neg[2] = {1, -1}, nan_w[2] = {1, NAN}, tiny[2] = {1, 1e-6};
    assert_int_equal(vla_mixture_init(&m, 2, rows, zero, 1), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "--dataset.weights"));
    assert_int_equal(vla_mixture_init(&m, 2, rows, neg, 1), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_mixture_init(&m, 2, rows, nan_w, 1), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_mixture_init(&m, 2, rows, tiny, 1), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "gets no sample"));
    assert_int_equal(vla_mixture_init(&m, 0, rows, NULL, 1), VLA_ERR_INVALID_ARG);
    double w[3];
    assert_int_equal(vla_mixture_parse_weights("0.7, 0.3", 2, w), VLA_OK);
    assert_true(w[0] == 0.7 && w[1] == 0.3);
    assert_int_equal(vla_mixture_parse_weights("0.7,0.3", 3, w), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "2 weights for 3 datasets"));
    assert_int_equal(vla_mixture_parse_weights("0.7;0.3", 2, w), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_mixture_parse_weights("a,b", 2, w), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_mixture_parse_weights("", 1, w), VLA_ERR_INVALID_ARG);
}

/* ---- the loader over a mixture ------------------------------------------------ */

static vla_policy *make_policy(void) {
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_load("pi05-nano", &cfg), VLA_OK);
    cfg.action.state_dim = 6, cfg.action.action_dim = 6; /* the wider dataset's */
    assert_int_equal(vla_policy_config_validate("t", &cfg), VLA_OK);
    vla_policy *p;
    if (vla_policy_create(&cfg, test_cpu_backend(), &p) != VLA_OK) fail_msg("%s", vla_error_message());
    return p;
}

/* Sample i of batch a equals sample j of batch b: state, actions, is_pad, real dims, tokens. */
static void assert_same_sample(const vla_batch *a, int i, const vla_batch *b, int j, const vla_policy *p) {
    int64_t S = p->cfg.action.state_dim, A = p->cfg.action.action_dim, H = p->cfg.action.horizon;
    assert_memory_equal(a->state + i * S, b->state + j * S, (size_t)S * sizeof(float));
    assert_memory_equal(a->actions + i * H * A, b->actions + j * H * A, (size_t)(H * A) * sizeof(float));
    assert_memory_equal(a->action_is_pad + i * H, b->action_is_pad + j * H, (size_t)H);
    assert_int_equal(a->real_action_dim[i], b->real_action_dim[j]);
    int32_t la = a->cu_seqlens[i + 1] - a->cu_seqlens[i], lb = b->cu_seqlens[j + 1] - b->cu_seqlens[j];
    assert_int_equal(la, lb);
    for (int32_t k = 0; k < la; k++) {
        assert_int_equal(a->roles[a->cu_seqlens[i] + k], b->roles[b->cu_seqlens[j] + k]);
        assert_int_equal(a->token_ids[a->cu_seqlens[i] + k], b->token_ids[b->cu_seqlens[j] + k]);
    }
}

static void test_loader_mixture(void **state) {
    (void)state;
    const char *reach = test_tmp_path("mixture_reach");
    if (!vla_is_dir(reach)) test_record_reach(reach, 6, 0, -1);
    vla_lerobot *dr, *ds;
    assert_int_equal(vla_lerobot_open(reach, &dr), VLA_OK);
    assert_int_equal(vla_lerobot_open(test_source_path("tests/fixtures/lerobot/so101-record-test-v3.0"), &ds), VLA_OK);
    vla_policy *p = make_policy();
    const vla_lerobot *both[2] = {dr, ds};
    const int32_t ids[2] = {5, 2};
    vla_loader_opts o = {.datasets = both, .n_datasets = 2, .embodiments = ids, .policy = p, .batch_size = 4,
                         .seed = 3, .image_keys = ""};
    vla_loader *Lm, *Lr, *Ls;
    if (vla_loader_create(&o, &Lm) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_loader_opts one = {.ds = dr, .policy = p, .batch_size = 4, .seed = 3, .image_keys = ""};
    assert_int_equal(vla_loader_create(&one, &Lr), VLA_OK);
    one.ds = ds;
    assert_int_equal(vla_loader_create(&one, &Ls), VLA_OK);
    assert_int_equal(vla_loader_n_datasets(Lm), 2);
    assert_int_equal(vla_loader_num_samples(Lm), dr->n_rows + ds->n_rows);
    vla_loader_dataset i0 = vla_loader_dataset_info(Lm, 0), i1 = vla_loader_dataset_info(Lm, 1);
    assert_int_equal(i0.first_row, 0), assert_int_equal(i1.first_row, dr->n_rows);
    assert_int_equal(i0.state_width, 4), assert_int_equal(i1.state_width, 6);
    assert_int_equal(i0.action_width, 2), assert_int_equal(i1.action_width, 6);
    assert_int_equal(i0.embodiment, 5), assert_int_equal(i1.embodiment, 2);
    /* statistics stay per dataset */
    assert_memory_equal(i1.action_norm->lo, vla_loader_action_norm(Ls)->lo, 6 * sizeof(float));
    assert_memory_equal(i1.action_norm->hi, vla_loader_action_norm(Ls)->hi, 6 * sizeof(float));
    assert_memory_equal(i0.state_norm->lo, vla_loader_state_norm(Lr)->lo, 4 * sizeof(float));

    /* rows of both datasets in one micro-batch, including chunks that run past an episode's end */
    int64_t local[4] = {3, 10, dr->n_rows - 1, ds->n_rows - 2};
    int from[4] = {0, 1, 0, 1};
    int64_t rows[4];
    uint64_t keys[4] = {11, 12, 13, 14};
    for (int i = 0; i < 4; i++) rows[i] = local[i] + (from[i] ? dr->n_rows : 0);
    vla_loader_batch *bm;
    if (vla_loader_build(Lm, rows, keys, 4, &bm) != VLA_OK) fail_msg("%s", vla_error_message());
    for (int i = 0; i < 4; i++) {
        vla_loader_batch *b1;
        vla_loader *L1 = from[i] ? Ls : Lr;
        assert_int_equal(vla_loader_build(L1, &local[i], &keys[i], 1, &b1), VLA_OK);
        assert_same_sample(&bm->batch, i, &b1->batch, 0, p);
        assert_int_equal(bm->batch.embodiment[i], ids[from[i]]);
        vla_loader_release(L1, b1);
    }
    assert_int_equal(bm->batch.real_action_dim[0], 2);
    assert_int_equal(bm->batch.real_action_dim[1], 6);
    assert_int_equal(bm->batch.action_is_pad[3 * p->cfg.action.horizon + p->cfg.action.horizon - 1], 1);
    assert_int_equal(vla_batch_check(&bm->batch, &p->cfg), VLA_OK);
    vla_loader_release(Lm, bm);
    vla_loader_free(Lm), vla_loader_free(Lr), vla_loader_free(Ls);

    /* every dataset must have what the flags name: SO-101 has no camera 'observation.image' */
    o.image_keys = "observation.image";
    assert_int_not_equal(vla_loader_create(&o, &Lm), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "so101-record-test-v3.0"));
    assert_non_null(strstr(vla_error_message(), "no camera 'observation.image'"));
    vla_policy_free(p);
    vla_lerobot_close(dr), vla_lerobot_close(ds);
}

static void test_prepared_mixture(void **state) {
    (void)state;
    char a[1024], b[1024], out[1024], cmd[4096], buf[8192];
    snprintf(a, sizeof a, "%s", test_tmp_path("pm_reach_a"));
    snprintf(b, sizeof b, "%s", test_tmp_path("pm_reach_b"));
    snprintf(out, sizeof out, "%s", test_tmp_path("pm_shards"));
    if (!vla_is_dir(a)) test_record_reach(a, 3, 0, -1);
    if (!vla_is_dir(b)) test_record_reach(b, 2, 100, -1);
    test_rmrf(out);
    vla_policy *p = make_policy();
    int64_t S = p->cfg.vision.image_size;
    snprintf(cmd, sizeof cmd, "%s data prepare --dataset.root=%s,%s --out=%s --image_size=%lld --quiet", test_cli_path(),
             a, b, out, (long long)S);
    if (test_run(cmd, buf, sizeof buf) != 0) fail_msg("%s: %s", cmd, buf);
    assert_true(vla_shards_is_mixture(out));
    char paths[4096], want[4096];
    assert_int_equal(vla_shards_mixture_paths(out, paths, sizeof paths), VLA_OK);
    snprintf(want, sizeof want, "%s/00-pm_reach_a,%s/01-pm_reach_b", out, out);
    assert_string_equal(paths, want);
    vla_lerobot *whole;
    assert_int_not_equal(vla_lerobot_open(out, &whole), VLA_OK); /* the directory itself is no one dataset */
    assert_non_null(strstr(vla_error_message(), "--dataset.shards="));

    vla_lerobot *d[4];
    char seta[2048], setb[2048];
    snprintf(seta, sizeof seta, "%s/00-pm_reach_a", out);
    snprintf(setb, sizeof setb, "%s/01-pm_reach_b", out);
    assert_int_equal(vla_lerobot_open(a, &d[0]), VLA_OK);
    assert_int_equal(vla_lerobot_open(b, &d[1]), VLA_OK);
    assert_int_equal(vla_lerobot_open(seta, &d[2]), VLA_OK);
    assert_int_equal(vla_lerobot_open(setb, &d[3]), VLA_OK);
    const vla_lerobot *direct[2] = {d[0], d[1]}, *shards[2] = {d[2], d[3]};
    vla_loader_opts o = {.datasets = direct, .n_datasets = 2, .policy = p, .batch_size = 4, .seed = 8};
    vla_loader *Ld, *Ls;
    if (vla_loader_create(&o, &Ld) != VLA_OK) fail_msg("%s", vla_error_message());
    o.datasets = shards;
    if (vla_loader_create(&o, &Ls) != VLA_OK) fail_msg("%s", vla_error_message());
    int64_t rows[4] = {0, d[0]->n_rows - 1, d[0]->n_rows, d[0]->n_rows + d[1]->n_rows - 1};
    uint64_t keys[4] = {1, 2, 3, 4};
    vla_loader_batch *x, *y;
    assert_int_equal(vla_loader_build(Ld, rows, keys, 4, &x), VLA_OK);
    assert_int_equal(vla_loader_build(Ls, rows, keys, 4, &y), VLA_OK);
    for (int i = 0; i < 4; i++) assert_same_sample(&x->batch, i, &y->batch, i, p);
    assert_int_equal(x->batch.n_images, 4);
    assert_int_equal(y->batch.n_images, 4);
    assert_memory_equal(x->batch.images, y->batch.images, (size_t)(4 * 3 * S * S) * sizeof(float));
    assert_memory_equal(x->batch.embodiment, y->batch.embodiment, 4 * sizeof(int32_t));
    vla_loader_free(Ld), vla_loader_free(Ls);
    for (int i = 0; i < 4; i++) vla_lerobot_close(d[i]);

    /* a set whose manifest is gone (an interrupted prepare) is refused, naming it */
    char man[2100];
    snprintf(man, sizeof man, "%s/%s", setb, VLA_SHARDS_MANIFEST);
    assert_int_equal(remove(man), 0);
    assert_int_not_equal(vla_shards_mixture_paths(out, paths, sizeof paths), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "01-pm_reach_b"));
    vla_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quotas_and_rows),
        cmocka_unit_test(test_concatenation_without_weights),
        cmocka_unit_test(test_stream_frequencies),
        cmocka_unit_test(test_bad_weights),
        cmocka_unit_test(test_loader_mixture),
        cmocka_unit_test(test_prepared_mixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
