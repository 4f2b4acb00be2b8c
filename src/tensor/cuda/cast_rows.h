/* cast_rows.h — bf16 copies of several row-major f32 matrices in one pass: the layout a bf16 GEMM
 * operand's copy has (prepare_operand: [rows][kp] bf16, kp = K rounded up to 8, zeros in columns K..kp)
 * and the rounding it uses (numfmt.h), one 16-byte chunk of 8 elements per step. The attention casts
 * its q, k, v (and dO) copies with it (attention.cu, bf16_copies): one launch for the three to five
 * tensors of a call where the GEMMs' cast took one each — a π0.5 chunk's 180 cached attention calls
 * issue 720 launches fewer. The chunk arithmetic is here, host and device alike, so the CPU test
 * (tests/tensor/test_mma_layout.c, test_cast_rows) runs the kernel's steps against the per-element
 * cast. */
#ifndef VLA_TENSOR_CUDA_CAST_ROWS_H
#define VLA_TENSOR_CUDA_CAST_ROWS_H

#include <stdint.h>

#include "base/hd.h"
#include "base/numfmt.h"

#define VLA_CAST_ROWS_MAX 6

typedef struct {
    int n;                                  /* tensors */
    int64_t K, kp;                          /* columns read; the copies' row length (a multiple of 8) */
    const float *src[VLA_CAST_ROWS_MAX];    /* [rows][ld] f32, any alignment */
    uint16_t *dst[VLA_CAST_ROWS_MAX];       /* [rows][kp] bf16, 16-byte aligned */
    int64_t ld[VLA_CAST_ROWS_MAX], rows[VLA_CAST_ROWS_MAX];
    int64_t first[VLA_CAST_ROWS_MAX + 1];   /* the chunk tensor i starts at; first[n]: all chunks */
} vla_cast_rows;

/* first[] from rows[] and kp (kp / 8 chunks a row); returns the chunks in all, or -1 for a description the
 * kernel cannot honour (more than VLA_CAST_ROWS_MAX tensors, kp not a multiple of 8, K past kp, a negative
 * count): its rows would be left partly unwritten, or pads read from the source */
VLA_HD int64_t vla_cast_rows_plan(vla_cast_rows *c) {
    if (c->n < 0 || c->n > VLA_CAST_ROWS_MAX || c->kp < 0 || c->kp % 8 || c->K < 0 || c->K > c->kp) return -1;
    for (int i = 0; i < c->n; i++)
        if (c->rows[i] < 0 || c->ld[i] < c->K) return -1;
    c->first[0] = 0;
    for (int i = 0; i < c->n; i++) c->first[i + 1] = c->first[i] + c->rows[i] * (c->kp / 8);
    return c->first[c->n];
}

/* chunk → its 8 bf16 values and where they go (element offset in dst[*tensor]) */
VLA_HD void vla_cast_rows_chunk(const vla_cast_rows *c, int64_t chunk, int *tensor, int64_t *at, uint16_t out[8]) {
    int i = 0;
    while (i + 1 < c->n && chunk >= c->first[i + 1]) i++;
    int64_t per_row = c->kp / 8, local = chunk - c->first[i], row = local / per_row, c0 = (local - row * per_row) * 8;
    const float *s = c->src[i] + row * c->ld[i];
    for (int e = 0; e < 8; e++) out[e] = c0 + e < c->K ? vla_nf_f32_to_bf16(s[c0 + e]) : (uint16_t)0;
    *tensor = i;
    *at = row * c->kp + c0;
}

#endif
