/* patch_embed.c — ViT patch embedding as im2col + GEMM (non-overlapping patches). */
#include "nn/patch_embed.h"

#include "nn/linear.h"

int64_t vla_patch_embed_tokens(const vla_patch_embed_config *c) { return (c->height / c->patch) * (c->width / c->patch); }

int64_t vla_patch_embed_patches_floats(const vla_patch_embed_config *c, int64_t n_img) {
    return n_img * vla_patch_embed_tokens(c) * c->channels * c->patch * c->patch;
}

vla_status vla_patch_embed_forward(const vla_ops *ops, const vla_patch_embed_config *c, float *out, float *patches,
                                   const float *images, const float *w, const float *b, int64_t n_img) {
    if (c->patch <= 0 || c->height % c->patch || c->width % c->patch)
        return vla_error(VLA_ERR_INVALID_ARG, "patch_embed: image %lldx%lld is not a multiple of patch %lld",
                         (long long)c->height, (long long)c->width, (long long)c->patch);
    ops->im2col(patches, images, n_img, c->channels, c->height, c->width, c->patch);
    vla_linear_forward(ops, out, patches, w, b, n_img * vla_patch_embed_tokens(c), c->channels * c->patch * c->patch,
                       c->dim);
    return VLA_OK;
}

void vla_patch_embed_backward(const vla_ops *ops, const vla_patch_embed_config *c, float *d_images, float *d_w,
                              float *d_b, float *scratch, const float *d_out, const float *patches, const float *w,
                              int64_t n_img) {
    int64_t n = n_img * vla_patch_embed_tokens(c), cpp = c->channels * c->patch * c->patch;
    vla_linear_backward(ops, NULL, d_w, d_b, d_out, patches, w, n, cpp, c->dim);
    if (d_images) {
        ops->fill(scratch, 0.0f, n * cpp);
        vla_linear_backward(ops, scratch, NULL, NULL, d_out, patches, w, n, cpp, c->dim);
        ops->col2im_add(d_images, scratch, n_img, c->channels, c->height, c->width, c->patch);
    }
}
