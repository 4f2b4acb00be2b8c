/* segment_kernels.cuh — the per-segment linear's kernels (segment.cu launches them; ops.h,
 * segment_linear_*): y (or dx) in row tiles of one segment each, a tile reading one matrix, each
 * output element summing K in order with fmaf; dW[e] and db[e] over the rows of e's segments in row
 * order, each element by one thread. A header, so the CPU tests run these very kernels under an
 * emulation of the CUDA execution model (tests/tensor/cuda_emu.h). */
#ifndef VLA_TENSOR_CUDA_SEGMENT_KERNELS_CUH
#define VLA_TENSOR_CUDA_SEGMENT_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#define SEG_TM 16 /* rows of a tile: GR00T's action horizon */
#define SEG_TN 64
#define SEG_TK 16
#define SEG_THREADS 256 /* 16 × 16: ty a row (or dW's row i), tx four columns tx + 16c */

/* y[r][n] = Σ_k x[r][k]·M[k][n] (+ bias[e][n]), written, for the
 * rows [start[t], end[t]) of tile t = blockIdx.x, e = ids[seg[t]],
 * M[k][n] = w[e·mat + k·sk + n·sn]; blockIdx.y: SEG_TN columns. */
__global__ void k_seg_gemm(float *y, const float *x, int64_t K, int64_t N, const float *w, int64_t mat, int64_t sk,
                           int64_t sn, const float *bias, const int32_t *start, const int32_t *end, const int32_t *seg,
                           const int32_t *ids) {
    __shared__ float xs[SEG_TM][SEG_TK + 1];
    __shared__ float ws[SEG_TK][SEG_TN + 1];
    const int t = blockIdx.x, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t r0 = start[t], r1 = end[t], e = ids[seg[t]], n0 = (int64_t)blockIdx.y * SEG_TN;
    const float *we = w + e * mat;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t k0 = 0; k0 < K; k0 += SEG_TK) {
        {
            int i = threadIdx.x / SEG_TK, kk = threadIdx.x % SEG_TK;
            int64_t r = r0 + i, k = k0 + kk;
            xs[i][kk] = r < r1 && k < K ? x[r * K + k] : 0.0f;
        }
        for (int l = threadIdx.x; l < SEG_TK * SEG_TN; l += SEG_THREADS) {
            /* walk the matrix along its unit stride, so the loads coalesce */
            int kk = sk == 1 ? l % SEG_TK : l / SEG_TN, nn = sk == 1 ? l / SEG_TK : l % SEG_TN;
            int64_t k = k0 + kk, n = n0 + nn;
            ws[kk][nn] = k < K && n < N ? we[k * sk + n * sn] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < SEG_TK; kk++) {
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
        y[r * N + n] = bias ? acc[c] + bias[e * N + n] : acc[c];
    }
}

/* dw[e][i][j] += Σ over e's rows (items[off[g]..off[g+1]), in order) of
 * x[r][i]·dy[r][j]; blockIdx.x = g·i_tiles + i-tile of 16, blockIdx.y: SEG_TN
 * columns j. */
__global__ void k_seg_wgrad(float *dw, const float *x, const float *dy, int64_t I, int64_t J, const int32_t *dst,
                            const int32_t *off, const int32_t *items, int64_t i_tiles) {
    __shared__ float xs[SEG_TK][SEG_TM + 1];
    __shared__ float gs[SEG_TK][SEG_TN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t g = blockIdx.x / i_tiles, i0 = (blockIdx.x % i_tiles) * SEG_TM, j0 = (int64_t)blockIdx.y * SEG_TN;
    const int64_t e = dst[g], a = off[g], b = off[g + 1];
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t q0 = a; q0 < b; q0 += SEG_TK) {
        {
            int kk = threadIdx.x / SEG_TM, i = threadIdx.x % SEG_TM;
            int64_t q = q0 + kk, ii = i0 + i;
            xs[kk][i] = q < b && ii < I ? x[(int64_t)items[q] * I + ii] : 0.0f;
        }
        for (int l = threadIdx.x; l < SEG_TK * SEG_TN; l += SEG_THREADS) {
            int kk = l / SEG_TN, jj = l % SEG_TN;
            int64_t q = q0 + kk, j = j0 + jj;
            gs[kk][jj] = q < b && j < J ? dy[(int64_t)items[q] * J + j] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < SEG_TK; kk++) {
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

#endif
