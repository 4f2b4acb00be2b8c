/* test_dist_faults.c — failure behaviour of multi-process runs, and the
 * two-"host" run: a rank killed by SIGKILL makes mpirun end the job at once;
 * a rank that hangs makes the others' collective watchdog print which rank
 * and collective, and exit non-zero, within a bounded time; as root, 2 ranks
 * in 2 network namespaces over TCP match 1 rank (scripts/multihost_netns.sh,
 * skipped where namespaces cannot be created). Like test_dist_mpi.c, this
 * binary is also the worker mpirun starts (VLA_DIST_WORKER=1). */
#include "test_util.h"
#include "dist_test.h"
#include "dist/synthetic.h"

#include "base/timer.h"

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

#define OUT_CAP 65536

static void test_killed_rank(void **state) {
    static char out[OUT_CAP];
    double t;
    int rc = run_worker(2, "--steps 100000 --batch 4 --die-rank 1 --die-step 3 --timeout 5 2>&1", out, OUT_CAP, &t);
    printf("killed rank: exit %d after %.2f s\n", rc, t);
    assert_int_not_equal(rc, 0);
    assert_true(t < 15);
    assert_non_null(strstr(out, "fault injection"));
}

static void test_hung_rank(void **state) {
    static char out[OUT_CAP];
    double t;
    int rc = run_worker(2, "--steps 100000 --batch 4 --hang-rank 1 --hang-step 3 --timeout 2 2>&1", out, OUT_CAP, &t);
    printf("hung rank: exit %d after %.2f s\n", rc, t);
    assert_int_not_equal(rc, 0);
    assert_true(t < 15);
    assert_non_null(strstr(out, "did not complete within"));
}

/* scripts/multihost_netns.sh: 2 ranks in 2 network namespaces joined by a
 * veth pair, TCP only; skipped (exit 77) without root or namespaces. */
static void test_multihost_netns(void **state) {
    static char out[OUT_CAP];
    const char *bin = getenv("VLA_BINARY_DIR");
    if (!bin) skip();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "bash %s %s 2>&1", test_source_path("scripts/multihost_netns.sh"), bin);
    int rc = test_run(cmd, out, OUT_CAP);
    if (rc == 77) {
        printf("%s", out);
        skip();
    }
    if (rc != 0) fail_msg("multihost_netns.sh failed (%d):\n%s", rc, out);
    assert_non_null(strstr(out, "OK: 2 ranks on 2 network namespaces"));
}

int main(int argc, char **argv) {
    int rc = dist_test_start("test_dist_faults", argc, argv);
    if (rc >= 0) return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_rank),
        cmocka_unit_test(test_hung_rank),
        cmocka_unit_test(test_multihost_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
