/* bench_threads.c — `vla bench threads`: what a parallel region costs the op
 * table, so the work thresholds of tensor/cpu/parallel.h rest on measurements.
 *
 * A region that follows serial work pays for waking the team: libgomp's
 * idle workers spin for a while (GOMP_SPINCOUNT, OMP_WAIT_POLICY) and then
 * sleep, so the cost depends on how long the serial gap before the region
 * was. For gaps of 0 (regions back to back), 0.1, 1 and 10 ms of busy
 * serial work, this times an empty `omp parallel for` over the team and
 * prints the median and 90th percentile, one JSON line per gap; and the
 * time of an elementwise add over n floats serially and with the team, so
 * the break-even size of a threaded loop is read off directly. */
#include "bench/bench.h"
#include "cli/cli.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"

static volatile double sink;

/* Busy serial work for about `ms` milliseconds (a loop the compiler keeps). */
static void busy(double ms) {
    double t0 = vla_now_s(), x = 1.0;
    while ((vla_now_s() - t0) * 1e3 < ms)
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and 90th percentile (µs) of an empty region after `gap_ms` of serial work. */
static void region_cost(double gap_ms, int reps, double *median, double *p90) {
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) return;
    int nt = omp_get_max_threads();
    for (int r = 0; r < reps; r++) {
        if (gap_ms > 0) busy(gap_ms);
        double t0 = vla_now_s();
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int i = 0; i < nt; i++) sink = i;
        t[r] = (vla_now_s() - t0) * 1e6;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *median = t[reps / 2];
    *p90 = t[(int)(0.9 * reps)];
    free(t);
}

/* µs of y = a + b over n floats, serial and threaded (best of reps, back to back). */
static void add_cost(int64_t n, int reps, double *serial, double *team) {
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b), *y = malloc((size_t)n * sizeof *y);
    *serial = *team = 0;
    if (!a || !b || !y) goto done;
    for (int64_t i = 0; i < n; i++) a[i] = (float)i, b[i] = 1.0f;
    double best_s = 1e30, best_t = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = vla_now_s();
        for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
        double t1 = vla_now_s();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
        double t2 = vla_now_s();
        if (t1 - t0 < best_s) best_s = t1 - t0;
        if (t2 - t1 < best_t) best_t = t2 - t1;
    }
    sink = y[n - 1];
    *serial = best_s * 1e6, *team = best_t * 1e6;
done:
    free(a), free(b), free(y);
}

int vla_bench_threads(int argc, char **argv) {
    int64_t threads = 0, reps = 200;
    bool quick = false;
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "team size (0: all cores)"},
        {"reps", VLA_FLAG_INT, &reps, "N", "regions timed per gap"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "short run (smoke test): 20 regions per gap"},
    };
    const vla_command_spec spec = {"vla bench threads", NULL,
                                   "Cost of an OpenMP parallel region after serial gaps, and the break-even size "
                                   "of a threaded elementwise loop.",
                                   "One JSON line per gap ({\"bench\":\"omp_region\"}) and per size "
                                   "({\"bench\":\"omp_add\"}).",
                                   flags, 3, 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (quick) reps = 20;
    if (reps < 10) reps = 10;
    if (threads > 0) omp_set_num_threads((int)threads);
    int nt = omp_get_max_threads();
    static const double gaps[] = {0, 0.1, 1, 10};
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        double med = 0, p90 = 0;
        region_cost(gaps[g], gaps[g] >= 10 ? (int)(reps / 4 > 10 ? reps / 4 : 10) : (int)reps, &med, &p90);
        printf("{\"bench\":\"omp_region\",\"threads\":%d,\"gap_ms\":%g,\"median_us\":%.2f,\"p90_us\":%.2f}\n", nt,
               gaps[g], med, p90);
        fflush(stdout);
    }
    for (int64_t n = 1 << 12; n <= 1 << 22; n *= 4) {
        double s = 0, t = 0;
        add_cost(n, 20, &s, &t);
        printf("{\"bench\":\"omp_add\",\"threads\":%d,\"n\":%lld,\"serial_us\":%.2f,\"team_us\":%.2f,\"speedup\":%.2f}\n",
               nt, (long long)n, s, t, t > 0 ? s / t : 0.0);
        fflush(stdout);
    }
    return 0;
}
