/* parquet_write.c — Parquet writer for the flat-plus-lists schemas LeRobot
 * uses (scalars, strings, binary, list<scalar|string>): one row group per
 * call, SNAPPY (or another codec), dictionary encoding where it makes the
 * chunk smaller, optional statistics and key-value metadata, v1 or v2 data
 * pages. The file is written through base/fsutil.h's atomic writer, so the
 * target is either the complete new file or untouched. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/fsutil.h"
#include "io/parquet.h"
#include "io/parquet_internal.h"
#include "io/thrift_compact.h"

#define NOMEM() vla_error(VLA_ERR_NOMEM, "out of memory")

typedef struct {
    int64_t num_values;      /* level entries */
    int64_t usize, csize;    /* with page headers */
    int64_t data_page_offset, dict_page_offset;
    int dict, v2;
    int has_stats;
    uint8_t min[8], max[8];
    int64_t null_count;
} chunk_meta;

typedef struct {
    int64_t num_rows, total_byte_size, total_compressed, file_offset;
    chunk_meta *cm;
} rg_meta;

struct vla_parquet_writer {
    vla_atomic_file af;
    char *path;
    vla_parquet_field *fields;
    int nf;
    vla_parquet_write_options opt;
    int64_t pos;
    rg_meta *rgs;
    int nrg, cap_rg;
    vla_pq_kv *kv;
    int nkv;
    int failed;
};

vla_parquet_write_options vla_parquet_write_defaults(void) {
    vla_parquet_write_options o = {.codec = VLA_PQ_SNAPPY, .dictionary = 1, .statistics = 1, .page_version = 1,
                                   .page_bytes = 1 << 20};
    return o;
}

static int phys_type(vla_pqw_type t) {
    switch (t) {
    case VLA_PQW_INT32: return VLA_PQ_INT32;
    case VLA_PQW_INT64: return VLA_PQ_INT64;
    case VLA_PQW_FLOAT: return VLA_PQ_FLOAT;
    case VLA_PQW_DOUBLE: return VLA_PQ_DOUBLE;
    case VLA_PQW_BOOLEAN: return VLA_PQ_BOOLEAN;
    default: return VLA_PQ_BYTE_ARRAY;
    }
}

static int max_def(const vla_parquet_field *f) { return f->is_list ? 1 + 2 * (f->nullable != 0) : f->nullable != 0; }

vla_status vla_parquet_writer_open(const char *path, const vla_parquet_field *fields, int nfields,
                                   const vla_parquet_write_options *opt, vla_parquet_writer **out) {
    *out = NULL;
    if (nfields <= 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: a parquet file needs at least one column", path);
    vla_parquet_write_options o = opt ? *opt : vla_parquet_write_defaults();
    if (o.codec != VLA_PQ_UNCOMPRESSED && o.codec != VLA_PQ_SNAPPY && o.codec != VLA_PQ_GZIP && o.codec != VLA_PQ_ZSTD)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: unsupported codec %d", path, o.codec);
    if (o.page_version != 2) o.page_version = 1;
    if (o.page_bytes <= 0) o.page_bytes = 1 << 20;
    for (int i = 0; i < nfields; i++) {
        if (!fields[i].name || !fields[i].name[0]) return vla_error(VLA_ERR_INVALID_ARG, "%s: column %d has no name", path, i);
        if (fields[i].type < VLA_PQW_INT32 || fields[i].type > VLA_PQW_BINARY)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s': unknown type %d", path, fields[i].name, fields[i].type);
        for (int j = 0; j < i; j++)
            if (strcmp(fields[i].name, fields[j].name) == 0)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s' declared twice", path, fields[i].name);
    }
    vla_parquet_writer *w = calloc(1, sizeof *w);
    if (!w) return NOMEM();
    w->opt = o;
    w->nf = nfields;
    w->fields = calloc((size_t)nfields, sizeof *w->fields);
    w->path = strdup(path);
    if (!w->fields || !w->path) {
        free(w->fields);
        free(w->path);
        free(w);
        return NOMEM();
    }
    for (int i = 0; i < nfields; i++) {
        w->fields[i] = fields[i];
        w->fields[i].name = strdup(fields[i].name);
        if (!w->fields[i].name) {
            w->nf = i;
            vla_parquet_writer_abort(w);
            return NOMEM();
        }
    }
    vla_status st = vla_atomic_open(&w->af, path);
    if (st == VLA_OK) st = vla_atomic_write(&w->af, "PAR1", 4);
    if (st != VLA_OK) {
        vla_parquet_writer_abort(w);
        return st;
    }
    w->pos = 4;
    *out = w;
    return VLA_OK;
}

vla_status vla_parquet_writer_add_kv(vla_parquet_writer *w, const char *key, const char *value) {
    vla_pq_kv *kv = realloc(w->kv, (size_t)(w->nkv + 1) * sizeof *kv);
    if (!kv) return NOMEM();
    w->kv = kv;
    kv[w->nkv].key = strdup(key);
    kv[w->nkv].value = value ? strdup(value) : NULL;
    if (!kv[w->nkv].key || (value && !kv[w->nkv].value)) {
        free(kv[w->nkv].key);
        free(kv[w->nkv].value);
        return NOMEM();
    }
    w->nkv++;
    return VLA_OK;
}

static vla_status emit(vla_parquet_writer *w, const void *d, size_t n) {
    vla_status st = vla_atomic_write(&w->af, d, n);
    if (st != VLA_OK) return st;
    w->pos += (int64_t)n;
    return VLA_OK;
}

/* ---- one column chunk ---- */

typedef struct {
    const vla_parquet_field *f;
    int ptype, width;        /* width 0 for byte arrays */
    int maxd, maxr;
    uint32_t *def, *rep;     /* per entry */
    int64_t nent;
    int64_t *row_start;      /* entry index where each row starts (nrows + 1) */
    /* dense non-null values */
    uint8_t *vals;           /* fixed-width */
    const uint8_t **bptr;    /* byte arrays */
    int64_t *blen;
    int64_t nvals;
    int64_t *val_start;      /* dense value index where each row starts (nrows + 1) */
    /* dictionary */
    uint32_t *idx;
    int64_t ndict;
    int64_t *dict_vals;      /* dense value index of each dictionary entry */
} wchunk;

static void wchunk_free(wchunk *c) {
    free(c->def);
    free(c->rep);
    free(c->row_start);
    free(c->vals);
    free(c->bptr);
    free(c->blen);
    free(c->val_start);
    free(c->idx);
    free(c->dict_vals);
}

static const uint8_t *val_ptr(const wchunk *c, int64_t i, int64_t *len) {
    if (c->width) {
        *len = c->width;
        return c->vals + i * c->width;
    }
    *len = c->blen[i];
    return c->bptr[i];
}

/* Flatten one column's input into levels and dense values. */
static vla_status build_levels(vla_parquet_writer *w, wchunk *c, int64_t nrows, const vla_parquet_wcolumn *in) {
    const vla_parquet_field *f = c->f;
    int64_t nslots = nrows;
    if (f->is_list) {
        if (!in->list_offsets) return vla_error(VLA_ERR_INVALID_ARG, "%s: list column '%s' without list_offsets", w->path, f->name);
        if (in->list_offsets[0] != 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s': list_offsets[0] must be 0", w->path, f->name);
        for (int64_t r = 0; r < nrows; r++)
            if (in->list_offsets[r + 1] < in->list_offsets[r])
                return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s': list_offsets decrease at row %lld", w->path, f->name, (long long)r);
        nslots = in->list_offsets[nrows];
    }
    if (!f->nullable && (in->valid || in->row_valid)) {
        /* a declared non-nullable column must not carry nulls */
        for (int64_t i = 0; in->valid && i < nslots; i++)
            if (!in->valid[i]) return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s' is not nullable but slot %lld is null", w->path, f->name, (long long)i);
        for (int64_t r = 0; f->is_list && in->row_valid && r < nrows; r++)
            if (!in->row_valid[r]) return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s' is not nullable but row %lld is null", w->path, f->name, (long long)r);
    }
    if (c->width == 0 && !in->byte_offsets) return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s' needs byte_offsets", w->path, f->name);
    if (c->width && !in->values && nslots > 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s' needs values", w->path, f->name);
    int64_t maxent = nslots + nrows; /* an empty or null list still takes one entry */
    c->def = malloc((size_t)(maxent + 1) * sizeof *c->def);
    c->rep = malloc((size_t)(maxent + 1) * sizeof *c->rep);
    c->row_start = malloc((size_t)(nrows + 1) * sizeof *c->row_start);
    c->val_start = malloc((size_t)(nrows + 1) * sizeof *c->val_start);
    if (c->width) c->vals = malloc((size_t)(nslots + 1) * (size_t)c->width);
    else {
        c->bptr = malloc((size_t)(nslots + 1) * sizeof *c->bptr);
        c->blen = malloc((size_t)(nslots + 1) * sizeof *c->blen);
    }
    if (!c->def || !c->rep || !c->row_start || !c->val_start || (c->width ? !c->vals : (!c->bptr || !c->blen))) return NOMEM();
    int64_t e = 0, v = 0;
    int elem_def = c->maxd; /* def of a present leaf */
#define PUSH_VALUE(s)                                                                                         \
    do {                                                                                                      \
        if (c->width) {                                                                                       \
            memcpy(c->vals + v * c->width, (const uint8_t *)in->values + (s) * c->width, (size_t)c->width); \
        } else {                                                                                              \
            int64_t a_ = in->byte_offsets[s], b_ = in->byte_offsets[(s) + 1];                                 \
            if (a_ < 0 || b_ < a_)                                                                            \
                return vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s': bad byte_offsets at slot %lld", w->path, \
                                 f->name, (long long)(s));                                                    \
            c->bptr[v] = in->bytes + a_;                                                                      \
            c->blen[v] = b_ - a_;                                                                             \
        }                                                                                                     \
        v++;                                                                                                  \
    } while (0)
    for (int64_t r = 0; r < nrows; r++) {
        c->row_start[r] = e;
        c->val_start[r] = v;
        if (!f->is_list) {
            int ok = !in->valid || in->valid[r];
            c->rep[e] = 0;
            c->def[e++] = ok ? (uint32_t)elem_def : 0;
            if (ok) PUSH_VALUE(r);
            continue;
        }
        int row_ok = !in->row_valid || in->row_valid[r];
        int64_t a = in->list_offsets[r], b = in->list_offsets[r + 1];
        if (!row_ok) {
            c->rep[e] = 0;
            c->def[e++] = 0;
            continue;
        }
        if (a == b) {
            c->rep[e] = 0;
            c->def[e++] = f->nullable ? 1 : 0;
            continue;
        }
        for (int64_t s = a; s < b; s++) {
            int ok = !in->valid || in->valid[s];
            c->rep[e] = s == a ? 0 : 1;
            c->def[e++] = ok ? (uint32_t)elem_def : (uint32_t)(elem_def - 1);
            if (ok) PUSH_VALUE(s);
        }
    }
#undef PUSH_VALUE
    c->row_start[nrows] = e;
    c->val_start[nrows] = v;
    c->nent = e;
    c->nvals = v;
    return VLA_OK;
}

static uint64_t hash_bytes(const uint8_t *p, int64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Build a dictionary; keep it only if dictionary + indices are smaller than
 * the plain values. */
static vla_status try_dictionary(vla_parquet_writer *w, wchunk *c) {
    if (!w->opt.dictionary || c->ptype == VLA_PQ_BOOLEAN || c->nvals == 0) return VLA_OK;
    int64_t plain = 0;
    for (int64_t i = 0; i < c->nvals; i++) plain += c->width ? c->width : 4 + c->blen[i];
    const int64_t max_dict = 1 << 16;
    int64_t cap = 1;
    while (cap < 2 * (c->nvals < max_dict ? c->nvals : max_dict)) cap <<= 1;
    int64_t *table = malloc((size_t)cap * sizeof *table);
    c->idx = malloc((size_t)c->nvals * sizeof *c->idx);
    c->dict_vals = malloc((size_t)(max_dict < c->nvals ? max_dict : c->nvals) * sizeof *c->dict_vals);
    if (!table || !c->idx || !c->dict_vals) {
        free(table);
        return NOMEM();
    }
    memset(table, 0xff, (size_t)cap * sizeof *table);
    int64_t nd = 0, dict_bytes = 0;
    int ok = 1;
    for (int64_t i = 0; i < c->nvals && ok; i++) {
        int64_t len;
        const uint8_t *p = val_ptr(c, i, &len);
        uint64_t h = hash_bytes(p, len) & (uint64_t)(cap - 1);
        for (;;) {
            int64_t t = table[h];
            if (t < 0) {
                if (nd >= max_dict) {
                    ok = 0;
                    break;
                }
                table[h] = nd;
                c->dict_vals[nd] = i;
                dict_bytes += c->width ? c->width : 4 + len;
                c->idx[i] = (uint32_t)nd++;
                break;
            }
            int64_t ol;
            const uint8_t *op = val_ptr(c, c->dict_vals[t], &ol);
            if (ol == len && memcmp(op, p, (size_t)len) == 0) {
                c->idx[i] = (uint32_t)t;
                break;
            }
            h = (h + 1) & (uint64_t)(cap - 1);
        }
    }
    free(table);
    int64_t est = dict_bytes + (c->nvals * vla_pq_bit_width((uint64_t)(nd > 1 ? nd - 1 : 1)) + 7) / 8;
    if (!ok || est * 10 > plain * 8) {
        free(c->idx);
        free(c->dict_vals);
        c->idx = NULL;
        c->dict_vals = NULL;
        return VLA_OK;
    }
    c->ndict = nd;
    return VLA_OK;
}

/* PLAIN encoding of dense values [v0, v1) (or of the dictionary). */
static void plain_values(const wchunk *c, vla_pq_buf *b, const int64_t *which, int64_t v0, int64_t v1) {
    if (c->ptype == VLA_PQ_BOOLEAN) {
        int64_t n = v1 - v0;
        size_t bytes = (size_t)((n + 7) / 8);
        size_t at = b->len;
        uint8_t zero[64] = {0};
        for (size_t k = 0; k < bytes; k += 64) vla_pq_buf_put(b, zero, bytes - k < 64 ? bytes - k : 64);
        if (b->oom) return;
        for (int64_t i = 0; i < n; i++)
            if (c->vals[v0 + i]) b->data[at + (size_t)(i >> 3)] |= (uint8_t)(1u << (i & 7));
        return;
    }
    for (int64_t i = v0; i < v1; i++) {
        int64_t len, k = which ? which[i] : i;
        const uint8_t *p = val_ptr(c, k, &len);
        if (!c->width) vla_pq_buf_u32(b, (uint32_t)len);
        vla_pq_buf_put(b, p, (size_t)len);
    }
}

/* PageHeader.crc (parquet-format PARQUET-1539): the standard CRC-32 (zlib's,
 * as GZip) of the page bytes after the header, as stored (compressed),
 * for dictionary and v1/v2 data pages alike; stored as a signed i32. It is
 * what lets a reader see a flipped byte inside a compressed page, which can
 * otherwise change one value and nothing else. */
static int32_t page_crc(const uint8_t *body, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    if (n) c = crc32(c, body, (uInt)n);
    return (int32_t)(uint32_t)c;
}

/* Write one page (header + body) and account for it. */
static vla_status write_page(vla_parquet_writer *w, chunk_meta *m, vla_thrift_writer *hdr, const uint8_t *body, size_t n,
                             int64_t usize) {
    VLA_TRY(vla_thrift_writer_status(hdr));
    VLA_TRY(emit(w, hdr->data, hdr->len));
    VLA_TRY(emit(w, body, n));
    m->usize += (int64_t)hdr->len + usize;
    m->csize += (int64_t)hdr->len + (int64_t)n;
    return VLA_OK;
}

static vla_status write_chunk(vla_parquet_writer *w, wchunk *c, chunk_meta *m, int64_t nrows) {
    vla_status st = VLA_OK;
    vla_pq_buf body = {0}, vals = {0};
    uint8_t *comp = NULL;
    size_t comp_n = 0;
    vla_thrift_writer hdr;
    vla_thrift_writer_init(&hdr);
    m->num_values = c->nent;
    m->null_count = c->nent - c->nvals;
    m->v2 = w->opt.page_version == 2;
    /* dictionary page */
    if (c->idx) {
        m->dict = 1;
        m->dict_page_offset = w->pos;
        plain_values(c, &body, c->dict_vals, 0, c->ndict);
        if (body.oom) { st = NOMEM(); goto done; }
        if ((st = vla_pq_compress(w->opt.codec, body.data, body.len, &comp, &comp_n)) != VLA_OK) goto done;
        vla_thrift_w_struct_begin(&hdr);
        vla_thrift_w_i32_field(&hdr, 1, PQ_PAGE_DICTIONARY);
        vla_thrift_w_i32_field(&hdr, 2, (int32_t)body.len);
        vla_thrift_w_i32_field(&hdr, 3, (int32_t)comp_n);
        vla_thrift_w_i32_field(&hdr, 4, page_crc(comp, comp_n));
        vla_thrift_w_field(&hdr, VLA_TC_STRUCT, 7);
        vla_thrift_w_struct_begin(&hdr);
        vla_thrift_w_i32_field(&hdr, 1, (int32_t)c->ndict);
        vla_thrift_w_i32_field(&hdr, 2, PQ_ENC_PLAIN);
        vla_thrift_w_struct_end(&hdr);
        vla_thrift_w_struct_end(&hdr);
        if ((st = write_page(w, m, &hdr, comp, comp_n, (int64_t)body.len)) != VLA_OK) goto done;
        free(comp);
        comp = NULL;
    }
    m->data_page_offset = w->pos;
    int lw_def = vla_pq_bit_width((uint64_t)c->maxd), lw_rep = vla_pq_bit_width((uint64_t)c->maxr);
    int dict_bw = vla_pq_bit_width((uint64_t)(c->ndict > 1 ? c->ndict - 1 : 1));
    int64_t r = 0;
    while (r < nrows || (nrows == 0 && r == 0)) {
        /* rows [r, r2) whose plain values fit the target page size */
        int64_t r2 = r, bytes = 0;
        while (r2 < nrows && (r2 == r || bytes < w->opt.page_bytes)) {
            for (int64_t i = c->val_start[r2]; i < c->val_start[r2 + 1]; i++) bytes += c->width ? c->width : 4 + c->blen[i];
            bytes += c->row_start[r2 + 1] - c->row_start[r2];
            r2++;
        }
        int64_t e0 = nrows ? c->row_start[r] : 0, e1 = nrows ? c->row_start[r2] : 0;
        int64_t v0 = nrows ? c->val_start[r] : 0, v1 = nrows ? c->val_start[r2] : 0;
        vla_pq_buf rep = {0}, def = {0};
        if (c->maxr) vla_pq_rle_encode(&rep, c->rep + e0, e1 - e0, lw_rep);
        if (c->maxd) vla_pq_rle_encode(&def, c->def + e0, e1 - e0, lw_def);
        vals.len = 0;
        if (c->idx) {
            uint8_t bw = (uint8_t)dict_bw;
            vla_pq_buf_put(&vals, &bw, 1);
            vla_pq_rle_encode(&vals, c->idx + v0, v1 - v0, dict_bw);
        } else {
            plain_values(c, &vals, NULL, v0, v1);
        }
        int enc = c->idx ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN;
        body.len = 0;
        int64_t usize;
        if (!m->v2) {
            if (c->maxr) { vla_pq_buf_u32(&body, (uint32_t)rep.len); vla_pq_buf_put(&body, rep.data, rep.len); }
            if (c->maxd) { vla_pq_buf_u32(&body, (uint32_t)def.len); vla_pq_buf_put(&body, def.data, def.len); }
            vla_pq_buf_put(&body, vals.data, vals.len);
            if (body.oom || rep.oom || def.oom || vals.oom) st = NOMEM();
            if (st == VLA_OK) st = vla_pq_compress(w->opt.codec, body.data, body.len, &comp, &comp_n);
            usize = (int64_t)body.len;
        } else {
            /* v2: levels stay uncompressed in front of the compressed values */
            uint8_t *vc = NULL;
            size_t vcn = 0;
            if (rep.oom || def.oom || vals.oom) st = NOMEM();
            if (st == VLA_OK) st = vla_pq_compress(w->opt.codec, vals.data, vals.len, &vc, &vcn);
            if (st == VLA_OK) {
                vla_pq_buf_put(&body, rep.data, rep.len);
                vla_pq_buf_put(&body, def.data, def.len);
                vla_pq_buf_put(&body, vc, vcn);
                if (body.oom) st = NOMEM();
                comp = body.data; /* borrowed; not freed below */
                comp_n = body.len;
            }
            free(vc);
            usize = (int64_t)(rep.len + def.len + vals.len);
        }
        if (st == VLA_OK && (usize > INT32_MAX || (int64_t)comp_n > INT32_MAX))
            st = vla_error(VLA_ERR_INVALID_ARG, "%s: column '%s': a page of %lld bytes is too large (rows %lld..%lld)", w->path,
                           c->f->name, (long long)usize, (long long)r, (long long)r2);
        if (st == VLA_OK) {
            vla_thrift_writer_free(&hdr);
            vla_thrift_writer_init(&hdr);
            vla_thrift_w_struct_begin(&hdr);
            vla_thrift_w_i32_field(&hdr, 1, m->v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA);
            vla_thrift_w_i32_field(&hdr, 2, (int32_t)usize);
            vla_thrift_w_i32_field(&hdr, 3, (int32_t)comp_n);
            vla_thrift_w_i32_field(&hdr, 4, page_crc(comp, comp_n));
            if (!m->v2) {
                vla_thrift_w_field(&hdr, VLA_TC_STRUCT, 5);
                vla_thrift_w_struct_begin(&hdr);
                vla_thrift_w_i32_field(&hdr, 1, (int32_t)(e1 - e0));
                vla_thrift_w_i32_field(&hdr, 2, enc);
                vla_thrift_w_i32_field(&hdr, 3, PQ_ENC_RLE);
                vla_thrift_w_i32_field(&hdr, 4, PQ_ENC_RLE);
                vla_thrift_w_struct_end(&hdr);
            } else {
                vla_thrift_w_field(&hdr, VLA_TC_STRUCT, 8);
                vla_thrift_w_struct_begin(&hdr);
                vla_thrift_w_i32_field(&hdr, 1, (int32_t)(e1 - e0));
                vla_thrift_w_i32_field(&hdr, 2, (int32_t)((e1 - e0) - (v1 - v0)));
                vla_thrift_w_i32_field(&hdr, 3, (int32_t)(r2 - r));
                vla_thrift_w_i32_field(&hdr, 4, enc);
                vla_thrift_w_i32_field(&hdr, 5, (int32_t)def.len);
                vla_thrift_w_i32_field(&hdr, 6, (int32_t)rep.len);
                vla_thrift_w_bool_field(&hdr, 7, w->opt.codec != VLA_PQ_UNCOMPRESSED);
                vla_thrift_w_struct_end(&hdr);
            }
            vla_thrift_w_struct_end(&hdr);
            st = write_page(w, m, &hdr, comp, comp_n, usize);
        }
        if (!m->v2) free(comp);
        comp = NULL;
        vla_pq_buf_free(&rep);
        vla_pq_buf_free(&def);
        if (st != VLA_OK) goto done;
        r = r2;
        if (nrows == 0) break;
    }
done:
    free(comp);
    vla_pq_buf_free(&body);
    vla_pq_buf_free(&vals);
    vla_thrift_writer_free(&hdr);
    return st;
}

static void compute_stats(const wchunk *c, chunk_meta *m) {
    if (c->ptype != VLA_PQ_INT32 && c->ptype != VLA_PQ_INT64 && c->ptype != VLA_PQ_FLOAT && c->ptype != VLA_PQ_DOUBLE) return;
    int have = 0;
    double dmin = 0, dmax = 0;
    int64_t imin = 0, imax = 0;
    for (int64_t i = 0; i < c->nvals; i++) {
        const uint8_t *p = c->vals + i * c->width;
        if (c->ptype == VLA_PQ_INT32 || c->ptype == VLA_PQ_INT64) {
            int64_t x;
            if (c->ptype == VLA_PQ_INT32) {
                int32_t y;
                memcpy(&y, p, 4);
                x = y;
            } else {
                memcpy(&x, p, 8);
            }
            if (!have || x < imin) imin = x;
            if (!have || x > imax) imax = x;
        } else {
            double x;
            if (c->ptype == VLA_PQ_FLOAT) {
                float y;
                memcpy(&y, p, 4);
                x = y;
            } else {
                memcpy(&x, p, 8);
            }
            if (x != x) continue; /* NaN takes no part in min/max */
            if (!have || x < dmin) dmin = x;
            if (!have || x > dmax) dmax = x;
        }
        have = 1;
    }
    m->has_stats = 1;
    if (!have) return;
    m->has_stats = 2;
    switch (c->ptype) {
    case VLA_PQ_INT32: {
        int32_t a = (int32_t)imin, b = (int32_t)imax;
        memcpy(m->min, &a, 4);
        memcpy(m->max, &b, 4);
        break;
    }
    case VLA_PQ_INT64: memcpy(m->min, &imin, 8); memcpy(m->max, &imax, 8); break;
    case VLA_PQ_FLOAT: {
        float a = (float)dmin, b = (float)dmax;
        memcpy(m->min, &a, 4);
        memcpy(m->max, &b, 4);
        break;
    }
    default: memcpy(m->min, &dmin, 8); memcpy(m->max, &dmax, 8);
    }
}

vla_status vla_parquet_writer_write_row_group(vla_parquet_writer *w, int64_t num_rows, const vla_parquet_wcolumn *cols) {
    if (w->failed) return vla_error(VLA_ERR_INVALID_ARG, "%s: writer already failed", w->path);
    if (num_rows < 0 || num_rows > INT32_MAX) return vla_error(VLA_ERR_INVALID_ARG, "%s: bad row count %lld", w->path, (long long)num_rows);
    if (w->nrg == w->cap_rg) {
        int cap = w->cap_rg ? w->cap_rg * 2 : 16;
        rg_meta *n = realloc(w->rgs, (size_t)cap * sizeof *n);
        if (!n) return NOMEM();
        w->rgs = n;
        w->cap_rg = cap;
    }
    rg_meta *rg = &w->rgs[w->nrg];
    memset(rg, 0, sizeof *rg);
    rg->cm = calloc((size_t)w->nf, sizeof *rg->cm);
    if (!rg->cm) return NOMEM();
    rg->num_rows = num_rows;
    rg->file_offset = w->pos;
    vla_status st = VLA_OK;
    for (int i = 0; i < w->nf && st == VLA_OK; i++) {
        wchunk c;
        memset(&c, 0, sizeof c);
        c.f = &w->fields[i];
        c.ptype = phys_type(c.f->type);
        c.width = c.ptype == VLA_PQ_BYTE_ARRAY ? 0 : vla_pq_type_width(c.ptype, 0);
        c.maxd = max_def(c.f);
        c.maxr = c.f->is_list ? 1 : 0;
        st = build_levels(w, &c, num_rows, &cols[i]);
        if (st == VLA_OK) st = try_dictionary(w, &c);
        if (st == VLA_OK) {
            if (w->opt.statistics) compute_stats(&c, &rg->cm[i]);
            st = write_chunk(w, &c, &rg->cm[i], num_rows);
        }
        wchunk_free(&c);
        rg->total_byte_size += rg->cm[i].usize;
        rg->total_compressed += rg->cm[i].csize;
    }
    if (st != VLA_OK) {
        free(rg->cm);
        w->failed = 1;
        return vla_error_context(st, "%s: row group %d", w->path, w->nrg);
    }
    w->nrg++;
    return VLA_OK;
}

static void write_schema(vla_parquet_writer *w, vla_thrift_writer *t) {
    int n = 1;
    for (int i = 0; i < w->nf; i++) n += w->fields[i].is_list ? 3 : 1;
    vla_thrift_w_field(t, VLA_TC_LIST, 2);
    vla_thrift_w_list_begin(t, VLA_TC_STRUCT, n);
    vla_thrift_w_struct_begin(t);
    vla_thrift_w_string_field(t, 4, "schema");
    vla_thrift_w_i32_field(t, 5, w->nf);
    vla_thrift_w_struct_end(t);
    for (int i = 0; i < w->nf; i++) {
        const vla_parquet_field *f = &w->fields[i];
        int is_str = f->type == VLA_PQW_STRING;
        if (f->is_list) {
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_i32_field(t, 3, f->nullable ? VLA_PQ_OPTIONAL : VLA_PQ_REQUIRED);
            vla_thrift_w_string_field(t, 4, f->name);
            vla_thrift_w_i32_field(t, 5, 1);
            vla_thrift_w_i32_field(t, 6, VLA_PQ_CT_LIST);
            vla_thrift_w_field(t, VLA_TC_STRUCT, 10);
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_field(t, VLA_TC_STRUCT, VLA_PQ_LT_LIST);
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_struct_end(t);
            vla_thrift_w_struct_end(t);
            vla_thrift_w_struct_end(t);
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_i32_field(t, 3, VLA_PQ_REPEATED);
            vla_thrift_w_string_field(t, 4, "list");
            vla_thrift_w_i32_field(t, 5, 1);
            vla_thrift_w_struct_end(t);
        }
        vla_thrift_w_struct_begin(t);
        vla_thrift_w_i32_field(t, 1, phys_type(f->type));
        vla_thrift_w_i32_field(t, 3, f->nullable ? VLA_PQ_OPTIONAL : VLA_PQ_REQUIRED);
        vla_thrift_w_string_field(t, 4, f->is_list ? "element" : f->name);
        if (is_str) {
            vla_thrift_w_i32_field(t, 6, VLA_PQ_CT_UTF8);
            vla_thrift_w_field(t, VLA_TC_STRUCT, 10);
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_field(t, VLA_TC_STRUCT, VLA_PQ_LT_STRING);
            vla_thrift_w_struct_begin(t);
            vla_thrift_w_struct_end(t);
            vla_thrift_w_struct_end(t);
        }
        vla_thrift_w_struct_end(t);
    }
}

static void write_column_meta(vla_parquet_writer *w, vla_thrift_writer *t, int i, const chunk_meta *m) {
    const vla_parquet_field *f = &w->fields[i];
    int pt = phys_type(f->type);
    vla_thrift_w_struct_begin(t); /* ColumnChunk */
    vla_thrift_w_i64_field(t, 2, m->dict ? m->dict_page_offset : m->data_page_offset);
    vla_thrift_w_field(t, VLA_TC_STRUCT, 3);
    vla_thrift_w_struct_begin(t); /* ColumnMetaData */
    vla_thrift_w_i32_field(t, 1, pt);
    vla_thrift_w_field(t, VLA_TC_LIST, 2);
    vla_thrift_w_list_begin(t, VLA_TC_I32, m->dict ? 3 : 2);
    vla_thrift_w_zigzag(t, m->dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN);
    vla_thrift_w_zigzag(t, PQ_ENC_RLE);
    if (m->dict) vla_thrift_w_zigzag(t, PQ_ENC_PLAIN);
    vla_thrift_w_field(t, VLA_TC_LIST, 3);
    vla_thrift_w_list_begin(t, VLA_TC_BINARY, f->is_list ? 3 : 1);
    vla_thrift_w_binary(t, f->name, strlen(f->name));
    if (f->is_list) {
        vla_thrift_w_binary(t, "list", 4);
        vla_thrift_w_binary(t, "element", 7);
    }
    vla_thrift_w_i32_field(t, 4, w->opt.codec);
    vla_thrift_w_i64_field(t, 5, m->num_values);
    vla_thrift_w_i64_field(t, 6, m->usize);
    vla_thrift_w_i64_field(t, 7, m->csize);
    vla_thrift_w_i64_field(t, 9, m->data_page_offset);
    if (m->dict) vla_thrift_w_i64_field(t, 11, m->dict_page_offset);
    if (m->has_stats) {
        vla_thrift_w_field(t, VLA_TC_STRUCT, 12);
        vla_thrift_w_struct_begin(t);
        vla_thrift_w_i64_field(t, 3, m->null_count);
        if (m->has_stats == 2) {
            size_t wd = (size_t)vla_pq_type_width(pt, 0);
            vla_thrift_w_binary_field(t, 5, m->max, wd);
            vla_thrift_w_binary_field(t, 6, m->min, wd);
        }
        vla_thrift_w_struct_end(t);
    }
    vla_thrift_w_struct_end(t);
    vla_thrift_w_struct_end(t);
}

int64_t vla_parquet_writer_bytes(const vla_parquet_writer *w) { return w->pos; }

vla_status vla_parquet_writer_close(vla_parquet_writer *w) {
    if (w->failed) {
        vla_status st = vla_error(VLA_ERR_INVALID_ARG, "%s: not written: an earlier row group failed", w->path);
        vla_parquet_writer_abort(w);
        return st;
    }
    vla_thrift_writer t;
    vla_thrift_writer_init(&t);
    int64_t rows = 0;
    for (int g = 0; g < w->nrg; g++) rows += w->rgs[g].num_rows;
    vla_thrift_w_struct_begin(&t);
    vla_thrift_w_i32_field(&t, 1, w->opt.page_version == 2 ? 2 : 1);
    write_schema(w, &t);
    vla_thrift_w_i64_field(&t, 3, rows);
    vla_thrift_w_field(&t, VLA_TC_LIST, 4);
    vla_thrift_w_list_begin(&t, VLA_TC_STRUCT, w->nrg);
    for (int g = 0; g < w->nrg; g++) {
        const rg_meta *rg = &w->rgs[g];
        vla_thrift_w_struct_begin(&t);
        vla_thrift_w_field(&t, VLA_TC_LIST, 1);
        vla_thrift_w_list_begin(&t, VLA_TC_STRUCT, w->nf);
        for (int i = 0; i < w->nf; i++) write_column_meta(w, &t, i, &rg->cm[i]);
        vla_thrift_w_i64_field(&t, 2, rg->total_byte_size);
        vla_thrift_w_i64_field(&t, 3, rg->num_rows);
        vla_thrift_w_i64_field(&t, 5, rg->file_offset);
        vla_thrift_w_i64_field(&t, 6, rg->total_compressed);
        vla_thrift_w_field(&t, VLA_TC_I16, 7);
        vla_thrift_w_zigzag(&t, g);
        vla_thrift_w_struct_end(&t);
    }
    if (w->nkv) {
        vla_thrift_w_field(&t, VLA_TC_LIST, 5);
        vla_thrift_w_list_begin(&t, VLA_TC_STRUCT, w->nkv);
        for (int i = 0; i < w->nkv; i++) {
            vla_thrift_w_struct_begin(&t);
            vla_thrift_w_string_field(&t, 1, w->kv[i].key);
            if (w->kv[i].value) vla_thrift_w_string_field(&t, 2, w->kv[i].value);
            vla_thrift_w_struct_end(&t);
        }
    }
    vla_thrift_w_string_field(&t, 6, "vla.c version " VLA_VERSION);
    vla_thrift_w_struct_end(&t);
    vla_status st = vla_thrift_writer_status(&t);
    if (st == VLA_OK) st = emit(w, t.data, t.len);
    uint32_t flen = (uint32_t)t.len;
    if (st == VLA_OK) st = emit(w, &flen, 4);
    if (st == VLA_OK) st = emit(w, "PAR1", 4);
    vla_thrift_writer_free(&t);
    if (st == VLA_OK) st = vla_atomic_commit(&w->af);
    if (st != VLA_OK) st = vla_error_context(st, "%s", w->path);
    vla_parquet_writer_abort(w); /* frees; after commit it removes nothing */
    return st;
}

void vla_parquet_writer_abort(vla_parquet_writer *w) {
    if (!w) return;
    if (w->af.path || w->af.tmp_path) vla_atomic_abort(&w->af);
    for (int i = 0; i < w->nf; i++) free((char *)w->fields[i].name);
    free(w->fields);
    for (int g = 0; g < w->nrg; g++) free(w->rgs[g].cm);
    free(w->rgs);
    for (int i = 0; i < w->nkv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].value);
    }
    free(w->kv);
    free(w->path);
    free(w);
}
