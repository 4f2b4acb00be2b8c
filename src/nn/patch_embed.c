/* patch_embed.c — ViT patch embedding as im2col + GEMM (non-overlapping patches). */
#include "nn/patch_embed.h"

#include "nn/linear.h"
#include "tensor/parallel.h"

int64_t vla_patch_embed_tokens(const vla_patch_embed_config *c) { return (c->height / c->patch) * (c->width / c->patch); }

int64_t vla_patch_embed_patches_floats(const vla_patch_embed_config *c, int64_t n_img) {
    return n_img * vla_patch_embed_tokens(c) * c->channels * c->patch * c->patch;
}

/* dir 0: patches ← images (gather); dir 1: images += patches (scatter-add).
 * Patches do not overlap, so both directions touch each pixel once. */
static void im2col(const vla_patch_embed_config *c, float *images, float *patches, int64_t n_img, int dir) {
    int64_t p = c->patch, gh = c->height / p, gw = c->width / p, cpp = c->channels * p * p;
#pragma omp parallel for collapse(2) if (n_img * gh * gw * cpp > VLA_PAR_MIN_ELEMS)
    for (int64_t im = 0; im < n_img; im++)
        for (int64_t py = 0; py < gh; py++)
            for (int64_t px = 0; px < gw; px++) {
                float *row = patches + ((im * gh + py) * gw + px) * cpp;
                for (int64_t ch = 0; ch < c->channels; ch++)
                    for (int64_t ky = 0; ky < p; ky++) {
                        float *pix = images + ((im * c->channels + ch) * c->height + py * p + ky) * c->width + px * p;
                        float *col = row + (ch * p + ky) * p;
                        for (int64_t kx = 0; kx < p; kx++) {
                            if (dir == 0) col[kx] = pix[kx];
                            else pix[kx] += col[kx];
                        }
                    }
            }
}

vla_status vla_patch_embed_forward(const vla_ops *ops, const vla_patch_embed_config *c, float *out, float *patches,
                                   const float *images, const float *w, const float *b, int64_t n_img) {
    if (c->patch <= 0 || c->height % c->patch || c->width % c->patch)
        return vla_error(VLA_ERR_INVALID_ARG, "patch_embed: image %lldx%lld is not a multiple of patch %lld",
                         (long long)c->height, (long long)c->width, (long long)c->patch);
    im2col(c, (float *)images, patches, n_img, 0);
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
        im2col(c, d_images, scratch, n_img, 1);
    }
}
