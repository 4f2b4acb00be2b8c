/* test_train_mixture.c — `vla train` on a mixture of two robots' datasets
 * (--dataset.root=A,B, --dataset.weights): a Reach dataset recorded here
 * (4-D state, 2-D action, 10 fps) and the SO-101 LeRobot fixture (6-D state
 * and action, 30 fps), state-only, GR00T with its per-embodiment encoders and
 * decoders.
 *
 * - the checkpoint records one embodiment per dataset (id, robot_type, its
 *   own statistics and widths), the policy's dims hold the wider dataset and
 *   its embodiment table grows to the mixture;
 * - both embodiments' slices of a per-embodiment weight are trained, while a
 *   run on Reach alone leaves slice 1 at its initial value (the ids reach the
 *   policy);
 * - a run stopped after a checkpoint and resumed logs the uninterrupted
 *   run's losses bit for bit (the mixture's sampling is a pure function of
 *   seed, epoch and position);
 * - loading picks the embodiment by environment name, by name or by id, and
 *   refuses an unknown one or an ambiguous choice, listing what there is;
 * - with a token budget the step's samples are packed first-fit decreasing
 *   into micro-batches of at most that many tokens: another micro-batch
 *   count, the same samples and keys, so the same losses and gradient norms
 *   as fixed micro-batches up to summation order, and a resumed run is again
 *   bit-exact;
 * - bad flag combinations are refused naming the flag. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "checkpoint/pretrained.h"
#include "train/trainer.h"

static const char *mixture(void) {
    static char roots[4096];
    if (!roots[0]) {
        char reach[1024];
        snprintf(reach, sizeof reach, "%s", test_tmp_path("mix_reach"));
        if (!vla_is_dir(reach)) test_record_reach(reach, 30, 0, -1);
        snprintf(roots, sizeof roots, "%s,%s", reach, test_source_path("tests/fixtures/lerobot/so101-record-test-v3.0"));
    }
    return roots;
}

static void base_opts(vla_train_opts *o, const char *out) {
    vla_train_opts_default(o);
    o->dataset_root = mixture();
    o->weights = "0.5,0.5";
    o->image_keys = "";
    o->policy_type = "groot";
    o->policy_config = "groot-nano";
    o->output_dir = out;
    o->batch_size = 8;
    o->steps = 8;
    o->seed = 5;
    o->num_workers = 2;
    o->lr = 3e-3;
    o->weight_decay = 0; /* a slice no sample reaches then keeps its initial value exactly */
    o->log_freq = 1;
    o->save_freq = 4;
    o->progress = false;
}

static const float *param(const vla_policy *p, const char *name, int64_t *numel) {
    for (int64_t i = 0; i < p->specs.n; i++)
        if (!strcmp(p->params[i].spec->name, name)) {
            *numel = p->params[i].spec->numel;
            return p->params[i].data;
        }
    fail_msg("no parameter %s", name);
    return NULL;
}

/* Whether slice e of the per-embodiment decoder weight moved from its initial value. */
static bool slice_trained(const vla_policy *trained, int e) {
    vla_policy *init;
    assert_int_equal(vla_policy_create(&trained->cfg, test_backend(), &init), VLA_OK);
    assert_int_equal(vla_policy_init_weights(init, 5), VLA_OK);
    int64_t n, n0;
    const char *name = "action_head.action_decoder.layer2.W";
    const float *da = param(trained, name, &n), *db = param(init, name, &n0);
    float *a = test_dev_dup(trained->tops, da, n), *b = test_dev_dup(init->tops, db, n0);
    assert_int_equal(n, n0);
    int64_t per = n / trained->cfg.head.embodiments;
    bool moved = memcmp(a + e * per, b + e * per, (size_t)per * sizeof(float)) != 0;
    free(a), free(b);
    vla_policy_free(init);
    return moved;
}

static void test_mixture_trains_and_records_embodiments(void **state) {
    (void)state;
    const char *out = test_tmp_path("mix_run");
    test_rmrf(out);
    vla_train_opts o;
    base_opts(&o, out);
    vla_train_result r;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    char path[2048];
    snprintf(path, sizeof path, "%s/checkpoints/000008/pretrained_model/config.json", out);
    json_t *root;
    assert_int_equal(vla_json_load_file(path, &root), VLA_OK);
    json_t *embs = json_object_get(root, "embodiments");
    assert_int_equal(json_array_size(embs), 2);
    json_t *e0 = json_array_get(embs, 0), *e1 = json_array_get(embs, 1);
    assert_int_equal(json_integer_value(json_object_get(e0, "id")), 0);
    assert_int_equal(json_integer_value(json_object_get(e1, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(e0, "name")), "reach");
    assert_string_equal(json_string_value(json_object_get(e1, "name")), "so101_follower");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e0, "features"), "observation.state")), 4);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e1, "features"), "action")), 6);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(e1, "normalization"), "action"),
                                                        "dim")), 6);
    json_decref(root);

    vla_pretrained pm;
    snprintf(path, sizeof path, "%s/checkpoints/000008", out);
    if (vla_pretrained_load(path, test_backend(), &pm) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(pm.policy->cfg.action.state_dim, 6);
    assert_int_equal(pm.policy->cfg.action.action_dim, 6);
    assert_true(pm.policy->cfg.head.embodiments >= 2);
    assert_true(slice_trained(pm.policy, 0));
    assert_true(slice_trained(pm.policy, 1));
    /* by environment name; then by name and by id */
    assert_int_equal(vla_pretrained_select_embodiment(&pm, NULL, "reach"), VLA_OK);
    assert_int_equal(pm.meta.embodiment, 0);
    assert_int_equal(pm.meta.state_width, 4);
    assert_int_equal(vla_pretrained_select_embodiment(&pm, "so101_follower", "reach"), VLA_OK);
    assert_int_equal(pm.meta.embodiment, 1);
    assert_int_equal(pm.meta.state_width, 6);
    assert_int_equal(pm.state_norm.dim, 6);
    assert_true(pm.meta.fps == 30);
    assert_int_equal(vla_pretrained_select_embodiment(&pm, "0", NULL), VLA_OK);
    assert_int_equal(pm.meta.action_width, 2);
    assert_int_equal(pm.action_norm.dim, 2);
    assert_int_not_equal(vla_pretrained_select_embodiment(&pm, "aloha", NULL), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "reach (id 0), so101_follower (id 1)"));
    assert_int_not_equal(vla_pretrained_select_embodiment(&pm, NULL, "pusht"), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "--policy.embodiment"));
    vla_pretrained_free(&pm);

    /* the control: Reach alone trains slice 0 and leaves slice 1 as initialised */
    const char *solo = test_tmp_path("mix_solo");
    test_rmrf(solo);
    base_opts(&o, solo);
    char reach[1024];
    snprintf(reach, sizeof reach, "%.*s", (int)strcspn(mixture(), ","), mixture());
    o.dataset_root = reach, o.weights = NULL, o.steps = 4;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    if (vla_pretrained_load(solo, test_backend(), &pm) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(slice_trained(pm.policy, 0));
    assert_false(slice_trained(pm.policy, 1));
    /* a single-dataset checkpoint knows one embodiment, named after its robot */
    assert_int_equal(vla_pretrained_select_embodiment(&pm, NULL, "pusht"), VLA_OK);
    assert_string_equal(pm.meta.embodiment_name, "reach");
    vla_pretrained_free(&pm);
}

static void test_mixture_resume_bit_exact(void **state) {
    (void)state;
    const char *a = test_tmp_path("mix_full"), *b = test_tmp_path("mix_resumed");
    test_rmrf(a), test_rmrf(b);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, a);
    o.weights = "3,1"; /* up-weights the small Reach set: rows repeat within an epoch */
    assert_int_equal(vla_train(&o, &r), VLA_OK);
    base_opts(&o, b);
    o.weights = "3,1";
    vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, 6, VLA_FAULT_FOREVER);
    vla_status st = vla_train(&o, &r);
    vla_fault_clear();
    assert_int_equal(st, VLA_OK);
    base_opts(&o, b);
    o.weights = "3,1";
    o.resume = true;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(r.start_step, 4);
    char *la = test_losses_text(a), *lb = test_losses_text(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
}

/* "step" → (loss, grad_norm) of a run's metrics.jsonl */
static int read_metrics(const char *out, double loss[], double gnorm[], int cap) {
    char path[2048], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        loss[n] = json_number_value(json_object_get(j, "loss"));
        gnorm[n] = json_number_value(json_object_get(j, "grad_norm"));
        json_decref(j), n++;
    }
    fclose(f);
    return n;
}

static void test_token_budget(void **state) {
    (void)state;
    const char *a = test_tmp_path("mix_fixed"), *b = test_tmp_path("mix_budget"), *c = test_tmp_path("mix_budget_res");
    test_rmrf(a), test_rmrf(b), test_rmrf(c);
    vla_train_opts o;
    vla_train_result ra, rb, rc;
    base_opts(&o, a);
    o.accum = 2, o.batch_size = 6;
    assert_int_equal(vla_train(&o, &ra), VLA_OK);
    assert_true(ra.micro_batches_per_step == 2);
    base_opts(&o, b);
    o.accum = 2, o.batch_size = 6;
    /* groot-nano's samples are 2 to 3 dozen tokens: 3 or more micro-batches of ≤ 100 for 12 samples */
    o.token_budget = 100;
    if (vla_train(&o, &rb) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_true(rb.micro_batches_per_step >= 3);
    assert_true(rb.tokens_per_micro_batch <= 100);
    double la[16], ga[16], lb[16], gb[16];
    int na = read_metrics(a, la, ga, 16), nb = read_metrics(b, lb, gb, 16);
    assert_int_equal(na, 8), assert_int_equal(nb, 8);
    for (int i = 0; i < na; i++) {
        assert_true(fabs(la[i] - lb[i]) <= 1e-5 * fabs(la[i]));
        assert_true(fabs(ga[i] - gb[i]) <= 1e-4 * fabs(ga[i]));
    }
    /* stopped after step 6, resumed from step 4's checkpoint: b's losses bit for bit */
    base_opts(&o, c);
    o.accum = 2, o.batch_size = 6, o.token_budget = 100;
    vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, 6, VLA_FAULT_FOREVER);
    vla_status st = vla_train(&o, &rc);
    vla_fault_clear();
    assert_int_equal(st, VLA_OK);
    o.resume = true;
    if (vla_train(&o, &rc) != VLA_OK) fail_msg("%s", vla_error_message());
    char *tb = test_losses_text(b), *tc = test_losses_text(c);
    assert_string_equal(tb, tc);
    free(tb), free(tc);
}

static void test_bad_flags(void **state) {
    (void)state;
    const char *out = test_tmp_path("mix_bad");
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out);
    o.weights = "1,2,3";
    assert_int_not_equal(vla_train(&o, &r), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "3 weights for 2 datasets"));
    base_opts(&o, out);
    o.episodes = "0,1";
    assert_int_not_equal(vla_train(&o, &r), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "--dataset.episodes"));
    base_opts(&o, out);
    char one[1024];
    snprintf(one, sizeof one, "%.*s", (int)strcspn(mixture(), ","), mixture());
    o.dataset_root = one;
    assert_int_not_equal(vla_train(&o, &r), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "--dataset.weights"));
    base_opts(&o, out);
    o.dataset_root = "a,,b";
    assert_int_not_equal(vla_train(&o, &r), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "empty"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixture_trains_and_records_embodiments),
        cmocka_unit_test(test_mixture_resume_bit_exact),
        cmocka_unit_test(test_token_budget),
        cmocka_unit_test(test_bad_flags),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches(); /* the runs drew plots */
    return rc;
}
