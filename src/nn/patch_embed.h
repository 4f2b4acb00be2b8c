/* patch_embed.h — ViT patch embedding: a Conv2d with kernel = stride =
 * patch, computed as im2col + one GEMM. Images are f32 NCHW (PyTorch's
 * layout); the weight is the conv's [dim, C, p, p] (= [dim, C·p·p]);
 * patches are numbered row-major (py, px) per image, as ViT's
 * conv(x).flatten(2).transpose(1, 2), so out is [n_img·(H/p)·(W/p), dim]. */
#ifndef VLA_NN_PATCH_EMBED_H
#define VLA_NN_PATCH_EMBED_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

typedef struct {
    int64_t channels, height, width, patch, dim;
} vla_patch_embed_config;

/* Tokens per image, and floats of the saved `patches` buffer ([tokens, C·p·p]). */
int64_t vla_patch_embed_tokens(const vla_patch_embed_config *cfg);
int64_t vla_patch_embed_patches_floats(const vla_patch_embed_config *cfg, int64_t n_img);

/* Fails if H or W is not a multiple of the patch size. b may be NULL. */
vla_status vla_patch_embed_forward(const vla_ops *ops, const vla_patch_embed_config *cfg, float *out,
                                   float *patches, const float *images, const float *w, const float *b,
                                   int64_t n_img);
/* d_w, d_b, d_images accumulate (each may be NULL); d_images needs `scratch`
 * of vla_patch_embed_patches_floats floats. */
void vla_patch_embed_backward(const vla_ops *ops, const vla_patch_embed_config *cfg, float *d_images, float *d_w,
                              float *d_b, float *scratch, const float *d_out, const float *patches, const float *w,
                              int64_t n_img);

#endif
