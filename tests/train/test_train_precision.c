/* test_train_precision.c — `vla train --precision=bf16|fp8` on a small
 * Reach dataset recorded here (docs/precision.md):
 *   - bit-exact resume in every mode: a run stopped after a checkpoint and
 *     resumed logs the losses of an uninterrupted one, and ends with the
 *     same weights and (FP8) the same scaling state, byte for byte —
 *     pi05-nano in bf16 and fp8, groot-nano in fp8, with an amax history
 *     shorter than the run so the window rolls;
 *   - the saved scaling state is TransformerEngine's rule applied to the
 *     saved history (each scale recomputed here from it), the recipe and
 *     the mode are in train_config.json;
 *   - through SIGKILL: the CLI killed mid-run (--crash_at_step) and resumed
 *     ends with the uninterrupted run's losses, weights and FP8 state;
 *   - a skipped non-finite step leaves no amax in the history;
 *   - a resume with another --precision is refused unless
 *     --resume.allow_changes=true, which starts FP8 from scale 1;
 *   - over 150 steps the bf16 and FP8 loss curves stay within 5% of f32's
 *     (pi05-nano, groot-nano; the long curves are a documented command). */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "io/safetensors.h"
#include "checkpoint/checkpoint.h"
#include "train/trainer.h"

static const char *dataset(void) {
    static char root[1024];
    if (!root[0]) {
        snprintf(root, sizeof root, "%s", test_tmp_path("reach_prec_ds"));
        if (!vla_is_dir(root)) test_record_reach(root, 24, 0, -1);
    }
    return root;
}

static void base_opts(vla_train_opts *o, const char *out, const char *config, vla_precision mode) {
    vla_train_opts_default(o);
    o->dataset_root = dataset();
    o->policy_type = strncmp(config, "groot", 5) ? "pi05" : "groot";
    o->policy_config = config;
    o->output_dir = out;
    o->batch_size = 8;
    o->steps = 12;
    o->seed = 7;
    o->num_workers = 2;
    o->lr = 3e-3;
    o->log_freq = 3;
    o->save_freq = 4;
    o->progress = false;
    o->precision = mode;
    o->fp8.amax_history_len = 4; /* rolls within the run */
}

static void same_file(const char *a, const char *b, const char *rel) {
    char pa[2048], pb[2048];
    snprintf(pa, sizeof pa, "%s/%s", a, rel);
    snprintf(pb, sizeof pb, "%s/%s", b, rel);
    size_t na, nb;
    char *da = test_slurp(pa, &na), *db = test_slurp(pb, &nb);
    if (na != nb || memcmp(da, db, na)) fail_msg("%s differs between %s and %s", rel, a, b);
    free(da), free(db);
}

static void resume_bit_exact(const char *config, vla_precision mode, int64_t min_dim) {
    char na[64], nb[64];
    snprintf(na, sizeof na, "full_%s_%d_%lld", config, (int)mode, (long long)min_dim);
    snprintf(nb, sizeof nb, "resumed_%s_%d_%lld", config, (int)mode, (long long)min_dim);
    const char *a = test_tmp_path(na), *b = test_tmp_path(nb);
    test_rmrf(a), test_rmrf(b);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, a, config, mode);
    o.fp8.min_dim = min_dim;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    base_opts(&o, b, config, mode);
    o.fp8.min_dim = min_dim;
    vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, 6, VLA_FAULT_FOREVER); /* two steps past step 4's checkpoint */
    vla_status st = vla_train(&o, &r);
    vla_fault_clear();
    assert_int_equal(st, VLA_OK);
    base_opts(&o, b, config, mode);
    o.fp8.min_dim = min_dim;
    o.resume = true;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(r.start_step, 4);
    char *la = test_losses_text(a), *lb = test_losses_text(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
    same_file(a, b, "checkpoints/000012/pretrained_model/model.safetensors");
    if (mode == VLA_PREC_FP8) {
        same_file(a, b, "checkpoints/000012/" VLA_FP8_STATE_FILE);
        /* the FP8 linears min_dim chose: their tensors alone, and their count in train_config.json */
        char p[2048];
        snprintf(p, sizeof p, "%s/checkpoints/000012/%s", a, VLA_FP8_STATE_FILE);
        vla_safetensors f;
        assert_int_equal(vla_safetensors_open(p, &f), VLA_OK);
        int64_t tensors = (int64_t)vla_safetensors_count(&f);
        vla_safetensors_close(&f);
        snprintf(p, sizeof p, "%s/checkpoints/000012/pretrained_model/train_config.json", a);
        json_error_t je;
        json_t *cfg = json_load_file(p, 0, &je);
        if (!cfg) fail_msg("%s: %s", p, je.text);
        json_t *fp8 = json_object_get(json_object_get(cfg, "precision"), "fp8");
        int64_t linears = json_integer_value(json_object_get(json_object_get(cfg, "precision"), "linears"));
        int64_t fp8_linears = json_integer_value(json_object_get(fp8, "linears"));
        assert_int_equal(json_integer_value(json_object_get(fp8, "min_dim")), min_dim);
        assert_int_equal(tensors, 2 * fp8_linears);
        if (min_dim == 0) assert_int_equal(fp8_linears, linears);
        else assert_true(fp8_linears > 0 && fp8_linears < linears);
        json_decref(cfg);
    } else {
        char p[2048];
        snprintf(p, sizeof p, "%s/checkpoints/000012/%s", a, VLA_FP8_STATE_FILE);
        assert_false(vla_path_exists(p));
    }
    printf("%s %s: resumed at step 4, losses, weights%s equal the uninterrupted run's\n", config,
           vla_precision_name(mode), mode == VLA_PREC_FP8 ? " and FP8 state" : "");
}

static void test_resume_pi05_bf16(void **state) {
    (void)state;
    resume_bit_exact("pi05-nano", VLA_PREC_BF16, 0);
}
static void test_resume_pi05_fp8(void **state) {
    (void)state;
    resume_bit_exact("pi05-nano", VLA_PREC_FP8, 0);
}
/* FP8 only where it pays: pi05-nano's 16-wide linears in bf16, the rest FP8 */
static void test_resume_pi05_fp8_min_dim(void **state) {
    (void)state;
    resume_bit_exact("pi05-nano", VLA_PREC_FP8, 32);
}
static void test_resume_groot_fp8(void **state) {
    (void)state;
    resume_bit_exact("groot-nano", VLA_PREC_FP8, 0);
}

/* The saved state against TE's rule, recomputed from the saved history
 * (its length exceeds the steps run, so no amax has dropped out), and the
 * history holding `updates` steps: a reached linear's input amax in rows
 * 1..updates, zeros after. */
static void check_state_file(const char *ckpt_dir, int64_t hist_len, int64_t updates) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", ckpt_dir, VLA_FP8_STATE_FILE);
    vla_safetensors f;
    assert_int_equal(vla_safetensors_open(path, &f), VLA_OK);
    int64_t moved = 0, n_lin = 0;
    for (size_t i = 0; i < vla_safetensors_count(&f); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&f, i);
        const char *suffix = strstr(t->name, ".fp8_scale");
        if (!suffix || suffix[strlen(".fp8_scale")]) continue;
        n_lin++;
        char hname[256];
        snprintf(hname, sizeof hname, "%.*s.fp8_amax_history", (int)(suffix - t->name), t->name);
        float sc[3], *h = malloc(sizeof(float) * 3 * hist_len);
        assert_int_equal(vla_safetensors_load_f32(&f, t->name, sc, 3), VLA_OK);
        assert_int_equal(vla_safetensors_load_f32(&f, hname, h, (size_t)(3 * hist_len)), VLA_OK);
        for (int r = 0; r < 3; r++) {
            float fmax = r == 2 ? 57344.0f : 448.0f, a = 0;
            assert_true(h[r] == 0.0f); /* row 0 restarted after the last update */
            for (int64_t j = 1; j < hist_len; j++) {
                assert_true(isfinite(h[j * 3 + r]));
                a = h[j * 3 + r] > a ? h[j * 3 + r] : a;
                if (r == 0 && h[3] > 0 && (j <= updates) != (h[j * 3] > 0))
                    fail_msg("%s: input amax history row %lld is %g after %lld updates", t->name, (long long)j,
                             h[j * 3], (long long)updates);
            }
            float want = a > 0 && isfinite(a) ? fmax / a : 1.0f; /* never updated: TE's initial 1 */
            if (isfinite(a) && sc[r] != want)
                fail_msg("%s role %d: scale %.9g, want %g / %.9g = %.9g", t->name, r, sc[r], fmax, a, want);
            moved += sc[r] != 1.0f;
        }
        free(h);
    }
    assert_true(n_lin >= 30);
    assert_true(moved >= n_lin * 2); /* x and W of (nearly) every linear, dy where gradients reach */
    assert_non_null(strstr(vla_safetensors_meta_get(&f, "fp8_recipe"), "\"amax_compute_algo\": \"max\""));
    vla_safetensors_close(&f);
}

static void test_state_is_te_rule(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_state");
    test_rmrf(out);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out, "pi05-nano", VLA_PREC_FP8);
    o.steps = 6;
    o.fp8.amax_history_len = 16;
    if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
    char ck[2048];
    snprintf(ck, sizeof ck, "%s/checkpoints/000006", out);
    check_state_file(ck, 16, 6);
    /* train_config.json says how the run ran */
    char p[2200];
    snprintf(p, sizeof p, "%s/pretrained_model/train_config.json", ck);
    json_t *cfg;
    assert_int_equal(vla_json_load_file(p, &cfg), VLA_OK);
    json_t *pr = json_object_get(cfg, "precision");
    assert_string_equal(json_string_value(json_object_get(pr, "mode")), "fp8");
    json_t *f8 = json_object_get(pr, "fp8");
    assert_int_equal(json_integer_value(json_object_get(f8, "amax_history_len")), 16);
    assert_string_equal(json_string_value(json_object_get(f8, "format")), "HYBRID");
    json_decref(cfg);
}

/* A poisoned, skipped step: its amaxes never enter the history (a NaN
 * activation would have put +Inf there, freezing the scales for the
 * whole window). */
static void test_skipped_step_leaves_no_amax(void **state) {
    (void)state;
    const char *out = test_tmp_path("run_skip");
    test_rmrf(out);
    vla_train_opts o;
    vla_train_result r;
    base_opts(&o, out, "pi05-nano", VLA_PREC_FP8);
    o.steps = 6;
    o.fp8.amax_history_len = 16;
    o.skip_nonfinite = true;
    vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, 3, 3);
    vla_status st = vla_train(&o, &r);
    vla_fault_clear();
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(r.skipped, 1);
    char ck[2048];
    snprintf(ck, sizeof ck, "%s/checkpoints/000006", out);
    check_state_file(ck, 16, 5); /* 6 steps, 5 updates */
}

static int cli(const char *args, char *out, size_t cap) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s train --dataset.root=%s --policy.type=pi05 --policy.config=pi05-nano --batch_size=8 --seed=7 "
             "--optimizer.lr=3e-3 --num_workers=1 --log_freq=1 --quiet %s 2>&1",
             test_cli_path(), dataset(), args);
    return test_run(cmd, out, cap);
}

/* The CLI killed by SIGKILL after step 5 (last checkpoint: step 4) and
 * resumed with --resume=true alone: the FP8 state came through. */
static void test_fp8_through_sigkill(void **state) {
    (void)state;
    const char *a = test_tmp_path("cli_full"), *b = test_tmp_path("cli_killed");
    test_rmrf(a), test_rmrf(b);
    char buf[16384], args[4096];
    const char *common = "--precision=fp8 --fp8.amax_history_len=3 --steps=10 --save_freq=2";
    snprintf(args, sizeof args, "%s --output_dir=%s", common, a);
    assert_int_equal(cli(args, buf, sizeof buf), 0);
    snprintf(args, sizeof args, "%s --output_dir=%s --crash_at_step=5", common, b);
    int rc = cli(args, buf, sizeof buf);
    assert_int_not_equal(rc, 0); /* killed */
    vla_ckpt_info ck;
    assert_int_equal(vla_ckpt_find_last(b, &ck), VLA_OK);
    assert_int_equal(ck.step, 4);
    snprintf(args, sizeof args, "--output_dir=%s --resume=true", b);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s train %s --quiet --json 2>&1", test_cli_path(), args);
    rc = test_run(cmd, buf, sizeof buf);
    if (rc != 0) fail_msg("resume: exit %d\n%s", rc, buf);
    assert_non_null(strstr(buf, "\"precision\":\"fp8\""));
    char *la = test_losses_text(a), *lb = test_losses_text(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
    same_file(a, b, "checkpoints/000010/pretrained_model/model.safetensors");
    same_file(a, b, "checkpoints/000010/" VLA_FP8_STATE_FILE);
}

/* Another --precision on resume: refused, or allowed and recorded. */
static void test_precision_change_on_resume(void **state) {
    (void)state;
    const char *out = test_tmp_path("cli_change");
    test_rmrf(out);
    char buf[16384], args[4096], cmd[8192];
    snprintf(args, sizeof args, "--precision=bf16 --steps=4 --save_freq=2 --output_dir=%s", out);
    assert_int_equal(cli(args, buf, sizeof buf), 0);
    snprintf(cmd, sizeof cmd, "%s train --output_dir=%s --resume=true --steps=6 --precision=fp8 --quiet 2>&1",
             test_cli_path(), out);
    int rc = test_run(cmd, buf, sizeof buf);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(buf, "--precision=fp8"));
    assert_non_null(strstr(buf, "bf16"));
    assert_non_null(strstr(buf, "--resume.allow_changes=true"));
    /* the FP8 knobs without FP8: an error, not silence */
    snprintf(cmd, sizeof cmd, "%s train --output_dir=%s --resume=true --steps=6 --fp8.margin=1 --quiet 2>&1",
             test_cli_path(), out);
    rc = test_run(cmd, buf, sizeof buf);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(buf, "fp8.margin"));
    snprintf(cmd, sizeof cmd, "%s train --output_dir=%s --resume=true --steps=6 --fp8.min_dim=1024 --quiet 2>&1",
             test_cli_path(), out);
    assert_int_equal(test_run(cmd, buf, sizeof buf), 2);
    assert_non_null(strstr(buf, "fp8.min_dim"));
    snprintf(cmd, sizeof cmd,
             "%s train --output_dir=%s --resume=true --steps=6 --precision=fp8 --resume.allow_changes=true --quiet "
             "2>&1", test_cli_path(), out);
    rc = test_run(cmd, buf, sizeof buf);
    if (rc != 0) fail_msg("exit %d\n%s", rc, buf);
    assert_non_null(strstr(buf, "FP8 starts from scale 1"));
    char p[2048];
    snprintf(p, sizeof p, "%s/metrics.jsonl", out);
    size_t n;
    char *m = test_slurp(p, &n);
    assert_non_null(strstr(m, "\"precision\":{\"from\":\"bf16\",\"to\":\"fp8\"}"));
    free(m);
    snprintf(p, sizeof p, "%s/checkpoints/000006/%s", out, VLA_FP8_STATE_FILE);
    assert_true(vla_path_exists(p));
    /* a bad value names the flag */
    snprintf(cmd, sizeof cmd, "%s train --dataset.root=%s --precision=fp16 --steps=1 --quiet 2>&1", test_cli_path(),
             dataset());
    assert_int_equal(test_run(cmd, buf, sizeof buf), 2);
    assert_non_null(strstr(buf, "--precision=fp16"));
}

/* The recipe trains: over a short run the loss curves in bf16 and FP8 stay
 * within 5% of f32's, both as the mean over the whole run and over its
 * second half. Any rounding difference makes two runs' trajectories drift
 * apart by a few percent at this size (groot-nano in bf16 measured +3.2%
 * over the second half, in FP8 −0.3%), so the tolerance is that drift, not
 * a precision bias; the long runs of pi05-tiny / groot-tiny, with an f32
 * control that changes only the summation order, are
 * scripts/precision_curves.sh and the table in docs/precision.md. */
/* the mean of a run's logged losses over steps (from, to] (10-step means, log_freq 10) */
static double mean_loss(const char *out, int from, int to) {
    char p[2048], line[1024];
    snprintf(p, sizeof p, "%s/metrics.csv", out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    double sum = 0;
    int n = 0, step;
    double loss;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%lf", &step, &loss) == 2 && step > from && step <= to) sum += loss, n++;
    fclose(f);
    assert_true(n > 0);
    return sum / n;
}

/* Three training seeds per mode at lr 1e-3, their mean losses compared. At
 * lr 3e-3 a nano run is chaotic: any rounding difference (the f32 GEMM
 * library alone, oneDNN or OpenBLAS, another summation order) moved one FP8
 * run's second half by 13% and f32's own seeds spread 0.54-0.87, so a 5%
 * bound there measured luck, not precision. At 1e-3 bf16 stays within 1e-3
 * of f32 per seed and FP8's three-seed mean within 2%. */
/* Under ASan (TEST_SANITIZED) each mode trains one seed for 20 steps:
 * the same code under the sanitizer (18 runs of 150 steps took ~60 s of the
 * ASan suite's longest test), the statistics left to the optimised and
 * checked suites, which run them in full. */
#define CURVE_SEEDS (TEST_SANITIZED ? 1 : 3)
#define CURVE_STEPS (TEST_SANITIZED ? 20 : 150)
static void curves(const char *config, double tol_bf16, double tol_fp8) {
    double whole[3] = {0}, half[3] = {0}, first = 0;
    for (int m = 0; m < 3; m++)
        for (int sd = 0; sd < CURVE_SEEDS; sd++) {
            char name[64];
            snprintf(name, sizeof name, "curve_%s_%d_%d", config, m, sd);
            const char *out = test_tmp_path(name);
            test_rmrf(out);
            vla_train_opts o;
            vla_train_result r;
            base_opts(&o, out, config, (vla_precision)m);
            o.seed = 7 + (uint64_t)sd;
            o.steps = CURVE_STEPS;
            o.save_freq = 0;
            o.log_freq = 10;
            o.lr = 1e-3;
            o.fp8.amax_history_len = 16;
            if (vla_train(&o, &r) != VLA_OK) fail_msg("%s", vla_error_message());
            if (m == 0) first += r.first_loss / CURVE_SEEDS;
            double w = mean_loss(out, 0, CURVE_STEPS), h = mean_loss(out, CURVE_STEPS * 7 / 15, CURVE_STEPS);
            assert_true(isfinite(w) && isfinite(h));
            printf("  %s %s seed %d: %.5f / %.5f\n", config, vla_precision_name((vla_precision)m), 7 + sd, w, h);
            whole[m] += w / CURVE_SEEDS, half[m] += h / CURVE_SEEDS;
            test_rmrf(out);
        }
    printf("%s, %d steps, mean of %d seeds (first 10: %.4f): mean loss over the run / its second half: f32 %.5f / "
           "%.5f, bf16 %.5f / %.5f (%+.2e / %+.2e), fp8 %.5f / %.5f (%+.2e / %+.2e)\n", config, CURVE_STEPS, CURVE_SEEDS, first,
           whole[0], half[0], whole[1], half[1], whole[1] / whole[0] - 1, half[1] / half[0] - 1, whole[2], half[2],
           whole[2] / whole[0] - 1, half[2] / half[0] - 1);
    if (TEST_SANITIZED) return;
    assert_true(half[0] < 0.85 * first); /* it learns */
    assert_true(fabs(whole[1] / whole[0] - 1) <= tol_bf16 && fabs(half[1] / half[0] - 1) <= tol_bf16);
    assert_true(fabs(whole[2] / whole[0] - 1) <= tol_fp8 && fabs(half[2] / half[0] - 1) <= tol_fp8);
}

static void test_curves_pi05(void **state) {
    (void)state;
    curves("pi05-nano", 0.05, 0.05);
}

static void test_curves_groot(void **state) {
    (void)state;
    curves("groot-nano", 0.05, 0.05);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_pi05_bf16),
        cmocka_unit_test(test_resume_pi05_fp8),
        cmocka_unit_test(test_resume_pi05_fp8_min_dim),
        cmocka_unit_test(test_resume_groot_fp8),
        cmocka_unit_test(test_state_is_te_rule),
        cmocka_unit_test(test_skipped_step_leaves_no_amax),
        cmocka_unit_test(test_fp8_through_sigkill),
        cmocka_unit_test(test_precision_change_on_resume),
        cmocka_unit_test(test_curves_pi05),
        cmocka_unit_test(test_curves_groot),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches();
    return rc;
}
