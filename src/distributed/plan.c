/* plan.c — α-β model of ring collectives and the step-time prediction of
 * `vla plan` (see plan.h). */
#include "distributed/plan.h"

#include <math.h>

#include "distributed/zero1.h"
#include "policy/memory.h"
#include "policy/param_spec.h"

void vla_plan_defaults(vla_plan_input *in) {
    *in = (vla_plan_input){0};
    in->gpus = 8;
    in->gpus_per_node = 8;
    in->inter_gbps = 400;   /* 3.2 Tb/s RDMA per node / 8 GPUs */
    in->intra_gbps = 3600;  /* NVLink 4: 450 GB/s per direction per GPU */
    in->alpha_us = 5;
    in->grad_bytes = 4;
    in->param_bytes = 4;
    in->bucket_bytes = 25 * 1048576.0;
    in->batch = 32;
    in->tokens_per_sample = 1000;
    in->peak_tflops = 989;  /* H100/H200 dense bf16 */
    in->mfu_compute = 0.4;
}

double vla_plan_ring_allreduce_s(double bytes, int64_t n, double gbps, double alpha_us) {
    if (n <= 1) return 0;
    return 2.0 * (double)(n - 1) / (double)n * bytes / (gbps * 1e9 / 8) + 2.0 * (double)(n - 1) * alpha_us * 1e-6;
}

double vla_plan_ring_allgather_s(double bytes, int64_t n, double gbps, double alpha_us) {
    if (n <= 1) return 0;
    return (double)(n - 1) / (double)n * bytes / (gbps * 1e9 / 8) + (double)(n - 1) * alpha_us * 1e-6;
}

vla_plan_result vla_plan_predict(const vla_plan_input *in) {
    vla_plan_result r = {0};
    double fps = in->flops_per_sample > 0 ? in->flops_per_sample : 6.0 * in->params * in->tokens_per_sample;
    double flops = fps * in->batch;
    r.compute_s = in->compute_ms > 0 ? in->compute_ms * 1e-3 : flops / (in->peak_tflops * 1e12 * in->mfu_compute);
    r.bandwidth_gbps = in->gpus > in->gpus_per_node ? in->inter_gbps : in->intra_gbps;
    double grad = in->params * in->grad_bytes;
    r.allreduce_s = vla_plan_ring_allreduce_s(grad, in->gpus, r.bandwidth_gbps, in->alpha_us);
    r.allgather_s = in->param_bytes > 0 ? vla_plan_ring_allgather_s(in->params * in->param_bytes, in->gpus,
                                                                    r.bandwidth_gbps, in->alpha_us)
                                        : 0;
    r.comm_s = r.allreduce_s + r.allgather_s;
    /* Buckets run behind backward (≈ 2/3 of compute); the last bucket starts
     * only when backward ends; the all-gather sits between optimizer and the
     * next forward. */
    double backward = r.compute_s * 2.0 / 3.0;
    double last = in->gpus > 1 ? vla_plan_ring_allreduce_s(in->bucket_bytes < grad ? in->bucket_bytes : grad,
                                                           in->gpus, r.bandwidth_gbps, in->alpha_us)
                               : 0;
    double hidden_part = r.allreduce_s - last;
    double exposed_ar = (hidden_part > backward ? hidden_part - backward : 0) + last;
    r.exposed_s = exposed_ar + r.allgather_s;
    r.step_s = r.compute_s + r.exposed_s;
    r.samples_per_s = in->batch * (double)in->gpus / r.step_s;
    r.mfu = flops / (r.step_s * in->peak_tflops * 1e12);
    return r;
}

vla_status vla_plan_policy_estimate(const vla_policy_config *cfg, vla_plan_policy *out) {
    *out = (vla_plan_policy){0};
    vla_param_list plist = {0};
    VLA_TRY(vla_param_specs(cfg, &plist));
    vla_param_counts cnt;
    vla_param_count(&plist, &cnt);
    vla_flops_estimate fl;
    vla_flops_estimate_compute(cfg, &plist, &fl);
    vla_param_list_free(&plist);
    out->total_params = cnt.total_params;
    out->trainable_params = cnt.total_trainable;
    out->train_flops_per_sample = fl.total_train;
    out->tokens_per_sample = vla_policy_prefix_tokens(cfg) + cfg->action.horizon;
    return VLA_OK;
}

vla_status vla_plan_memory_per_gpu(const vla_policy_config *cfg, const vla_plan_policy *pol, double batch,
                                   int64_t gpus, bool zero1, vla_precision precision, double gpu_bytes,
                                   vla_plan_memory *out) {
    *out = (vla_plan_memory){0};
    double b = ceil(batch);
    if (!(b >= 1 && b <= INT32_MAX))
        return vla_error(VLA_ERR_INVALID_ARG, "plan memory: %g samples per GPU", batch);
    vla_memory_opts o = {.sized_as = "cuda", .precision = precision, .batch = (int32_t)b};
    vla_memory_use kept, remat;
    VLA_TRY(vla_policy_memory_measure(cfg, &o, &kept));
    o.recompute = true;
    VLA_TRY(vla_policy_memory_measure(cfg, &o, &remat));
    double T = (double)pol->trainable_params;
    out->weights = 4.0 * (double)pol->total_params;
    out->grads = (double)kept.params - out->weights;
    int shards = zero1 && gpus > 1 ? (int)(gpus < INT32_MAX ? gpus : INT32_MAX) : 1;
    double optimizer = vla_zero1_budget_bytes(pol->trainable_params, shards, false);
    out->adamw = 8 * T / shards;
    out->grad_shard = optimizer - out->adamw;
    out->activations = (double)kept.activations;
    out->copies = (double)kept.peak - (double)kept.params - out->activations;
    out->activations_remat = (double)remat.activations;
    out->copies_remat = (double)remat.peak - (double)remat.params - out->activations_remat;
    out->total = (double)kept.peak + optimizer;
    out->total_remat = (double)remat.peak + optimizer;
    o.recompute = false;
    VLA_TRY(vla_policy_memory_largest_batch(cfg, &o, gpu_bytes, optimizer, VLA_PLAN_MAX_BATCH, &out->largest_batch));
    o.recompute = true;
    VLA_TRY(vla_policy_memory_largest_batch(cfg, &o, gpu_bytes, optimizer, VLA_PLAN_MAX_BATCH,
                                            &out->largest_batch_remat));
    return VLA_OK;
}
