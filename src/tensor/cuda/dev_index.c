/* dev_index.c — CSR of scatter maps and row chunks for deterministic device
 * reductions (dev_index.h). */
#include "tensor/cuda/dev_index.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t dst, i;
} pair;

static int cmp_pair(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

vla_status vla_rows_csr_make(vla_rows_csr *c, const int32_t *dst_idx, int64_t n) {
    memset(c, 0, sizeof *c);
    if (n < 0 || n > INT32_MAX) return vla_error(VLA_ERR_INVALID_ARG, "add_rows: %lld rows", (long long)n);
    pair *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    if (!p) return vla_error(VLA_ERR_NOMEM, "add_rows: out of memory for %lld rows", (long long)n);
    for (int64_t i = 0; i < n; i++) p[i] = (pair){dst_idx ? dst_idx[i] : (int32_t)i, (int32_t)i};
    qsort(p, (size_t)n, sizeof *p, cmp_pair);
    int32_t groups = 0;
    for (int64_t i = 0; i < n; i++) groups += i == 0 || p[i].dst != p[i - 1].dst;
    c->words = (int64_t)groups * 2 + 1 + n;
    c->mem = malloc(sizeof(int32_t) * (size_t)c->words);
    if (!c->mem) {
        free(p);
        return vla_error(VLA_ERR_NOMEM, "add_rows: out of memory for the CSR of %lld rows", (long long)n);
    }
    c->n_groups = groups;
    c->dst = c->mem, c->off = c->dst + groups, c->items = c->off + groups + 1;
    int32_t g = -1;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || p[i].dst != p[i - 1].dst) {
            g++;
            c->dst[g] = p[i].dst;
            c->off[g] = (int32_t)i;
        }
        c->items[i] = p[i].i;
    }
    c->off[groups] = (int32_t)n;
    free(p);
    return VLA_OK;
}

void vla_rows_csr_free(vla_rows_csr *c) {
    free(c->mem);
    memset(c, 0, sizeof *c);
}

/* ~128 rows per chunk, at most 512 chunks: enough blocks to fill a GPU for
 * the widths that matter, few enough partial rows to sum in a second pass */
#define CHUNK_ROWS 128
#define MAX_CHUNKS 512

#define MAX_PARTIALS ((int64_t)4 << 20)

vla_row_chunks vla_row_chunks_for(int64_t rows, int64_t cols) {
    vla_row_chunks r;
    int64_t cap = MAX_PARTIALS / (cols > 0 ? cols : 1);
    if (cap > MAX_CHUNKS) cap = MAX_CHUNKS;
    if (cap < 1) cap = 1;
    r.n_chunks = (rows + CHUNK_ROWS - 1) / CHUNK_ROWS;
    if (r.n_chunks > cap) r.n_chunks = cap;
    if (r.n_chunks < 1) r.n_chunks = 1;
    r.rows_per_chunk = (rows + r.n_chunks - 1) / r.n_chunks;
    if (r.rows_per_chunk < 1) r.rows_per_chunk = 1;
    r.n_chunks = (rows + r.rows_per_chunk - 1) / r.rows_per_chunk;
    if (r.n_chunks < 1) r.n_chunks = 1;
    return r;
}

vla_status vla_seg_chunks_make(vla_seg_chunks *c, const int32_t *cu, int32_t n_seg) {
    return vla_seg_chunks_make_rows(c, cu, n_seg, CHUNK_ROWS);
}

vla_status vla_seg_chunks_make_rows(vla_seg_chunks *c, const int32_t *cu, int32_t n_seg, int32_t rows_per_chunk) {
    memset(c, 0, sizeof *c);
    if (rows_per_chunk < 1) return vla_error(VLA_ERR_INVALID_ARG, "segment chunks: %d rows per chunk", rows_per_chunk);
    int64_t n = 0;
    for (int32_t s = 0; s < n_seg; s++) {
        int64_t len = cu[s + 1] - cu[s];
        n += (len + rows_per_chunk - 1) / rows_per_chunk;
    }
    if (n > INT32_MAX / 4) return vla_error(VLA_ERR_INVALID_ARG, "segment chunks: %lld", (long long)n);
    c->words = 3 * n + n_seg + 1;
    c->mem = malloc(sizeof(int32_t) * (size_t)(c->words > 0 ? c->words : 1));
    if (!c->mem) return vla_error(VLA_ERR_NOMEM, "segment chunks: out of memory");
    c->n_chunks = (int32_t)n, c->n_seg = n_seg;
    c->start = c->mem, c->end = c->start + n, c->seg = c->end + n, c->first = c->seg + n;
    int32_t k = 0;
    for (int32_t s = 0; s < n_seg; s++) {
        c->first[s] = k;
        for (int32_t r = cu[s]; r < cu[s + 1]; r += rows_per_chunk) {
            c->start[k] = r;
            c->end[k] = cu[s + 1] - r < rows_per_chunk ? cu[s + 1] : r + rows_per_chunk;
            c->seg[k] = s;
            k++;
        }
    }
    c->first[n_seg] = k;
    return VLA_OK;
}

void vla_seg_chunks_free(vla_seg_chunks *c) {
    free(c->mem);
    memset(c, 0, sizeof *c);
}
