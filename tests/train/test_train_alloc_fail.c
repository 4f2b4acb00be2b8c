/* test_train_alloc_fail.c — allocation-failure sweeps (tests/alloc_fail.h)
 * over the train layer: writing a checkpoint over an older one (which must
 * stay the newest valid checkpoint when the write fails), finding and
 * loading a trained policy (checkpoint verification, config, safetensors),
 * metrics logs resumed (trimmed and rewritten), and `vla train`'s setup as
 * a one-step run of pi05-nano on a small Reach dataset, and as one step of
 * groot-nano on a weighted mixture (Reach + the SO-101 fixture) packed by a
 * token budget. One thread throughout, so the N-th allocation is the same
 * one in every run. */
#include "test_util.h"

#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_fail.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "io/safetensors.h"
#include "tensor/ops.h"
#include "checkpoint/checkpoint.h"
#include "train/metrics.h"
#include "checkpoint/pretrained.h"
#include "train/trainer.h"

static const char *dataset(void) {
    static char root[1024];
    if (!root[0]) {
        snprintf(root, sizeof root, "%s", test_tmp_path("reach_ds"));
        test_record_reach(root, 3, 0, -1);
    }
    return root;
}

static void train_opts(vla_train_opts *o, const char *out) {
    vla_train_opts_default(o);
    o->dataset_root = dataset();
    o->policy_type = "pi05";
    o->policy_config = "pi05-nano";
    o->output_dir = out;
    o->batch_size = 2;
    o->steps = 1;
    o->seed = 3;
    o->num_workers = 0; /* no loader threads: allocations in a fixed order */
    o->log_freq = 1;
    o->progress = false;
}

/* ---- a checkpoint written over an older one ------------------------------ */

static vla_status write_ckpt(const char *out, int64_t step) {
    float w[64];
    for (int i = 0; i < 64; i++) w[i] = (float)step + (float)i;
    const int64_t shape[2] = {8, 8};
    vla_ckpt_writer *ck;
    VLA_TRY(vla_ckpt_begin(out, step, 1000, &ck));
    json_t *cfg = json_pack("{s:s}", "type", "test");
    vla_status st = vla_ckpt_write_json(ck, "pretrained_model/config.json", cfg);
    json_decref(cfg);
    vla_safetensors_writer *sw = NULL;
    if (st == VLA_OK) st = vla_safetensors_writer_new(&sw);
    if (st == VLA_OK) st = vla_safetensors_writer_add(sw, "w", VLA_F32, 2, shape, w);
    if (st == VLA_OK) st = vla_ckpt_write_safetensors(ck, "pretrained_model/model.safetensors", sw);
    vla_safetensors_writer_free(sw);
    if (st == VLA_OK) st = vla_ckpt_write_file(ck, "training_state/rng_state.json", "{}", 2);
    if (st != VLA_OK) {
        vla_ckpt_abort(ck);
        return st;
    }
    return vla_ckpt_commit(ck, NULL);
}

typedef struct {
    char out[1024];
} ckpt_case;

static vla_status write_step_200(void *user) { return write_ckpt(((ckpt_case *)user)->out, 200); }

/* The older checkpoint is still the newest valid one. */
static void step_100_is_last(void *user) {
    vla_ckpt_info info;
    assert_int_equal(vla_ckpt_find_last(((ckpt_case *)user)->out, &info), VLA_OK);
    assert_int_equal(info.step, 100);
}

static void fresh_step_100(void *user) {
    ckpt_case *c = user;
    test_rmrf(c->out);
    assert_int_equal(write_ckpt(c->out, 100), VLA_OK);
}

static void test_checkpoint_write(void **state) {
    (void)state;
    static ckpt_case c;
    snprintf(c.out, sizeof c.out, "%s", test_tmp_path("ckpt_write"));
    fresh_step_100(&c);
    test_alloc_scenario s = {.name = "checkpoint write", .run = write_step_200, .reset = fresh_step_100,
                             .check_failed = step_100_is_last, .out_dir = c.out, .user = &c};
    test_alloc_sweep(&s);
}

/* ---- a trained policy loaded back ------------------------------------------ */

static char trained[1024]; /* output dir of a one-step run */

static const char *trained_run(void) {
    if (!trained[0]) {
        snprintf(trained, sizeof trained, "%s", test_tmp_path("trained"));
        vla_train_opts o;
        train_opts(&o, trained);
        vla_train_result r;
        if (vla_train(&o, &r) != VLA_OK) fail_msg("train: %s", vla_error_message());
        test_release_font_caches(); /* the plots' fontconfig caches would read as leaks */
    }
    return trained;
}

static vla_status load_policy(void *user) {
    vla_ckpt_info info;
    VLA_TRY(vla_ckpt_find_last(user, &info));
    VLA_TRY(vla_ckpt_verify(info.dir, NULL));
    vla_pretrained pm;
    VLA_TRY(vla_pretrained_load(user, test_backend(), &pm));
    vla_pretrained_free(&pm);
    return VLA_OK;
}

static void test_checkpoint_load(void **state) {
    (void)state;
    test_alloc_scenario s = {.name = "checkpoint + policy load", .run = load_policy, .user = (void *)trained_run()};
    test_alloc_sweep(&s);
}

/* ---- metrics resumed -------------------------------------------------------- */

static const char *metric_cols[] = {"loss", "grad_norm", "lr"};

typedef struct {
    char dir[1024];
} metrics_case;

/* Ten steps logged, then a run killed mid-line. */
static void interrupted_logs(void *user) {
    metrics_case *c = user;
    test_rmrf(c->dir);
    vla_metrics m;
    assert_int_equal(vla_metrics_open(&m, c->dir, metric_cols, 3, -1), VLA_OK);
    for (int s = 1; s <= 10; s++) {
        double v[3] = {1.0 / s, 0.5, 1e-4 * s};
        assert_int_equal(vla_metrics_log(&m, s, v), VLA_OK);
    }
    vla_metrics_close(&m);
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c->dir);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("{\"step\": 11, \"loss\": 0.0", f);
    fclose(f);
}

/* Resume from step 6: both logs are trimmed, then two steps logged. */
static vla_status resume_metrics(void *user) {
    metrics_case *c = user;
    vla_metrics m;
    VLA_TRY(vla_metrics_open(&m, c->dir, metric_cols, 3, 6));
    vla_status st = VLA_OK;
    for (int s = 7; st == VLA_OK && s <= 8; s++) {
        double v[3] = {1.0 / s, 0.5, 1e-4 * s};
        st = vla_metrics_log(&m, s, v);
    }
    vla_metrics_close(&m);
    return st;
}

static void test_metrics_resume(void **state) {
    (void)state;
    static metrics_case c;
    snprintf(c.dir, sizeof c.dir, "%s", test_tmp_path("metrics"));
    interrupted_logs(&c);
    test_alloc_scenario s = {.name = "metrics resume", .run = resume_metrics, .reset = interrupted_logs,
                             .out_dir = c.dir, .user = &c};
    test_alloc_sweep(&s);
}

/* ---- vla train's setup --------------------------------------------------------- */

typedef struct {
    char out[1024];
    bool mixture;
} train_case;

static vla_status train_one_step(void *user) {
    train_case *c = user;
    vla_train_opts o;
    train_opts(&o, c->out);
    static char roots[3000];
    if (c->mixture) {
        snprintf(roots, sizeof roots, "%s,%s", dataset(), test_source_path("tests/fixtures/lerobot/so101-record-test-v3.0"));
        o.dataset_root = roots, o.weights = "1,1", o.token_budget = 60, o.image_keys = "";
        o.policy_type = "groot", o.policy_config = "groot-nano";
    }
    vla_train_result r;
    return vla_train(&o, &r);
}

/* Whatever a failed run left, a checkpoint it names is a valid one. */
static void no_broken_checkpoint(void *user) {
    train_case *c = user;
    char last[1100];
    snprintf(last, sizeof last, "%s/checkpoints/last", c->out);
    if (vla_path_exists(last) && vla_ckpt_verify(last, NULL) != VLA_OK)
        fail_msg("a failed run left a broken checkpoint: %s", vla_error_message());
}

/* A run that absorbed a refused allocation still trained, logged and
 * checkpointed its step. */
static void run_complete(void *user) {
    train_case *c = user;
    vla_ckpt_info info;
    if (vla_ckpt_find_last(c->out, &info) != VLA_OK || info.step != 1)
        fail_msg("a run that returned OK has no checkpoint of step 1: %s", vla_error_message());
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c->out);
    size_t n;
    char *log = test_slurp(path, &n);
    if (!strstr(log, "{\"step\": 1, ")) fail_msg("a run that returned OK did not log step 1:\n%s", log);
    free(log);
}

static void remove_run(void *user) {
    test_rmrf(((train_case *)user)->out);
    test_release_font_caches(); /* before the sweep's leak check */
}

static void test_train_setup(void **state) {
    (void)state;
    static train_case c;
    snprintf(c.out, sizeof c.out, "%s", test_tmp_path("train"));
    test_alloc_scenario s = {.name = "vla train (1 step)", .run = train_one_step, .reset = remove_run,
                             .check_failed = no_broken_checkpoint, .out_dir = c.out, .user = &c, .samples = 96,
                             .absorbs = "plots are best-effort (a warning); nn kernels' scratch buffers (RoPE tables, "
                                        "norm rows) fall back to slower loops; pi05's attention FLOP count "
                                        "(for MFU) reads 0",
                             .check_ok = run_complete};
    test_alloc_sweep(&s);
}

static void test_train_mixture_setup(void **state) {
    (void)state;
    static train_case c;
    snprintf(c.out, sizeof c.out, "%s", test_tmp_path("train_mix"));
    c.mixture = true;
    test_alloc_scenario s = {.name = "vla train (a weighted mixture, token budget, 1 step)", .run = train_one_step,
                             .reset = remove_run, .check_failed = no_broken_checkpoint, .out_dir = c.out, .user = &c,
                             .samples = 48,
                             .absorbs = "plots are best-effort (a warning); nn kernels' scratch buffers fall back to "
                                        "slower loops",
                             .check_ok = run_complete};
    test_alloc_sweep(&s);
}

/* A training step that runs out of memory (here: no block above 4 MiB, as
 * a small device would refuse π0.5's activation arena) names the step and
 * the batch size and says what to do: gradient checkpointing (unless it is
 * on), half the batch with twice the accumulation, and vla plan's budget. */
static void test_step_out_of_memory_says_what_to_do(void **state) {
    (void)state;
    for (int gc = 0; gc < 2; gc++) {
        const char *out = test_tmp_path(gc ? "train_oom_gc" : "train_oom");
        test_rmrf(out);
        vla_train_opts o;
        train_opts(&o, out);
        o.batch_size = 8, o.gradient_checkpointing = gc;
        vla_train_result r;
        test_alloc_cap((size_t)4 << 20);
        vla_status st = vla_train(&o, &r);
        test_alloc_cap(0);
        const char *msg = vla_error_message();
        print_message("%s\n", msg);
        assert_int_equal(st, VLA_ERR_NOMEM);
        assert_non_null(strstr(msg, "at --batch_size=8 on cpu"));
        assert_non_null(strstr(msg, "step 1: "));
        assert_non_null(strstr(msg, "out of activation memory"));
        assert_true((strstr(msg, "--gradient_checkpointing keeps one layer") != NULL) == !gc);
        assert_non_null(strstr(msg, "--batch_size=4 --gradient_accumulation_steps=2"));
        assert_non_null(strstr(msg, "vla plan --config=pi05-nano --batch=8 --gpus=1 --precision=fp32"));
        test_rmrf(out);
    }
}

/* On a device with too little memory (checked given a capacity, $VLA_CHECKED_MEMORY_MIB): vla train measures
 * its step before allocating and warns that it may not fit, naming what checkpointing needs and a batch that
 * fits; the step then runs out as the warning said, with the advice above. */
static void test_device_memory_warning(void **state) {
    (void)state;
    const char *out = test_tmp_path("train_device_memory");
    test_rmrf(out);
    vla_train_opts o;
    train_opts(&o, out);
    o.batch_size = 8, o.device = "checked";
    const char *log = test_tmp_path("train_device_memory.log");
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(log, "w");
    assert_non_null(f);
    dup2(fileno(f), 2);
    vla_log_set_level(VLA_LOG_WARN);
    setenv("VLA_CHECKED_MEMORY_MIB", "6", 1);
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    unsetenv("VLA_CHECKED_MEMORY_MIB");
    vla_log_set_level(VLA_LOG_ERROR);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(vla_read_file(log, &text, &len), VLA_OK);
    print_message("%s\n", text);
    if (!strstr(text, "may not fit: training pi05-nano at 8 samples per step") ||
        !strstr(text, "--gradient_checkpointing needs"))
        fail_msg("no device memory warning in: %.800s", text);
    free(text);
    assert_int_equal(st, VLA_ERR_NOMEM);
    assert_non_null(strstr(vla_error_message(), "at --batch_size=8 on checked"));
    test_rmrf(out);
}

int main(void) {
    omp_set_num_threads(1);
    vla_log_set_level(VLA_LOG_ERROR); /* fallbacks and refusals warn; keep the output short */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_write),
        cmocka_unit_test(test_checkpoint_load),
        cmocka_unit_test(test_metrics_resume),
        cmocka_unit_test(test_train_setup),
        cmocka_unit_test(test_device_memory_warning),
        cmocka_unit_test(test_train_mixture_setup),
        cmocka_unit_test(test_step_out_of_memory_says_what_to_do),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
