/* parquet.c — the Parquet reader's public API (parquet.h): what the footer
 * says (parquet_footer.c), one column chunk of one row group decoded into a
 * vla_parquet_column (parquet_chunk.c), and the convenience readers the
 * dataset layer uses. */
#include "io/parquet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/parquet_internal.h"

/* ---- the file --------------------------------------------------------- */

const char *vla_parquet_path(const vla_parquet_file *pq) { return pq->path; }
int64_t vla_parquet_num_rows(const vla_parquet_file *pq) { return pq->num_rows; }
int vla_parquet_num_row_groups(const vla_parquet_file *pq) { return pq->nrg; }

int64_t vla_parquet_row_group_rows(const vla_parquet_file *pq, int rg) {
    return rg >= 0 && rg < pq->nrg ? pq->rgs[rg].num_rows : -1;
}
int vla_parquet_num_columns(const vla_parquet_file *pq) { return pq->ncols; }

const vla_parquet_column_info *vla_parquet_column_at(const vla_parquet_file *pq, int c) {
    return c >= 0 && c < pq->ncols ? &pq->cols[c] : NULL;
}
int vla_parquet_num_nodes(const vla_parquet_file *pq) { return pq->nnodes; }

const vla_parquet_node *vla_parquet_node_at(const vla_parquet_file *pq, int i) {
    return i >= 0 && i < pq->nnodes ? &pq->nodes[i] : NULL;
}

const char *vla_parquet_kv(const vla_parquet_file *pq, const char *key) {
    for (int i = 0; i < pq->nkv; i++)
        if (pq->kv[i].key && strcmp(pq->kv[i].key, key) == 0) return pq->kv[i].value ? pq->kv[i].value : "";
    return NULL;
}
const char *vla_parquet_created_by(const vla_parquet_file *pq) { return pq->created_by; }

int vla_parquet_chunk_codec(const vla_parquet_file *pq, int rg, int c) {
    if (rg < 0 || rg >= pq->nrg || c < 0 || c >= pq->ncols) return -1;
    return pq->rgs[rg].chunks[c].codec;
}

int vla_parquet_find_column(const vla_parquet_file *pq, const char *name) {
    for (int i = 0; i < pq->ncols; i++)
        if (strcmp(pq->cols[i].path, name) == 0) return i;
    int found = -1, n = 0;
    for (int i = 0; i < pq->ncols; i++)
        if (strcmp(pq->cols[i].top, name) == 0) {
            found = i;
            n++;
        }
    if (n == 1) return found;
    if (n > 1)
        vla_error(VLA_ERR_NOT_FOUND, "%s: field '%s' has %d leaf columns; name one by its dotted path", pq->path, name, n);
    else
        vla_error(VLA_ERR_NOT_FOUND, "%s: no column '%s'", pq->path, name);
    return -1;
}

/* ---- one column chunk --------------------------------------------------- */

void vla_parquet_column_free(vla_parquet_column *col) {
    if (!col) return;
    free(col->values);
    free(col->offsets);
    free(col->data);
    free(col->valid);
    for (int l = 0; l < VLA_PQ_MAX_LEVEL; l++) {
        free(col->list[l].offsets);
        free(col->list[l].valid);
    }
    memset(col, 0, sizeof *col);
}

vla_status vla_parquet_read_column(const vla_parquet_file *pq, int row_group, int column, vla_parquet_column *col) {
    memset(col, 0, sizeof *col);
    if (row_group < 0 || row_group >= pq->nrg)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: row group %d out of range (file has %d)", pq->path, row_group, pq->nrg);
    if (column < 0 || column >= pq->ncols)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: column %d out of range (file has %d)", pq->path, column, pq->ncols);
    vla_pq_chunk_reader cr;
    memset(&cr, 0, sizeof cr);
    cr.pq = pq;
    cr.rg = row_group;
    cr.col = column;
    cr.info = &pq->cols[column];
    cr.ch = &pq->rgs[row_group].chunks[column];
    cr.width = cr.info->type == VLA_PQ_BYTE_ARRAY ? 0 : vla_pq_type_width(cr.info->type, cr.info->type_length);
    col->type = cr.info->type;
    col->type_length = cr.info->type_length;
    col->max_def = cr.info->max_def;
    col->max_rep = cr.info->max_rep;
    vla_status st = vla_pq_read_chunk(&cr, col);
    vla_pq_chunk_reader_free(&cr);
    return st;
}

vla_status vla_parquet_read_column_by_name(const vla_parquet_file *pq, int row_group, const char *name, vla_parquet_column *col) {
    memset(col, 0, sizeof *col);
    int c = vla_parquet_find_column(pq, name);
    if (c < 0) return VLA_ERR_NOT_FOUND;
    return vla_parquet_read_column(pq, row_group, c, col);
}

/* ---- convenience readers for the dataset layer -------------------------- */

vla_status vla_parquet_read_f32_matrix(const vla_parquet_file *pq, int row_group, const char *name, float **out,
                                       int64_t *rows, int *width) {
    *out = NULL;
    *rows = 0;
    *width = 0;
    int c = vla_parquet_find_column(pq, name);
    if (c < 0) return VLA_ERR_NOT_FOUND;
    const vla_parquet_column_info *info = &pq->cols[c];
    if ((info->type != VLA_PQ_FLOAT && info->type != VLA_PQ_DOUBLE) || info->max_rep > 1)
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' is not a float/double scalar or flat list", pq->path, name);
    int rg0 = row_group < 0 ? 0 : row_group, rg1 = row_group < 0 ? pq->nrg : row_group + 1;
    if (row_group >= pq->nrg) return vla_error(VLA_ERR_INVALID_ARG, "%s: row group %d out of range", pq->path, row_group);
    int64_t total = 0;
    for (int g = rg0; g < rg1; g++) total += pq->rgs[g].num_rows;
    float *m = NULL;
    int64_t at = 0;
    int wd = -1;
    for (int g = rg0; g < rg1; g++) {
        vla_parquet_column col;
        vla_status st = vla_parquet_read_column(pq, g, c, &col);
        if (st != VLA_OK) {
            vla_parquet_column_free(&col);
            free(m);
            return st;
        }
        for (int64_t r = 0; r < col.num_rows && st == VLA_OK; r++) {
            int64_t a = info->max_rep ? col.list[0].offsets[r] : r, b = info->max_rep ? col.list[0].offsets[r + 1] : r + 1;
            int rv = info->max_rep ? col.list[0].valid[r] : 1;
            if (wd < 0) {
                wd = (int)(b - a);
                if (b - a > (1 << 24) || wd == 0 || total > INT64_MAX / 4 / wd) {
                    st = vla_error(VLA_ERR_FORMAT, "%s: column '%s': row width %lld", pq->path, name, (long long)(b - a));
                    break;
                }
                m = malloc((size_t)(total * wd) * sizeof(float));
                if (!m) {
                    st = vla_error(VLA_ERR_NOMEM, "out of memory");
                    break;
                }
            }
            if (!rv || b - a != wd) {
                st = vla_error(VLA_ERR_FORMAT, "%s: column '%s', row group %d, row %lld: %s (expected %d values)", pq->path,
                               name, g, (long long)r, rv ? "list length differs" : "null list", wd);
                break;
            }
            for (int64_t i = a; i < b; i++) {
                if (!col.valid[i]) {
                    st = vla_error(VLA_ERR_FORMAT, "%s: column '%s', row group %d, row %lld: null element", pq->path, name, g,
                                   (long long)r);
                    break;
                }
                m[at++] = info->type == VLA_PQ_FLOAT ? ((float *)col.values)[i] : (float)((double *)col.values)[i];
            }
        }
        vla_parquet_column_free(&col);
        if (st != VLA_OK) {
            free(m);
            return st;
        }
    }
    *out = m;
    *rows = total;
    *width = wd < 0 ? 0 : wd;
    return VLA_OK;
}

vla_status vla_parquet_read_i64(const vla_parquet_file *pq, int row_group, const char *name, int64_t **out, int64_t *rows) {
    *out = NULL;
    *rows = 0;
    int c = vla_parquet_find_column(pq, name);
    if (c < 0) return VLA_ERR_NOT_FOUND;
    const vla_parquet_column_info *info = &pq->cols[c];
    if ((info->type != VLA_PQ_INT64 && info->type != VLA_PQ_INT32) || info->max_rep != 0)
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' is not an integer scalar", pq->path, name);
    if (row_group >= pq->nrg) return vla_error(VLA_ERR_INVALID_ARG, "%s: row group %d out of range", pq->path, row_group);
    int rg0 = row_group < 0 ? 0 : row_group, rg1 = row_group < 0 ? pq->nrg : row_group + 1;
    int64_t total = 0, at = 0;
    for (int g = rg0; g < rg1; g++) total += pq->rgs[g].num_rows;
    int64_t *v = malloc((size_t)(total ? total : 1) * sizeof *v);
    if (!v) return vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int g = rg0; g < rg1; g++) {
        vla_parquet_column col;
        vla_status st = vla_parquet_read_column(pq, g, c, &col);
        for (int64_t r = 0; st == VLA_OK && r < col.num_rows; r++) {
            if (!col.valid[r]) st = vla_error(VLA_ERR_FORMAT, "%s: column '%s', row group %d, row %lld: null", pq->path, name, g, (long long)r);
            else v[at++] = info->type == VLA_PQ_INT64 ? ((int64_t *)col.values)[r] : ((int32_t *)col.values)[r];
        }
        vla_parquet_column_free(&col);
        if (st != VLA_OK) {
            free(v);
            return st;
        }
    }
    *out = v;
    *rows = total;
    return VLA_OK;
}
