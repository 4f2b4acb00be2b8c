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

#define TM 16 /* rows of a tile: GR00T's action horizon */
#define TN 64
#define TK 16
#define THREADS 256 /* 16 × 16: ty a row (or dW's row i), tx four columns tx + 16c */

/* y[r][n] (+)= Σ_k x[r][k]·M[k][n] (+ bias[e][n] when overwriting) for the
 * rows [start[t], end[t]) of tile t = blockIdx.x, e = ids[seg[t]],
 * M[k][n] = w[e·mat + k·sk + n·sn]; blockIdx.y: TN columns. */
__global__ void k_seg_gemm(float *y, const float *x, int64_t K, int64_t N, const float *w, int64_t mat, int64_t sk,
                           int64_t sn, const float *bias, const int32_t *start, const int32_t *end, const int32_t *seg,
                           const int32_t *ids, bool accumulate) {
    __shared__ float xs[TM][TK + 1];
    __shared__ float ws[TK][TN + 1];
    const int t = blockIdx.x, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t r0 = start[t], r1 = end[t], e = ids[seg[t]], n0 = (int64_t)blockIdx.y * TN;
    const float *we = w + e * mat;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t k0 = 0; k0 < K; k0 += TK) {
        {
            int i = threadIdx.x / TK, kk = threadIdx.x % TK;
            int64_t r = r0 + i, k = k0 + kk;
            xs[i][kk] = r < r1 && k < K ? x[r * K + k] : 0.0f;
        }
        for (int l = threadIdx.x; l < TK * TN; l += THREADS) {
            /* walk the matrix along its unit stride, so the loads coalesce */
            int kk = sk == 1 ? l % TK : l / TN, nn = sk == 1 ? l / TK : l % TN;
            int64_t k = k0 + kk, n = n0 + nn;
            ws[kk][nn] = k < K && n < N ? we[k * sk + n * sn] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < TK; kk++) {
            float a = xs[ty][kk];
            for (int c = 0; c < 4; c++) acc[c] = fmaf(a, ws[kk][tx + 16 * c], acc[c]);
        }
        __syncthreads();
    }
    int64_t r = r0 + ty;
    if (r >= r1) return;
    for (int c = 0; c < 4; c++) {
        int64_t n = n0 + tx + 16 * c;
        if (n >= N) continue;
        float *p = y + r * N + n;
        if (accumulate) *p += acc[c];
        else *p = bias ? acc[c] + bias[e * N + n] : acc[c];
    }
}

/* dw[e][i][j] += Σ over e's rows (items[off[g]..off[g+1]), in order) of
 * x[r][i]·dy[r][j]; blockIdx.x = g·i_tiles + i-tile of 16, blockIdx.y: TN
 * columns j. */
__global__ void k_seg_wgrad(float *dw, const float *x, const float *dy, int64_t I, int64_t J, const int32_t *dst,
                            const int32_t *off, const int32_t *items, int64_t i_tiles) {
    __shared__ float xs[TK][TM + 1];
    __shared__ float gs[TK][TN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t g = blockIdx.x / i_tiles, i0 = (blockIdx.x % i_tiles) * TM, j0 = (int64_t)blockIdx.y * TN;
    const int64_t e = dst[g], a = off[g], b = off[g + 1];
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t q0 = a; q0 < b; q0 += TK) {
        {
            int kk = threadIdx.x / TM, i = threadIdx.x % TM;
            int64_t q = q0 + kk, ii = i0 + i;
            xs[kk][i] = q < b && ii < I ? x[(int64_t)items[q] * I + ii] : 0.0f;
        }
        for (int l = threadIdx.x; l < TK * TN; l += THREADS) {
            int kk = l / TN, jj = l % TN;
            int64_t q = q0 + kk, j = j0 + jj;
            gs[kk][jj] = q < b && j < J ? dy[(int64_t)items[q] * J + j] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < TK; kk++) {
            float xv = xs[kk][ty];
            for (int c = 0; c < 4; c++) acc[c] = fmaf(xv, gs[kk][tx + 16 * c], acc[c]);
        }
        __syncthreads();
    }
    int64_t i = i0 + ty;
    if (i >= I) return;
    for (int c = 0; c < 4; c++) {
        int64_t j = j0 + tx + 16 * c;
        if (j < J) dw[(e * I + i) * J + j] += acc[c];
    }
}

/* db[e][j] += Σ over e's rows in order of dy[r][j] (in double, as sum_rows) */
__global__ void k_seg_bgrad(float *db, const float *dy, int64_t J, const int32_t *dst, const int32_t *off,
                            const int32_t *items, int64_t n_groups) {
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= n_groups * J) return;
    int64_t g = t / J, j = t % J;
    double s = 0.0;
    for (int64_t q = off[g]; q < off[g + 1]; q++) s += (double)dy[(int64_t)items[q] * J + j];
    float *p = db + (int64_t)dst[g] * J + j;
    *p = (float)((double)*p + s);
}

static void die(const char *what) {
    fprintf(stderr, "vla: cuda: %s: %s\n", what, vla_error_message());
    abort();
}

/* y (+)= x·M_e per segment; M_e[k][n] = w[e·mat + k·sk + n·sn] */
static void seg_gemm(float *y, const float *x, int64_t K, int64_t N, const float *w, int64_t mat, int64_t sk,
                     int64_t sn, const float *bias, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                     bool accumulate, const char *what) {
    vla_seg_chunks tiles;
    if (vla_seg_chunks_make_rows(&tiles, cu, n_seg, TM) != VLA_OK) die(what);
    if (tiles.n_chunks > 0 && N > 0) {
        vla_cuda_upload_t ut = vla_cuda_upload(tiles.mem, sizeof(int32_t) * (size_t)tiles.words);
        vla_cuda_upload_t ui = vla_cuda_upload(ids, sizeof(int32_t) * (size_t)n_seg);
        const int32_t *d = (const int32_t *)ut.dev;
        int64_t nc = tiles.n_chunks;
        dim3 grid((unsigned)nc, (unsigned)((N + TN - 1) / TN));
        k_seg_gemm<<<grid, THREADS, 0, vla_cuda_stream()>>>(y, x, K, N, w, mat, sk, sn, bias, d, d + nc, d + 2 * nc,
                                                            (const int32_t *)ui.dev, accumulate);
        vla_cuda_check(what);
        vla_cuda_upload_release(&ut);
        vla_cuda_upload_release(&ui);
    }
    vla_seg_chunks_free(&tiles);
}

extern "C" void vla_cuda_segment_linear_forward(float *y, const float *x, const float *w, const float *b,
                                                const int32_t *ids, const int32_t *cu, int32_t n_seg, int64_t in_dim,
                                                int64_t out_dim) {
    seg_gemm(y, x, in_dim, out_dim, w, in_dim * out_dim, out_dim, 1, b, ids, cu, n_seg, false,
             "segment_linear_forward");
}

extern "C" void vla_cuda_segment_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                                 const float *w, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                                                 int64_t in_dim, int64_t out_dim) {
    /* dx_s += dy_s·W_eᵀ: M[k = j][n = i] = W_e[i][j] */
    if (dx) seg_gemm(dx, dy, out_dim, in_dim, w, in_dim * out_dim, 1, out_dim, NULL, ids, cu, n_seg, true,
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
        int64_t i_tiles = (in_dim + TM - 1) / TM;
        dim3 grid((unsigned)(csr.n_groups * i_tiles), (unsigned)((out_dim + TN - 1) / TN));
        k_seg_wgrad<<<grid, THREADS, 0, vla_cuda_stream()>>>(dw, x, dy, in_dim, out_dim, dst, off, items, i_tiles);
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
