/* policy.h — the one interface every policy implements (pi05.c, groot.c)
 * and everything else calls: the trainer, the evaluator, and a robot's
 * control loop linking libvla. Nothing here depends on which policy it is.
 *
 * LIFE CYCLE
 *   vla_policy *p;
 *   const vla_ops *ops; VLA_TRY(vla_backend_get("cpu", &ops));   // tensor/backend.h
 *   VLA_TRY(vla_policy_create(&cfg, ops, &p));  // allocates weights (+ grads) in the backend's memory
 *   vla_policy_init_weights(p, seed);       // or load a checkpoint by name (p->params[i].spec->name)
 *   for each step:
 *       vla_policy_zero_grad(p);
 *       vla_policy_loss(p, &batch, true, &info);   // forward, keeps activations
 *       vla_policy_backward(p);                    // accumulates into p->grads
 *       all-reduce p->grads[0 .. p->n_grad_floats) // one flat buffer (or bucket by
 *                                                  // bucket from p->grad_ready, during backward)
 *       optimizer step on the trainable params
 *   vla_policy_sample_actions(p, &obs, actions);    // inference, no grads
 *   vla_policy_free(p);
 *
 * PARAMETERS
 *   p->specs is the inventory of param_spec.h (names as in the public
 *   checkpoints, shapes, groups, trainability). The weights of all
 *   parameters live in ONE allocation p->weights, in spec order; the
 *   gradients of the trainable ones live in ONE allocation p->grads (frozen
 *   parameters have none), also in spec order. So the gradient all-reduce,
 *   its buckets and ZeRO-1 shards are slices of one flat buffer, and a
 *   checkpoint is a walk over p->params. Weights are f32 master copies;
 *   backends may keep lower-precision working copies internally.
 *
 * DATA: NORMALISED SPACE
 *   Policies see normalised state and actions (normalize.h) and images as
 *   f32 NCHW in [0, 1] at the config's image_size; each policy applies its
 *   own pixel normalisation (SigLIP: 2x − 1). sample_actions returns
 *   normalised actions; the caller unnormalises with the dataset's stats.
 *   Actions and state are zero-padded to cfg.action.action_dim / state_dim;
 *   real_action_dim says how many dims are real.
 *
 * THE PACKED BATCH (vla_batch)
 *   Samples lie end to end on one token axis (docs/design.md: packed is the
 *   native layout; a padded batch is a packed batch of equal lengths).
 *   cu_seqlens[s]..cu_seqlens[s+1] are sample s's tokens. Each token has a
 *   role (image | text | state | action), a position (RoPE; restarts at 0
 *   per sample, padding never occupies a slot) and an attention group: a
 *   query may attend a key of the same sample iff group[key] <= group[query]
 *   (openpi's cumsum of the ar mask; nn/attention.h's rule). The layout of
 *   one sample is the policy's business, so the packer asks it:
 *   vla_policy_sample_layout() fills roles, groups and positions for a
 *   sample with n_images valid images and n_text text tokens, e.g.
 *     π0.5:  [image×256·k | text×n] group 0 (bidirectional prefix),
 *            [action×H] group 1 (sees the prefix and the whole chunk).
 *     GR00T: [image×256·k | text×n] groups 0,1,2,… (causal Qwen3 backbone),
 *            [state×1 | action×H] the action head's own sequence (DiT;
 *            future tokens are internal to the policy).
 *   Text tokens come from vla_policy_tokenize() (π0.5 puts the
 *   discretised state in the prompt; GR00T uses the task alone). The
 *   defaults every implementation may use, vla_policy_default_layout() and
 *   vla_policy_default_tokenize(), work from the config alone, so the data
 *   layer can build and test the packer before any policy exists.
 *
 * RANDOMNESS
 *   The flow-matching time and noise of sample s come from flow.h streams
 *   keyed by (seed, sample_keys[s]), the sample's global counter, so results
 *   do not depend on rank count, thread count or packing order. Dropout
 *   (GR00T's 0.2) uses the same keys.
 *
 * THREADING AND MEMORY
 *   A policy object is used by one thread at a time; it parallelises inside
 *   through the op table (OpenMP on CPU). p->weights, p->grads and every
 *   activation are the backend's memory: reach them with p->tops (to_host,
 *   to_device, or vla_policy_param_stage/commit below), never directly —
 *   under the `checked` backend a direct access faults. Batches and
 *   observations are host memory; the policy uploads what it needs.
 *
 * SIZES — one legend for every file in src/policy:
 *   S   samples in a packed batch          T   tokens of the batch (Σ over samples)
 *   P   prefix rows (image + text tokens)  N   the action side's rows (GR00T: S·(1 + F + H))
 *   Np, Na  π0.5's prefix and action rows  F   GR00T's future tokens per sample
 *   H   action horizon (chunk length)      A   action dims (padded), SD state dims
 *   W   LM width, We expert width          D   a block's residual width (ViT, DiT)
 *   Hq, Hk  query / KV heads, hd head_dim  Q = Hq·hd, K = Hk·hd (HD, KD in π0.5)
 *   L   layers (depth)                     M   MLP hidden width
 * The architecture's parts: family.h (the table each family fills),
 * registry.c (the only file naming the families), nn/block.h (the one
 * transformer block every layer is). */
#ifndef VLA_POLICY_POLICY_H
#define VLA_POLICY_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "nn/weight.h"
#include "policy/config.h"
#include "policy/flow.h"
#include "policy/param_spec.h"
#include "policy/tokenizer.h"
#include "tensor/ops.h"

typedef enum {
    VLA_ROLE_IMAGE = 0,
    VLA_ROLE_TEXT = 1,
    VLA_ROLE_STATE = 2,
    VLA_ROLE_ACTION = 3,
    VLA_ROLE_COUNT
} vla_token_role;

/* A packed training batch. All arrays are host memory, owned by the caller
 * (the loader's batch arena) and read-only for the policy. */
typedef struct {
    int32_t n_samples;               /* S */
    int64_t n_tokens;                /* T = cu_seqlens[S] */
    const int32_t *cu_seqlens;       /* [S+1] int32, cu[0] = 0, non-decreasing */
    const uint8_t *roles;            /* [T] vla_token_role */
    const int32_t *positions;        /* [T] position within the sample */
    const int32_t *groups;           /* [T] attention group (see above) */
    const int32_t *token_ids;        /* [T] text token id on TEXT tokens, ignored elsewhere */

    /* images: n_images in sample order; cu_images[s]..cu_images[s+1] are
     * sample s's (only valid cameras are sent: a missing camera is simply
     * absent, so no masked image tokens exist) */
    int32_t n_images;
    const int32_t *cu_images;        /* [S+1] */
    const float *images;             /* [n_images, C, H, W] f32 in [0, 1] */

    const float *state;              /* [S, state_dim] normalised, zero-padded */
    const float *actions;            /* [S, horizon, action_dim] normalised, zero-padded (targets) */
    const uint8_t *action_is_pad;    /* [S, horizon] 1 where the step lies past the episode end */
    const int32_t *real_action_dim;  /* [S] real action dims, or NULL for all */
    const int32_t *embodiment;       /* [S] GR00T embodiment id (new_embodiment = 31), or NULL for 0 */

    uint64_t seed;                   /* run seed for flow.h streams */
    const uint64_t *sample_keys;     /* [S] global sample counters */

    /* > 0: the loss is Σ masked err² / loss_divisor (gradient likewise)
     * instead of ÷ the real entries; the data-parallel trainer passes 1 and
     * divides by the global count after the all-reduce, so N ranks equal one
     * rank exactly. 0 (a zeroed batch): the policy's own mean. */
    double loss_divisor;
} vla_batch;

/* What one robot step gives the policy (no packing needed by the caller:
 * sample_actions packs internally). S observations at once. */
typedef struct {
    int32_t n_samples;
    const char *const *task;         /* [S] UTF-8 prompts */
    const float *images;             /* [S, cameras, C, H, W] f32 in [0, 1] */
    const uint8_t *image_valid;      /* [S, cameras] or NULL for all valid */
    const float *state;              /* [S, state_dim] normalised, zero-padded */
    const int32_t *embodiment;       /* [S] or NULL */
    uint64_t seed;                   /* initial noise: flow.h stream (seed, sample_keys[s], SAMPLING) */
    const uint64_t *sample_keys;     /* [S] or NULL for 0..S−1 */
} vla_observation;

typedef struct {
    double loss;                     /* the reduced flow-matching loss */
    int64_t real_entries;            /* action entries that counted */
    double mean_time;                /* mean flow time t over the batch (for logs) */
    int64_t tokens;                  /* tokens processed */
    double flops;                    /* model FLOPs of this forward (for MFU) */
} vla_loss_info;

/* One parameter: a view into p->weights (and p->grads when trainable). */
typedef struct {
    const vla_param_spec *spec;
    float *data;                     /* spec->numel floats */
    float *grad;                     /* NULL when frozen */
} vla_param;

typedef struct vla_policy vla_policy;

/* Called by backward, on the calling thread (never inside an OpenMP region), when the
 * gradients of parameters [first, end) — indices into p->params — are final for this
 * backward call. Every trainable parameter is reported exactly once per backward call
 * (frozen ones may be included; callers ignore them); ranges come roughly in reverse
 * parameter order, as backward produces them. NULL: not called. The data-parallel trainer
 * starts each gradient bucket's all-reduce from here. A backward that fails may stop
 * reporting early (the step is abandoned anyway). */
typedef void (*vla_grad_ready_fn)(void *user, int64_t first, int64_t end);

/* The runtime of one policy object (its family's network). */
typedef struct {
    const char *name; /* "pi05", "groot" */
    void (*destroy)(vla_policy *p);
    /* init_weights, tokenize and sample_layout may be NULL: the wrappers
     * below then use vla_policy_default_init/_tokenize/_layout. */
    /* Initialise every weight from its spec's init (N(0, std²), zeros, ones),
     * drawing from a stream keyed by (seed, parameter index). */
    vla_status (*init_weights)(vla_policy *p, uint64_t seed);
    /* Text tokens of one sample (no padding): π0.5 builds "Task: …, State: …;\nAction: "
     * from the state's real (unpadded) dims, as openpi tokenizes before padding. */
    vla_status (*tokenize)(const vla_policy *p, const char *task, const float *state, int64_t state_dim,
                           int32_t n_images, int32_t *ids, int64_t cap, int64_t *n);
    /* Token layout of one sample; returns its token count (arrays NULL: count only). */
    int64_t (*sample_layout)(const vla_policy *p, int32_t n_images, const int32_t *ids, int32_t n_text,
                             uint8_t *roles, int32_t *groups, int32_t *positions);
    /* Forward + loss; keeps what backward needs until the next loss call.
     * `training` enables dropout. */
    vla_status (*loss)(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info);
    /* Backward of the last loss; ADDS into p->grads. */
    vla_status (*backward)(vla_policy *p);
    /* actions: [S, horizon, action_dim], normalised. No gradients, no
     * training-mode dropout; the prefix is encoded once (KV cache) and only
     * the action side runs cfg.flow.steps times. */
    vla_status (*sample_actions)(vla_policy *p, const vla_observation *obs, float *actions);
    /* Optional (NULL: the family offers no velocity field): sample_actions
     * with the caller's integrator — encode the observations once, draw the
     * starting noise into `actions` as sample_actions does, and call
     * integ(user, flow, field, actions, n) with the family's velocity field
     * (and its VJP where the family has one). Real-time chunking
     * (policy/rtc.h) samples through it. */
    vla_status (*sample_with)(vla_policy *p, const vla_observation *obs, vla_flow_integrator integ, void *user,
                              float *actions);
} vla_policy_ops;

struct vla_policy {
    const vla_policy_ops *ops;
    vla_policy_config cfg;
    const vla_ops *tops;             /* backend op table */
    const vla_tokenizer *tokenizer;
    vla_tokenizer *owned_tokenizer;  /* the one cfg.tokenizer loaded (freed with the parameters), or NULL */
    vla_param_list specs;
    vla_param *params;               /* [specs.n] */
    float *weights;                  /* all parameters, spec order */
    float *grads;                    /* trainable parameters, spec order */
    int64_t n_weight_floats, n_grad_floats;
    void *impl;                      /* the implementation's state (activations, arenas, caches) */
    /* gradient-ready hook (see vla_grad_ready_fn); set by the caller, NULL by default */
    vla_grad_ready_fn grad_ready;
    void *grad_ready_user;
    /* NULL, or backend memory (one double) the loss adds its Σ into instead
     * of reading it back: set by the training step (train/step.c), which
     * reads it once per step; vla_loss_info.loss is then NaN. */
    double *loss_sum;
    uint8_t *grad_reported;          /* [specs.n] what this backward has reported (implementations' bookkeeping) */
    uint64_t init_seed;              /* the seed of the running vla_policy_default_init */
    uint64_t serial;                 /* this instance, process-wide from 1 (vla_policy_alloc_params): captured
                                      * regions key it, as addresses come back after a free */
    /* every transformer block (the inventory's vla_pb_blocks), and how their
     * large linears' GEMMs read operands: policy/precision.h (NULL: f32) */
    vla_block_set blocks;
    struct vla_policy_precision *prec;
    /* Activation checkpointing (`vla train --gradient_checkpointing`): a
     * training forward keeps each transformer layer's input only, and the
     * backward runs the layer's forward again just before its backward —
     * the bits are those of the kept activations (the forward is
     * deterministic), at about a third more compute for the layers, and
     * their activation memory drops from one set per layer to one set.
     * False by default; set by the caller before a loss. */
    bool recompute_layers;
    /* Backend memory for activations and backward scratch (bytes): the
     * high-water marks of the policy's activation arenas over the recent
     * calls (since an arena last grew), added up, updated after each loss,
     * backward and action chunk — what a batch size costs on a device beside the
     * weights, gradients and optimizer state (the arenas then keep one chunk
     * of about that size: vla_arena_begin_call). */
    size_t act_peak_bytes;
};

/* Build a policy for cfg on a backend (the config's family creates it). */
vla_status vla_policy_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out);
void vla_policy_free(vla_policy *p);

/* Shared helpers for implementations: allocate p->weights / p->grads and
 * the p->params views from p->specs (p->cfg and p->tops set first). */
vla_status vla_policy_alloc_params(vla_policy *p);
/* p->tokenizer from p->cfg.tokenizer (byte-level when unset); a vocabulary
 * larger than language.vocab is refused. */
vla_status vla_policy_open_tokenizer(vla_policy *p);
void vla_policy_free_params(vla_policy *p);
/* Fill weights from specs' inits: parameter i draws from
 * vla_rng_stream(seed, i), so adding a parameter never changes the others. */
void vla_policy_default_init(vla_policy *p, uint64_t seed);

/* Gradient-ready reporting, for implementations. The raw call: */
static inline void vla_policy_grads_ready(vla_policy *p, int64_t first, int64_t end) {
    if (p->grad_ready && end > first) p->grad_ready(p->grad_ready_user, first, end);
}
/* With bookkeeping, so each parameter is reported exactly once per backward:
 * backward calls _begin first; _weights after the last gradient contribution
 * of the parameters whose weights are w[0..n) (NULL entries skipped; already
 * reported ones skipped), which it reports as runs of consecutive indices;
 * and _rest at its end, for everything not reported yet (frozen parameters,
 * modules the batch did not reach). All three do nothing without a hook. */
void vla_policy_ready_begin(vla_policy *p);
void vla_policy_ready_weights(vla_policy *p, const float *const *w, int n);
void vla_policy_ready_rest(vla_policy *p);
/* _weights for n bound weights (vla_wg), e.g. a struct made only of vla_wg. */
void vla_policy_ready_wgs(vla_policy *p, const vla_wg *t, int n);
/* Index of the parameter whose weights start at w, or −1. */
int64_t vla_policy_param_index(const vla_policy *p, const float *w);

/* Action entries that count in the loss: Σ over samples and unpadded steps of real_action_dim. */
int64_t vla_batch_real_entries(const vla_batch *b, const vla_policy_config *cfg);

/* Observations laid out as a packed batch for sample_actions (prefix, plus
 * the action side's tokens when with_actions), in malloc'd arrays that
 * vla_obs_pack_free releases; the layout and text tokens are the policy's. */
typedef struct {
    vla_batch b;
    int32_t *cu, *cu_img, *pos, *grp, *ids;
    uint8_t *roles;
    float *images;
} vla_obs_pack;
vla_status vla_obs_pack_build(const vla_policy *p, const vla_observation *obs, bool with_actions, vla_obs_pack *o);
void vla_obs_pack_free(vla_obs_pack *o);

/* Check a packed batch against a config: cu_seqlens, roles, positions,
 * image counts, action_is_pad/real_action_dim ranges. Errors name the
 * array and the index. */
vla_status vla_batch_check(const vla_batch *b, const vla_policy_config *cfg);

/* Hold the weights: until the release nothing changes them, so the
 * lowered linears (policy/precision.h) cast each weight once and reuse the
 * cast (nn/linear.h, vla_weight_scope; a backend that keeps no copies —
 * cpu — casts at every GEMM as before). The training step holds them over
 * its micro-batches, sampling over a chunk. Holds nest, and the copies last
 * until the outermost release: an inference session (vla serve, vla eval,
 * the robot library, bench policy's timed chunks) holds its weights for its
 * whole life, so each is cast once, at the first chunk, and stays on the
 * device in the GEMM's precision. Whoever writes weights inside a hold says
 * so with vla_policy_weights_changed (vla_policy_param_commit does). No-ops
 * without mixed precision. */
void vla_policy_weights_hold(vla_policy *p);
void vla_policy_weights_release(vla_policy *p);
void vla_policy_weights_changed(vla_policy *p);
/* The optimizer's form: it wrote trainable weights only, so frozen weights'
 * bf16 copies stay good across holds (nn/linear.h, vla_weight_scope). Any
 * other writer calls vla_policy_weights_changed. */
void vla_policy_trainable_changed(vla_policy *p);
/* Inside a hold: cast now every bf16 weight copy an earlier hold made and
 * that is stale (nn/linear.h, vla_weight_ready_refresh) — the casts the
 * copies' next uses would make, the same bits, made first. A training step
 * calls it after its hold, so its captured regions find every copy current
 * and issue the same ops step after step (train/step.c). */
void vla_policy_weights_refresh(vla_policy *p);
/* GEMM-ready weight copies made so far (0 without mixed precision). */
int64_t vla_policy_weight_casts(const vla_policy *p);

/* Thin wrappers over the ops. */
static inline vla_status vla_policy_loss(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info) {
    return p->ops->loss(p, b, training, info);
}
static inline vla_status vla_policy_backward(vla_policy *p) { return p->ops->backward(p); }
static inline vla_status vla_policy_sample_actions(vla_policy *p, const vla_observation *obs, float *actions) {
    vla_policy_weights_hold(p); /* every flow step reads the same weights */
    vla_status st = p->ops->sample_actions(p, obs, actions);
    vla_policy_weights_release(p);
    return st;
}
/* The token layout of one sample from the config alone (the family's
 * layout, family.h; what the ops' sample_layout returns unless a policy
 * needs otherwise); returns the token count, which depends only on n_images
 * and n_text; arrays may be NULL to count only. `ids` are the sample's
 * n_text text tokens (from vla_policy_tokenize with the same n_images), or
 * NULL where their placement does not depend on them:
 *   π0.5:  image tokens (n_images·image_tokens) and n_text text tokens in
 *          group 0, then `horizon` action tokens in group 1; positions
 *          0..len−1 (openpi: cumsum of the mask − 1 over prefix + suffix).
 *   GR00T: image and text tokens with group = position (the Qwen3 LM is
 *          causal); then 1 state token and `horizon` action tokens, the
 *          action head's sequence (bidirectional in the DiT; group 0;
 *          positions 0 for the state and 0..horizon−1 for the actions, the
 *          rows of the learned position embedding). With the byte-level
 *          tokenizer the images come first; with Eagle's (cfg.tokenizer
 *          "eagle") each image's tokens follow its <img> text token, where
 *          Eagle's chat template puts its <IMG_CONTEXT> tokens. */
int64_t vla_policy_default_layout(const vla_policy_config *cfg, int32_t n_images, const int32_t *ids, int32_t n_text,
                                  uint8_t *roles, int32_t *groups, int32_t *positions);
/* Text tokens from the config's conventions (the family's), at most min(cap,
 * language.max_tokens) (longer prompts are cut, as openpi does):
 *   π0.5:  [BOS] + "Task: …, State: …;\nAction: " (vla_pi05_prompt_text);
 *   GR00T: byte-level: the task text alone (no BOS, as Qwen3); Eagle: the
 *          chat template of n_images images and the task
 *          (vla_eagle_prompt_text) with each image's <IMG_CONTEXT> tokens
 *          left out (the layout puts the image rows there).
 * *truncated (may be NULL) says whether the text was cut. */
vla_status vla_policy_default_tokenize(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                                       const float *state, int64_t state_dim, int32_t n_images, int32_t *ids,
                                       int64_t cap, int64_t *n, bool *truncated);

/* Zero p->grads. */
void vla_policy_zero_grad(vla_policy *p);

/* The host's side of the weights (backend memory: policy.h's p->weights).
 * Writing parameter i from the host: vla_policy_param_stage gives host
 * memory for its spec->numel floats (the weights themselves when the
 * backend's memory is the host's, else a malloc'd staging buffer; NULL when
 * out of memory); vla_policy_param_commit uploads it, releases it, and
 * returns the index of the first non-finite value, or −1. */
float *vla_policy_param_stage(vla_policy *p, int64_t i);
int64_t vla_policy_param_commit(vla_policy *p, int64_t i, float *stage);
/* All weights readable on the host (n_weight_floats, spec order): p->weights
 * itself when the backend's memory is the host's, else a copy in *owned
 * (free it). NULL when out of memory. */
const float *vla_policy_weights_on_host(const vla_policy *p, float **owned);

/* Wrappers for the optional ops (NULL: the config-driven defaults above). */
static inline vla_status vla_policy_init_weights(vla_policy *p, uint64_t seed) {
    vla_policy_weights_changed(p); /* every weight is written: no copy survives */
    if (p->ops->init_weights) return p->ops->init_weights(p, seed);
    vla_policy_default_init(p, seed);
    return VLA_OK;
}
static inline int64_t vla_policy_sample_layout(const vla_policy *p, int32_t n_images, const int32_t *ids,
                                               int32_t n_text, uint8_t *roles, int32_t *groups, int32_t *positions) {
    if (p->ops->sample_layout) return p->ops->sample_layout(p, n_images, ids, n_text, roles, groups, positions);
    return vla_policy_default_layout(&p->cfg, n_images, ids, n_text, roles, groups, positions);
}
static inline vla_status vla_policy_tokenize(const vla_policy *p, const char *task, const float *state,
                                             int64_t state_dim, int32_t n_images, int32_t *ids, int64_t cap,
                                             int64_t *n) {
    if (p->ops->tokenize) return p->ops->tokenize(p, task, state, state_dim, n_images, ids, cap, n);
    return vla_policy_default_tokenize(&p->cfg, p->tokenizer, task, state, state_dim, n_images, ids, cap, n, NULL);
}

#endif
