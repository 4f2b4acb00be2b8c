/* parquet_oracle.h — shared by the Parquet tests that use the DuckDB oracle
 * (tools/oracle/oracle.mjs): finding it, running it, and comparing values.
 * Header-only (static functions) because each test_*.c builds alone. */
#ifndef VLA_TEST_PARQUET_ORACLE_H
#define VLA_TEST_PARQUET_ORACLE_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "test_util.h"

#define ORACLE_UNUSED __attribute__((unused))

static char oracle_cmd[2048];

/* The oracle is a hard requirement: a missing node or DuckDB fails loudly. */
ORACLE_UNUSED static void require_oracle(void) {
    char out[256];
    if (test_run("command -v node >/dev/null 2>&1 && echo yes", out, sizeof out) != 0 || strncmp(out, "yes", 3) != 0)
        fail_msg("node is not installed: the DuckDB Parquet oracle needs it (run scripts/setup.sh test)");
    const char *mods[] = {"@duckdb/node-api", "parquet-wasm", "apache-arrow"};
    for (int i = 0; i < 3; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tools/oracle/node_modules/%s/package.json", mods[i]);
        if (!vla_path_exists(test_source_path(rel)))
            fail_msg("npm package %s is not installed in tools/oracle/node_modules: run scripts/setup.sh test "
                     "(or: cd tools/oracle && npm install)", mods[i]);
    }
    snprintf(oracle_cmd, sizeof oracle_cmd, "node '%s'", test_source_path("tools/oracle/oracle.mjs"));
}

ORACLE_UNUSED static json_t *load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s (line %d)", path, err.text, err.line);
    return j;
}

/* Is `a` (vla.c) the same value as `b` (DuckDB)? BIGINTs may come as strings,
 * float32 values compare with a relative tolerance. */
ORACLE_UNUSED static int same(const json_t *a, const json_t *b, char *why, size_t cap) {
    if (json_is_null(a) || json_is_null(b)) {
        if (json_is_null(a) && json_is_null(b)) return 1;
        snprintf(why, cap, "null vs non-null");
        return 0;
    }
    if (json_is_integer(a)) {
        long long x = json_integer_value(a);
        if (json_is_integer(b) && json_integer_value(b) == x) return 1;
        if (json_is_string(b) && strtoll(json_string_value(b), NULL, 10) == x) return 1;
        if (json_is_real(b) && json_real_value(b) == (double)x) return 1;
        snprintf(why, cap, "integer %lld differs", x);
        return 0;
    }
    if (json_is_real(a)) {
        double x = json_real_value(a), y;
        if (!json_is_number(b)) {
            snprintf(why, cap, "real vs non-number");
            return 0;
        }
        y = json_number_value(b);
        if (fabs(x - y) <= 1e-6 * fmax(1.0, fabs(y))) return 1;
        snprintf(why, cap, "real %.9g vs %.9g", x, y);
        return 0;
    }
    if (json_is_boolean(a)) {
        if (json_is_boolean(b) && json_is_true(a) == json_is_true(b)) return 1;
        snprintf(why, cap, "boolean differs");
        return 0;
    }
    if (json_is_string(a)) {
        if (json_is_string(b) && strcmp(json_string_value(a), json_string_value(b)) == 0) return 1;
        snprintf(why, cap, "string '%.40s' vs '%.40s'", json_string_value(a), json_is_string(b) ? json_string_value(b) : "?");
        return 0;
    }
    if (json_is_array(a)) {
        if (!json_is_array(b) || json_array_size(a) != json_array_size(b)) {
            snprintf(why, cap, "list of %zu vs %zu", json_array_size(a), json_is_array(b) ? json_array_size(b) : 0);
            return 0;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!same(json_array_get(a, i), json_array_get(b, i), why, cap)) {
                size_t l = strlen(why);
                snprintf(why + l, cap - l, " (at list index %zu)", i);
                return 0;
            }
        }
        return 1;
    }
    if (json_is_object(a)) {
        if (!json_is_object(b) || json_object_size(a) != json_object_size(b)) {
            snprintf(why, cap, "struct of %zu vs %zu fields", json_object_size(a), json_is_object(b) ? json_object_size(b) : 0);
            return 0;
        }
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)a, key, v) {
            json_t *w = json_object_get(b, key);
            if (!w || !same(v, w, why, cap)) {
                size_t l = strlen(why);
                snprintf(why + l, cap - l, " (in struct field '%s')", key);
                return 0;
            }
        }
        return 1;
    }
    snprintf(why, cap, "unexpected JSON type");
    return 0;
}

/* Compare vla.c's reading of `file` with DuckDB's rows; returns rows checked. */
/* Run `oracle.mjs <how> FILE...` (one node process for all of them). */
ORACLE_UNUSED static void oracle_run_read(const char *how, const char *const *files, int n, json_t **out) {
    char cmd[8192], buf[512];
    const char *json_path = test_tmp_path("oracle-read.json");
    int at = snprintf(cmd, sizeof cmd, "%s %s", oracle_cmd, how);
    for (int i = 0; i < n; i++) at += snprintf(cmd + at, sizeof cmd - (size_t)at, " '%s'", files[i]);
    snprintf(cmd + at, sizeof cmd - (size_t)at, " > '%s'", json_path);
    int rc = test_run(cmd, buf, sizeof buf);
    if (rc != 0) fail_msg("oracle read failed (exit %d): %s", rc, cmd);
    char *text;
    size_t len;
    if (vla_read_file(json_path, &text, &len) != VLA_OK) fail_msg("%s", vla_error_message());
    char *line = text;
    for (int i = 0; i < n; i++) {
        char *nl = strchr(line, '\n');
        if (!nl) fail_msg("oracle read: %d results for %d files", i, n);
        *nl = '\0';
        json_error_t err;
        out[i] = json_loads(line, 0, &err);
        if (!out[i]) fail_msg("oracle %s %s: %s", how, files[i], err.text);
        line = nl + 1;
    }
    free(text);
}

/* DuckDB's reading of each of `files`. */
ORACLE_UNUSED static void oracle_read(const char *const *files, int n, json_t **out) {
    oracle_run_read("read", files, n, out);
}

/* arrow-rs's (parquet-wasm) reading of each of `files`. */
ORACLE_UNUSED static void oracle_read_arrow(const char *const *files, int n, json_t **out) {
    oracle_run_read("read-arrow", files, n, out);
}

#endif
