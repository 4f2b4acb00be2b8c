/* parquet_internal.h — what the Parquet reader and writer files share and
 * nobody else needs: the file handle, column chunk metadata, the bit-level
 * encoders/decoders (RLE/bit-packed hybrid, delta) and codecs
 * (parquet_encoding.c), and the column chunk reader that parquet_chunk.c,
 * parquet_values.c, parquet_dict.c and parquet_assemble.c fill in turn.
 *
 * The reader, in the order a read goes: parquet_footer.c (open: footer →
 * schema, columns, row groups), parquet.c (the public API), parquet_chunk.c
 * (one column chunk's pages), parquet_values.c and parquet_dict.c (a page's
 * values), parquet_assemble.c (levels + values → slots and lists). */
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
} vla_pq_kv;

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
    vla_pq_kv *kv;
};

/* A decoded PageHeader (the fields the reader uses). */
typedef struct {
    int type;
    int32_t usize, csize;
    int has_v1, has_v2, has_dict;
    int32_t num_values, enc, def_enc, rep_enc;
    int32_t v2_nulls, v2_rows, v2_def_len, v2_rep_len;
    int v2_compressed;
    int has_crc;   /* PageHeader.crc present: CRC-32 of the page bytes after the header */
    uint32_t crc;
} vla_pq_page_header;

/* Decode one PageHeader at the reader's cursor. */
vla_status vla_pq_read_page_header(vla_thrift_reader *r, vla_pq_page_header *h);

/* ---- decoding primitives (parquet_encoding.c). All are bounded by their
 * input length and return VLA_ERR_FORMAT with a short reason (no context:
 * the caller adds file/column/offset). ---- */

/* Byte width of a fixed-size physical type (BOOLEAN 1 as we store it). */
int vla_pq_type_width(int type, int type_length);

typedef struct {
    const uint8_t *p, *end;
    int bit_width;
    int64_t rle_left;      /* values left in the current RLE run */
    uint64_t rle_value;
    int64_t bp_left;       /* values left in the current bit-packed run */
    const uint8_t *bp;     /* start of bit-packed data */
    uint64_t bp_pos;       /* bit position in bp */
    size_t bp_bytes;
} vla_pq_rle;

void vla_pq_rle_init(vla_pq_rle *d, const uint8_t *p, size_t n, int bit_width);
/* Next n values as uint32. */
vla_status vla_pq_rle_get(vla_pq_rle *d, uint32_t *out, int64_t n);

/* Decode `n` levels (RLE hybrid, bit width from max_level) into out, checking
 * each is ≤ max_level. */
vla_status vla_pq_decode_levels(const uint8_t *p, size_t len, int max_level, int64_t n, uint8_t *out);

/* DELTA_BINARY_PACKED: decode exactly n values (int32 when is32) into out;
 * *used = bytes consumed. */
vla_status vla_pq_delta_decode(const uint8_t *p, size_t len, int is32, int64_t n, void *out, size_t *used);
/* Number of values a DELTA_BINARY_PACKED stream declares. */
vla_status vla_pq_delta_count(const uint8_t *p, size_t len, int64_t *n);

/* Decompress a page. */
vla_status vla_pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n);

/* ---- encoding primitives (used by the writer) ---- */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int oom;
} vla_pq_buf;

void vla_pq_buf_put(vla_pq_buf *b, const void *d, size_t n);
void vla_pq_buf_u32(vla_pq_buf *b, uint32_t v);
void vla_pq_buf_free(vla_pq_buf *b);
/* RLE/bit-packed hybrid of n values with the given bit width. */
void vla_pq_rle_encode(vla_pq_buf *b, const uint32_t *v, int64_t n, int bit_width);
int vla_pq_bit_width(uint64_t max_value);
/* Compress with a codec into a buffer (*out malloc'd). */
vla_status vla_pq_compress(int codec, const uint8_t *src, size_t n, uint8_t **out, size_t *out_n);

/* ---- the column chunk reader ---- */

/* The state of decoding one column chunk: levels and dense values so far,
 * the dictionary, a page buffer. Zeroed, then filled by vla_pq_read_chunk. */
typedef struct {
    const vla_parquet_file *pq;
    int rg, col;
    const vla_parquet_column_info *info;
    const vla_parquet_chunk *ch;
    int width;               /* bytes per fixed-size value, 0 for BYTE_ARRAY */
    int64_t page_off;        /* file offset of the page being decoded */
    /* levels of all entries so far (NULL when max level is 0) */
    uint8_t *def, *rep;
    int64_t nlev, cap_lev;
    /* non-null values, densely */
    uint8_t *vals;
    int64_t *lens;           /* BYTE_ARRAY lengths */
    int64_t nvals, cap_vals;
    vla_pq_buf bytes;        /* BYTE_ARRAY data */
    /* dictionary */
    int has_dict;
    int64_t dict_n;
    uint8_t *dict;           /* fixed-size values */
    int64_t *dict_off;       /* BYTE_ARRAY: dict_n + 1 */
    uint8_t *dict_data;
    uint8_t *scratch;        /* decompressed page */
    size_t scratch_cap;
} vla_pq_chunk_reader;

/* Decode the chunk cr->ch (cr->pq, rg, col, info, width set) into col; free
 * cr with vla_pq_chunk_reader_free either way (parquet_chunk.c). */
vla_status vla_pq_read_chunk(vla_pq_chunk_reader *cr, vla_parquet_column *col);
void vla_pq_chunk_reader_free(vla_pq_chunk_reader *cr);
/* An error located at file, column, row group and page offset. */
vla_status vla_pq_cfail(vla_pq_chunk_reader *cr, vla_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* That location added to a message a primitive recorded (VLA_OK passes). */
vla_status vla_pq_cwrap(vla_pq_chunk_reader *cr, vla_status st);
/* Grow *p (capacity *cap elements of elem bytes) to hold `need`, doubling. */
vla_status vla_pq_grow(vla_pq_chunk_reader *cr, void **p, int64_t *cap, int64_t need, size_t elem);

/* parquet_values.c: append `count` non-null values of one data page in
 * encoding `enc`. */
vla_status vla_pq_decode_values(vla_pq_chunk_reader *cr, int enc, const uint8_t *p, size_t n, int64_t count);
/* PLAIN values of a fixed-size type into dst. */
vla_status vla_pq_plain_fixed(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst);
/* PLAIN byte arrays: appended to `bytes`, lengths to lens. */
vla_status vla_pq_plain_bytes(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, vla_pq_buf *bytes,
                              int64_t *lens);

/* parquet_dict.c: the chunk's dictionary page (`count` PLAIN values), once. */
vla_status vla_pq_read_dictionary(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, int enc);
/* parquet_dict.c: `count` dictionary indices → values into dst (fixed size)
 * or cr->bytes and lens (byte arrays). */
vla_status vla_pq_dict_decode(vla_pq_chunk_reader *cr, const uint8_t *p, size_t n, int64_t count, uint8_t *dst,
                              int64_t *lens);

/* parquet_assemble.c: the levels and values read so far → col's slots,
 * validity and list offsets (checked against the row group's row count). */
vla_status vla_pq_assemble_column(vla_pq_chunk_reader *cr, vla_parquet_column *col);

#endif
