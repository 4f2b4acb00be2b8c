/* layout.cu — the cuda backend's data movement: row gathers and scatters
 * through host index maps (uploaded per call), deterministic scatter-adds,
 * strided block copies, the ViT's im2col and its transpose, and the dense
 * attention mask of the reference path.
 *
 * add_rows may hit one destination row many times (an embedding row used by
 * many tokens). The cpu backend sums each destination element in i order;
 * here the index map is regrouped on the host into a CSR (tensor/cuda/dev_index.h)
 * and one thread per destination element walks its sources in i order: the
 * same order, no atomics. When every destination is distinct (the common
 * case: stream scatters) a plain kernel does it. */
#include "tensor/cuda/internal.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "tensor/cuda/dev_index.h"
}

#include "tensor/cuda/grid_stride.cuh"
#define GRID_STRIDE(i, n) VLA_GRID_STRIDE(i, n)

__global__ void k_copy_rows(float *dst, int64_t ldd, const int32_t *di, const float *src, int64_t lds, const int32_t *si,
                            int64_t n, int64_t w, float alpha, int add) {
    GRID_STRIDE(idx, n * w) {
        int64_t i = idx / w, c = idx % w;
        float v = src[(si ? (int64_t)si[i] : i) * lds + c];
        float *d = dst + (di ? (int64_t)di[i] : i) * ldd + c;
        if (add) *d += alpha == 1.0f ? v : __fmul_rn(alpha, v);
        else *d = alpha == 1.0f ? v : __fmul_rn(v, alpha);
    }
}

/* CSR scatter-add: group g's destination element c += Σ over its items, in order */
__global__ void k_add_rows_csr(float *dst, int64_t ldd, const int32_t *gdst, const int32_t *goff, const int32_t *items,
                               const float *src, int64_t lds, const int32_t *si, int32_t n_groups, int64_t w,
                               float alpha) {
    GRID_STRIDE(idx, (int64_t)n_groups * w) {
        int64_t g = idx / w, c = idx % w;
        float *d = dst + (int64_t)gdst[g] * ldd + c;
        float acc = *d;
        for (int32_t k = goff[g]; k < goff[g + 1]; k++) {
            int64_t i = items[k];
            float v = src[(si ? (int64_t)si[i] : i) * lds + c];
            acc += alpha == 1.0f ? v : __fmul_rn(alpha, v);
        }
        *d = acc;
    }
}

extern "C" void vla_cuda_copy_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                                   const int32_t *src_idx, int64_t n, int64_t w, float alpha) {
    if (n <= 0 || w <= 0) return;
    vla_cuda_upload_t ud = vla_cuda_upload(dst_idx, sizeof(int32_t) * (size_t)n);
    vla_cuda_upload_t us = vla_cuda_upload(src_idx, sizeof(int32_t) * (size_t)n);
    k_copy_rows<<<vla_cuda_blocks(n * w, 256), 256, 0, vla_cuda_stream()>>>(
        dst, ldd, (const int32_t *)ud.dev, src, lds, (const int32_t *)us.dev, n, w, alpha, 0);
    vla_cuda_check("copy_rows");
    vla_cuda_upload_release(&ud);
    vla_cuda_upload_release(&us);
}

extern "C" void vla_cuda_add_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                                  const int32_t *src_idx, int64_t n, int64_t w, float alpha) {
    if (n <= 0 || w <= 0) return;
    vla_cuda_upload_t us = vla_cuda_upload(src_idx, sizeof(int32_t) * (size_t)n);
    vla_rows_csr csr;
    memset(&csr, 0, sizeof csr);
    if (dst_idx && vla_rows_csr_make(&csr, dst_idx, n) != VLA_OK) {
        fprintf(stderr, "vla: cuda: add_rows: %s\n", vla_error_message());
        abort();
    }
    if (!dst_idx || csr.n_groups == n) { /* distinct destinations: a plain kernel */
        vla_cuda_upload_t ud = vla_cuda_upload(dst_idx, sizeof(int32_t) * (size_t)n);
        k_copy_rows<<<vla_cuda_blocks(n * w, 256), 256, 0, vla_cuda_stream()>>>(
            dst, ldd, (const int32_t *)ud.dev, src, lds, (const int32_t *)us.dev, n, w, alpha, 1);
        vla_cuda_check("add_rows");
        vla_cuda_upload_release(&ud);
    } else {
        vla_cuda_upload_t uc = vla_cuda_upload(csr.mem, sizeof(int32_t) * (size_t)csr.words);
        const int32_t *d = (const int32_t *)uc.dev;
        k_add_rows_csr<<<vla_cuda_blocks((int64_t)csr.n_groups * w, 256), 256, 0, vla_cuda_stream()>>>(
            dst, ldd, d, d + csr.n_groups, d + 2 * (int64_t)csr.n_groups + 1, src, lds, (const int32_t *)us.dev,
            csr.n_groups, w, alpha);
        vla_cuda_check("add_rows (repeated destinations)");
        vla_cuda_upload_release(&uc);
    }
    vla_rows_csr_free(&csr);
    vla_cuda_upload_release(&us);
}

extern "C" void vla_cuda_copy2d(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    VLA_CUDA_OK(cudaMemcpy2DAsync(dst, (size_t)ldd * sizeof(float), src, (size_t)lds * sizeof(float),
                                  (size_t)cols * sizeof(float), (size_t)rows, cudaMemcpyDeviceToDevice,
                                  vla_cuda_stream()),
                "copy2d");
}

/* patch row (im, py, px), column (ch, ky, kx) ↔ pixel (im, ch, py·p + ky, px·p + kx); each pixel once */
__global__ void k_im2col(float *images, float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p,
                         int dir) {
    int64_t gh = H / p, gw = W / p, cpp = C * p * p;
    GRID_STRIDE(idx, n_img * gh * gw * cpp) {
        int64_t row = idx / cpp, col = idx % cpp;
        int64_t im = row / (gh * gw), py = (row / gw) % gh, px = row % gw;
        int64_t ch = col / (p * p), ky = (col / p) % p, kx = col % p;
        float *pix = images + ((im * C + ch) * H + py * p + ky) * W + px * p + kx;
        if (dir == 0) patches[idx] = *pix;
        else *pix += patches[idx];
    }
}

extern "C" void vla_cuda_im2col(float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W,
                                int64_t p) {
    int64_t n = n_img * (H / p) * (W / p) * C * p * p;
    if (n <= 0) return;
    k_im2col<<<vla_cuda_blocks(n, 256), 256, 0, vla_cuda_stream()>>>((float *)images, patches, n_img, C, H, W, p, 0);
    vla_cuda_check("im2col");
}

extern "C" void vla_cuda_col2im_add(float *images, const float *patches, int64_t n_img, int64_t C, int64_t H,
                                    int64_t W, int64_t p) {
    int64_t n = n_img * (H / p) * (W / p) * C * p * p;
    if (n <= 0) return;
    k_im2col<<<vla_cuda_blocks(n, 256), 256, 0, vla_cuda_stream()>>>(images, (float *)patches, n_img, C, H, W, p, 1);
    vla_cuda_check("col2im_add");
}

/* mask [nq, nk]: 0 where query i may attend key j, −inf elsewhere */
__global__ void k_attention_mask(float *mask, const int32_t *cu_q, const int32_t *gq, const int32_t *cu_k,
                                 const int32_t *gk, int32_t n_seg, int64_t nq, int64_t nk) {
    GRID_STRIDE(idx, nq * nk) {
        int64_t i = idx / nk, j = idx % nk;
        int32_t s = vla_cuda_seg_of(cu_q, n_seg, i);
        int32_t gi = gq ? gq[i] : 0, gj = gk ? gk[j] : 0;
        bool ok = j >= cu_k[s] && j < cu_k[s + 1] && gj <= gi;
        mask[idx] = ok ? 0.0f : -INFINITY;
    }
}

extern "C" void vla_cuda_attention_mask(float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks) {
    int64_t nq = qs->cu_seqlens[qs->n_seg], nk = ks->cu_seqlens[ks->n_seg];
    if (nq <= 0 || nk <= 0) return;
    if (qs->n_seg < 1) return;
    vla_cuda_upload_t a = vla_cuda_upload(qs->cu_seqlens, sizeof(int32_t) * (size_t)(qs->n_seg + 1));
    vla_cuda_upload_t b = vla_cuda_upload(qs->group, sizeof(int32_t) * (size_t)nq);
    vla_cuda_upload_t c = vla_cuda_upload(ks->cu_seqlens, sizeof(int32_t) * (size_t)(ks->n_seg + 1));
    vla_cuda_upload_t d = vla_cuda_upload(ks->group, sizeof(int32_t) * (size_t)nk);
    k_attention_mask<<<vla_cuda_blocks(nq * nk, 256), 256, 0, vla_cuda_stream()>>>(
        mask, (const int32_t *)a.dev, (const int32_t *)b.dev, (const int32_t *)c.dev, (const int32_t *)d.dev,
        qs->n_seg, nq, nk);
    vla_cuda_check("attention_mask");
    vla_cuda_upload_release(&a), vla_cuda_upload_release(&b), vla_cuda_upload_release(&c), vla_cuda_upload_release(&d);
}
