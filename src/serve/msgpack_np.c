/* msgpack_np.c — reading and writing openpi's msgpack-numpy frames with
 * msgpack-c (see msgpack_np.h). */
#include "serve/msgpack_np.h"

#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"

/* ---- a bounds walk before msgpack-c ----------------------------------------------
 * msgpack-c allocates an array's or map's element storage when it reads the
 * header, before it knows the elements are there. Every element takes at
 * least one byte, so a count larger than what is left of the frame is a lie;
 * and a request has few elements (arrays travel as one bin each), so the
 * total is capped too: msgpack-c then allocates O(frame) at most. */
#define NP_MAX_ELEMENTS 65536
#define NP_MAX_NESTING 32

static uint64_t be(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static vla_status precheck(const uint8_t *b, size_t n) {
    uint64_t stack[NP_MAX_NESTING + 1];
    int top = 0;
    stack[0] = 1; /* the one top-level value */
    uint64_t elements = 0;
    size_t at = 0;
    while (top >= 0) {
        if (stack[top] == 0) {
            top--;
            continue;
        }
        stack[top]--;
        if (at >= n) return vla_error(VLA_ERR_FORMAT, "msgpack: frame ends at byte %zu inside a value", n);
        if (++elements > NP_MAX_ELEMENTS)
            return vla_error(VLA_ERR_FORMAT, "msgpack: more than %d values in one frame", NP_MAX_ELEMENTS);
        uint8_t h = b[at++];
        uint64_t skip = 0, count = 0; /* payload bytes; child elements */
        int hdr = 0;                  /* bytes of length that follow the type byte */
        if (h <= 0x7f || h >= 0xe0 || h == 0xc0 || h == 0xc2 || h == 0xc3) {
        } else if (h >= 0x80 && h <= 0x8f) {
            count = 2u * (h & 0x0f);
        } else if (h >= 0x90 && h <= 0x9f) {
            count = h & 0x0f;
        } else if (h >= 0xa0 && h <= 0xbf) {
            skip = h & 0x1f;
        } else {
            switch (h) {
            case 0xc4: case 0xd9: hdr = 1; break;          /* bin8, str8 */
            case 0xc5: case 0xda: hdr = 2; break;          /* bin16, str16 */
            case 0xc6: case 0xdb: hdr = 4; break;          /* bin32, str32 */
            case 0xc7: hdr = 1, skip = 1; break;           /* ext8: length, type */
            case 0xc8: hdr = 2, skip = 1; break;
            case 0xc9: hdr = 4, skip = 1; break;
            case 0xca: skip = 4; break;
            case 0xcb: skip = 8; break;
            case 0xcc: case 0xd0: skip = 1; break;
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xd4: skip = 2; break;                    /* fixext 1, 2, 4, 8, 16 (+ type byte) */
            case 0xd5: skip = 3; break;
            case 0xd6: skip = 5; break;
            case 0xd7: skip = 9; break;
            case 0xd8: skip = 17; break;
            case 0xdc: hdr = 2, count = 1; break;          /* array16/32: count below */
            case 0xdd: hdr = 4, count = 1; break;
            case 0xde: hdr = 2, count = 2; break;          /* map16/32 */
            case 0xdf: hdr = 4, count = 2; break;
            default: return vla_error(VLA_ERR_FORMAT, "msgpack: byte 0x%02x at offset %zu is not a type", h, at - 1);
            }
            if (hdr) {
                if (n - at < (size_t)hdr) return vla_error(VLA_ERR_FORMAT, "msgpack: frame ends inside a header at byte %zu", at);
                uint64_t len = be(b + at, hdr);
                at += (size_t)hdr;
                if (count) count *= len; /* container: elements (×2 for maps) */
                else skip += len;
            }
        }
        if (skip > n - at)
            return vla_error(VLA_ERR_FORMAT, "msgpack: a value at offset %zu claims %llu bytes, %zu are left", at,
                             (unsigned long long)skip, n - at);
        at += (size_t)skip;
        if (count) {
            if (count > n - at)
                return vla_error(VLA_ERR_FORMAT, "msgpack: a container at offset %zu claims %llu values, %zu bytes are left",
                                 at, (unsigned long long)count, n - at);
            if (top + 1 > NP_MAX_NESTING)
                return vla_error(VLA_ERR_FORMAT, "msgpack: values nested deeper than %d", NP_MAX_NESTING);
            stack[++top] = count;
        }
    }
    if (at != n) return vla_error(VLA_ERR_FORMAT, "msgpack: %zu bytes after the request's map", n - at);
    return VLA_OK;
}

/* ---- dtypes ------------------------------------------------------------------------------ */

vla_status vla_np_parse_dtype(const char *s, size_t len, vla_np_dtype *out) {
    memset(out, 0, sizeof *out);
    char buf[16];
    if (len == 0 || len >= sizeof buf) return vla_error(VLA_ERR_FORMAT, "dtype of %zu characters is not a NumPy number type", len);
    memcpy(buf, s, len);
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e) buf[i] = '?';
    snprintf(out->str, sizeof out->str, "%s", buf);
    const char *p = buf;
    if (*p == '<' || *p == '>' || *p == '|' || *p == '=') out->big_endian = *p++ == '>';
    char k = *p++;
    char *end;
    long size = strtol(p, &end, 10);
    if (k && strchr("cOVSUMmaG", k) && (!*p || (*p >= '0' && *p <= '9'))) goto bad; /* NumPy's, but not numbers */
    if (*p < '0' || *p > '9' || *end || size <= 0)
        return vla_error(VLA_ERR_FORMAT, "dtype '%s' is not a NumPy type string like '<f4' or '|u1'", buf);
    switch (k) {
    case 'f': out->kind = VLA_NP_F; if (size != 2 && size != 4 && size != 8) goto bad; break;
    case 'i': out->kind = VLA_NP_I; if (size != 1 && size != 2 && size != 4 && size != 8) goto bad; break;
    case 'u': out->kind = VLA_NP_U; if (size != 1 && size != 2 && size != 4 && size != 8) goto bad; break;
    case 'b': out->kind = VLA_NP_B; if (size != 1) goto bad; break;
    default: goto bad;
    }
    out->size = (int)size;
    return VLA_OK;
bad:
    return vla_error(VLA_ERR_UNSUPPORTED, "dtype '%s' is not a number type vla.c reads (float 2/4/8, int or uint 1/2/4/8, bool)", buf);
}

static double elem(const vla_np_dtype *d, const uint8_t *p) {
    uint8_t b[8];
    for (int i = 0; i < d->size; i++) b[i] = d->big_endian ? p[d->size - 1 - i] : p[i]; /* to little-endian */
    uint64_t u = 0;
    for (int i = d->size - 1; i >= 0; i--) u = u << 8 | b[i];
    switch (d->kind) {
    case VLA_NP_F:
        if (d->size == 2) return vla_f16_to_f32((uint16_t)u);
        if (d->size == 4) {
            uint32_t w = (uint32_t)u;
            float f;
            memcpy(&f, &w, 4);
            return f;
        } else {
            double f;
            memcpy(&f, &u, 8);
            return f;
        }
    case VLA_NP_I: {
        int sh = 64 - 8 * d->size;
        return (double)((int64_t)(u << sh) >> sh); /* sign-extend */
    }
    case VLA_NP_U: return (double)u;
    case VLA_NP_B: return u != 0;
    }
    return NAN;
}

/* ---- flattening a request ----------------------------------------------------------- */

static bool key_is(const msgpack_object *k, const char *name) {
    size_t n = strlen(name);
    if (k->type == MSGPACK_OBJECT_STR) return k->via.str.size == n && !memcmp(k->via.str.ptr, name, n);
    if (k->type == MSGPACK_OBJECT_BIN) return k->via.bin.size == n && !memcmp(k->via.bin.ptr, name, n);
    return false;
}

static const msgpack_object *map_get(const msgpack_object *m, const char *name) {
    for (uint32_t i = 0; i < m->via.map.size; i++)
        if (key_is(&m->via.map.ptr[i].key, name)) return &m->via.map.ptr[i].val;
    return NULL;
}

/* An empty str or bin has a NULL pointer in msgpack-c: "" instead, so the
 * bytes can always go to memchr/memcpy (which must not be given NULL). */
static bool text_of(const msgpack_object *o, const char **s, size_t *n) {
    if (o->type == MSGPACK_OBJECT_STR) *s = o->via.str.ptr, *n = o->via.str.size;
    else if (o->type == MSGPACK_OBJECT_BIN) *s = o->via.bin.ptr, *n = o->via.bin.size;
    else return false;
    if (!*s) *s = "", *n = 0;
    return true;
}

static vla_status read_ndarray(const msgpack_object *m, vla_np_field *f) {
    const msgpack_object *data = map_get(m, "data"), *dtype = map_get(m, "dtype"), *shape = map_get(m, "shape");
    if (!data || !dtype || !shape)
        return vla_error(VLA_ERR_FORMAT, "%s: an ndarray needs 'data', 'dtype' and 'shape' (msgpack-numpy)", f->key);
    const char *ds;
    size_t dn;
    if (!text_of(dtype, &ds, &dn)) return vla_error(VLA_ERR_FORMAT, "%s: 'dtype' is not a string", f->key);
    vla_status st = vla_np_parse_dtype(ds, dn, &f->dtype);
    if (st != VLA_OK) return vla_error_context(st, "%s", f->key);
    if (data->type != MSGPACK_OBJECT_BIN && data->type != MSGPACK_OBJECT_STR)
        return vla_error(VLA_ERR_FORMAT, "%s: 'data' is not bytes", f->key);
    const char *bytes;
    size_t nbytes;
    text_of(data, &bytes, &nbytes);
    if (shape->type != MSGPACK_OBJECT_ARRAY) return vla_error(VLA_ERR_FORMAT, "%s: 'shape' is not a list", f->key);
    if (shape->via.array.size > VLA_NP_MAX_DIMS)
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: %u dimensions (at most %d)", f->key, shape->via.array.size, VLA_NP_MAX_DIMS);
    f->kind = VLA_NP_ARRAY;
    f->ndim = (int)shape->via.array.size;
    uint64_t numel = 1;
    for (int d = 0; d < f->ndim; d++) {
        const msgpack_object *e = &shape->via.array.ptr[d];
        if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return vla_error(VLA_ERR_FORMAT, "%s: shape entry %d is not a non-negative integer", f->key, d);
        f->shape[d] = e->via.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->via.u64;
        if (e->via.u64 > 0 && numel > nbytes / e->via.u64 + 1) numel = (uint64_t)nbytes + 1; /* more than the data holds */
        else numel *= e->via.u64;
    }
    if (numel > nbytes || numel * (uint64_t)f->dtype.size != nbytes) {
        char shp[160] = "";
        for (int d = 0, o = 0; d < f->ndim && o < (int)sizeof shp - 24; d++)
            o += snprintf(shp + o, sizeof shp - (size_t)o, "%s%lld", d ? ", " : "", (long long)f->shape[d]);
        return vla_error(VLA_ERR_FORMAT, "%s: shape [%s] of %s needs %s%llu bytes, data has %zu", f->key, shp,
                         f->dtype.str, numel > nbytes ? "more than " : "",
                         (unsigned long long)(numel > nbytes ? nbytes : numel * (uint64_t)f->dtype.size), nbytes);
    }
    f->numel = (int64_t)numel;
    f->data = (const uint8_t *)bytes;
    if (numel == 1 && f->ndim == 0) f->f = elem(&f->dtype, f->data);
    return VLA_OK;
}

static vla_status read_npgeneric(const msgpack_object *m, vla_np_field *f) {
    const msgpack_object *data = map_get(m, "data"), *dtype = map_get(m, "dtype");
    if (!data || !dtype) return vla_error(VLA_ERR_FORMAT, "%s: a NumPy scalar needs 'data' and 'dtype'", f->key);
    const char *ds;
    size_t dn;
    if (!text_of(dtype, &ds, &dn)) return vla_error(VLA_ERR_FORMAT, "%s: 'dtype' is not a string", f->key);
    vla_status st = vla_np_parse_dtype(ds, dn, &f->dtype);
    if (st != VLA_OK) return vla_error_context(st, "%s", f->key);
    switch (data->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        f->kind = VLA_NP_INT, f->i = data->via.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)data->via.u64;
        f->f = (double)data->via.u64;
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: f->kind = VLA_NP_INT, f->i = data->via.i64, f->f = (double)data->via.i64; break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: f->kind = VLA_NP_FLOAT, f->f = data->via.f64; break;
    case MSGPACK_OBJECT_BOOLEAN: f->kind = VLA_NP_BOOL, f->b = data->via.boolean, f->f = f->b; break;
    default: return vla_error(VLA_ERR_FORMAT, "%s: a NumPy scalar's 'data' is not a number", f->key);
    }
    return VLA_OK;
}

typedef struct {
    vla_np_field *fields;
    int n;
} flat;

static vla_status add_field(flat *fl, const char *prefix, const msgpack_object *k, vla_np_field **out) {
    const char *s;
    size_t n;
    if (!text_of(k, &s, &n)) return vla_error(VLA_ERR_FORMAT, "%skey of type %d is not a string", prefix, (int)k->type);
    if (memchr(s, 0, n)) return vla_error(VLA_ERR_FORMAT, "%sa key holds a NUL byte", prefix);
    if (fl->n >= VLA_NP_MAX_FIELDS) return vla_error(VLA_ERR_FORMAT, "request has more than %d fields", VLA_NP_MAX_FIELDS);
    vla_np_field *f = &fl->fields[fl->n];
    memset(f, 0, sizeof *f);
    int w = snprintf(f->key, sizeof f->key, "%s%.*s", prefix, (int)n, s);
    if (w < 0 || (size_t)w >= sizeof f->key)
        return vla_error(VLA_ERR_FORMAT, "%s%.40s…: key longer than %d bytes", prefix, s, VLA_NP_MAX_KEY - 1);
    for (int i = 0; i < fl->n; i++)
        if (!strcmp(fl->fields[i].key, f->key)) return vla_error(VLA_ERR_FORMAT, "%s: key appears twice", f->key);
    fl->n++;
    *out = f;
    return VLA_OK;
}

static vla_status flatten(flat *fl, const msgpack_object *m, const char *prefix, int depth) {
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key, *v = &m->via.map.ptr[i].val;
        if (v->type == MSGPACK_OBJECT_MAP && !map_get(v, "__ndarray__") && !map_get(v, "__npgeneric__")) {
            const char *s;
            size_t n;
            if (!text_of(k, &s, &n) || memchr(s, 0, n))
                return vla_error(VLA_ERR_FORMAT, "%sa map's key is not a string", prefix);
            if (depth + 1 >= VLA_NP_MAX_DEPTH)
                return vla_error(VLA_ERR_FORMAT, "%s%.*s: maps nested deeper than %d", prefix, (int)n, s, VLA_NP_MAX_DEPTH);
            char sub[VLA_NP_MAX_KEY];
            int w = snprintf(sub, sizeof sub, "%s%.*s/", prefix, (int)n, s);
            if (w < 0 || (size_t)w >= sizeof sub) return vla_error(VLA_ERR_FORMAT, "%s: key too long", prefix);
            VLA_TRY(flatten(fl, v, sub, depth + 1));
            continue;
        }
        vla_np_field *f = NULL;
        VLA_TRY(add_field(fl, prefix, k, &f));
        switch (v->type) {
        case MSGPACK_OBJECT_MAP:
            if (map_get(v, "__ndarray__")) VLA_TRY(read_ndarray(v, f));
            else VLA_TRY(read_npgeneric(v, f));
            break;
        case MSGPACK_OBJECT_STR:
        case MSGPACK_OBJECT_BIN: f->kind = VLA_NP_STRING, text_of(v, &f->str, &f->len); break;
        case MSGPACK_OBJECT_POSITIVE_INTEGER:
            f->kind = VLA_NP_INT, f->i = v->via.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v->via.u64;
            f->f = (double)v->via.u64;
            break;
        case MSGPACK_OBJECT_NEGATIVE_INTEGER: f->kind = VLA_NP_INT, f->i = v->via.i64, f->f = (double)v->via.i64; break;
        case MSGPACK_OBJECT_FLOAT32:
        case MSGPACK_OBJECT_FLOAT64: f->kind = VLA_NP_FLOAT, f->f = v->via.f64; break;
        case MSGPACK_OBJECT_BOOLEAN: f->kind = VLA_NP_BOOL, f->b = v->via.boolean, f->f = f->b; break;
        case MSGPACK_OBJECT_NIL: f->kind = VLA_NP_NIL; break;
        case MSGPACK_OBJECT_ARRAY: f->kind = VLA_NP_LIST, f->list = v, f->list_len = v->via.array.size; break;
        default: return vla_error(VLA_ERR_UNSUPPORTED, "%s: msgpack type %d (ext) is not read", f->key, (int)v->type);
        }
    }
    return VLA_OK;
}

vla_status vla_np_parse(const uint8_t *buf, size_t n, vla_np_map *out) {
    memset(out, 0, sizeof *out);
    if (n == 0) return vla_error(VLA_ERR_FORMAT, "msgpack: empty frame");
    VLA_TRY(precheck(buf, n));
    msgpack_unpacked *u = malloc(sizeof *u);
    vla_np_field *fields = calloc(VLA_NP_MAX_FIELDS, sizeof *fields);
    if (!u || !fields) {
        free(u), free(fields);
        return vla_error(VLA_ERR_NOMEM, "msgpack: out of memory");
    }
    msgpack_unpacked_init(u);
    out->unpacked = u, out->fields = fields;
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack_next(u, (const char *)buf, n, &off);
    vla_status st = VLA_OK;
    if (r == MSGPACK_UNPACK_NOMEM_ERROR) st = vla_error(VLA_ERR_NOMEM, "msgpack: out of memory");
    else if (r != MSGPACK_UNPACK_SUCCESS) st = vla_error(VLA_ERR_FORMAT, "msgpack: not one complete value (msgpack-c says %d)", (int)r);
    else if (off != n) st = vla_error(VLA_ERR_FORMAT, "msgpack: %zu bytes after the request's map", n - off);
    else if (u->data.type != MSGPACK_OBJECT_MAP)
        st = vla_error(VLA_ERR_FORMAT, "msgpack: a request is a map of observation keys, not msgpack type %d", (int)u->data.type);
    if (st == VLA_OK) {
        flat fl = {fields, 0};
        st = flatten(&fl, &u->data, "", 0);
        out->n = fl.n;
    }
    if (st != VLA_OK) vla_np_map_free(out);
    return st;
}

void vla_np_map_free(vla_np_map *m) {
    if (!m) return;
    if (m->unpacked) {
        msgpack_unpacked_destroy(m->unpacked);
        free(m->unpacked);
    }
    free(m->fields);
    memset(m, 0, sizeof *m);
}

const vla_np_field *vla_np_get(const vla_np_map *m, const char *key) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->fields[i].key, key)) return &m->fields[i];
    return NULL;
}

bool vla_np_is_numeric(const vla_np_field *f) {
    switch (f->kind) {
    case VLA_NP_ARRAY:
    case VLA_NP_INT:
    case VLA_NP_FLOAT:
    case VLA_NP_BOOL: return true;
    case VLA_NP_LIST: {
        const msgpack_object *a = f->list;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
            msgpack_object_type t = a->via.array.ptr[i].type;
            if (t != MSGPACK_OBJECT_POSITIVE_INTEGER && t != MSGPACK_OBJECT_NEGATIVE_INTEGER && t != MSGPACK_OBJECT_FLOAT32 &&
                t != MSGPACK_OBJECT_FLOAT64 && t != MSGPACK_OBJECT_BOOLEAN)
                return false;
        }
        return true;
    }
    default: return false;
    }
}

int64_t vla_np_count(const vla_np_field *f) {
    if (f->kind == VLA_NP_ARRAY) return f->numel;
    if (f->kind == VLA_NP_LIST) return f->list_len;
    return vla_np_is_numeric(f) ? 1 : 0;
}

double vla_np_at(const vla_np_field *f, int64_t i) {
    if (f->kind == VLA_NP_ARRAY) return i >= 0 && i < f->numel ? elem(&f->dtype, f->data + i * f->dtype.size) : NAN;
    if (f->kind == VLA_NP_LIST) {
        const msgpack_object *a = f->list;
        if (i < 0 || i >= (int64_t)a->via.array.size) return NAN;
        const msgpack_object *e = &a->via.array.ptr[i];
        switch (e->type) {
        case MSGPACK_OBJECT_POSITIVE_INTEGER: return (double)e->via.u64;
        case MSGPACK_OBJECT_NEGATIVE_INTEGER: return (double)e->via.i64;
        case MSGPACK_OBJECT_FLOAT32:
        case MSGPACK_OBJECT_FLOAT64: return e->via.f64;
        case MSGPACK_OBJECT_BOOLEAN: return e->via.boolean;
        default: return NAN;
        }
    }
    return i == 0 ? f->f : NAN;
}

/* ---- writing -------------------------------------------------------------------------- */

vla_status vla_np_writer_init(vla_np_writer *w) {
    msgpack_sbuffer *sb = malloc(sizeof *sb);
    if (!sb) return vla_error(VLA_ERR_NOMEM, "msgpack: out of memory");
    msgpack_sbuffer_init(sb);
    msgpack_packer *pk = msgpack_packer_new(sb, msgpack_sbuffer_write);
    if (!pk) {
        free(sb);
        return vla_error(VLA_ERR_NOMEM, "msgpack: out of memory");
    }
    w->sbuf = sb, w->pk = pk;
    return VLA_OK;
}

void vla_np_writer_free(vla_np_writer *w) {
    if (!w || !w->sbuf) return;
    msgpack_packer_free(w->pk);
    msgpack_sbuffer_destroy(w->sbuf);
    free(w->sbuf);
    w->sbuf = w->pk = NULL;
}

void vla_np_writer_reset(vla_np_writer *w) { msgpack_sbuffer_clear(w->sbuf); }

const uint8_t *vla_np_writer_data(const vla_np_writer *w, size_t *n) {
    const msgpack_sbuffer *sb = w->sbuf;
    *n = sb->size;
    return (const uint8_t *)sb->data;
}

void vla_np_put_map(vla_np_writer *w, int entries) { msgpack_pack_map(w->pk, (size_t)entries); }
void vla_np_put_list(vla_np_writer *w, int entries) { msgpack_pack_array(w->pk, (size_t)entries); }
void vla_np_put_str(vla_np_writer *w, const char *s) {
    size_t n = strlen(s);
    msgpack_pack_str(w->pk, n);
    msgpack_pack_str_body(w->pk, s, n);
}
void vla_np_put_int(vla_np_writer *w, int64_t v) { msgpack_pack_int64(w->pk, v); }
void vla_np_put_float(vla_np_writer *w, double v) { msgpack_pack_double(w->pk, v); }
void vla_np_put_bool(vla_np_writer *w, bool v) {
    if (v) msgpack_pack_true(w->pk);
    else msgpack_pack_false(w->pk);
}
void vla_np_put_nil(vla_np_writer *w) { msgpack_pack_nil(w->pk); }

static void put_bin_key(vla_np_writer *w, const char *s) { /* Python bytes keys: msgpack bin */
    size_t n = strlen(s);
    msgpack_pack_bin(w->pk, n);
    msgpack_pack_bin_body(w->pk, s, n);
}

void vla_np_put_f32_array(vla_np_writer *w, const float *data, const int64_t *shape, int ndim) {
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= shape[d];
    msgpack_pack_map(w->pk, 4); /* msgpack_numpy.pack_array's order */
    put_bin_key(w, "__ndarray__");
    msgpack_pack_true(w->pk);
    put_bin_key(w, "data");
    msgpack_pack_bin(w->pk, (size_t)numel * 4);
    for (int64_t i = 0; i < numel; i++) { /* little-endian, whatever the host */
        uint32_t u;
        memcpy(&u, &data[i], 4);
        uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        msgpack_pack_bin_body(w->pk, b, 4);
    }
    put_bin_key(w, "dtype");
    vla_np_put_str(w, "<f4");
    put_bin_key(w, "shape");
    msgpack_pack_array(w->pk, (size_t)ndim);
    for (int d = 0; d < ndim; d++) msgpack_pack_int64(w->pk, shape[d]);
}
