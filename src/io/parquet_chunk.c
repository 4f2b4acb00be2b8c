/* parquet_chunk.c — decoding one column chunk: the walk over its pages
 * (dictionary, data v1 and v2; others skipped), each page's header,
 * decompression and repetition/definition levels; the values go to
 * parquet_values.c, the dictionary to parquet_dict.c, and the levels and
 * values become slots and lists in parquet_assemble.c. Every error names the
 * file, column, row group and page offset. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/parquet_internal.h"
#include "io/thrift_compact.h"

vla_status vla_pq_cfail(vla_pq_chunk_reader *cr, vla_status code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vla_error(code, "%s: column '%s', row group %d, page at byte %lld: %s", cr->pq->path, cr->info->path,
                     cr->rg, (long long)cr->page_off, msg);
}

vla_status vla_pq_cwrap(vla_pq_chunk_reader *cr, vla_status st) {
    if (st == VLA_OK) return st;
    return vla_error_context(st, "%s: column '%s', row group %d, page at byte %lld", cr->pq->path, cr->info->path,
                             cr->rg, (long long)cr->page_off);
}

vla_status vla_pq_grow(vla_pq_chunk_reader *cr, void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return VLA_OK;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory for %lld values", (long long)need);
    *p = np;
    *cap = nc;
    return VLA_OK;
}

static vla_status reserve_levels(vla_pq_chunk_reader *cr, int64_t n) {
    int64_t need = cr->nlev + n;
    if (need < 1) need = 1; /* never hand out pointers into a NULL buffer */
    if (need > cr->pq->limits.max_chunk_values)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "more than %lld values in one column chunk", (long long)cr->pq->limits.max_chunk_values);
    int64_t cap = cr->cap_lev;
    if (cr->info->max_def > 0) VLA_TRY(vla_pq_grow(cr, (void **)&cr->def, &cap, need, 1));
    cap = cr->cap_lev;
    if (cr->info->max_rep > 0) VLA_TRY(vla_pq_grow(cr, (void **)&cr->rep, &cap, need, 1));
    if (cap > cr->cap_lev) cr->cap_lev = cap;
    return VLA_OK;
}

static int64_t count_present(const vla_pq_chunk_reader *cr, int64_t from, int64_t n) {
    if (cr->info->max_def == 0) return n;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += cr->def[from + i] == cr->info->max_def;
    return k;
}

/* Per-call page buffer, so concurrent reads of one file do not share it. */
static vla_status ensure_scratch(vla_pq_chunk_reader *cr, size_t n) {
    if (n <= cr->scratch_cap) return VLA_OK;
    uint8_t *s = realloc(cr->scratch, n);
    if (!s) return vla_pq_cfail(cr, VLA_ERR_NOMEM, "out of memory for a %zu-byte page", n);
    cr->scratch = s;
    cr->scratch_cap = n;
    return VLA_OK;
}

vla_status vla_pq_read_page_header(vla_thrift_reader *r, vla_pq_page_header *h) {
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
        else if (id == 4) {
            int32_t c;
            VLA_TRY(vla_thrift_i32(r, t, &c));
            h->crc = (uint32_t)c;
            h->has_crc = 1;
        }
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
static vla_status v1_levels(vla_pq_chunk_reader *cr, int enc, const uint8_t *p, size_t n, int max_level, int64_t count,
                            uint8_t *out, size_t *used) {
    if (enc != PQ_ENC_RLE) return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "level encoding %d (only RLE)", enc);
    if (n < 4) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "levels: length past the end of the page");
    uint32_t len;
    memcpy(&len, p, 4);
    if (len > n - 4) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "levels: %u bytes past the end of the page", len);
    VLA_TRY(vla_pq_cwrap(cr, vla_pq_decode_levels(p + 4, len, max_level, count, out)));
    *used = 4 + len;
    return VLA_OK;
}

static vla_status data_page(vla_pq_chunk_reader *cr, vla_parquet_column *col, const vla_pq_page_header *h, const uint8_t *body) {
    const vla_parquet_column_info *info = cr->info;
    int64_t nv = h->num_values;
    VLA_TRY(reserve_levels(cr, nv));
    const uint8_t *vp;
    size_t vn;
    if (h->type == PQ_PAGE_DATA) {
        if (!h->has_v1) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "data page without its header");
        VLA_TRY(ensure_scratch(cr, (size_t)h->usize + 1));
        VLA_TRY(vla_pq_cwrap(cr, vla_pq_decompress(cr->ch->codec, body, (size_t)h->csize, cr->scratch, (size_t)h->usize)));
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
        if (!h->has_v2) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "data page v2 without its header");
        int64_t lv = (int64_t)h->v2_def_len + h->v2_rep_len;
        if (lv > h->csize || lv > h->usize) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "v2 level lengths %lld past the page size", (long long)lv);
        if (info->max_rep > 0) VLA_TRY(vla_pq_cwrap(cr, vla_pq_decode_levels(body, (size_t)h->v2_rep_len, info->max_rep, nv, cr->rep + cr->nlev)));
        if (info->max_def > 0)
            VLA_TRY(vla_pq_cwrap(cr, vla_pq_decode_levels(body + h->v2_rep_len, (size_t)h->v2_def_len, info->max_def, nv, cr->def + cr->nlev)));
        size_t cn = (size_t)(h->csize - lv), un = (size_t)(h->usize - lv);
        if (h->v2_compressed && cr->ch->codec != VLA_PQ_UNCOMPRESSED) {
            VLA_TRY(ensure_scratch(cr, un + 1));
            VLA_TRY(vla_pq_cwrap(cr, vla_pq_decompress(cr->ch->codec, body + lv, cn, cr->scratch, un)));
            vp = cr->scratch;
            vn = un;
        } else {
            if (cn != un) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "uncompressed v2 page: %zu bytes stored, %zu declared", cn, un);
            vp = body + lv;
            vn = cn;
        }
    }
    int64_t present = count_present(cr, cr->nlev, nv);
    cr->nlev += nv;
    if (h->enc >= 0 && h->enc < 32) col->encodings_seen |= 1u << h->enc;
    if (h->type == PQ_PAGE_DATA) col->pages_v1++;
    else col->pages_v2++;
    return vla_pq_decode_values(cr, h->enc, vp, vn, present);
}

void vla_pq_chunk_reader_free(vla_pq_chunk_reader *cr) {
    free(cr->def);
    free(cr->rep);
    free(cr->vals);
    free(cr->lens);
    vla_pq_buf_free(&cr->bytes);
    free(cr->dict);
    free(cr->dict_off);
    free(cr->dict_data);
    free(cr->scratch);
}

vla_status vla_pq_read_chunk(vla_pq_chunk_reader *cr, vla_parquet_column *col) {
    const vla_parquet_file *pq = cr->pq;
    const vla_parquet_chunk *ch = cr->ch;
    if (!ch->has_meta) return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "column chunk without inline metadata");
    if (ch->type != cr->info->type)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "chunk type %d differs from schema type %d", ch->type, cr->info->type);
    if (ch->codec != VLA_PQ_UNCOMPRESSED && ch->codec != VLA_PQ_SNAPPY && ch->codec != VLA_PQ_GZIP && ch->codec != VLA_PQ_ZSTD)
        return vla_pq_cfail(cr, VLA_ERR_UNSUPPORTED, "unsupported compression codec %d", ch->codec);
    if (ch->num_values > pq->limits.max_chunk_values)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "%lld values in one column chunk (limit %lld)",
                            (long long)ch->num_values, (long long)pq->limits.max_chunk_values);
    int64_t start = ch->data_page_offset;
    if (ch->dictionary_page_offset > 0 && ch->dictionary_page_offset < start) start = ch->dictionary_page_offset;
    cr->page_off = start;
    if (start < 4 || ch->total_compressed_size > pq->footer_start - start)
        return vla_pq_cfail(cr, VLA_ERR_FORMAT, "column chunk [%lld, +%lld) is outside the data section [4, %lld)",
                            (long long)start, (long long)ch->total_compressed_size, (long long)pq->footer_start);
    int64_t end = start + ch->total_compressed_size, pos = start;
    while (cr->nlev < ch->num_values) {
        cr->page_off = pos;
        if (pos >= end)
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "column chunk ends after %lld of %lld values", (long long)cr->nlev, (long long)ch->num_values);
        vla_thrift_reader r;
        vla_thrift_reader_init(&r, pq->data + pos, (size_t)(end - pos), pos);
        vla_pq_page_header h;
        VLA_TRY(vla_pq_cwrap(cr, vla_pq_read_page_header(&r, &h)));
        int64_t body = vla_thrift_offset(&r);
        if (h.csize > end - body)
            return vla_pq_cfail(cr, VLA_ERR_FORMAT,
                                "page of %d compressed bytes runs past the end of the column chunk (%lld)", h.csize,
                                (long long)end);
        if (h.usize > pq->limits.max_page_bytes)
            return vla_pq_cfail(cr, VLA_ERR_FORMAT, "page of %d uncompressed bytes exceeds the limit", h.usize);
        if (h.has_crc) { /* where the writer stored one, a damaged page is refused rather than decoded */
            uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), pq->data + body, (uInt)h.csize);
            if (c != h.crc)
                return vla_pq_cfail(cr, VLA_ERR_FORMAT,
                                    "page CRC mismatch (stored %08x, computed %08x): the page's %d bytes are damaged",
                                    h.crc, c, h.csize);
        }
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (!h.has_dict) return vla_pq_cfail(cr, VLA_ERR_FORMAT, "dictionary page without its header");
            VLA_TRY(ensure_scratch(cr, (size_t)h.usize + 1));
            VLA_TRY(vla_pq_cwrap(cr, vla_pq_decompress(ch->codec, pq->data + body, (size_t)h.csize, cr->scratch, (size_t)h.usize)));
            VLA_TRY(vla_pq_read_dictionary(cr, cr->scratch, (size_t)h.usize, h.num_values, h.enc));
            col->dict_pages++;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            if (h.num_values > ch->num_values - cr->nlev)
                return vla_pq_cfail(cr, VLA_ERR_FORMAT, "page holds %d values, only %lld left in the chunk",
                                    h.num_values, (long long)(ch->num_values - cr->nlev));
            VLA_TRY(data_page(cr, col, &h, pq->data + body));
        } /* index pages and unknown page types are skipped */
        pos = body + h.csize;
    }
    cr->page_off = start;
    return vla_pq_assemble_column(cr, col);
}
