/* test_cli_ux.c — the tool as a user meets it (issue 34), one test per
 * point, each on the built `vla` binary with a small PushT dataset recorded
 * here: run directories that never mix, resume from the saved flags alone,
 * checkpoints that evaluate as they were trained, `dataset stats` agreeing
 * with the writer, errors that say what to do, JSON without NaN, and plots
 * with ticks a person can read. The references are independent of the code
 * under test: an uninterrupted run for a resumed one, jansson's strict
 * parser for JSON, LeRobot's sampling formula written out here, and the
 * pixels of the PNGs. */
#include "cli/cli_test.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image.h"

static char data[2000]; /* the PushT dataset every test reads */


/* The last line of out that parses as a JSON object (jansson rejects NaN and Infinity). */
static json_t *last_json(void) {
    json_t *found = NULL;
    char *copy = strdup(out);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '{') continue;
        json_error_t err;
        json_t *v = json_loads(line, 0, &err);
        if (!v) fail_msg("a JSON line does not parse (%s): %s", err.text, line);
        json_decref(found);
        found = v;
    }
    free(copy);
    if (!found) fail_msg("no JSON line in:\n%s", out);
    return found;
}

static const char *tmp(const char *name) { return test_tmp_path(name); }

/* A small groot-nano run on the dataset (extra flags appended). */
static int train(const char *dir, const char *extra) {
    return vla("train --dataset.root=%s --policy.config=groot-nano --batch_size=4 --num_workers=1 --quiet "
               "--dataset.state_keys=observation.state,observation.environment_state --dataset.image_keys= "
               "--output_dir=%s %s",
               data, dir, extra);
}

static int group_setup(void **state) {
    (void)state;
    snprintf(data, sizeof data, "%s", test_tmp_path("pusht2"));
    char args[2200];
    snprintf(args, sizeof args, "sim record --env=pusht --episodes=2 --seed=0 --out=%s", data);
    if (vla_in(NULL, args) != 0) {
        fprintf(stderr, "recording the dataset failed:\n%s\n", out);
        return 1;
    }
    return 0;
}

/* ---- 1. run directories ------------------------------------------------------- */

static int count_entries(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", dir);
    char buf[64];
    test_run(cmd, buf, sizeof buf);
    return atoi(buf);
}

static void test_run_dirs_never_mix(void **state) {
    (void)state;
    const char *r = tmp("run_dirs");
    char ck[2048];
    EXPECT(train(r, "--steps=10 --save_freq=2"), 0);
    /* a second run into it: refused, saying what to do; the first run untouched */
    EXPECT(train(r, "--steps=4"), 2);
    SAYS("already holds files of another run");
    SAYS("--resume=true");
    SAYS("--overwrite=true");
    snprintf(ck, sizeof ck, "%s/checkpoints", r);
    assert_int_equal(count_entries(ck), 6); /* 000002 … 000010 and last */
    /* --overwrite: the old run moved aside whole, the new one alone in the directory */
    EXPECT(train(r, "--steps=4 --save_freq=2 --overwrite=true"), 0);
    assert_int_equal(count_entries(ck), 3); /* 000002, 000004, last */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ls -d '%s'.old-*/checkpoints/000010", r);
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    /* the default directory: new per run, outputs/train/<date>/<time>_<job_name> */
    const char *cwd = tmp("defaults");
    mkdir(cwd, 0755);
    char args[4200];
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "train --dataset.root=%s --policy.config=groot-nano --batch_size=4 --steps=2 "
                 "--quiet --dataset.image_keys= --job_name=mine", data);
        EXPECT(vla_in(cwd, args), 0);
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && ls -d outputs/train/*-*-*/*_mine* | wc -l", cwd);
    test_run(cmd, out, sizeof out);
    assert_int_equal(atoi(out), 2);
    /* --job_name with --output_dir would be ignored: an error */
    EXPECT(train(tmp("run_dirs2"), "--steps=2 --job_name=x"), 2);
    SAYS("--job_name would be ignored");
}

/* ---- 2. resume from the saved flags --------------------------------------------- */

static void test_resume_from_saved_flags(void **state) {
    (void)state;
    const char *full = tmp("res_full"), *cut = tmp("res_cut");
    const char *flags = "--steps=12 --save_freq=4 --log_freq=1 --seed=7 --optimizer.lr=3e-3 --ema_decay=0.9";
    EXPECT(train(full, flags), 0);
    char f2[1024];
    snprintf(f2, sizeof f2, "%s --stop_after=6", flags); /* killed after step 6: the last checkpoint is 4 */
    EXPECT(train(cut, f2), 0);
    /* nothing but the directory: the dataset, policy, optimizer, seed and steps come from the checkpoint */
    EXPECT(vla("train --output_dir=%s --resume=true --quiet", cut), 0);
    char *a = test_losses_text(full), *b = test_losses_text(cut);
    assert_string_equal(a, b); /* the uninterrupted run's losses, bit for bit */
    free(a), free(b);
    /* a changed flag that the run must reproduce: refused, naming it and both values */
    EXPECT(vla("train --output_dir=%s --resume=true --steps=14 --optimizer.lr=1e-3", cut), 2);
    SAYS("--optimizer.lr=0.001");
    SAYS("0.003");
    SAYS("--resume.allow_changes=true");
    /* what the weights are never changes on a resume */
    EXPECT(vla("train --output_dir=%s --resume=true --steps=14 --dataset.n_obs_steps=2", cut), 2);
    SAYS("--policy.pretrained_path=");
    /* allowed: the change is recorded in the metrics at the step the session starts */
    EXPECT(vla("train --output_dir=%s --resume=true --steps=14 --optimizer.lr=1e-3 --resume.allow_changes=true --quiet",
               cut), 0);
    char p[2048];
    snprintf(p, sizeof p, "%s/metrics.jsonl", cut);
    size_t n;
    char *m = test_slurp(p, &n);
    char *line = strstr(m, "\"resume_changes\"");
    assert_non_null(line);
    while (line > m && line[-1] != '\n') line--;
    json_error_t err;
    json_t *ev = json_loadb(line, strcspn(line, "\n"), 0, &err);
    assert_non_null(ev);
    assert_int_equal(json_integer_value(json_object_get(ev, "step")), 12);
    json_t *lr = json_object_get(json_object_get(ev, "resume_changes"), "optimizer.lr");
    assert_true(fabs(json_number_value(json_object_get(lr, "from")) - 3e-3) < 1e-12);
    assert_true(fabs(json_number_value(json_object_get(lr, "to")) - 1e-3) < 1e-12);
    json_decref(ev);
    free(m);
    /* --steps no more than done: says so, exits 0, prints JSON without NaN */
    EXPECT(vla("train --output_dir=%s --resume=true --steps=5 --json", cut), 0);
    SAYS("nothing to do");
    json_t *j = last_json();
    assert_true(json_is_true(json_object_get(j, "nothing_to_do")));
    assert_int_equal(json_integer_value(json_object_get(j, "steps")), 14);
    json_decref(j);
    EXPECT(vla("train --output_dir=%s --resume=true", cut), 0); /* the saved 14 are done */
    SAYS("nothing to do");
    /* --resume without a directory to continue */
    EXPECT(vla("train --resume=true --dataset.root=%s", data), 2);
    SAYS("--output_dir=DIR");
}

/* ---- 3. checkpoints evaluate as they were trained ---------------------------------- */

static json_t *eval_info(const char *dir) {
    char p[2048];
    snprintf(p, sizeof p, "%s/eval_info.json", dir);
    json_error_t err;
    json_t *j = json_load_file(p, 0, &err);
    if (!j) fail_msg("%s: %s", p, err.text);
    return j;
}

static void test_checkpoint_evaluates_as_trained(void **state) {
    (void)state;
    const char *r = tmp("as_trained");
    EXPECT(train(r, "--steps=30 --dataset.n_obs_steps=2 --policy.n_action_steps=3 --ema_decay=0.9"), 0);
    char p[2048];
    snprintf(p, sizeof p, "%s/checkpoints/last/pretrained_model/config.json", r);
    json_error_t err;
    json_t *cfg = json_load_file(p, 0, &err);
    assert_non_null(cfg);
    assert_int_equal(json_integer_value(json_object_get(cfg, "n_action_steps")), 3);
    json_decref(cfg);
    /* no execution flag: the checkpoint's; the same episodes as with the flags spelled out */
    const char *e1 = tmp("as_trained_e1"), *e2 = tmp("as_trained_e2");
    EXPECT(vla("eval --policy.path=%s/checkpoints/last/pretrained_model --env.type=pusht --eval.n_episodes=3 "
               "--max_steps=60 --eval.n_videos=1 --output_dir=%s --json", r, e1), 0);
    json_t *j = last_json();
    assert_int_equal(json_integer_value(json_object_get(j, "n_action_steps")), 3);
    json_decref(j);
    EXPECT(vla("eval --policy.path=%s --env.type=pusht --eval.n_episodes=3 --max_steps=60 --eval.n_videos=0 "
               "--policy.n_action_steps=3 --output_dir=%s", r, e2), 0);
    json_t *a = eval_info(e1), *b = eval_info(e2);
    json_t *ca = json_object_get(a, "config");
    assert_int_equal(json_integer_value(json_object_get(ca, "n_action_steps")), 3);
    assert_int_equal(json_integer_value(json_object_get(ca, "n_obs_steps")), 2);
    assert_true(json_equal(json_object_get(a, "per_episode"), json_object_get(b, "per_episode")));
    /* LeRobot's name for the videos */
    json_t *vids = json_object_get(a, "video_paths");
    assert_int_equal(json_array_size(vids), 1);
    assert_true(strstr(json_string_value(json_array_get(vids, 0)), ".mp4") != NULL);
    json_decref(a), json_decref(b);
}

/* ---- 4. stats agree with their writer ---------------------------------------------- */

static void test_stats_agree_with_writer(void **state) {
    (void)state;
    EXPECT(vla("dataset stats --dataset.root=%s --json", data), 0);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j) fail_msg("not JSON (%s):\n%s", err.text, out);
    assert_true(json_is_true(json_object_get(j, "ok")));
    /* the image count is LeRobot's sampling, written out here from compute_stats.py:
     * per episode L frames: L < 100 → L, else max(100, min(int(L**0.75), 10000)) */
    EXPECT(vla("dataset info %s --json", data), 0);
    json_t *info = json_loads(out, 0, &err);
    assert_non_null(info);
    int64_t expect = 0, total = json_integer_value(json_object_get(info, "total_frames"));
    int64_t eps = json_integer_value(json_object_get(info, "episodes"));
    int64_t seen = 0;
    for (int64_t e = 0; e < eps; e++) {
        char args[4200];
        snprintf(args, sizeof args, "dataset info %s --dataset.episodes=%lld --json", data, (long long)e);
        EXPECT(vla_in(NULL, args), 0);
        json_t *one = json_loads(out, 0, &err);
        int64_t L = json_integer_value(json_object_get(one, "total_frames"));
        json_decref(one);
        seen += L;
        int64_t n = L < 100 ? L : (int64_t)pow((double)L, 0.75);
        if (L >= 100 && n < 100) n = 100;
        expect += n;
    }
    assert_int_equal(seen, total);
    json_t *img = json_object_get(json_object_get(j, "computed"), "observation.image");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(img, "count"), 0)), expect);
    json_decref(info);
    json_decref(j);
    /* the positional root and the LeRobot cache name read the same dataset */
    EXPECT(vla("dataset stats %s", data), 0);
    SAYS("stats agree");
}

/* ---- 5. errors that say what to do --------------------------------------------------- */

static void test_errors_say_what_to_do(void **state) {
    (void)state;
    const char *r = tmp("err_run");
    EXPECT(train(r, "--steps=2"), 0);
    /* every unknown name lists the valid ones */
    EXPECT(vla("train --dataset.root=%s --policy.type=diffusion", data), 2);
    SAYS("pi05, groot");
    EXPECT(vla("train --dataset.root=%s --policy.config=groot-big --output_dir=%s", data, tmp("e1")), 1);
    SAYS("groot-nano");
    SAYS("pi05-tiny");
    EXPECT(vla("eval --policy.path=%s --env.type=cartpole", r), 2);
    SAYS("pusht, reach");
    EXPECT(vla("dataset frame %s --index=0 --camera=wrist", data), 2);
    SAYS("observation.image");
    EXPECT(vla("train --dataset.root=%s --policy.config=groot-nano --dataset.image_keys=wrist --output_dir=%s", data,
               tmp("e2")), 1);
    SAYS("its cameras are: observation.image");
    /* an out-of-range flag is named with its value */
    EXPECT(vla("train --dataset.root=%s --steps=-5", data), 2);
    SAYS("--steps=-5");
    EXPECT(vla("train --dataset.root=%s --gradient_accumulation_steps=0", data), 2);
    SAYS("--gradient_accumulation_steps=0");
    /* a file that is not a checkpoint says so */
    FILE *f = fopen(tmp("notes.txt"), "w");
    fputs("hello\n", f);
    fclose(f);
    EXPECT(vla("train --dataset.root=%s --policy.pretrained_path=%s --policy.config=groot-nano --output_dir=%s", data,
               tmp("notes.txt"), tmp("e3")), 1);
    SAYS("is not a checkpoint");
    EXPECT(vla("eval --policy.path=%s", tmp("notes.txt")), 1);
    SAYS("is not a checkpoint");
    /* a checkpoint of another robot: refused naming both; an explicit flag forces it */
    EXPECT(vla("eval --policy.path=%s --env.type=reach --eval.n_episodes=1", r), 2);
    SAYS("robot 'pusht'");
    SAYS("env 'reach'");
    SAYS("--env.allow_mismatch=true");
    EXPECT(vla("eval --policy.path=%s --env.type=reach --eval.n_episodes=1 --env.allow_mismatch=true", r), 2);
    SAYS("do not fit this env"); /* its 18-D state has no counterpart in Reach: cannot run at all */
    /* "did you mean" only for close spellings; otherwise the flags of the group */
    EXPECT(vla("train --policy.device=cuda"), 2);
    assert_null(strstr(out, "did you mean"));
    SAYS("--policy.type");
    EXPECT(vla("eval --eval.batch_size=4"), 2);
    assert_null(strstr(out, "did you mean"));
    SAYS("--eval.n_episodes");
    EXPECT(vla("eval --eval.n_episode=4"), 2);
    SAYS("did you mean --eval.n_episodes?");
    /* a flag the command would ignore is an error */
    EXPECT(vla("plan --gbps 100 --params 1e9"), 2);
    SAYS("--gbps would be ignored");
    EXPECT(vla("train --dataset.root=%s --env.type=pusht", data), 2);
    SAYS("--env.type would be ignored");
    /* LeRobot's --dataset.repo_id: the cache, or how to download */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/me' && cp -r '%s' '%s/me/pusht'", tmp("hub"), data, tmp("hub"));
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "HF_LEROBOT_HOME='%s' %s dataset info --dataset.repo_id=me/pusht --json 2>&1", tmp("hub"),
             test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    SAYS("\"total_episodes\": 2");
    snprintf(cmd, sizeof cmd, "HF_LEROBOT_HOME='%s' %s train --dataset.repo_id=lerobot/pusht 2>&1", tmp("hub"),
             test_cli_path());
    assert_int_equal(test_run(cmd, out, sizeof out), 1);
    SAYS("huggingface-cli download --repo-type dataset lerobot/pusht");
    /* the dataset commands take --dataset.root as well as ROOT */
    EXPECT(vla("dataset validate --dataset.root=%s", data), 0);
    SAYS("clean");
}

/* ---- no NaN in any JSON ------------------------------------------------------------------ */

static void test_json_has_no_nan(void **state) {
    (void)state;
    /* a network so slow its times overflow: the JSON still parses, the overflowed numbers are null */
    EXPECT(vla("plan --gpus 16 --gbps 1e-300 --params 1e300 --json"), 0);
    json_t *j = last_json();
    assert_true(json_is_null(json_object_get(j, "step_ms")));
    assert_true(json_is_number(json_object_get(j, "gpus")));
    json_decref(j);
}

/* ---- 7. plots a person can read ---------------------------------------------------------- */

/* The plot frame: the leftmost column and the lowest row that are dark over most of the image. */
static void frame_of(const uint8_t *rgb, int w, int h, int *left, int *bottom, int *top) {
    *left = *bottom = *top = -1;
    for (int x = 0; x < w / 2 && *left < 0; x++) {
        int dark = 0;
        for (int y = 0; y < h; y++) dark += rgb[((size_t)y * w + x) * 3] < 100;
        if (dark > h / 2) *left = x;
    }
    for (int y = h - 1; y >= 0 && *bottom < 0; y--) {
        int dark = 0;
        for (int x = 0; x < w; x++) dark += rgb[((size_t)y * w + x) * 3] < 100;
        if (dark > w / 2) *bottom = y;
    }
    for (int y = 0; y < h && *top < 0; y++) {
        int dark = 0;
        for (int x = 0; x < w; x++) dark += rgb[((size_t)y * w + x) * 3] < 100;
        if (dark > w / 2) *top = y;
    }
}

/* Tick marks: runs of dark pixels along a column (y ticks) or a row (x ticks), positions from..to. */
static int ticks(const uint8_t *rgb, int w, int fixed, bool along_column, int from, int to, int *pos, int cap) {
    int n = 0, in = 0;
    for (int i = from; i <= to; i++) {
        const uint8_t *px = along_column ? rgb + ((size_t)i * w + fixed) * 3 : rgb + ((size_t)fixed * w + i) * 3;
        int dark = px[0] < 100;
        if (dark && !in && n < cap) pos[n++] = i;
        in = dark;
    }
    return n;
}

static void test_plots_readable(void **state) {
    (void)state;
    const char *r = tmp("plots");
    EXPECT(train(r, "--steps=40 --log_freq=5 --eval_freq=20 --env.type=pusht --eval.n_episodes=2"), 0);
    char p[2048];
    uint8_t *rgb;
    int w, h, left, bottom, top, pos[64];
    /* the loss (log scale): at least three labelled ticks on y, and on x */
    snprintf(p, sizeof p, "%s/loss.png", r);
    assert_int_equal(vla_image_read_png(p, &rgb, &w, &h), VLA_OK);
    frame_of(rgb, w, h, &left, &bottom, &top);
    assert_true(left > 0 && bottom > 0 && top >= 0);
    int ny = ticks(rgb, w, left - 3, true, top - 1, bottom + 1, pos, 64);
    int nx = ticks(rgb, w, bottom + 3, false, left - 1, w - 1, pos, 64);
    if (ny < 3 || nx < 3) fail_msg("loss.png: %d y ticks and %d x ticks; want at least 3 each", ny, nx);
    free(rgb);
    /* the success rate: the axis spans 0 to 1 — ticks 0, 0.2, …, 1 — with a margin inside the frame above 1 and
     * below 0, so a rate of exactly 0 or 1 is not hidden on the frame (issue 44) */
    snprintf(p, sizeof p, "%s/eval_success.png", r);
    assert_int_equal(vla_image_read_png(p, &rgb, &w, &h), VLA_OK);
    frame_of(rgb, w, h, &left, &bottom, &top);
    ny = ticks(rgb, w, left - 3, true, top - 1, bottom + 1, pos, 64);
    assert_int_equal(ny, 6);
    assert_true(pos[0] > top + 2 && pos[5] < bottom - 2);
    free(rgb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_dirs_never_mix),
        cmocka_unit_test(test_resume_from_saved_flags),
        cmocka_unit_test(test_checkpoint_evaluates_as_trained),
        cmocka_unit_test(test_stats_agree_with_writer),
        cmocka_unit_test(test_errors_say_what_to_do),
        cmocka_unit_test(test_json_has_no_nan),
        cmocka_unit_test(test_plots_readable),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
