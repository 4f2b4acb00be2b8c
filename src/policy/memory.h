/* memory.h — what a policy's training step holds on a device, measured by
 * running the step on the meta backend (tensor/meta/ops_meta.c: the op
 * table with shapes and no data), as PyTorch's meta device measures a
 * model: the real code's allocations, so the figure is the code's own —
 * the 3-billion-parameter presets' included, on any machine, in the time
 * their host logic takes. `vla policy info` and `vla plan` report it. */
#ifndef VLA_POLICY_MEMORY_H
#define VLA_POLICY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "policy/precision.h"

typedef struct {
    const char *sized_as;       /* whose copy sizes: "cuda" (NULL: cuda), "checked" or "cpu" (tensor/backend.h) */
    vla_precision precision;    /* as `vla train --precision` */
    const vla_fp8_recipe *fp8;  /* FP8's recipe (NULL: TransformerEngine's defaults) */
    int32_t batch;              /* samples per step (≥ 1) */
    bool recompute;             /* --gradient_checkpointing */
    bool short_prompt;          /* prompts as the benches' synthetic batch (the PushT task) instead of the
                                 * longest a sample may carry (language.max_tokens text tokens) */
} vla_memory_opts;

/* Bytes, all backend memory the policy allocates; the optimizer's (AdamW
 * moments: 8 bytes per trainable parameter, its own buffers) are not here. */
typedef struct {
    size_t params;       /* weights and gradients (vla_policy_alloc_params) */
    size_t held;         /* everything held between steps: params, the GEMM-ready weight copies, FP8 state and
                          * the activation arenas' kept chunk (its headroom included: vla_arena_begin_call) */
    size_t activations;  /* the activation arenas' high-water mark in a step (vla_policy.act_peak_bytes:
                          * saved activations and the backward's scratch above them) */
    size_t peak;         /* the most held at once from creation through two steps: what the device must have
                          * for this policy (the first step's arena growth included) */
    int64_t held_blocks; /* how many allocations `held` is (a backend rounding each up adds at most that many
                          * roundings) */
    int64_t trainable;   /* parameters with a gradient (what the optimizer's state is sized by) */
    int64_t tokens;      /* the measured batch's tokens */
} vla_memory_use;

/* Create cfg's policy on the meta table sized as o->sized_as, run two
 * training steps of a synthetic batch (policy/synth_batch.h) — hold and
 * refresh the weight copies, loss, backward, release, as train/step.c —
 * and read what it allocated. Not thread-safe against another measurement
 * (the meta table's counters are the process's). */
vla_status vla_policy_memory_measure(const vla_policy_config *cfg, const vla_memory_opts *o, vla_memory_use *out);

/* The same for inference as vla serve, vla eval and the robot library run it: every group frozen (no
 * gradients: checkpoint/pretrained.h), the weights held (each cast once and kept, policy.h), two action
 * chunks of `batch` observations with the longest prompts (o->recompute and o->short_prompt unused).
 * out->params is the weights, out->held what stays resident between chunks (weights, their copies,
 * the arenas' kept chunks), out->peak the most at once, out->activations a chunk's arenas' high-water mark
 * (the prefix's K/V cache and the flow steps' activations). */
vla_status vla_policy_memory_measure_inference(const vla_policy_config *cfg, const vla_memory_opts *o,
                                               vla_memory_use *out);

/* The largest batch (samples per step, ≤ max) whose training step, measured as vla_policy_memory_measure
 * with o's other options, fits `budget_bytes` beside `other_bytes` (the optimizer's state): *out 0 when not
 * even one sample fits. The peak grows with the batch: a line through batches 1 and 2 predicts it, a few
 * measurements around the prediction settle it. */
vla_status vla_policy_memory_largest_batch(const vla_policy_config *cfg, const vla_memory_opts *o,
                                           double budget_bytes, double other_bytes, int32_t max, int32_t *out);

/* Whether cfg's training step fits a device with `free_bytes` free, the optimizer's state beside what the
 * policy allocates (`optimizer_bytes_per_param` per trainable parameter: distributed/zero1.h,
 * vla_zero1_budget_bytes of one parameter): measured as vla_policy_memory_measure (o's precision, batch and
 * checkpointing), and, where it does not fit and o trains without checkpointing, measured again with it.
 * `say` (cap bytes) receives one line for a log: what the step needs of what is free, and, where it does
 * not fit, what to do (--gradient_checkpointing, the largest batch that fits, named as the command's
 * `batch_flag`: "--batch_size" for vla train). *fits false: it does not. */
vla_status vla_policy_memory_fit(const vla_policy_config *cfg, const vla_memory_opts *o, double free_bytes,
                                 double optimizer_bytes_per_param, const char *batch_flag, bool *fits, char *say,
                                 size_t cap);

#endif
