/* bench_gemm.c — `vla bench gemm`: SGEMM throughput through the op table at
 * the shapes the models use. The best of several timed repetitions is
 * reported (this machine is noisy; the best run is the least disturbed).
 * Later benchmarks quote MFU against the peak measured here, in the same run. */
#include "cli/cli.h"
#include "base/timer.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t m, n, k;
    const char *what;
} gemm_shape;

static const gemm_shape default_shapes[] = {
    {64, 64, 64, "square"},        {128, 128, 128, "square"},     {256, 256, 256, "square"},
    {512, 512, 512, "square"},     {1024, 1024, 1024, "square"},  {2048, 2048, 2048, "square"},
    {512, 1024, 256, "tiny qkv"},  {512, 256, 1024, "tiny mlp"},  {2048, 4096, 1024, "expert mlp"},
    {1024, 1152, 4304, "vit mlp"},
};

/* Seconds per call, best of `reps` timed blocks each lasting about `seconds`. */
static double time_gemm(const vla_ops *ops, const gemm_shape *s, float *a, float *b, float *c, double seconds,
                        int reps) {
    ops->sgemm(false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n); /* warm up */
    double t0 = vla_now_s();
    ops->sgemm(false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
    double one = vla_now_s() - t0;
    int iters = one > 0 ? (int)(seconds / one) : 1000;
    if (iters < 1) iters = 1;
    if (iters > 100000) iters = 100000;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        t0 = vla_now_s();
        for (int i = 0; i < iters; i++)
            ops->sgemm(false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
        double per = (vla_now_s() - t0) / iters;
        if (per < best) best = per;
    }
    return best;
}

int vla_bench_gemm(int argc, char **argv) {
    int64_t threads = 0, reps = 3;
    double seconds = 0.2;
    bool quick = false;
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP/OpenBLAS threads (0: all cores)"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time per repetition"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed repetitions per shape (best is reported)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "only shapes up to 512 (for smoke tests)"},
    };
    const vla_command_spec spec = {"vla bench gemm", NULL,
                                   "Measure SGEMM GFLOP/s through the op table at model-typical shapes.",
                                   "Prints one JSON object per shape and a final {\"bench\":\"gemm_peak\"} line.",
                                   flags, 4, 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (threads > 0) omp_set_num_threads((int)threads);
    int nthreads = omp_get_max_threads();

    const vla_ops *ops = vla_backend_find(VLA_BACKEND_DEFAULT);
    double peak = 0;
    int64_t peak_m = 0;
    for (unsigned i = 0; i < sizeof default_shapes / sizeof default_shapes[0]; i++) {
        const gemm_shape *s = &default_shapes[i];
        if (quick && (s->m > 512 || s->n > 1024 || s->k > 1024)) continue;
        float *a = ops->alloc(sizeof(float) * s->m * s->k), *b = ops->alloc(sizeof(float) * s->k * s->n);
        float *c = ops->alloc(sizeof(float) * s->m * s->n);
        if (!a || !b || !c) {
            fprintf(stderr, "vla bench gemm: out of memory at %lldx%lldx%lld\n", (long long)s->m,
                    (long long)s->n, (long long)s->k);
            return 1;
        }
        for (int64_t j = 0; j < s->m * s->k; j++) a[j] = (float)((j * 7) % 13) * 0.01f;
        for (int64_t j = 0; j < s->k * s->n; j++) b[j] = (float)((j * 5) % 11) * 0.01f;
        double t = time_gemm(ops, s, a, b, c, seconds, (int)reps);
        double gflops = 2.0 * s->m * s->n * s->k / t * 1e-9;
        if (gflops > peak) peak = gflops, peak_m = s->m;
        printf("{\"bench\":\"gemm\",\"backend\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"shape\":\"%s\","
               "\"threads\":%d,\"ms\":%.4f,\"gflops\":%.2f}\n",
               ops->name, (long long)s->m, (long long)s->n, (long long)s->k, s->what, nthreads, t * 1e3, gflops);
        fflush(stdout);
        ops->free(a), ops->free(b), ops->free(c);
    }
    printf("{\"bench\":\"gemm_peak\",\"backend\":\"%s\",\"threads\":%d,\"gflops\":%.2f,\"at_m\":%lld}\n",
           ops->name, nthreads, peak, (long long)peak_m);
    return 0;
}
