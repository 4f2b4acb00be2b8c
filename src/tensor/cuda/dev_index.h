/* dev_index.h — host-side index preparation that makes the cuda backend's
 * scatter-adds and column sums deterministic without atomics (plain C,
 * tested on the CPU: tests/tensor/test_dev_index.c).
 *
 *  - Scatter-add (add_rows) through an index map that may repeat a
 *    destination (an embedding row used by many tokens): the cpu backend
 *    sums each destination element in i order. On the GPU one thread per
 *    element of a destination walks that destination's sources in i order:
 *    the map is regrouped here into a CSR (destinations, and per
 *    destination its source rows in increasing i).
 *  - Column sums over many rows (bias gradients, norm weights, AdaLN/AdaRMS
 *    modulation gradients per sample): rows are cut into chunks — a
 *    function of the row count (and of cu_seqlens per sample) only —,
 *    each chunk summed in order by one thread per column into a partial
 *    row, then the partials in chunk order: the same bits on every run, at
 *    full occupancy. */
#ifndef VLA_TENSOR_DEV_INDEX_H
#define VLA_TENSOR_DEV_INDEX_H

#include <stdint.h>

#include "base/status.h"

/* CSR of a scatter map: group g adds source items items[off[g] .. off[g+1])
 * (the i's, increasing) into destination dst[g]. dst_idx NULL: i itself. */
typedef struct {
    int32_t n_groups;
    int32_t *dst, *off, *items; /* one allocation: dst [n_groups], off [n_groups + 1], items [n] */
    int64_t words;              /* int32 words of that allocation */
    int32_t *mem;
} vla_rows_csr;

vla_status vla_rows_csr_make(vla_rows_csr *c, const int32_t *dst_idx, int64_t n);
void vla_rows_csr_free(vla_rows_csr *c);

/* Row chunks for a column sum of a rows × cols matrix (one segment): about
 * 128 rows per chunk, at most 512 chunks and at most 4 Mi partial sums. */
typedef struct {
    int64_t n_chunks, rows_per_chunk;
} vla_row_chunks;
vla_row_chunks vla_row_chunks_for(int64_t rows, int64_t cols);

/* Chunks of rows per segment of cu_seqlens: chunk c covers rows
 * [start[c], end[c]) of segment seg[c]; segment s's chunks are
 * [first[s], first[s+1]). One allocation of `words` int32:
 * start [n], end [n], seg [n], first [n_seg + 1]. */
typedef struct {
    int32_t n_chunks, n_seg;
    int32_t *start, *end, *seg, *first, *mem;
    int64_t words;
} vla_seg_chunks;
vla_status vla_seg_chunks_make(vla_seg_chunks *c, const int32_t *cu, int32_t n_seg);
/* The same with a given chunk size (the per-segment GEMM's row tiles). */
vla_status vla_seg_chunks_make_rows(vla_seg_chunks *c, const int32_t *cu, int32_t n_seg, int32_t rows_per_chunk);
void vla_seg_chunks_free(vla_seg_chunks *c);

#endif
