/* embodiment_linear.c — per-embodiment linear: one GEMM per packed sample
 * with that sample's weight matrix. */
#include "nn/embodiment_linear.h"

#include "tensor/seqlens.h"

static vla_status check(const vla_emb_linear_config *c, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                        int64_t n) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "embodiment_linear"));
    for (int32_t s = 0; s < n_seg; s++)
        if (ids[s] < 0 || ids[s] >= c->n_emb)
            return vla_error(VLA_ERR_INVALID_ARG, "embodiment_linear: sample %d has embodiment id %d outside [0, %lld)",
                             s, ids[s], (long long)c->n_emb);
    return VLA_OK;
}

vla_status vla_embodiment_linear_forward(const vla_ops *ops, const vla_emb_linear_config *c, float *out,
                                         const float *in, const float *w, const float *b, const int32_t *ids,
                                         const int32_t *cu, int32_t n_seg, int64_t n) {
    VLA_TRY(check(c, ids, cu, n_seg, n));
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t len = cu[s + 1] - cu[s];
        if (len == 0) continue;
        const float *we = w + (int64_t)ids[s] * c->in_dim * c->out_dim;
        float *o = out + (int64_t)cu[s] * c->out_dim;
        ops->sgemm(false, false, len, c->out_dim, c->in_dim, 1.0f, in + (int64_t)cu[s] * c->in_dim, c->in_dim, we,
                   c->out_dim, 0.0f, o, c->out_dim);
        if (b) ops->add_row_vector(o, b + (int64_t)ids[s] * c->out_dim, len, c->out_dim);
    }
    return VLA_OK;
}

vla_status vla_embodiment_linear_backward(const vla_ops *ops, const vla_emb_linear_config *c, float *d_in,
                                          float *d_w, float *d_b, const float *d_out, const float *in,
                                          const float *w, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                                          int64_t n) {
    VLA_TRY(check(c, ids, cu, n_seg, n));
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t len = cu[s + 1] - cu[s];
        if (len == 0) continue;
        int64_t e = ids[s];
        const float *dy = d_out + (int64_t)cu[s] * c->out_dim, *x = in + (int64_t)cu[s] * c->in_dim;
        if (d_in)
            ops->sgemm(false, true, len, c->in_dim, c->out_dim, 1.0f, dy, c->out_dim, w + e * c->in_dim * c->out_dim,
                       c->out_dim, 1.0f, d_in + (int64_t)cu[s] * c->in_dim, c->in_dim);
        if (d_w)
            ops->sgemm(true, false, c->in_dim, c->out_dim, len, 1.0f, x, c->in_dim, dy, c->out_dim, 1.0f,
                       d_w + e * c->in_dim * c->out_dim, c->out_dim);
        if (d_b) ops->sum_rows(d_b + e * c->out_dim, dy, len, c->out_dim, 1.0f);
    }
    return VLA_OK;
}
