/* ops_cpu_internal.h — the CPU backend's kernels, one declaration per slot
 * kept outside ops_cpu.c (which fills the table with them). Only files of
 * the CPU backend include this; everyone else reaches the kernels through
 * a vla_ops table (tensor/backend.h). Signatures are the slots' (ops.h). */
#ifndef VLA_TENSOR_OPS_CPU_INTERNAL_H
#define VLA_TENSOR_OPS_CPU_INTERNAL_H

#include "tensor/ops.h"

/* The CPU table itself: for the registry (backend.c) and for the kernels
 * that call other CPU kernels (the attention's tile GEMMs). */
const vla_ops *vla_cpu_backend_table(void);
/* bf16 operands through oneDNN's bf16 tiles on sgemm's split (ops_cpu.c;
 * ops_cpu_precision.c's native bf16) */
void vla_cpu_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a,
                       int64_t lda, const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ops_cpu_precision.c: the operand casts so far (ops.h, VLA_STAT_OPERAND_CASTS) */
int64_t vla_cpu_operand_casts(void);
/* ops_cpu_precision.c: the bf16 ready copy of count packed values (prepare_operand's, for a producer's ready) */
void vla_cpu_bf16_ready(void *ready, const float *x, int64_t count);
void vla_cpu_fp8_ready(void *ready, const float *x, int64_t count, const vla_fp8_operand *op);
/* ops_cpu_precision.c: where a producer computes a value it may be asked to keep only as its bf16 copy
 * (ops.h, KEPT COPIES: a norm's output, the GLU's h) — out, or, out NULL, a temporary of count floats the
 * copy is made from, which vla_cpu_temp_done frees (and leaves out alone) */
float *vla_cpu_out_or_temp(float *out, int64_t count);
void vla_cpu_temp_done(float *out, float *y);

/* ops_cpu_norm.c */
void vla_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w, const float *b,
                               int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cpu_layernorm_backward(float *d_in, float *d_w, float *d_b, const float *d_out, const float *in,
                                const float *w, const float *mean, const float *rstd, int64_t n, int64_t dim);
void vla_cpu_rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, bool one_plus, int64_t n,
                             int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cpu_rmsnorm_backward(float *d_in, float *d_w, const float *d_out, const float *in, const float *w,
                              bool one_plus, const float *rstd, int64_t n, int64_t dim);
void vla_cpu_adaln_forward(float *out, float *mean, float *rstd, const float *in, const float *mod, const int32_t *cu,
                           int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cpu_adaln_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                            const float *mean, const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n,
                            int64_t dim);
void vla_cpu_adarms_forward(float *out, float *rstd, const float *in, const float *mod, const int32_t *cu,
                            int32_t n_seg, int64_t n, int64_t dim, float eps, const vla_norm_fuse *fuse);
void vla_cpu_adarms_backward(float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                             const float *rstd, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);
void vla_cpu_gated_residual_forward(float *out, const float *x, const float *y, const float *mod, const int32_t *cu,
                                    int32_t n_seg, int64_t n, int64_t dim);
void vla_cpu_gated_residual_backward(float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                     const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim);

/* ops_cpu_pointwise.c */
void vla_cpu_act_forward(vla_act act, float *out, const float *in, int64_t n);
void vla_cpu_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows, int64_t cols,
                          void *ready);
void vla_cpu_glu_forward(vla_act act, float *h, const float *gate, const float *up, int64_t rows, int64_t cols,
                         void *ready, const vla_fp8_operand *ready_fp8);
void vla_cpu_glu_backward(vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                          int64_t rows, int64_t cols, void *ready_dgate, void *ready_dup);
void vla_cpu_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
                          double theta);
void vla_cpu_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                           int64_t head_dim, double theta);
void vla_cpu_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n);
void vla_cpu_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                     int64_t n);

/* ops_cpu_layout.c */
void vla_cpu_copy_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                       const int32_t *src_idx, int64_t n, int64_t w, float alpha);
void vla_cpu_add_rows(float *dst, int64_t ldd, const int32_t *dst_idx, const float *src, int64_t lds,
                      const int32_t *src_idx, int64_t n, int64_t w, float alpha);
void vla_cpu_copy2d(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows, int64_t cols);
void vla_cpu_im2col(float *patches, const float *images, int64_t n_img, int64_t C, int64_t H, int64_t W, int64_t p);
void vla_cpu_col2im_add(float *images, const float *patches, int64_t n_img, int64_t C, int64_t H, int64_t W,
                        int64_t p);
void vla_cpu_attention_mask(float *mask, const vla_attn_seqs *qs, const vla_attn_seqs *ks);

/* ops_cpu_attention.c */
vla_status vla_cpu_attention_forward(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                     const float *k, const float *v, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                     vla_attn_stats *stats, void *out_ready);
vla_status vla_cpu_attention_backward(const vla_attn_config *cfg, float *dq, float *dk, float *dv, const float *d_out,
                                      const float *q, const float *k, const float *v, const float *out,
                                      const float *lse, const vla_attn_seqs *qs, const vla_attn_seqs *ks,
                                      vla_attn_stats *stats);
vla_status vla_cpu_attention_forward_cached(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                            const vla_attn_seqs *qs, const float *k_cache, const float *v_cache,
                                            const vla_attn_seqs *cs, const float *k_new, const float *v_new,
                                            const vla_attn_seqs *ns, vla_attn_stats *stats);

/* ops_cpu_precision.c */
void vla_cpu_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void vla_cpu_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool ta, bool tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc);
size_t vla_cpu_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k);
void vla_cpu_prepare_operand_pair(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb,
                                  void *dst_n, void *dst_t);
void vla_cpu_prepare_operand(const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb,
                             void *dst);
void vla_cpu_segment_linear_forward(float *y, const float *x, const float *w, const float *b, const int32_t *ids,
                                    const int32_t *cu, int32_t n_seg, int64_t in_dim, int64_t out_dim);
void vla_cpu_segment_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                                     const int32_t *ids, const int32_t *cu, int32_t n_seg, int64_t in_dim,
                                     int64_t out_dim);
void vla_cpu_fp8_scale_update(float *history, float *scale, int64_t n, int64_t hist_len, const float *fmt_max,
                              float margin, bool most_recent);

/* ops_cpu_flow.c */
void vla_cpu_flow_interpolate(vla_flow_convention conv, float *x_t, float *target, const float *actions,
                              const float *noise, const float *t, int64_t S, int64_t per);
double vla_cpu_masked_mse(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                          const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                          float *d_pred);
void vla_cpu_masked_mse_acc(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                            const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                            float *d_pred, double *loss_sum);

#endif
