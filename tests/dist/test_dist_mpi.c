/* test_dist_mpi.c — the dist layer across real processes: this binary is
 * both the cmocka test and, with VLA_DIST_WORKER=1 in its environment, the
 * worker that `mpirun -np N` starts (the synthetic MLP of dist/synthetic.h).
 *
 * Checks: N ranks at per-rank batch B/N give the losses and parameters of one
 * rank at batch B (buckets and reduce-scatter modes, and against gradient
 * accumulation); elastic resume 1 → 2 and 2 → 1 continues the uninterrupted
 * run; an incomplete checkpoint is refused; bucket all-reduces start (and
 * finish) while backward is still running. Faults and the two-namespace run
 * are in test_dist_faults.c (kept apart so each binary stays under 10 s).
 *
 * mpirun runs as root only with OMPI_ALLOW_RUN_AS_ROOT{,_CONFIRM}=1 (set
 * here) and with --oversubscribe on this 2-core machine. Under ASan the
 * workers use tests/dist/lsan-mpi.supp for OpenMPI's own leaks at exit. */
#include "test_util.h"
#include "dist_test.h"
#include "dist/comm.h"
#include "dist/synthetic.h"

#include "base/timer.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char *common = "--dims 12,24,24,24,3 --samples 96 --seed 7 --lr 0.02 --wd 0.01 "
                            "--max-grad-norm 0.5 --bucket-bytes 1024 --json --threads 1";

/* Run the worker: np 0 means a plain process (no mpirun). Returns the exit
 * status; stdout (rank 0's JSON lines) goes to out. */
static int run_worker(int np, const char *args, char *out, size_t cap, double *elapsed) {
    char cmd[4096];
    if (np == 0)
        snprintf(cmd, sizeof cmd, "VLA_DIST_WORKER=1 %s %s %s", self_exe, common, args);
    else
        snprintf(cmd, sizeof cmd, "%s -np %d -x VLA_DIST_WORKER=1 %s %s %s", launcher, np, self_exe, common, args);
    double t0 = vla_now_s();
    int rc = test_run(cmd, out, cap);
    if (elapsed) *elapsed = vla_now_s() - t0;
    if (rc != 0 && !elapsed) fprintf(stderr, "command failed (%d): %s\noutput:\n%s\n", rc, cmd, out);
    return rc;
}

/* Losses of each "step" line, in order. */
static int parse_losses(const char *out, double *loss, int cap) {
    int n = 0;
    const char *p = out;
    while (*p && n < cap) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        json_t *j = json_loadb(p, len, 0, NULL);
        if (j && json_object_get(j, "loss")) loss[n++] = json_number_value(json_object_get(j, "loss"));
        json_decref(j);
        p = nl ? nl + 1 : p + len;
    }
    return n;
}

static json_t *done_line(const char *out) {
    const char *p = strstr(out, "{\"done\"");
    return p ? json_loads(p, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

static float *read_params(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *p = malloc((size_t)sz);
    *n = fread(p, sizeof(float), (size_t)sz / sizeof(float), f);
    fclose(f);
    return p;
}

/* max |a − b| / (|b| + 1e-3) over two parameter files */
static double params_diff(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    float *pa = read_params(a, &na), *pb = read_params(b, &nb);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_int_equal(na, nb);
    assert_true(na > 0);
    double worst = 0;
    for (size_t i = 0; i < na; i++) {
        double d = fabs((double)pa[i] - pb[i]) / (fabs(pb[i]) + 1e-3);
        if (d > worst) worst = d;
    }
    free(pa), free(pb);
    return worst;
}

static void assert_losses_close(const double *a, const double *b, int n, double tol) {
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-6);
        if (d > tol) fail_msg("step %d: loss %.9g vs %.9g (rel %.3g > %.3g)", i + 1, a[i], b[i], d, tol);
    }
}

#define OUT_CAP 65536
#define TOL 2e-4 /* fp32 reduction order, through 6 AdamW steps */

static void test_equivalence(void **state) {
    static char o1[OUT_CAP], o2[OUT_CAP], o3[OUT_CAP], o4[OUT_CAP];
    double l1[16], l2[16], l3[16], l4[16];
    char args[1024];
    snprintf(args, sizeof args, "--steps 6 --batch 8 --out-params %s", test_tmp_path("p1.bin"));
    assert_int_equal(run_worker(0, args, o1, OUT_CAP, NULL), 0);
    snprintf(args, sizeof args, "--steps 6 --batch 4 --out-params %s", test_tmp_path("p2.bin"));
    assert_int_equal(run_worker(2, args, o2, OUT_CAP, NULL), 0);
    snprintf(args, sizeof args, "--steps 6 --batch 4 --mode reduce-scatter --out-params %s", test_tmp_path("p3.bin"));
    assert_int_equal(run_worker(2, args, o3, OUT_CAP, NULL), 0);
    snprintf(args, sizeof args, "--steps 6 --batch 4 --accum 2 --out-params %s", test_tmp_path("p4.bin"));
    assert_int_equal(run_worker(0, args, o4, OUT_CAP, NULL), 0);
    assert_int_equal(parse_losses(o1, l1, 16), 6);
    assert_int_equal(parse_losses(o2, l2, 16), 6);
    assert_int_equal(parse_losses(o3, l3, 16), 6);
    assert_int_equal(parse_losses(o4, l4, 16), 6);
    assert_true(l1[5] < l1[0]); /* it learns */
    assert_losses_close(l2, l1, 6, TOL);
    assert_losses_close(l3, l1, 6, TOL);
    assert_losses_close(l4, l1, 6, TOL);
    double d2 = params_diff(test_tmp_path("p2.bin"), test_tmp_path("p1.bin"));
    double d3 = params_diff(test_tmp_path("p3.bin"), test_tmp_path("p1.bin"));
    double d4 = params_diff(test_tmp_path("p4.bin"), test_tmp_path("p1.bin"));
    printf("equivalence: max rel param diff 2 ranks %.3g, reduce-scatter %.3g, accum %.3g\n", d2, d3, d4);
    assert_true(d2 < TOL && d3 < TOL && d4 < TOL);
    /* ZeRO-1: each of 2 ranks holds half the optimizer state */
    json_t *j1 = done_line(o1), *j2 = done_line(o2);
    assert_non_null(j1);
    assert_non_null(j2);
    json_int_t s1 = json_integer_value(json_object_get(j1, "opt_state_bytes"));
    json_int_t s2 = json_integer_value(json_object_get(j2, "opt_state_bytes"));
    assert_true(s2 * 2 >= s1 - 8 && s2 * 2 <= s1 + 8);
    json_decref(j1), json_decref(j2);
}

static void test_elastic_resume(void **state) {
    static char ref[OUT_CAP], a[OUT_CAP], b[OUT_CAP], c[OUT_CAP], d[OUT_CAP];
    double lr[16], lb[16], ld[16];
    char args[2048];
    /* uninterrupted: 6 steps at global batch 8, 1 rank */
    snprintf(args, sizeof args, "--steps 6 --batch 8 --out-params %s", test_tmp_path("ref.bin"));
    assert_int_equal(run_worker(0, args, ref, OUT_CAP, NULL), 0);
    assert_int_equal(parse_losses(ref, lr, 16), 6);
    /* 1 → 2 */
    snprintf(args, sizeof args, "--steps 3 --batch 8 --save %s", test_tmp_path("ck1"));
    assert_int_equal(run_worker(0, args, a, OUT_CAP, NULL), 0);
    snprintf(args, sizeof args, "--steps 3 --batch 4 --resume %s --out-params %s", test_tmp_path("ck1"),
             test_tmp_path("r12.bin"));
    assert_int_equal(run_worker(2, args, b, OUT_CAP, NULL), 0);
    assert_int_equal(parse_losses(b, lb, 16), 3);
    assert_losses_close(lb, lr + 3, 3, TOL);
    /* 2 → 1 */
    snprintf(args, sizeof args, "--steps 3 --batch 4 --save %s", test_tmp_path("ck2"));
    assert_int_equal(run_worker(2, args, c, OUT_CAP, NULL), 0);
    assert_true(access(test_tmp_path("ck2/zero1-rank00001.safetensors"), F_OK) == 0);
    snprintf(args, sizeof args, "--steps 3 --batch 8 --resume %s --out-params %s", test_tmp_path("ck2"),
             test_tmp_path("r21.bin"));
    assert_int_equal(run_worker(0, args, d, OUT_CAP, NULL), 0);
    assert_int_equal(parse_losses(d, ld, 16), 3);
    assert_losses_close(ld, lr + 3, 3, TOL);
    double e12 = params_diff(test_tmp_path("r12.bin"), test_tmp_path("ref.bin"));
    double e21 = params_diff(test_tmp_path("r21.bin"), test_tmp_path("ref.bin"));
    printf("elastic: max rel param diff 1->2 %.3g, 2->1 %.3g\n", e12, e21);
    assert_true(e12 < TOL && e21 < TOL);

    /* a different global batch is refused with a message */
    snprintf(args, sizeof args, "--steps 1 --batch 2 --resume %s 2>&1", test_tmp_path("ck2"));
    assert_int_not_equal(run_worker(0, args, a, OUT_CAP, (double[1]){0}), 0);
    assert_non_null(strstr(a, "global batch"));
    /* an incomplete checkpoint (no manifest) is refused */
    char path[1100];
    snprintf(path, sizeof path, "%s", test_tmp_path("ck2/manifest.json"));
    assert_int_equal(unlink(path), 0);
    snprintf(args, sizeof args, "--steps 1 --batch 8 --resume %s 2>&1", test_tmp_path("ck2"));
    assert_int_not_equal(run_worker(0, args, a, OUT_CAP, (double[1]){0}), 0);
    assert_non_null(strstr(a, "incomplete"));
}

static void test_bucket_overlap(void **state) {
    static char out[OUT_CAP];
    /* 4 layers → several 1 KiB buckets; 15 ms of "compute" per layer in backward */
    assert_int_equal(run_worker(2, "--steps 3 --batch 4 --compute-ms 15", out, OUT_CAP, NULL), 0);
    json_t *j = done_line(out);
    assert_non_null(j);
    json_int_t nb = json_integer_value(json_object_get(j, "buckets"));
    json_int_t started = json_integer_value(json_object_get(j, "started_during_backward"));
    json_int_t completed = json_integer_value(json_object_get(j, "completed_during_backward"));
    printf("overlap: %lld buckets/step, over 3 steps %lld started and %lld finished before backward ended\n",
           (long long)nb, (long long)started, (long long)completed);
    assert_true(nb >= 3);
    assert_int_equal(started, 3 * nb);   /* every bucket launched from inside backward */
    /* and reductions finished under compute: the first step may be skewed by
     * process start-up, and this 2-core machine is shared, so ask for one
     * step's worth (all but the last bucket), not all three */
    assert_true(completed >= nb - 1);
    json_decref(j);
}

/* Worker for test_comm_collectives: every collective of comm.h on uneven
 * counts, checked against closed forms. Returns the number of mismatches. */
static int comm_selftest(void) {
    vla_comm *c;
    if (vla_comm_init(NULL, &c) != VLA_OK) return fprintf(stderr, "init: %s\n", vla_error_message()), 100;
    int r = vla_comm_rank(c), n = vla_comm_world(c), bad = 0;
#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) bad++, fprintf(stderr, "rank %d: check failed: %s\n", r, #cond); \
    } while (0)
    CHECK(strcmp(vla_comm_backend_name(c), "mpi") == 0);
    CHECK(vla_comm_barrier(c) == VLA_OK);
    double d[2] = {r + 1.0, -(double)r};
    CHECK(vla_comm_allreduce(c, d, d, 2, VLA_COMM_F64, VLA_COMM_SUM) == VLA_OK);
    CHECK(d[0] == n * (n + 1) / 2.0 && d[1] == -(n * (n - 1) / 2.0));
    float f[5], g[5];
    for (int i = 0; i < 5; i++) f[i] = (float)(r * 10 + i);
    CHECK(vla_comm_allreduce(c, f, g, 5, VLA_COMM_F32, VLA_COMM_MEAN) == VLA_OK);
    for (int i = 0; i < 5; i++) CHECK(fabsf(g[i] - (float)(10 * (n - 1) / 2.0 + i)) < 1e-5f);
    int64_t mx = r, mn = r;
    CHECK(vla_comm_allreduce(c, &mx, &mx, 1, VLA_COMM_I64, VLA_COMM_MAX) == VLA_OK && mx == n - 1);
    CHECK(vla_comm_allreduce(c, &mn, &mn, 1, VLA_COMM_I64, VLA_COMM_MIN) == VLA_OK && mn == 0);
    int64_t b = r == n - 1 ? 42 : 0;
    CHECK(vla_comm_bcast(c, &b, 1, VLA_COMM_I64, n - 1) == VLA_OK && b == 42);
    vla_comm_request req = {0};
    bool done = false;
    for (int i = 0; i < 5; i++) f[i] = (float)r;
    CHECK(vla_comm_iallreduce(c, f, f, 5, VLA_COMM_F32, VLA_COMM_MEAN, &req, "selftest") == VLA_OK);
    CHECK(vla_comm_test(c, &req, &done) == VLA_OK);
    CHECK(vla_comm_wait(c, &req) == VLA_OK && !req.active);
    for (int i = 0; i < 5; i++) CHECK(fabsf(f[i] - (float)(n - 1) / 2.0f) < 1e-6f);
    /* uneven blocks: rank q owns q+1 elements */
    int64_t counts[16], displs[16], total = 0;
    for (int q = 0; q < n; q++) counts[q] = q + 1, displs[q] = total, total += q + 1;
    float full[136], mine[16];
    for (int64_t i = 0; i < total; i++) full[i] = (float)(i * (r + 1));
    CHECK(vla_comm_reduce_scatterv(c, full, mine, counts, VLA_COMM_F32, VLA_COMM_SUM) == VLA_OK);
    for (int64_t i = 0; i < counts[r]; i++) CHECK(mine[i] == (float)((displs[r] + i) * (n * (n + 1) / 2)));
    for (int64_t i = 0; i < total; i++) full[i] = -1;
    for (int64_t i = 0; i < counts[r]; i++) full[displs[r] + i] = (float)(100 * r + i);
    CHECK(vla_comm_allgatherv(c, NULL, full, counts, displs, VLA_COMM_F32) == VLA_OK);
    for (int q = 0; q < n; q++)
        for (int64_t i = 0; i < counts[q]; i++) CHECK(full[displs[q] + i] == (float)(100 * q + i));
    /* agree: one rank's failure is seen by all */
    vla_status st = r == 1 ? vla_error(VLA_ERR_IO, "rank 1 disk full") : VLA_OK;
    CHECK(vla_comm_agree(c, st, "selftest write") != VLA_OK);
    CHECK(vla_comm_blocked_s(c) >= 0);
#undef CHECK
    vla_comm_finalize(c);
    return bad;
}

static void test_comm_collectives(void **state) {
    static char out[OUT_CAP];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -np 3 -x VLA_DIST_WORKER=comm %s 2>&1", launcher, self_exe);
    int rc = test_run(cmd, out, OUT_CAP);
    if (rc != 0) fail_msg("comm self-test on 3 ranks failed (%d):\n%s", rc, out);
}

int main(int argc, char **argv) {
    if (getenv("VLA_DIST_WORKER") && !strcmp(getenv("VLA_DIST_WORKER"), "comm")) return comm_selftest();
    int rc = dist_test_start("test_dist_mpi", argc, argv);
    if (rc >= 0) return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comm_collectives),
        cmocka_unit_test(test_equivalence),
        cmocka_unit_test(test_elastic_resume),
        cmocka_unit_test(test_bucket_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
