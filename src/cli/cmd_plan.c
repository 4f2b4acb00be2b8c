/* cmd_plan.c — `vla plan`: predict data-parallel step time, communication
 * time (total and exposed) and MFU at N GPUs from the α-β ring model of
 * distributed/plan.h, with the compute per GPU either given (--compute-ms, measured)
 * or derived from FLOPs, peak TFLOP/s and the kernels' efficiency. */
#include "cli/cli.h"
#include "base/json.h"
#include "distributed/plan.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* A flag left at this value was not given. */
#define UNSET (-1.0)

static void take(double *dst, double flag) {
    if (flag != UNSET) *dst = flag;
}

static vla_status apply_config(const char *path, vla_plan_input *in) {
    json_t *j;
    VLA_TRY(vla_json_load_file(path, &j));
    static const char *keys[] = {"params", "tokens_per_sample", "flops_per_sample", "batch", "peak_tflops",
                                 "mfu_compute", "compute_ms"};
    double *dst[] = {&in->params, &in->tokens_per_sample, &in->flops_per_sample, &in->batch, &in->peak_tflops,
                     &in->mfu_compute, &in->compute_ms};
    /* keys may sit at the top level or under "plan" */
    json_t *obj = json_object_get(j, "plan");
    if (!json_is_object(obj)) obj = j;
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(obj, keys[i]);
        if (!v) continue;
        if (!json_is_number(v)) {
            json_decref(j);
            return vla_error(VLA_ERR_FORMAT, "%s: '%s' must be a number", path, keys[i]);
        }
        *dst[i] = json_number_value(v);
    }
    json_decref(j);
    return VLA_OK;
}

int vla_cmd_plan(int argc, char **argv) {
    int64_t gpus = 8, per_node = 8;
    double gbps = UNSET, intra = UNSET, alpha = UNSET, batch = UNSET, params = UNSET, tflops = UNSET, mfu = UNSET;
    double tokens = UNSET, fps = UNSET, compute_ms = UNSET, grad_bytes = UNSET, bucket_mb = UNSET;
    const char *config = NULL;
    bool json = false, no_zero = false;
    const vla_flag flags[] = {
        {"gpus", VLA_FLAG_INT, &gpus, "N", "data-parallel ranks (GPUs)"},
        {"gpus-per-node", VLA_FLAG_INT, &per_node, "N", "GPUs per node (default 8)"},
        {"gbps", VLA_FLAG_FLOAT, &gbps, "B", "inter-node bandwidth per GPU, Gbit/s (default 400 = 3.2 Tb/s / 8)"},
        {"intra-gbps", VLA_FLAG_FLOAT, &intra, "B", "intra-node bandwidth per GPU, Gbit/s (default 3600, NVLink)"},
        {"alpha-us", VLA_FLAG_FLOAT, &alpha, "US", "latency per ring step, µs (default 5)"},
        {"batch", VLA_FLAG_FLOAT, &batch, "B", "samples per GPU per step (default 32)"},
        {"params", VLA_FLAG_FLOAT, &params, "P", "trained parameters (e.g. 3.3e9)"},
        {"config", VLA_FLAG_STRING, &config, "FILE", "JSON with params, tokens_per_sample, flops_per_sample, …"},
        {"tflops", VLA_FLAG_FLOAT, &tflops, "T", "peak TFLOP/s per GPU (default 989, H100/H200 bf16)"},
        {"mfu", VLA_FLAG_FLOAT, &mfu, "M", "fraction of peak the compute reaches (default 0.4)"},
        {"tokens", VLA_FLAG_FLOAT, &tokens, "N", "tokens per sample (FLOPs = 6·params·tokens; default 1000)"},
        {"flops-per-sample", VLA_FLAG_FLOAT, &fps, "F", "training FLOPs per sample (overrides 6·P·tokens)"},
        {"compute-ms", VLA_FLAG_FLOAT, &compute_ms, "MS", "measured compute per step per GPU (overrides FLOPs)"},
        {"grad-bytes", VLA_FLAG_FLOAT, &grad_bytes, "B", "bytes per gradient element all-reduced (4 fp32, 2 bf16)"},
        {"bucket-mb", VLA_FLAG_FLOAT, &bucket_mb, "MB", "gradient bucket size, MiB (default 25)"},
        {"no-zero", VLA_FLAG_BOOL, &no_zero, NULL, "plain data parallel (no ZeRO-1 parameter all-gather)"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print one JSON object"},
    };
    const vla_command_spec spec = {
        "vla plan", NULL, "Predict step time, communication and MFU of data-parallel training at N GPUs.",
        "Ring all-reduce: T = 2(N-1)/N * bytes / bandwidth + 2(N-1) * alpha. ZeRO-1 adds an all-gather of the "
        "parameters. Buckets hide the all-reduce behind backward (2/3 of compute) except the last bucket. "
        "Default network: the paper's 3.2 Tb/s RDMA per node, 8 GPUs per node. See docs/distributed.md.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;

    vla_plan_input in;
    vla_plan_defaults(&in);
    if (config) {
        vla_status st = apply_config(config, &in);
        if (st != VLA_OK) return vla_cli_fail(st);
    }
    in.gpus = gpus, in.gpus_per_node = per_node;
    take(&in.inter_gbps, gbps), take(&in.intra_gbps, intra), take(&in.alpha_us, alpha);
    take(&in.batch, batch), take(&in.params, params), take(&in.peak_tflops, tflops), take(&in.mfu_compute, mfu);
    take(&in.tokens_per_sample, tokens), take(&in.flops_per_sample, fps), take(&in.compute_ms, compute_ms);
    take(&in.grad_bytes, grad_bytes);
    if (bucket_mb != UNSET) in.bucket_bytes = bucket_mb * 1048576.0;
    if (no_zero) in.param_bytes = 0;
    const char *cmd = "vla plan";
    if (in.params <= 0) {
        fprintf(stderr, "vla: error: vla plan: --params=P (trained parameters, e.g. 3.3e9) is required, or a --config "
                        "with \"params\"%s\n", params != UNSET ? " (it must be above 0)" : "");
        return 2;
    }
    if (!vla_cli_int_in(cmd, "gpus", in.gpus, 1, INT64_MAX) || !vla_cli_int_in(cmd, "gpus-per-node", in.gpus_per_node, 1, INT64_MAX) ||
        !vla_cli_float_in(cmd, "batch", in.batch, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "gbps", in.inter_gbps, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "intra-gbps", in.intra_gbps, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "tflops", in.peak_tflops, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "mfu", in.mfu_compute, 0, 1, true, false) ||
        !vla_cli_float_in(cmd, "alpha-us", in.alpha_us, 0, INFINITY, false, false) ||
        (bucket_mb != UNSET && !vla_cli_float_in(cmd, "bucket-mb", bucket_mb, 0, INFINITY, true, false)))
        return 2;
    /* flags the model would not use with the others given */
    bool one_node = in.gpus <= in.gpus_per_node;
    if (gbps != UNSET && one_node)
        return vla_cli_ignored(cmd, "gbps", "it is the inter-node bandwidth, and the --gpus fit in one node "
                               "(--gpus-per-node): the ring runs at --intra-gbps; give more --gpus or fewer "
                               "--gpus-per-node to plan across nodes");
    if (intra != UNSET && !one_node)
        return vla_cli_ignored(cmd, "intra-gbps", "the --gpus span several nodes, so the ring runs at the inter-node "
                               "--gbps");
    if (in.gpus == 1 && (alpha != UNSET || bucket_mb != UNSET || grad_bytes != UNSET || intra != UNSET))
        return vla_cli_ignored(cmd, alpha != UNSET ? "alpha-us" : bucket_mb != UNSET ? "bucket-mb"
                                    : grad_bytes != UNSET ? "grad-bytes" : "intra-gbps",
                               "one GPU communicates with no other; give --gpus ≥ 2");
    if (mfu != UNSET && in.compute_ms > 0)
        return vla_cli_ignored(cmd, "mfu", "--compute-ms gives the compute time, which --mfu would otherwise "
                               "estimate");
    if (tokens != UNSET && in.flops_per_sample > 0)
        return vla_cli_ignored(cmd, "tokens", "--flops-per-sample gives the FLOPs, which --tokens would otherwise "
                               "estimate (6 x params x tokens)");
    vla_plan_result r = vla_plan_predict(&in);
    if (json) {
        printf("{\"gpus\":%lld,\"gpus_per_node\":%lld,\"bandwidth_gbps\":%.1f,\"alpha_us\":%.2f,\"params\":%.6g,"
               "\"batch_per_gpu\":%.6g,\"global_batch\":%.6g,\"compute_ms\":%.3f,\"allreduce_ms\":%.3f,"
               "\"allgather_ms\":%.3f,\"comm_ms\":%.3f,\"exposed_comm_ms\":%.3f,\"step_ms\":%.3f,"
               "\"samples_per_s\":%.2f,\"mfu\":%.4f}\n",
               (long long)in.gpus, (long long)in.gpus_per_node, r.bandwidth_gbps, in.alpha_us, in.params, in.batch,
               in.batch * (double)in.gpus, r.compute_s * 1e3, r.allreduce_s * 1e3, r.allgather_s * 1e3,
               r.comm_s * 1e3, r.exposed_s * 1e3, r.step_s * 1e3, r.samples_per_s, r.mfu);
        return 0;
    }
    printf("plan: %lld GPUs (%lld per node), %.4g params, %.4g samples per GPU (global batch %.6g)\n",
           (long long)in.gpus, (long long)in.gpus_per_node, in.params, in.batch, in.batch * (double)in.gpus);
    printf("  ring bandwidth      %.0f Gbit/s per GPU (%s), alpha %.1f us\n", r.bandwidth_gbps,
           in.gpus > in.gpus_per_node ? "inter-node" : "intra-node", in.alpha_us);
    printf("  compute             %10.3f ms per step%s\n", r.compute_s * 1e3,
           in.compute_ms > 0 ? " (given)" : "");
    printf("  all-reduce (grads)  %10.3f ms\n", r.allreduce_s * 1e3);
    printf("  all-gather (ZeRO-1) %10.3f ms\n", r.allgather_s * 1e3);
    printf("  communication       %10.3f ms, exposed %.3f ms (%.1f%% of the step)\n", r.comm_s * 1e3,
           r.exposed_s * 1e3, 100.0 * r.exposed_s / r.step_s);
    printf("  step                %10.3f ms -> %.1f samples/s\n", r.step_s * 1e3, r.samples_per_s);
    printf("  MFU                 %10.1f %%  (of %.0f TFLOP/s peak)\n", r.mfu * 100, in.peak_tflops);
    return 0;
}
