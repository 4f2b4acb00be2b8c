/* test_train_ux.c — `vla train` as a user meets it (issue 44), one test per
 * point, on the built binary with a small PushT dataset recorded here:
 * Ctrl-C / SIGTERM that checkpoint and resume bit-exact, a run stopped before
 * any checkpoint that resumes from step 0, more --steps on resume that train
 * at lr > 0, the from-scratch default lr, the info line naming device and
 * precision, the end-of-run summary (JSON only with --json), and eval plots
 * whose line can be seen. The references are independent of the code under
 * test: an uninterrupted run of the same command (its losses and weights'
 * bytes), the metrics files, and the PNGs' pixels. */
#include "cli/cli_test.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "io/image.h"

static char data[2000]; /* the PushT dataset every test reads */


static const char *tmp(const char *name) { return test_tmp_path(name); }

/* The flags of every run here: groot-nano on the state and block keypoints. */
#define COMMON                                                                                                     \
    "--policy.config=groot-nano --num_workers=1 --dataset.state_keys=observation.state,observation.environment_state " \
    "--dataset.image_keys="

static int train(const char *dir, const char *extra) {
    return vla("train --dataset.root=%s " COMMON " --output_dir=%s %s", data, dir, extra);
}

static int group_setup(void **state) {
    (void)state;
    snprintf(data, sizeof data, "%s", test_tmp_path("pusht"));
    if (vla("sim record --env=pusht --episodes=2 --seed=0 --out=%s", data) != 0) {
        fprintf(stderr, "recording the dataset failed:\n%s\n", out);
        return 1;
    }
    return 0;
}

static bool file_has(const char *path, const char *s) {
    size_t n;
    char *t = test_slurp(path, &n);
    bool has = strstr(t, s) != NULL;
    free(t);
    return has;
}

/* `vla train` started in the background (output into `log`), `sigs` sent
 * with kill() once the progress shows step `after`; the exit code (128 +
 * signal when it died of one). The log is left in `out`. */
static int train_interrupted(const char *dir, const char *extra, int after, const int *sigs, int nsigs) {
    char args[6144], log[2048], want[64];
    snprintf(log, sizeof log, "%s.log", dir);
    snprintf(args, sizeof args, "exec %s train --dataset.root=%s " COMMON " --output_dir=%s %s >'%s' 2>&1",
             test_cli_path(), data, dir, extra, log);
    snprintf(want, sizeof want, "step %d/", after);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("OMP_NUM_THREADS", "1", 1);
        execl("/bin/sh", "sh", "-c", args, (char *)NULL); /* exec: the signal reaches vla itself */
        _exit(127);
    }
    int status = 0;
    bool seen = false;
    for (int i = 0; i < 6000 && !seen; i++) { /* up to 60 s */
        if (waitpid(pid, &status, WNOHANG) == pid) {
            size_t n;
            char *t = test_slurp(log, &n);
            fail_msg("the run ended (status %d) before step %d showed:\n%s", status, after, t);
        }
        struct stat st;
        if (stat(log, &st) == 0 && st.st_size > 0 && file_has(log, want)) seen = true;
        else usleep(10000);
    }
    assert_true(seen);
    for (int i = 0; i < nsigs; i++) kill(pid, sigs[i]); /* back to back: two signals, so two numbers */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    size_t n;
    char *t = test_slurp(log, &n);
    snprintf(out, sizeof out, "%s", t);
    free(t);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static void same_bytes(const char *a_dir, const char *b_dir, const char *rel) {
    char a[2048], b[2048];
    snprintf(a, sizeof a, "%s/%s", a_dir, rel);
    snprintf(b, sizeof b, "%s/%s", b_dir, rel);
    size_t na, nb;
    char *x = test_slurp(a, &na), *y = test_slurp(b, &nb);
    if (na != nb || memcmp(x, y, na)) fail_msg("%s and %s differ", a, b);
    free(x), free(y);
}

/* Entries that are not hidden (an unfinished checkpoint is a hidden directory). */
static int count_entries(const char *dir) {
    char cmd[4200], buf[64];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | wc -l", dir);
    test_run(cmd, buf, sizeof buf);
    return atoi(buf);
}

/* The run every interruption test resumes into (uninterrupted, same flags). */
#define RUN_FLAGS "--steps=150 --batch_size=16 --save_freq=1000 --log_freq=1 --seed=5"
static const char *reference(void) {
    static bool done;
    const char *ref = "/ref";
    static char path[2048];
    snprintf(path, sizeof path, "%s%s", test_tmp_dir(), ref);
    if (!done) EXPECT(train(path, RUN_FLAGS " --quiet"), 0);
    done = true;
    return path;
}

/* ---- 1. Ctrl-C checkpoints; the resumed run is the uninterrupted one, bit for bit ------------ */

static void test_sigint_checkpoints_and_resumes_bit_exact(void **state) {
    (void)state;
    const char *ref = reference(), *cut = tmp("sigint");
    int sig = SIGINT;
    /* save_freq 1000: no regular checkpoint before the interruption */
    EXPECT(train_interrupted(cut, RUN_FLAGS, 3, &sig, 1), 130);
    SAYS("finishing this step, then saving a checkpoint");
    SAYS("interrupted by Ctrl-C after step");
    SAYS("resume      vla train --output_dir=");
    SAYS("--resume=true");
    char ck[2048];
    snprintf(ck, sizeof ck, "%s/checkpoints", cut);
    assert_int_equal(count_entries(ck), 2); /* the interrupted step's, and last */
    EXPECT(vla("train --output_dir=%s --resume=true --quiet", cut), 0);
    char *a = test_losses_text(ref), *b = test_losses_text(cut);
    assert_string_equal(a, b);
    free(a), free(b);
    same_bytes(ref, cut, "checkpoints/last/pretrained_model/model.safetensors");
}

/* ---- 2. a second signal exits at once; a run with no checkpoint resumes from step 0 ----------- */

static void test_second_signal_and_resume_without_checkpoint(void **state) {
    (void)state;
    const char *ref = reference(), *cut = tmp("twice");
    /* SIGTERM alone: a checkpoint and 143, as shells expect */
    int term = SIGTERM;
    EXPECT(train_interrupted(tmp("sigterm"), RUN_FLAGS, 2, &term, 1), 143);
    SAYS("interrupted by SIGTERM after step");
    /* two signals: the second exits at once (128 + its number) */
    int sigs[2] = {SIGTERM, SIGINT};
    int rc = train_interrupted(cut, RUN_FLAGS, 2, sigs, 2);
    if (rc != 130 && rc != 143) fail_msg("exit %d after two signals:\n%s", rc, out);
    SAYS("exiting without saving");
    char ck[2048];
    snprintf(ck, sizeof ck, "%s/checkpoints", cut);
    assert_int_equal(count_entries(ck), 0); /* nothing half-written left as complete */
    /* re-running the command is refused (the directory holds a run); --resume=true starts it over */
    EXPECT(train(cut, RUN_FLAGS " --quiet"), 2);
    SAYS("--resume=true");
    EXPECT(vla("train --output_dir=%s --resume=true --quiet", cut), 0);
    SAYS("starting from step 0");
    char *a = test_losses_text(ref), *b = test_losses_text(cut);
    assert_string_equal(a, b);
    free(a), free(b);
    same_bytes(ref, cut, "checkpoints/last/pretrained_model/model.safetensors");
    /* SIGKILL before the first checkpoint (no handler runs): the same */
    const char *killed = tmp("killed");
    EXPECT(train(killed, "--steps=8 --save_freq=1000 --crash_at_step=3 --quiet"), 137);
    EXPECT(vla("train --output_dir=%s --resume=true --quiet", killed), 0);
    SAYS("starting from step 0");
}

/* ---- 3. more --steps on resume train at lr > 0 ------------------------------------------------ */

static void test_resume_more_steps_trains(void **state) {
    (void)state;
    const char *r = tmp("more_steps");
    EXPECT(train(r, "--steps=10 --batch_size=4 --log_freq=1 --quiet"), 0);
    EXPECT(vla("train --output_dir=%s --resume=true --steps=16 --quiet", r), 0);
    char p[2048];
    snprintf(p, sizeof p, "%s/metrics.jsonl", r);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    bool noted = false;
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        json_t *ch = json_object_get(json_object_get(j, "resume_changes"), "schedule_steps");
        if (ch) noted = json_integer_value(json_object_get(ch, "to")) == 16;
        int64_t step = json_integer_value(json_object_get(j, "step"));
        json_t *lr = json_object_get(j, "lr");
        if (step > 10 && lr) {
            if (!(json_number_value(lr) > 1e-6)) fail_msg("step %lld trains at lr %g", (long long)step,
                                                           json_number_value(lr));
            n++;
        }
        json_decref(j);
    }
    fclose(f);
    assert_int_equal(n, 6);
    assert_true(noted);
}

/* ---- 4. default lr: from scratch vs. fine-tuning; an explicit one wins --------------------------- */

static double saved_lr(const char *run) {
    char p[2048];
    snprintf(p, sizeof p, "%s/checkpoints/last/pretrained_model/train_config.json", run);
    json_error_t err;
    json_t *j = json_load_file(p, 0, &err);
    if (!j) fail_msg("%s: %s", p, err.text);
    double lr = json_number_value(json_object_get(json_object_get(j, "optimizer"), "lr"));
    json_decref(j);
    return lr;
}

static void test_default_lr(void **state) {
    (void)state;
    const char *scratch = tmp("lr_scratch"), *tuned = tmp("lr_tuned"), *given = tmp("lr_given");
    EXPECT(train(scratch, "--steps=2 --batch_size=4"), 0);
    SAYS("lr 0.001 (from-scratch default");
    assert_true(fabs(saved_lr(scratch) - 1e-3) < 1e-12);
    /* a vla.c checkpoint carries its config: no --policy.config */
    EXPECT(vla("train --dataset.root=%s --num_workers=1 --dataset.state_keys=observation.state,"
               "observation.environment_state --dataset.image_keys= --output_dir=%s --steps=2 --batch_size=4 "
               "--policy.pretrained_path=%s/checkpoints/last/pretrained_model", data, tuned, scratch), 0);
    SAYS("lr 0.0001 (groot's fine-tuning default");
    assert_true(fabs(saved_lr(tuned) - 1e-4) < 1e-12);
    EXPECT(train(given, "--steps=2 --batch_size=4 --optimizer.lr=5e-4"), 0);
    SAYS("lr 0.0005 (--optimizer.lr)");
    assert_true(fabs(saved_lr(given) - 5e-4) < 1e-12);
}

/* ---- 5. the info line names device and precision ----------------------------------------------- */

static void test_info_line_device_precision(void **state) {
    (void)state;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env -u VLA_DEVICE OMP_NUM_THREADS=1 %s train --dataset.root=%s " COMMON
             " --output_dir=%s --steps=1 --batch_size=4 --quiet 2>&1", test_cli_path(), data, tmp("info_default"));
    EXPECT(test_run(cmd, out, sizeof out), 0);
    if (!strstr(out, "device cpu (default: ") && !strstr(out, "device cuda (default: a usable GPU)"))
        fail_msg("no default device in:\n%s", out);
    SAYS("precision fp32");
    snprintf(cmd, sizeof cmd, "VLA_DEVICE=checked OMP_NUM_THREADS=1 %s train --dataset.root=%s " COMMON
             " --output_dir=%s --steps=1 --batch_size=4 --quiet 2>&1", test_cli_path(), data, tmp("info_env"));
    EXPECT(test_run(cmd, out, sizeof out), 0);
    SAYS("device checked (default: $VLA_DEVICE)");
    assert_null(strstr(out, "gradient checkpointing"));
    EXPECT(train(tmp("info_bf16"), "--steps=1 --batch_size=4 --quiet --precision=bf16 --device=cpu "
                                   "--gradient_checkpointing"), 0);
    SAYS("precision bf16, gradient checkpointing");
    /* bf16 emulated on a CPU without bf16 GEMMs: said so, per `vla version` */
    char ver[8192];
    snprintf(cmd, sizeof cmd, "%s version --json", test_cli_path());
    assert_int_equal(test_run(cmd, ver, sizeof ver), 0);
    if (strstr(ver, "\"bf16_gemm\":\"emulated\"")) SAYS("is emulated on this CPU");
    else assert_null(strstr(out, "is emulated on this CPU"));
    EXPECT(train(tmp("info_fp8"), "--steps=1 --batch_size=4 --quiet --precision=fp8 --device=cpu"), 0);
    SAYS("device cpu (--device)");
    SAYS("--precision=fp8 is emulated on this CPU");
}

/* ---- 6. the end: a summary for people, JSON only with --json ------------------------------------ */

static void test_summary_and_json(void **state) {
    (void)state;
    const char *r = tmp("summary");
    EXPECT(train(r, "--steps=4 --batch_size=4 --quiet"), 0);
    SAYS("vla train: done: 4 steps");
    char want[2400];
    snprintf(want, sizeof want, "checkpoint  %s/checkpoints/000004", r);
    SAYS(want);
    snprintf(want, sizeof want, "%s/loss.png, %s/lr.png", r, r);
    SAYS(want);
    snprintf(want, sizeof want, "%s/metrics.jsonl, %s/metrics.csv", r, r);
    SAYS(want);
    snprintf(want, sizeof want, "vla train --output_dir=%s --resume=true --steps=N", r);
    SAYS(want);
    for (char *l = out; l; l = strchr(l, '\n'))
        if (*(l += (*l == '\n')) == '{') fail_msg("a JSON line without --json:\n%s", out);
    /* --json: one parseable line on stdout only */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s train --output_dir=%s --resume=true --steps=6 --quiet --json "
             "2>/dev/null", test_cli_path(), r);
    EXPECT(test_run(cmd, out, sizeof out), 0);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j) fail_msg("stdout is not one JSON object (%s): %s", err.text, out);
    assert_int_equal(json_integer_value(json_object_get(j, "steps")), 6);
    assert_non_null(strstr(json_string_value(json_object_get(j, "checkpoint")), "checkpoints/000006"));
    json_decref(j);
    /* the layout is in --help */
    EXPECT(vla("train --help"), 0);
    SAYS("eval_model/");
    SAYS("eval/step_<N>/");
    SAYS("train_config.json");
}

/* ---- 7. eval plots show their line ------------------------------------------------------------- */

/* Pixels of the series colour (tab10 blue), and the lowest row holding one. */
static int blue_pixels(const char *png, int *lowest, int *h_out) {
    uint8_t *rgb;
    int w, h;
    assert_int_equal(vla_image_read_png(png, &rgb, &w, &h), VLA_OK);
    int n = 0;
    *lowest = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            if (abs(p[0] - 0x1f) < 12 && abs(p[1] - 0x77) < 12 && abs(p[2] - 0xb4) < 12) n++, *lowest = y;
        }
    free(rgb);
    *h_out = h;
    return n;
}

/* The frame's bottom line: the lowest row dark over half the width. */
static int frame_bottom(const char *png) {
    uint8_t *rgb;
    int w, h, bottom = -1;
    assert_int_equal(vla_image_read_png(png, &rgb, &w, &h), VLA_OK);
    for (int y = h - 1; y >= 0 && bottom < 0; y--) {
        int dark = 0;
        for (int x = 0; x < w; x++) dark += rgb[((size_t)y * w + x) * 3] < 100;
        if (dark > w / 2) bottom = y;
    }
    free(rgb);
    return bottom;
}

static void test_eval_plots_visible(void **state) {
    (void)state;
    const char *r = tmp("plots");
    EXPECT(train(r, "--steps=20 --batch_size=4 --log_freq=5 --eval_freq=10 --env.type=pusht --eval.n_episodes=1 "
                    "--quiet"),
           0);
    SAYS("eval_success.png");
    SAYS("eval_coverage.png");
    const char *files[] = {"eval_success.png", "eval_coverage.png"};
    for (int i = 0; i < 2; i++) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", r, files[i]);
        int lowest, h, bottom = frame_bottom(p);
        int n = blue_pixels(p, &lowest, &h);
        /* two evals: two dots and the line between them, every pixel of them above the frame (a success of 0
         * sat on the axis before) */
        if (n < 60) fail_msg("%s: %d pixels of the series colour", files[i], n);
        if (!(bottom > 0 && lowest < bottom - 2)) fail_msg("%s: the series reaches row %d, the frame's bottom is %d",
                                                           files[i], lowest, bottom);
    }
    char d[2048];
    snprintf(d, sizeof d, "%s/eval/step_000010/eval_info.json", r);
    struct stat st;
    assert_int_equal(stat(d, &st), 0);
}

/* ---- 8. --profile: where a step's time goes, and the same numbers ------------------------------ */

static void test_profile(void **state) {
    (void)state;
    const char *plain = tmp("unprofiled"), *prof = tmp("profiled");
#define PROF_FLAGS "--steps=6 --batch_size=4 --save_freq=1000 --log_freq=1 --seed=7 --quiet"
    EXPECT(train(plain, PROF_FLAGS), 0);
    EXPECT(train(prof, PROF_FLAGS " --profile=3"), 0);
    SAYS("vla train: steps 3 to 5 profiled");
    SAYS("where the time goes, per step");
    SAYS("adamw_multi");
    /* profiling forwards every op unchanged: the same losses and weights */
    char *a = test_losses_text(plain), *b = test_losses_text(prof);
    assert_string_equal(a, b);
    free(a), free(b);
    same_bytes(plain, prof, "checkpoints/last/pretrained_model/model.safetensors");
    char path[2100];
    snprintf(path, sizeof path, "%s/profile.json", prof);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s", path, err.text);
    assert_int_equal(json_integer_value(json_object_get(j, "first_step")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "steps")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "batch_size")), 4);
    /* one optimizer update and one loss per step (one rank, no accumulation) */
    json_t *ops = json_object_get(j, "ops");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        const char *name = json_string_value(json_object_get(o, "op"));
        double calls = json_real_value(json_object_get(o, "calls"));
        if (!strcmp(name, "adamw_multi") || !strcmp(name, "masked_mse_acc")) {
            if (calls != 1.0) fail_msg("%s: %g calls per step, want 1", name, calls);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    /* the step's phases, each with its ops (train/step.c) */
    json_t *phases = json_object_get(j, "phases");
    const char *want[] = {"zero_grad", "forward", "backward", "update"};
    for (int w = 0; w < 4; w++) {
        bool found = false;
        for (size_t i = 0; i < json_array_size(phases); i++) {
            json_t *ph = json_array_get(phases, i);
            if (strcmp(json_string_value(json_object_get(ph, "phase")), want[w])) continue;
            found = json_real_value(json_object_get(ph, "calls")) > 0;
        }
        if (!found) fail_msg("profile.json: no ops in phase %s", want[w]);
    }
    assert_true(json_real_value(json_object_get(j, "op_ms_per")) > 0);
    json_decref(j);
    /* a run without --profile writes none */
    snprintf(path, sizeof path, "%s/profile.json", plain);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    EXPECT(train(tmp("profile_bad"), "--steps=2 --profile=-1"), 2);
    SAYS("--profile");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigint_checkpoints_and_resumes_bit_exact),
        cmocka_unit_test(test_second_signal_and_resume_without_checkpoint),
        cmocka_unit_test(test_resume_more_steps_trains),
        cmocka_unit_test(test_default_lr),
        cmocka_unit_test(test_info_line_device_precision),
        cmocka_unit_test(test_summary_and_json),
        cmocka_unit_test(test_eval_plots_visible),
        cmocka_unit_test(test_profile),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, NULL);
    test_release_font_caches();
    return rc;
}
