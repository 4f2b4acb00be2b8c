/* thrift_compact.c — bounded decoder and small encoder for the Thrift compact
 * protocol (Parquet footers and page headers). See thrift_compact.h. */
#include "io/thrift_compact.h"

#include <stdlib.h>
#include <string.h>

static vla_status tc_fail(const vla_thrift_reader *r, const char *what) {
    return vla_error(VLA_ERR_FORMAT, "corrupt thrift: %s at byte %lld", what,
                     (long long)vla_thrift_offset(r));
}

void vla_thrift_reader_init(vla_thrift_reader *r, const void *data, size_t n, int64_t base_offset) {
    memset(r, 0, sizeof *r);
    r->start = r->p = (const uint8_t *)data;
    r->end = r->start + n;
    r->base_offset = base_offset;
    r->max_list = 1 << 24;
}

int64_t vla_thrift_offset(const vla_thrift_reader *r) {
    return r->base_offset + (int64_t)(r->p - r->start);
}

static vla_status tc_varint(vla_thrift_reader *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return tc_fail(r, "varint runs past the end");
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return VLA_OK;
        }
    }
    return tc_fail(r, "varint longer than 10 bytes");
}

static vla_status tc_zigzag(vla_thrift_reader *r, int64_t *v) {
    uint64_t u = 0;
    VLA_TRY(tc_varint(r, &u));
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return VLA_OK;
}

vla_status vla_thrift_struct_begin(vla_thrift_reader *r) {
    if (r->depth >= VLA_THRIFT_MAX_DEPTH) return tc_fail(r, "structs nested too deeply");
    r->depth++;
    r->last_id[r->depth] = 0;
    return VLA_OK;
}

vla_status vla_thrift_struct_end(vla_thrift_reader *r) {
    if (r->depth <= 0) return tc_fail(r, "struct end without begin");
    r->depth--;
    return VLA_OK;
}

vla_status vla_thrift_field(vla_thrift_reader *r, int *type, int *id) {
    if (r->p >= r->end) return tc_fail(r, "struct runs past the end");
    uint8_t b = *r->p++;
    *type = b & 0x0f;
    if (*type == VLA_TC_STOP) {
        if (b != 0) return tc_fail(r, "bad STOP byte");
        *id = 0;
        return VLA_OK;
    }
    if (*type > VLA_TC_STRUCT) return tc_fail(r, "unknown field type");
    int delta = b >> 4;
    if (delta) {
        *id = r->last_id[r->depth] + delta;
    } else {
        int64_t v;
        VLA_TRY(tc_zigzag(r, &v));
        if (v < -32768 || v > 32767) return tc_fail(r, "field id out of range");
        *id = (int)v;
    }
    if (*id < -32768 || *id > 32767) return tc_fail(r, "field id out of range");
    r->last_id[r->depth] = (int16_t)*id;
    return VLA_OK;
}

vla_status vla_thrift_bool(vla_thrift_reader *r, int type, int *v) {
    if (type == VLA_TC_TRUE) *v = 1;
    else if (type == VLA_TC_FALSE) *v = 0;
    else return tc_fail(r, "expected a bool field");
    return VLA_OK;
}

vla_status vla_thrift_list_bool(vla_thrift_reader *r, int *v) {
    if (r->p >= r->end) return tc_fail(r, "bool runs past the end");
    *v = (*r->p++ == 1);
    return VLA_OK;
}

vla_status vla_thrift_i64(vla_thrift_reader *r, int type, int64_t *v) {
    if (type == VLA_TC_BYTE) {
        if (r->p >= r->end) return tc_fail(r, "byte runs past the end");
        *v = (int8_t)*r->p++;
        return VLA_OK;
    }
    if (type != VLA_TC_I16 && type != VLA_TC_I32 && type != VLA_TC_I64)
        return tc_fail(r, "expected an integer field");
    return tc_zigzag(r, v);
}

vla_status vla_thrift_i32(vla_thrift_reader *r, int type, int32_t *v) {
    int64_t x = 0;
    VLA_TRY(vla_thrift_i64(r, type, &x));
    if (x < INT32_MIN || x > INT32_MAX) return tc_fail(r, "i32 out of range");
    *v = (int32_t)x;
    return VLA_OK;
}

vla_status vla_thrift_double(vla_thrift_reader *r, int type, double *v) {
    if (type != VLA_TC_DOUBLE) return tc_fail(r, "expected a double field");
    if (r->end - r->p < 8) return tc_fail(r, "double runs past the end");
    memcpy(v, r->p, 8); /* little-endian on the wire, as on every host we build for */
    r->p += 8;
    return VLA_OK;
}

vla_status vla_thrift_binary(vla_thrift_reader *r, int type, const uint8_t **data, uint32_t *n) {
    if (type != VLA_TC_BINARY) return tc_fail(r, "expected a binary field");
    uint64_t len = 0;
    VLA_TRY(tc_varint(r, &len));
    if (len > (uint64_t)(r->end - r->p)) return tc_fail(r, "string length past the end");
    *data = r->p;
    *n = (uint32_t)len;
    r->p += len;
    return VLA_OK;
}

vla_status vla_thrift_list(vla_thrift_reader *r, int type, int *elem_type, int64_t *n) {
    if (type != VLA_TC_LIST && type != VLA_TC_SET) return tc_fail(r, "expected a list field");
    if (r->p >= r->end) return tc_fail(r, "list header past the end");
    uint8_t b = *r->p++;
    *elem_type = b & 0x0f;
    uint64_t size = b >> 4;
    if (size == 15) VLA_TRY(tc_varint(r, &size));
    if (*elem_type == VLA_TC_STOP || *elem_type > VLA_TC_STRUCT) return tc_fail(r, "bad list element type");
    /* Every element takes at least one byte, so a count larger than what is
     * left is corrupt; this also bounds allocations made from it. */
    if (size > (uint64_t)r->max_list || size > (uint64_t)(r->end - r->p))
        return tc_fail(r, "list size past the end");
    *n = (int64_t)size;
    return VLA_OK;
}

vla_status vla_thrift_skip(vla_thrift_reader *r, int type) {
    int64_t v;
    double d;
    const uint8_t *bp;
    uint32_t bn;
    switch (type) {
    case VLA_TC_TRUE:
    case VLA_TC_FALSE: return VLA_OK;  /* value was in the field header */
    case VLA_TC_BYTE:
    case VLA_TC_I16:
    case VLA_TC_I32:
    case VLA_TC_I64: return vla_thrift_i64(r, type, &v);
    case VLA_TC_DOUBLE: return vla_thrift_double(r, type, &d);
    case VLA_TC_BINARY: return vla_thrift_binary(r, type, &bp, &bn);
    case VLA_TC_LIST:
    case VLA_TC_SET: {
        int et;
        int64_t n;
        VLA_TRY(vla_thrift_list(r, type, &et, &n));
        if (r->depth >= VLA_THRIFT_MAX_DEPTH) return tc_fail(r, "nested too deeply");
        r->depth++;
        r->last_id[r->depth] = 0;
        for (int64_t i = 0; i < n; i++) {
            vla_status st;
            if (et == VLA_TC_TRUE || et == VLA_TC_FALSE) {
                int bv;
                st = vla_thrift_list_bool(r, &bv);
            } else {
                st = vla_thrift_skip(r, et);
            }
            if (st != VLA_OK) return st;
        }
        r->depth--;
        return VLA_OK;
    }
    case VLA_TC_MAP: {
        uint64_t n = 0;
        VLA_TRY(tc_varint(r, &n));
        if (n == 0) return VLA_OK;
        if (n > (uint64_t)r->max_list || n > (uint64_t)(r->end - r->p)) return tc_fail(r, "map size past the end");
        if (r->p >= r->end) return tc_fail(r, "map header past the end");
        uint8_t kv = *r->p++;
        int kt = kv >> 4, vt = kv & 0x0f;
        if (kt == 0 || kt > VLA_TC_STRUCT || vt == 0 || vt > VLA_TC_STRUCT) return tc_fail(r, "bad map types");
        if (r->depth >= VLA_THRIFT_MAX_DEPTH) return tc_fail(r, "nested too deeply");
        r->depth++;
        r->last_id[r->depth] = 0;
        for (uint64_t i = 0; i < n; i++) {
            int bv;
            if (kt == VLA_TC_TRUE || kt == VLA_TC_FALSE) VLA_TRY(vla_thrift_list_bool(r, &bv));
            else VLA_TRY(vla_thrift_skip(r, kt));
            if (vt == VLA_TC_TRUE || vt == VLA_TC_FALSE) VLA_TRY(vla_thrift_list_bool(r, &bv));
            else VLA_TRY(vla_thrift_skip(r, vt));
        }
        r->depth--;
        return VLA_OK;
    }
    case VLA_TC_STRUCT: {
        VLA_TRY(vla_thrift_struct_begin(r));
        for (;;) {
            int ft, id;
            VLA_TRY(vla_thrift_field(r, &ft, &id));
            if (ft == VLA_TC_STOP) break;
            VLA_TRY(vla_thrift_skip(r, ft));
        }
        return vla_thrift_struct_end(r);
    }
    default: return tc_fail(r, "unknown type");
    }
}

/* ---- encoder ---- */

void vla_thrift_writer_init(vla_thrift_writer *w) { memset(w, 0, sizeof *w); }

void vla_thrift_writer_free(vla_thrift_writer *w) {
    free(w->data);
    memset(w, 0, sizeof *w);
}

static void tw_put(vla_thrift_writer *w, const void *d, size_t n) {
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *nd = realloc(w->data, cap);
        if (!nd) {
            w->oom = 1;
            return;
        }
        w->data = nd;
        w->cap = cap;
    }
    memcpy(w->data + w->len, d, n);
    w->len += n;
}

static void tw_byte(vla_thrift_writer *w, uint8_t b) { tw_put(w, &b, 1); }

void vla_thrift_w_varint(vla_thrift_writer *w, uint64_t v) {
    uint8_t buf[10];
    int n = 0;
    while (v >= 0x80) {
        buf[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    buf[n++] = (uint8_t)v;
    tw_put(w, buf, (size_t)n);
}

void vla_thrift_w_zigzag(vla_thrift_writer *w, int64_t v) {
    vla_thrift_w_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void vla_thrift_w_struct_begin(vla_thrift_writer *w) {
    if (w->depth < VLA_THRIFT_MAX_DEPTH) w->depth++;
    w->last_id[w->depth] = 0;
}

void vla_thrift_w_struct_end(vla_thrift_writer *w) {
    tw_byte(w, 0);
    if (w->depth > 0) w->depth--;
}

void vla_thrift_w_field(vla_thrift_writer *w, int type, int id) {
    int delta = id - w->last_id[w->depth];
    if (delta > 0 && delta <= 15) {
        tw_byte(w, (uint8_t)(delta << 4 | type));
    } else {
        tw_byte(w, (uint8_t)type);
        vla_thrift_w_zigzag(w, id);
    }
    w->last_id[w->depth] = (int16_t)id;
}

void vla_thrift_w_bool_field(vla_thrift_writer *w, int id, int v) {
    vla_thrift_w_field(w, v ? VLA_TC_TRUE : VLA_TC_FALSE, id);
}

void vla_thrift_w_i32_field(vla_thrift_writer *w, int id, int32_t v) {
    vla_thrift_w_field(w, VLA_TC_I32, id);
    vla_thrift_w_zigzag(w, v);
}

void vla_thrift_w_i64_field(vla_thrift_writer *w, int id, int64_t v) {
    vla_thrift_w_field(w, VLA_TC_I64, id);
    vla_thrift_w_zigzag(w, v);
}

void vla_thrift_w_binary(vla_thrift_writer *w, const void *data, size_t n) {
    vla_thrift_w_varint(w, n);
    tw_put(w, data, n);
}

void vla_thrift_w_binary_field(vla_thrift_writer *w, int id, const void *data, size_t n) {
    vla_thrift_w_field(w, VLA_TC_BINARY, id);
    vla_thrift_w_binary(w, data, n);
}

void vla_thrift_w_string_field(vla_thrift_writer *w, int id, const char *s) {
    vla_thrift_w_binary_field(w, id, s, strlen(s));
}

void vla_thrift_w_list_begin(vla_thrift_writer *w, int elem_type, int64_t n) {
    if (n < 15) {
        tw_byte(w, (uint8_t)(n << 4 | elem_type));
    } else {
        tw_byte(w, (uint8_t)(0xf0 | elem_type));
        vla_thrift_w_varint(w, (uint64_t)n);
    }
}

vla_status vla_thrift_writer_status(const vla_thrift_writer *w) {
    return w->oom ? vla_error(VLA_ERR_NOMEM, "thrift encoder: out of memory") : VLA_OK;
}
