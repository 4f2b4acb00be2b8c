/* test_dist_faults.c — failure behaviour of multi-process runs, and the
 * two-"host" run: a rank killed by SIGKILL makes mpirun end the job at once;
 * a rank that hangs makes the others' collective watchdog print which rank
 * and collective, and exit non-zero, within a bounded time; as root, 2 ranks
 * in 2 network namespaces over TCP match 1 rank (scripts/multihost_netns.sh,
 * skipped where namespaces cannot be created). Like test_dist_mpi.c, this
 * binary is also the worker mpirun starts (VLA_DIST_WORKER=1). */
#include "test_util.h"
#include "dist/synthetic.h"

#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char self_exe[1024];
static char launcher[2048];

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
    if (getenv("VLA_DIST_WORKER")) {
        vla_synth_opts o;
        vla_synth_defaults(&o);
        int rc = vla_synth_parse(&o, "test_dist_faults worker", argc - 1, argv + 1);
        if (rc >= 0) return rc;
        return vla_synth_train(&o, stdout) == VLA_OK ? 0 : 1;
    }
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0) return 1;
    self_exe[n] = '\0';
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    /* Under ASan, OpenMPI's allocations at exit come from MCA components it has
     * already dlclose'd, so LeakSanitizer cannot name (or suppress) them: leak
     * checking is off in the workers mpirun starts (it stays on in the plain
     * single-process workers, which run the same dist code). The suppression
     * file covers what can be named. */
    char supp[1200];
    snprintf(supp, sizeof supp, "suppressions=%s:print_suppressions=0",
             test_source_path("tests/dist/lsan-mpi.supp"));
    setenv("LSAN_OPTIONS", supp, 1);
    snprintf(launcher, sizeof launcher,
             "ASAN_OPTIONS=detect_leaks=0 mpirun --oversubscribe --allow-run-as-root --bind-to none "
             "--mca btl self,vader,tcp -x LSAN_OPTIONS -x ASAN_OPTIONS");
    if (system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("mpirun not found: skipping the multi-process tests\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_rank),
        cmocka_unit_test(test_hung_rank),
        cmocka_unit_test(test_multihost_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
