/* shards_mixture.c — mixture.json: the shard sets of a prepared mixture (see shards.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/shards.h"

bool vla_shards_is_mixture(const char *dir) {
    char p[VLA_ROOT_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, VLA_SHARDS_MIXTURE);
    return vla_path_exists(p) != 0;
}

vla_status vla_shards_mixture_write(const char *dir, const char *const *sets, const char *const *sources, int n) {
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) json_array_append_new(arr, json_pack("{s:s,s:s}", "dir", sets[i], "source", sources[i]));
    json_t *j = json_pack("{s:s,s:i,s:o}", "format", "vla-shard-mixture", "version", 1, "sets", arr);
    char *text = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text) return vla_error(VLA_ERR_NOMEM, "%s/%s: out of memory", dir, VLA_SHARDS_MIXTURE);
    char path[VLA_ROOT_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, VLA_SHARDS_MIXTURE);
    vla_status st = vla_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

vla_status vla_shards_mixture_paths(const char *dir, char *out, size_t cap) {
    char path[VLA_ROOT_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, VLA_SHARDS_MIXTURE);
    json_t *root;
    VLA_TRY(vla_json_load_file(path, &root));
    json_t *sets = json_object_get(root, "sets");
    const char *fmt = json_string_value(json_object_get(root, "format"));
    vla_status st = VLA_OK;
    size_t n = json_is_array(sets) ? json_array_size(sets) : 0;
    if (!fmt || strcmp(fmt, "vla-shard-mixture") != 0 || n < 1 || n > VLA_SHARDS_MIXTURE_MAX)
        st = vla_error(VLA_ERR_FORMAT, "%s: not a vla-shard-mixture with 1 to %d sets", path, VLA_SHARDS_MIXTURE_MAX);
    out[0] = 0;
    for (size_t i = 0; st == VLA_OK && i < n; i++) {
        const char *d = json_string_value(json_object_get(json_array_get(sets, i), "dir"));
        if (!d || !*d || strchr(d, '/') || strchr(d, ',') || !strcmp(d, "..") || !strcmp(d, ".")) {
            st = vla_error(VLA_ERR_FORMAT, "%s: sets[%zu].dir must name a subdirectory", path, i);
            break;
        }
        char set[2 * VLA_ROOT_MAX];
        snprintf(set, sizeof set, "%s/%s", dir, d);
        if (!vla_shards_is_set(set)) {
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: the shard set %s is incomplete (no %s): run the prepare again", path,
                           set, VLA_SHARDS_MANIFEST);
            break;
        }
        size_t used = strlen(out);
        if (used + strlen(set) + 2 > cap) {
            st = vla_error(VLA_ERR_INVALID_ARG, "%s: the sets' paths are too long", path);
            break;
        }
        snprintf(out + used, cap - used, "%s%s", i ? "," : "", set);
    }
    json_decref(root);
    return st;
}

vla_status vla_dataset_roots(const char *list, bool expand_mixtures, char roots[][VLA_ROOT_MAX], int max, int *n) {
    *n = 0;
    for (const char *q = list; *q;) {
        size_t len = strcspn(q, ",");
        if (len == 0 || len >= VLA_ROOT_MAX)
            return vla_error(VLA_ERR_INVALID_ARG, "'%s': an empty or overlong directory in the list", list);
        char one[VLA_ROOT_MAX];
        memcpy(one, q, len), one[len] = 0;
        q += len + (q[len] == ',');
        if (expand_mixtures && vla_shards_is_mixture(one)) {
            char sets[VLA_SHARDS_MIXTURE_MAX * (VLA_ROOT_MAX + 1)];
            VLA_TRY(vla_shards_mixture_paths(one, sets, sizeof sets));
            int k = 0;
            VLA_TRY(vla_dataset_roots(sets, false, roots + *n, max - *n, &k));
            *n += k;
            continue;
        }
        if (*n == max) return vla_error(VLA_ERR_INVALID_ARG, "'%s': more than %d datasets in a mixture", list, max);
        memcpy(roots[(*n)++], one, len + 1);
    }
    if (*n == 0) return vla_error(VLA_ERR_INVALID_ARG, "no dataset directory given");
    return VLA_OK;
}
