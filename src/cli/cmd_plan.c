/* cmd_plan.c — `vla plan`: predict data-parallel step time, communication
 * time (total and exposed) and MFU at N GPUs from the α-β ring model of
 * distributed/plan.h, with the compute per GPU either given (--compute-ms, measured)
 * or derived from FLOPs, peak TFLOP/s and the kernels' efficiency. The
 * model is --config (a policy preset or config: its own parameter count and
 * FLOPs, distributed/plan.h vla_plan_policy_estimate; `vla policy info
 * --json` output; a plan JSON) or --params. */
#include "cli/cli.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "distributed/plan.h"
#include "policy/precision.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* A plan JSON ({"params": …, "flops_per_sample": …}, at the top level or
 * under "plan"): its numbers into `in`. */
static vla_status apply_plan_json(const char *path, json_t *obj, vla_plan_input *in) {
    static const char *keys[] = {"params", "tokens_per_sample", "flops_per_sample", "batch", "peak_tflops",
                                 "mfu_compute", "compute_ms"};
    double *dst[] = {&in->params, &in->tokens_per_sample, &in->flops_per_sample, &in->batch, &in->peak_tflops,
                     &in->mfu_compute, &in->compute_ms};
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(obj, keys[i]);
        if (!v) continue;
        if (!json_is_number(v))
            return vla_error(VLA_ERR_FORMAT, "%s: '%s' must be a number (a plan file holds numbers: params, "
                             "tokens_per_sample, flops_per_sample, batch, peak_tflops, mfu_compute, compute_ms; or give "
                             "a policy preset or config, or the output of `vla policy info --json`)", path, keys[i]);
        *dst[i] = json_number_value(v);
    }
    return VLA_OK;
}

/* The output of `vla policy info --json`: trained parameters, training
 * FLOPs per sample and tokens per sample, each field named when missing. */
static vla_status apply_policy_info(const char *path, json_t *j, vla_plan_input *in) {
    json_t *tp = json_object_get(j, "trainable_params");
    json_t *fl = json_object_get(json_object_get(j, "flops"), "train_per_sample");
    json_t *tok = json_object_get(j, "tokens_per_sample");
    if (!json_is_number(tp))
        return vla_error(VLA_ERR_FORMAT, "%s: reads as `vla policy info --json` output (it has total_params) but "
                         "'trainable_params' is %s; write it again with vla policy info --json", path,
                         tp ? "not a number" : "missing");
    if (!json_is_number(fl))
        return vla_error(VLA_ERR_FORMAT, "%s: reads as `vla policy info --json` output but 'flops.train_per_sample' "
                         "is %s; write it again with vla policy info --json", path, fl ? "not a number" : "missing");
    if (!json_is_object(tok))
        return vla_error(VLA_ERR_FORMAT, "%s: reads as `vla policy info --json` output but 'tokens_per_sample' is "
                         "%s (an object of image, text and action tokens)", path, tok ? "not an object" : "missing");
    double tokens = 0;
    const char *k;
    json_t *v;
    json_object_foreach(tok, k, v) {
        if (!json_is_number(v))
            return vla_error(VLA_ERR_FORMAT, "%s: 'tokens_per_sample.%s' must be a number", path, k);
        tokens += json_number_value(v);
    }
    in->params = json_number_value(tp);
    in->flops_per_sample = json_number_value(fl);
    in->tokens_per_sample = tokens;
    return VLA_OK;
}

/* --config: a policy preset (pi05, groot-n1.5, pi05-tiny …), a policy config
 * file, `vla policy info --json` output, or a plan JSON. `name` receives
 * what it described ("pi05-tiny", or the path). */
static vla_status apply_config(const char *config, vla_plan_input *in, char *name, size_t cap,
                               vla_policy_config *cfg, vla_plan_policy *pol, bool *have_pol) {
    snprintf(name, cap, "%s", config);
    *have_pol = false;
    if (vla_path_exists(config) && !vla_is_dir(config)) {
        json_t *j;
        VLA_TRY(vla_json_load_file(config, &j));
        if (!json_is_object(j)) {
            json_decref(j);
            return vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", config);
        }
        vla_status st;
        if (json_object_get(j, "total_params")) { /* vla policy info --json */
            st = apply_policy_info(config, j, in);
            json_t *pn = json_object_get(j, "name");
            if (st == VLA_OK && json_is_string(pn)) snprintf(name, cap, "%s", json_string_value(pn));
            json_decref(j);
            return st;
        }
        if (!json_object_get(j, "policy")) { /* a plan file: keys at the top level or under "plan" */
            json_t *obj = json_object_get(j, "plan");
            st = apply_plan_json(config, json_is_object(obj) ? obj : j, in);
            json_decref(j);
            return st;
        }
        json_decref(j); /* a policy config: read as one below */
    }
    vla_status st = vla_policy_config_load(config, cfg);
    if (st != VLA_OK)
        return vla_error_context(st, "--config=%s: not a policy preset, policy config, `vla policy info --json` output "
                                 "or plan file", config);
    VLA_TRY(vla_plan_policy_estimate(cfg, pol));
    snprintf(name, cap, "%s", cfg->name);
    in->params = (double)pol->trainable_params;
    in->flops_per_sample = pol->train_flops_per_sample;
    in->tokens_per_sample = (double)pol->tokens_per_sample;
    *have_pol = true;
    return VLA_OK;
}

int vla_cmd_plan(int argc, char **argv) {
    vla_plan_input d;
    vla_plan_defaults(&d);
    int64_t gpus = d.gpus, per_node = d.gpus_per_node;
    double gbps = d.inter_gbps, intra = d.intra_gbps, alpha = d.alpha_us, batch = d.batch, params = 0;
    double tflops = d.peak_tflops, mfu = d.mfu_compute, tokens = d.tokens_per_sample, fps = 0, compute_ms = 0;
    double grad_bytes = d.grad_bytes, bucket_mb = d.bucket_bytes / 1048576.0;
    const char *config = NULL, *precision_name = "bf16";
    bool json = false, no_zero = false;
    double gpu_gib = 140; /* an H200's 141 GB as nvidia-smi counts it (143,771 MiB) */
    const vla_flag flags[] = {
        {"gpus", VLA_FLAG_INT, &gpus, "N", "data-parallel ranks (GPUs)"},
        {"gpus-per-node", VLA_FLAG_INT, &per_node, "N", "GPUs per node"},
        {"gbps", VLA_FLAG_FLOAT, &gbps, "B", "inter-node bandwidth per GPU, Gbit/s (3.2 Tb/s per node / 8)"},
        {"intra-gbps", VLA_FLAG_FLOAT, &intra, "B", "intra-node bandwidth per GPU, Gbit/s (NVLink)"},
        {"alpha-us", VLA_FLAG_FLOAT, &alpha, "US", "latency per ring step, µs"},
        {"batch", VLA_FLAG_FLOAT, &batch, "B", "samples per GPU per step"},
        {"config", VLA_FLAG_STRING, &config, "NAME|FILE",
         "the policy: a preset (pi05, groot-n1.5, pi05-tiny, …) or config file, whose parameters, training FLOPs and "
         "tokens per sample come from its size tables (as vla policy info counts them); or the JSON vla policy info "
         "--json prints; or a plan JSON with params, tokens_per_sample, flops_per_sample, …"},
        {"params", VLA_FLAG_FLOAT, &params, "P", "trained parameters, e.g. 3.3e9 (default: --config's; given, it "
         "overrides them)"},
        {"tflops", VLA_FLAG_FLOAT, &tflops, "T", "peak TFLOP/s per GPU (H100/H200 dense bf16)"},
        {"mfu", VLA_FLAG_FLOAT, &mfu, "M", "fraction of peak the compute reaches"},
        {"tokens", VLA_FLAG_FLOAT, &tokens, "N",
         "tokens per sample: FLOPs = 6·params·tokens (default: --config's FLOPs, else 1000 tokens)"},
        {"flops-per-sample", VLA_FLAG_FLOAT, &fps, "F",
         "training FLOPs per sample (default: --config's estimate, else 6·params·tokens)"},
        {"compute-ms", VLA_FLAG_FLOAT, &compute_ms, "MS", "measured compute per step per GPU (default: from the FLOPs)"},
        {"grad-bytes", VLA_FLAG_FLOAT, &grad_bytes, "B", "bytes per gradient element all-reduced (4 fp32, 2 bf16)"},
        {"bucket-mb", VLA_FLAG_FLOAT, &bucket_mb, "MB", "gradient bucket size, MiB"},
        {"no-zero", VLA_FLAG_BOOL, &no_zero, NULL, "plain data parallel (no ZeRO-1 parameter all-gather)"},
        {"gpu-gib", VLA_FLAG_FLOAT, &gpu_gib, "G",
         "memory per GPU, GiB, that --config's training memory is checked against, and the largest batch that "
         "fits it is searched for (140: an H200; 79.6: an H100)"},
        {"precision", VLA_FLAG_STRING, &precision_name, "fp32|bf16|fp8",
         "the precision --config's training memory is measured in (its step run on the meta backend sized as cuda, "
         "as `vla train --precision` runs it on a GPU: bf16 holds the weights' 2-byte casts and keeps the blocks' "
         "normed inputs and MLP hidden as bf16 copies; fp8 the weights' 1-byte casts with f32 activations; fp32 "
         "neither) (default bf16)"},
        {"json", VLA_FLAG_BOOL, &json, NULL, "print one JSON object"},
    };
    const vla_command_spec spec = {
        "vla plan", NULL, "Predict step time, communication and MFU of data-parallel training at N GPUs.",
        "Ring all-reduce: T = 2(N-1)/N * bytes / bandwidth + 2(N-1) * alpha. ZeRO-1 adds an all-gather of the "
        "parameters. Buckets hide the all-reduce behind backward (2/3 of compute) except the last bucket. "
        "Default network: the paper's 3.2 Tb/s RDMA per node, 8 GPUs per node. The model: --config=pi05 (a preset "
        "or config file: its own parameter count and FLOPs, and its training memory per GPU measured by running "
        "its step on the meta backend) or --params. See docs/distributed.md.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
#define GIVEN(n) vla_flags_given(&spec, &res, n)

    vla_plan_input in = d;
    char policy_name[256] = "";
    vla_plan_policy pol = {0};
    vla_policy_config cfg;
    bool have_pol = false;
    if (config) {
        vla_status st = apply_config(config, &in, policy_name, sizeof policy_name, &cfg, &pol, &have_pol);
        if (st != VLA_OK) return vla_cli_fail(st);
    }
    /* flags given win over the config */
    in.gpus = gpus, in.gpus_per_node = per_node;
    if (GIVEN("gbps")) in.inter_gbps = gbps;
    if (GIVEN("intra-gbps")) in.intra_gbps = intra;
    if (GIVEN("alpha-us")) in.alpha_us = alpha;
    if (GIVEN("batch")) in.batch = batch;
    if (GIVEN("params")) in.params = params;
    if (GIVEN("tflops")) in.peak_tflops = tflops;
    if (GIVEN("mfu")) in.mfu_compute = mfu;
    if (GIVEN("tokens")) {
        if (GIVEN("flops-per-sample"))
            return vla_cli_ignored("vla plan", "tokens", "--flops-per-sample gives the FLOPs, which --tokens would "
                                   "otherwise estimate (6 x params x tokens)");
        in.tokens_per_sample = tokens, in.flops_per_sample = 0; /* 6·params·tokens replaces the config's FLOPs */
    }
    if (GIVEN("flops-per-sample")) in.flops_per_sample = fps;
    if (GIVEN("compute-ms")) in.compute_ms = compute_ms;
    if (GIVEN("grad-bytes")) in.grad_bytes = grad_bytes;
    if (GIVEN("bucket-mb")) in.bucket_bytes = bucket_mb * 1048576.0;
    if (no_zero) in.param_bytes = 0;
    bool b_alpha = GIVEN("alpha-us"), b_bucket = GIVEN("bucket-mb"), b_grad = GIVEN("grad-bytes");
    bool b_gbps = GIVEN("gbps"), b_intra = GIVEN("intra-gbps"), b_mfu = GIVEN("mfu"), b_prec = GIVEN("precision");
#undef GIVEN
    const char *cmd = "vla plan";
    if (in.params <= 0) {
        fprintf(stderr, "vla: error: vla plan: which model? give --config=NAME|FILE (a policy preset such as pi05 or "
                        "groot-n1.5, a config file, or vla policy info --json output) or --params=P (trained "
                        "parameters, e.g. 3.3e9)%s\n", in.params < 0 || vla_flags_given(&spec, &res, "params")
                        ? " (--params must be above 0)" : "");
        return 2;
    }
    if (!vla_cli_int_in(cmd, "gpus", in.gpus, 1, INT64_MAX) || !vla_cli_int_in(cmd, "gpus-per-node", in.gpus_per_node, 1, INT64_MAX) ||
        !vla_cli_float_in(cmd, "batch", in.batch, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "gbps", in.inter_gbps, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "intra-gbps", in.intra_gbps, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "tflops", in.peak_tflops, 0, INFINITY, true, false) ||
        !vla_cli_float_in(cmd, "mfu", in.mfu_compute, 0, 1, true, false) ||
        !vla_cli_float_in(cmd, "alpha-us", in.alpha_us, 0, INFINITY, false, false) ||
        !vla_cli_float_in(cmd, "gpu-gib", gpu_gib, 0, INFINITY, true, false) ||
        (b_bucket && !vla_cli_float_in(cmd, "bucket-mb", bucket_mb, 0, INFINITY, true, false)))
        return 2;
    /* flags the model would not use with the others given */
    bool one_node = in.gpus <= in.gpus_per_node;
    if (b_gbps && one_node)
        return vla_cli_ignored(cmd, "gbps", "it is the inter-node bandwidth, and the --gpus fit in one node "
                               "(--gpus-per-node): the ring runs at --intra-gbps; give more --gpus or fewer "
                               "--gpus-per-node to plan across nodes");
    if (b_intra && !one_node)
        return vla_cli_ignored(cmd, "intra-gbps", "the --gpus span several nodes, so the ring runs at the inter-node "
                               "--gbps");
    if (in.gpus == 1 && (b_alpha || b_bucket || b_grad || b_intra))
        return vla_cli_ignored(cmd, b_alpha ? "alpha-us" : b_bucket ? "bucket-mb" : b_grad ? "grad-bytes" : "intra-gbps",
                               "one GPU communicates with no other; give --gpus ≥ 2");
    vla_precision precision;
    if (vla_precision_parse(precision_name, &precision) != VLA_OK) {
        fprintf(stderr, "vla: error: vla plan: --precision=%s: give fp32, bf16 or fp8\n", precision_name);
        return 2;
    }
    if (b_prec && !have_pol)
        return vla_cli_ignored(cmd, "precision", "it budgets a policy's training memory, and only --config=NAME|FILE "
                               "(a preset or policy config) gives the shapes that memory comes from");
    if (b_mfu && in.compute_ms > 0)
        return vla_cli_ignored(cmd, "mfu", "--compute-ms gives the compute time, which --mfu would otherwise "
                               "estimate");
    vla_plan_result r = vla_plan_predict(&in);
    /* memory: only a policy (--config) has the shapes the activations come from */
    vla_plan_memory mem = {0};
    if (have_pol) {
        vla_status st = vla_plan_memory_per_gpu(&cfg, &pol, in.batch, in.gpus, in.param_bytes > 0, precision,
                                                gpu_gib * 1073741824.0, &mem);
        if (st != VLA_OK) return vla_cli_fail(st);
    }
    const double GiB = 1073741824.0;
    double flops_per_sample = in.flops_per_sample > 0 ? in.flops_per_sample : 6.0 * in.params * in.tokens_per_sample;
    if (json) {
        if (policy_name[0]) {
            printf("{\"policy\":\"");
            vla_cli_print_json_chars(policy_name);
            printf("\",");
        } else {
            printf("{");
        }
        printf("\"flops_per_sample\":%.6g,\"tokens_per_sample\":%.6g,", flops_per_sample, in.tokens_per_sample);
        printf("\"gpus\":%lld,\"gpus_per_node\":%lld,\"bandwidth_gbps\":%.1f,\"alpha_us\":%.2f,\"params\":%.15g,"
               "\"batch_per_gpu\":%.6g,\"global_batch\":%.6g,\"compute_ms\":%.3f,\"allreduce_ms\":%.3f,"
               "\"allgather_ms\":%.3f,\"comm_ms\":%.3f,\"exposed_comm_ms\":%.3f,\"step_ms\":%.3f,"
               "\"samples_per_s\":%.2f,\"mfu\":%.4f",
               (long long)in.gpus, (long long)in.gpus_per_node, r.bandwidth_gbps, in.alpha_us, in.params, in.batch,
               in.batch * (double)in.gpus, r.compute_s * 1e3, r.allreduce_s * 1e3, r.allgather_s * 1e3,
               r.comm_s * 1e3, r.exposed_s * 1e3, r.step_s * 1e3, r.samples_per_s, r.mfu);
        if (have_pol) {
            printf(",\"memory_gib\":{\"precision\":\"%s\",\"measured\":\"meta backend as cuda\",\"weights\":%.6g,"
                   "\"grads\":%.6g,\"adamw\":%.6g,\"grad_shard\":%.6g,\"copies\":%.6g,\"activations\":%.6g,"
                   "\"copies_gradient_checkpointing\":%.6g,\"activations_gradient_checkpointing\":%.6g,"
                   "\"total\":%.6g,\"total_gradient_checkpointing\":%.6g,\"gpu\":%.4g,\"fits\":%s,"
                   "\"fits_gradient_checkpointing\":%s,\"largest_batch\":%d,"
                   "\"largest_batch_gradient_checkpointing\":%d}",
                   vla_precision_name(precision), mem.weights / GiB, mem.grads / GiB, mem.adamw / GiB,
                   mem.grad_shard / GiB, mem.copies / GiB, mem.activations / GiB, mem.copies_remat / GiB, mem.activations_remat / GiB,
                   mem.total / GiB, mem.total_remat / GiB, gpu_gib, mem.total / GiB <= gpu_gib ? "true" : "false",
                   mem.total_remat / GiB <= gpu_gib ? "true" : "false", (int)mem.largest_batch,
                   (int)mem.largest_batch_remat);
        }
        printf("}\n");
        return 0;
    }
    printf("plan: %lld GPUs (%lld per node), %.4g params, %.4g samples per GPU (global batch %.6g)\n",
           (long long)in.gpus, (long long)in.gpus_per_node, in.params, in.batch, in.batch * (double)in.gpus);
    if (have_pol)
        printf("  policy              %s: %lld parameters, %lld trained (all-reduced), %lld tokens and %.4g training "
               "FLOPs per sample\n", policy_name, (long long)pol.total_params, (long long)pol.trainable_params,
               (long long)pol.tokens_per_sample, pol.train_flops_per_sample);
    else if (policy_name[0])
        printf("  model               %s: %.4g training FLOPs per sample\n", policy_name, flops_per_sample);
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
    if (have_pol) {
        printf("  memory per GPU      training in %s at %.6g samples, measured (the step run on the meta backend as "
               "cuda):\n", vla_precision_name(precision), ceil(in.batch));
        printf("                      weights %.1f + grads %.1f + AdamW %.1f and its scaled gradient shard %.1f%s "
               "+ activations %.1f + copies %.1f GiB = %.1f GiB: %s in %.4g GiB\n", mem.weights / GiB,
               mem.grads / GiB, mem.adamw / GiB, mem.grad_shard / GiB,
               in.param_bytes > 0 && in.gpus > 1 ? " (ZeRO-1)" : "", mem.activations / GiB, mem.copies / GiB,
               mem.total / GiB, mem.total / GiB <= gpu_gib ? "fits" : "does NOT fit", gpu_gib);
        printf("                      with --gradient_checkpointing: activations %.1f + copies %.1f GiB = %.1f GiB: "
               "%s\n", mem.activations_remat / GiB, mem.copies_remat / GiB, mem.total_remat / GiB,
               mem.total_remat / GiB <= gpu_gib ? "fits" : "does NOT fit");
        printf("                      the largest batch per GPU that fits in %.4g GiB: %d, with "
               "--gradient_checkpointing %d%s\n", gpu_gib, (int)mem.largest_batch, (int)mem.largest_batch_remat,
               mem.largest_batch_remat >= VLA_PLAN_MAX_BATCH ? " (the most searched)" : "");
        printf("                      (activations: what the step saves for backward and the backward's scratch, "
               "at their high-water mark; copies: the weights' GEMM-ready copies, cast buffers, FP8 state and the "
               "arenas' headroom)\n");
    }
    return 0;
}
