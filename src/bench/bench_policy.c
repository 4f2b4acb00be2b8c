/* bench_policy.c — `vla bench policy`: training throughput (forward,
 * backward and the AdamW step: samples/s and achieved GFLOP/s) and batch-1
 * action-chunk latency of whole policies, next to the SGEMM ceiling measured
 * in the same run, so MFU = achieved / peak is a measured ratio
 * (docs/design.md: numbers a user sees are measured), and next to the
 * PyTorch eager peer of the same architecture (tools/bench_torch_policy.py,
 * Debian's python3-torch) at the same batch and thread count, so the ratio
 * to what a LeRobot user runs is measured in the same run too. Policies are
 * created generically by config name; a config whose policy has no
 * implementation in this build prints a "skipped" line.
 *
 * FLOPs are model FLOPs: the forward's count from vla_loss_info.flops (every
 * matrix 2·in·out per token it touches, attention 4·pairs·heads·head_dim over
 * the pairs the mask allows) times the training multiplier of param_spec.h,
 * 1 + (gradients flow through the group) + (its weights train): 3 for a
 * model that trains everything, 1 for a frozen VLM's forward. The config's
 * shape-based estimate (vla_flops_estimate, max-length prompts) is printed
 * beside it.
 *
 * Each config's training is timed in rounds that alternate vla.c and the
 * peer and, with a list such as --threads=1,2, the thread counts; each keeps
 * its best round, so a machine whose speed drifts over minutes (shared
 * hosts) moves both sides of "vs_torch" and "vs_base_threads" alike. */
#include "bench/bench.h"
#include "cli/cli.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/rng.h"
#include "base/timer.h"
#include "distributed/comm.h"
#include "distributed/zero1.h"
#include "policy/policy.h"
#include "policy/memory.h"
#include "policy/precision.h"
#include "policy/synth_batch.h"
#include "tensor/backend.h"
#include "tensor/cpu/gemm.h"
#include "tensor/ops.h"
#include "tensor/profile.h"
#include "train/step.h"
#include "train/trainer_opt.h"
#ifdef VLA_HAVE_CUDA
#include "tensor/cuda/ops_cuda.h"
#endif

/* Best GEMM GFLOP/s through the op table over the square shapes of sizes
 * min_n..max_n (doubling), each timed `reps` times for at least `window`
 * seconds: sgemm for FP32, sgemm_q reading bf16 or FP8 operands (scale 1)
 * for the other modes — the ceiling of the precision a run trains in. The peak is a best case, so it gets time to show it: windows of
 * 0.03 s measured this 2-core box's single core 10-15% below what the
 * policies' own GEMMs then reached. */
static double gemm_peak_sizes(const vla_ops *ops, vla_precision mode, int64_t min_n, int64_t max_n, int reps,
                              double window) {
    double best = 0;
    vla_gemm_q q = {.mode = mode};
    float *one = NULL;
    if (mode == VLA_PREC_FP8) { /* the operands' scales, backend memory */
        const float s1 = 1.0f;
        if (!(one = ops->alloc(sizeof(float)))) return 0;
        ops->to_device(one, &s1, sizeof s1);
        q.a = (vla_fp8_operand){VLA_FP8_E4M3, one, NULL}, q.b = (vla_fp8_operand){VLA_FP8_E4M3, one, NULL};
    }
    for (int64_t n = min_n; n <= max_n; n *= 2) {
        float *a = ops->alloc(sizeof(float) * n * n), *b = ops->alloc(sizeof(float) * n * n);
        float *c = ops->alloc(sizeof(float) * n * n), *h = malloc(sizeof(float) * n * n);
        if (!a || !b || !c || !h) {
            if (a) ops->free(a);
            if (b) ops->free(b);
            if (c) ops->free(c);
            free(h);
            break;
        }
        /* operands through the table (the memory may be a device's) */
        for (int64_t j = 0; j < n * n; j++) h[j] = (float)((j * 7) % 13) * 0.01f;
        ops->to_device(a, h, sizeof(float) * n * n);
        for (int64_t j = 0; j < n * n; j++) h[j] = (float)((j * 5) % 11) * 0.01f;
        ops->to_device(b, h, sizeof(float) * n * n);
        free(h);
        ops->sgemm_q(&q, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        vla_ops_sync(ops);
        for (int rep = 0; rep < reps; rep++) {
            int iters = 0;
            double t0 = vla_now_s(), t;
            do { /* a device runs the products asynchronously: time what has finished */
                ops->sgemm_q(&q, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
                iters++;
                if (iters % 4 == 0) vla_ops_sync(ops);
                t = vla_now_s() - t0;
            } while (iters % 4 != 0 || t < window);
            double g = 2.0 * (double)n * n * n * iters / t * 1e-9;
            if (g > best) best = g;
        }
        ops->free(a), ops->free(b), ops->free(c);
    }
    if (one) ops->free(one);
    return best;
}

/* The best peak of the GEMM libraries in this process (tensor/cpu/gemm.h): MFU
 * is against the best the machine showed in the run, not only the
 * library the op table uses. */
static double gemm_peak_best(const vla_ops *ops, vla_precision mode, int64_t min_n, int64_t max_n, int reps,
                             double window) {
    vla_gemm_lib saved = vla_gemm_lib_active();
    double best = 0;
    for (int lib = 0; lib < VLA_GEMM_LIB_COUNT; lib++) {
        vla_gemm_lib_select((vla_gemm_lib)lib);
        double g = gemm_peak_sizes(ops, mode, min_n, max_n, reps, window);
        if (g > best) best = g;
    }
    vla_gemm_lib_select(saved);
    return best;
}

/* The peak printed first: sizes 256..2048, three windows of 0.1 s each. */
static double gemm_peak(const vla_ops *ops, vla_precision mode, bool quick) {
    return quick ? gemm_peak_best(ops, mode, 256, 512, 3, 0.03) : gemm_peak_best(ops, mode, 256, 2048, 3, 0.1);
}

/* The trainer's AdamW (ZeRO-1 with one shard) over the policy's trainable
 * tensors, the policy family's defaults, no EMA. */
vla_status vla_bench_optimizer(vla_policy *p, vla_comm *comm, vla_train_opt **opt) {
    vla_train_opt_overrides ov = {-1, -1, -1, 0};
    return vla_train_opt_create_for_policy(comm, p, &ov, opt);
}

#define MAX_THREAD_COUNTS 8

typedef struct {
    double seconds;
    int64_t batch, infer_reps;
    int n_counts;                        /* thread counts to measure, in the order given */
    int threads[MAX_THREAD_COUNTS];
    double peak[MAX_THREAD_COUNTS];      /* SGEMM GFLOP/s at each count, this run */
    const vla_ops *ops;
    vla_comm *comm;
    bool peer;
    const char *python;
    char torch_coretype[32]; /* OPENBLAS_CORETYPE of the second peer run ("": none) */
    int n_libs;              /* GEMM libraries timed in turn (--gemm), the first the base of vs_gemm_base */
    vla_gemm_lib libs[VLA_GEMM_LIB_COUNT];
    bool infer_only; /* no training step: every group frozen, so no gradient memory (the full-size presets) */
    bool quick;
    bool recompute;  /* --gradient_checkpointing (vla_policy.recompute_layers) */
    int rounds; /* alternating rounds when more than one thing is timed */
    vla_precision prec;               /* the mode being measured (policy/precision.h) */
    vla_precision precs[3];           /* --precision's list, in the order given */
    int n_precs;
    vla_fp8_recipe fp8;               /* TE's defaults, min_dim from --fp8.min_dim */
    int profile;                      /* --profile: steps (and chunks) run through the profiling table after timing */
    /* GFLOP/s ceiling of each mode other than FP32 (indexed by vla_precision)
     * at each thread count, measured in this run: the op table's bf16/FP8
     * GEMM on a CPU, cuBLASLt's bf16/FP8 tensor-core GEMM on cuda. FP32's is
     * peak[] (and the probes before each timing). */
    double prec_peak[MAX_THREAD_COUNTS][3];
} bench_opts;

/* One training step, the trainer's (train/step.h) on one micro-batch and
 * one rank: loss, backward, the NaN guard, AdamW and FP8's scale update.
 * info gets the step's loss and its forward's FLOPs and tokens. */
static vla_status train_step(vla_policy *p, const vla_batch *b, vla_train_opt *opt, vla_loss_info *info) {
    vla_train_step_in in = {.policy = p, .opt = opt, .batches = b, .n_batches = 1, .lr = 1e-5};
    vla_train_step_out out;
    VLA_TRY(vla_train_step(&in, &out));
    info->loss = out.loss, info->flops = out.flops, info->tokens = out.tokens;
    return VLA_OK;
}

/* Host waits per step of the last timing (ops.h, host_waits; -1: the
 * backend does not count them). The bench's own sync at the end is
 * not one of them. Printed as host_waits_per_step. */
static double last_waits_per_step = -1;
/* Operations issued per step of the last timing (ops.h, launches; -1: not counted). */
static double last_launches_per_step = -1;
/* cuda: attention plans built and uploaded per step of the last timing (the rest came from its cache; -1: n/a) */
static double last_plans_per_step = -1;
/* bf16/FP8 operand casts per step of the last timing (ops.h, VLA_STAT_OPERAND_CASTS; -1: not counted) */
static double last_casts_per_step = -1;

/* captured regions replayed per step of the last timing (a training step's, policy/groot.c; -1: not counted) */
static double last_replays_per_step = -1;

static int64_t attn_plan_builds(const vla_ops *ops) { return vla_ops_stat_of(ops, VLA_STAT_ATTN_PLAN_BUILDS); }
static int64_t operand_casts(const vla_ops *ops) { return vla_ops_stat_of(ops, VLA_STAT_OPERAND_CASTS); }

/* Seconds per training step over at least `seconds` (and two steps), the
 * steps run as `vla train` runs them between logged steps: each step's
 * results read while the next one runs (train/step.h, defer_result), the
 * device drained once, at the end. */
static vla_status time_steps(vla_policy *p, const vla_batch *b, vla_train_opt *opt, double seconds, double *per_step,
                             vla_loss_info *info) {
    int64_t steps = 0, w0 = p->tops->host_waits ? p->tops->host_waits() : 0;
    int64_t l0 = p->tops->launches ? p->tops->launches() : 0, b0 = attn_plan_builds(p->tops);
    int64_t c0 = operand_casts(p->tops), r0 = vla_ops_stat_of(p->tops, VLA_STAT_CAPTURED_REPLAYS);
    double t0 = vla_now_s(), el = 0;
    vla_train_step_in in = {.policy = p, .opt = opt, .batches = b, .n_batches = 1, .lr = 1e-5, .defer_result = true};
    vla_train_step_out out[2];
    while (steps < 2 || el < seconds) {
        vla_status st = vla_train_step(&in, &out[steps % 2]);
        if (st == VLA_OK && steps > 0) st = vla_train_step_finish(&in, &out[(steps - 1) % 2]); /* while this one runs */
        if (st != VLA_OK) { /* each open deferred read closed (ops.h: a few in flight per process) */
            vla_train_step_abandon(&in, &out[steps % 2]);
            if (steps > 0) vla_train_step_abandon(&in, &out[(steps - 1) % 2]);
            return st;
        }
        steps++;
        el = vla_now_s() - t0;
    }
    VLA_TRY(vla_train_step_finish(&in, &out[(steps - 1) % 2]));
    vla_ops_sync(p->tops); /* a device backend: the last step's kernels have finished */
    el = vla_now_s() - t0;
    const vla_train_step_out *last = &out[(steps - 1) % 2];
    info->loss = last->loss, info->flops = last->flops, info->tokens = last->tokens;
    *per_step = el / (double)steps;
    last_waits_per_step = p->tops->host_waits ? (double)(p->tops->host_waits() - w0) / (double)steps : -1;
    last_launches_per_step = p->tops->launches ? (double)(p->tops->launches() - l0) / (double)steps : -1;
    last_plans_per_step = b0 >= 0 ? (double)(attn_plan_builds(p->tops) - b0) / (double)steps : -1;
    last_casts_per_step = c0 >= 0 ? (double)(operand_casts(p->tops) - c0) / (double)steps : -1;
    last_replays_per_step =
        r0 >= 0 ? (double)(vla_ops_stat_of(p->tops, VLA_STAT_CAPTURED_REPLAYS) - r0) / (double)steps : -1;
    return VLA_OK;
}

/* Seconds per training step, timed for at least `seconds` after a warm-up step. */
vla_status vla_bench_time_training(vla_policy *p, const vla_batch *b, vla_train_opt *opt, double seconds,
                                   double *per_step, vla_loss_info *info) {
    VLA_TRY(train_step(p, b, opt, info)); /* first touch of the activation arena, OpenBLAS buffers */
    return time_steps(p, b, opt, seconds, per_step, info);
}

/* The PyTorch peer on the same config, batch and threads; samples/s, or 0
 * with a reason in `why`. Its trainable parameter count must equal ours
 * (`trainable`), so the ratio compares the same model. */
static double torch_peer(const vla_policy_config *cfg, int64_t trainable, int64_t batch, int threads, double seconds,
                         const char *python, const char *coretype, char *why, size_t why_cap) {
    char script[1024], cmd[4096], line[4096], env[64] = "";
    vla_bench_source_file("tools/bench_torch_policy.py", script, sizeof script);
    if (coretype && *coretype) snprintf(env, sizeof env, "OPENBLAS_CORETYPE=%s ", coretype); /* that process alone */
    snprintf(cmd, sizeof cmd, "%s'%s' '%s' --config '%s' --batch %lld --threads %d --seconds %g 2>&1", env, python,
             script, cfg->path, (long long)batch, threads, seconds);
    if (!vla_bench_run_peer(cmd, "\"samples_per_s\": ", line, sizeof line, why, why_cap)) return 0;
    double peer_params = vla_bench_peer_number(line, "\"trainable_params\": ");
    if (peer_params != (double)trainable) {
        snprintf(why, why_cap, "peer trains %.0f parameters, vla.c %lld: not the same model", peer_params,
                 (long long)trainable);
        return 0;
    }
    return vla_bench_peer_number(line, "\"samples_per_s\": ");
}

/* What one thread count measured. */
typedef struct {
    double per_step[VLA_GEMM_LIB_COUNT]; /* seconds per training step with each library of --gemm, best round */
    double peak;      /* best SGEMM GFLOP/s seen */
    double torch_sps; /* the peer's samples/s, best round; 0 when it gave none (why) */
    double torch_forced_sps; /* the same with OpenBLAS's core type forced in its process; 0: none */
    char why[300];
} count_result;

/* Training time per step at each thread count of the list: one warm-up
 * step, then --rounds rounds (3) that each time every count for seconds/rounds
 * and then run the PyTorch peer at that count for as long; each count keeps
 * its fastest round of each. One count: one round. So vla.c, the peer and
 * the thread counts are measured in the same minutes, in turn: this
 * machine's speed drifts by ±15% over minutes, which moved the ratios more
 * than the changes they were meant to show. Before each timing a 1024³
 * SGEMM probes the peak again (0.1 s): measured only at the start, a moment
 * of load there gave MFUs above 1. */
static vla_status time_training_counts(vla_policy *p, const vla_policy_config *cfg, const vla_batch *b,
                                       vla_train_opt *opt, const bench_opts *o, count_result *res,
                                       vla_loss_info *info) {
    int rounds = o->n_counts * o->n_libs > 1 || o->peer ? o->rounds : 1;
    bool peer = o->peer;
    omp_set_num_threads(o->threads[0]);
    VLA_TRY(train_step(p, b, opt, info)); /* first touch of the activation arena, OpenBLAS buffers */
    for (int i = 0; i < o->n_counts; i++) {
        res[i] = (count_result){{0}, o->peak[i], 0, 0, ""};
        for (int l = 0; l < o->n_libs; l++) res[i].per_step[l] = 1e30;
    }
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < o->n_counts; i++) {
            double t, g;
            omp_set_num_threads(o->threads[i]);
            g = o->quick ? 0 : gemm_peak_best(o->ops, VLA_PREC_FP32, 1024, 1024, 1, 0.1);
            if (g > res[i].peak) res[i].peak = g;
            for (int l = 0; l < o->n_libs; l++) { /* each GEMM library in turn (tensor/cpu/gemm.h) */
                vla_gemm_lib_select(o->libs[l]);
                vla_status st = time_steps(p, b, opt, o->seconds / rounds, &t, info);
                vla_gemm_lib_select(o->libs[0]);
                VLA_TRY(st);
                if (t < res[i].per_step[l]) res[i].per_step[l] = t;
            }
            if (!peer) continue;
            char why[300] = "";
            double sps = torch_peer(cfg, p->n_grad_floats, o->batch, o->threads[i], o->seconds / rounds, o->python,
                                    NULL, why, sizeof why);
            if (sps > res[i].torch_sps) res[i].torch_sps = sps;
            if (sps > 0 && o->torch_coretype[0]) { /* the peer again, its OpenBLAS at its best core type */
                char why2[300];
                double f = torch_peer(cfg, p->n_grad_floats, o->batch, o->threads[i], o->seconds / rounds, o->python,
                                      o->torch_coretype, why2, sizeof why2);
                if (f > res[i].torch_forced_sps) res[i].torch_forced_sps = f;
            }
            if (sps <= 0) { /* no peer figure for any count: say why on every line */
                peer = false;
                for (int j = 0; j < o->n_counts; j++) {
                    res[j].torch_sps = 0;
                    snprintf(res[j].why, sizeof res[j].why, "%s", why);
                }
            }
        }
    return VLA_OK;
}

/* The policy_train line for thread count index `ti` and GEMM library index
 * `li`; base_per_step > 0 adds the ratio to the first thread count of the
 * list, gemm_base_per_step > 0 the ratio to the first library of --gemm,
 * first_prec_per_step > 0 the ratio to the first mode of --precision. */
static void print_train(const char *name, const vla_policy *p, const bench_opts *o, int ti, int li, const vla_synth_batch *s,
                        const vla_loss_info *info, double per_step, double base_per_step, double gemm_base_per_step,
                        double peak, double torch_sps, double torch_forced_sps, const char *why,
                        double first_prec_per_step) {
    vla_flops_estimate est;
    vla_flops_estimate_compute(&p->cfg, &p->specs, &est);
    /* the measured forward split by group as the estimate splits it (see the top of the file) */
    double mult = est.total_forward > 0 ? est.total_train / est.total_forward : 3.0;
    double train_flops = mult * info->flops;
    double achieved = train_flops / per_step * 1e-9, sps = (double)o->batch / per_step;
    /* one MFU: against the ceiling of the precision this run trained in
     * (SGEMM for fp32; bf16/FP8 GEMMs otherwise), printed as peak_tflops */
    double mfu_peak = o->prec == VLA_PREC_FP32 ? peak : o->prec_peak[ti][o->prec];
    printf("{\"bench\":\"policy_train\",\"config\":\"%s\",\"policy\":\"%s\",\"backend\":\"%s\",\"precision\":\"%s\","
           "\"threads\":%d,\"batch\":%lld,\"tokens\":%lld,\"ms_per_step\":%.3f,\"samples_per_s\":%.2f,"
           "\"gflop_per_step\":%.4f,\"estimate_gflop_per_step\":%.4f,\"achieved_gflops\":%.3f,"
           "\"gemm_peak_gflops\":%.2f,\"mfu\":%.4f,\"peak_tflops\":%.4f,\"peak_precision\":\"%s\",\"loss\":%.5f",
           name, p->ops->name, o->ops->name, vla_precision_name(o->prec), o->threads[ti], (long long)o->batch,
           (long long)s->b.n_tokens,
           per_step * 1e3, sps, train_flops * 1e-9, est.total_train * (double)o->batch * 1e-9, achieved, peak,
           mfu_peak > 0 ? achieved / mfu_peak : 0.0, mfu_peak * 1e-3, vla_precision_name(o->prec), info->loss);
    /* activation memory: what the batch costs beside the weights and optimizer state */
    printf(",\"act_gib\":%.6g,\"gradient_checkpointing\":%s", (double)p->act_peak_bytes / (1 << 30),
           o->recompute ? "true" : "false");
    /* the same step measured on the meta backend sized as this one (policy/memory.h), the same prompts: what
     * `vla policy info` and `vla plan` report, against the arenas of the run (a device run checks the cuda
     * sizing) */
    vla_memory_opts mo = {.sized_as = o->ops->name, .precision = o->prec, .fp8 = &o->fp8,
                          .batch = (int32_t)o->batch, .recompute = o->recompute, .short_prompt = true};
    vla_memory_use mu;
    if (vla_policy_memory_measure(&p->cfg, &mo, &mu) == VLA_OK)
        printf(",\"act_gib_measured\":%.6g", (double)mu.activations / (1 << 30));
    else
        vla_error_clear();
    if (last_waits_per_step >= 0) printf(",\"host_waits_per_step\":%.2f", last_waits_per_step);
    if (last_launches_per_step >= 0) printf(",\"launches_per_step\":%.1f", last_launches_per_step);
    if (last_plans_per_step >= 0) printf(",\"attn_plans_built_per_step\":%.1f", last_plans_per_step);
    if (last_casts_per_step >= 0) printf(",\"operand_casts_per_step\":%.1f", last_casts_per_step);
    if (last_replays_per_step >= 0) printf(",\"graph_replays_per_step\":%.2f", last_replays_per_step);
    int64_t used = vla_ops_stat_of(p->tops, VLA_STAT_DEVICE_USED_BYTES); /* after the timed steps: graphs' too */
    if (used >= 0) printf(",\"device_used_gib\":%.3f", (double)used / (1 << 30));
    if (o->prec == VLA_PREC_FP8 && p->prec) /* which block linears read FP8 (the rest bf16: --fp8.min_dim) */
        printf(",\"fp8_min_dim\":%lld,\"fp8_linears\":%lld,\"block_linears\":%lld", (long long)o->fp8.min_dim,
               (long long)p->prec->n_fp8, (long long)p->prec->n_linears);
    if (base_per_step > 0)
        printf(",\"base_threads\":%d,\"vs_base_threads\":%.3f", o->threads[0], base_per_step / per_step);
    if (o->ops->device == VLA_DEVICE_CPU) /* the CPU GEMM library (a device backend has its own) */
        printf(",\"gemm\":\"%s\"", vla_gemm_lib_name(o->libs[li]));
    if (gemm_base_per_step > 0)
        printf(",\"gemm_base\":\"%s\",\"vs_gemm_base\":%.3f", vla_gemm_lib_name(o->libs[0]),
               gemm_base_per_step / per_step);
    if (first_prec_per_step > 0) /* several modes timed in alternating rounds: speed relative to the first */
        printf(",\"base_precision\":\"%s\",\"vs_base_precision\":%.3f", vla_precision_name(o->precs[0]),
               first_prec_per_step / per_step);
    if (torch_sps > 0) {
        printf(",\"torch_samples_per_s\":%.3f,\"vs_torch\":%.3f", torch_sps, sps / torch_sps);
        if (torch_forced_sps > 0)
            printf(",\"torch_coretype_forced\":\"%s\",\"torch_forced_samples_per_s\":%.3f,\"vs_torch_forced\":%.3f",
                   o->torch_coretype, torch_forced_sps, sps / torch_forced_sps);
    } else if (o->peer) {
        printf(",\"torch_skipped\":\"");
        vla_cli_print_json_chars(why);
        printf("\"");
    }
    printf("}\n");
    fflush(stdout);
}

/* The process's peak resident memory so far. */
static double peak_rss_gib(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / (1024.0 * 1024.0) : 0.0; /* ru_maxrss: KiB */
}

/* The profile of `n` more training steps or chunks (tensor/profile.h), after
 * the timing: a "policy_profile" line, and the table on stderr. */
static void print_profile(const char *name, const vla_policy *p, const bench_opts *o, const char *what, int64_t batch,
                          const vla_profile *prof) {
    printf("{\"bench\":\"policy_profile\",\"config\":\"%s\",\"policy\":\"%s\",\"backend\":\"%s\","
           "\"precision\":\"%s\",\"what\":\"%s\",\"batch\":%lld,\"per\":%d,",
           name, p->ops->name, o->ops->name, vla_precision_name(o->prec), what, (long long)batch, o->profile);
    vla_profile_print_json_members(stdout, prof, o->profile, 12);
    printf("}\n");
    fflush(stdout);
    fprintf(stderr, "%s, %s %s, %s batch %lld:\n", name, o->ops->name, vla_precision_name(o->prec), what,
            (long long)batch);
    vla_profile_print_table(stderr, prof, o->profile, !strncmp(what, "train_step", 10) ? "step" : "chunk", 15);
    if (strstr(what, "regions_whole"))
        fprintf(stderr, "  (each captured region timed whole, as the backend runs it: one run_captured row per call)\n");
}

static vla_status profile_training(const char *name, vla_policy *p, const vla_batch *b, vla_train_opt *opt,
                                   const bench_opts *o) {
    if (o->profile <= 0) return VLA_OK;
    vla_loss_info info;
    vla_profile prof;
    vla_profile_start();
    vla_status st = VLA_OK;
    for (int i = 0; i < o->profile && st == VLA_OK; i++) st = train_step(p, b, opt, &info);
    VLA_TRY(vla_profile_stop(&prof));
    if (st == VLA_OK) print_profile(name, p, o, "train_step", o->batch, &prof);
    vla_profile_free(&prof);
    /* the same steps with each captured region timed whole (policy/groot.c, "a training step's captured
     * regions"): on a device what a step costs with its graphs, and its launches */
    if (st == VLA_OK) {
        vla_profile_start_whole_regions();
        for (int i = 0; i < o->profile && st == VLA_OK; i++) st = train_step(p, b, opt, &info);
        VLA_TRY(vla_profile_stop(&prof));
        if (st == VLA_OK) print_profile(name, p, o, "train_step_regions_whole", o->batch, &prof);
        vla_profile_free(&prof);
    }
    return st;
}

/* Batch-1 inference: one action chunk from one observation, as a server
 * runs it — the weights held over every chunk (vla serve holds them for its
 * life), so the warm-up casts them and the timed chunks reuse the casts. */
static vla_status bench_infer(const char *name, vla_policy *p, const bench_opts *o, int ti, const vla_synth_batch *s) {
    const vla_policy_config *cfg = &p->cfg;
    const char *tasks[1] = {VLA_SYNTH_TASK};
    vla_observation ob = {0};
    ob.n_samples = 1, ob.task = tasks, ob.images = s->images, ob.state = s->state, ob.seed = 3;
    float *act = calloc((size_t)(cfg->action.horizon * cfg->action.action_dim), sizeof(float));
    if (!act) return vla_error(VLA_ERR_NOMEM, "bench policy: out of memory");
    vla_policy_weights_hold(p);
    vla_status st = vla_policy_sample_actions(p, &ob, act); /* warm-up */
    double best = 1e30, sum = 0;
    int64_t w0 = p->tops->host_waits ? p->tops->host_waits() : 0, l0 = p->tops->launches ? p->tops->launches() : 0;
    int64_t b0 = attn_plan_builds(p->tops);
    int64_t r0 = vla_ops_stat_of(p->tops, VLA_STAT_CAPTURED_REPLAYS);
    for (int64_t i = 0; i < o->infer_reps && st == VLA_OK; i++) {
        double a = vla_now_s();
        st = vla_policy_sample_actions(p, &ob, act);
        double d = vla_now_s() - a;
        sum += d;
        if (d < best) best = d;
    }
    double waits = p->tops->host_waits ? (double)(p->tops->host_waits() - w0) / (double)o->infer_reps : -1;
    double launches = p->tops->launches ? (double)(p->tops->launches() - l0) / (double)o->infer_reps : -1;
    double plans = b0 >= 0 ? (double)(attn_plan_builds(p->tops) - b0) / (double)o->infer_reps : -1;
    /* chunks whose flow steps ran as one recorded graph (policy/flow.h; VLA_CUDA_GRAPHS=0: none) */
    double replayed = r0 >= 0 ? (double)(vla_ops_stat_of(p->tops, VLA_STAT_CAPTURED_REPLAYS) - r0) / (double)o->infer_reps : -1;
    vla_profile prof = {0}, whole = {0};
    if (st == VLA_OK && o->profile > 0) { /* the same chunks again, op by op (graphs off while profiled) */
        vla_profile_start();
        for (int i = 0; i < o->profile && st == VLA_OK; i++) st = vla_policy_sample_actions(p, &ob, act);
        vla_status ps = vla_profile_stop(&prof);
        if (st == VLA_OK) st = ps;
        /* and with each captured region timed whole, the backend's way (cuda: a graph replay) */
        if (st == VLA_OK) vla_profile_start_whole_regions();
        for (int i = 0; i < o->profile && st == VLA_OK; i++) st = vla_policy_sample_actions(p, &ob, act);
        ps = vla_profile_stop(&whole);
        if (st == VLA_OK) st = ps;
    }
    vla_policy_weights_release(p);
    free(act);
    if (st != VLA_OK) vla_profile_free(&prof), vla_profile_free(&whole);
    VLA_TRY(st);
    vla_flops_estimate est;
    vla_flops_estimate_compute(cfg, &p->specs, &est);
    printf("{\"bench\":\"policy_infer\",\"config\":\"%s\",\"policy\":\"%s\",\"backend\":\"%s\",\"precision\":\"%s\","
           "\"threads\":%d,\"batch\":1,\"horizon\":%lld,\"flow_steps\":%lld,\"reps\":%lld,\"best_ms\":%.3f,\"mean_ms\":%.3f,"
           "\"estimate_gflop\":%.5f,\"weight_gib\":%.6g,\"peak_rss_gib\":%.6g",
           name, p->ops->name, o->ops->name, vla_precision_name(o->prec), o->threads[ti], (long long)cfg->action.horizon,
           (long long)cfg->flow.steps,
           (long long)o->infer_reps, best * 1e3, sum / (double)o->infer_reps * 1e3, est.sample * 1e-9,
           (double)p->n_weight_floats * 4.0 / (1 << 30), peak_rss_gib());
    /* waits for the backend per chunk (ops.h, host_waits): reading the chunk back is one */
    if (waits >= 0) printf(",\"host_waits_per_chunk\":%.2f", waits);
    if (launches >= 0) printf(",\"launches_per_chunk\":%.1f", launches);
    if (plans >= 0) printf(",\"attn_plans_built_per_chunk\":%.1f", plans);
    if (replayed >= 0) printf(",\"graph_replays_per_chunk\":%.2f", replayed);
    printf("}\n");
    fflush(stdout);
    if (o->profile > 0) print_profile(name, p, o, "chunk", 1, &prof);
    if (o->profile > 0) print_profile(name, p, o, "chunk_regions_whole", 1, &whole);
    vla_profile_free(&prof), vla_profile_free(&whole);
    return VLA_OK;
}

/* --threads: a comma-separated list of positive counts, 0 meaning `all`;
 * false (after saying why) when it is not one. */
static bool parse_thread_counts(const char *text, int all, bench_opts *o) {
    const char *p = text;
    o->n_counts = 0;
    while (*p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 4096 || (*end && *end != ',') || o->n_counts == MAX_THREAD_COUNTS) {
            fprintf(stderr, "vla: error: --threads=%s: expected up to %d non-negative counts separated by commas, "
                            "e.g. --threads=1,2\n", text, MAX_THREAD_COUNTS);
            return false;
        }
        int t = v == 0 ? all : (int)v;
        bool seen = false;
        for (int i = 0; i < o->n_counts; i++) seen = seen || o->threads[i] == t;
        if (!seen) o->threads[o->n_counts++] = t; /* 1,0 on a one-core machine is one count */
        p = *end ? end + 1 : end;
    }
    if (o->n_counts == 0) o->threads[o->n_counts++] = all;
    return true;
}

/* On a device: the training step measured before anything is allocated (policy/memory.h: this batch's
 * prompts; the optimizer's state beside it, vla_zero1_budget_bytes) — a step that cannot fit is refused at once, as running out of
 * memory would refuse it a minute later (gpu_check's retries read "out of" either way). A backend with no
 * free-memory figure (cpu; checked unless given a capacity) and an unmeasurable step: go on. */
static vla_status fits_device(const vla_policy_config *cfg, const bench_opts *o) {
    int64_t free_b = vla_ops_stat_of(o->ops, VLA_STAT_DEVICE_FREE_BYTES);
    if (free_b < 0) return VLA_OK;
    vla_memory_opts mo = {.sized_as = o->ops->name, .precision = o->prec, .fp8 = &o->fp8,
                          .batch = (int32_t)o->batch, .recompute = o->recompute, .short_prompt = true};
    bool fits = true;
    char say[1024];
    if (vla_policy_memory_fit(cfg, &mo, (double)free_b, vla_zero1_budget_bytes(1, 1, false), "--batch", &fits, say,
                              sizeof say) != VLA_OK)
        return vla_error_clear(), VLA_OK;
    if (fits) return VLA_OK;
    return vla_error(VLA_ERR_NOMEM, "out of device memory, measured before allocating: %s", say);
}

static int bench_one(const char *name, const bench_opts *o) {
    vla_policy_config cfg;
    vla_status st = vla_policy_config_load(name, &cfg);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (o->infer_only)
        for (int g = 0; g < VLA_GROUP_COUNT; g++) cfg.frozen[g] = true;
    if (!o->infer_only && (st = fits_device(&cfg, o)) != VLA_OK) return vla_cli_fail(st);
    vla_policy *p = NULL;
    const vla_ops *pops = o->ops; /* --profile: the profiling table, forwarding until a profile starts */
    if (o->profile > 0 && (st = vla_profile_wrap(o->ops, &pops)) != VLA_OK) return vla_cli_fail(st);
    st = vla_policy_create(&cfg, pops, &p);
    if (st == VLA_OK) p->recompute_layers = o->recompute;
    if (st == VLA_ERR_UNSUPPORTED) {
        printf("{\"bench\":\"policy\",\"config\":\"%s\",\"skipped\":\"no implementation of policy '%s' in this "
               "build\"}\n",
               name, vla_policy_config_family_name(&cfg));
        fflush(stdout);
        vla_error_clear();
        return 0;
    }
    if (st != VLA_OK) return vla_cli_fail(st);
    vla_synth_batch s = {0};
    vla_train_opt *opt = NULL;
    vla_loss_info info = {0};
    count_result res[MAX_THREAD_COUNTS];
    st = vla_policy_init_weights(p, 1);
    if (st == VLA_OK) st = vla_synth_batch_make(p, o->infer_only ? 1 : (int32_t)o->batch, false, &s);
    if (!o->infer_only && st == VLA_OK) st = vla_bench_optimizer(p, o->comm, &opt);
    if (!o->infer_only && o->n_precs == 1) {
        if (st == VLA_OK) st = vla_policy_set_precision(p, o->prec, &o->fp8);
        if (st == VLA_OK) st = time_training_counts(p, &cfg, &s.b, opt, o, res, &info);
        for (int i = 0; i < o->n_counts && st == VLA_OK; i++)
            for (int l = 0; l < o->n_libs; l++)
                print_train(name, p, o, i, l, &s, &info, res[i].per_step[l], i > 0 ? res[0].per_step[l] : 0,
                            l > 0 ? res[i].per_step[0] : 0, res[i].peak, res[i].torch_sps, res[i].torch_forced_sps,
                            res[i].why, 0);
        if (st == VLA_OK) st = profile_training(name, p, &s.b, opt, o); /* at the last thread count */
    } else if (!o->infer_only) { /* several modes: alternating rounds on one thread count, each its best */
        double best[3] = {1e30, 1e30, 1e30}, peak = o->peak[0];
        vla_loss_info pinfo[3];
        omp_set_num_threads(o->threads[0]);
        for (int r = 0; r < o->rounds && st == VLA_OK; r++)
            for (int m = 0; m < o->n_precs && st == VLA_OK; m++) {
                double t;
                st = vla_policy_set_precision(p, o->precs[m], &o->fp8); /* FP8: scales from 1, as a new run */
                if (st == VLA_OK && r == 0) st = train_step(p, &s.b, opt, &pinfo[m]); /* first touch */
                if (st == VLA_OK) st = time_steps(p, &s.b, opt, o->seconds / o->rounds, &t, &pinfo[m]);
                if (st == VLA_OK && t < best[m]) best[m] = t;
            }
        for (int m = 0; m < o->n_precs && st == VLA_OK; m++) {
            bench_opts om = *o;
            om.prec = o->precs[m];
            print_train(name, p, &om, 0, 0, &s, &pinfo[m], best[m], 0, 0, peak, 0, 0, "", m > 0 ? best[0] : 0);
        }
        for (int m = 0; m < o->n_precs && st == VLA_OK && o->profile > 0; m++) { /* each mode's profile */
            bench_opts om = *o;
            om.prec = o->precs[m];
            st = vla_policy_set_precision(p, om.prec, &o->fp8);
            if (st == VLA_OK) st = train_step(p, &s.b, opt, &pinfo[m]); /* its casts and scales settled */
            if (st == VLA_OK) st = profile_training(name, p, &s.b, opt, &om);
        }
    }
    for (int m = 0; m < o->n_precs && st == VLA_OK; m++) {
        bench_opts om = *o;
        om.prec = o->precs[m];
        st = vla_policy_set_precision(p, om.prec, &o->fp8);
        for (int i = 0; i < o->n_counts && st == VLA_OK; i++) {
            omp_set_num_threads(o->threads[i]);
            st = bench_infer(name, p, &om, i, &s);
        }
    }
    vla_train_opt_free(opt);
    vla_synth_batch_free(&s);
    vla_policy_free(p);
    if (o->profile > 0) vla_profile_unwrap();
    return st == VLA_OK ? 0 : vla_cli_fail(st);
}

int vla_bench_policy(int argc, char **argv) {
    static const char default_python[] = "/usr/bin/python3";
    const char *configs = "pi05-tiny,groot-tiny", *python = default_python, *threads = NULL;
    const char *torch_coretype = "auto", *gemm_list = NULL;
    const char *device = vla_backend_default_name();
    int64_t batch = 8, reps = 10, rounds = 3;
    double seconds = 2.0;
    bool quick = false, no_peer = false, infer_only = false, recompute = false;
    const char *precision = "fp32";
    int64_t fp8_min_dim = 0, profile = 0;
    const vla_flag flags[] = {
        {"config", VLA_FLAG_STRING, &configs, "A,B", "comma-separated config names or paths"},
        {"batch", VLA_FLAG_INT, &batch, "N", "samples per training step"},
        {"seconds", VLA_FLAG_FLOAT, &seconds, "S", "time spent timing training steps per config"},
        {"reps", VLA_FLAG_INT, &reps, "N", "timed batch-1 sample_actions calls"},
        {"threads", VLA_FLAG_STRING, &threads, "N[,N...]",
         "OpenMP threads (0: all cores); a list such as 1,2 times each count in alternating rounds and adds each "
         "count's ratio to the first (vs_base_threads); default 1,0 (one thread and all cores; with "
         "--infer_only, all cores)"},
        {"rounds", VLA_FLAG_INT, &rounds, "N",
         "rounds alternating vla.c's thread counts and GEMM libraries and the peer (each keeps its best round)"},
        {"quick", VLA_FLAG_BOOL, &quick, NULL,
         "short run (smoke test): a quick GEMM peak, no PyTorch peer unless --python names one"},
        {"device", VLA_FLAG_STRING, &device, "NAME", VLA_CLI_DEVICE_HELP},
        {"precision", VLA_FLAG_STRING, &precision, "fp32|bf16|fp8[,...]",
         "how the transformer blocks' large linears run, as `vla train --precision` (FP8: TE's default recipe, the "
         "scale update in every step); a list such as fp32,bf16,fp8 times the modes in alternating rounds on one "
         "thread count and adds each one's speed relative to the first (vs_base_precision); the PyTorch peer is "
         "f32 and runs only with fp32 alone (default fp32)"},
        {"fp8.min_dim", VLA_FLAG_INT, &fp8_min_dim, "N",
         "with fp8: block linears with in or out features below N read bf16 (as `vla train --fp8.min_dim`; "
         "default 0: all in FP8)"},
        {"no-peer", VLA_FLAG_BOOL, &no_peer, NULL, "skip the PyTorch eager peer (tools/bench_torch_policy.py)"},
        {"python", VLA_FLAG_STRING, &python, "EXE", "interpreter with python3-torch for the peer"},
        {"gemm", VLA_FLAG_STRING, &gemm_list, "LIB[,LIB]",
         "GEMM libraries timed in turn in the same rounds (onednn, openblas; default: the one in use, VLA_GEMM); "
         "lines after the first library's add vs_gemm_base"},
        {"torch_coretype", VLA_FLAG_STRING, &torch_coretype, "auto|none|NAME",
         "run the peer a second time with OPENBLAS_CORETYPE set in its process alone (auto: the best core type "
         "the CPU's features allow, as bench gemm picks it); \"vs_torch_forced\""},
        {"gradient_checkpointing", VLA_FLAG_BOOL, &recompute, NULL,
         "train as `vla train --gradient_checkpointing` (each layer's forward again in backward); \"act_gib\" "
         "shows the activation memory either way"},
        {"profile", VLA_FLAG_INT, &profile, "N",
         "after each timing, N more training steps (and N chunks) through the profiling table: a "
         "\"policy_profile\" line per timing (time, calls and TFLOP/s per op, per step or chunk) and the table on "
         "stderr; on cuda each op is timed on the device's clock and captured regions run op by op "
         "(tensor/profile.h); default 0: none"},
        {"infer_only", VLA_FLAG_BOOL, &infer_only, NULL,
         "only the batch-1 inference line, every group frozen so no gradient memory is allocated (what a full-size "
         "preset needs on a 24 GiB machine); it adds the weights' and the process's peak memory"},
    };
    const vla_command_spec spec = {
        "vla bench policy", NULL, "Training samples/s, GFLOP/s and MFU, and batch-1 inference latency of policies.",
        "Prints {\"bench\":\"gemm_peak\"} (measured first, in this run), then per config a \"policy_train\" line "
        "(forward + backward + AdamW; with the PyTorch eager peer's samples/s at the same batch and threads and "
        "the ratio, \"vs_torch\"; one \"mfu\" against the ceiling of the precision it trained in, printed as "
        "\"peak_tflops\": for fp32 the best SGEMM seen, the first peak or a probe before each timing round; for "
        "bf16/fp8 that precision's GEMM peak, measured first) and a \"policy_infer\" line, or a \"skipped\" line when the policy has no implementation in this "
        "build.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (batch < 1 || reps < 1 || rounds < 1 || seconds < 0) {
        fprintf(stderr, "vla: error: --batch, --reps and --rounds must be positive, --seconds non-negative\n");
        return 2;
    }
    if (quick) seconds = seconds < 0.3 ? seconds : 0.3, reps = reps < 3 ? reps : 3, batch = batch < 4 ? batch : 4;
    const vla_ops *dev;
    vla_status dst = vla_backend_get(device, &dev);
    if (dst != VLA_OK) return vla_cli_fail(dst);
    vla_precision precs[3];
    int n_precs = 0;
    for (const char *q = precision; *q;) { /* each mode once, in the order given */
        char one[16];
        size_t n = strcspn(q, ",");
        snprintf(one, sizeof one, "%.*s", (int)(n < 15 ? n : 15), q);
        vla_precision m;
        if (vla_precision_parse(one, &m) != VLA_OK) {
            n_precs = 0;
            break;
        }
        bool dup = false;
        for (int i = 0; i < n_precs; i++) dup = dup || precs[i] == m;
        if (!dup) precs[n_precs++] = m; /* three modes exist: at most three distinct */
        q += n + (q[n] == ',');
    }
    if (n_precs == 0) {
        fprintf(stderr, "vla: error: vla bench policy: --precision=%s: give fp32, bf16 or fp8, or a list of them such "
                        "as fp32,bf16,fp8\n", precision);
        return 2;
    }
    /* a smoke run skips the peer, unless its interpreter was named: then the
     * peer's handling (its failures, its figures) is what is being smoked */
    bool peer_wanted = !no_peer && !infer_only && (!quick || python != default_python);
    if ((n_precs > 1 || precs[0] != VLA_PREC_FP32) && peer_wanted)
        peer_wanted = false; /* the peer is f32 alone: no pair to compare */
    bench_opts o = {.seconds = seconds, .batch = batch, .infer_reps = reps, .ops = dev,
                    .peer = peer_wanted, .python = python, .infer_only = infer_only,
                    .quick = quick, .recompute = recompute, .rounds = rounds < 1 ? 1 : (int)rounds,
                    .prec = precs[0], .n_precs = n_precs};
    for (int i = 0; i < n_precs; i++) o.precs[i] = precs[i];
    vla_fp8_recipe_default(&o.fp8);
    if (fp8_min_dim < 0 || fp8_min_dim > (1 << 20)) {
        fprintf(stderr, "vla: error: vla bench policy: --fp8.min_dim=%lld: give 0 to %d\n", (long long)fp8_min_dim,
                1 << 20);
        return 2;
    }
    o.fp8.min_dim = fp8_min_dim;
    if (profile < 0 || profile > 1000) {
        fprintf(stderr, "vla: error: vla bench policy: --profile=%lld: give 0 (none) to 1000 steps\n", (long long)profile);
        return 2;
    }
    o.profile = (int)profile;
    o.libs[o.n_libs++] = vla_gemm_lib_active();
    if (gemm_list) {
        o.n_libs = 0;
        char *copy = strdup(gemm_list), *save = NULL;
        if (!copy) return 1;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            vla_gemm_lib lib;
            if (vla_gemm_lib_parse(tok, &lib) != VLA_OK || o.n_libs == VLA_GEMM_LIB_COUNT) {
                fprintf(stderr, "vla: error: --gemm=%s: expected onednn, openblas or both, separated by a comma\n",
                        gemm_list);
                free(copy);
                return 2;
            }
            o.libs[o.n_libs++] = lib;
        }
        free(copy);
        if (o.n_libs == 0) o.libs[o.n_libs++] = vla_gemm_lib_active();
        vla_gemm_lib_select(o.libs[0]);
    }
    if (!strcmp(torch_coretype, "auto")) {
        char best[1][32];
        if (vla_bench_openblas_coretypes(best, 1) == 1) snprintf(o.torch_coretype, sizeof o.torch_coretype, "%s", best[0]);
    } else if (strcmp(torch_coretype, "none") != 0) {
        char one[1][32];
        if (vla_bench_parse_coretypes("torch_coretype", torch_coretype, one, 1) != 1) return 2;
        snprintf(o.torch_coretype, sizeof o.torch_coretype, "%s", one[0]);
    }
    /* default: training scales from one core to all of them, so show both and their ratio */
    if (!threads) threads = infer_only || n_precs > 1 ? "0" : "1,0";
    if (!parse_thread_counts(threads, omp_get_max_threads(), &o)) return 2;
    if (n_precs > 1 && o.n_counts > 1) {
        fprintf(stderr, "vla: error: vla bench policy: --precision=%s times its modes against each other on one "
                        "thread count; give one --threads count\n", precision);
        return 2;
    }
    for (int i = 0; i < o.n_counts; i++) {
        omp_set_num_threads(o.threads[i]);
        o.peak[i] = gemm_peak(o.ops, VLA_PREC_FP32, quick);
        printf("{\"bench\":\"gemm_peak\",\"backend\":\"%s\",\"threads\":%d,\"precision\":\"fp32\","
               "\"gflops\":%.2f}\n", o.ops->name, o.threads[i], o.peak[i]);
        fflush(stdout);
        /* the ceiling of every other mode measured (MFU is against the
         * precision a run trains in) */
        for (int m = 0; m < n_precs; m++) {
            vla_precision pm = precs[m];
            if (pm == VLA_PREC_FP32) continue;
            if (o.ops->device == VLA_DEVICE_CUDA) {
#ifdef VLA_HAVE_CUDA
                double tf = 0; /* cuBLASLt's tensor cores, one measurement for every thread count */
                vla_status pst = i > 0 ? VLA_OK
                                       : vla_cuda_gemm_peak(pm == VLA_PREC_BF16 ? VLA_BF16 : VLA_F8E4M3,
                                                            quick ? 2048 : 8192, quick ? 5 : 20, 3, &tf);
                if (pst != VLA_OK) return vla_cli_fail(pst);
                o.prec_peak[i][pm] = i > 0 ? o.prec_peak[0][pm] : tf * 1e3;
#endif
            } else {
                o.prec_peak[i][pm] = gemm_peak(o.ops, pm, quick);
            }
            printf("{\"bench\":\"gemm_peak\",\"backend\":\"%s\",\"threads\":%d,\"precision\":\"%s\","
                   "\"gflops\":%.2f", o.ops->name, o.threads[i], vla_precision_name(pm), o.prec_peak[i][pm]);
#ifdef VLA_HAVE_CUDA
            if (o.ops->device == VLA_DEVICE_CUDA) {
                printf(",\"device\":\"");
                vla_cli_print_json_chars(vla_cuda_device_info());
                printf("\"");
            }
#endif
            printf("}\n");
            fflush(stdout);
        }
    }
    vla_status st = vla_comm_init(NULL, &o.comm);
    if (st != VLA_OK) return vla_cli_fail(st);
    char *list = strdup(configs);
    if (!list) return 1;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        rc = bench_one(tok, &o);
        if (rc) break;
    }
    free(list);
    vla_comm_finalize(o.comm);
    return rc;
}
