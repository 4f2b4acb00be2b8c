/* matmul.c — shape-checked GEMM on tensor descriptors, over any op table. */
#include "tensor/ops.h"

#include <stdio.h>

vla_status vla_matmul(const vla_ops *ops, vla_tensor *c, const vla_tensor *a, bool trans_a, const vla_tensor *b,
                      bool trans_b, float alpha, float beta) {
    char sa[64], sb[64], sc[64];
    if (a->ndim != 2 || b->ndim != 2 || c->ndim != 2 || a->dtype != VLA_F32 || b->dtype != VLA_F32 ||
        c->dtype != VLA_F32)
        return vla_error(VLA_ERR_INVALID_ARG, "matmul needs 2-D f32 tensors, got %s, %s -> %s",
                         vla_tensor_describe(a, sa, sizeof sa), vla_tensor_describe(b, sb, sizeof sb),
                         vla_tensor_describe(c, sc, sizeof sc));
    if (a->stride[1] != 1 || b->stride[1] != 1 || c->stride[1] != 1)
        return vla_error(VLA_ERR_INVALID_ARG, "matmul needs unit column stride (transpose with trans_a/trans_b)");
    int64_t m = trans_a ? a->shape[1] : a->shape[0], k = trans_a ? a->shape[0] : a->shape[1];
    int64_t kb = trans_b ? b->shape[1] : b->shape[0], n = trans_b ? b->shape[0] : b->shape[1];
    if (k != kb || c->shape[0] != m || c->shape[1] != n)
        return vla_error(VLA_ERR_INVALID_ARG, "matmul shapes do not agree: %s%s x %s%s -> %s",
                         vla_tensor_describe(a, sa, sizeof sa), trans_a ? "^T" : "",
                         vla_tensor_describe(b, sb, sizeof sb), trans_b ? "^T" : "",
                         vla_tensor_describe(c, sc, sizeof sc));
    ops->sgemm(trans_a, trans_b, m, n, k, alpha, a->data, a->stride[0], b->data, b->stride[0], beta, c->data,
               c->stride[0]);
    return VLA_OK;
}
