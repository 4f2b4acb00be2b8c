/* parquet_internal.h — what parquet.c, parquet_encoding.c and parquet_write.c
 * share and nobody else needs: the file handle, column chunk metadata, and
 * the bit-level encoders/decoders (RLE/bit-packed hybrid, delta, byte stream
 * split) and codecs. */
#ifndef VLA_IO_PARQUET_INTERNAL_H
#define VLA_IO_PARQUET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "io/parquet.h"
#include "io/thrift_compact.h"

/* Encodings, numbered as in parquet.thrift. */
enum {
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

/* Page types. */
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

typedef struct vla_parquet_chunk {
    int has_meta;
    int type;
    int codec;
    int64_t num_values;
    int64_t total_compressed_size;
    int64_t total_uncompressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1 when absent */
} vla_parquet_chunk;

typedef struct {
    char *key, *value;
} pq_kv;

struct vla_parquet_file {
    char *path;
    const uint8_t *data;
    size_t size;
    int64_t footer_start;         /* first byte of the Thrift footer */
    int mapped;                   /* data is an mmap of the file */
    vla_parquet_limits limits;
    int64_t num_rows;
    char *created_by;
    int nnodes;
    vla_parquet_node *nodes;
    int ncols;
    vla_parquet_column_info *cols;
    int nrg;
    vla_parquet_row_group *rgs;
    int nkv;
    pq_kv *kv;
};

/* A decoded PageHeader (the fields the reader uses). */
typedef struct {
    int type;
    int32_t usize, csize;
    int has_v1, has_v2, has_dict;
    int32_t num_values, enc, def_enc, rep_enc;
    int32_t v2_nulls, v2_rows, v2_def_len, v2_rep_len;
    int v2_compressed;
} pq_page_header;

/* Decode one PageHeader at the reader's cursor. */
vla_status pq_read_page_header(vla_thrift_reader *r, pq_page_header *h);

/* ---- decoding primitives (parquet_encoding.c). All are bounded by their
 * input length and return VLA_ERR_FORMAT with a short reason (no context:
 * the caller adds file/column/offset). ---- */

/* Byte width of a fixed-size physical type (BOOLEAN 1 as we store it). */
int pq_type_width(int type, int type_length);

typedef struct {
    const uint8_t *p, *end;
    int bit_width;
    int64_t rle_left;      /* values left in the current RLE run */
    uint64_t rle_value;
    int64_t bp_left;       /* values left in the current bit-packed run */
    const uint8_t *bp;     /* start of bit-packed data */
    uint64_t bp_pos;       /* bit position in bp */
    size_t bp_bytes;
} pq_rle;

void pq_rle_init(pq_rle *d, const uint8_t *p, size_t n, int bit_width);
/* Next n values as uint32. */
vla_status pq_rle_get(pq_rle *d, uint32_t *out, int64_t n);

/* Decode `n` levels (RLE hybrid, bit width from max_level) into out, checking
 * each is ≤ max_level. */
vla_status pq_decode_levels(const uint8_t *p, size_t len, int max_level, int64_t n, uint8_t *out);

/* DELTA_BINARY_PACKED: decode exactly n values (int32 when is32) into out;
 * *used = bytes consumed. */
vla_status pq_delta_decode(const uint8_t *p, size_t len, int is32, int64_t n, void *out, size_t *used);
/* Number of values a DELTA_BINARY_PACKED stream declares. */
vla_status pq_delta_count(const uint8_t *p, size_t len, int64_t *n);

/* Decompress a page. */
vla_status pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n);

/* ---- encoding primitives (used by the writer) ---- */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int oom;
} pq_buf;

void pq_buf_put(pq_buf *b, const void *d, size_t n);
void pq_buf_u32(pq_buf *b, uint32_t v);
void pq_buf_free(pq_buf *b);
/* RLE/bit-packed hybrid of n values with the given bit width. */
void pq_rle_encode(pq_buf *b, const uint32_t *v, int64_t n, int bit_width);
int pq_bit_width(uint64_t max_value);
/* Compress with a codec into a buffer (*out malloc'd). */
vla_status pq_compress(int codec, const uint8_t *src, size_t n, uint8_t **out, size_t *out_n);

#endif
