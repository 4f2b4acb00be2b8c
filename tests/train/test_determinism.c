/* test_determinism.c — training results do not depend on the thread count.
 *
 * `vla train` (loader, packing, policy forward and backward, gradient
 * reduction, ZeRO-1 AdamW) run with 1, 2 and 3 OpenMP threads logs the same
 * losses and gradient norms and writes the same checkpoint weights, bit for
 * bit:
 *   - pi05-small and groot-small at batch 8: mid-size shapes whose GEMMs the
 *     op table cuts into tiles and threads under its default thresholds;
 *   - pi05-nano and groot-nano with every parallel loop given a team
 *     (vla_parallel_always), so every threaded code path runs at 1, 2 and 3
 *     threads.
 * It runs under whatever OpenBLAS kernel the environment selects
 * (the core type is the user's choice, never set by the build or the tests):
 * the property holds by construction for any kernel, because every GEMM
 * tile is one single-threaded BLAS call cut by shape alone (ops_cpu.c). */
#include "test_util.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "tensor/cpu/parallel.h"
#include "train/trainer.h"

static const char *dataset(void) {
    static char root[1024];
    if (!root[0]) {
        snprintf(root, sizeof root, "%s", test_tmp_path("reach_ds"));
        if (!vla_is_dir(root)) test_record_reach(root, 10, 0, -1);
    }
    return root;
}

/* "step", "loss" and "grad_norm" of every metrics.jsonl line, as text */
static char *trajectory(const char *out) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    size_t n;
    char *data = test_slurp(path, &n), *res = calloc(n + 1, 1), *save = NULL;
    size_t k = 0;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *keys[] = {"\"step\":", "\"loss\":", "\"grad_norm\":"};
        for (int i = 0; i < 3; i++) {
            const char *f = strstr(line, keys[i]);
            assert_non_null(f);
            k += (size_t)sprintf(res + k, "%.*s ", (int)strcspn(f, ",}"), f);
        }
        res[k++] = '\n';
    }
    free(data);
    return res;
}

/* Train `config` for 3 steps at `threads` OpenMP threads into a fresh directory. */
static const char *train(const char *type, const char *config, int threads, int batch) {
    static char out[1024];
    char name[128];
    snprintf(name, sizeof name, "%s_t%d", config, threads);
    snprintf(out, sizeof out, "%s", test_tmp_path(name));
    test_rmrf(out);
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.dataset_root = dataset();
    o.policy_type = type;
    o.policy_config = config;
    o.output_dir = out;
    o.batch_size = batch;
    o.steps = 3;
    o.seed = 11;
    o.num_workers = 2;
    o.lr = 1e-3;
    o.log_freq = 1;
    o.progress = false;
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    omp_set_num_threads(saved);
    if (st != VLA_OK) fail_msg("%s at %d threads: %s", config, threads, vla_error_message());
    return out;
}

/* The same run at each thread count in `threads`: equal trajectories and weights. */
static void check_config(const char *type, const char *config, const int *threads, int n, int batch) {
    char *traj0 = NULL, *w0 = NULL;
    size_t nw0 = 0;
    for (int i = 0; i < n; i++) {
        const char *out = train(type, config, threads[i], batch);
        char path[2048];
        snprintf(path, sizeof path, "%s/checkpoints/000003/pretrained_model/model.safetensors", out);
        size_t nw;
        char *traj = trajectory(out), *w = test_slurp(path, &nw);
        if (i == 0) {
            print_message("%s: %s", config, traj);
            traj0 = traj, w0 = w, nw0 = nw;
            continue;
        }
        if (strcmp(traj, traj0) != 0)
            fail_msg("%s: %d threads logged\n%s but %d threads\n%s", config, threads[i], traj, threads[0], traj0);
        assert_int_equal(nw, nw0);
        if (memcmp(w, w0, nw) != 0) fail_msg("%s: weights after 3 steps differ at %d threads", config, threads[i]);
        free(traj), free(w);
    }
    free(traj0), free(w0);
}

static void test_mid_size_default_thresholds(void **state) {
    (void)state;
    static const int threads[] = {1, 2, 3};
    check_config("pi05", "pi05-small", threads, 3, 8);
    check_config("groot", "groot-small", threads, 2, 8);
}

static void test_nano_every_loop_threaded(void **state) {
    (void)state;
    static const int threads[] = {1, 2, 3};
    vla_parallel_always = 1;
    check_config("pi05", "pi05-nano", threads, 3, 6);
    check_config("groot", "groot-nano", threads, 3, 6);
    vla_parallel_always = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nano_every_loop_threaded),
        cmocka_unit_test(test_mid_size_default_thresholds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches(); /* the trainer draws its plots with cairo */
    return rc;
}
