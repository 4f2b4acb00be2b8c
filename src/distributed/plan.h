/* plan.h — predicts data-parallel step time, communication time and MFU
 * at N GPUs from an α-β model of ring collectives (for `vla plan`).
 *
 * Ring all-reduce of S bytes over N ranks: 2(N−1) steps, each moving S/N
 * bytes over the slowest link of the ring and paying the per-message
 * latency α:
 *     T_allreduce = 2(N−1)/N · S / β + 2(N−1)·α
 * ZeRO-1 adds an all-gather of the updated parameters (half a ring):
 *     T_allgather = (N−1)/N · S_param / β + (N−1)·α
 * β is the per-GPU bandwidth of the slowest hop: inter-node (NIC share per
 * GPU) once the ring leaves one node, intra-node (NVLink) inside one.
 * Bucketed all-reduce overlaps backward (≈ 2/3 of compute): what is exposed
 * is the part that does not fit behind backward, plus the last bucket, which
 * can only start when backward ends.
 *
 * The paper's setting (arXiv 2603.11101): 8 GPUs per node, 3.2 Tb/s RDMA per
 * node, i.e. β = 400 Gb/s per GPU between nodes. */
#ifndef VLA_DISTRIBUTED_PLAN_H
#define VLA_DISTRIBUTED_PLAN_H

#include <stdint.h>

#include "base/status.h"
#include "policy/config.h"
#include "tensor/ops.h"

typedef struct {
    int64_t gpus, gpus_per_node;
    double inter_gbps;      /* per GPU, Gbit/s, between nodes */
    double intra_gbps;      /* per GPU, Gbit/s, inside a node */
    double alpha_us;        /* per ring step latency */
    double params;          /* parameter count */
    double grad_bytes;      /* bytes per gradient element on the wire (4 fp32, 2 bf16) */
    double param_bytes;     /* bytes per parameter all-gathered (ZeRO-1); 0 = no ZeRO */
    double bucket_bytes;    /* gradient bucket size */
    double batch;           /* per-GPU samples per step */
    double flops_per_sample;/* training FLOPs per sample (6·params·tokens if 0) */
    double tokens_per_sample;
    double peak_tflops;     /* per GPU */
    double mfu_compute;     /* fraction of peak the compute kernels reach */
    double compute_ms;      /* measured compute per step (overrides the two above when > 0) */
} vla_plan_input;

typedef struct {
    double bandwidth_gbps;  /* β used */
    double compute_s, allreduce_s, allgather_s, comm_s, exposed_s, step_s;
    double samples_per_s, mfu;
} vla_plan_result;

void vla_plan_defaults(vla_plan_input *in);

/* What a policy brings to the plan, from its config alone (the family's
 * parameter inventory and FLOP estimates, policy/param_spec.h: nothing is
 * allocated, so a 3B model is counted on any machine): its parameters (the
 * trained ones are what the all-reduce moves), training FLOPs per sample
 * (the same number `vla policy info` reports) and tokens per sample (image
 * tokens of every camera, text, the action chunk). */
typedef struct {
    int64_t total_params, trainable_params;
    double train_flops_per_sample;
    int64_t tokens_per_sample;
} vla_plan_policy;

/* Training memory per GPU in bytes, training cfg in `precision` at `batch`
 * samples per GPU (rounded up), prompts of the most text tokens: the
 * policy's own allocations measured by running its step on the meta
 * backend sized as cuda (policy/memory.h) — f32 weights, the gradients it
 * allocates, the activation arenas' high-water mark (what is saved for
 * backward and the backward's scratch above it) and `copies`, the rest it
 * holds at its peak (a bf16/FP8 step's GEMM-ready weight copies, its cast
 * buffers and FP8 state, the arenas' headroom) — plus AdamW's two f32
 * moments of the trained parameters and the gradient shard its update
 * scales into (grad_shard; split over the ranks by ZeRO-1:
 * distributed/zero1.h, vla_zero1_budget_bytes); each
 * without and with gradient checkpointing. Communication buffers and the
 * backend's own workspaces (cuBLASLt's, the CUDA context) are not counted. */
typedef struct {
    double weights, grads, adamw, grad_shard, copies, activations, copies_remat, activations_remat;
    double total, total_remat;
    /* the largest batch per GPU whose total fits gpu_bytes, without and with checkpointing (0: not one
     * sample; at most VLA_PLAN_MAX_BATCH) */
    int32_t largest_batch, largest_batch_remat;
} vla_plan_memory;
#define VLA_PLAN_MAX_BATCH 1024

vla_status vla_plan_memory_per_gpu(const vla_policy_config *cfg, const vla_plan_policy *pol, double batch,
                                   int64_t gpus, bool zero1, vla_precision precision, double gpu_bytes,
                                   vla_plan_memory *out);

vla_status vla_plan_policy_estimate(const vla_policy_config *cfg, vla_plan_policy *out);
double vla_plan_ring_allreduce_s(double bytes, int64_t n, double gbps, double alpha_us);
double vla_plan_ring_allgather_s(double bytes, int64_t n, double gbps, double alpha_us);
vla_plan_result vla_plan_predict(const vla_plan_input *in);

#endif
