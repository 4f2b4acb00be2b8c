/* ops_meta.h — the `meta` backend: the op table with shapes and no data
 * (see ops_meta.c), for measuring what a policy allocates without running
 * it. Not in the registry: nothing trains or samples on it. */
#ifndef VLA_TENSOR_OPS_META_H
#define VLA_TENSOR_OPS_META_H

#include <stddef.h>

#include "tensor/ops.h"

/* Whose sizes the meta table reports where a backend decides them itself
 * (ready_bytes: the GEMM-ready weight and activation copies). */
typedef enum {
    VLA_META_AS_CUDA,    /* cuda's (tensor/cuda/gemm_plan.h, vla_q_ready_bytes): 2-byte bf16, 1-byte FP8 copies */
    VLA_META_AS_CHECKED, /* checked's (f32 copies): what a CPU test compares a real step against */
    VLA_META_AS_CPU,     /* cpu's (no copies) */
} vla_meta_sizes;

const vla_ops *vla_meta_backend_table(vla_meta_sizes as);

/* What the tables hold is read through the table's stat (tensor/ops.h): VLA_STAT_DEVICE_USED_BYTES,
 * VLA_STAT_DEVICE_PEAK_BYTES (the most held at once since nothing was), VLA_STAT_DEVICE_BLOCKS — all meta
 * tables together, process-wide: one measurement at a time. */

#endif
