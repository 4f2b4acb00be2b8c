/* msgpack_np.h — openpi's wire values: msgpack maps whose NumPy arrays are
 * encoded as msgpack-numpy encodes them (openpi_client/msgpack_numpy.py),
 * read with msgpack-c and written byte for byte as Python's msgpack packs
 * them (docs/serve.md, "The protocol, as bytes").
 *
 *   ndarray   → map {b"__ndarray__": true, b"data": bin, b"dtype": str, b"shape": [int…]}
 *   np scalar → map {b"__npgeneric__": true, b"data": int|float|bool, b"dtype": str}
 * The marker keys are bytes (msgpack bin) when packed by openpi_client
 * (Python bytes keys with use_bin_type), str when packed by others; both are
 * read. dtype is NumPy's type string: byte order ('<' little, '>' big, '|'
 * not applicable, '=' native), kind (f float, i signed, u unsigned, b bool)
 * and size in bytes ("<f4", "|u1", "<i8", "|b1").
 *
 * A request is one msgpack map. Nested maps are flattened with '/' between
 * the keys ({"images": {"top": …}} → "images/top"), as openpi's own
 * observation keys are written ("observation/image"), so one key mapping
 * (--serve.keys) serves both styles. Every field keeps pointers into the
 * frame it was parsed from (and into msgpack-c's zone): the frame must
 * outlive the map.
 *
 * Before msgpack-c sees a frame, a walk over its bytes checks that every
 * length and element count fits in what is left of the frame, so a header
 * claiming 2³² elements is refused instead of making msgpack-c allocate
 * for them. Fuzzed: fuzz/fuzz_serve_request.c. */
#ifndef VLA_SERVE_MSGPACK_NP_H
#define VLA_SERVE_MSGPACK_NP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define VLA_NP_MAX_DIMS 8
#define VLA_NP_MAX_KEY 256
#define VLA_NP_MAX_FIELDS 256
#define VLA_NP_MAX_DEPTH 4

typedef enum {
    VLA_NP_ARRAY,  /* an ndarray (or an np scalar: ndim 0) */
    VLA_NP_STRING, /* a msgpack str (or bin that holds no array: bytes, e.g. a prompt sent as bytes) */
    VLA_NP_INT,
    VLA_NP_FLOAT,
    VLA_NP_BOOL,
    VLA_NP_NIL,
    VLA_NP_LIST,   /* a msgpack array (a list of plain numbers: read with vla_np_to_f64) */
} vla_np_kind;

typedef enum { VLA_NP_F, VLA_NP_I, VLA_NP_U, VLA_NP_B } vla_np_dkind;

/* A NumPy dtype string, parsed. */
typedef struct {
    vla_np_dkind kind;
    int size;        /* bytes per element */
    bool big_endian; /* '>' */
    char str[16];    /* as sent, e.g. "<f4" */
} vla_np_dtype;

typedef struct {
    char key[VLA_NP_MAX_KEY]; /* flattened key ("images/top") */
    vla_np_kind kind;
    /* VLA_NP_ARRAY */
    vla_np_dtype dtype;
    int ndim;
    int64_t shape[VLA_NP_MAX_DIMS];
    int64_t numel;
    const uint8_t *data; /* numel · dtype.size bytes, unaligned, in the sender's byte order */
    /* VLA_NP_STRING: str/len (not NUL-terminated); VLA_NP_INT/FLOAT/BOOL: the value (also set for a 0-d array) */
    const char *str;
    size_t len;
    int64_t i;
    double f;
    bool b;
    /* VLA_NP_LIST: the msgpack array (msgpack_object *), its length */
    const void *list;
    int64_t list_len;
} vla_np_field;

typedef struct {
    int n;
    vla_np_field *fields; /* [n], malloc'd */
    void *unpacked;       /* msgpack_unpacked (owns the zone the fields point into) */
} vla_np_map;

/* Parse one request frame (a msgpack map). Errors name the key and what is
 * wrong ("observation.state: shape [3] holds 3 elements of <f4 = 12 bytes,
 * data has 8"); every byte of the frame must belong to the one map. */
vla_status vla_np_parse(const uint8_t *buf, size_t n, vla_np_map *out);
void vla_np_map_free(vla_np_map *m);
/* The field with this flattened key, or NULL. */
const vla_np_field *vla_np_get(const vla_np_map *m, const char *key);

/* "<f4" etc. → dtype; false (with a message) when NumPy would not send it
 * or it is not a number type vla.c reads (complex, object, void, strings). */
vla_status vla_np_parse_dtype(const char *s, size_t len, vla_np_dtype *out);

/* Element i of a numeric array (or list, or scalar) as a double; the field
 * must be numeric (vla_np_is_numeric). */
bool vla_np_is_numeric(const vla_np_field *f);
double vla_np_at(const vla_np_field *f, int64_t i);
/* How many numbers the field holds (arrays: numel; lists: length; scalars: 1). */
int64_t vla_np_count(const vla_np_field *f);

/* ---- writing: msgpack bytes as openpi_client's Packer writes them -------------
 * A growable buffer and the few shapes a reply needs. Maps are written with
 * their entry count first, keys as msgpack str, floats as float64 (Python
 * floats), arrays as msgpack-numpy ndarrays with bin marker keys. */
typedef struct {
    void *sbuf; /* msgpack_sbuffer */
    void *pk;   /* msgpack_packer */
} vla_np_writer;

vla_status vla_np_writer_init(vla_np_writer *w);
void vla_np_writer_free(vla_np_writer *w);
void vla_np_writer_reset(vla_np_writer *w);
const uint8_t *vla_np_writer_data(const vla_np_writer *w, size_t *n);
void vla_np_put_map(vla_np_writer *w, int entries);
void vla_np_put_list(vla_np_writer *w, int entries);
void vla_np_put_str(vla_np_writer *w, const char *s);
void vla_np_put_int(vla_np_writer *w, int64_t v);
void vla_np_put_float(vla_np_writer *w, double v);
void vla_np_put_bool(vla_np_writer *w, bool v);
void vla_np_put_nil(vla_np_writer *w);
/* An ndarray of float32 (dtype "<f4") with the given shape. */
void vla_np_put_f32_array(vla_np_writer *w, const float *data, const int64_t *shape, int ndim);

#endif
