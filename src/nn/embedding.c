/* embedding.c — token embedding lookup and its scatter-add backward, as row ops. */
#include "nn/embedding.h"

vla_status vla_embedding_forward(const vla_ops *ops, float *out, const int32_t *ids, const float *table, int64_t n,
                                 int64_t vocab, int64_t dim) {
    for (int64_t t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= vocab)
            return vla_error(VLA_ERR_INVALID_ARG, "embedding: token %lld has id %d outside [0, %lld)", (long long)t,
                             ids[t], (long long)vocab);
    if (n > 0) ops->copy_rows(out, dim, NULL, table, dim, ids, n, dim, 1.0f);
    return VLA_OK;
}

void vla_embedding_backward(const vla_ops *ops, float *d_table, const float *d_out, const int32_t *ids, int64_t n,
                            int64_t dim) {
    if (n > 0) ops->add_rows(d_table, dim, ids, d_out, dim, NULL, n, dim, 1.0f);
}
