/* embodiment_linear.c — per-embodiment linear: the ids checked, then the
 * op table's per-segment linear (one GEMM per sample on the cpu backend,
 * one launch per product on cuda). */
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
    ops->segment_linear_forward(out, in, w, b, ids, cu, n_seg, c->in_dim, c->out_dim);
    return VLA_OK;
}

vla_status vla_embodiment_linear_backward(const vla_ops *ops, const vla_emb_linear_config *c, float *d_in,
                                          float *d_w, float *d_b, const float *d_out, const float *in,
                                          const float *w, const int32_t *ids, const int32_t *cu, int32_t n_seg,
                                          int64_t n) {
    VLA_TRY(check(c, ids, cu, n_seg, n));
    ops->segment_linear_backward(d_in, d_w, d_b, d_out, in, w, ids, cu, n_seg, c->in_dim, c->out_dim);
    return VLA_OK;
}
