/* test_train_mpi.c — `vla train` under `mpirun -np 2` (the real trainer, CLI
 * and all, on a Reach dataset recorded here; 1 thread per rank):
 *   - equivalence: 2 ranks at batch 4 give the losses, gradient norms and
 *     final weights of 1 rank at batch 8 (and of 1 rank at batch 4 with 2
 *     accumulation steps), to fp32 reduction-order tolerance — pi05-nano
 *     and groot-nano (both normalise the loss by the real action entries of
 *     the whole global batch);
 *   - a mixture (this Reach set and the SO-101 fixture, weighted) packed by a
 *     token budget: 2 ranks at batch 4 equal 1 rank at batch 8 too, each
 *     rank with its own micro-batch count;
 *   - ZeRO-1: each of 2 ranks holds half the optimizer state of 1 rank;
 *   - overlap: with small buckets, all-reduces start during backward;
 *   - elastic resume: a checkpoint of 2 ranks resumes on 1 and one of 1 on 2
 *     with the same global batch and continue the uninterrupted run;
 *   - faults: every rank of a job killed after a checkpoint is restarted by
 *     scripts/train_restarts.sh and the job ends with the losses of an
 *     uninterrupted run, bit for bit (same ranks, same threads);
 *   - FP8: both ranks hold identical scaling state (checked by the trainer at
 *     every checkpoint; a rank made to diverge stops the job), equal to one
 *     rank's at the global batch up to reduction order.
 * The uninterrupted reference runs are shared between the tests. Leak
 * checking is off in the child processes under ASan: OpenMPI and fontconfig
 * (cairo's text in the plots) keep allocations past exit that are not ours. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "io/safetensors.h"

static char launcher[1024];

static const char *dataset(void) {
    static char root[1024];
    if (!root[0]) {
        snprintf(root, sizeof root, "%s", test_tmp_path("reach_mpi_ds"));
        if (!vla_is_dir(root)) test_record_reach(root, 24, 0, -1);
    }
    return root;
}

/* Run `vla train` on `root` (a dataset or a comma-separated mixture) on np
 * ranks (0: a plain process) with the common flags plus `extra`; returns the
 * exit status, rank 0's stdout in out. */
static int train_on(const char *root, int np, const char *policy, const char *outdir, const char *extra, char *out,
                    size_t cap) {
    char cmd[8192], common[4096], type[16];
    snprintf(type, sizeof type, "%.*s", (int)strcspn(policy, "-"), policy);
    snprintf(common, sizeof common,
             "train --dataset.root=%s --policy.type=%s --policy.config=%s --dataset.image_keys= --steps=8 "
             "--seed=11 --optimizer.lr=3e-3 --log_freq=1 --save_freq=4 --num_workers=1 --quiet=true "
             "--dist.threads_per_rank=1 --json --output_dir=%s %s",
             root, type, policy, outdir, extra);
    if (np == 0)
        snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 %s %s 2>&1", test_cli_path(), common);
    else
        snprintf(cmd, sizeof cmd, "%s -np %d %s %s 2>&1", launcher, np, test_cli_path(), common);
    int rc = test_run(cmd, out, cap);
    if (rc != 0) fprintf(stderr, "exit %d: %s\n%s\n", rc, cmd, out);
    return rc;
}

static int train(int np, const char *policy, const char *outdir, const char *extra, char *out, size_t cap) {
    return train_on(dataset(), np, policy, outdir, extra, out, cap);
}

/* column `col` of metrics.jsonl, per step (index step−1); returns the rows read */
static int metric(const char *outdir, const char *col, double *v, int cap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", outdir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        int step = (int)json_integer_value(json_object_get(j, "step"));
        if (step >= 1 && step <= cap) {
            v[step - 1] = json_number_value(json_object_get(j, col));
            n++;
        }
        json_decref(j);
    }
    fclose(f);
    return n;
}

/* A key projection's bias adds the same q·b to every score of a query, which
 * softmax cancels: its gradient is zero in exact arithmetic and only rounding
 * noise (whose sign depends on the summation order) is left, which Adam turns
 * into full-size steps of ±lr. Comparing it across reduction orders measures
 * that noise, nothing else (it was 99.9% of the difference, with OpenBLAS's
 * Haswell kernels in the ASan build). */
static bool gradient_is_zero_in_exact_arithmetic(const char *name) {
    return strstr(name, "to_k.bias") || strstr(name, "k_proj.bias");
}

/* ‖a − b‖ / ‖b‖ over the parameters of two model.safetensors, less those
 * above. (A per-tensor maximum is no measure: a small tensor's rounding
 * differences are large relative to itself.) */
static double weights_diff(const char *run_a, const char *run_b, const char *step) {
    char pa[2048], pb[2048];
    snprintf(pa, sizeof pa, "%s/checkpoints/%s/pretrained_model/model.safetensors", run_a, step);
    snprintf(pb, sizeof pb, "%s/checkpoints/%s/pretrained_model/model.safetensors", run_b, step);
    vla_safetensors a, b;
    assert_int_equal(vla_safetensors_open(pa, &a), VLA_OK);
    assert_int_equal(vla_safetensors_open(pb, &b), VLA_OK);
    assert_int_equal(a.n_tensors, b.n_tensors);
    double dd = 0, bb = 0;
    for (size_t i = 0; i < (size_t)a.n_tensors; i++) {
        const vla_safetensors_tensor *ta = &a.tensors[i], *tb;
        assert_int_equal(vla_safetensors_get(&b, ta->name, &tb), VLA_OK);
        assert_int_equal(ta->numel, tb->numel);
        if (gradient_is_zero_in_exact_arithmetic(ta->name)) continue;
        const float *x = ta->data, *y = tb->data;
        for (int64_t k = 0; k < ta->numel; k++) {
            dd += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
            bb += (double)y[k] * y[k];
        }
    }
    vla_safetensors_close(&a), vla_safetensors_close(&b);
    return sqrt(dd) / sqrt(bb);
}

static double json_num(const char *out, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(out, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static void compare_runs(const char *a, const char *b, int from, int to, double tol_loss, double tol_w,
                         const char *what) {
    double la[8], lb[8], ga[8], gb[8];
    assert_int_equal(metric(a, "loss", la, 8), 8);
    assert_true(metric(b, "loss", lb, 8) >= to - from + 1);
    metric(a, "grad_norm", ga, 8);
    metric(b, "grad_norm", gb, 8);
    double wl = 0, wg = 0;
    for (int s = from - 1; s < to; s++) {
        wl = fmax(wl, fabs(la[s] - lb[s]) / fabs(la[s]));
        wg = fmax(wg, fabs(ga[s] - gb[s]) / fabs(ga[s]));
    }
    double ww = weights_diff(a, b, "000008");
    printf("%s: worst relative difference: loss %.2e, grad norm %.2e, weights %.2e\n", what, wl, wg, ww);
    assert_true(wl < tol_loss);
    assert_true(wg < tol_loss);
    assert_true(ww < tol_w);
}

static char out1[1 << 16], out2[1 << 16];

static void equivalence(const char *policy) {
    char a[1024], b[1100], c[1100];
    snprintf(a, sizeof a, "%s", test_tmp_path(policy));
    snprintf(b, sizeof b, "%s-np2", a);
    snprintf(c, sizeof c, "%s-accum", a);
    test_rmrf(a), test_rmrf(b), test_rmrf(c);
    assert_int_equal(train(0, policy, a, "--batch_size=8", out1, sizeof out1), 0);
    assert_int_equal(train(2, policy, b, "--batch_size=4", out2, sizeof out2), 0);
    compare_runs(a, b, 1, 8, 1e-5, 1e-6, "1 rank x 8 vs 2 ranks x 4");
    /* ZeRO-1: each rank holds half the moments */
    double s1 = json_num(out1, "optimizer_state_bytes_per_rank"), s2 = json_num(out2, "optimizer_state_bytes_per_rank");
    printf("optimizer state per rank: %.0f B at 1 rank, %.0f B at 2\n", s1, s2);
    assert_true(s1 > 0 && fabs(s2 - s1 / 2) <= 8);
    assert_int_equal(train(0, policy, c, "--batch_size=4 --gradient_accumulation_steps=2", out1, sizeof out1), 0);
    compare_runs(a, c, 1, 8, 1e-5, 1e-6, "1 rank x 8 vs 1 rank x 4 x 2 accumulation");
}

static void test_equivalence_pi05(void **state) {
    (void)state;
    equivalence("pi05-nano");
}

static void test_equivalence_groot(void **state) {
    (void)state;
    equivalence("groot-nano");
}

static void test_mixture_token_budget(void **state) {
    (void)state;
    char roots[3000], a[1024], b[1100];
    snprintf(roots, sizeof roots, "%s,%s", dataset(), test_source_path("tests/fixtures/lerobot/so101-record-test-v3.0"));
    snprintf(a, sizeof a, "%s", test_tmp_path("mix_budget_np1"));
    snprintf(b, sizeof b, "%s", test_tmp_path("mix_budget_np2"));
    test_rmrf(a), test_rmrf(b);
    const char *flags = "--dataset.weights=1,1 --token_budget=100";
    char extra[256];
    snprintf(extra, sizeof extra, "--batch_size=8 %s", flags);
    assert_int_equal(train_on(roots, 0, "groot-nano", a, extra, out1, sizeof out1), 0);
    snprintf(extra, sizeof extra, "--batch_size=4 %s", flags);
    assert_int_equal(train_on(roots, 2, "groot-nano", b, extra, out2, sizeof out2), 0);
    assert_true(json_num(out1, "micro_batches_per_step") > 1);
    compare_runs(a, b, 1, 8, 1e-5, 1e-6, "mixture, token budget: 1 rank x 8 vs 2 ranks x 4");
}

static void test_buckets_overlap_backward(void **state) {
    (void)state;
    const char *d = test_tmp_path("pi05-buckets");
    test_rmrf(d);
    assert_int_equal(train(2, "pi05-nano", d, "--batch_size=4 --dist.bucket_mb=0.02", out1, sizeof out1), 0);
    double nb = json_num(out1, "buckets"), started = json_num(out1, "buckets_started_in_backward");
    printf("%.0f buckets, %.0f started during backward (last step)\n", nb, started);
    assert_true(nb >= 4);
    assert_true(started >= 1 && started <= nb);
    /* small buckets change nothing but the timing */
    compare_runs(test_tmp_path("pi05-nano-np2"), d, 1, 8, 1e-5, 1e-6, "25 MiB vs 0.02 MiB buckets");
}

/* a run of `first` ranks stopped after its step-4 checkpoint, resumed on `then` ranks */
static void elastic(int first, int then) {
    char d[1024], extra[256];
    snprintf(d, sizeof d, "%s-%dto%d", test_tmp_path("pi05-elastic"), first, then);
    test_rmrf(d);
    snprintf(extra, sizeof extra, "--batch_size=%d --stop_after=6", 8 / (first ? first : 1));
    assert_int_equal(train(first > 1 ? first : 0, "pi05-nano", d, extra, out1, sizeof out1), 0);
    snprintf(extra, sizeof extra, "--batch_size=%d --resume=true", 8 / (then ? then : 1));
    assert_int_equal(train(then > 1 ? then : 0, "pi05-nano", d, extra, out2, sizeof out2), 0);
    assert_true(json_num(out2, "start_step") == 4);
    char what[64];
    snprintf(what, sizeof what, "elastic %d -> %d ranks", first, then);
    compare_runs(test_tmp_path("pi05-nano"), d, 5, 8, 1e-5, 1e-6, what);
}

static void test_elastic_2_to_1(void **state) {
    (void)state;
    elastic(2, 1);
}

static void test_elastic_1_to_2(void **state) {
    (void)state;
    elastic(1, 2);
}

static void test_restart_after_kill(void **state) {
    (void)state;
    const char *d = test_tmp_path("pi05-restart");
    test_rmrf(d);
    /* both ranks SIGKILL themselves after step 6 (the checkpoint of step 4 is complete) */
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s 2 -- %s -np 2 %s train --dataset.root=%s --policy.type=pi05 --policy.config=pi05-nano "
             "--dataset.image_keys= --steps=8 --seed=11 --optimizer.lr=3e-3 --log_freq=1 --save_freq=4 "
             "--num_workers=1 --quiet=true --dist.threads_per_rank=1 --batch_size=4 --crash_at_step=6 --json "
             "--output_dir=%s 2>&1",
             test_source_path("scripts/train_restarts.sh"), launcher, test_cli_path(), dataset(), d);
    int rc = test_run(cmd, out1, sizeof out1);
    if (rc != 0) fprintf(stderr, "%s\n", out1);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out1, "restart 1 of 2"));
    assert_true(json_num(out1, "start_step") == 4);
    /* same ranks, same threads: the restarted job prints the uninterrupted job's losses exactly */
    double la[8], lb[8];
    assert_int_equal(metric(test_tmp_path("pi05-nano-np2"), "loss", la, 8), 8);
    assert_int_equal(metric(d, "loss", lb, 8), 8);
    for (int s = 0; s < 8; s++) assert_true(la[s] == lb[s]);
    assert_true(weights_diff(test_tmp_path("pi05-nano-np2"), d, "000008") == 0);
}

/* FP8 on 2 ranks: each step's amaxes are all-reduced (MAX) before the scale
 * update, so both ranks hold the same scaling state — the trainer compares
 * every rank's bytes with rank 0's at each checkpoint and refuses to write
 * one otherwise (here twice per run) — and that state is the one rank at the
 * global batch computes (its amaxes are the max over the whole batch), up to
 * the reduction-order differences of the weights. A rank whose amaxes are
 * altered after the all-reduce (the testing flag) stops the job. */
static void test_fp8_two_ranks(void **state) {
    (void)state;
    char a[1024], b[1100], c[1100];
    snprintf(a, sizeof a, "%s", test_tmp_path("pi05-fp8"));
    snprintf(b, sizeof b, "%s-np2", a);
    snprintf(c, sizeof c, "%s-poison", a);
    test_rmrf(a), test_rmrf(b), test_rmrf(c);
    const char *fp8 = "--precision=fp8 --fp8.amax_history_len=4";
    char extra[256];
    snprintf(extra, sizeof extra, "--batch_size=8 %s", fp8);
    assert_int_equal(train(0, "pi05-nano", a, extra, out1, sizeof out1), 0);
    snprintf(extra, sizeof extra, "--batch_size=4 %s", fp8);
    assert_int_equal(train(2, "pi05-nano", b, extra, out2, sizeof out2), 0);
    assert_non_null(strstr(out2, "\"precision\":\"fp8\""));
    compare_runs(a, b, 1, 8, 1e-4, 1e-4, "fp8: 1 rank x 8 vs 2 ranks x 4"); /* a scale 1e-7 away may flip an FP8 rounding */
    /* the scales of the two runs */
    char pa[2048], pb[2048];
    snprintf(pa, sizeof pa, "%s/checkpoints/000008/training_state/fp8_scaling.safetensors", a);
    snprintf(pb, sizeof pb, "%s/checkpoints/000008/training_state/fp8_scaling.safetensors", b);
    vla_safetensors fa, fb;
    assert_int_equal(vla_safetensors_open(pa, &fa), VLA_OK);
    assert_int_equal(vla_safetensors_open(pb, &fb), VLA_OK);
    double worst = 0;
    int n_scales = 0;
    for (size_t i = 0; i < fa.n_tensors; i++) {
        const vla_safetensors_tensor *ta = &fa.tensors[i], *tb;
        if (!strstr(ta->name, ".fp8_scale")) continue;
        assert_int_equal(vla_safetensors_get(&fb, ta->name, &tb), VLA_OK);
        float x[3], y[3];
        memcpy(x, ta->data, sizeof x), memcpy(y, tb->data, sizeof y);
        for (int r = 0; r < 3; r++) worst = fmax(worst, fabs((double)x[r] - y[r]) / y[r]), n_scales++;
    }
    vla_safetensors_close(&fa), vla_safetensors_close(&fb);
    printf("fp8: %d scales, worst relative difference 1 rank vs 2 ranks %.2e\n", n_scales, worst);
    assert_true(n_scales >= 90);
    assert_true(worst < 1e-4);
    /* a rank that leaves the others' scales: no checkpoint, the job stops and says why */
    snprintf(extra, sizeof extra, "--batch_size=4 %s --poison_fp8_amax_at_step=3", fp8);
    int rc = train(2, "pi05-nano", c, extra, out2, sizeof out2);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out2, "scaling state diverged"));
    vla_safetensors probe;
    snprintf(pa, sizeof pa, "%s/checkpoints/000004/training_state/fp8_scaling.safetensors", c);
    assert_int_not_equal(vla_safetensors_open(pa, &probe), VLA_OK);
}

int main(void) {
    if (system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("mpirun not found: skipping the multi-process trainer tests\n");
        return 0;
    }
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMP_NUM_THREADS", "1", 1);
    snprintf(launcher, sizeof launcher,
             "env ASAN_OPTIONS=detect_leaks=0 mpirun --oversubscribe --allow-run-as-root --bind-to none "
             "--mca btl self,vader,tcp -x ASAN_OPTIONS -x OMP_NUM_THREADS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equivalence_pi05),   cmocka_unit_test(test_equivalence_groot),
        cmocka_unit_test(test_mixture_token_budget),
        cmocka_unit_test(test_buckets_overlap_backward), cmocka_unit_test(test_elastic_2_to_1),
        cmocka_unit_test(test_elastic_1_to_2),     cmocka_unit_test(test_restart_after_kill),
        cmocka_unit_test(test_fp8_two_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
