/* vit.h — the SigLIP-style vision transformer both policies share (π0.5's
 * SigLIP So400m, GR00T's SigLIP-2), on the transformer block of nn/block.h.
 *
 *   images [n_img, C, H, W] f32 in [0, 1], in the backend's memory (as are out, acts, scratch)
 *     → 2x − 1 (SigLIP's pixel normalisation, done here)
 *     → patch embedding (conv p×p, stride p, bias) + learned position embedding
 *     → depth × blocks: LayerNorm, biased MHA (bidirectional within an image),
 *                       LayerNorm, GELU-tanh MLP
 *     → post_layernorm → out [n_img·tokens, width]
 * Each image is its own attention segment; head_dim = width / heads.
 *
 * USE
 *   in the family's inventory:  vla_vit_inventory(b, &cfg->vision, prefix, &W->vit);
 *   after binding:              VLA_TRY(vla_vit_setup(&W->vit, &cfg->vision, ops));
 *   float *acts = …vla_vit_acts_floats(vit, n_img) floats…;   // kept for backward
 *   VLA_TRY(vla_vit_forward(vit, out, acts, images, n_img));
 *   float *scratch = …vla_vit_scratch_floats(vit, n_img, want_d_images) floats…;
 *   VLA_TRY(vla_vit_backward(vit, d_images_or_NULL, d_out, acts, scratch, n_img));
 *   vla_vit_release(vit);   // frees the small internal cu_seqlens buffer
 * Backward ADDS into the parameter gradients and d_images (llm.c style). */
#ifndef VLA_POLICY_VIT_H
#define VLA_POLICY_VIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "nn/block.h"
#include "policy/config.h"
#include "policy/param_spec.h"
#include "tensor/ops.h"

typedef struct vla_policy vla_policy; /* policy.h */

typedef struct vla_vit {
    vla_vit_config cfg;
    const vla_ops *ops;
    int64_t tokens;                 /* per image: (image_size / patch)² */
    vla_block_config block;
    vla_wg patch_w, patch_b, pos, post_w, post_b;
    vla_block_weights *layers;      /* [depth], bound by the inventory */
    int32_t *cu;                    /* [n_img + 1], grown on demand */
    int64_t cu_cap;
    /* the policy whose parameters these are (NULL: none): backward reports
     * each layer's gradients ready to it (policy.h) */
    vla_policy *owner;
    /* what the forward keeps for the backward (nn/block.h): VLA_STACK_ALL
     * (setup's), or VLA_STACK_RECOMPUTE under activation checkpointing; the
     * size tables follow it, so set it before sizing a forward's memory */
    vla_block_keep keep;
} vla_vit;

/* Declare (or bind) the ViT's tensors, HF SiglipVisionModel's `vision_model`
 * names under `prefix`, in the state_dict's order. */
void vla_vit_inventory(vla_param_builder *b, const vla_vit_config *cfg, const char *prefix, vla_vit *v);
/* Sizes and the block configuration, once the weights are bound. */
vla_status vla_vit_setup(vla_vit *v, const vla_vit_config *cfg, const vla_ops *ops);
void vla_vit_release(vla_vit *v);

/* Floats of the saved activations, and of the backward's scratch, for n_img images. */
int64_t vla_vit_acts_floats(const vla_vit *v, int64_t n_img);
int64_t vla_vit_scratch_floats(const vla_vit *v, int64_t n_img, bool d_images);

/* out [n_img·tokens, width]; acts as above (the forward works in it). */
vla_status vla_vit_forward(vla_vit *v, float *out, float *acts, const float *images, int64_t n_img);
/* d_out [n_img·tokens, width]; d_images (may be NULL) [n_img, C, H, W] accumulates; acts as the
 * forward left them (written again under VLA_STACK_RECOMPUTE). */
vla_status vla_vit_backward(vla_vit *v, float *d_images, const float *d_out, float *acts, float *scratch,
                            int64_t n_img);
/* Whether any ViT parameter trains (its backward then has work to do). */
bool vla_vit_trains(const vla_vit *v);

/* Model FLOPs of one forward over n_img images (2·MACs of every matrix + attention). */
double vla_vit_forward_flops(const vla_vit *v, int64_t n_img);

#endif
