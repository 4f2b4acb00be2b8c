/* safetensors.h — the safetensors tensor file format: a zero-copy reader over
 * a read-only mmap (or any caller-owned buffer) and an atomic writer.
 *
 * Layout (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * u64 N, then N bytes of UTF-8 JSON, then the data region. The JSON maps each
 * tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
 * relative to the data region) and may hold "__metadata__": {str: str}.
 * Tensors are little-endian and row-major; together they must cover the data
 * region exactly, with no holes and no overlaps.
 *
 * The reader checks all of that before handing out a pointer, so every
 * tensor's [data, data + nbytes) lies inside the buffer. Anything else is a
 * VLA_ERR_FORMAT whose message names the file, the tensor and the problem;
 * a dtype that safetensors knows but vla does not (F64, I8, BOOL, …) is
 * VLA_ERR_UNSUPPORTED.
 *
 * The writer lays tensors out as the reference implementation does (by
 * descending alignment, then by name) after a header padded with spaces to a
 * multiple of 8 bytes, so every tensor is aligned to its element size in the
 * file and therefore in the mapping. The file appears atomically. */
#ifndef VLA_IO_SAFETENSORS_H
#define VLA_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/dtype.h"

#define VLA_SAFETENSORS_MAX_DIMS 8
/* The reference implementation's limit on the JSON header. */
#define VLA_SAFETENSORS_MAX_HEADER ((uint64_t)100000000)

typedef struct {
    const char *name;
    vla_dtype dtype;
    int ndim; /* 0 for a scalar */
    int64_t shape[VLA_SAFETENSORS_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
    uint64_t begin, end; /* data_offsets, relative to the data region */
    /* Points into the mapping/buffer. Aligned to the element size when the
     * file was written by an aligning writer (this one, the reference); a
     * foreign file may leave it unaligned, so read through memcpy or
     * vla_safetensors_load_f32 unless you have checked. */
    const void *data;
} vla_safetensors_tensor;

typedef struct {
    char *what;              /* file path or caller's name, used in messages */
    const uint8_t *buf;      /* whole file */
    size_t size;
    int mapped;              /* buf is our mmap (unmapped by close) */
    uint64_t header_len;     /* N */
    const uint8_t *data;     /* data region: buf + 8 + N */
    size_t data_len;
    vla_safetensors_tensor *tensors; /* sorted by name */
    size_t n_tensors;
    const char **meta_keys;  /* sorted by key */
    const char **meta_values;
    size_t n_meta;
    void *json;              /* the parsed header; names and metadata point into it */
} vla_safetensors;

/* Map `path` read-only and parse it. On failure `st` is left closed (safe to
 * pass to close). The mapping, and every pointer handed out (names,
 * metadata, tensor data), lives until vla_safetensors_close. As with any
 * mmap, a file truncated by another process while mapped makes reads past
 * its new end fault (SIGBUS); files are replaced atomically, never
 * truncated, by vla's writers. */
vla_status vla_safetensors_open(const char *path, vla_safetensors *st);
/* Parse a whole file held in `buf` (not copied: it must outlive `st`).
 * `what` names it in error messages. */
vla_status vla_safetensors_parse(const void *buf, size_t len, const char *what, vla_safetensors *st);
void vla_safetensors_close(vla_safetensors *st);

size_t vla_safetensors_count(const vla_safetensors *st);
/* i-th tensor in name order (NULL if out of range). */
const vla_safetensors_tensor *vla_safetensors_at(const vla_safetensors *st, size_t i);
/* NULL if absent (no error recorded). */
const vla_safetensors_tensor *vla_safetensors_find(const vla_safetensors *st, const char *name);
/* Like find, but a missing tensor is VLA_ERR_NOT_FOUND with a message. */
vla_status vla_safetensors_get(const vla_safetensors *st, const char *name, const vla_safetensors_tensor **out);

/* __metadata__: value for key, or NULL. */
const char *vla_safetensors_meta_get(const vla_safetensors *st, const char *key);
size_t vla_safetensors_meta_count(const vla_safetensors *st);
/* i-th metadata entry in key order; VLA_ERR_INVALID_ARG if out of range. */
vla_status vla_safetensors_meta_at(const vla_safetensors *st, size_t i, const char **key, const char **value);

/* Convert tensor `name` (any dtype) to f32 into dst, which holds `count`
 * floats; count must equal the tensor's element count. Handles unaligned data. */
vla_status vla_safetensors_load_f32(const vla_safetensors *st, const char *name, float *dst, size_t count);
/* Same for a tensor already looked up. */
vla_status vla_safetensors_tensor_to_f32(const vla_safetensors *st, const vla_safetensors_tensor *t, float *dst,
                                         size_t count);

/* ---- writer ------------------------------------------------------------- */

typedef struct vla_safetensors_writer vla_safetensors_writer;

vla_status vla_safetensors_writer_new(vla_safetensors_writer **out);
/* Record a tensor. `data` (numel * dtype size bytes, row-major,
 * little-endian) is not copied: it must stay valid until write returns.
 * The name and shape are copied. Duplicate names, "__metadata__", rank > 8,
 * negative dims and sizes that overflow are VLA_ERR_INVALID_ARG. */
vla_status vla_safetensors_writer_add(vla_safetensors_writer *w, const char *name, vla_dtype dtype, int ndim,
                                      const int64_t *shape, const void *data);
/* Set (or replace) a __metadata__ entry; both strings are copied. */
vla_status vla_safetensors_writer_set_meta(vla_safetensors_writer *w, const char *key, const char *value);
/* Write everything to `path` atomically (temp file, fsync, rename). */
vla_status vla_safetensors_writer_write(vla_safetensors_writer *w, const char *path);
void vla_safetensors_writer_free(vla_safetensors_writer *w);

#endif
