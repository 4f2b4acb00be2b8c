/* parquet_assemble.c — record assembly (Dremel): a chunk's repetition and
 * definition levels and dense non-null values become the column's slots,
 * validity and list offsets per nesting level (layout in parquet.h), in two
 * passes: count, allocate, fill. */
#include <stdlib.h>
#include <string.h>

#include "io/parquet_internal.h"

/* Store dense value k into leaf slot s (or a null). */
static inline void put_leaf(const vla_pq_chunk_reader *cr, vla_parquet_column *col, int64_t s, int64_t k, int ok) {
    int w = cr->width;
    col->valid[s] = (uint8_t)ok;
    if (w == 4) {
        uint32_t x = 0;
        if (ok) memcpy(&x, cr->vals + k * 4, 4);
        ((uint32_t *)col->values)[s] = x;
    } else if (w == 8) {
        uint64_t x = 0;
        if (ok) memcpy(&x, cr->vals + k * 8, 8);
        ((uint64_t *)col->values)[s] = x;
    } else if (w) {
        if (ok) memcpy((uint8_t *)col->values + s * w, cr->vals + k * w, (size_t)w);
        else memset((uint8_t *)col->values + s * w, 0, (size_t)w);
    } else {
        col->offsets[s + 1] = col->offsets[s] + (ok ? cr->lens[k] : 0);
    }
}

/* The common single-level list (list<scalar>), without the general loop's
 * per-entry level walk. Same results as assemble(). */
static vla_status assemble_list1(vla_pq_chunk_reader *cr, vla_parquet_column *col, int fill) {
    const vla_parquet_column_info *info = cr->info;
    const uint8_t *def = cr->def, *rep = cr->rep;
    const int maxd = info->max_def, dp = info->def_present[0], dr = info->def_repeated[0];
    int64_t rows = 0, leaves = 0, k = 0;
    int open = 0; /* the current row's list has an element */
    for (int64_t e = 0; e < cr->nlev; e++) {
        int d = maxd ? def[e] : 0;
        if (rep[e] == 0) {
            if (fill) {
                col->list[0].offsets[rows] = leaves;
                col->list[0].valid[rows] = d >= dp;
            }
            rows++;
            open = d >= dr;
            if (!open) continue;
        } else if (!open) {
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "entry %lld repeats level 1 of an empty list", (long long)e);
        } else if (d < dr) {
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "entry %lld: definition level %d inside a list", (long long)e, d);
        }
        int ok = d == maxd;
        if (fill) {
            if (ok && k >= cr->nvals) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "fewer values than levels say");
            put_leaf(cr, col, leaves, k, ok);
        }
        leaves++;
        k += ok;
    }
    if (k != cr->nvals) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "levels say %lld values, pages hold %lld", (long long)k, (long long)cr->nvals);
    if (!fill) {
        col->num_values = leaves;
        col->num_rows = rows;
        col->list[0].count = rows;
    } else {
        col->list[0].offsets[rows] = leaves;
    }
    return VLA_OK;
}

/* Rebuild slots, list offsets and validity from the levels (see parquet.h). */
static vla_status assemble(vla_pq_chunk_reader *cr, vla_parquet_column *col, int fill) {
    const vla_parquet_column_info *info = cr->info;
    if (info->max_rep == 1) return assemble_list1(cr, col, fill);
    int L = info->max_rep, maxd = info->max_def;
    int64_t cnt[VLA_PQ_MAX_LEVEL + 1] = {0};
    int64_t k = 0; /* next dense value */
    int prev_stop = 0;
    for (int64_t e = 0; e < cr->nlev; e++) {
        int d = maxd ? cr->def[e] : 0;
        int r = L ? cr->rep[e] : 0;
        if (e == 0 && r != 0) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "first repetition level is %d, not 0", r);
        if (r > prev_stop) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "entry %lld repeats level %d of an empty list", (long long)e, r);
        if (r > 0 && d < info->def_repeated[r - 1])
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "entry %lld: definition level %d inside a list", (long long)e, d);
        int level = r;
        for (;;) {
            if (level == L) {
                int64_t s = cnt[L]++;
                int ok = d == maxd;
                if (fill) {
                    if (ok && k >= cr->nvals) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "fewer values than levels say");
                    put_leaf(cr, col, s, k, ok);
                }
                k += ok;
                prev_stop = L;
                break;
            }
            int64_t s = cnt[level]++;
            if (fill) {
                col->list[level].offsets[s] = cnt[level + 1];
                col->list[level].valid[s] = d >= info->def_present[level];
            }
            if (d >= info->def_repeated[level]) {
                level++;
                continue;
            }
            prev_stop = level;
            break;
        }
    }
    if (k != cr->nvals) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "levels say %lld values, pages hold %lld", (long long)k, (long long)cr->nvals);
    if (!fill) {
        col->num_values = cnt[L];
        col->num_rows = cnt[0];
        for (int l = 0; l < L; l++) col->list[l].count = cnt[l];
    } else {
        for (int l = 0; l < L; l++) col->list[l].offsets[cnt[l]] = cnt[l + 1];
    }
    return VLA_OK;
}

vla_status vla_pq_assemble_column(vla_pq_chunk_reader *cr, vla_parquet_column *col) {
    const vla_parquet_file *pq = cr->pq;
    /* Lay out slots: count, allocate, fill. */
    VLA_TRY(assemble(cr, col, 0));
    if (col->num_rows != pq->rgs[cr->rg].num_rows)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "column has %lld rows, its row group %lld", (long long)col->num_rows,
                            (long long)pq->rgs[cr->rg].num_rows);
    int64_t ns = col->num_values;
    if (cr->info->max_rep == 0 && cr->nvals == ns && cr->width) {
        /* flat and without nulls: the dense values are the slots */
        col->valid = malloc((size_t)(ns ? ns : 1));
        if (!col->valid) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
        memset(col->valid, 1, (size_t)ns);
        col->values = cr->vals;
        cr->vals = NULL;
        col->null_count = 0;
        return VLA_OK;
    }
    col->valid = malloc((size_t)(ns ? ns : 1));
    if (cr->width) col->values = malloc((size_t)(ns ? ns : 1) * (size_t)cr->width);
    else col->offsets = calloc((size_t)ns + 1, sizeof *col->offsets);
    if (!col->valid || (!col->values && !col->offsets)) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    for (int l = 0; l < cr->info->max_rep; l++) {
        col->list[l].offsets = malloc((size_t)(col->list[l].count + 1) * sizeof(int64_t));
        col->list[l].valid = malloc((size_t)(col->list[l].count ? col->list[l].count : 1));
        if (!col->list[l].offsets || !col->list[l].valid) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    VLA_TRY(assemble(cr, col, 1));
    col->null_count = ns - cr->nvals;
    if (!cr->width) {
        col->data = cr->bytes.data;
        col->data_size = (int64_t)cr->bytes.len;
        cr->bytes.data = NULL;
        cr->bytes.len = cr->bytes.cap = 0;
        /* never NULL, so data + offsets[i] is valid even when all values are empty */
        if (!col->data && !(col->data = malloc(1))) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    return VLA_OK;
}
