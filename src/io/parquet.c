/* parquet.c — Parquet reader: footer (Thrift compact FileMetaData), schema
 * tree → leaf columns with definition/repetition levels, row groups, and the
 * decoding of one column chunk into a vla_parquet_column (pages v1/v2,
 * dictionary, all value encodings in parquet.h). See parquet.h. */
#include "io/parquet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "io/parquet_internal.h"
#include "io/thrift_compact.h"

/* ------------------------------------------------------------------ */
/* footer                                                              */
/* ------------------------------------------------------------------ */

static char *dup_bytes(const uint8_t *p, uint32_t n) {
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

#define NOMEM() vla_error(VLA_ERR_NOMEM, "out of memory")

static vla_status read_schema_element(vla_thrift_reader *r, vla_parquet_node *n) {
    memset(n, 0, sizeof *n);
    n->type = VLA_PQ_GROUP;
    n->converted_type = -1;
    n->repetition = VLA_PQ_REQUIRED;
    n->parent = n->first_child = n->leaf = -1;
    int has_type = 0;
    VLA_TRY(vla_thrift_struct_begin(r));
    for (;;) {
        int t, id;
        VLA_TRY(vla_thrift_field(r, &t, &id));
        if (t == VLA_TC_STOP) break;
        int32_t v;
        const uint8_t *s;
        uint32_t sn;
        switch (id) {
        case 1:
            VLA_TRY(vla_thrift_i32(r, t, &v));
            if (v < 0 || v > 7) return vla_error(VLA_ERR_FORMAT, "unknown physical type %d", v);
            n->type = v;
            has_type = 1;
            break;
        case 2: VLA_TRY(vla_thrift_i32(r, t, &n->type_length)); break;
        case 3:
            VLA_TRY(vla_thrift_i32(r, t, &v));
            if (v < 0 || v > 2) return vla_error(VLA_ERR_FORMAT, "bad repetition type %d", v);
            n->repetition = v;
            break;
        case 4:
            VLA_TRY(vla_thrift_binary(r, t, &s, &sn));
            free(n->name);
            if (!(n->name = dup_bytes(s, sn))) return NOMEM();
            break;
        case 5:
            VLA_TRY(vla_thrift_i32(r, t, &n->num_children));
            if (n->num_children < 0) return vla_error(VLA_ERR_FORMAT, "negative num_children");
            break;
        case 6: VLA_TRY(vla_thrift_i32(r, t, &n->converted_type)); break;
        case 10: {
            /* LogicalType is a union: the id of its one set field names it. */
            VLA_TRY(vla_thrift_struct_begin(r));
            for (;;) {
                int lt, lid;
                VLA_TRY(vla_thrift_field(r, &lt, &lid));
                if (lt == VLA_TC_STOP) break;
                n->logical_type = lid;
                VLA_TRY(vla_thrift_skip(r, lt));
            }
            VLA_TRY(vla_thrift_struct_end(r));
            break;
        }
        default: VLA_TRY(vla_thrift_skip(r, t));
        }
    }
    VLA_TRY(vla_thrift_struct_end(r));
    if (!n->name) return vla_error(VLA_ERR_FORMAT, "schema element without a name");
    if (has_type && n->num_children > 0) return vla_error(VLA_ERR_FORMAT, "schema element '%s' has a type and children", n->name);
    if (!has_type && n->num_children == 0) n->type = VLA_PQ_GROUP;
    return VLA_OK;
}

static vla_status read_column_meta(vla_thrift_reader *r, vla_parquet_chunk *c) {
    VLA_TRY(vla_thrift_struct_begin(r));
    c->has_meta = 1;
    int seen = 0;
    for (;;) {
        int t, id;
        VLA_TRY(vla_thrift_field(r, &t, &id));
        if (t == VLA_TC_STOP) break;
        int32_t v;
        switch (id) {
        case 1: VLA_TRY(vla_thrift_i32(r, t, &v)); c->type = v; seen |= 1; break;
        case 4: VLA_TRY(vla_thrift_i32(r, t, &v)); c->codec = v; seen |= 2; break;
        case 5: VLA_TRY(vla_thrift_i64(r, t, &c->num_values)); seen |= 4; break;
        case 6: VLA_TRY(vla_thrift_i64(r, t, &c->total_uncompressed_size)); break;
        case 7: VLA_TRY(vla_thrift_i64(r, t, &c->total_compressed_size)); seen |= 8; break;
        case 9: VLA_TRY(vla_thrift_i64(r, t, &c->data_page_offset)); seen |= 16; break;
        case 11: VLA_TRY(vla_thrift_i64(r, t, &c->dictionary_page_offset)); break;
        default: VLA_TRY(vla_thrift_skip(r, t));
        }
    }
    VLA_TRY(vla_thrift_struct_end(r));
    if (seen != 31) return vla_error(VLA_ERR_FORMAT, "column metadata misses required fields");
    if (c->num_values < 0 || c->total_compressed_size < 0 || c->data_page_offset < 0)
        return vla_error(VLA_ERR_FORMAT, "negative size or offset in column metadata");
    return VLA_OK;
}

static vla_status read_row_group(vla_thrift_reader *r, vla_parquet_file *pq, vla_parquet_row_group *rg) {
    VLA_TRY(vla_thrift_struct_begin(r));
    int have_cols = 0;
    for (;;) {
        int t, id;
        VLA_TRY(vla_thrift_field(r, &t, &id));
        if (t == VLA_TC_STOP) break;
        if (id == 1 && !have_cols) {
            int et;
            int64_t n;
            VLA_TRY(vla_thrift_list(r, t, &et, &n));
            if (et != VLA_TC_STRUCT) return vla_error(VLA_ERR_FORMAT, "row group columns are not structs");
            if (n != pq->ncols)
                return vla_error(VLA_ERR_FORMAT, "row group has %lld column chunks, schema has %d leaves", (long long)n, pq->ncols);
            rg->chunks = calloc((size_t)(n ? n : 1), sizeof *rg->chunks);
            if (!rg->chunks) return NOMEM();
            have_cols = 1;
            for (int64_t i = 0; i < n; i++) {
                vla_parquet_chunk *c = &rg->chunks[i];
                c->dictionary_page_offset = -1;
                VLA_TRY(vla_thrift_struct_begin(r));
                for (;;) {
                    int ct, cid;
                    VLA_TRY(vla_thrift_field(r, &ct, &cid));
                    if (ct == VLA_TC_STOP) break;
                    if (cid == 3 && ct == VLA_TC_STRUCT) VLA_TRY(read_column_meta(r, c));
                    else VLA_TRY(vla_thrift_skip(r, ct));
                }
                VLA_TRY(vla_thrift_struct_end(r));
            }
        } else if (id == 2) {
            VLA_TRY(vla_thrift_i64(r, t, &rg->total_byte_size));
        } else if (id == 3) {
            VLA_TRY(vla_thrift_i64(r, t, &rg->num_rows));
            if (rg->num_rows < 0) return vla_error(VLA_ERR_FORMAT, "negative row count");
        } else {
            VLA_TRY(vla_thrift_skip(r, t));
        }
    }
    VLA_TRY(vla_thrift_struct_end(r));
    if (!have_cols) return vla_error(VLA_ERR_FORMAT, "row group without columns");
    return VLA_OK;
}

/* Walk the flattened schema (depth-first, children counted) to link parents
 * and compute each leaf's levels. */
static vla_status build_schema(vla_parquet_file *pq) {
    if (pq->nnodes < 1) return vla_error(VLA_ERR_FORMAT, "empty schema");
    int stack[64], left[64], sp = 0;
    int nleaves = 0;
    pq->nodes[0].parent = -1;
    if (pq->nodes[0].num_children <= 0 && pq->nnodes > 1) return vla_error(VLA_ERR_FORMAT, "schema root has no children");
    stack[0] = 0;
    left[0] = pq->nodes[0].num_children;
    for (int i = 1; i < pq->nnodes; i++) {
        while (sp >= 0 && left[sp] == 0) sp--;
        if (sp < 0) return vla_error(VLA_ERR_FORMAT, "schema has %d elements beyond its tree", pq->nnodes - i);
        vla_parquet_node *n = &pq->nodes[i];
        n->parent = stack[sp];
        if (pq->nodes[stack[sp]].first_child < 0) pq->nodes[stack[sp]].first_child = i;
        left[sp]--;
        if (n->num_children > 0) {
            if (sp + 1 >= 64) return vla_error(VLA_ERR_FORMAT, "schema nested too deeply");
            sp++;
            stack[sp] = i;
            left[sp] = n->num_children;
        } else {
            if (n->type == VLA_PQ_GROUP) return vla_error(VLA_ERR_FORMAT, "schema leaf '%s' has no type", n->name);
            nleaves++;
        }
    }
    for (int k = 0; k <= sp; k++)
        if (left[k] != 0) return vla_error(VLA_ERR_FORMAT, "schema ends before all children are listed");
    pq->ncols = nleaves;
    pq->cols = calloc((size_t)(nleaves ? nleaves : 1), sizeof *pq->cols);
    if (!pq->cols) return NOMEM();
    int li = 0;
    for (int i = 1; i < pq->nnodes; i++) {
        vla_parquet_node *n = &pq->nodes[i];
        if (n->num_children > 0) continue;
        n->leaf = li;
        vla_parquet_column_info *c = &pq->cols[li++];
        c->node = i;
        c->type = n->type;
        c->type_length = n->type_length;
        if (n->type == VLA_PQ_FIXED_LEN_BYTE_ARRAY && (n->type_length <= 0 || n->type_length > (1 << 20)))
            return vla_error(VLA_ERR_FORMAT, "column '%s': bad FIXED_LEN_BYTE_ARRAY length %d", n->name, n->type_length);
        c->is_string = n->type == VLA_PQ_BYTE_ARRAY &&
                       (n->converted_type == VLA_PQ_CT_UTF8 || n->logical_type == VLA_PQ_LT_STRING);
        /* path from the top-level field down to the leaf */
        int chain[64], depth = 0;
        for (int j = i; j > 0; j = pq->nodes[j].parent) chain[depth++] = j;
        c->top_node = chain[depth - 1];
        c->top = pq->nodes[c->top_node].name;
        size_t len = 0;
        for (int k = 0; k < depth; k++) len += strlen(pq->nodes[chain[k]].name) + 1;
        c->path = malloc(len + 1);
        if (!c->path) return NOMEM();
        c->path[0] = '\0';
        int d = 0, rr = 0;
        for (int k = depth - 1; k >= 0; k--) {
            const vla_parquet_node *nk = &pq->nodes[chain[k]];
            strcat(c->path, nk->name);
            if (k) strcat(c->path, ".");
            if (nk->repetition == VLA_PQ_REPEATED) {
                if (rr >= VLA_PQ_MAX_LEVEL) return vla_error(VLA_ERR_UNSUPPORTED, "column '%s': lists nested deeper than %d", c->path, VLA_PQ_MAX_LEVEL);
                c->def_present[rr] = d;  /* def reached above the repeated node */
                d++;
                c->def_repeated[rr] = d;
                rr++;
            } else if (nk->repetition == VLA_PQ_OPTIONAL) {
                d++;
            }
        }
        c->max_def = d;
        c->max_rep = rr;
    }
    return VLA_OK;
}

static vla_status read_footer(vla_parquet_file *pq, const uint8_t *p, size_t n, int64_t base) {
    vla_thrift_reader r;
    vla_thrift_reader_init(&r, p, n, base);
    VLA_TRY(vla_thrift_struct_begin(&r));
    int seen = 0;
    for (;;) {
        int t, id;
        VLA_TRY(vla_thrift_field(&r, &t, &id));
        if (t == VLA_TC_STOP) break;
        int et;
        int64_t cnt;
        switch (id) {
        case 2:
            if (seen & 2) return vla_error(VLA_ERR_FORMAT, "schema listed twice");
            VLA_TRY(vla_thrift_list(&r, t, &et, &cnt));
            if (et != VLA_TC_STRUCT || cnt < 1 || cnt > 1000000) return vla_error(VLA_ERR_FORMAT, "bad schema list");
            pq->nodes = calloc((size_t)cnt, sizeof *pq->nodes);
            if (!pq->nodes) return NOMEM();
            for (int64_t i = 0; i < cnt; i++) {
                pq->nnodes = (int)i + 1;
                VLA_TRY(vla_error_context(read_schema_element(&r, &pq->nodes[i]), "schema element %lld", (long long)i));
            }
            VLA_TRY(build_schema(pq));
            seen |= 2;
            break;
        case 3: VLA_TRY(vla_thrift_i64(&r, t, &pq->num_rows)); seen |= 4; break;
        case 4:
            if (!(seen & 2)) return vla_error(VLA_ERR_FORMAT, "row groups before the schema");
            if (seen & 8) return vla_error(VLA_ERR_FORMAT, "row groups listed twice");
            VLA_TRY(vla_thrift_list(&r, t, &et, &cnt));
            if (et != VLA_TC_STRUCT) return vla_error(VLA_ERR_FORMAT, "bad row group list");
            pq->rgs = calloc((size_t)(cnt ? cnt : 1), sizeof *pq->rgs);
            if (!pq->rgs) return NOMEM();
            for (int64_t i = 0; i < cnt; i++) {
                pq->nrg = (int)i + 1;
                VLA_TRY(vla_error_context(read_row_group(&r, pq, &pq->rgs[i]), "row group %lld", (long long)i));
            }
            seen |= 8;
            break;
        case 5:
            if (pq->kv) { VLA_TRY(vla_thrift_skip(&r, t)); break; }
            VLA_TRY(vla_thrift_list(&r, t, &et, &cnt));
            if (et != VLA_TC_STRUCT) return vla_error(VLA_ERR_FORMAT, "bad key-value list");
            pq->kv = calloc((size_t)(cnt ? cnt : 1), sizeof *pq->kv);
            if (!pq->kv) return NOMEM();
            for (int64_t i = 0; i < cnt; i++) {
                pq->nkv = (int)i + 1;
                VLA_TRY(vla_thrift_struct_begin(&r));
                for (;;) {
                    int kt, kid;
                    const uint8_t *s;
                    uint32_t sn;
                    VLA_TRY(vla_thrift_field(&r, &kt, &kid));
                    if (kt == VLA_TC_STOP) break;
                    if ((kid == 1 || kid == 2) && kt == VLA_TC_BINARY) {
                        VLA_TRY(vla_thrift_binary(&r, kt, &s, &sn));
                        char **dst = kid == 1 ? &pq->kv[i].key : &pq->kv[i].value;
                        free(*dst);
                        if (!(*dst = dup_bytes(s, sn))) return NOMEM();
                    } else {
                        VLA_TRY(vla_thrift_skip(&r, kt));
                    }
                }
                VLA_TRY(vla_thrift_struct_end(&r));
            }
            break;
        case 6: {
            const uint8_t *s;
            uint32_t sn;
            if (t != VLA_TC_BINARY || pq->created_by) { VLA_TRY(vla_thrift_skip(&r, t)); break; }
            VLA_TRY(vla_thrift_binary(&r, t, &s, &sn));
            if (!(pq->created_by = dup_bytes(s, sn))) return NOMEM();
            break;
        }
        default: VLA_TRY(vla_thrift_skip(&r, t));
        }
    }
    if ((seen & 14) != 14) return vla_error(VLA_ERR_FORMAT, "footer misses the schema, row count or row groups");
    return VLA_OK;
}

static vla_status open_common(vla_parquet_file *pq) {
    const uint8_t *d = pq->data;
    size_t n = pq->size;
    if (n < 12) return vla_error(VLA_ERR_FORMAT, "%s: %zu bytes is too short for a parquet file", pq->path, n);
    if (memcmp(d, "PAR1", 4) != 0) return vla_error(VLA_ERR_FORMAT, "%s: bad magic at byte 0 (not a parquet file)", pq->path);
    if (memcmp(d + n - 4, "PAR1", 4) != 0) {
        if (memcmp(d + n - 4, "PARE", 4) == 0)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: encrypted footer (PARE) is not supported", pq->path);
        return vla_error(VLA_ERR_FORMAT, "%s: bad magic at byte %zu (truncated or not a parquet file)", pq->path, n - 4);
    }
    uint32_t flen;
    memcpy(&flen, d + n - 8, 4);
    if ((uint64_t)flen + 12 > n || (int64_t)flen > pq->limits.max_footer_bytes)
        return vla_error(VLA_ERR_FORMAT, "%s: footer length %u at byte %zu is past the start of the file", pq->path,
                         flen, n - 8);
    int64_t foff = (int64_t)(n - 8 - flen);
    vla_status st = read_footer(pq, d + foff, flen, foff);
    if (st != VLA_OK) return vla_error_context(st, "%s: footer", pq->path);
    pq->footer_start = foff;
    return VLA_OK;
}

static const vla_parquet_limits default_limits = {
    .max_page_bytes = INT64_C(1) << 30,
    .max_chunk_values = INT64_C(1) << 27,
    .max_footer_bytes = INT64_C(256) << 20,
};

vla_status vla_parquet_open_memory(const void *data, size_t size, const char *name,
                                   const vla_parquet_limits *limits, vla_parquet_file **out) {
    *out = NULL;
    vla_parquet_file *pq = calloc(1, sizeof *pq);
    if (!pq) return NOMEM();
    pq->path = strdup(name ? name : "<memory>");
    if (!pq->path) {
        free(pq);
        return NOMEM();
    }
    pq->data = data;
    pq->size = size;
    pq->limits = limits ? *limits : default_limits;
    vla_status st = open_common(pq);
    if (st != VLA_OK) {
        vla_parquet_close(pq);
        return st;
    }
    *out = pq;
    return VLA_OK;
}

vla_status vla_parquet_open(const char *path, vla_parquet_file **out) {
    *out = NULL;
    vla_mapped_file m;
    VLA_TRY(vla_map_file(path, &m));
    static const uint8_t empty[1];
    vla_status st = vla_parquet_open_memory(m.data ? m.data : empty, m.size, path, NULL, out);
    if (st != VLA_OK) {
        vla_unmap_file(&m);
        return st;
    }
    (*out)->mapped = m.data != NULL;
    return VLA_OK;
}

void vla_parquet_close(vla_parquet_file *pq) {
    if (!pq) return;
    if (pq->mapped) munmap((void *)pq->data, pq->size);
    for (int i = 0; i < pq->nnodes; i++) free(pq->nodes[i].name);
    free(pq->nodes);
    for (int i = 0; i < pq->ncols; i++) free(pq->cols[i].path);
    free(pq->cols);
    for (int i = 0; i < pq->nrg; i++) free(pq->rgs[i].chunks);
    free(pq->rgs);
    for (int i = 0; i < pq->nkv; i++) {
        free(pq->kv[i].key);
        free(pq->kv[i].value);
    }
    free(pq->kv);
    free(pq->created_by);
    free(pq->path);
    free(pq);
}

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

/* ------------------------------------------------------------------ */
/* column chunk decoding                                               */
/* ------------------------------------------------------------------ */

typedef struct {
    const vla_parquet_file *pq;
    int rg, col;
    const vla_parquet_column_info *info;
    const vla_parquet_chunk *ch;
    int width;               /* bytes per fixed-size value, 0 for BYTE_ARRAY */
    int64_t page_off;        /* file offset of the page being decoded */
    /* levels of all entries so far (NULL when max level is 0) */
    uint8_t *def, *rep;
    int64_t nlev, cap_lev;
    /* non-null values, densely */
    uint8_t *vals;
    int64_t *lens;           /* BYTE_ARRAY lengths */
    int64_t nvals, cap_vals;
    pq_buf bytes;            /* BYTE_ARRAY data */
    /* dictionary */
    int has_dict;
    int64_t dict_n;
    uint8_t *dict;           /* fixed-size values */
    int64_t *dict_off;       /* BYTE_ARRAY: dict_n + 1 */
    uint8_t *dict_data;
    uint8_t *scratch;        /* decompressed page */
    size_t scratch_cap;
} chunk_reader;

static vla_status cfail(chunk_reader *cr, vla_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static vla_status cfail(chunk_reader *cr, vla_status code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vla_error(code, "%s: column '%s', row group %d, page at byte %lld: %s", cr->pq->path, cr->info->path,
                     cr->rg, (long long)cr->page_off, msg);
}

/* Add file/column/row group/offset to a message a primitive recorded. */
static vla_status cwrap(chunk_reader *cr, vla_status st) {
    if (st == VLA_OK) return st;
    return vla_error_context(st, "%s: column '%s', row group %d, page at byte %lld", cr->pq->path, cr->info->path,
                             cr->rg, (long long)cr->page_off);
}

static vla_status grow(chunk_reader *cr, void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return VLA_OK;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return cfail(cr, VLA_ERR_NOMEM, "out of memory for %lld values", (long long)need);
    *p = np;
    *cap = nc;
    return VLA_OK;
}

static vla_status reserve_vals(chunk_reader *cr, int64_t n) {
    int64_t need = cr->nvals + n;
    if (need < 1) need = 1; /* never hand out pointers into a NULL buffer */
    if (need <= cr->cap_vals) return VLA_OK;
    if (cr->width) return grow(cr, (void **)&cr->vals, &cr->cap_vals, need, (size_t)cr->width);
    return grow(cr, (void **)&cr->lens, &cr->cap_vals, need, sizeof(int64_t));
}

/* PLAIN values of a fixed-size type into dst. */
static vla_status plain_fixed(chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst) {
    if (count == 0) return VLA_OK;
    if (cr->info->type == VLA_PQ_BOOLEAN) {
        if ((uint64_t)count > (uint64_t)n * 8) return cfail(cr, VLA_ERR_FORMAT, "PLAIN booleans: %lld values in %zu bytes", (long long)count, n);
        for (int64_t i = 0; i < count; i++) dst[i] = (p[i >> 3] >> (i & 7)) & 1;
        return VLA_OK;
    }
    uint64_t need = (uint64_t)count * (uint64_t)cr->width;
    if (need > n) return cfail(cr, VLA_ERR_FORMAT, "PLAIN values: %lld values need %llu bytes, page has %zu", (long long)count,
                               (unsigned long long)need, n);
    memcpy(dst, p, (size_t)need);
    return VLA_OK;
}

/* PLAIN byte arrays: append to `bytes`, lengths to lens. */
static vla_status plain_bytes(chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, pq_buf *bytes, int64_t *lens) {
    size_t pos = 0;
    for (int64_t i = 0; i < count; i++) {
        if (n - pos < 4) return cfail(cr, VLA_ERR_FORMAT, "PLAIN byte array %lld: length past the end of the page", (long long)i);
        uint32_t len;
        memcpy(&len, p + pos, 4);
        pos += 4;
        if (len > n - pos) return cfail(cr, VLA_ERR_FORMAT, "PLAIN byte array %lld: %u bytes past the end of the page", (long long)i, len);
        pq_buf_put(bytes, p + pos, len);
        lens[i] = len;
        pos += len;
    }
    if (bytes->oom) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
    return VLA_OK;
}

static vla_status read_dictionary(chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, int enc) {
    if (cr->has_dict) return cfail(cr, VLA_ERR_FORMAT, "second dictionary page");
    if (enc != PQ_ENC_PLAIN && enc != PQ_ENC_PLAIN_DICTIONARY)
        return cfail(cr, VLA_ERR_UNSUPPORTED, "dictionary page encoding %d", enc);
    if (count < 0 || count > cr->pq->limits.max_chunk_values || (cr->info->type != VLA_PQ_BOOLEAN && (uint64_t)count > n))
        return cfail(cr, VLA_ERR_FORMAT, "dictionary of %lld values in a %zu-byte page", (long long)count, n);
    cr->has_dict = 1;
    cr->dict_n = count;
    if (cr->width) {
        cr->dict = malloc((size_t)(count ? count : 1) * (size_t)cr->width);
        if (!cr->dict) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
        return plain_fixed(cr, p, n, count, cr->dict);
    }
    pq_buf b = {0};
    int64_t *lens = malloc((size_t)(count + 1) * sizeof *lens);
    cr->dict_off = malloc((size_t)(count + 1) * sizeof *cr->dict_off);
    if (!lens || !cr->dict_off) {
        free(lens);
        return cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    vla_status st = plain_bytes(cr, p, n, count, &b, lens);
    if (st == VLA_OK) {
        cr->dict_off[0] = 0;
        for (int64_t i = 0; i < count; i++) cr->dict_off[i + 1] = cr->dict_off[i] + lens[i];
        cr->dict_data = b.data;
    } else {
        pq_buf_free(&b);
    }
    free(lens);
    return st;
}

/* Decode `count` non-null values of one data page and append them. */
static vla_status decode_values(chunk_reader *cr, int enc, const uint8_t *p, size_t n, int64_t count) {
    VLA_TRY(reserve_vals(cr, count));
    int type = cr->info->type;
    int w = cr->width;
    uint8_t *dst = w ? cr->vals + cr->nvals * w : NULL;
    int64_t *lens = w ? NULL : cr->lens + cr->nvals;
    switch (enc) {
    case PQ_ENC_PLAIN:
        if (w) VLA_TRY(plain_fixed(cr, p, n, count, dst));
        else VLA_TRY(plain_bytes(cr, p, n, count, &cr->bytes, lens));
        break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
        if (!cr->has_dict) return cfail(cr, VLA_ERR_FORMAT, "dictionary-encoded page without a dictionary page");
        if (count == 0) break;
        if (n < 1) return cfail(cr, VLA_ERR_FORMAT, "dictionary indices: empty page");
        int bw = p[0];
        if (bw > 32) return cfail(cr, VLA_ERR_FORMAT, "dictionary index bit width %d", bw);
        pq_rle d;
        pq_rle_init(&d, p + 1, n - 1, bw);
        uint32_t idx[1024];
        for (int64_t i = 0; i < count;) {
            int64_t k = count - i < 1024 ? count - i : 1024;
            VLA_TRY(cwrap(cr, pq_rle_get(&d, idx, k)));
            for (int64_t j = 0; j < k; j++) {
                uint32_t x = idx[j];
                if ((int64_t)x >= cr->dict_n)
                    return cfail(cr, VLA_ERR_FORMAT, "dictionary index %u out of range (dictionary has %lld values)", x,
                                 (long long)cr->dict_n);
                if (w) {
                    memcpy(dst + (i + j) * w, cr->dict + (int64_t)x * w, (size_t)w);
                } else {
                    int64_t len = cr->dict_off[x + 1] - cr->dict_off[x];
                    pq_buf_put(&cr->bytes, cr->dict_data + cr->dict_off[x], (size_t)len);
                    lens[i + j] = len;
                }
            }
            i += k;
        }
        if (cr->bytes.oom) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
        break;
    }
    case PQ_ENC_RLE: {
        if (type != VLA_PQ_BOOLEAN) return cfail(cr, VLA_ERR_UNSUPPORTED, "RLE encoding for a non-boolean column");
        if (n < 4) return cfail(cr, VLA_ERR_FORMAT, "RLE booleans: missing length");
        uint32_t len;
        memcpy(&len, p, 4);
        if (len > n - 4) return cfail(cr, VLA_ERR_FORMAT, "RLE booleans: length %u past the end of the page", len);
        pq_rle d;
        pq_rle_init(&d, p + 4, len, 1);
        uint32_t b[1024];
        for (int64_t i = 0; i < count;) {
            int64_t k = count - i < 1024 ? count - i : 1024;
            VLA_TRY(cwrap(cr, pq_rle_get(&d, b, k)));
            for (int64_t j = 0; j < k; j++) dst[i + j] = (uint8_t)(b[j] & 1);
            i += k;
        }
        break;
    }
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (type != VLA_PQ_INT32 && type != VLA_PQ_INT64)
            return cfail(cr, VLA_ERR_FORMAT, "DELTA_BINARY_PACKED for a non-integer column");
        VLA_TRY(cwrap(cr, pq_delta_decode(p, n, type == VLA_PQ_INT32, count, dst, NULL)));
        break;
    case PQ_ENC_BYTE_STREAM_SPLIT: {
        if (!w || type == VLA_PQ_BOOLEAN) return cfail(cr, VLA_ERR_FORMAT, "BYTE_STREAM_SPLIT for a %d column", type);
        /* The page holds exactly the non-null values: w streams of n/w bytes. */
        if (n % (size_t)w != 0 || (uint64_t)count > n / (size_t)w)
            return cfail(cr, VLA_ERR_FORMAT, "BYTE_STREAM_SPLIT: %zu bytes for %lld values of %d bytes", n, (long long)count, w);
        size_t stride = n / (size_t)w;
        for (int b = 0; b < w; b++) {
            const uint8_t *s = p + (size_t)b * stride;
            for (int64_t i = 0; i < count; i++) dst[i * w + b] = s[i];
        }
        break;
    }
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY: {
        if (w) return cfail(cr, VLA_ERR_FORMAT, "%s for a fixed-size column",
                            enc == PQ_ENC_DELTA_BYTE_ARRAY ? "DELTA_BYTE_ARRAY" : "DELTA_LENGTH_BYTE_ARRAY");
        int64_t *prefix = NULL, *slen = NULL;
        if (count == 0) break;
        size_t used = 0, pos = 0;
        prefix = calloc((size_t)count, sizeof *prefix);
        slen = malloc((size_t)count * sizeof *slen);
        vla_status st = VLA_OK;
        if (!prefix || !slen) st = cfail(cr, VLA_ERR_NOMEM, "out of memory");
        if (st == VLA_OK && enc == PQ_ENC_DELTA_BYTE_ARRAY) {
            st = cwrap(cr, pq_delta_decode(p, n, 0, count, prefix, &used));
            pos = used;
        }
        if (st == VLA_OK) {
            st = cwrap(cr, pq_delta_decode(p + pos, n - pos, 0, count, slen, &used));
            pos += used;
        }
        int64_t prev_start = -1, prev_len = 0;
        for (int64_t i = 0; st == VLA_OK && i < count; i++) {
            if (slen[i] < 0 || (uint64_t)slen[i] > n - pos || prefix[i] < 0 || prefix[i] > prev_len) {
                st = cfail(cr, VLA_ERR_FORMAT, "delta byte array %lld: bad prefix %lld or length %lld", (long long)i,
                           (long long)prefix[i], (long long)slen[i]);
                break;
            }
            int64_t start = (int64_t)cr->bytes.len;
            if (prefix[i] > 0) {
                /* copy through a temporary: the buffer may move while appending */
                uint8_t tmp[256];
                int64_t left = prefix[i], from = prev_start;
                while (left > 0) {
                    int64_t k = left < 256 ? left : 256;
                    memcpy(tmp, cr->bytes.data + from, (size_t)k);
                    pq_buf_put(&cr->bytes, tmp, (size_t)k);
                    if (cr->bytes.oom) break;
                    from += k;
                    left -= k;
                }
            }
            pq_buf_put(&cr->bytes, p + pos, (size_t)slen[i]);
            pos += (size_t)slen[i];
            if (cr->bytes.oom) st = cfail(cr, VLA_ERR_NOMEM, "out of memory");
            lens[i] = prefix[i] + slen[i];
            prev_start = start;
            prev_len = lens[i];
        }
        free(prefix);
        free(slen);
        VLA_TRY(st);
        break;
    }
    default: return cfail(cr, VLA_ERR_UNSUPPORTED, "value encoding %d", enc);
    }
    cr->nvals += count;
    return VLA_OK;
}

static vla_status reserve_levels(chunk_reader *cr, int64_t n) {
    int64_t need = cr->nlev + n;
    if (need < 1) need = 1; /* never hand out pointers into a NULL buffer */
    if (need > cr->pq->limits.max_chunk_values)
        return cfail(cr, VLA_ERR_FORMAT, "more than %lld values in one column chunk", (long long)cr->pq->limits.max_chunk_values);
    int64_t cap = cr->cap_lev;
    if (cr->info->max_def > 0) VLA_TRY(grow(cr, (void **)&cr->def, &cap, need, 1));
    cap = cr->cap_lev;
    if (cr->info->max_rep > 0) VLA_TRY(grow(cr, (void **)&cr->rep, &cap, need, 1));
    if (cap > cr->cap_lev) cr->cap_lev = cap;
    return VLA_OK;
}

static int64_t count_present(const chunk_reader *cr, int64_t from, int64_t n) {
    if (cr->info->max_def == 0) return n;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += cr->def[from + i] == cr->info->max_def;
    return k;
}

/* Per-call page buffer, so concurrent reads of one file do not share it. */
static vla_status ensure_scratch(chunk_reader *cr, size_t n) {
    if (n <= cr->scratch_cap) return VLA_OK;
    uint8_t *s = realloc(cr->scratch, n);
    if (!s) return cfail(cr, VLA_ERR_NOMEM, "out of memory for a %zu-byte page", n);
    cr->scratch = s;
    cr->scratch_cap = n;
    return VLA_OK;
}

vla_status pq_read_page_header(vla_thrift_reader *r, pq_page_header *h) {
    memset(h, 0, sizeof *h);
    h->v2_compressed = 1;
    h->type = -1;
    int seen = 0;
    VLA_TRY(vla_thrift_struct_begin(r));
    for (;;) {
        int t, id;
        VLA_TRY(vla_thrift_field(r, &t, &id));
        if (t == VLA_TC_STOP) break;
        if (id == 1) { VLA_TRY(vla_thrift_i32(r, t, &h->type)); seen |= 1; }
        else if (id == 2) { VLA_TRY(vla_thrift_i32(r, t, &h->usize)); seen |= 2; }
        else if (id == 3) { VLA_TRY(vla_thrift_i32(r, t, &h->csize)); seen |= 4; }
        else if ((id == 5 || id == 7 || id == 8) && t == VLA_TC_STRUCT) {
            VLA_TRY(vla_thrift_struct_begin(r));
            for (;;) {
                int st, sid;
                VLA_TRY(vla_thrift_field(r, &st, &sid));
                if (st == VLA_TC_STOP) break;
                int32_t v = 0;
                int bv;
                if (id == 8 && sid == 7) { VLA_TRY(vla_thrift_bool(r, st, &bv)); h->v2_compressed = bv; continue; }
                if (sid > 6 || (id == 7 && sid > 2) || (id == 5 && sid > 4)) { VLA_TRY(vla_thrift_skip(r, st)); continue; }
                if (id == 7 && sid == 3) { VLA_TRY(vla_thrift_skip(r, st)); continue; }
                VLA_TRY(vla_thrift_i32(r, st, &v));
                if (sid == 1) h->num_values = v;
                if (id == 5) {
                    if (sid == 2) h->enc = v;
                    if (sid == 3) h->def_enc = v;
                    if (sid == 4) h->rep_enc = v;
                } else if (id == 7) {
                    if (sid == 2) h->enc = v;
                } else {
                    if (sid == 2) h->v2_nulls = v;
                    if (sid == 3) h->v2_rows = v;
                    if (sid == 4) h->enc = v;
                    if (sid == 5) h->v2_def_len = v;
                    if (sid == 6) h->v2_rep_len = v;
                }
            }
            VLA_TRY(vla_thrift_struct_end(r));
            if (id == 5) h->has_v1 = 1;
            if (id == 7) h->has_dict = 1;
            if (id == 8) h->has_v2 = 1;
        } else {
            VLA_TRY(vla_thrift_skip(r, t));
        }
    }
    VLA_TRY(vla_thrift_struct_end(r));
    if (seen != 7) return vla_error(VLA_ERR_FORMAT, "page header misses type or sizes");
    if (h->usize < 0 || h->csize < 0) return vla_error(VLA_ERR_FORMAT, "negative page size");
    if (h->num_values < 0 || h->v2_def_len < 0 || h->v2_rep_len < 0) return vla_error(VLA_ERR_FORMAT, "negative count in page header");
    return VLA_OK;
}

/* v1 levels: 4-byte length + RLE hybrid. Returns bytes consumed. */
static vla_status v1_levels(chunk_reader *cr, int enc, const uint8_t *p, size_t n, int max_level, int64_t count,
                            uint8_t *out, size_t *used) {
    if (enc != PQ_ENC_RLE) return cfail(cr, VLA_ERR_UNSUPPORTED, "level encoding %d (only RLE)", enc);
    if (n < 4) return cfail(cr, VLA_ERR_FORMAT, "levels: length past the end of the page");
    uint32_t len;
    memcpy(&len, p, 4);
    if (len > n - 4) return cfail(cr, VLA_ERR_FORMAT, "levels: %u bytes past the end of the page", len);
    VLA_TRY(cwrap(cr, pq_decode_levels(p + 4, len, max_level, count, out)));
    *used = 4 + len;
    return VLA_OK;
}

static vla_status data_page(chunk_reader *cr, vla_parquet_column *col, const pq_page_header *h, const uint8_t *body) {
    const vla_parquet_column_info *info = cr->info;
    int64_t nv = h->num_values;
    VLA_TRY(reserve_levels(cr, nv));
    const uint8_t *vp;
    size_t vn;
    if (h->type == PQ_PAGE_DATA) {
        if (!h->has_v1) return cfail(cr, VLA_ERR_FORMAT, "data page without its header");
        VLA_TRY(ensure_scratch(cr, (size_t)h->usize + 1));
        VLA_TRY(cwrap(cr, pq_decompress(cr->ch->codec, body, (size_t)h->csize, cr->scratch, (size_t)h->usize)));
        const uint8_t *p = cr->scratch;
        size_t n = (size_t)h->usize, used;
        if (info->max_rep > 0) {
            VLA_TRY(v1_levels(cr, h->rep_enc, p, n, info->max_rep, nv, cr->rep + cr->nlev, &used));
            p += used;
            n -= used;
        }
        if (info->max_def > 0) {
            VLA_TRY(v1_levels(cr, h->def_enc, p, n, info->max_def, nv, cr->def + cr->nlev, &used));
            p += used;
            n -= used;
        }
        vp = p;
        vn = n;
    } else {
        if (!h->has_v2) return cfail(cr, VLA_ERR_FORMAT, "data page v2 without its header");
        int64_t lv = (int64_t)h->v2_def_len + h->v2_rep_len;
        if (lv > h->csize || lv > h->usize) return cfail(cr, VLA_ERR_FORMAT, "v2 level lengths %lld past the page size", (long long)lv);
        if (info->max_rep > 0) VLA_TRY(cwrap(cr, pq_decode_levels(body, (size_t)h->v2_rep_len, info->max_rep, nv, cr->rep + cr->nlev)));
        if (info->max_def > 0)
            VLA_TRY(cwrap(cr, pq_decode_levels(body + h->v2_rep_len, (size_t)h->v2_def_len, info->max_def, nv, cr->def + cr->nlev)));
        size_t cn = (size_t)(h->csize - lv), un = (size_t)(h->usize - lv);
        if (h->v2_compressed && cr->ch->codec != VLA_PQ_UNCOMPRESSED) {
            VLA_TRY(ensure_scratch(cr, un + 1));
            VLA_TRY(cwrap(cr, pq_decompress(cr->ch->codec, body + lv, cn, cr->scratch, un)));
            vp = cr->scratch;
            vn = un;
        } else {
            if (cn != un) return cfail(cr, VLA_ERR_FORMAT, "uncompressed v2 page: %zu bytes stored, %zu declared", cn, un);
            vp = body + lv;
            vn = cn;
        }
    }
    int64_t present = count_present(cr, cr->nlev, nv);
    cr->nlev += nv;
    if (h->enc >= 0 && h->enc < 32) col->encodings_seen |= 1u << h->enc;
    if (h->type == PQ_PAGE_DATA) col->pages_v1++;
    else col->pages_v2++;
    return decode_values(cr, h->enc, vp, vn, present);
}

/* Store dense value k into leaf slot s (or a null). */
static inline void put_leaf(const chunk_reader *cr, vla_parquet_column *col, int64_t s, int64_t k, int ok) {
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
static vla_status assemble_list1(chunk_reader *cr, vla_parquet_column *col, int fill) {
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
            return cfail(cr, VLA_ERR_FORMAT, "entry %lld repeats level 1 of an empty list", (long long)e);
        } else if (d < dr) {
            return cfail(cr, VLA_ERR_FORMAT, "entry %lld: definition level %d inside a list", (long long)e, d);
        }
        int ok = d == maxd;
        if (fill) {
            if (ok && k >= cr->nvals) return cfail(cr, VLA_ERR_FORMAT, "fewer values than levels say");
            put_leaf(cr, col, leaves, k, ok);
        }
        leaves++;
        k += ok;
    }
    if (k != cr->nvals) return cfail(cr, VLA_ERR_FORMAT, "levels say %lld values, pages hold %lld", (long long)k, (long long)cr->nvals);
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
static vla_status assemble(chunk_reader *cr, vla_parquet_column *col, int fill) {
    const vla_parquet_column_info *info = cr->info;
    if (info->max_rep == 1) return assemble_list1(cr, col, fill);
    int L = info->max_rep, maxd = info->max_def;
    int64_t cnt[VLA_PQ_MAX_LEVEL + 1] = {0};
    int64_t k = 0; /* next dense value */
    int prev_stop = 0;
    for (int64_t e = 0; e < cr->nlev; e++) {
        int d = maxd ? cr->def[e] : 0;
        int r = L ? cr->rep[e] : 0;
        if (e == 0 && r != 0) return cfail(cr, VLA_ERR_FORMAT, "first repetition level is %d, not 0", r);
        if (r > prev_stop) return cfail(cr, VLA_ERR_FORMAT, "entry %lld repeats level %d of an empty list", (long long)e, r);
        if (r > 0 && d < info->def_repeated[r - 1])
            return cfail(cr, VLA_ERR_FORMAT, "entry %lld: definition level %d inside a list", (long long)e, d);
        int level = r;
        for (;;) {
            if (level == L) {
                int64_t s = cnt[L]++;
                int ok = d == maxd;
                if (fill) {
                    if (ok && k >= cr->nvals) return cfail(cr, VLA_ERR_FORMAT, "fewer values than levels say");
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
    if (k != cr->nvals) return cfail(cr, VLA_ERR_FORMAT, "levels say %lld values, pages hold %lld", (long long)k, (long long)cr->nvals);
    if (!fill) {
        col->num_values = cnt[L];
        col->num_rows = cnt[0];
        for (int l = 0; l < L; l++) col->list[l].count = cnt[l];
    } else {
        for (int l = 0; l < L; l++) col->list[l].offsets[cnt[l]] = cnt[l + 1];
    }
    return VLA_OK;
}

static void free_reader(chunk_reader *cr) {
    free(cr->def);
    free(cr->rep);
    free(cr->vals);
    free(cr->lens);
    pq_buf_free(&cr->bytes);
    free(cr->dict);
    free(cr->dict_off);
    free(cr->dict_data);
    free(cr->scratch);
}

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

static vla_status read_chunk(chunk_reader *cr, vla_parquet_column *col) {
    const vla_parquet_file *pq = cr->pq;
    const vla_parquet_chunk *ch = cr->ch;
    if (!ch->has_meta) return cfail(cr, VLA_ERR_UNSUPPORTED, "column chunk without inline metadata");
    if (ch->type != cr->info->type)
        return cfail(cr, VLA_ERR_FORMAT, "chunk type %d differs from schema type %d", ch->type, cr->info->type);
    if (ch->codec != VLA_PQ_UNCOMPRESSED && ch->codec != VLA_PQ_SNAPPY && ch->codec != VLA_PQ_GZIP && ch->codec != VLA_PQ_ZSTD)
        return cfail(cr, VLA_ERR_UNSUPPORTED, "unsupported compression codec %d", ch->codec);
    if (ch->num_values > pq->limits.max_chunk_values)
        return cfail(cr, VLA_ERR_FORMAT, "%lld values in one column chunk (limit %lld)", (long long)ch->num_values,
                     (long long)pq->limits.max_chunk_values);
    int64_t start = ch->data_page_offset;
    if (ch->dictionary_page_offset > 0 && ch->dictionary_page_offset < start) start = ch->dictionary_page_offset;
    cr->page_off = start;
    if (start < 4 || ch->total_compressed_size > pq->footer_start - start)
        return cfail(cr, VLA_ERR_FORMAT, "column chunk [%lld, +%lld) is outside the data section [4, %lld)", (long long)start,
                     (long long)ch->total_compressed_size, (long long)pq->footer_start);
    int64_t end = start + ch->total_compressed_size, pos = start;
    while (cr->nlev < ch->num_values) {
        cr->page_off = pos;
        if (pos >= end)
            return cfail(cr, VLA_ERR_FORMAT, "column chunk ends after %lld of %lld values", (long long)cr->nlev, (long long)ch->num_values);
        vla_thrift_reader r;
        vla_thrift_reader_init(&r, pq->data + pos, (size_t)(end - pos), pos);
        pq_page_header h;
        VLA_TRY(cwrap(cr, pq_read_page_header(&r, &h)));
        int64_t body = vla_thrift_offset(&r);
        if (h.csize > end - body)
            return cfail(cr, VLA_ERR_FORMAT, "page of %d compressed bytes runs past the end of the column chunk (%lld)", h.csize,
                         (long long)end);
        if (h.usize > pq->limits.max_page_bytes)
            return cfail(cr, VLA_ERR_FORMAT, "page of %d uncompressed bytes exceeds the limit", h.usize);
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (!h.has_dict) return cfail(cr, VLA_ERR_FORMAT, "dictionary page without its header");
            VLA_TRY(ensure_scratch(cr, (size_t)h.usize + 1));
            VLA_TRY(cwrap(cr, pq_decompress(ch->codec, pq->data + body, (size_t)h.csize, cr->scratch, (size_t)h.usize)));
            VLA_TRY(read_dictionary(cr, cr->scratch, (size_t)h.usize, h.num_values, h.enc));
            col->dict_pages++;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            if (h.num_values > ch->num_values - cr->nlev)
                return cfail(cr, VLA_ERR_FORMAT, "page holds %d values, only %lld left in the chunk", h.num_values,
                             (long long)(ch->num_values - cr->nlev));
            VLA_TRY(data_page(cr, col, &h, pq->data + body));
        } /* index pages and unknown page types are skipped */
        pos = body + h.csize;
    }
    cr->page_off = start;
    /* Lay out slots: count, allocate, fill. */
    VLA_TRY(assemble(cr, col, 0));
    if (col->num_rows != pq->rgs[cr->rg].num_rows)
        return cfail(cr, VLA_ERR_FORMAT, "column has %lld rows, its row group %lld", (long long)col->num_rows,
                     (long long)pq->rgs[cr->rg].num_rows);
    int64_t ns = col->num_values;
    if (cr->info->max_rep == 0 && cr->nvals == ns && cr->width) {
        /* flat and without nulls: the dense values are the slots */
        col->valid = malloc((size_t)(ns ? ns : 1));
        if (!col->valid) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
        memset(col->valid, 1, (size_t)ns);
        col->values = cr->vals;
        cr->vals = NULL;
        col->null_count = 0;
        return VLA_OK;
    }
    col->valid = malloc((size_t)(ns ? ns : 1));
    if (cr->width) col->values = malloc((size_t)(ns ? ns : 1) * (size_t)cr->width);
    else col->offsets = calloc((size_t)ns + 1, sizeof *col->offsets);
    if (!col->valid || (!col->values && !col->offsets)) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
    for (int l = 0; l < cr->info->max_rep; l++) {
        col->list[l].offsets = malloc((size_t)(col->list[l].count + 1) * sizeof(int64_t));
        col->list[l].valid = malloc((size_t)(col->list[l].count ? col->list[l].count : 1));
        if (!col->list[l].offsets || !col->list[l].valid) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    VLA_TRY(assemble(cr, col, 1));
    col->null_count = ns - cr->nvals;
    if (!cr->width) {
        col->data = cr->bytes.data;
        col->data_size = (int64_t)cr->bytes.len;
        cr->bytes.data = NULL;
        cr->bytes.len = cr->bytes.cap = 0;
        /* never NULL, so data + offsets[i] is valid even when all values are empty */
        if (!col->data && !(col->data = malloc(1))) return cfail(cr, VLA_ERR_NOMEM, "out of memory");
    }
    return VLA_OK;
}

vla_status vla_parquet_read_column(const vla_parquet_file *pq, int row_group, int column, vla_parquet_column *col) {
    memset(col, 0, sizeof *col);
    if (row_group < 0 || row_group >= pq->nrg)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: row group %d out of range (file has %d)", pq->path, row_group, pq->nrg);
    if (column < 0 || column >= pq->ncols)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: column %d out of range (file has %d)", pq->path, column, pq->ncols);
    chunk_reader cr;
    memset(&cr, 0, sizeof cr);
    cr.pq = pq;
    cr.rg = row_group;
    cr.col = column;
    cr.info = &pq->cols[column];
    cr.ch = &pq->rgs[row_group].chunks[column];
    cr.width = cr.info->type == VLA_PQ_BYTE_ARRAY ? 0 : pq_type_width(cr.info->type, cr.info->type_length);
    col->type = cr.info->type;
    col->type_length = cr.info->type_length;
    col->max_def = cr.info->max_def;
    col->max_rep = cr.info->max_rep;
    vla_status st = read_chunk(&cr, col);
    free_reader(&cr);
    return st;
}

vla_status vla_parquet_read_column_by_name(const vla_parquet_file *pq, int row_group, const char *name, vla_parquet_column *col) {
    memset(col, 0, sizeof *col);
    int c = vla_parquet_find_column(pq, name);
    if (c < 0) return VLA_ERR_NOT_FOUND;
    return vla_parquet_read_column(pq, row_group, c, col);
}

/* ------------------------------------------------------------------ */
/* convenience readers for the dataset layer                          */
/* ------------------------------------------------------------------ */

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
