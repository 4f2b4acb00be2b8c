/* cmd_parquet.c — `vla parquet`: look inside Parquet files with vla.c's own
 * reader: `schema` (columns, levels, types, codecs), `cat` (rows as JSON
 * lines) and `check` (decode every page of every column; exit 1 with the
 * file, column, row group and byte offset of the first problem). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/parquet.h"

static const char *type_name(int t) {
    static const char *names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < 8 ? names[t] : "GROUP";
}

static const char *codec_name(int c) {
    switch (c) {
    case VLA_PQ_UNCOMPRESSED: return "UNCOMPRESSED";
    case VLA_PQ_SNAPPY: return "SNAPPY";
    case VLA_PQ_GZIP: return "GZIP";
    case VLA_PQ_ZSTD: return "ZSTD";
    default: return "other";
    }
}

static int cmd_schema(int argc, char **argv) {
    const vla_command_spec spec = {"vla parquet schema", "FILE", "Print a Parquet file's columns, levels, types and codecs.",
                                   NULL, NULL, 0, 1, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    vla_parquet_file *pq;
    vla_status st = vla_parquet_open(res.positional[0], &pq);
    if (st != VLA_OK) return vla_cli_fail(st);
    printf("%s: %lld rows in %d row groups, %d leaf columns, written by %s\n", res.positional[0],
           (long long)vla_parquet_num_rows(pq), vla_parquet_num_row_groups(pq), vla_parquet_num_columns(pq),
           vla_parquet_created_by(pq) ? vla_parquet_created_by(pq) : "(unknown)");
    for (int c = 0; c < vla_parquet_num_columns(pq); c++) {
        const vla_parquet_column_info *ci = vla_parquet_column_at(pq, c);
        printf("  %-40s %-20s def %d rep %d%s %s\n", ci->path, type_name(ci->type), ci->max_def, ci->max_rep,
               ci->is_string ? " STRING" : "", vla_parquet_num_row_groups(pq) ? codec_name(vla_parquet_chunk_codec(pq, 0, c)) : "");
    }
    vla_parquet_close(pq);
    return 0;
}

static int cmd_cat(int argc, char **argv) {
    int64_t limit = -1;
    const vla_flag flags[] = {{"limit", VLA_FLAG_INT, &limit, "N", "print at most N rows"}};
    const vla_command_spec spec = {"vla parquet cat", "FILE", "Print a Parquet file's rows as JSON lines.",
                                   "Each top-level field with one leaf column becomes a key; lists become arrays, "
                                   "binary values upper-case hex.",
                                   flags, 1, 1, 1};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    vla_parquet_file *pq;
    vla_status st = vla_parquet_open(res.positional[0], &pq);
    if (st != VLA_OK) return vla_cli_fail(st);
    json_t *all;
    st = vla_parquet_to_json(pq, &all);
    vla_parquet_close(pq);
    if (st != VLA_OK) return vla_cli_fail(st);
    json_t *rows = json_object_get(all, "rows");
    for (size_t r = 0; r < json_array_size(rows) && (limit < 0 || (int64_t)r < limit); r++) {
        char *s = json_dumps(json_array_get(rows, r), JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s) puts(s);
        free(s);
    }
    json_decref(all);
    return 0;
}

static int cmd_check(int argc, char **argv) {
    const vla_command_spec spec = {"vla parquet check", "FILE...", "Decode every page of every column of Parquet files.",
                                   "Exit status 1 at the first file that does not decode, with its column, row group "
                                   "and byte offset.",
                                   NULL, 0, 1, 16};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    for (int i = 0; i < res.n_positional; i++) {
        vla_parquet_file *pq;
        vla_status st = vla_parquet_open(res.positional[i], &pq);
        if (st != VLA_OK) return vla_cli_fail(st);
        int64_t values = 0;
        for (int g = 0; g < vla_parquet_num_row_groups(pq) && st == VLA_OK; g++)
            for (int c = 0; c < vla_parquet_num_columns(pq) && st == VLA_OK; c++) {
                vla_parquet_column col;
                st = vla_parquet_read_column(pq, g, c, &col);
                values += col.num_values;
                vla_parquet_column_free(&col);
            }
        if (st == VLA_OK)
            printf("%s: ok, %lld rows, %d row groups, %d columns, %lld values\n", res.positional[i],
                   (long long)vla_parquet_num_rows(pq), vla_parquet_num_row_groups(pq), vla_parquet_num_columns(pq),
                   (long long)values);
        vla_parquet_close(pq);
        if (st != VLA_OK) return vla_cli_fail(st);
    }
    return 0;
}

static const vla_cli_command parquet_commands[] = {
    {"schema", "columns, definition/repetition levels, types and codecs", cmd_schema},
    {"cat", "rows as JSON lines", cmd_cat},
    {"check", "decode every page; exit 1 naming the first problem", cmd_check},
};

int vla_cmd_parquet(int argc, char **argv) {
    return vla_cli_dispatch("vla parquet", parquet_commands, (int)(sizeof parquet_commands / sizeof parquet_commands[0]),
                            argc, argv);
}
