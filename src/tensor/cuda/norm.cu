/* norm.cu — the cuda backend's norms: LayerNorm, RMSNorm (w, 1 + w or
 * none), AdaLN and AdaRMS with per-sample modulation, and π0.5's gated
 * residual, forward and backward.
 *
 * One thread block per row; the row statistics are summed in double with a
 * fixed shared-memory tree and rounded to f32 as the cpu backend does
 * (mean, rstd, the backward's two means). Parameter and modulation
 * gradients are column sums over tokens: fixed chunks of rows (per sample
 * for the modulations, tensor/cuda/dev_index.h), each chunk summed in row order
 * in double by one thread per column, then the chunks in order — the same
 * bits on every run, no atomics. */
#include "tensor/cuda/internal.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "tensor/cuda/dev_index.h"
#include "tensor/cuda/gemm_plan.h"
}
#include "base/numfmt.h"
#include "tensor/cuda/norm_kernels.cuh"

/* NT, block_sum, d_gain and the row kernels (k_norm_fwd, k_norm_bwd_in): norm_kernels.cuh */

/* ---- column sums per chunk of rows ---------------------------------------------------------
 * what: 0 dy·((x − mean)·rstd), 1 dy, 2 dy·(x·rstd), 3 dy·y */
__device__ __forceinline__ double contrib(int what, const float *dy, const float *x, const float *y, const float *mean,
                                          const float *rstd, int64_t r, int64_t i) {
    switch (what) {
    case 0: return (double)dy[i] * (double)__fmul_rn(x[i] - mean[r], rstd[r]);
    case 1: return (double)dy[i];
    case 2: return (double)dy[i] * (double)__fmul_rn(x[i], rstd[r]);
    default: return (double)dy[i] * (double)y[i];
    }
}

__global__ void k_chunk_colsum(int what, const float *dy, const float *x, const float *y, const float *mean,
                               const float *rstd, int64_t dim, const int32_t *start, const int32_t *end,
                               double *partial) {
    int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (c >= dim) return;
    int64_t ch = blockIdx.y;
    double s = 0.0;
    for (int64_t r = start[ch]; r < end[ch]; r++) s += contrib(what, dy, x, y, mean, rstd, r, r * dim + c);
    partial[ch * dim + c] = s;
}

/* dst[s·stride + c] += Σ over segment s's chunks, in order */
__global__ void k_chunk_final(float *dst, int64_t stride, const double *partial, const int32_t *first, int32_t n_seg,
                              int64_t dim) {
    int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (idx >= (int64_t)n_seg * dim) return;
    int64_t s = idx / dim, c = idx % dim;
    double acc = 0.0;
    for (int32_t k = first[s]; k < first[s + 1]; k++) acc += partial[(int64_t)k * dim + c];
    dst[s * stride + c] += (float)acc;
}

/* For each (what, dst, stride) asked: dst[s·stride + c] += Σ_{rows of s} contrib. */
typedef struct {
    int what;
    float *dst;
    int64_t stride;
} colsum_job;

static void seg_colsums(const colsum_job *jobs, int n_jobs, const float *dy, const float *x, const float *y,
                        const float *mean, const float *rstd, int64_t n, int64_t dim, const int32_t *cu,
                        int32_t n_seg) {
    int32_t one[2] = {0, (int32_t)n};
    if (!cu) cu = one, n_seg = 1;
    vla_seg_chunks ch;
    if (vla_seg_chunks_make(&ch, cu, n_seg) != VLA_OK) {
        fprintf(stderr, "vla: cuda: %s\n", vla_error_message());
        abort();
    }
    vla_cuda_upload_t u = vla_cuda_upload(ch.mem, sizeof(int32_t) * (size_t)ch.words);
    const int32_t *d = (const int32_t *)u.dev;
    const int32_t *d_start = d, *d_end = d + ch.n_chunks, *d_first = d + 3 * (int64_t)ch.n_chunks;
    double *partial = (double *)vla_cuda_scratch(sizeof(double) * (size_t)((ch.n_chunks > 0 ? ch.n_chunks : 1) * dim));
    cudaStream_t st = vla_cuda_stream();
    for (int j = 0; j < n_jobs; j++) {
        if (!jobs[j].dst) continue;
        if (ch.n_chunks > 0) {
            dim3 grid((unsigned)((dim + 127) / 128), (unsigned)ch.n_chunks);
            k_chunk_colsum<<<grid, 128, 0, st>>>(jobs[j].what, dy, x, y, mean, rstd, dim, d_start, d_end, partial);
        }
        k_chunk_final<<<vla_cuda_blocks((int64_t)n_seg * dim, 128), 128, 0, st>>>(jobs[j].dst, jobs[j].stride, partial,
                                                                                d_first, n_seg, dim);
        vla_cuda_check("norm parameter gradient");
    }
    vla_cuda_scratch_free(partial);
    vla_cuda_upload_release(&u);
    vla_seg_chunks_free(&ch);
}

static void fwd(int mode, float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                bool one_plus, const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps,
                const vla_norm_fuse *f, const char *what) {
    if (n <= 0 || dim <= 0) return;
    vla_cuda_upload_t u = vla_cuda_upload(cu, sizeof(int32_t) * (size_t)(n_seg + 1));
    const float *res = f ? f->res : NULL;
    float *sum = res ? f->sum : NULL;
    vla_cuda_ready rd = vla_cuda_ready_of(f ? f->ready : NULL, f ? f->fp8 : NULL, n, dim);
    k_norm_fwd<<<(unsigned)n, NT, 0, vla_cuda_stream()>>>(mode, out, mean, rstd, in, w, b, one_plus, mod,
                                                          (const int32_t *)u.dev, n_seg, dim, eps, res, sum, rd);
    vla_cuda_check(what);
    vla_cuda_upload_release(&u);
}

static void bwd_in(int mode, float *d_in, const float *d_out, const float *in, const float *w, bool one_plus,
                   const float *mod, const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                   int64_t dim, const char *what) {
    if (!d_in || n <= 0 || dim <= 0) return;
    vla_cuda_upload_t u = vla_cuda_upload(cu, sizeof(int32_t) * (size_t)(n_seg + 1));
    k_norm_bwd_in<<<(unsigned)n, NT, 0, vla_cuda_stream()>>>(mode, d_in, d_out, in, w, one_plus, mod, mean, rstd,
                                                             (const int32_t *)u.dev, n_seg, dim);
    vla_cuda_check(what);
    vla_cuda_upload_release(&u);
}

extern "C" void vla_cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w,
                                           const float *b, int64_t n, int64_t dim, float eps,
                                           const vla_norm_fuse *fuse) {
    fwd(0, out, mean, rstd, in, w, b, false, NULL, NULL, 0, n, dim, eps, fuse, "layernorm_forward");
}

extern "C" void vla_cuda_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                                            const float *w, const float *mean, const float *rstd, int64_t n,
                                            int64_t dim) {
    bwd_in(0, d_in, d_out, in, w, false, NULL, mean, rstd, NULL, 0, n, dim, "layernorm_backward");
    if ((d_w || d_b) && dim > 0) {
        colsum_job jobs[2] = {{0, d_w, 0}, {1, d_b, 0}};
        seg_colsums(jobs, 2, d_out, in, NULL, mean, rstd, n, dim, NULL, 0);
    }
}

extern "C" void vla_cuda_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus,
                                         int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse) {
    fwd(1, out, NULL, rstd, in, w, NULL, one_plus, NULL, NULL, 0, n, dim, eps, fuse, "rmsnorm_forward");
}

extern "C" void vla_cuda_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                                          bool one_plus, const float *rstd, int64_t n, int64_t dim) {
    bwd_in(1, d_in, d_out, in, w, one_plus, NULL, NULL, rstd, NULL, 0, n, dim, "rmsnorm_backward");
    if (d_w && dim > 0) {
        colsum_job jobs[1] = {{2, d_w, 0}};
        seg_colsums(jobs, 1, d_out, in, NULL, NULL, rstd, n, dim, NULL, 0);
    }
}

extern "C" void vla_cuda_adaln_forward(float *out, float *mean, float *rstd, const float *in, const float *mod,
                                       const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps,
                                       const vla_norm_fuse *fuse) {
    fwd(2, out, mean, rstd, in, NULL, NULL, false, mod, cu, n_seg, n, dim, eps, fuse, "adaln_forward");
}

extern "C" void vla_cuda_adaln_backward(float *d_in, float *d_mod, const float *d_out, const float *in,
                                        const float *mod, const float *mean, const float *rstd, const int32_t *cu,
                                        int32_t n_seg, int64_t n, int64_t dim) {
    bwd_in(2, d_in, d_out, in, NULL, false, mod, mean, rstd, cu, n_seg, n, dim, "adaln_backward");
    if (d_mod && dim > 0 && n_seg > 0) {
        colsum_job jobs[2] = {{0, d_mod, 2 * dim}, {1, d_mod + dim, 2 * dim}};
        seg_colsums(jobs, 2, d_out, in, NULL, mean, rstd, n, dim, cu, n_seg);
    }
}

extern "C" void vla_cuda_adarms_forward(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                                        int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse) {
    fwd(3, out, NULL, rstd, in, NULL, NULL, false, mod, cu, n_seg, n, dim, eps, fuse, "adarms_forward");
}

extern "C" void vla_cuda_adarms_backward(float *d_in, float *d_mod, const float *d_out, const float *in,
                                         const float *mod, const float *rstd, const int32_t *cu, int32_t n_seg,
                                         int64_t n, int64_t dim) {
    bwd_in(3, d_in, d_out, in, NULL, false, mod, NULL, rstd, cu, n_seg, n, dim, "adarms_backward");
    if (d_mod && dim > 0 && n_seg > 0) {
        colsum_job jobs[2] = {{2, d_mod, 3 * dim}, {1, d_mod + dim, 3 * dim}};
        seg_colsums(jobs, 2, d_out, in, NULL, NULL, rstd, n, dim, cu, n_seg);
    }
}

/* ---- π0.5's gated residual: out = x + y·gate ------------------------------------------------ */

__global__ void k_gated_fwd(float *out, const float *x, const float *y, const float *mod, const int32_t *cu,
                            int32_t n_seg, int64_t n, int64_t dim) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * dim; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / dim, c = i % dim;
        const float *gate = mod + (int64_t)vla_cuda_seg_of(cu, n_seg, t) * 3 * dim + 2 * dim;
        out[i] = x[i] + __fmul_rn(y[i], gate[c]);
    }
}

__global__ void k_gated_bwd(float *d_x, float *d_y, const float *d_out, const float *mod, const int32_t *cu,
                            int32_t n_seg, int64_t n, int64_t dim) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * dim; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / dim, c = i % dim;
        float dy = d_out[i];
        if (d_x) d_x[i] += dy;
        if (d_y) d_y[i] = __fmul_rn(dy, mod[(int64_t)vla_cuda_seg_of(cu, n_seg, t) * 3 * dim + 2 * dim + c]); /* written */
    }
}

extern "C" void vla_cuda_gated_residual_forward(float *out, const float *x, const float *y, const float *mod,
                                                const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim) {
    if (n <= 0 || dim <= 0) return;
    vla_cuda_upload_t u = vla_cuda_upload(cu, sizeof(int32_t) * (size_t)(n_seg + 1));
    k_gated_fwd<<<vla_cuda_blocks(n * dim, 256), 256, 0, vla_cuda_stream()>>>(out, x, y, mod, (const int32_t *)u.dev,
                                                                            n_seg, n, dim);
    vla_cuda_check("gated_residual_forward");
    vla_cuda_upload_release(&u);
}

extern "C" void vla_cuda_gated_residual_backward(float *d_x, float *d_y, float *d_mod, const float *d_out,
                                                 const float *y, const float *mod, const int32_t *cu, int32_t n_seg,
                                                 int64_t n, int64_t dim) {
    if (n <= 0 || dim <= 0) return;
    if (d_x || d_y) {
        vla_cuda_upload_t u = vla_cuda_upload(cu, sizeof(int32_t) * (size_t)(n_seg + 1));
        k_gated_bwd<<<vla_cuda_blocks(n * dim, 256), 256, 0, vla_cuda_stream()>>>(d_x, d_y, d_out, mod,
                                                                                (const int32_t *)u.dev, n_seg, n, dim);
        vla_cuda_check("gated_residual_backward");
        vla_cuda_upload_release(&u);
    }
    if (d_mod && n_seg > 0) {
        colsum_job jobs[1] = {{3, d_mod + 2 * dim, 3 * dim}};
        seg_colsums(jobs, 1, d_out, NULL, y, NULL, NULL, n, dim, cu, n_seg);
    }
}
