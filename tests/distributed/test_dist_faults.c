/* test_dist_faults.c — failure behaviour of multi-process runs, and the
 * two-"host" run: a rank killed by SIGKILL makes mpirun end the job at once;
 * a rank that hangs makes the others' collective watchdog print which rank
 * and collective, and exit non-zero, within a bounded time; as root, `vla
 * train` on 2 ranks in 2 network namespaces over TCP matches 1 rank
 * (scripts/multihost_netns.sh, skipped where namespaces cannot be created).
 * Like test_dist_mpi.c, this binary is also the worker mpirun starts
 * (VLA_DIST_WORKER=1). */
#include "test_util.h"
#include "dist_test.h"
#include "synthetic.h"

#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



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
