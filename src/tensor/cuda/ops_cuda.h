/* ops_cuda.h — the cuda backend as the rest of vla.c sees it (C): its op
 * table for the registry (tensor/backend.c), whether this machine can run
 * it, the streams NCCL works on (distributed/comm_device.c), and the
 * tensor-core GEMM rate for benchmarks. Only built with VLA_CUDA
 * (`make CUDA=1`); docs/cuda.md describes the backend. */
#ifndef VLA_TENSOR_CUDA_OPS_CUDA_H
#define VLA_TENSOR_CUDA_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

const vla_ops *vla_cuda_backend_table(void);

/* VLA_OK when a CUDA device is usable here (the backend initialises on the
 * first call: device = local MPI rank mod device count, streams, memory
 * pool, cuBLASLt); else an error saying why ("no CUDA device: …"). */
vla_status vla_cuda_probe(void);

/* One line describing the device ("NVIDIA H200, cc 9.0, 132 SMs, 139.8 GiB"). */
const char *vla_cuda_device_info(void);
int vla_cuda_device_index(void);

/* The compute stream every op runs on and the communication stream
 * (cudaStream_t, as void *), for NCCL. */
void *vla_cuda_compute_stream(void);
void *vla_cuda_comm_stream(void);
/* NCCL issued work on the comm stream: frees must wait for it. */
void vla_cuda_note_comm_use(void);

/* Tensor-core GEMM throughput on the device, TFLOP/s: the best of `reps`
 * timed runs of `iters` n×n×n products of random operands already in
 * `dtype` (VLA_BF16, VLA_F8E4M3 or VLA_F32; f32 output for FP8, bf16 for
 * bf16), f32 accumulation, through cuBLASLt — the ceiling MFU is measured
 * against. */
vla_status vla_cuda_gemm_peak(vla_dtype dtype, int64_t n, int iters, int reps, double *tflops);

/* How many bf16/FP8 GEMMs so far found no cuBLASLt algorithm and ran the
 * f32 emulation instead (the first says so on stderr). */
int64_t vla_cuda_gemm_emulated(void);
/* operand casts so far (ops.h, VLA_STAT_OPERAND_CASTS) */
int64_t vla_cuda_operand_casts(void);

/* How many packed-attention plans have been built and uploaded so far: the
 * rest of the attention calls found theirs in the plan cache
 * (tensor/attn_plan.h, "PLAN CACHE"). */
int64_t vla_cuda_attn_plan_builds(void);
/* The parts the last attention backward cut its dK/dV walk into (tensor/attn_plan.h, "SPLIT dK/dV"; 0: none ran). */
int32_t vla_cuda_attn_last_kv_splits(void);
int32_t vla_cuda_attn_last_staging(void); /* VLA_STAT_ATTN_LAST_STAGING */
int32_t vla_cuda_attn_last_backward_passes(void); /* VLA_STAT_ATTN_LAST_BACKWARD_PASSES */
int32_t vla_cuda_attn_last_q_splits(void); /* VLA_STAT_ATTN_LAST_Q_SPLITS */

#ifdef __cplusplus
}
#endif

#endif
