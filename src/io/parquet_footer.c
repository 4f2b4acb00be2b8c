/* parquet_footer.c — opening a Parquet file: the footer (Thrift compact
 * FileMetaData) into the schema tree, the leaf columns with their
 * definition/repetition levels, the row groups and their column chunks, and
 * the key-value metadata; limits on all of it. See parquet.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "io/parquet.h"
#include "io/parquet_internal.h"
#include "io/thrift_compact.h"

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
    pq->cols = calloc((size_t)(nleaves ? nleaves : 1), sizeof *pq->cols);
    if (!pq->cols) return NOMEM();
    pq->ncols = nleaves; /* only now: close frees cols[0..ncols) */
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
