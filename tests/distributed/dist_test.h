/* dist_test.h — the start shared by the multi-process test programs: the same
 * binary is the cmocka driver and, under mpirun (VLA_DIST_WORKER set), the
 * synthetic-training worker it launches. */
#ifndef VLA_TEST_DIST_TEST_H
#define VLA_TEST_DIST_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/timer.h"
#include "synthetic.h"
#include "test_util.h"

static char self_exe[1024];
static char launcher[2048];

/* Returns -1 when the caller should run its cmocka tests; otherwise the exit
 * code to return (a worker finished, or mpirun is missing: skip). Fills
 * self_exe (this binary) and launcher (the mpirun prefix). */
static int dist_test_start(const char *prog, int argc, char **argv) {
    if (getenv("VLA_DIST_WORKER")) {
        vla_synth_opts o;
        vla_synth_defaults(&o);
        char name[128];
        snprintf(name, sizeof name, "%s worker", prog);
        int rc = vla_synth_parse(&o, name, argc - 1, argv + 1);
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
             test_source_path("tests/distributed/lsan-mpi.supp"));
    setenv("LSAN_OPTIONS", supp, 1);
    snprintf(launcher, sizeof launcher,
             "ASAN_OPTIONS=detect_leaks=0 mpirun --oversubscribe --allow-run-as-root --bind-to none "
             "--mca btl self,vader,tcp -x LSAN_OPTIONS -x ASAN_OPTIONS");
    if (system("mpirun --version >/dev/null 2>&1") != 0) {
        printf("mpirun not found: skipping the multi-process tests\n");
        return 0;
    }
    return -1;
}

/* The synthetic model both programs train (small: a run is milliseconds). */
static const char *common = "--dims 12,24,24,24,3 --samples 96 --seed 7 --lr 0.02 --wd 0.01 "
                            "--max-grad-norm 0.5 --bucket-bytes 1024 --json --threads 1";

/* Run the worker: np 0 means a plain process (no mpirun). Returns the exit
 * status; stdout (rank 0's JSON lines) goes to out. With `elapsed` the
 * caller expects failures (fault tests) and nothing is printed. */
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

#endif
