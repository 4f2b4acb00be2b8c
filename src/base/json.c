/* json.c — jansson helpers with located errors (see json.h). */
#include "base/json.h"
#include "base/fsutil.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

vla_status vla_json_parse(const char *what, const char *text, size_t len, json_t **out) {
    json_error_t err;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!*out)
        return vla_error(VLA_ERR_FORMAT, "%s: invalid JSON at line %d, column %d (byte %d): %s", what, err.line,
                         err.column, err.position, err.text);
    return VLA_OK;
}

vla_status vla_json_load_file(const char *path, json_t **out) {
    char *text;
    size_t n;
    *out = NULL;
    VLA_TRY(vla_read_file(path, &text, &n));
    vla_status st = vla_json_parse(path, text, n, out);
    free(text);
    return st;
}

vla_status vla_json_write_file(const char *path, const json_t *value) {
    char *text = json_dumps(value, JSON_INDENT(4) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (!text) return vla_error(VLA_ERR_NOMEM, "%s: cannot serialise JSON", path);
    size_t n = strlen(text);
    vla_status st = vla_write_file_atomic(path, text, n);
    free(text);
    return st;
}

static vla_status get_typed(const char *what, const json_t *obj, const char *key, json_type type,
                            const char *type_name, json_t **out) {
    if (!json_is_object(obj)) return vla_error(VLA_ERR_FORMAT, "%s: expected a JSON object", what);
    json_t *v = json_object_get(obj, key);
    if (!v) return vla_error(VLA_ERR_FORMAT, "%s: key '%s' is missing", what, key);
    bool ok = json_typeof(v) == type || (type == JSON_REAL && json_is_integer(v));
    if (!ok) return vla_error(VLA_ERR_FORMAT, "%s: key '%s' must be %s", what, key, type_name);
    *out = v;
    return VLA_OK;
}

vla_status vla_json_get_int(const char *what, const json_t *obj, const char *key, int64_t *out) {
    json_t *v = NULL;
    VLA_TRY(get_typed(what, obj, key, JSON_INTEGER, "an integer", &v));
    *out = json_integer_value(v);
    return VLA_OK;
}

vla_status vla_json_get_number(const char *what, const json_t *obj, const char *key, double *out) {
    json_t *v = NULL;
    VLA_TRY(get_typed(what, obj, key, JSON_REAL, "a number", &v));
    *out = json_number_value(v);
    return VLA_OK;
}

vla_status vla_json_get_string(const char *what, const json_t *obj, const char *key, const char **out) {
    json_t *v = NULL;
    VLA_TRY(get_typed(what, obj, key, JSON_STRING, "a string", &v));
    *out = json_string_value(v);
    return VLA_OK;
}

vla_status vla_json_get_object(const char *what, const json_t *obj, const char *key, json_t **out) {
    return get_typed(what, obj, key, JSON_OBJECT, "an object", out);
}

vla_status vla_json_get_array(const char *what, const json_t *obj, const char *key, json_t **out) {
    return get_typed(what, obj, key, JSON_ARRAY, "an array", out);
}
