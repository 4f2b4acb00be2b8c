/* embedding.h — token embedding lookup: out[t] = table[ids[t]] (ids are host
 * metadata, checked here; the gather and its scatter-add are row ops of the
 * backend). */
#ifndef VLA_NN_EMBEDDING_H
#define VLA_NN_EMBEDDING_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* Fails with VLA_ERR_INVALID_ARG (and writes nothing) if an id is outside [0, vocab). */
vla_status vla_embedding_forward(const vla_ops *ops, float *out, const int32_t *ids, const float *table, int64_t n, int64_t vocab,
                                 int64_t dim);
/* d_table[ids[t]] += d_out[t]; ids must have passed the forward's check. Deterministic
 * (parallel over feature columns, tokens in order). */
void vla_embedding_backward(const vla_ops *ops, float *d_table, const float *d_out, const int32_t *ids, int64_t n, int64_t dim);

#endif
