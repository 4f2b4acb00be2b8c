/* ops_cpu_segment.c — the CPU backend's per-segment linear (ops.h): one
 * GEMM per segment with its own matrix, in segment order. */
#include "tensor/cpu/ops_cpu_internal.h"

void vla_cpu_segment_linear_forward(float *y, const float *x, const float *w, const float *b, const int32_t *ids,
                                    const int32_t *cu, int32_t n_seg, int64_t in_dim, int64_t out_dim) {
    const vla_ops *cpu = vla_cpu_backend_table();
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t len = cu[s + 1] - cu[s];
        if (len <= 0) continue;
        float *o = y + (int64_t)cu[s] * out_dim;
        cpu->sgemm(false, false, len, out_dim, in_dim, 1.0f, x + (int64_t)cu[s] * in_dim, in_dim,
                   w + (int64_t)ids[s] * in_dim * out_dim, out_dim, 0.0f, o, out_dim);
        if (b) cpu->add_row_vector(o, b + (int64_t)ids[s] * out_dim, len, out_dim);
    }
}

void vla_cpu_segment_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                                     const int32_t *ids, const int32_t *cu, int32_t n_seg, int64_t in_dim,
                                     int64_t out_dim) {
    const vla_ops *cpu = vla_cpu_backend_table();
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t len = cu[s + 1] - cu[s];
        if (len <= 0) continue;
        int64_t e = ids[s];
        const float *g = dy + (int64_t)cu[s] * out_dim, *xs = x + (int64_t)cu[s] * in_dim;
        if (dx)
            cpu->sgemm(false, true, len, in_dim, out_dim, 1.0f, g, out_dim, w + e * in_dim * out_dim, out_dim, 0.0f,
                       dx + (int64_t)cu[s] * in_dim, in_dim); /* written (ops.h) */
        if (dw) cpu->sgemm(true, false, in_dim, out_dim, len, 1.0f, xs, in_dim, g, out_dim, 1.0f, dw + e * in_dim * out_dim, out_dim);
        if (db) cpu->sum_rows(db + e * out_dim, g, len, out_dim, 1.0f);
    }
}
