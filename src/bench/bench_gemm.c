/* bench_gemm.c — `vla bench gemm`: SGEMM throughput through the op table at
 * the shapes the models use, with oneDNN and OpenBLAS side by side (issue
 * 35): both libraries in this process (OpenBLAS with the kernels the
 * environment selects), and OpenBLAS again in peer processes that each
 * force one core type (OPENBLAS_CORETYPE set for that process alone: by
 * default the best two the CPU's features allow), so a user sees what their
 * machine's OpenBLAS choice costs. Every product goes through the op
 * table's split (tensor/cpu/ops_cpu.c), as the models' do.
 *
 * The machine may be shared and its speed drifts over minutes, so the
 * contenders are timed in rounds that alternate them shape by shape (the
 * peers once per round), and each keeps its best time per shape; ratios
 * come from the same minutes. MFU is against the best f32 peak any
 * contender reached in the run. Where the CPU has AVX512-BF16 or AMX (and
 * one thread is asked for), oneDNN's bf16 tile is timed against its f32
 * call on the same shapes, each one call per product.
 *
 * --device other than cpu, or --precision bf16/fp8, times that one
 * configuration instead (bench_device below): the operands in the backend's
 * memory, through sgemm_q (the casts of f32 operands included, as a training
 * step pays them), a device backend synchronised around each timed block
 * (vla_ops_sync). Where the backend keeps GEMM-ready copies (cuda,
 * checked; ops.h, prepare_operand) each bf16/FP8 shape is also timed with B
 * ready — cast once, as a training step holds its weights — so only A's
 * cast is paid per call ("b_ready_ms", "b_ready_gflops"), and with A ready too — no cast at all, the
 * product alone, what activations kept in bf16 between ops would give ("ab_ready_ms", "ab_ready_gflops").
 * On cuda it also prints the tensor cores' own peak
 * ("gemm_peak_tc": operands already in bf16 / FP8 E4M3, cuBLASLt, random
 * data), the ceiling MFU is measured against. */
#include "bench/bench.h"
#include "cli/cli.h"
#include "base/dtype.h"
#include "base/timer.h"
#include "tensor/cpu/gemm.h"
#include "tensor/backend.h"
#include "tensor/ops.h"
#ifdef VLA_HAVE_CUDA
#include "tensor/cuda/ops_cuda.h"
#endif

#include <jansson.h>
#include <math.h>
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
enum { NSHAPES = sizeof default_shapes / sizeof default_shapes[0], MAX_PEERS = 4 };

static bool shape_in_quick(const gemm_shape *s) { return !(s->m > 512 || s->n > 1024 || s->k > 1024); }

/* One timed thing: the op table with a library in this process, or a peer
 * process running OpenBLAS with a forced core type. */
typedef struct {
    const char *gemm;      /* "onednn" / "openblas" */
    vla_gemm_lib lib;
    char coretype[32];     /* peers: OPENBLAS_CORETYPE given; "" in this process */
    char kernels[64];      /* what ran (a peer reports its own) */
    bool peer, failed;
    char why[300];
    double best[NSHAPES];  /* seconds per call, best round; 0: not measured */
} contender;

typedef struct {
    double seconds;
    int reps;
    bool quick;
} timing;

/* Seconds per call of `fn`, best of `reps` blocks each lasting about
 * t->seconds, after one warm-up call. */
typedef void (*gemm_call)(const gemm_shape *s, void *ctx);
static double time_calls(gemm_call fn, const gemm_shape *s, void *ctx, const timing *t) {
    fn(s, ctx); /* warm up */
    double t0 = vla_now_s();
    fn(s, ctx);
    double one = vla_now_s() - t0;
    int iters = one > 0 ? (int)(t->seconds / one) : 1000;
    if (iters < 1) iters = 1;
    if (iters > 100000) iters = 100000;
    double best = 1e30;
    for (int r = 0; r < t->reps; r++) {
        t0 = vla_now_s();
        for (int i = 0; i < iters; i++) fn(s, ctx);
        double per = (vla_now_s() - t0) / iters;
        if (per < best) best = per;
    }
    return best;
}

typedef struct {
    const vla_ops *ops;
    float *a, *b, *c;
    uint16_t *ha, *hb; /* bf16 copies, when timed */
    vla_status bf16_status;
} operands;

static void call_op_table(const gemm_shape *s, void *ctx) {
    operands *o = ctx;
    o->ops->sgemm(false, false, s->m, s->n, s->k, 1.0f, o->a, s->k, o->b, s->n, 0.0f, o->c, s->n);
}

static void call_f32_tile(const gemm_shape *s, void *ctx) {
    operands *o = ctx;
    vla_gemm_tile(VLA_GEMM_ONEDNN, false, false, s->m, s->n, s->k, 1.0f, o->a, s->k, o->b, s->n, 0.0f, o->c, s->n);
}

static void call_bf16_tile(const gemm_shape *s, void *ctx) {
    operands *o = ctx;
    vla_status st = vla_gemm_bf16_tile(false, false, s->m, s->n, s->k, 1.0f, o->ha, s->k, o->hb, s->n, 0.0f, o->c,
                                       s->n, NULL);
    if (st != VLA_OK) o->bf16_status = st;
}

static void operands_free(operands *o) {
    o->ops->free(o->a), o->ops->free(o->b), o->ops->free(o->c);
    free(o->ha), free(o->hb);
}

static bool operands_alloc(operands *o, const gemm_shape *s, bool bf16) {
    /* the CPU libraries' GEMM, on host memory: the cpu backend by name */
    *o = (operands){.ops = vla_backend_find("cpu")};
    o->a = o->ops->alloc(sizeof(float) * s->m * s->k);
    o->b = o->ops->alloc(sizeof(float) * s->k * s->n);
    o->c = o->ops->alloc(sizeof(float) * s->m * s->n);
    if (bf16) o->ha = malloc(2 * (size_t)(s->m * s->k)), o->hb = malloc(2 * (size_t)(s->k * s->n));
    if (!o->a || !o->b || !o->c || (bf16 && (!o->ha || !o->hb))) {
        operands_free(o);
        fprintf(stderr, "vla bench gemm: out of memory at %lldx%lldx%lld\n", (long long)s->m, (long long)s->n,
                (long long)s->k);
        return false;
    }
    for (int64_t j = 0; j < s->m * s->k; j++) o->a[j] = (float)((j * 7) % 13) * 0.01f;
    for (int64_t j = 0; j < s->k * s->n; j++) o->b[j] = (float)((j * 5) % 11) * 0.01f;
    if (bf16) {
        vla_convert(o->ha, VLA_BF16, o->a, VLA_F32, (size_t)(s->m * s->k));
        vla_convert(o->hb, VLA_BF16, o->b, VLA_F32, (size_t)(s->k * s->n));
    }
    return true;
}

/* The core types a peer forces by default: the best two OpenBLAS has for
 * what this CPU's features allow (OpenBLAS's own choice goes by model
 * number; Zen runs the Haswell kernels, Cooperlake SkylakeX's SGEMM). */
int vla_bench_openblas_coretypes(char names[][32], int cap) {
    const char *cand[5];
    int n = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (avx512 && strstr(vla_gemm_bf16_cpu_features(), "avx512_bf16")) cand[n++] = "Cooperlake";
    if (avx512) cand[n++] = "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cand[n++] = "Haswell";
    if (__builtin_cpu_supports("avx")) cand[n++] = "Sandybridge";
    cand[n++] = "Prescott";
#endif
    int out = 0;
    for (int i = 0; i < n && out < cap && out < 2; i++) snprintf(names[out++], 32, "%s", cand[i]);
    return out;
}

/* --openblas_coretypes (or another `flag`): "auto", "none", or names
 * (letters and digits only: they go into a shell command). Returns the
 * count, or -1 after an error. */
int vla_bench_parse_coretypes(const char *flag, const char *text, char names[][32], int cap) {
    if (!strcmp(text, "auto")) return vla_bench_openblas_coretypes(names, cap);
    if (!strcmp(text, "none")) return 0;
    int n = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        bool ok = len > 0 && len < 32 && n < cap;
        for (size_t i = 0; ok && i < len; i++) ok = (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') ||
                                                   (p[i] >= '0' && p[i] <= '9');
        if (!ok) {
            fprintf(stderr, "vla: error: --%s=%s: expected auto, none, or up to %d OpenBLAS core name%s separated by "
                            "commas (e.g. SkylakeX,Haswell,Prescott)\n", flag, text, cap, cap > 1 ? "s" : "");
            return -1;
        }
        snprintf(names[n++], 32, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    return n;
}

/* One peer run: a fresh `vla bench gemm --peer_child` with OPENBLAS_CORETYPE
 * set for it alone; keeps its best time per shape. */
static void run_peer(contender *c, int threads, const timing *t) {
    char self[1024], cmd[2048], line[8192], why[300] = "";
    if (vla_bench_self_path(self, sizeof self) != VLA_OK) {
        c->failed = true;
        snprintf(c->why, sizeof c->why, "%s", vla_error_message());
        return;
    }
    snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE=%s ", c->coretype);
    vla_bench_shell_quote(cmd + strlen(cmd), sizeof cmd - strlen(cmd), self);
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "bench gemm --peer_child --threads=%d --seconds=%g --reps=%d%s 2>&1",
             threads, t->seconds, t->reps, t->quick ? " --quick" : "");
    if (!vla_bench_run_peer(cmd, "\"gemm_peer\"", line, sizeof line, why, sizeof why)) {
        c->failed = true;
        snprintf(c->why, sizeof c->why, "%s", why);
        return;
    }
    json_error_t err;
    json_t *v = json_loads(line, 0, &err), *secs = v ? json_object_get(v, "seconds") : NULL;
    if (!json_is_array(secs) || json_array_size(secs) != NSHAPES) {
        c->failed = true;
        snprintf(c->why, sizeof c->why, "peer printed an unexpected line: %.200s", line);
        json_decref(v);
        return;
    }
    snprintf(c->kernels, sizeof c->kernels, "%s", json_string_value(json_object_get(v, "kernels")));
    for (int i = 0; i < NSHAPES; i++) {
        double s = json_number_value(json_array_get(secs, (size_t)i));
        if (s > 0 && (c->best[i] == 0 || s < c->best[i])) c->best[i] = s;
    }
    json_decref(v);
}

/* --peer_child: OpenBLAS through the op table, one line with the seconds per
 * shape (0 for shapes skipped). */
static int peer_child(const timing *t) {
    vla_gemm_lib_select(VLA_GEMM_OPENBLAS);
    char lib[64], kern[64];
    vla_gemm_lib_describe(VLA_GEMM_OPENBLAS, lib, sizeof lib, kern, sizeof kern);
    printf("{\"bench\":\"gemm_peer\",\"kernels\":\"%s\",\"seconds\":[", kern);
    for (int i = 0; i < NSHAPES; i++) {
        const gemm_shape *s = &default_shapes[i];
        double sec = 0;
        operands o;
        if (!t->quick || shape_in_quick(s)) {
            if (!operands_alloc(&o, s, false)) return 1;
            sec = time_calls(call_op_table, s, &o, t);
            operands_free(&o);
        }
        printf("%s%.9g", i ? "," : "", sec);
    }
    printf("]}\n");
    return 0;
}

static double gflops_of(const gemm_shape *s, double sec) { return sec > 0 ? 2.0 * s->m * s->n * s->k / sec * 1e-9 : 0; }

static double peak_of(const contender *c, int *at) {
    double peak = 0;
    for (int i = 0; i < NSHAPES; i++) {
        double g = gflops_of(&default_shapes[i], c->best[i]);
        if (g > peak) peak = g, *at = i;
    }
    return peak;
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

typedef struct {
    const vla_ops *ops;
    const vla_gemm_q *q;
    float *a, *b, *c;
} device_operands;

static void call_sgemm_q(const gemm_shape *s, void *ctx) {
    device_operands *o = ctx;
    o->ops->sgemm_q(o->q, false, false, s->m, s->n, s->k, 1.0f, o->a, s->k, o->b, s->n, 0.0f, o->c, s->n);
    vla_ops_sync(o->ops); /* a device's calls return before they finish */
}

/* One backend and operand precision, shape by shape (--device, --precision). */
static int bench_device(const vla_ops *ops, const char *precision, vla_precision mode, const timing *t) {
    int nthreads = omp_get_max_threads();
    vla_gemm_q q = {.mode = mode};
    /* FP8 scaling state: scale 64 for both operands (the patterns are below 0.13), amaxes accumulated */
    float *fp8 = NULL;
    if (mode == VLA_PREC_FP8) {
        float h[4] = {64.0f, 64.0f, 0.0f, 0.0f};
        if (!(fp8 = ops->alloc(sizeof h))) return vla_cli_fail(vla_error(VLA_ERR_NOMEM, "bench gemm: out of memory"));
        ops->to_device(fp8, h, sizeof h);
        q.a = (vla_fp8_operand){VLA_FP8_E4M3, fp8, fp8 + 2};
        q.b = (vla_fp8_operand){VLA_FP8_E4M3, fp8 + 1, fp8 + 3};
    }
    double peak = 0;
    int64_t peak_m = 0;
    for (int i = 0; i < NSHAPES; i++) {
        const gemm_shape *s = &default_shapes[i];
        if (t->quick && !shape_in_quick(s)) continue;
        device_operands o = {ops, &q, pattern(ops, s->m * s->k, 7, 13), pattern(ops, s->k * s->n, 5, 11),
                             ops->alloc(sizeof(float) * s->m * s->n)};
        if (!o.a || !o.b || !o.c) {
            fprintf(stderr, "vla bench gemm: out of memory at %lldx%lldx%lld\n", (long long)s->m, (long long)s->n,
                    (long long)s->k);
            return 1;
        }
        int64_t emu0 = vla_ops_stat_of(ops, VLA_STAT_GEMM_EMULATED);
        double sec = time_calls(call_sgemm_q, s, &o, t);
        double gflops = 2.0 * s->m * s->n * s->k / sec * 1e-9;
        if (gflops > peak) peak = gflops, peak_m = s->m;
        printf("{\"bench\":\"gemm\",\"backend\":\"%s\",\"precision\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
               "\"shape\":\"%s\",\"threads\":%d,\"ms\":%.4f,\"gflops\":%.2f",
               ops->name, precision, (long long)s->m, (long long)s->n, (long long)s->k, s->what, nthreads, sec * 1e3,
               gflops);
        /* calls that found no cuBLASLt algorithm: emulated in f32, so this shape's figure is not the tensor cores' */
        if (emu0 >= 0 && mode != VLA_PREC_FP32)
            printf(",\"emulated_calls\":%lld", (long long)(ops->stat(VLA_STAT_GEMM_EMULATED) - emu0));
        /* B held as a step holds a weight: cast once (prepare_operand), read ready by every call */
        size_t rb = mode != VLA_PREC_FP32 && ops->ready_bytes ? ops->ready_bytes(&q, s->n, s->k) : 0;
        void *ready = rb ? ops->alloc(rb) : NULL;
        if (ready) {
            ops->prepare_operand(&q, false, s->n, s->k, o.b, s->n, ready);
            vla_gemm_q qr = q;
            qr.b_ready = ready;
            device_operands orr = o;
            orr.q = &qr;
            double sr = time_calls(call_sgemm_q, s, &orr, t);
            printf(",\"b_ready_ms\":%.4f,\"b_ready_gflops\":%.2f", sr * 1e3, 2.0 * s->m * s->n * s->k / sr * 1e-9);
            /* A held too (ops.h, a_ready: op(A) made as the B of the transposed product): the product alone,
             * no cast per call — what activations kept in bf16 between ops would give this GEMM */
            vla_gemm_q qa = {.mode = mode, .b = q.a};
            size_t ra = ops->ready_bytes(&qa, s->m, s->k);
            void *ready_a = ra ? ops->alloc(ra) : NULL;
            if (ready_a) {
                ops->prepare_operand(&qa, true, s->m, s->k, o.a, s->k, ready_a);
                qr.a_ready = ready_a;
                double sab = time_calls(call_sgemm_q, s, &orr, t);
                printf(",\"ab_ready_ms\":%.4f,\"ab_ready_gflops\":%.2f", sab * 1e3,
                       2.0 * s->m * s->n * s->k / sab * 1e-9);
                ops->free(ready_a);
            }
            ops->free(ready);
        }
        printf("}\n");
        fflush(stdout);
        ops->free(o.a), ops->free(o.b), ops->free(o.c);
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
            int64_t n = t->quick ? 2048 : 8192;
            vla_status st = vla_cuda_gemm_peak(tc[i].t, n, t->quick ? 5 : 20, t->reps, &tf);
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

int vla_bench_gemm(int argc, char **argv) {
    int64_t threads = 0, reps = 1, rounds = 3;
    double seconds = 0.2;
    bool quick = false, child = false, no_bf16 = false;
    const char *coretypes = NULL, *device = "cpu", *precision = "fp32";
    const vla_flag flags[] = {
        {"threads", VLA_FLAG_INT, &threads, "N", "OpenMP threads (0: all cores)"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time per repetition"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed repetitions per shape and round (best is reported)"},
        {"rounds", VLA_FLAG_INT, &rounds, "N", "rounds alternating the contenders (best round is reported)"},
        {"openblas_coretypes", VLA_FLAG_STRING, &coretypes, "auto|none|A,B",
         "OpenBLAS core types each forced in a peer process of its own (OPENBLAS_CORETYPE set for it alone); auto: "
         "the best two the CPU's features allow; Prescott shows OpenBLAS's fallback on CPUs it does not know "
         "(default auto; none with --quick, so a smoke run leaves the environment's OpenBLAS choice alone)"},
        {"no_bf16", VLA_FLAG_BOOL, &no_bf16, NULL, "skip the bf16 comparison (CPUs with AVX512-BF16 or AMX)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL, "only shapes up to 512, one round (for smoke tests)"},
        {"device", VLA_FLAG_STRING, &device, "NAME",
         VLA_CLI_DEVICE_HELP "; other than cpu, that backend alone is timed (no library comparison)"},
        {"precision", VLA_FLAG_STRING, &precision, "fp32|bf16|fp8",
         "operands as the GEMM reads them (bf16, fp8: sgemm_q, casts of the f32 operands included); other than fp32, "
         "that mode alone is timed"},
        {"peer_child", VLA_FLAG_BOOL, &child, NULL,
         "internal: run as a peer (OpenBLAS through the op table) and print one gemm_peer line"},
    };
    const vla_command_spec spec = {
        "vla bench gemm", NULL,
        "Measure SGEMM GFLOP/s through the op table at model-typical shapes, oneDNN and OpenBLAS side by side.",
        "Prints one \"gemm\" line per shape and library (OpenBLAS with the environment's kernels here, and with "
        "each forced core type in a peer process), a \"gemm_peak\" line per library, a \"gemm_bf16\" line per shape "
        "where the CPU computes bf16 natively (one thread), and a final \"gemm_compare\" line with the ratios. MFU "
        "is against the best f32 peak of the run.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (reps < 1 || rounds < 1 || seconds <= 0) {
        fprintf(stderr, "vla: error: --reps and --rounds must be positive, --seconds above 0\n");
        return 2;
    }
    if (threads > 0) omp_set_num_threads((int)threads);
    int nthreads = omp_get_max_threads();
    timing t = {seconds, (int)reps, quick};
    if (child) return peer_child(&t);
    vla_precision mode = VLA_PREC_FP32;
    if (!strcmp(precision, "bf16")) mode = VLA_PREC_BF16;
    else if (!strcmp(precision, "fp8")) mode = VLA_PREC_FP8;
    else if (strcmp(precision, "fp32")) {
        fprintf(stderr, "vla: error: vla bench gemm: --precision=%s: expected fp32, bf16 or fp8\n", precision);
        return 2;
    }
    if (strcmp(device, "cpu") || mode != VLA_PREC_FP32) {
        const vla_ops *ops;
        vla_status st = vla_backend_get(device, &ops);
        if (st != VLA_OK) return vla_cli_fail(st);
        return bench_device(ops, precision, mode, &t);
    }
    if (quick) rounds = 1;
    if (!coretypes) coretypes = quick ? "none" : "auto";

    char peers[MAX_PEERS][32];
    int n_peers = vla_bench_parse_coretypes("openblas_coretypes", coretypes, peers, MAX_PEERS);
    if (n_peers < 0) return 2;
    contender cs[2 + MAX_PEERS];
    int n = 0;
    for (int lib = 0; lib < VLA_GEMM_LIB_COUNT; lib++) {
        char libname[64];
        cs[n] = (contender){.gemm = vla_gemm_lib_name((vla_gemm_lib)lib), .lib = (vla_gemm_lib)lib};
        vla_gemm_lib_describe((vla_gemm_lib)lib, libname, sizeof libname, cs[n].kernels, sizeof cs[n].kernels);
        n++;
    }
    for (int i = 0; i < n_peers; i++) {
        cs[n] = (contender){.gemm = "openblas", .lib = VLA_GEMM_OPENBLAS, .peer = true};
        snprintf(cs[n].coretype, sizeof cs[n].coretype, "%.31s", peers[i]);
        n++;
    }
    bool bf16 = !no_bf16 && nthreads == 1 && vla_gemm_bf16_native();
    double bf16_best[NSHAPES] = {0}, f32_call_best[NSHAPES] = {0};
    vla_status bf16_status = VLA_OK;

    vla_gemm_lib saved = vla_gemm_lib_active();
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < NSHAPES; i++) {
            const gemm_shape *s = &default_shapes[i];
            if (quick && !shape_in_quick(s)) continue;
            operands o;
            if (!operands_alloc(&o, s, bf16)) return 1;
            for (int c = 0; c < n; c++) {
                if (cs[c].peer) continue;
                vla_gemm_lib_select(cs[c].lib);
                double sec = time_calls(call_op_table, s, &o, &t);
                if (cs[c].best[i] == 0 || sec < cs[c].best[i]) cs[c].best[i] = sec;
            }
            vla_gemm_lib_select(saved);
            if (bf16 && bf16_status == VLA_OK) { /* one call per product each: the same work, f32 and bf16 */
                double f = time_calls(call_f32_tile, s, &o, &t), h = time_calls(call_bf16_tile, s, &o, &t);
                bf16_status = o.bf16_status;
                if (f32_call_best[i] == 0 || f < f32_call_best[i]) f32_call_best[i] = f;
                if (bf16_best[i] == 0 || h < bf16_best[i]) bf16_best[i] = h;
            }
            operands_free(&o);
        }
        for (int c = 0; c < n; c++)
            if (cs[c].peer && !cs[c].failed) run_peer(&cs[c], nthreads, &t);
    }

    /* the best f32 peak of the run, whoever reached it: what MFU is against */
    double best_peak = 0;
    for (int c = 0; c < n; c++) {
        int at = 0;
        double p = peak_of(&cs[c], &at);
        if (p > best_peak) best_peak = p;
    }
    for (int c = 0; c < n; c++) {
        if (cs[c].failed) {
            printf("{\"bench\":\"gemm\",\"gemm\":\"%s\",\"coretype_forced\":\"%s\",\"skipped\":\"", cs[c].gemm,
                   cs[c].coretype);
            vla_cli_print_json_chars(cs[c].why);
            printf("\"}\n");
            continue;
        }
        for (int i = 0; i < NSHAPES; i++) {
            const gemm_shape *s = &default_shapes[i];
            if (cs[c].best[i] <= 0) continue;
            double g = gflops_of(s, cs[c].best[i]);
            printf("{\"bench\":\"gemm\",\"backend\":\"cpu\",\"gemm\":\"%s\",\"kernels\":\"%s\",\"process\":\"%s\","
                   "\"coretype_forced\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"shape\":\"%s\",\"threads\":%d,"
                   "\"ms\":%.4f,\"gflops\":%.2f,\"mfu\":%.4f",
                   cs[c].gemm, cs[c].kernels, cs[c].peer ? "peer" : "self", cs[c].coretype, (long long)s->m,
                   (long long)s->n, (long long)s->k, s->what, nthreads, cs[c].best[i] * 1e3, g,
                   best_peak > 0 ? g / best_peak : 0.0);
            if (c > 0 && cs[0].best[i] > 0) printf(",\"onednn_over_this\":%.3f", cs[c].best[i] / cs[0].best[i]);
            printf("}\n");
        }
    }
    double peaks[2 + MAX_PEERS] = {0};
    for (int c = 0; c < n; c++) {
        int at = 0;
        peaks[c] = peak_of(&cs[c], &at);
        if (cs[c].failed || peaks[c] <= 0) continue;
        printf("{\"bench\":\"gemm_peak\",\"backend\":\"cpu\",\"gemm\":\"%s\",\"kernels\":\"%s\",\"process\":\"%s\","
               "\"coretype_forced\":\"%s\",\"threads\":%d,\"gflops\":%.2f,\"at_m\":%lld,\"at_shape\":\"%lldx%lldx%lld\"}\n",
               cs[c].gemm, cs[c].kernels, cs[c].peer ? "peer" : "self", cs[c].coretype, nthreads, peaks[c],
               (long long)default_shapes[at].m, (long long)default_shapes[at].m, (long long)default_shapes[at].n,
               (long long)default_shapes[at].k);
    }
    if (bf16 && bf16_status != VLA_OK) {
        printf("{\"bench\":\"gemm_bf16\",\"skipped\":\"");
        vla_cli_print_json_chars(vla_error_message());
        printf("\"}\n");
    } else if (bf16) {
        for (int i = 0; i < NSHAPES; i++) {
            const gemm_shape *s = &default_shapes[i];
            if (bf16_best[i] <= 0) continue;
            const char *impl = "?";
            operands o; /* the kernel oneDNN picked for this shape (the call is cached, so cheap) */
            if (operands_alloc(&o, s, true)) {
                vla_gemm_bf16_tile(false, false, s->m, s->n, s->k, 1.0f, o.ha, s->k, o.hb, s->n, 0.0f, o.c, s->n,
                                   &impl);
                operands_free(&o);
            }
            printf("{\"bench\":\"gemm_bf16\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"shape\":\"%s\",\"threads\":1,"
                   "\"kernel\":\"%s\",\"f32_gflops\":%.2f,\"bf16_gflops\":%.2f,\"bf16_over_f32\":%.3f}\n",
                   (long long)s->m, (long long)s->n, (long long)s->k, s->what, impl, gflops_of(s, f32_call_best[i]),
                   gflops_of(s, bf16_best[i]), f32_call_best[i] / bf16_best[i]);
        }
    }
    /* the summary: oneDNN's peak over each OpenBLAS's */
    printf("{\"bench\":\"gemm_compare\",\"threads\":%d,\"rounds\":%lld,\"best_peak_gflops\":%.2f,"
           "\"onednn_kernels\":\"%s\",\"onednn_peak_gflops\":%.2f",
           nthreads, (long long)rounds, best_peak, cs[0].kernels, peaks[0]);
    for (int c = 1; c < n; c++) {
        if (cs[c].failed || peaks[c] <= 0) continue;
        const char *key = cs[c].peer ? cs[c].coretype : "env";
        printf(",\"openblas_%s_kernels\":\"%s\",\"openblas_%s_peak_gflops\":%.2f,\"onednn_over_openblas_%s\":%.3f",
               key, cs[c].kernels, key, peaks[c], key, peaks[0] / peaks[c]);
    }
    if (bf16 && bf16_status == VLA_OK) {
        double hb = 0, fb = 0;
        for (int i = 0; i < NSHAPES; i++) {
            if (gflops_of(&default_shapes[i], bf16_best[i]) > hb) hb = gflops_of(&default_shapes[i], bf16_best[i]);
            if (gflops_of(&default_shapes[i], f32_call_best[i]) > fb) fb = gflops_of(&default_shapes[i], f32_call_best[i]);
        }
        printf(",\"bf16_peak_gflops\":%.2f,\"bf16_peak_over_f32\":%.3f", hb, fb > 0 ? hb / fb : 0.0);
    }
    printf("}\n");
    return 0;
}
