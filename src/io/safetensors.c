/* safetensors.c — safetensors reader (mmap, zero-copy, fully validated
 * before any pointer is handed out) and atomic writer (see safetensors.h). */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c hands out the file's little-endian bytes as they are; port it before using a big-endian host"
#endif

/* ---- small helpers ---------------------------------------------------- */

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
 * Returns the offset of the first bad byte, or len if all is well. */
static size_t utf8_check(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (len - i <= n) return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += n + 1;
    }
    return len;
}

static uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void put_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* "[2, 4]" */
static const char *format_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* Element count and byte size of a shape, or false on overflow of int64/size_t. */
static bool shape_bytes(int ndim, const int64_t *shape, size_t elsize, int64_t *numel, size_t *nbytes) {
    uint64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return false;
        if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n)) return false;
    }
    uint64_t b;
    if (n > (uint64_t)INT64_MAX || __builtin_mul_overflow(n, (uint64_t)elsize, &b) || b > SIZE_MAX) return false;
    *numel = (int64_t)n;
    *nbytes = (size_t)b;
    return true;
}

/* dtypes the format defines but vla does not handle: UNSUPPORTED, not FORMAT. */
static bool known_unsupported_dtype(const char *name) {
    static const char *const names[] = {"BOOL", "I8", "I16", "U16", "U32", "U64", "F64", "C64",
                                        "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

/* Integer JSON value >= 0, or false. */
static bool json_nonneg(const json_t *v, int64_t *out) {
    if (!json_is_integer(v)) return false;
    json_int_t x = json_integer_value(v);
    if (x < 0) return false;
    *out = (int64_t)x;
    return true;
}

/* ---- reader ------------------------------------------------------------ */

static vla_status parse_tensor(vla_safetensors *st, const char *name, json_t *v, vla_safetensors_tensor *t) {
    const char *w = st->what;
    char sbuf[256];
    if (!json_is_object(v)) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': entry must be a JSON object", w, name);
    t->name = name;

    json_t *jd = json_object_get(v, "dtype");
    if (!jd) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'dtype' is missing", w, name);
    if (!json_is_string(jd)) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'dtype' must be a string", w, name);
    const char *dname = json_string_value(jd);
    if (vla_dtype_from_safetensors_name(dname, &t->dtype) != VLA_OK) {
        if (known_unsupported_dtype(dname))
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: tensor '%s': dtype '%s' is not supported", w, name, dname);
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", w, name, dname);
    }

    json_t *js = json_object_get(v, "shape");
    if (!js) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'shape' is missing", w, name);
    if (!json_is_array(js)) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'shape' must be an array", w, name);
    size_t rank = json_array_size(js);
    if (rank > VLA_SAFETENSORS_MAX_DIMS)
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': rank %zu exceeds the maximum of %d", w, name, rank,
                         VLA_SAFETENSORS_MAX_DIMS);
    t->ndim = (int)rank;
    for (size_t i = 0; i < rank; i++)
        if (!json_nonneg(json_array_get(js, i), &t->shape[i]))
            return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': shape[%zu] must be a non-negative integer", w, name, i);
    const char *dt = vla_dtype_safetensors_name(t->dtype);
    if (!shape_bytes(t->ndim, t->shape, vla_dtype_size(t->dtype), &t->numel, &t->nbytes))
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': shape %s of %s overflows the addressable size", w, name,
                         format_shape(sbuf, sizeof sbuf, t->ndim, t->shape), dt);

    json_t *jo = json_object_get(v, "data_offsets");
    if (!jo) return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'data_offsets' is missing", w, name);
    int64_t b, e;
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_nonneg(json_array_get(jo, 0), &b) ||
        !json_nonneg(json_array_get(jo, 1), &e))
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': 'data_offsets' must be two non-negative integers", w, name);
    t->begin = (uint64_t)b;
    t->end = (uint64_t)e;
    if (t->begin > t->end)
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld) end before they begin", w, name,
                         (long long)b, (long long)e);
    if (t->end > st->data_len)
        return vla_error(VLA_ERR_FORMAT,
                         "%s: tensor '%s': data_offsets [%lld, %lld) run past the end of the %zu-byte data region", w,
                         name, (long long)b, (long long)e, st->data_len);
    if (t->end - t->begin != t->nbytes)
        return vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld) but shape %s of %s needs %zu bytes",
                         w, name, (long long)b, (long long)e, format_shape(sbuf, sizeof sbuf, t->ndim, t->shape), dt,
                         t->nbytes);
    t->data = st->data + t->begin;
    return VLA_OK;
}

typedef struct {
    const char *key, *value;
} meta_pair;

static int cmp_meta_pair(const void *a, const void *b) {
    return strcmp(((const meta_pair *)a)->key, ((const meta_pair *)b)->key);
}

static vla_status parse_meta(vla_safetensors *st, json_t *m) {
    const char *w = st->what;
    if (!json_is_object(m)) return vla_error(VLA_ERR_FORMAT, "%s: '__metadata__' must be a JSON object", w);
    size_t n = json_object_size(m);
    st->meta_keys = calloc(n ? n : 1, sizeof *st->meta_keys);
    st->meta_values = calloc(n ? n : 1, sizeof *st->meta_values);
    if (!st->meta_keys || !st->meta_values) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", w);
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!json_is_string(v))
            return vla_error(VLA_ERR_FORMAT, "%s: '__metadata__' value of '%s' must be a string", w, key);
        const char *s = json_string_value(v);
        if (strlen(s) != json_string_length(v))
            return vla_error(VLA_ERR_FORMAT, "%s: '__metadata__' value of '%s' contains a NUL character", w, key);
        st->meta_keys[st->n_meta] = key;
        st->meta_values[st->n_meta] = s;
        st->n_meta++;
    }
    /* Sort by key (keys are unique: duplicates were rejected by the parser). */
    meta_pair *pairs = malloc((st->n_meta ? st->n_meta : 1) * sizeof *pairs);
    if (!pairs) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", w);
    for (size_t i = 0; i < st->n_meta; i++) pairs[i] = (meta_pair){st->meta_keys[i], st->meta_values[i]};
    qsort(pairs, st->n_meta, sizeof *pairs, cmp_meta_pair);
    for (size_t i = 0; i < st->n_meta; i++) {
        st->meta_keys[i] = pairs[i].key;
        st->meta_values[i] = pairs[i].value;
    }
    free(pairs);
    return VLA_OK;
}

static int cmp_by_offset(const void *a, const void *b) {
    const vla_safetensors_tensor *x = *(vla_safetensors_tensor *const *)a, *y = *(vla_safetensors_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_by_name(const void *a, const void *b) {
    return strcmp(((const vla_safetensors_tensor *)a)->name, ((const vla_safetensors_tensor *)b)->name);
}

/* Tensors must tile the data region: sorted by offset, each begins where
 * the previous ended and the last ends at the region's end. */
static vla_status check_coverage(vla_safetensors *st) {
    const char *w = st->what;
    if (st->n_tensors == 0) {
        if (st->data_len != 0)
            return vla_error(VLA_ERR_FORMAT, "%s: %zu bytes of data follow a header that lists no tensors", w,
                             st->data_len);
        return VLA_OK;
    }
    vla_safetensors_tensor **order = malloc(st->n_tensors * sizeof *order);
    if (!order) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", w);
    for (size_t i = 0; i < st->n_tensors; i++) order[i] = &st->tensors[i];
    qsort(order, st->n_tensors, sizeof *order, cmp_by_offset);
    vla_status s = VLA_OK;
    uint64_t pos = 0;
    const vla_safetensors_tensor *prev = NULL;
    for (size_t i = 0; i < st->n_tensors && s == VLA_OK; i++) {
        const vla_safetensors_tensor *t = order[i];
        if (t->begin < pos)
            s = vla_error(VLA_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu) overlap tensor '%s' [%llu, %llu)",
                          w, t->name, (unsigned long long)t->begin, (unsigned long long)t->end, prev->name,
                          (unsigned long long)prev->begin, (unsigned long long)prev->end);
        else if (t->begin > pos)
            s = vla_error(VLA_ERR_FORMAT,
                          "%s: bytes [%llu, %llu) of the data region belong to no tensor (hole before tensor '%s')", w,
                          (unsigned long long)pos, (unsigned long long)t->begin, t->name);
        pos = t->end;
        prev = t;
    }
    if (s == VLA_OK && pos != st->data_len)
        s = vla_error(VLA_ERR_FORMAT, "%s: bytes [%llu, %zu) at the end of the data region belong to no tensor", w,
                      (unsigned long long)pos, st->data_len);
    free(order);
    return s;
}

static vla_status parse_body(vla_safetensors *st) {
    const char *w = st->what;
    if (st->size < 8)
        return vla_error(VLA_ERR_FORMAT, "%s: file is %zu bytes, too short for the 8-byte header length", w, st->size);
    uint64_t n = read_le64(st->buf);
    if (n > VLA_SAFETENSORS_MAX_HEADER)
        return vla_error(VLA_ERR_FORMAT, "%s: header length %llu exceeds the limit of %llu bytes", w,
                         (unsigned long long)n, (unsigned long long)VLA_SAFETENSORS_MAX_HEADER);
    if (n > st->size - 8)
        return vla_error(VLA_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes follow it)", w,
                         (unsigned long long)n, st->size - 8);
    st->header_len = n;
    st->data = st->buf + 8 + n;
    st->data_len = st->size - 8 - (size_t)n;

    const uint8_t *text = st->buf + 8;
    size_t bad = utf8_check(text, (size_t)n);
    if (bad != (size_t)n)
        return vla_error(VLA_ERR_FORMAT, "%s: header is not valid UTF-8 (byte 0x%02x at file offset %zu)", w, text[bad],
                         8 + bad);
    json_error_t err;
    /* No JSON_ALLOW_NUL: names and metadata are handed out as C strings. */
    json_t *root = json_loadb((const char *)text, (size_t)n, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return vla_error(VLA_ERR_FORMAT, "%s: header is not valid JSON (line %d, column %d): %s", w, err.line,
                         err.column, err.text);
    st->json = root;
    if (!json_is_object(root)) return vla_error(VLA_ERR_FORMAT, "%s: header must be a JSON object", w);

    size_t count = json_object_size(root);
    st->tensors = calloc(count ? count : 1, sizeof *st->tensors);
    if (!st->tensors) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for %zu tensors", w, count);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            VLA_TRY(parse_meta(st, v));
            continue;
        }
        VLA_TRY(parse_tensor(st, key, v, &st->tensors[st->n_tensors]));
        st->n_tensors++;
    }
    VLA_TRY(check_coverage(st));
    qsort(st->tensors, st->n_tensors, sizeof *st->tensors, cmp_by_name);
    return VLA_OK;
}

static vla_status parse_into(vla_safetensors *st, const void *buf, size_t len, const char *what, int mapped) {
    memset(st, 0, sizeof *st);
    st->buf = buf;
    st->size = len;
    st->mapped = mapped;
    st->what = strdup(what ? what : "safetensors");
    if (!st->what) {
        vla_safetensors_close(st);
        return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    vla_status s = parse_body(st);
    if (s != VLA_OK) vla_safetensors_close(st);
    return s;
}

vla_status vla_safetensors_parse(const void *buf, size_t len, const char *what, vla_safetensors *st) {
    if (!buf && len) {
        memset(st, 0, sizeof *st);
        return vla_error(VLA_ERR_INVALID_ARG, "%s: NULL buffer", what ? what : "safetensors");
    }
    static const uint8_t empty[1];
    return parse_into(st, buf ? buf : empty, len, what, 0);
}

vla_status vla_safetensors_open(const char *path, vla_safetensors *st) {
    memset(st, 0, sizeof *st);
    vla_mapped_file m;
    VLA_TRY(vla_map_file(path, &m));
    if (!m.data) return vla_safetensors_parse(NULL, 0, path, st); /* empty: let the parser explain */
    return parse_into(st, m.data, m.size, path, 1);
}

void vla_safetensors_close(vla_safetensors *st) {
    if (!st) return;
    if (st->mapped && st->buf) munmap((void *)st->buf, st->size);
    if (st->json) json_decref((json_t *)st->json);
    free(st->tensors);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->what);
    memset(st, 0, sizeof *st);
}

size_t vla_safetensors_count(const vla_safetensors *st) { return st->n_tensors; }

const vla_safetensors_tensor *vla_safetensors_at(const vla_safetensors *st, size_t i) {
    return i < st->n_tensors ? &st->tensors[i] : NULL;
}

const vla_safetensors_tensor *vla_safetensors_find(const vla_safetensors *st, const char *name) {
    size_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

vla_status vla_safetensors_get(const vla_safetensors *st, const char *name, const vla_safetensors_tensor **out) {
    *out = vla_safetensors_find(st, name);
    if (!*out) return vla_error(VLA_ERR_NOT_FOUND, "%s: no tensor named '%s'", st->what ? st->what : "?", name);
    return VLA_OK;
}

const char *vla_safetensors_meta_get(const vla_safetensors *st, const char *key) {
    for (size_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta_keys[i], key) == 0) return st->meta_values[i];
    return NULL;
}

size_t vla_safetensors_meta_count(const vla_safetensors *st) { return st->n_meta; }

vla_status vla_safetensors_meta_at(const vla_safetensors *st, size_t i, const char **key, const char **value) {
    if (i >= st->n_meta)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: metadata index %zu out of range (%zu entries)",
                         st->what ? st->what : "?", i, st->n_meta);
    *key = st->meta_keys[i];
    *value = st->meta_values[i];
    return VLA_OK;
}

vla_status vla_safetensors_tensor_to_f32(const vla_safetensors *st, const vla_safetensors_tensor *t, float *dst,
                                         size_t count) {
    if (count != (size_t)t->numel) {
        char sbuf[256];
        return vla_error(VLA_ERR_INVALID_ARG, "%s: tensor '%s': shape %s has %lld elements but the destination holds %zu",
                         st->what ? st->what : "?", t->name, format_shape(sbuf, sizeof sbuf, t->ndim, t->shape),
                         (long long)t->numel, count);
    }
    if (t->dtype == VLA_F32) {
        if (t->nbytes) memcpy(dst, t->data, t->nbytes);
        return VLA_OK;
    }
    /* Copy through an aligned bounce buffer: the mapping may be unaligned
     * for this dtype when a foreign writer did not pad its header. */
    _Alignas(16) uint8_t tmp[4096];
    size_t es = vla_dtype_size(t->dtype), per = sizeof tmp / es;
    const uint8_t *src = t->data;
    for (size_t i = 0; i < count; i += per) {
        size_t m = count - i < per ? count - i : per;
        memcpy(tmp, src + i * es, m * es);
        vla_convert(dst + i, VLA_F32, tmp, t->dtype, m);
    }
    return VLA_OK;
}

vla_status vla_safetensors_load_f32(const vla_safetensors *st, const char *name, float *dst, size_t count) {
    const vla_safetensors_tensor *t;
    VLA_TRY(vla_safetensors_get(st, name, &t));
    return vla_safetensors_tensor_to_f32(st, t, dst, count);
}

/* ---- writer ------------------------------------------------------------ */

typedef struct {
    char *name;
    vla_dtype dtype;
    int ndim;
    int64_t shape[VLA_SAFETENSORS_MAX_DIMS];
    size_t nbytes;
    const void *data;
} writer_entry;

struct vla_safetensors_writer {
    writer_entry *t;
    size_t n, cap;
    char **mkey, **mval;
    size_t nm, capm;
};

vla_status vla_safetensors_writer_new(vla_safetensors_writer **out) {
    *out = calloc(1, sizeof **out);
    return *out ? VLA_OK : vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
}

void vla_safetensors_writer_free(vla_safetensors_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < w->nm; i++) {
        free(w->mkey[i]);
        free(w->mval[i]);
    }
    free(w->t);
    free(w->mkey);
    free(w->mval);
    free(w);
}

static bool is_utf8(const char *s) { return utf8_check((const uint8_t *)s, strlen(s)) == strlen(s); }

vla_status vla_safetensors_writer_add(vla_safetensors_writer *w, const char *name, vla_dtype dtype, int ndim,
                                      const int64_t *shape, const void *data) {
    if (!name) return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor name is NULL");
    if (strcmp(name, "__metadata__") == 0)
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: '__metadata__' cannot name a tensor");
    if (!is_utf8(name)) return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor name is not valid UTF-8");
    if ((unsigned)dtype >= VLA_DTYPE_COUNT)
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor '%s': bad dtype %d", name, (int)dtype);
    if (ndim < 0 || ndim > VLA_SAFETENSORS_MAX_DIMS)
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor '%s': rank %d outside [0, %d]", name, ndim,
                         VLA_SAFETENSORS_MAX_DIMS);
    writer_entry e = {.dtype = dtype, .ndim = ndim, .data = data};
    for (int i = 0; i < ndim; i++) e.shape[i] = shape[i];
    int64_t numel;
    if (!shape_bytes(ndim, e.shape, vla_dtype_size(dtype), &numel, &e.nbytes)) {
        char sbuf[256];
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor '%s': shape %s is negative or too large", name,
                         format_shape(sbuf, sizeof sbuf, ndim, e.shape));
    }
    if (!data && e.nbytes)
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor '%s': data is NULL", name);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: tensor '%s' added twice", name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        writer_entry *t = realloc(w->t, cap * sizeof *t);
        if (!t) return vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
        w->t = t;
        w->cap = cap;
    }
    e.name = strdup(name);
    if (!e.name) return vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
    w->t[w->n++] = e;
    return VLA_OK;
}

vla_status vla_safetensors_writer_set_meta(vla_safetensors_writer *w, const char *key, const char *value) {
    if (!key || !value) return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: metadata key or value is NULL");
    if (!is_utf8(key) || !is_utf8(value))
        return vla_error(VLA_ERR_INVALID_ARG, "safetensors writer: metadata '%s' is not valid UTF-8", key);
    char *v = strdup(value);
    if (!v) return vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
    for (size_t i = 0; i < w->nm; i++)
        if (strcmp(w->mkey[i], key) == 0) {
            free(w->mval[i]);
            w->mval[i] = v;
            return VLA_OK;
        }
    if (w->nm == w->capm) {
        size_t cap = w->capm ? 2 * w->capm : 8;
        char **k = realloc(w->mkey, cap * sizeof *k);
        if (k) w->mkey = k;
        char **vv = k ? realloc(w->mval, cap * sizeof *vv) : NULL;
        if (vv) w->mval = vv;
        if (!k || !vv) {
            free(v);
            return vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
        }
        w->capm = cap;
    }
    w->mkey[w->nm] = strdup(key);
    if (!w->mkey[w->nm]) {
        free(v);
        return vla_error(VLA_ERR_NOMEM, "safetensors writer: out of memory");
    }
    w->mval[w->nm++] = v;
    return VLA_OK;
}

/* The reference orders its Dtype enum by alignment and lays tensors out by
 * descending dtype, then name; this rank reproduces that order for ours. */
static int dtype_rank(vla_dtype t) {
    switch (t) {
    case VLA_U8: return 0;
    case VLA_F8E5M2: return 1;
    case VLA_F8E4M3: return 2;
    case VLA_F16: return 3;
    case VLA_BF16: return 4;
    case VLA_I32: return 5;
    case VLA_F32: return 6;
    case VLA_I64: return 7;
    default: return -1;
    }
}

static int cmp_entry_layout(const void *a, const void *b) {
    const writer_entry *x = *(writer_entry *const *)a, *y = *(writer_entry *const *)b;
    int rx = dtype_rank(x->dtype), ry = dtype_rank(y->dtype);
    if (rx != ry) return ry - rx;
    return strcmp(x->name, y->name);
}

static int cmp_str_idx(const void *a, const void *b) {
    return strcmp(**(char **const *)a, **(char **const *)b);
}

/* The JSON header, compact, "__metadata__" first (keys sorted), then tensors
 * in layout order. */
static vla_status build_header(const vla_safetensors_writer *w, writer_entry **order, const char *path,
                               char **out) {
    *out = NULL;
    json_t *root = json_object();
    if (!root) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    bool ok = true;
    if (w->nm) {
        char ***keys = malloc(w->nm * sizeof *keys);
        json_t *meta = json_object();
        ok = keys && meta;
        if (ok)
            ok = json_object_set_new(root, "__metadata__", meta) == 0; /* steals meta even on failure */
        else
            json_decref(meta);
        for (size_t i = 0; ok && i < w->nm; i++) keys[i] = &w->mkey[i];
        if (ok) qsort(keys, w->nm, sizeof *keys, cmp_str_idx);
        for (size_t i = 0; ok && i < w->nm; i++) {
            size_t k = (size_t)(keys[i] - w->mkey);
            ok = json_object_set_new(meta, w->mkey[k], json_string(w->mval[k])) == 0;
        }
        free(keys);
    }
    uint64_t off = 0;
    for (size_t i = 0; ok && i < w->n; i++) {
        const writer_entry *e = order[i];
        json_t *info = json_object(), *shape = json_array(), *offs = json_array();
        ok = info && shape && offs;
        for (int d = 0; ok && d < e->ndim; d++) ok = json_array_append_new(shape, json_integer(e->shape[d])) == 0;
        uint64_t end = off;
        if (ok && (__builtin_add_overflow(off, (uint64_t)e->nbytes, &end) || end > (uint64_t)INT64_MAX)) {
            json_decref(info);
            json_decref(shape);
            json_decref(offs);
            json_decref(root);
            return vla_error(VLA_ERR_INVALID_ARG, "%s: total tensor size overflows at tensor '%s'", path, e->name);
        }
        ok = ok && json_array_append_new(offs, json_integer((json_int_t)off)) == 0 &&
             json_array_append_new(offs, json_integer((json_int_t)end)) == 0;
        ok = ok && json_object_set_new(info, "dtype", json_string(vla_dtype_safetensors_name(e->dtype))) == 0;
        ok = ok && json_object_set(info, "shape", shape) == 0 && json_object_set(info, "data_offsets", offs) == 0;
        ok = ok && json_object_set(root, e->name, info) == 0;
        json_decref(shape);
        json_decref(offs);
        json_decref(info);
        off = end;
    }
    char *text = ok ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text) return vla_error(VLA_ERR_NOMEM, "%s: cannot build the safetensors header", path);
    *out = text;
    return VLA_OK;
}

vla_status vla_safetensors_writer_write(vla_safetensors_writer *w, const char *path) {
    writer_entry **order = malloc((w->n ? w->n : 1) * sizeof *order);
    if (!order) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < w->n; i++) order[i] = &w->t[i];
    qsort(order, w->n, sizeof *order, cmp_entry_layout);

    char *header = NULL;
    vla_status s = build_header(w, order, path, &header);
    if (s != VLA_OK) {
        free(order);
        return s;
    }
    /* Pad with spaces so the data region (and, given the layout order, every
     * tensor) starts at a multiple of 8 bytes. */
    size_t hlen = strlen(header), pad = (8 - hlen % 8) % 8;
    if (hlen + pad > VLA_SAFETENSORS_MAX_HEADER) {
        free(header);
        free(order);
        return vla_error(VLA_ERR_INVALID_ARG, "%s: header of %zu bytes exceeds the %llu-byte limit readers enforce",
                         path, hlen + pad, (unsigned long long)VLA_SAFETENSORS_MAX_HEADER);
    }
    uint8_t prefix[8];
    put_le64(prefix, (uint64_t)(hlen + pad));
    static const char spaces[8] = "        ";

    vla_atomic_file af;
    s = vla_atomic_open(&af, path);
    if (s == VLA_OK) {
        s = vla_atomic_write(&af, prefix, 8);
        if (s == VLA_OK) s = vla_atomic_write(&af, header, hlen);
        if (s == VLA_OK) s = vla_atomic_write(&af, spaces, pad);
        for (size_t i = 0; s == VLA_OK && i < w->n; i++)
            if (order[i]->nbytes) s = vla_atomic_write(&af, order[i]->data, order[i]->nbytes);
        if (s == VLA_OK)
            s = vla_atomic_commit(&af);
        else
            vla_atomic_abort(&af);
    }
    free(header);
    free(order);
    return s;
}
