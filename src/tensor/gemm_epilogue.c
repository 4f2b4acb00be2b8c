/* gemm_epilogue.c — a GEMM's epilogue through the op table (see gemm_epilogue.h). */
#include "tensor/gemm_epilogue.h"

void vla_gemm_epilogue_apply(const vla_ops *ops, const vla_gemm_epilogue *epi, bool bias_done, int64_t m, int64_t n,
                             float *c, int64_t ldc) {
    if (!epi || m <= 0 || n <= 0) return;
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
    if (epi->ready) { /* the copy of C's m × n values, packed as prepare_operand makes it: bf16, or FP8 */
        vla_gemm_q g = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
        if (epi->ready_fp8) g.mode = VLA_PREC_FP8, g.b = *epi->ready_fp8;
        ops->prepare_operand(&g, true, m, n, c, ldc, epi->ready);
    }
}
