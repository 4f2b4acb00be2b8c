/* ops_cpu_layout.c — the CPU backend's data movement: row gathers, scatters
 * and scatter-adds through host index maps (embeddings, the π0.5 streams'
 * merged token order, GR00T's shared prefixes), strided block copies, the
 * ViT's im2col and its transpose, and the dense attention mask.
 *
 * A row copy writes each destination row once, so rows split across
 * threads freely. A row *add* may hit one destination row many times (an
 * embedding row used by many tokens), so its work is split over column
 * blocks instead: each destination element is summed in i order whatever
 * the thread count. */
#include "tensor/cpu/ops_cpu_internal.h"

#include <math.h>
#include <string.h>

#include "tensor/cpu/parallel.h"
#include "tensor/seqlens.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS
#define COLS 64

void vla_cpu_copy_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                       const int32_t *src_idx, int64_t n, int64_t w, float alpha) {
#pragma omp parallel for if (n * w > PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float *d = dst + (dst_idx ? (int64_t)dst_idx[i] : i) * ldd;
        const float *s = src + (src_idx ? (int64_t)src_idx[i] : i) * lds;
        if (alpha == 1.0f) {
            memmove(d, s, (size_t)w * sizeof(float));
        } else {
#pragma omp simd
            for (int64_t c = 0; c < w; c++) d[c] = s[c] * alpha;
        }
    }
}

void vla_cpu_add_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                      const int32_t *src_idx, int64_t n, int64_t w, float alpha) {
    int64_t nblocks = (w + COLS - 1) / COLS;
#pragma omp parallel for if (n * w > PAR_MIN)
    for (int64_t cb = 0; cb < nblocks; cb++) {
        int64_t c0 = cb * COLS, c1 = c0 + COLS < w ? c0 + COLS : w;
        for (int64_t i = 0; i < n; i++) {
            float *d = dst + (dst_idx ? (int64_t)dst_idx[i] : i) * ldd;
            const float *s = src + (src_idx ? (int64_t)src_idx[i] : i) * lds;
            if (alpha == 1.0f)
                for (int64_t c = c0; c < c1; c++) d[c] += s[c];
            else
                for (int64_t c = c0; c < c1; c++) d[c] += alpha * s[c];
        }
    }
}

void vla_cpu_copy2d(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) memmove(dst + r * ldd, src + r * lds, (size_t)cols * sizeof(float));
}

/* dir 0: patches ← images (gather); dir 1: images += patches (scatter-add).
 * Patches do not overlap, so both directions touch each pixel once. */
static void im2col_dir(float *images, float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p,
                       int dir) {
    int64_t gh = H / p, gw = W / p, cpp = C * p * p;
#pragma omp parallel for collapse(2) if (n_img * gh * gw * cpp > PAR_MIN)
    for (int64_t im = 0; im < n_img; im++)
        for (int64_t py = 0; py < gh; py++)
            for (int64_t px = 0; px < gw; px++) {
                float *row = patches + ((im * gh + py) * gw + px) * cpp;
                for (int64_t ch = 0; ch < C; ch++)
                    for (int64_t ky = 0; ky < p; ky++) {
                        float *pix = images + ((im * C + ch) * H + py * p + ky) * W + px * p;
                        float *col = row + (ch * p + ky) * p;
                        for (int64_t kx = 0; kx < p; kx++) {
                            if (dir == 0) col[kx] = pix[kx];
                            else pix[kx] += col[kx];
                        }
                    }
            }
}

void vla_cpu_im2col(float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p) {
    im2col_dir((float *)images, patches, n_img, C, H, W, p, 0);
}

void vla_cpu_col2im_add(float *images, const float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W,
                        int64_t p) {
    im2col_dir(images, (float *)patches, n_img, C, H, W, p, 1);
}

void vla_cpu_attention_mask(float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks) {
    int64_t nq = qs->cu_seqlens[qs->n_seg], nk = ks->cu_seqlens[ks->n_seg];
#pragma omp parallel for if (nq * nk > PAR_MIN)
    for (int64_t i = 0; i < nq; i++) {
        int32_t si = vla_seqlens_find(qs->cu_seqlens, qs->n_seg, i);
        int32_t gi = qs->group ? qs->group[i] : 0;
        int32_t k0 = ks->cu_seqlens[si], k1 = ks->cu_seqlens[si + 1];
        for (int64_t j = 0; j < nk; j++) {
            int32_t gj = ks->group ? ks->group[j] : 0;
            mask[i * nk + j] = (j >= k0 && j < k1 && gj <= gi) ? 0.0f : -INFINITY;
        }
    }
}
