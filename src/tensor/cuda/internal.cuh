/* internal.cuh — what the cuda backend's translation units share: the
 * context (device, streams, cuBLASLt, staging ring), launch checks,
 * uploads of host metadata, scratch memory, and every slot's declaration
 * (context.cu assembles the table). C++ for nvcc only. */
#ifndef VLA_TENSOR_CUDA_INTERNAL_CUH
#define VLA_TENSOR_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "tensor/cuda/cast_rows.h"
#include "tensor/cuda/ops_cuda.h"
#include "tensor/ops.h"
#include "tensor/seqlens.h"
}

struct vla_lt_cache;

typedef struct {
    int device, cc_major, cc_minor, sm_count;
    size_t smem_optin;
    cudaStream_t stream, comm;
    void *lt;       /* cublasLtHandle_t */
    void *lt_ws;    /* cuBLASLt workspace (device) */
    size_t lt_ws_bytes;
    struct vla_lt_cache *lt_cache;
    bool tf32;      /* VLA_CUDA_TF32=1: f32 GEMMs on TF32 tensor cores */
    bool sync_each; /* VLA_CUDA_SYNC=1: synchronise and check after every op */
    int attn_impl;  /* 0 auto (mma for BF16/FP8, simt for FP32), 1 simt only */
    int attn_kv_splits; /* VLA_CUDA_ATTN_KV_SPLITS: 0 chosen from the shapes, else the dK/dV parts (1: unsplit) */
    int attn_q_splits;  /* VLA_CUDA_ATTN_Q_SPLITS: the same for the bf16 forward's key walk (attn_plan.h) */
    bool attn_fused_dq; /* VLA_CUDA_ATTN_BACKWARD=fused: the bf16 backward's dQ added by its dK/dV pass (atomics) */
    int attn_staging;   /* VLA_CUDA_ATTN_STAGING: how the bf16 attention kernels stage their tiles, a
                         * VLA_ATTN_STAGE_* of attn_kernels.cuh (auto, f32, bf16, prefetch) */
    bool comm_used;
} vla_cuda_ctx;

/* The context, initialised on first use (fatal, with the reason, if there
 * is no usable device: model code never gets here without vla_cuda_probe). */
vla_cuda_ctx *vla_cuda_ctx_get(void);
static inline cudaStream_t vla_cuda_stream(void) { return vla_cuda_ctx_get()->stream; }

/* Abort with "vla: cuda: <what>: <error>" — a device fault is not bad input. */
[[noreturn]] void vla_cuda_fatal(const char *what, cudaError_t e);
/* A failed CUDA call: fatal, except while recording a region (graph.cu), which it fails instead */
void vla_cuda_error(const char *what, cudaError_t e);
/* After a launch (or any async call): the error, if any, names `what`. */
void vla_cuda_check(const char *what);
#define VLA_CUDA_OK(call, what)                 \
    do {                                        \
        cudaError_t e_ = (call);                \
        if (e_ != cudaSuccess) vla_cuda_error(what, e_); \
    } while (0)

/* Recording a captured region as a CUDA graph (graph.cu): whether one is in
 * progress; what cannot be recorded fails it (why); host data the recording
 * uploads goes to device memory it owns (filled now); a free of the
 * caller's memory is deferred to after the recording (true) */
bool vla_cuda_capturing(void);
void vla_cuda_capture_fail(const char *why);
void *vla_cuda_capture_upload(const void *host, size_t bytes);
bool vla_cuda_capture_defer_free(void *p);
void vla_cuda_capture_note_alloc(void *p); /* a table allocation made (for real) while recording */
int64_t vla_cuda_graph_replays(void);

/* Device scratch, stream-ordered (pool-backed); freed stream-ordered. */
void *vla_cuda_scratch(size_t bytes);
void vla_cuda_scratch_free(void *p);

/* Upload host metadata for the next kernels: a device pointer valid for
 * work issued on the compute stream until the next ~chunk's worth of
 * uploads; release() after the kernels are issued (frees the rare
 * oversized upload, stream-ordered). NULL host → NULL device. */
typedef struct {
    void *dev;
    bool temp;
} vla_cuda_upload_t;
vla_cuda_upload_t vla_cuda_upload(const void *host, size_t bytes);
void vla_cuda_upload_release(vla_cuda_upload_t *u);

/* A small pinned host area and device area for host results of reductions
 * (8 KiB each), and the lock that owns them for one op. */
#define VLA_CUDA_RESULT_BYTES 8192 /* the size of each area */
void *vla_cuda_result_dev(void);
void *vla_cuda_result_host(void);
void vla_cuda_result_lock(void);
void vla_cuda_result_unlock(void);
/* copy `bytes` of the device result area to the host one and wait */
void vla_cuda_result_fetch(size_t bytes, const char *what);
/* wait for the stream on behalf of an op that returns host results; counted (ops.h, host_waits) */
void vla_cuda_host_wait(const char *what);

/* grid size for n elements at `threads` per block (grid-stride loops beyond) */
static inline unsigned vla_cuda_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535LL * 16) b = 65535LL * 16;
    return (unsigned)b;
}

/* ---- slots (one function per op table entry) -------------------------------------- */
extern "C" {
/* gemm.cu */
void vla_cuda_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void vla_cuda_sgemm_strided_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                    int64_t lda, int64_t sa, const float *b, int64_t ldb, int64_t sb, float beta,
                                    float *c, int64_t ldc, int64_t sc, int64_t batch);
void vla_cuda_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void vla_cuda_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool ta, bool tb, int64_t m, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
size_t vla_cuda_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k);
void vla_cuda_prepare_operand(const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb,
                              void *dst);
void vla_cuda_prepare_operand_pair(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb,
                                   void *dst_n, void *dst_t);
bool vla_cuda_cast_rows_bf16(vla_cast_rows *c); /* tensor/cuda/cast_rows.h, one launch; false: c refused */
void vla_cuda_segment_linear_forward(float *y, const float *x, const float *w, const float *b, const int32_t *ids,
                                     const int32_t *cu, int32_t n_seg, int64_t in_dim, int64_t out_dim);
void vla_cuda_segment_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                                      const float *w, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                                      int64_t in_dim, int64_t out_dim);
void vla_cuda_fp8_scale_update(float *history, float *scale, int64_t n, int64_t hist_len, const float *fmt_max,
                               float margin, bool most_recent);
void vla_cuda_gemm_shutdown(void);

/* elementwise.cu */
void vla_cuda_fill(float *y, float v, int64_t n);
void vla_cuda_copy(float *y, const float *x, int64_t n);
void vla_cuda_add(float *y, const float *a, const float *b, int64_t n);
void vla_cuda_sub(float *y, const float *a, const float *b, int64_t n);
void vla_cuda_mul(float *y, const float *a, const float *b, int64_t n);
void vla_cuda_axpy(float *y, float alpha, const float *x, int64_t n);
void vla_cuda_scale(float *y, float alpha, int64_t n);
void vla_cuda_affine(float *y, const float *x, float alpha, float beta, int64_t n);
void vla_cuda_scale_to(float *y, const float *x, double alpha, int64_t n);
void vla_cuda_add_row_vector(float *y, const float *bias, int64_t rows, int64_t cols);
void vla_cuda_act_forward(vla_act act, float *out, const float *in, int64_t n);
/* a GEMM's epilogue after the GEMM, contiguous C [m][n], in one pass (bias_done: the GEMM added the bias) */
void vla_cuda_epilogue(const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n, float *c);
void vla_cuda_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows, int64_t cols,
                           void *ready);
void vla_cuda_glu_forward(vla_act act, float *h, const float *gate, const float *up, int64_t rows, int64_t cols,
                          void *ready, const vla_fp8_operand *ready_fp8);
void vla_cuda_glu_backward(vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                           int64_t rows, int64_t cols, void *ready_dgate, void *ready_dup);
void vla_cuda_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t hd,
                           double theta);
void vla_cuda_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                            int64_t hd, double theta);
void vla_cuda_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n);
void vla_cuda_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                      int64_t n);
void vla_cuda_flow_interpolate(vla_flow_convention conv, float *x_t, float *target, const float *actions,
                               const float *noise, const float *t, int64_t S, int64_t per);
void vla_cuda_adamw(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool decay);
void vla_cuda_ema(float *e, const float *w, float d, float omd, int64_t n, const float *guard);
void vla_cuda_clip_coef(float *guard, const double *sumsq, const double *also, double max_norm);
void vla_cuda_adamw_multi(int count, float *const *w, const float *const *g, float *const *m, float *const *v,
                          const int64_t *n, const bool *decay, const vla_adamw_scalars *s);
void vla_cuda_ema_multi(int count, float *const *e, const float *const *w, const int64_t *n, float d, float omd,
                        const float *guard);
void vla_cuda_convert(void *dst, vla_dtype dt, const void *src, vla_dtype st, int64_t n);
vla_status vla_cuda_run_captured(const void *key, size_t key_bytes, vla_status (*body)(void *ctx), void *ctx);

/* reduce.cu */
double vla_cuda_sum(const float *x, int64_t n);
double vla_cuda_dot(const float *a, const float *b, int64_t n);
double vla_cuda_sum_squares(const float *x, int64_t n);
void vla_cuda_sum_squares_multi(int count, const float *const *x, const int64_t *n, double *out);
void vla_cuda_sum_squares_total(int count, const float *const *x, const int64_t *n, double *total);
float vla_cuda_max_abs(const float *x, int64_t n);
int64_t vla_cuda_count_nonfinite(const float *x, int64_t n);
int64_t vla_cuda_find_nonfinite(const float *x, int64_t n);
void vla_cuda_sum_rows(float *y, const float *x, int64_t rows, int64_t cols, float beta);
void vla_cuda_softmax_rows(float *y, const float *x, int64_t rows, int64_t cols);
void vla_cuda_softmax_rows_backward(float *dx, const float *y, const float *dy, int64_t rows, int64_t cols);
double vla_cuda_masked_mse(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                           const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                           float *d_pred);
void vla_cuda_masked_mse_acc(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                             const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                             float *d_pred, double *loss_sum);
/* column sums of x [rows, cols] in fixed row chunks: partial [n_chunks, cols] → y = beta·y + Σ (reduce.cu) */
void vla_cuda_colsum_into(float *y, float beta, const float *x, int64_t rows, int64_t cols);

/* norm.cu */
void vla_cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                                int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cuda_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                                 const float *w, const float *mean, const float *rstd, int64_t n, int64_t dim);
void vla_cuda_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                              int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cuda_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                               bool one_plus, const float *rstd, int64_t n, int64_t dim);
void vla_cuda_adaln_forward(float *out, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu,
                            int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cuda_adaln_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                             const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                             int64_t dim);
void vla_cuda_adarms_forward(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                             int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cuda_adarms_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                              const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);
void vla_cuda_gated_residual_forward(float *out, const float *x, const float *y, const float *mod, const int32_t *cu,
                                     int32_t n_seg, int64_t n, int64_t dim);
void vla_cuda_gated_residual_backward(float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                      const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);

/* layout.cu */
void vla_cuda_copy_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                        const int32_t *src_idx, int64_t n, int64_t w, float alpha);
void vla_cuda_add_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                       const int32_t *src_idx, int64_t n, int64_t w, float alpha);
void vla_cuda_copy2d(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols);
void vla_cuda_im2col(float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p);
void vla_cuda_col2im_add(float *images, const float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W,
                         int64_t p);
void vla_cuda_attention_mask(float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks);

/* attention.cu */
vla_status vla_cuda_attention_forward(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                      const float *k, const float *v, const vla_attn_seqs *qs,
                                      const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready);
vla_status vla_cuda_attention_backward(const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                       const float *d_out, const float *q, const float *k, const float *v,
                                       const float *out, const float *lse, const vla_attn_seqs *qs,
                                       const vla_attn_seqs *ks, vla_attn_stats *stats);
vla_status vla_cuda_attention_forward_cached(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                             const vla_attn_seqs *qs, const float *k_cache, const float *v_cache,
                                             const vla_attn_seqs *cs, const float *k_new, const float *v_new,
                                             const vla_attn_seqs *ns, vla_attn_stats *stats);
}

/* the segment of token t given cu_seqlens in device memory (tensor/seqlens.h) */
#define vla_cuda_seg_of vla_seqlens_find

#endif
