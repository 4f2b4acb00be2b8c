/* thrift_compact.h — the Thrift compact protocol, as Parquet uses it for its
 * footer and page headers: a bounded pull decoder and a small encoder.
 *
 * The decoder never reads past `end`, limits nesting depth, list sizes and
 * string lengths, and reports every failure with the byte offset (relative to
 * the buffer it was given, plus `base_offset` so callers can report absolute
 * file offsets). Parquet's own structs are walked by parquet.c with these
 * primitives; unknown fields are skipped with vla_thrift_skip(). */
#ifndef VLA_IO_THRIFT_COMPACT_H
#define VLA_IO_THRIFT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Compact-protocol wire types. */
enum {
    VLA_TC_STOP = 0,
    VLA_TC_TRUE = 1,
    VLA_TC_FALSE = 2,
    VLA_TC_BYTE = 3,
    VLA_TC_I16 = 4,
    VLA_TC_I32 = 5,
    VLA_TC_I64 = 6,
    VLA_TC_DOUBLE = 7,
    VLA_TC_BINARY = 8,
    VLA_TC_LIST = 9,
    VLA_TC_SET = 10,
    VLA_TC_MAP = 11,
    VLA_TC_STRUCT = 12,
};

#define VLA_THRIFT_MAX_DEPTH 32

typedef struct {
    const uint8_t *start, *p, *end;
    int64_t base_offset;             /* added to offsets in messages */
    int depth;                       /* open structs */
    int16_t last_id[VLA_THRIFT_MAX_DEPTH + 1];
    int64_t max_list;                /* largest list/map accepted */
} vla_thrift_reader;

void vla_thrift_reader_init(vla_thrift_reader *r, const void *data, size_t n, int64_t base_offset);
/* Absolute offset of the cursor (base_offset + consumed bytes). */
int64_t vla_thrift_offset(const vla_thrift_reader *r);

vla_status vla_thrift_struct_begin(vla_thrift_reader *r);
vla_status vla_thrift_struct_end(vla_thrift_reader *r);
/* Next field of the open struct: *type = VLA_TC_STOP at its end. */
vla_status vla_thrift_field(vla_thrift_reader *r, int *type, int *id);
/* Read a value of a field whose wire type is `type` (checked). */
vla_status vla_thrift_bool(vla_thrift_reader *r, int type, int *v);
vla_status vla_thrift_i32(vla_thrift_reader *r, int type, int32_t *v);
vla_status vla_thrift_i64(vla_thrift_reader *r, int type, int64_t *v);
vla_status vla_thrift_double(vla_thrift_reader *r, int type, double *v);
/* Binary/string: a pointer into the buffer, not copied or terminated. */
vla_status vla_thrift_binary(vla_thrift_reader *r, int type, const uint8_t **data, uint32_t *n);
/* List/set header: element type and count (bounded by max_list and by the
 * bytes left, since every element takes at least one byte except bools). */
vla_status vla_thrift_list(vla_thrift_reader *r, int type, int *elem_type, int64_t *n);
/* A list element of type bool is one byte. */
vla_status vla_thrift_list_bool(vla_thrift_reader *r, int *v);
/* Skip one value of any type (bounded recursion). */
vla_status vla_thrift_skip(vla_thrift_reader *r, int type);

/* ---- encoder: appends to a growable buffer ---- */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int depth;
    int16_t last_id[VLA_THRIFT_MAX_DEPTH + 1];
    int oom;                         /* sticky allocation failure */
} vla_thrift_writer;

void vla_thrift_writer_init(vla_thrift_writer *w);
void vla_thrift_writer_free(vla_thrift_writer *w);
void vla_thrift_w_struct_begin(vla_thrift_writer *w);
void vla_thrift_w_struct_end(vla_thrift_writer *w);  /* writes STOP */
void vla_thrift_w_field(vla_thrift_writer *w, int type, int id);
void vla_thrift_w_bool_field(vla_thrift_writer *w, int id, int v);
void vla_thrift_w_i32_field(vla_thrift_writer *w, int id, int32_t v);
void vla_thrift_w_i64_field(vla_thrift_writer *w, int id, int64_t v);
void vla_thrift_w_binary_field(vla_thrift_writer *w, int id, const void *data, size_t n);
void vla_thrift_w_string_field(vla_thrift_writer *w, int id, const char *s);
void vla_thrift_w_list_begin(vla_thrift_writer *w, int elem_type, int64_t n);
void vla_thrift_w_varint(vla_thrift_writer *w, uint64_t v);
void vla_thrift_w_zigzag(vla_thrift_writer *w, int64_t v);
void vla_thrift_w_binary(vla_thrift_writer *w, const void *data, size_t n);
/* VLA_ERR_NOMEM if any append failed. */
vla_status vla_thrift_writer_status(const vla_thrift_writer *w);

#endif
