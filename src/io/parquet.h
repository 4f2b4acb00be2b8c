/* parquet.h — read and write Apache Parquet files, written here from the
 * public spec (no C Parquet library exists in Debian).
 *
 * Reading: vla_parquet_open() maps the file and decodes the Thrift footer into
 * a schema tree, a list of leaf columns (with their max definition and
 * repetition levels and logical types) and the row groups. Any one column
 * chunk of any one row group is then decoded on demand into a
 * vla_parquet_column: values, validity, and for list columns the offsets of
 * each list level (Arrow-style). Physical types BOOLEAN, INT32, INT64, INT96,
 * FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY; encodings PLAIN,
 * PLAIN_DICTIONARY/RLE_DICTIONARY, RLE, DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT; data pages v1
 * and v2; codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD.
 *
 * Every error names the file and, where it applies, the column, the row group
 * and the byte offset in the file.
 *
 * After open, a handle is read-only: several threads may decode columns of
 * the same file at once (each call has its own buffers).
 *
 * Writing: see vla_parquet_writer below (parquet_write.c). */
#ifndef VLA_IO_PARQUET_H
#define VLA_IO_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Physical types, numbered as in parquet.thrift. */
typedef enum {
    VLA_PQ_BOOLEAN = 0,
    VLA_PQ_INT32 = 1,
    VLA_PQ_INT64 = 2,
    VLA_PQ_INT96 = 3,
    VLA_PQ_FLOAT = 4,
    VLA_PQ_DOUBLE = 5,
    VLA_PQ_BYTE_ARRAY = 6,
    VLA_PQ_FIXED_LEN_BYTE_ARRAY = 7,
    VLA_PQ_GROUP = -1, /* schema node that is not a leaf */
} vla_pq_type;

enum { VLA_PQ_REQUIRED = 0, VLA_PQ_OPTIONAL = 1, VLA_PQ_REPEATED = 2 };

/* Codecs, numbered as in parquet.thrift. */
enum { VLA_PQ_UNCOMPRESSED = 0, VLA_PQ_SNAPPY = 1, VLA_PQ_GZIP = 2, VLA_PQ_ZSTD = 6 };

/* Converted types we name (parquet.thrift numbering); -1 when absent. */
enum { VLA_PQ_CT_UTF8 = 0, VLA_PQ_CT_MAP = 1, VLA_PQ_CT_LIST = 3 };
/* Logical types (the LogicalType union's field ids); 0 when absent. */
enum { VLA_PQ_LT_STRING = 1, VLA_PQ_LT_MAP = 2, VLA_PQ_LT_LIST = 3 };

#define VLA_PQ_MAX_LEVEL 8 /* deepest list nesting we decode */

typedef struct {
    char *name;
    int type;            /* vla_pq_type; VLA_PQ_GROUP for groups */
    int type_length;     /* FIXED_LEN_BYTE_ARRAY width */
    int repetition;      /* VLA_PQ_REQUIRED / OPTIONAL / REPEATED */
    int num_children;
    int converted_type;  /* -1 when absent */
    int logical_type;    /* 0 when absent */
    int parent;          /* index in schema[], -1 for the root */
    int first_child;     /* index of the first child, -1 for leaves */
    int leaf;            /* index in columns[], -1 for groups */
} vla_parquet_node;

typedef struct {
    char *path;          /* components joined with '.' (e.g. "action.list.element") */
    const char *top;     /* name of the top-level field it belongs to */
    int type;            /* physical type */
    int type_length;
    int max_def, max_rep;
    int node;            /* index of the leaf in schema[] */
    int top_node;        /* index of the top-level field in schema[] */
    int is_string;       /* BYTE_ARRAY annotated STRING/UTF8 */
    /* Per repetition level k (0..max_rep-1): the definition level at which
     * the slot holding list k+1 is non-null, and at which that list has at
     * least one element. Used to rebuild offsets and validity. */
    int def_present[VLA_PQ_MAX_LEVEL];
    int def_repeated[VLA_PQ_MAX_LEVEL];
} vla_parquet_column_info;

typedef struct {
    int64_t num_rows;
    int64_t total_byte_size;
    struct vla_parquet_chunk *chunks; /* one per leaf column */
} vla_parquet_row_group;

typedef struct vla_parquet_file vla_parquet_file;

/* Limits that bound what a (possibly hostile) file can make us allocate. */
typedef struct {
    int64_t max_page_bytes;     /* largest uncompressed page (default 1 GiB) */
    int64_t max_chunk_values;   /* most level entries in one column chunk (default 2^27) */
    int64_t max_footer_bytes;   /* default 256 MiB */
} vla_parquet_limits;

/* Open a file (mmap'ed) and decode its footer. */
vla_status vla_parquet_open(const char *path, vla_parquet_file **out);
/* Same, over bytes in memory (not copied; must outlive the handle). `name`
 * appears in error messages. `limits` may be NULL for the defaults. */
vla_status vla_parquet_open_memory(const void *data, size_t size, const char *name,
                                   const vla_parquet_limits *limits, vla_parquet_file **out);
void vla_parquet_close(vla_parquet_file *pq);

const char *vla_parquet_path(const vla_parquet_file *pq);
int64_t vla_parquet_num_rows(const vla_parquet_file *pq);
int vla_parquet_num_row_groups(const vla_parquet_file *pq);
int64_t vla_parquet_row_group_rows(const vla_parquet_file *pq, int row_group);
int vla_parquet_num_columns(const vla_parquet_file *pq);
const vla_parquet_column_info *vla_parquet_column_at(const vla_parquet_file *pq, int column);
int vla_parquet_num_nodes(const vla_parquet_file *pq);
const vla_parquet_node *vla_parquet_node_at(const vla_parquet_file *pq, int node);
/* Key-value metadata (e.g. "ARROW:schema", "huggingface"); NULL when absent. */
const char *vla_parquet_kv(const vla_parquet_file *pq, const char *key);
const char *vla_parquet_created_by(const vla_parquet_file *pq);
/* Codec of a column chunk, or -1 when out of range. */
int vla_parquet_chunk_codec(const vla_parquet_file *pq, int row_group, int column);

/* Find a leaf column by its dotted path ("action.list.element") or by the
 * name of its top-level field when that field has exactly one leaf
 * ("action", "observation.state", "stats/action/min"). Returns its index or
 * -1 (VLA_ERR_NOT_FOUND recorded). */
int vla_parquet_find_column(const vla_parquet_file *pq, const char *name);

/* One decoded column chunk.
 *
 * Slots: a flat column (max_rep 0) has one slot per row. A list column has
 * levels: level 0 slots are rows; list[k] gives, for each slot at level k,
 * the range [offsets[i], offsets[i+1]) of its slots at level k+1 and whether
 * that slot is non-null; slots at level max_rep are the leaf values.
 *
 * Leaf values are stored per slot, nulls included (zero-filled), so slot i
 * is values[i]: int32_t / int64_t / float / double / uint8_t (BOOLEAN) /
 * type_length bytes (FIXED_LEN_BYTE_ARRAY, INT96 as 12 bytes). BYTE_ARRAY
 * slot i is data[offsets[i] .. offsets[i+1]). */
typedef struct {
    int type, type_length, max_def, max_rep;
    int64_t num_rows;       /* rows of the row group */
    int64_t num_values;     /* leaf slots */
    int64_t null_count;     /* leaf slots that are null */
    void *values;           /* NULL for BYTE_ARRAY */
    int64_t *offsets;       /* BYTE_ARRAY: num_values + 1 */
    uint8_t *data;          /* BYTE_ARRAY bytes */
    int64_t data_size;
    uint8_t *valid;         /* num_values bytes, 1 = present */
    struct {
        int64_t count;      /* slots at this level */
        int64_t *offsets;   /* count + 1 */
        uint8_t *valid;     /* count */
    } list[VLA_PQ_MAX_LEVEL];
    /* What the chunk was made of (for tests and tools): a bitmask of value
     * encodings (1 << encoding number) and page counts. */
    uint32_t encodings_seen;
    int pages_v1, pages_v2, dict_pages;
} vla_parquet_column;

/* Decode column `column` of row group `row_group` into *col (which the
 * caller frees with vla_parquet_column_free, also after a failure). */
vla_status vla_parquet_read_column(const vla_parquet_file *pq, int row_group, int column, vla_parquet_column *col);
/* Same, by name (see vla_parquet_find_column). */
vla_status vla_parquet_read_column_by_name(const vla_parquet_file *pq, int row_group, const char *name,
                                           vla_parquet_column *col);
void vla_parquet_column_free(vla_parquet_column *col);

/* A list<float|double> column in which every row holds the same number of
 * non-null elements (LeRobot's observation.state, action), as a dense
 * row-major [rows × width] float array (malloc'd). row_group -1 reads all row
 * groups in order. A scalar FLOAT/DOUBLE column gives width 1. */
vla_status vla_parquet_read_f32_matrix(const vla_parquet_file *pq, int row_group, const char *name,
                                       float **out, int64_t *rows, int *width);
/* A non-null INT64 (or INT32) scalar column as int64 (malloc'd); row_group -1
 * reads all row groups. */
vla_status vla_parquet_read_i64(const vla_parquet_file *pq, int row_group, const char *name, int64_t **out,
                                int64_t *rows);

/* ---- writing (parquet_write.c) ----
 *
 * The writer takes whole columns for one row group at a time: declare the
 * schema, then for each row group fill one vla_parquet_wcolumn per field and
 * call vla_parquet_writer_write_row_group(); vla_parquet_writer_close()
 * writes the footer and commits the file atomically (base/fsutil.h): the
 * target is either the complete new file or untouched. */
typedef enum {
    VLA_PQW_INT32,
    VLA_PQW_INT64,
    VLA_PQW_FLOAT,
    VLA_PQW_DOUBLE,
    VLA_PQW_BOOLEAN,
    VLA_PQW_STRING,     /* BYTE_ARRAY annotated STRING */
    VLA_PQW_BINARY,     /* BYTE_ARRAY, e.g. PNG bytes */
} vla_pqw_type;

typedef struct {
    const char *name;
    vla_pqw_type type;
    int is_list;        /* list<type> (3-level LIST, optional list, optional elements) */
    int nullable;       /* values (or lists) may be null */
} vla_parquet_field;

/* One column's data for a row group. For scalars, slot i is row i. For lists,
 * row r holds slots [list_offsets[r], list_offsets[r+1]).
 * Values: int32_t/int64_t/float/double/uint8_t per slot; strings/binary via
 * byte_offsets (slots + 1) into bytes. `valid` (per slot; NULL = all valid)
 * and `row_valid` (per row for lists; NULL = all present). */
typedef struct {
    const void *values;
    const int64_t *byte_offsets;
    const uint8_t *bytes;
    const uint8_t *valid;
    const int64_t *list_offsets;
    const uint8_t *row_valid;
} vla_parquet_wcolumn;

typedef struct {
    int codec;               /* VLA_PQ_UNCOMPRESSED/SNAPPY/GZIP/ZSTD */
    int dictionary;          /* 1: dictionary-encode a column chunk where that makes it smaller */
    int statistics;          /* 1: write min/max/null_count for numeric columns */
    int page_version;        /* 1 (default) or 2: data page v1 or v2 headers */
    int64_t page_bytes;      /* target uncompressed page size (0: 1 MiB) */
} vla_parquet_write_options;

/* SNAPPY, dictionary where it pays, statistics, v1 pages: what LeRobot's
 * pyarrow writer does. */
vla_parquet_write_options vla_parquet_write_defaults(void);

typedef struct vla_parquet_writer vla_parquet_writer;

vla_status vla_parquet_writer_open(const char *path, const vla_parquet_field *fields, int nfields,
                                   const vla_parquet_write_options *opt, vla_parquet_writer **out);
/* Add key-value metadata written in the footer (copied). */
vla_status vla_parquet_writer_add_kv(vla_parquet_writer *w, const char *key, const char *value);
vla_status vla_parquet_writer_write_row_group(vla_parquet_writer *w, int64_t num_rows,
                                              const vla_parquet_wcolumn *cols);
/* Footer + atomic commit. Frees the writer either way. */
/* Bytes written so far (row groups; the footer comes at close). */
int64_t vla_parquet_writer_bytes(const vla_parquet_writer *w);
vla_status vla_parquet_writer_close(vla_parquet_writer *w);
/* Discard the partial file; the target is untouched. Frees the writer. */
void vla_parquet_writer_abort(vla_parquet_writer *w);


/* ---- JSON view (parquet_json.c), for tests, tools and debugging ---- */
struct json_t;
/* Row `row` of a decoded column as JSON (new reference): null, integer, real,
 * true/false, string (STRING columns), upper-case hex (other byte arrays and
 * FIXED_LEN_BYTE_ARRAY), or nested arrays for lists. */
struct json_t *vla_parquet_value_json(const vla_parquet_column_info *info, const vla_parquet_column *col, int64_t row);
/* The whole file as {"columns":[...],"rows":[{...}]}, one key per top-level
 * field with exactly one leaf, and per struct of scalar leaves (as an object;
 * a null struct shows as an object of nulls). Maps and deeper structs are
 * left out. */
vla_status vla_parquet_to_json(const vla_parquet_file *pq, struct json_t **out);

#endif
