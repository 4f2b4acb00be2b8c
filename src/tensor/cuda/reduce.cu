/* reduce.cu — the cuda backend's reductions: sum, dot, Σx², max |x|, the
 * non-finite count and first index (host results), column sums (bias
 * gradients), row softmax and its backward, and the masked MSE of flow
 * matching.
 *
 * Deterministic by construction, no atomics: a vector of n elements is cut
 * into a number of contiguous blocks that depends on n alone; each thread
 * block sums its range with a fixed thread stride and a fixed shared-memory
 * tree, in double, and one final block combines the partials the same way.
 * So the same input gives the same bits on every run (not the cpu
 * backend's bits: its lanes are different; both are double accumulations of
 * f32 values). Column sums go through fixed row chunks (tensor/cuda/dev_index.h). */
#include "tensor/cuda/internal.cuh"
#include "tensor/step_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "tensor/cuda/dev_index.h"
}
#include "tensor/cuda/reduce_kernels.cuh"

/* RT, the reductions' kernels and how a vector is cut (reduce_cut): reduce_kernels.cuh */

/* Queue the reduction of a[0..n) (and b) into *dst, device memory; no wait. */
static void reduce_into(int kind, const float *a, const float *b, int64_t n, double *dst, cudaStream_t st) {
    int64_t nb, per;
    reduce_cut(n, &nb, &per);
    double *partial = (double *)vla_cuda_scratch(sizeof(double) * (size_t)nb);
    k_reduce_partial<<<(unsigned)nb, RT, 0, st>>>(kind, a, b, n, per, partial);
    k_reduce_final<<<1, RT, 0, st>>>(kind, partial, nb, dst);
    vla_cuda_scratch_free(partial);
}

static double reduce(int kind, const float *a, const float *b, int64_t n, const char *what) {
    if (n <= 0) return kind == R_FIND_NF ? 9.0e18 : 0.0;
    cudaStream_t st = vla_cuda_stream();
    vla_cuda_result_lock();
    reduce_into(kind, a, b, n, (double *)vla_cuda_result_dev(), st);
    vla_cuda_check(what);
    vla_cuda_result_fetch(sizeof(double), what);
    double r = *(double *)vla_cuda_result_host();
    vla_cuda_result_unlock();
    return r;
}

/* Queue every vector's Σx² into sums[0..count) (device memory): the two
 * launches above, no wait. */
static void sumsq_queue(int count, const float *const *x, const int64_t *n, double *sums, cudaStream_t st) {
    sumsq_vec *v = (sumsq_vec *)malloc(sizeof *v * (size_t)count);
    if (!v) abort();
    int64_t blocks = sumsq_plan(count, x, n, v);
    double *part = (double *)vla_cuda_scratch(sizeof(double) * (size_t)(blocks > 0 ? blocks : 1));
    vla_cuda_upload_t uv = vla_cuda_upload(v, sizeof *v * (size_t)count);
    const sumsq_vec *dv = (const sumsq_vec *)uv.dev;
    if (blocks > 0) k_sumsq_multi_partial<<<(unsigned)blocks, RT, 0, st>>>(dv, count, part);
    k_sumsq_multi_final<<<(unsigned)count, RT, 0, st>>>(dv, count, part, blocks, sums);
    vla_cuda_check("sum_squares (many vectors)");
    vla_cuda_upload_release(&uv);
    vla_cuda_scratch_free(part);
    free(v);
}

/* Read back: queued into the result area, one wait per area-full (1,024 vectors). */
extern "C" void vla_cuda_sum_squares_multi(int count, const float *const *x, const int64_t *n, double *out) {
    const int per_fetch = (int)(VLA_CUDA_RESULT_BYTES / sizeof(double));
    cudaStream_t st = vla_cuda_stream();
    vla_cuda_result_lock();
    for (int c0 = 0; c0 < count; c0 += per_fetch) {
        int c1 = count - c0 < per_fetch ? count : c0 + per_fetch;
        sumsq_queue(c1 - c0, x + c0, n + c0, (double *)vla_cuda_result_dev(), st);
        vla_cuda_result_fetch(sizeof(double) * (size_t)(c1 - c0), "sum_squares_multi");
        memcpy(out + c0, vla_cuda_result_host(), sizeof(double) * (size_t)(c1 - c0));
    }
    vla_cuda_result_unlock();
}

/* Added up on the device in the host's order: no wait. */
extern "C" void vla_cuda_sum_squares_total(int count, const float *const *x, const int64_t *n, double *total) {
    cudaStream_t st = vla_cuda_stream();
    if (count <= 0) {
        VLA_CUDA_OK(cudaMemsetAsync(total, 0, sizeof(double), st), "sum_squares_total");
        return;
    }
    double *sums = (double *)vla_cuda_scratch(sizeof(double) * (size_t)count);
    sumsq_queue(count, x, n, sums, st);
    k_sum_in_order<<<1, 1, 0, st>>>(sums, count, total);
    vla_cuda_check("sum_squares_total");
    vla_cuda_scratch_free(sums);
}

__global__ void k_clip_coef(float *guard, const double *sumsq, const double *also, double max_norm) {
    *guard = vla_step_guard(*sumsq, also != NULL, also ? *also : 0.0, max_norm);
}

extern "C" void vla_cuda_clip_coef(float *guard, const double *sumsq, const double *also, double max_norm) {
    k_clip_coef<<<1, 1, 0, vla_cuda_stream()>>>(guard, sumsq, also, max_norm);
    vla_cuda_check("clip_coef");
}

extern "C" double vla_cuda_sum(const float *x, int64_t n) { return reduce(R_SUM, x, NULL, n, "sum"); }
extern "C" double vla_cuda_dot(const float *a, const float *b, int64_t n) { return reduce(R_DOT, a, b, n, "dot"); }
extern "C" double vla_cuda_sum_squares(const float *x, int64_t n) { return reduce(R_SUMSQ, x, NULL, n, "sum_squares"); }
extern "C" float vla_cuda_max_abs(const float *x, int64_t n) { return (float)reduce(R_MAXABS, x, NULL, n, "max_abs"); }
extern "C" int64_t vla_cuda_count_nonfinite(const float *x, int64_t n) {
    return (int64_t)reduce(R_COUNT_NF, x, NULL, n, "count_nonfinite");
}
extern "C" int64_t vla_cuda_find_nonfinite(const float *x, int64_t n) {
    double r = reduce(R_FIND_NF, x, NULL, n, "find_nonfinite");
    return r >= (double)n ? -1 : (int64_t)r;
}

/* ---- column sums ------------------------------------------------------------------------ */

__global__ void k_colsum_partial(const float *x, int64_t rows, int64_t cols, int64_t per, double *partial) {
    int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (c >= cols) return;
    int64_t r0 = blockIdx.y * per, r1 = r0 + per < rows ? r0 + per : rows;
    double s = 0.0;
    for (int64_t r = r0; r < r1; r++) s += (double)x[r * cols + c];
    partial[blockIdx.y * cols + c] = s;
}

__global__ void k_colsum_final(float *y, float beta, const double *partial, int64_t nch, int64_t cols) {
    int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double s = 0.0;
    for (int64_t k = 0; k < nch; k++) s += partial[k * cols + c];
    y[c] = (beta == 0.0f ? 0.0f : beta * y[c]) + (float)s;
}

void vla_cuda_colsum_into(float *y, float beta, const float *x, int64_t rows, int64_t cols) {
    if (cols <= 0) return;
    vla_row_chunks ch = vla_row_chunks_for(rows, cols);
    double *partial = (double *)vla_cuda_scratch(sizeof(double) * (size_t)(ch.n_chunks * cols));
    cudaStream_t st = vla_cuda_stream();
    if (rows > 0) {
        dim3 grid((unsigned)((cols + 127) / 128), (unsigned)ch.n_chunks);
        k_colsum_partial<<<grid, 128, 0, st>>>(x, rows, cols, ch.rows_per_chunk, partial);
    }
    k_colsum_final<<<(unsigned)((cols + 127) / 128), 128, 0, st>>>(y, beta, partial, rows > 0 ? ch.n_chunks : 0,
                                                                   cols);
    vla_cuda_check("column sum");
    vla_cuda_scratch_free(partial);
}

extern "C" void vla_cuda_sum_rows(float *y, const float *x, int64_t rows, int64_t cols, float beta) {
    vla_cuda_colsum_into(y, beta, x, rows, cols);
}

/* ---- softmax over rows -------------------------------------------------------------------- */

__global__ void k_softmax(float *y, const float *x, int64_t cols) {
    __shared__ double sh[RT];
    __shared__ float smax;
    const float *xr = x + blockIdx.x * cols;
    float *yr = y + blockIdx.x * cols;
    float mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += RT) mx = fmaxf(mx, xr[c]);
    sh[threadIdx.x] = mx;
    __syncthreads();
    for (int s = RT / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) smax = (float)sh[0];
    __syncthreads();
    mx = smax;
    if (mx == -INFINITY) { /* a fully masked row: 0 */
        for (int64_t c = threadIdx.x; c < cols; c += RT) yr[c] = 0.0f;
        return;
    }
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += RT) {
        float e = expf(xr[c] - mx);
        yr[c] = e;
        s += e;
    }
    sh[threadIdx.x] = s;
    tree_sum(sh);
    float inv = (float)(1.0 / sh[0]);
    for (int64_t c = threadIdx.x; c < cols; c += RT) yr[c] *= inv;
}

__global__ void k_softmax_bwd(float *dx, const float *y, const float *dy, int64_t cols) {
    __shared__ double sh[RT];
    const float *yr = y + blockIdx.x * cols, *dyr = dy + blockIdx.x * cols;
    float *dxr = dx + blockIdx.x * cols;
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += RT) s += (double)dyr[c] * yr[c];
    sh[threadIdx.x] = s;
    tree_sum(sh);
    float dot = (float)sh[0];
    __syncthreads();
    for (int64_t c = threadIdx.x; c < cols; c += RT) dxr[c] = yr[c] * (dyr[c] - dot);
}

extern "C" void vla_cuda_softmax_rows(float *y, const float *x, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    k_softmax<<<(unsigned)rows, RT, 0, vla_cuda_stream()>>>(y, x, cols);
    vla_cuda_check("softmax_rows");
}

extern "C" void vla_cuda_softmax_rows_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    k_softmax_bwd<<<(unsigned)rows, RT, 0, vla_cuda_stream()>>>(dx, y, dy, cols);
    vla_cuda_check("softmax_rows_backward");
}

/* ---- masked MSE (policy/flow.h's rule; the cpu backend's ops_cpu_flow.c) ----------------- */

/* per (sample, step) row: Σ over the real dims of (pred − target)² in double, or 0 when padded */
/* the masked MSE's kernels (k_mse_rows, k_mse_grad, k_mse_add) and its denominator (mse_denom): reduce_kernels.cuh */

/* The loss and its gradient; the loss returned (loss_sum NULL: one wait)
 * or added to *loss_sum on the device (no wait, returns 0). */
static double masked_mse(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                         const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                         float *d_pred, double *loss_sum) {
    if (S <= 0 || H <= 0 || D <= 0) return 0.0;
    bool live;
    double denom = mse_denom(S, H, D, is_pad, real_dims, red, divisor, &live);
    vla_cuda_upload_t up = vla_cuda_upload(is_pad, (size_t)(S * H));
    vla_cuda_upload_t ur = vla_cuda_upload(real_dims, sizeof(int32_t) * (size_t)S);
    cudaStream_t st = vla_cuda_stream();
    double *rows = (double *)vla_cuda_scratch(sizeof(double) * (size_t)(S * H));
    k_mse_rows<<<vla_cuda_blocks(S * H, 128), 128, 0, st>>>(pred, target, S, H, D, (const uint8_t *)up.dev,
                                                            (const int32_t *)ur.dev, rows);
    vla_cuda_check("masked_mse");
    if (d_pred) {
        double g = live ? 2.0 / denom : 0.0;
        k_mse_grad<<<vla_cuda_blocks(S * H * D, 256), 256, 0, st>>>(d_pred, pred, target, S, H, D,
                                                                    (const uint8_t *)up.dev, (const int32_t *)ur.dev, g);
        vla_cuda_check("masked_mse gradient");
    }
    double loss = 0.0;
    if (loss_sum) {
        k_mse_add<<<1, 1, 0, st>>>(rows, S * H, denom, live, loss_sum);
        vla_cuda_check("masked_mse_acc");
    } else if (vla_cuda_capturing()) { /* a readback: no recording holds it (not issued) */
        vla_cuda_capture_fail("masked_mse reads its loss back");
    } else {
        /* the rows' sums, in row order, on the host (S·H doubles: a few KB) */
        double *host = (double *)malloc(sizeof(double) * (size_t)(S * H));
        if (!host) abort();
        VLA_CUDA_OK(cudaMemcpyAsync(host, rows, sizeof(double) * (size_t)(S * H), cudaMemcpyDeviceToHost, st),
                    "masked_mse");
        vla_cuda_host_wait("masked_mse");
        double sum = 0;
        for (int64_t r = 0; r < S * H; r++) sum += host[r];
        free(host);
        loss = live ? sum / denom : 0.0;
    }
    vla_cuda_scratch_free(rows);
    vla_cuda_upload_release(&up);
    vla_cuda_upload_release(&ur);
    return loss;
}

extern "C" double vla_cuda_masked_mse(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                                      const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red,
                                      double divisor, float *d_pred) {
    return masked_mse(pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred, NULL);
}

extern "C" void vla_cuda_masked_mse_acc(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                                        const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red,
                                        double divisor, float *d_pred, double *loss_sum) {
    masked_mse(pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred, loss_sum);
}
