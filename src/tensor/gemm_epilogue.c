/* gemm_epilogue.c — a GEMM's epilogue through the op table (see gemm_epilogue.h). */
#include "tensor/gemm_epilogue.h"

#include <stdlib.h>

/* the copy of the m × n values at y (stride ld), packed as prepare_operand makes it: bf16, or FP8 */
static void make_copy(const vla_ops *ops, const vla_gemm_epilogue *epi, int64_t m, int64_t n, const float *y,
                      int64_t ld) {
    vla_gemm_q g = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    if (epi->ready_fp8) g.mode = VLA_PREC_FP8, g.b = *epi->ready_fp8;
    ops->prepare_operand(&g, true, m, n, y, ld, epi->ready);
}

/* kept (ops.h): t is in pre at stride ldc — the bias added there, act(t) into a packed temporary, the copy
 * made from it; the same steps on the same values as the path through C, so the same bytes */
static void apply_kept(const vla_ops *ops, const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n,
                       int64_t ldc) {
    float *y = ops->alloc(sizeof(float) * (size_t)(m * n));
    if (!y) abort(); /* a row block of the activations: out of memory here is out of memory everywhere */
    for (int64_t r = 0, rows = ldc == n ? 1 : m; r < rows; r++) { /* contiguous: one call each */
        int64_t len = ldc == n ? m * n : n;
        float *t = epi->pre + r * ldc;
        if (epi->bias && !bias_done) ops->add_row_vector(t, epi->bias, len / n, n);
        ops->act_forward(epi->act, y + r * n, t, len);
    }
    make_copy(ops, epi, m, n, y, n);
    ops->free(y);
}

void vla_gemm_epilogue_apply(const vla_ops *ops, const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n,
                             float *c, int64_t ldc) {
    if (!epi || m <= 0 || n <= 0) return;
    if (!c) return apply_kept(ops, epi, bias_done, m, n, ldc);
    bool act = epi->act != VLA_ACT_IDENTITY;
    if (ldc == n) { /* contiguous: one call each */
        if (epi->bias && !bias_done) ops->add_row_vector(c, epi->bias, m, n);
        if (act && epi->pre) ops->copy(epi->pre, c, m * n);
        if (act) ops->act_forward(epi->act, c, c, m * n);
    } else {
        for (int64_t r = 0; r < m; r++) { /* rows of a wider matrix */
            float *row = c + r * ldc;
            if (epi->bias && !bias_done) ops->add_row_vector(row, epi->bias, 1, n);
            if (act && epi->pre) ops->copy(epi->pre + r * ldc, row, n);
            if (act) ops->act_forward(epi->act, row, row, n);
        }
    }
    if (epi->ready) make_copy(ops, epi, m, n, c, ldc);
}
