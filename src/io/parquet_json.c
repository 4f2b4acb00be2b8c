/* parquet_json.c — a JSON view of decoded Parquet columns, used by the tests
 * that compare vla.c's reading with DuckDB's and handy for debugging. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "io/parquet.h"

static json_t *hex(const uint8_t *p, int64_t n) {
    static const char digits[] = "0123456789ABCDEF";
    char *s = malloc((size_t)n * 2 + 1);
    if (!s) return NULL;
    for (int64_t i = 0; i < n; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * n] = '\0';
    json_t *j = json_string(s);
    free(s);
    return j;
}

static json_t *leaf(const vla_parquet_column_info *info, const vla_parquet_column *col, int64_t s) {
    if (!col->valid[s]) return json_null();
    switch (col->type) {
    case VLA_PQ_BOOLEAN: return json_boolean(((const uint8_t *)col->values)[s]);
    case VLA_PQ_INT32: return json_integer(((const int32_t *)col->values)[s]);
    case VLA_PQ_INT64: return json_integer(((const int64_t *)col->values)[s]);
    case VLA_PQ_FLOAT: return json_real(((const float *)col->values)[s]);
    case VLA_PQ_DOUBLE: return json_real(((const double *)col->values)[s]);
    case VLA_PQ_BYTE_ARRAY: {
        const uint8_t *p = col->data + col->offsets[s];
        int64_t n = col->offsets[s + 1] - col->offsets[s];
        if (info->is_string) return json_stringn_nocheck((const char *)p, (size_t)n);
        return hex(p, n);
    }
    default: {
        int w = col->type == VLA_PQ_INT96 ? 12 : col->type_length;
        return hex((const uint8_t *)col->values + s * w, w);
    }
    }
}

/* NULL when out of memory (ours in hex(), or jansson's). */
static json_t *slot(const vla_parquet_column_info *info, const vla_parquet_column *col, int level, int64_t s) {
    if (level == col->max_rep) return leaf(info, col, s);
    if (!col->list[level].valid[s]) return json_null();
    json_t *a = json_array();
    for (int64_t i = col->list[level].offsets[s]; a && i < col->list[level].offsets[s + 1]; i++) {
        json_t *v = slot(info, col, level + 1, i);
        if (!v || json_array_append_new(a, v) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

json_t *vla_parquet_value_json(const vla_parquet_column_info *info, const vla_parquet_column *col, int64_t row) {
    return slot(info, col, 0, row);
}

/* A top-level struct whose children are all scalar leaves (LeRobot's image
 * struct {bytes, path}): its leaf columns, or 0 when the field is not one. */
static int simple_struct_leaves(const vla_parquet_file *pq, int top, int *leaves, int cap) {
    const vla_parquet_node *t = vla_parquet_node_at(pq, top);
    if (t->type != VLA_PQ_GROUP || t->repetition == VLA_PQ_REPEATED || t->converted_type >= 0 || t->logical_type) return 0;
    int n = 0;
    for (int c = 0; c < vla_parquet_num_columns(pq); c++) {
        const vla_parquet_column_info *ci = vla_parquet_column_at(pq, c);
        if (ci->top_node != top) continue;
        if (ci->max_rep != 0 || vla_parquet_node_at(pq, ci->node)->parent != top || n == cap) return 0;
        leaves[n++] = c;
    }
    return n;
}

vla_status vla_parquet_to_json(const vla_parquet_file *pq, json_t **out) {
    *out = NULL;
    json_t *root = json_object(), *cols = json_array(), *rows = json_array();
    json_object_set_new(root, "columns", cols);
    json_object_set_new(root, "rows", rows);
    int nc = vla_parquet_num_columns(pq);
    for (int c = 0; c < nc; c++) {
        const vla_parquet_column_info *info = vla_parquet_column_at(pq, c);
        int leaves = 0, first = -1;
        for (int k = 0; k < nc; k++)
            if (vla_parquet_column_at(pq, k)->top_node == info->top_node) {
                leaves++;
                if (first < 0) first = k;
            }
        int sl[64];
        if (first == c && (leaves == 1 || simple_struct_leaves(pq, info->top_node, sl, 64)))
            json_array_append_new(cols, json_string(info->top));
    }
    for (int g = 0; g < vla_parquet_num_row_groups(pq); g++) {
        size_t base = json_array_size(rows);
        for (int c = 0; c < nc; c++) {
            const vla_parquet_column_info *info = vla_parquet_column_at(pq, c);
            int leaves = 0;
            for (int k = 0; k < nc; k++) leaves += vla_parquet_column_at(pq, k)->top_node == info->top_node;
            int sl[64], ns = leaves == 1 ? 0 : simple_struct_leaves(pq, info->top_node, sl, 64);
            if (leaves != 1 && ns == 0) continue;
            vla_parquet_column col;
            vla_status st = vla_parquet_read_column(pq, g, c, &col);
            if (st != VLA_OK) {
                vla_parquet_column_free(&col);
                json_decref(root);
                return st;
            }
            /* rows are made as columns arrive: their count is then checked
             * against decoded levels, not just the footer's claim */
            while (json_array_size(rows) < base + (size_t)col.num_rows) json_array_append_new(rows, json_object());
            for (int64_t r = 0; r < col.num_rows; r++) {
                json_t *row = json_array_get(rows, base + (size_t)r), *v = vla_parquet_value_json(info, &col, r);
                if (!v) {
                    vla_parquet_column_free(&col);
                    json_decref(root);
                    return vla_error(VLA_ERR_NOMEM, "%s: column '%s': out of memory", vla_parquet_path(pq), info->path);
                }
                if (leaves == 1) {
                    json_object_set_new(row, info->top, v);
                    continue;
                }
                /* struct member: {"<leaf name>": value}, the struct itself is never null here */
                json_t *obj = json_object_get(row, info->top);
                if (!obj) {
                    obj = json_object();
                    json_object_set_new(row, info->top, obj);
                }
                json_object_set_new(obj, vla_parquet_node_at(pq, info->node)->name, v);
            }
            vla_parquet_column_free(&col);
        }
    }
    *out = root;
    return VLA_OK;
}
