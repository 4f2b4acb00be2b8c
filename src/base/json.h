/* json.h — JSON through Debian's jansson, with errors that say where.
 *
 * jansson does the parsing (and rejects invalid UTF-8); these helpers only add
 * file/line/column context to its errors, typed lookups that report the key
 * path that is missing or of the wrong type, and atomic writes. */
#ifndef VLA_BASE_JSON_H
#define VLA_BASE_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Parse a buffer; `what` names it in errors (a path, "safetensors header"). */
vla_status vla_json_parse(const char *what, const char *text, size_t len, json_t **out);
vla_status vla_json_load_file(const char *path, json_t **out);
/* Write `value` (pretty, 4-space indent, keys in insertion order) atomically. */
vla_status vla_json_write_file(const char *path, const json_t *value);

/* Typed getters: fail with "<what>: key 'k' is missing" / "… must be an integer". */
vla_status vla_json_get_int(const char *what, const json_t *obj, const char *key, int64_t *out);
vla_status vla_json_get_number(const char *what, const json_t *obj, const char *key, double *out);
vla_status vla_json_get_string(const char *what, const json_t *obj, const char *key, const char **out);
vla_status vla_json_get_object(const char *what, const json_t *obj, const char *key, json_t **out);
vla_status vla_json_get_array(const char *what, const json_t *obj, const char *key, json_t **out);

#endif
