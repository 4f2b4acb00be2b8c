/* test_train_loop.c — `vla train` end to end on a small Reach dataset
 * recorded here with the Reach expert through the v3.0 writer
 * (observation.state = agent + target, a 64×64 camera, action): a short
 * run lowers the loss; a run stopped after a checkpoint and resumed logs
 * the same losses bit for bit as an uninterrupted one; NaN gradients stop
 * the run (or are skipped and counted) and never reach a checkpoint; a
 * dataset with a NaN action is refused with a message; a corrupted
 * model.safetensors is refused; a run that reads each step's loss while the
 * next step runs (every step but the logged ones) logs and trains what a
 * run reading every step at once does. */
#include "test_util.h"


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot.h"
#include "sim/env.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/pretrained.h"
#include "tensor/backend.h"
#include "train/trainer.h"



static const char *dataset(void) {
    static char root[1024];
    if (!root[0]) {
        snprintf(root, sizeof root, "%s", test_tmp_path("reach_ds"));
        if (!vla_is_dir(root)) test_record_reach(root, 40, 0, -1);
    }
    return root;
}

static void base_opts(vla_train_opts *o, const char *out) {
    vla_train_opts_default(o);
    o->dataset_root = dataset();
    o->policy_type = "pi05";
    o->policy_config = "pi05-nano";
    o->output_dir = out;
    o->batch_size = 8;
    o->steps = 12;
    o->seed = 7;
    o->num_workers = 2;
    o->lr = 3e-3;
    o->log_freq = 1;
    o->save_freq = 4;
    o->progress = false;
}

static void test_loss_decreases(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_learn");
    test_rmrf(out);
    vla_train_opts o;
    base_opts(&o, out);
    o.steps = 300;
    o.save_freq = 0;
    o.log_freq = 50;
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    printf("loss %.4f -> %.4f over %lld steps, %.1f samples/s, data wait %.1f%%\n", r.first_loss, r.last_loss,
           (long long)r.steps_done, r.samples_per_s, 100 * r.data_wait_frac);
    assert_true(r.last_loss < 0.7 * r.first_loss);
    char p[2048];
    snprintf(p, sizeof p, "%s/loss.png", out);
    assert_true(vla_path_exists(p));
    snprintf(p, sizeof p, "%s/metrics.csv", out);
    assert_true(vla_path_exists(p));
}

/* The two runs' step-12 weights are the same bytes. */
static void assert_same_final_weights(const char *a, const char *b) {
    char pa[2048], pb[2048];
    snprintf(pa, sizeof pa, "%s/checkpoints/000012/pretrained_model/model.safetensors", a);
    snprintf(pb, sizeof pb, "%s/checkpoints/000012/pretrained_model/model.safetensors", b);
    char *da, *db;
    size_t na, nb;
    assert_int_equal(vla_read_file(pa, &da, &na), VLA_OK);
    assert_int_equal(vla_read_file(pb, &db, &nb), VLA_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    free(da), free(db);
}

static void test_resume_bit_exact(void **state) {
    (void)state;
    const char *a = test_tmp_path("run_full"), *b = test_tmp_path("run_resumed");
    test_rmrf(a), test_rmrf(b);
    vla_train_opts o;
    vla_train_result r;
    /* log rows every 3 steps (mean loss of the window), checkpoints every 4:
     * the resumed run starts inside a log window */
    base_opts(&o, a);
    o.log_freq = 3;
    assert_int_equal(vla_train(&o, &r), VLA_OK);
    base_opts(&o, b);
    o.log_freq = 3;
    /* killed two steps after the checkpoint of step 4 */
    vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, 6, VLA_FAULT_FOREVER);
    vla_status st = vla_train(&o, &r);
    vla_fault_clear();
    assert_int_equal(st, VLA_OK);
    base_opts(&o, b);
    o.log_freq = 3;
    o.resume = true;
    st = vla_train(&o, &r);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(r.start_step, 4);
    char *la = test_losses_text(a), *lb = test_losses_text(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
    /* the final weights are identical too */
    assert_same_final_weights(a, b);
}

/* A 12-step run of base_opts into tmp/NAME with no checkpoint but the last, rows every log_freq steps. */
static const char *run_unsaved(const char *name, int64_t log_freq, bool recompute) {
    const char *out = test_tmp_path(name);
    test_rmrf(out);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out);
    o.save_freq = 0;
    o.log_freq = log_freq;
    o.gradient_checkpointing = recompute;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
    return out;
}

/* The "loss" of each row of OUT/metrics.jsonl, in order; returns the count. */
static int logged_losses(const char *out, double *loss, int cap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    size_t n;
    char *data = test_slurp(path, &n), *save = NULL;
    int k = 0;
    for (char *line = strtok_r(data, "\n", &save); line && k < cap; line = strtok_r(NULL, "\n", &save)) {
        char *l = strstr(line, "\"loss\":");
        assert_non_null(l);
        loss[k++] = strtod(l + strlen("\"loss\":"), NULL);
    }
    free(data);
    return k;
}

/* One run, trained two other ways with the same result:
 *  - --gradient_checkpointing (every layer recomputed in backward): the same losses and final
 *    weights, and the checkpoint says how it was trained;
 *  - rows every 4 steps, so that a step's loss and verdict are read while the next step runs
 *    (train/step.h, defer_result; every row, at once): the same weights, and each row is the mean
 *    of its window's rows of the reference — no loss lost or given to another step. */
static void test_same_run_other_ways(void **state) {
    (void)state;
    const char *a = run_unsaved("run_reference", 1, false);
    const char *b = run_unsaved("run_recomputed", 1, true);
    char *la = test_losses_text(a), *lb = test_losses_text(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
    assert_same_final_weights(a, b);
    char pb[2048], *db;
    size_t nb;
    snprintf(pb, sizeof pb, "%s/checkpoints/000012/pretrained_model/train_config.json", b);
    assert_int_equal(vla_read_file(pb, &db, &nb), VLA_OK);
    assert_non_null(strstr(db, "\"gradient_checkpointing\": true"));
    free(db);

    const char *c = run_unsaved("run_read_late", 4, false);
    assert_same_final_weights(a, c);
    double each[12], window[3];
    assert_int_equal(logged_losses(a, each, 12), 12);
    assert_int_equal(logged_losses(c, window, 3), 3);
    for (int w = 0; w < 3; w++) {
        double mean = (each[4 * w] + each[4 * w + 1] + each[4 * w + 2] + each[4 * w + 3]) / 4;
        assert_true(fabs(window[w] - mean) <= 1e-7 * fabs(mean));
    }
}

/* The deferred reads the backend can hold open at once (ops.h, read_later: a process-wide table of
 * VLA_READS_IN_FLIGHT on checked and cuda; none on cpu, which reads at once) */
static int free_read_slots(const vla_ops *ops) {
    if (!ops->read_later) return 0;
    int t[VLA_READS_IN_FLIGHT + 1], n = 0;
    double x = 0, *dev = ops->alloc(sizeof x);
    assert_non_null(dev);
    ops->to_device(dev, &x, sizeof x);
    while (n <= VLA_READS_IN_FLIGHT && (t[n] = ops->read_later(dev, sizeof x)) >= 0) n++;
    for (int i = 0; i < n; i++) ops->read_collect(t[i], &x);
    ops->free(dev);
    return n;
}

static void test_nonfinite(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_nan");
    test_rmrf(out);
    vla_train_opts o;
    vla_train_result r;
    const vla_ops *dev = vla_backend_find(vla_backend_default_name());
    assert_non_null(dev);
    int slots = free_read_slots(dev);
    /* three runs that stop at a non-finite step 6, its verdict read while step 7 runs (train/step.h,
     * defer_result): each must close both steps' deferred reads, or a process running the trainer again
     * (a library user, a bench) loses them for good and its steps wait for the host */
    for (int k = 0; k < 3; k++) {
        test_rmrf(out);
        base_opts(&o, out);
        o.log_freq = 12;
        vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 6, 6);
        vla_status st = vla_train(&o, &r);
        vla_fault_clear();
        if (st != VLA_ERR_NUMERIC) fail_msg("status %d: %s", (int)st, vla_error_message());
        assert_non_null(strstr(vla_error_message(), "step 6"));
        assert_null(strstr(vla_error_message(), "step 7")); /* the verdict is step 6's alone */
        assert_non_null(strstr(vla_error_message(), "skip_nonfinite"));
    }
    assert_int_equal(free_read_slots(dev), slots);
    vla_ckpt_info ck;
    assert_int_equal(vla_ckpt_find_last(out, &ck), VLA_OK);
    assert_int_equal(ck.step, 4); /* nothing after the bad step */
    test_rmrf(out);
    base_opts(&o, out);
    o.skip_nonfinite = true;
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 6, 6);
    vla_status st = vla_train(&o, &r);
    vla_fault_clear();
    assert_int_equal(st, VLA_OK);
    assert_int_equal(r.skipped, 1);
}

static void test_nan_dataset_refused(void **state) {
    (void)state;
    const char *root = test_tmp_path("reach_nan");
    test_rmrf(root);
    test_record_reach(root, 2, 50, 7);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, test_tmp_path("run_nands"));
    o.dataset_root = root;
    vla_status st = vla_train(&o, &r);
    assert_int_equal(st, VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "non-finite"));
}

static void test_corrupted_checkpoint_refused(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_corrupt");
    test_rmrf(out);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out);
    o.steps = 4;
    assert_int_equal(vla_train(&o, &r), VLA_OK);
    char p[2048];
    snprintf(p, sizeof p, "%s/checkpoints/000004/pretrained_model/model.safetensors", out);
    char *d;
    size_t n;
    assert_int_equal(vla_read_file(p, &d, &n), VLA_OK);
    d[n - 5] ^= 0x40; /* one bit of one weight */
    assert_int_equal(vla_write_file_atomic(p, d, n), VLA_OK);
    free(d);
    snprintf(p, sizeof p, "%s/checkpoints/000004/pretrained_model", out);
    vla_pretrained pm;
    vla_status st = vla_pretrained_load(p, test_backend(), &pm);
    assert_int_not_equal(st, VLA_OK);
    printf("refused: %s\n", vla_error_message());
    assert_non_null(strstr(vla_error_message(), "model.safetensors"));
}

/* SIGKILL `vla train` while it writes checkpoints every step: what is left
 * always has a newest checkpoint that verifies and loads, and resuming from
 * it finishes the run. */
static void test_sigkill_during_checkpoint(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_kill");
    for (int round = 0; round < 3; round++) {
        test_rmrf(out);
        char cmd[4096], buf[4096];
        snprintf(cmd, sizeof cmd,
                 "%s train --dataset.root=%s --policy.type=pi05 --policy.config=pi05-nano --batch_size=8 --steps=40 "
                 "--save_freq=1 --log_freq=1 --seed=7 --optimizer.lr=3e-3 --num_workers=1 --quiet --output_dir=%s "
                 ">/dev/null 2>&1 & pid=$!; "
                 "while [ ! -e %s/checkpoints/000003 ] && kill -0 $pid 2>/dev/null; do sleep 0.005; done; "
                 "sleep 0.0%d; kill -9 $pid; wait $pid; echo killed",
                 test_cli_path(), dataset(), out, out, 3 + 7 * round);
        assert_int_equal(test_run(cmd, buf, sizeof buf), 0);
        vla_ckpt_info ck;
        vla_status st = vla_ckpt_find_last(out, &ck);
        if (st != VLA_OK) fail_msg("round %d: %s", round, vla_error_message());
        assert_true(ck.step >= 3);
        vla_pretrained pm;
        st = vla_pretrained_load(ck.dir, test_backend(), &pm);
        if (st != VLA_OK) fail_msg("round %d: %s", round, vla_error_message());
        vla_pretrained_free(&pm);
        printf("round %d: killed, newest valid checkpoint is step %lld\n", round, (long long)ck.step);
    }
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out);
    o.steps = 40;
    o.save_freq = 1;
    o.num_workers = 1;
    o.resume = true;
    vla_status st = vla_train(&o, &r);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(r.start_step + r.steps_done, 40);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_decreases),
        cmocka_unit_test(test_resume_bit_exact),
        cmocka_unit_test(test_same_run_other_ways),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_nan_dataset_refused),
        cmocka_unit_test(test_corrupted_checkpoint_refused),
        cmocka_unit_test(test_sigkill_during_checkpoint),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
