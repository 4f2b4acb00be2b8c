/* linear.c — fully connected layer: two or three GEMMs through the op table. */
#include "nn/linear.h"

void vla_linear_forward(const vla_ops *ops, float *out, const float *in, const float *w, const float *b, int64_t n,
                        int64_t in_dim, int64_t out_dim) {
    if (n <= 0) return;
    ops->sgemm(false, true, n, out_dim, in_dim, 1.0f, in, in_dim, w, in_dim, 0.0f, out, out_dim);
    if (b) ops->add_row_vector(out, b, n, out_dim);
}

void vla_linear_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                         const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim) {
    if (n <= 0) return;
    if (d_in) ops->sgemm(false, false, n, in_dim, out_dim, 1.0f, d_out, out_dim, w, in_dim, 1.0f, d_in, in_dim);
    if (d_w) ops->sgemm(true, false, out_dim, in_dim, n, 1.0f, d_out, out_dim, in, in_dim, 1.0f, d_w, in_dim);
    if (d_b) ops->sum_rows(d_b, d_out, n, out_dim, 1.0f);
}
