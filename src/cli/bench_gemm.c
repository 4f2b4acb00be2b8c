/* bench_gemm.c — `vla bench gemm`: SGEMM throughput through the op table at
 * the shapes the models use. The best of several timed repetitions is
 * reported (this machine is noisy; the best run is the least disturbed).
 * Later benchmarks quote MFU against the peak measured here, in the same run.
 *
 * --device picks the backend (a device backend is synchronised around each
 * timed block: vla_ops_sync), --precision the operands (bf16/fp8: sgemm_q,
 * the casts of f32 operands included, as a training step pays them). On
 * cuda it also prints the tensor cores' own peak ("gemm_peak_tc": operands
 * already in bf16 / FP8 E4M3, cuBLASLt, random data), the ceiling MFU is
 * measured against. */
#include "cli/cli.h"
#include "base/timer.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#ifdef VLA_HAVE_CUDA
#include "tensor/cuda/ops_cuda.h"
#endif

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
static double time_gemm(const vla_ops *ops, const vla_gemm_q *q, const gemm_shape *s, float *a, float *b, float *c,
                        double seconds, int reps) {
    ops->sgemm_q(q, false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n); /* warm up */
    vla_ops_sync(ops);
    double t0 = vla_now_s();
    ops->sgemm_q(q, false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
    vla_ops_sync(ops);
    double one = vla_now_s() - t0;
    int iters = one > 0 ? (int)(seconds / one) : 1000;
    if (iters < 1) iters = 1;
    if (iters > 100000) iters = 100000;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        t0 = vla_now_s();
        for (int i = 0; i < iters; i++)
            ops->sgemm_q(q, false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
        vla_ops_sync(ops);
        double per = (vla_now_s() - t0) / iters;
        if (per < best) best = per;
    }
    return best;
}

/* n floats of backend memory holding a fixed pattern (through the table: the memory may be a device's) */
static float *pattern(const vla_ops *ops, int64_t n, int mul, int mod) {
    float *d = ops->alloc(sizeof(float) * (size_t)n), *h = malloc(sizeof(float) * (size_t)n);
    if (d && h) {
        for (int64_t j = 0; j < n; j++) h[j] = (float)((j * mul) % mod) * 0.01f;
        ops->to_device(d, h, sizeof(float) * (size_t)n);
    }
    free(h);
    return d;
}

int vla_bench_gemm(int argc, char **argv) {
    int64_t threads = 0, reps = 3;
    double seconds = 0.2;
    bool quick = false;
    const char *device = "cpu", *precision = "fp32";
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP/OpenBLAS threads (0: all cores)"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time per repetition"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed repetitions per shape (best is reported)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "only shapes up to 512 (for smoke tests)"},
        {"device", VLA_FLAG_STRING, &device, "NAME", VLA_CLI_DEVICE_HELP},
        {"precision", VLA_FLAG_STRING, &precision, "fp32|bf16|fp8",
         "operands as the GEMM reads them (bf16, fp8: sgemm_q, casts of the f32 operands included)"},
    };
    const vla_command_spec spec = {"vla bench gemm", NULL,
                                   "Measure SGEMM GFLOP/s through the op table at model-typical shapes.",
                                   "Prints one JSON object per shape and a final {\"bench\":\"gemm_peak\"} line "
                                   "(on cuda also {\"bench\":\"gemm_peak_tc\"}: the tensor cores' bf16 and FP8 peak).",
                                   flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (threads > 0) omp_set_num_threads((int)threads);
    int nthreads = omp_get_max_threads();
    vla_gemm_q q = {0};
    if (!strcmp(precision, "bf16")) q.mode = VLA_PREC_BF16;
    else if (!strcmp(precision, "fp8")) q.mode = VLA_PREC_FP8;
    else if (strcmp(precision, "fp32")) {
        fprintf(stderr, "vla: error: vla bench gemm: --precision=%s: expected fp32, bf16 or fp8\n", precision);
        return 2;
    }
    const vla_ops *ops;
    vla_status st = vla_backend_get(device, &ops);
    if (st != VLA_OK) return vla_cli_fail(st);
    /* FP8 scaling state: scale 64 for both operands (the patterns are below 0.13), amaxes accumulated */
    float *fp8 = NULL;
    if (q.mode == VLA_PREC_FP8) {
        float h[4] = {64.0f, 64.0f, 0.0f, 0.0f};
        if (!(fp8 = ops->alloc(sizeof h))) return vla_cli_fail(vla_error(VLA_ERR_NOMEM, "bench gemm: out of memory"));
        ops->to_device(fp8, h, sizeof h);
        q.a = (vla_fp8_operand){VLA_FP8_E4M3, fp8, fp8 + 2};
        q.b = (vla_fp8_operand){VLA_FP8_E4M3, fp8 + 1, fp8 + 3};
    }
    double peak = 0;
    int64_t peak_m = 0;
    for (unsigned i = 0; i < sizeof default_shapes / sizeof default_shapes[0]; i++) {
        const gemm_shape *s = &default_shapes[i];
        if (quick && (s->m > 512 || s->n > 1024 || s->k > 1024)) continue;
        float *a = pattern(ops, s->m * s->k, 7, 13), *b = pattern(ops, s->k * s->n, 5, 11);
        float *c = ops->alloc(sizeof(float) * s->m * s->n);
        if (!a || !b || !c) {
            fprintf(stderr, "vla bench gemm: out of memory at %lldx%lldx%lld\n", (long long)s->m,
                    (long long)s->n, (long long)s->k);
            return 1;
        }
        double t = time_gemm(ops, &q, s, a, b, c, seconds, (int)reps);
        double gflops = 2.0 * s->m * s->n * s->k / t * 1e-9;
        if (gflops > peak) peak = gflops, peak_m = s->m;
        printf("{\"bench\":\"gemm\",\"backend\":\"%s\",\"precision\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
               "\"shape\":\"%s\",\"threads\":%d,\"ms\":%.4f,\"gflops\":%.2f}\n",
               ops->name, precision, (long long)s->m, (long long)s->n, (long long)s->k, s->what, nthreads, t * 1e3,
               gflops);
        fflush(stdout);
        ops->free(a), ops->free(b), ops->free(c);
    }
    if (fp8) ops->free(fp8);
    printf("{\"bench\":\"gemm_peak\",\"backend\":\"%s\",\"precision\":\"%s\",\"threads\":%d,\"gflops\":%.2f,"
           "\"at_m\":%lld}\n",
           ops->name, precision, nthreads, peak, (long long)peak_m);
#ifdef VLA_HAVE_CUDA
    if (ops->device == VLA_DEVICE_CUDA) {
        const struct {
            vla_dtype t;
            const char *name;
        } tc[] = {{VLA_BF16, "bf16"}, {VLA_F8E4M3, "fp8_e4m3"}};
        for (unsigned i = 0; i < sizeof tc / sizeof tc[0]; i++) {
            double tf = 0;
            int64_t n = quick ? 2048 : 8192;
            st = vla_cuda_gemm_peak(tc[i].t, n, quick ? 5 : 20, (int)reps, &tf);
            if (st != VLA_OK) return vla_cli_fail(st);
            printf("{\"bench\":\"gemm_peak_tc\",\"backend\":\"cuda\",\"dtype\":\"%s\",\"n\":%lld,\"tflops\":%.1f,"
                   "\"device\":\"", tc[i].name, (long long)n, tf);
            vla_cli_print_json_chars(vla_cuda_device_info());
            printf("\"}\n");
            fflush(stdout);
        }
    }
#endif
    return 0;
}
