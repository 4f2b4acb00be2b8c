/* embedding.c — token embedding lookup and its scatter-add backward. */
#include "nn/embedding.h"

#include <string.h>

#include "tensor/parallel.h"

vla_status vla_embedding_forward(float *out, const int32_t *ids, const float *table, int64_t n, int64_t vocab,
                                 int64_t dim) {
    for (int64_t t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= vocab)
            return vla_error(VLA_ERR_INVALID_ARG, "embedding: token %lld has id %d outside [0, %lld)", (long long)t,
                             ids[t], (long long)vocab);
#pragma omp parallel for if (n * dim > VLA_PAR_MIN_ELEMS)
    for (int64_t t = 0; t < n; t++) memcpy(out + t * dim, table + (int64_t)ids[t] * dim, (size_t)dim * sizeof(float));
    return VLA_OK;
}

void vla_embedding_backward(float *d_table, const float *d_out, const int32_t *ids, int64_t n, int64_t dim) {
    /* Splitting over columns keeps each row's sum in token order whatever the
     * thread count, so repeated ids accumulate deterministically. */
    const int64_t block = 64;
    int64_t nblocks = (dim + block - 1) / block;
#pragma omp parallel for if (n * dim > VLA_PAR_MIN_ELEMS)
    for (int64_t cb = 0; cb < nblocks; cb++) {
        int64_t c0 = cb * block, c1 = c0 + block < dim ? c0 + block : dim;
        for (int64_t t = 0; t < n; t++) {
            float *dst = d_table + (int64_t)ids[t] * dim;
            const float *src = d_out + t * dim;
            for (int64_t c = c0; c < c1; c++) dst[c] += src[c];
        }
    }
}
