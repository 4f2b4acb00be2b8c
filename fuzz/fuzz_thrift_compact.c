/* fuzz_thrift_compact.c — libFuzzer target for the Thrift compact decoder:
 * the input is walked as a generic struct (skip), decoded as a Parquet page
 * header, and wrapped as a Parquet footer ("PAR1" + input + length + "PAR1")
 * so FileMetaData, schema, row group and column metadata decoding all see it.
 * A read past the input or an unbounded allocation shows up under ASan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/parquet.h"
#include "io/parquet_internal.h"
#include "io/thrift_compact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vla_thrift_reader r;
    vla_thrift_reader_init(&r, data, size, 0);
    (void)vla_thrift_skip(&r, VLA_TC_STRUCT);

    vla_thrift_reader_init(&r, data, size, 0);
    vla_pq_page_header h;
    (void)vla_pq_read_page_header(&r, &h);

    uint8_t *file = malloc(size + 12);
    if (!file) return 0;
    memcpy(file, "PAR1", 4);
    memcpy(file + 4, data, size);
    uint32_t n = (uint32_t)size;
    memcpy(file + 4 + size, &n, 4);
    memcpy(file + 8 + size, "PAR1", 4);
    vla_parquet_limits lim = {.max_page_bytes = 1 << 20, .max_chunk_values = 1 << 16, .max_footer_bytes = 1 << 20};
    vla_parquet_file *pq;
    if (vla_parquet_open_memory(file, size + 12, "fuzz", &lim, &pq) == VLA_OK) {
        for (int c = 0; c < vla_parquet_num_columns(pq); c++) sink += strlen(vla_parquet_column_at(pq, c)->path);
        vla_parquet_close(pq);
    }
    free(file);
    return 0;
}
