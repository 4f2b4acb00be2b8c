/* fuzz_parquet_file.c — libFuzzer target for the whole Parquet reader: opens
 * the input as an in-memory file and decodes every column chunk of every row
 * group (page headers, decompression, levels, every value encoding), then
 * touches every value, offset and list level it returns, and renders small
 * files as JSON (structs included). Small limits keep a
 * hostile file from asking for gigabytes. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Everything read is folded in here, so no load is optimised away. */
static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vla_parquet_limits lim = {.max_page_bytes = 4 << 20, .max_chunk_values = 1 << 18, .max_footer_bytes = 1 << 20};
    vla_parquet_file *pq;
    if (vla_parquet_open_memory(data, size, "fuzz", &lim, &pq) != VLA_OK) return 0;
    for (int g = 0; g < vla_parquet_num_row_groups(pq) && g < 16; g++) {
        for (int c = 0; c < vla_parquet_num_columns(pq) && c < 64; c++) {
            vla_parquet_column col;
            if (vla_parquet_read_column(pq, g, c, &col) == VLA_OK) {
                int w = col.type == VLA_PQ_BOOLEAN ? 1 : col.type == VLA_PQ_INT32 || col.type == VLA_PQ_FLOAT ? 4
                      : col.type == VLA_PQ_INT96 ? 12 : col.type == VLA_PQ_FIXED_LEN_BYTE_ARRAY ? col.type_length : 8;
                for (int64_t i = 0; i < col.num_values; i++) {
                    sink += col.valid[i];
                    if (col.values) sink += ((const uint8_t *)col.values)[i * w + w - 1];
                    else if (col.offsets[i + 1] > col.offsets[i]) sink += col.data[col.offsets[i + 1] - 1];
                }
                for (int l = 0; l < col.max_rep; l++)
                    for (int64_t i = 0; i < col.list[l].count; i++) {
                        if (col.list[l].offsets[i + 1] < col.list[l].offsets[i]) abort();
                        sink += col.list[l].valid[i];
                    }
            }
            vla_parquet_column_free(&col);
        }
    }
    float *m;
    int64_t rows;
    int width;
    if (vla_parquet_num_columns(pq) > 0 &&
        vla_parquet_read_f32_matrix(pq, -1, vla_parquet_column_at(pq, 0)->path, &m, &rows, &width) == VLA_OK)
        free(m);
    json_t *j;
    /* JSON costs a node per value: only for small files, to keep the fuzzer fast */
    if (vla_parquet_num_row_groups(pq) <= 16 && vla_parquet_num_rows(pq) >= 0 && vla_parquet_num_rows(pq) <= 64 &&
        vla_parquet_to_json(pq, &j) == VLA_OK)
        json_decref(j);
    vla_parquet_close(pq);
    return 0;
}
