/* vit.h — the SigLIP-style vision transformer both policies share (π0.5's
 * SigLIP So400m, GR00T's SigLIP-2), with an explicit forward and backward.
 *
 *   images [n_img, C, H, W] f32 in [0, 1]
 *     → 2x − 1 (SigLIP's pixel normalisation, done here)
 *     → patch embedding (conv p×p, stride p, bias) + learned position embedding
 *     → depth × pre-LN blocks: x += out_proj(MHA(LN1(x)))   (bidirectional within an image)
 *                              x += fc2(gelu_tanh(fc1(LN2(x))))
 *     → post_layernorm → out [n_img·tokens, width]
 * Each image is its own attention segment. Sizes come from vla_vit_config
 * (head_dim = width / heads); weights are bound by name from the policy's
 * parameter store (HF SiglipVisionModel's `vision_model` names under a
 * prefix, as param_spec.c lays them out), so grads are the params' grads
 * (NULL when the vision group is frozen: backward then skips them).
 *
 * USE
 *   vla_vit vit;
 *   VLA_TRY(vla_vit_bind(&vit, &cfg->vision, ops, p->params, &p->specs,
 *                        "paligemma_with_expert.paligemma.model.vision_tower.vision_model"));
 *   float *acts = …vla_vit_acts_floats(&vit, n_img) floats…;   // kept for backward
 *   VLA_TRY(vla_vit_forward(&vit, out, acts, images, n_img));
 *   …
 *   float *scratch = …vla_vit_scratch_floats(&vit, n_img, want_d_images) floats…;
 *   VLA_TRY(vla_vit_backward(&vit, d_images_or_NULL, d_out, acts, scratch, n_img));
 *   vla_vit_release(&vit);   // frees the small internal cu_seqlens buffer
 * Backward ADDS into the parameter gradients and d_images (llm.c style);
 * it may overwrite `acts` (it does not, today, but treat them as spent). */
#ifndef VLA_POLICY_VIT_H
#define VLA_POLICY_VIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "tensor/ops.h"

/* A weight and its gradient (grad NULL when frozen). */
typedef struct {
    const float *w;
    float *g;
} vla_vit_tensor;

typedef struct {
    vla_vit_tensor ln1_w, ln1_b, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
} vla_vit_layer;

typedef struct {
    vla_vit_config cfg;
    const vla_ops *ops;
    int64_t tokens; /* per image: (image_size / patch)² */
    vla_vit_tensor patch_w, patch_b, pos, post_w, post_b;
    vla_vit_layer *layers; /* [depth] */
    int32_t *cu;           /* [n_img + 1], grown on demand */
    int64_t cu_cap;
    /* the policy whose parameters these are (set after bind; NULL: none):
     * backward reports each layer's gradients ready to it (policy.h) */
    vla_policy *owner;
} vla_vit;

/* Look up every ViT tensor "<prefix>.embeddings.patch_embedding.weight", …,
 * "<prefix>.post_layernorm.bias" in specs/params; a missing name or a shape
 * that disagrees with cfg is VLA_ERR_INVALID_ARG. */
vla_status vla_vit_bind(vla_vit *v, const vla_vit_config *cfg, const vla_ops *ops, const vla_param *params,
                        const vla_param_list *specs, const char *prefix);
void vla_vit_release(vla_vit *v);

/* Floats of the saved activations, and of the backward's scratch, for n_img images. */
int64_t vla_vit_acts_floats(const vla_vit *v, int64_t n_img);
int64_t vla_vit_scratch_floats(const vla_vit *v, int64_t n_img, bool d_images);

/* out [n_img·tokens, width]; acts as above (NULL is not allowed: the forward works in it). */
vla_status vla_vit_forward(vla_vit *v, float *out, float *acts, const float *images, int64_t n_img);
/* d_out [n_img·tokens, width]; d_images (may be NULL) [n_img, C, H, W] accumulates. */
vla_status vla_vit_backward(vla_vit *v, float *d_images, const float *d_out, const float *acts, float *scratch,
                            int64_t n_img);

/* Model FLOPs of one forward over n_img images (2·MACs of every matrix + attention). */
double vla_vit_forward_flops(const vla_vit *v, int64_t n_img);

#endif
