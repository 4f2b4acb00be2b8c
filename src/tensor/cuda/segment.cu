/* segment.cu — the cuda backend's per-segment linear (ops.h; GR00T's
 * per-embodiment encoders and decoder): every segment's product in one
 * launch, where one cuBLASLt call per sample made ~1.3k launches per GR00T
 * step (issue 40). Deterministic without atomics:
 *  - y (and dx) in row tiles of one segment each (tensor/cuda/dev_index.h,
 *    vla_seg_chunks_make_rows), so a tile reads one matrix; each output
 *    element sums K in order in f32 (fmaf), as a GEMM does in its own order;
 *  - dW[e] and db[e] over the rows of e's segments in row order (the rows
 *    grouped by embodiment: vla_rows_csr_make), each element summed by one
 *    thread.
 * f32 throughout, as the cpu backend's per-segment SGEMMs; the results
 * differ from them only in summation order (the conformance suite's GEMM
 * tolerance). */
#include "tensor/cuda/internal.cuh"

#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "tensor/cuda/dev_index.h"
}
#include "tensor/cuda/segment_kernels.cuh"

/* the kernels (k_seg_gemm, k_seg_wgrad, k_seg_bgrad) and their tile sizes: segment_kernels.cuh */

static void die(const char *what) {
    fprintf(stderr, "vla: cuda: %s: %s\n", what, vla_error_message());
    abort();
}

/* y = x·M_e per segment, written; M_e[k][n] = w[e·mat + k·sk + n·sn] */
static void seg_gemm(float *y, const float *x, int64_t K, int64_t N, const float *w, int64_t mat, int64_t sk,
                     int64_t sn, const float *bias, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                     const char *what) {
    vla_seg_chunks tiles;
    if (vla_seg_chunks_make_rows(&tiles, cu, n_seg, SEG_TM) != VLA_OK) die(what);
    if (tiles.n_chunks > 0 && N > 0) {
        vla_cuda_upload_t ut = vla_cuda_upload(tiles.mem, sizeof(int32_t) * (size_t)tiles.words);
        vla_cuda_upload_t ui = vla_cuda_upload(ids, sizeof(int32_t) * (size_t)n_seg);
        const int32_t *d = (const int32_t *)ut.dev;
        int64_t nc = tiles.n_chunks;
        dim3 grid((unsigned)nc, (unsigned)((N + SEG_TN - 1) / SEG_TN));
        k_seg_gemm<<<grid, SEG_THREADS, 0, vla_cuda_stream()>>>(y, x, K, N, w, mat, sk, sn, bias, d, d + nc, d + 2 * nc,
                                                            (const int32_t *)ui.dev);
        vla_cuda_check(what);
        vla_cuda_upload_release(&ut);
        vla_cuda_upload_release(&ui);
    }
    vla_seg_chunks_free(&tiles);
}

extern "C" void vla_cuda_segment_linear_forward(float *y, const float *x, const float *w, const float *b,
                                                const int32_t *ids, const int32_t *cu, int32_t n_seg, int64_t in_dim,
                                                int64_t out_dim) {
    seg_gemm(y, x, in_dim, out_dim, w, in_dim * out_dim, out_dim, 1, b, ids, cu, n_seg, "segment_linear_forward");
}

extern "C" void vla_cuda_segment_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                                 const float *w, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                                                 int64_t in_dim, int64_t out_dim) {
    /* dx_s = dy_s·W_eᵀ, written (ops.h): M[k = j][n = i] = W_e[i][j] */
    if (dx)
        seg_gemm(dx, dy, out_dim, in_dim, w, in_dim * out_dim, 1, out_dim, NULL, ids, cu, n_seg,
                 "segment_linear_backward (dx)");
    int64_t n = n_seg > 0 ? cu[n_seg] : 0;
    if ((!dw && !db) || n <= 0) return;
    /* the rows grouped by embodiment, each group's rows in order */
    int32_t *row_e = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!row_e) abort();
    for (int32_t s = 0; s < n_seg; s++)
        for (int32_t r = cu[s]; r < cu[s + 1]; r++) row_e[r] = ids[s];
    vla_rows_csr csr;
    if (vla_rows_csr_make(&csr, row_e, n) != VLA_OK) die("segment_linear_backward");
    free(row_e);
    vla_cuda_upload_t uc = vla_cuda_upload(csr.mem, sizeof(int32_t) * (size_t)csr.words);
    const int32_t *d = (const int32_t *)uc.dev;
    const int32_t *dst = d, *off = d + csr.n_groups, *items = d + 2 * (int64_t)csr.n_groups + 1;
    if (dw && in_dim > 0 && out_dim > 0) {
        int64_t i_tiles = (in_dim + SEG_TM - 1) / SEG_TM;
        dim3 grid((unsigned)(csr.n_groups * i_tiles), (unsigned)((out_dim + SEG_TN - 1) / SEG_TN));
        k_seg_wgrad<<<grid, SEG_THREADS, 0, vla_cuda_stream()>>>(dw, x, dy, in_dim, out_dim, dst, off, items, i_tiles);
        vla_cuda_check("segment_linear_backward (dw)");
    }
    if (db && out_dim > 0) {
        k_seg_bgrad<<<vla_cuda_blocks((int64_t)csr.n_groups * out_dim, 256), 256, 0, vla_cuda_stream()>>>(
            db, dy, out_dim, dst, off, items, csr.n_groups);
        vla_cuda_check("segment_linear_backward (db)");
    }
    vla_cuda_upload_release(&uc);
    vla_rows_csr_free(&csr);
}
