/* gemm_epilogue.h — a GEMM's epilogue (ops.h, vla_gemm_epilogue) as the
 * table's own pointwise slots: the cpu backend's sgemm_epi, and a device
 * backend's way when its GEMM library cannot fold the step in. */
#ifndef VLA_TENSOR_GEMM_EPILOGUE_H
#define VLA_TENSOR_GEMM_EPILOGUE_H

#include "tensor/ops.h"

/* C [m, n] at stride ldc holds t = alpha·op(A)·op(B) + beta·C: add the bias
 * (add_row_vector), keep pre (copy2d), apply the activation (act_forward)
 * and make the ready copy (prepare_operand), through
 * `ops`. bias_done: the bias is already in C. c NULL (ops.h, KEPT COPIES):
 * t is in epi->pre instead, and act(t) goes to a temporary (ops->alloc)
 * that only the copy is made from. */
void vla_gemm_epilogue_apply(const vla_ops *ops, const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n,
                             float *c, int64_t ldc);

#endif
