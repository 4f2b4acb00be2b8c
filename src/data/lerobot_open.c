/* lerobot_open.c — open and close a LeRobot dataset (v2.1 and v3.0): the
 * order in which meta/ and the data files are read (lerobot_meta.c,
 * lerobot_episodes.c, lerobot_stats_meta.c, lerobot_rows.c), the lookups by
 * key, and the small helpers those files share. Format:
 * huggingface/lerobot src/lerobot/datasets/ (see lerobot.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot_internal.h"
#include "data/shards.h"

/* ---- helpers shared by the reader files ----------------------------------- */

char *vla_lr_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *vla_lr_strndup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void vla_lr_problem(json_t *problems, const char *file, const char *fmt, ...) {
    if (!problems) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(problems, json_pack("{s:s,s:s}", "file", file ? file : "", "reason", msg));
}

int vla_lr_is_numeric_dtype(const char *d) {
    return !strncmp(d, "float", 5) || !strncmp(d, "int", 3) || !strncmp(d, "uint", 4) || !strcmp(d, "bool");
}

const char *vla_lr_rel(const vla_lerobot *ds, const char *path) {
    size_t n = strlen(ds->root);
    if (!strncmp(path, ds->root, n) && path[n] == '/') return path + n + 1;
    return path;
}

vla_status vla_lr_jsonl_next(const char *what, const char *text, size_t len, vla_lr_jsonl_cursor *c, json_t **obj) {
    *obj = NULL;
    while (c->pos < len) {
        size_t e = c->pos;
        while (e < len && text[e] != '\n') e++;
        c->line++;
        size_t b = c->pos;
        while (b < e && isspace((unsigned char)text[b])) b++;
        c->pos = e + 1;
        if (b == e) continue;
        snprintf(c->where, sizeof c->where, "%s:%d", what, c->line);
        return vla_json_parse(c->where, text + b, e - b, obj);
    }
    return VLA_OK;
}

vla_status vla_lr_parse_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len, vla_lr_jsonl_fn fn) {
    vla_lr_jsonl_cursor c = {0};
    for (;;) {
        json_t *obj;
        VLA_TRY(vla_lr_jsonl_next(what, text, len, &c, &obj));
        if (!obj) return VLA_OK;
        vla_status st = json_is_object(obj) ? fn(ds, c.where, c.line, obj)
                                            : vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", c.where);
        json_decref(obj);
        VLA_TRY(st);
    }
}

/* ---- open / close --------------------------------------------------------------- */

void vla_lerobot_close(vla_lerobot *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n_features; i++) {
        free(ds->features[i].key);
        free(ds->features[i].dtype_name);
        free(ds->features[i].values);
    }
    free(ds->features);
    free(ds->camera_feature);
    for (int64_t i = 0; i < ds->n_tasks; i++) free(ds->tasks[i]);
    free(ds->tasks);
    for (int64_t i = 0; i < ds->n_episodes + ds->n_selected_dropped; i++) {
        for (int k = 0; k < ds->episodes[i].n_tasks; k++) free(ds->episodes[i].tasks[k]);
        free(ds->episodes[i].tasks);
        free(ds->episodes[i].video);
    }
    free(ds->episodes);
    free(ds->timestamp);
    free(ds->frame_index);
    free(ds->episode_index);
    free(ds->index);
    free(ds->task_index);
    free(ds->row_episode);
    for (int i = 0; i < ds->n_stats; i++) vla_lr_stats_free(&ds->stats[i]);
    free(ds->stats);
    json_decref(ds->info);
    vla_shards_free(ds->shards);
    free(ds->root);
    free(ds->robot_type);
    free(ds->data_path);
    free(ds->video_path);
    free(ds);
}

vla_status vla_lerobot_open_meta_buffers(const char *info_json, size_t info_len, const char *episodes_jsonl,
                                         size_t episodes_len, const char *tasks_jsonl, size_t tasks_len, vla_lerobot **out) {
    *out = NULL;
    vla_lerobot *ds = calloc(1, sizeof *ds);
    if (!ds) return vla_error(VLA_ERR_NOMEM, "out of memory");
    ds->root = vla_lr_strdup(".");
    vla_status st = ds->root ? vla_json_parse("meta/info.json", info_json, info_len, &ds->info)
                             : vla_error(VLA_ERR_NOMEM, "out of memory");
    if (st == VLA_OK) st = vla_lr_parse_info(ds, "meta/info.json");
    if (st == VLA_OK && tasks_jsonl) st = vla_lr_tasks_jsonl(ds, "meta/tasks.jsonl", tasks_jsonl, tasks_len);
    if (st == VLA_OK && episodes_jsonl) st = vla_lr_episodes_jsonl(ds, "meta/episodes.jsonl", episodes_jsonl, episodes_len);
    if (st != VLA_OK) {
        vla_lerobot_close(ds);
        return st;
    }
    *out = ds;
    return VLA_OK;
}

vla_status vla_lr_open_internal(const char *root, json_t *problems, const vla_lr_open_opts *opts, vla_lerobot **out) {
    *out = NULL;
    vla_lerobot *ds = calloc(1, sizeof *ds);
    if (!ds) return vla_error(VLA_ERR_NOMEM, "out of memory");
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    ds->root = vla_lr_strndup(root, rl);
    char path[2048];
    vla_status st = VLA_OK;
    const char *ep_file = "meta/episodes";
    if (!ds->root) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", root);
        goto fail;
    }
    if (!vla_is_dir(ds->root)) {
        st = vla_error(VLA_ERR_NOT_FOUND, "%s: not a directory", ds->root);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/meta/info.json", ds->root);
    if (!vla_path_exists(path) && vla_shards_is_mixture(ds->root)) {
        st = vla_error(VLA_ERR_INVALID_ARG,
                       "%s is a prepared mixture (%s): one dataset per shard set in it; open one of its sets, or "
                       "train on all of them with --dataset.shards=%s", ds->root, VLA_SHARDS_MIXTURE, ds->root);
        goto fail;
    }
    if (!vla_path_exists(path)) {
        st = vla_error(VLA_ERR_NOT_FOUND, "%s: file is missing (not a LeRobot dataset?)", path);
        goto fail;
    }
    st = vla_json_load_file(path, &ds->info);
    if (st == VLA_OK) st = vla_lr_parse_info(ds, path);
    if (st == VLA_OK) st = vla_lr_load_tasks(ds);
    if (st == VLA_OK) st = vla_lr_load_episodes(ds, problems, &ep_file);
    if (st == VLA_OK) st = vla_lr_load_stats(ds, problems);
    if (st == VLA_OK) ds->n_episodes_listed = ds->n_episodes;
    for (int64_t e = 0; st == VLA_OK && e < ds->n_episodes; e++) ds->episodes[e].index_from = ds->episodes[e].from;
    if (st == VLA_OK && vla_shards_is_set(ds->root)) {
        /* a shard set: its episodes (or the wanted subset of them), rows and frames from the shards */
        int64_t *eps = NULL, n = 0;
        bool meta_only = opts && opts->meta_only && !problems;
        st = vla_shards_attach(ds, opts ? opts->episodes : NULL, opts ? opts->n_episodes : 0, !meta_only, &eps, &n);
        if (st == VLA_OK) st = vla_lr_apply_selection(ds, eps, n);
        free(eps);
    } else if (st == VLA_OK && opts && opts->episodes) {
        st = vla_lr_apply_selection(ds, opts->episodes, opts->n_episodes);
    }
    if (st == VLA_OK && opts && opts->meta_only && !problems) {
        ds->meta_only = true;
        *out = ds;
        return VLA_OK;
    }
    if (st == VLA_OK && !problems && !ds->shards) st = vla_lr_check_present(ds);
    if (st == VLA_OK) st = vla_lr_load_rows(ds, problems, ep_file);
    if (st != VLA_OK) goto fail;
    *out = ds;
    return VLA_OK;
fail:
    vla_lerobot_close(ds);
    return st;
}

vla_status vla_lerobot_open(const char *root, vla_lerobot **out) { return vla_lr_open_internal(root, NULL, NULL, out); }

vla_status vla_lerobot_open_opts(const char *root, const vla_lr_open_opts *opts, vla_lerobot **out) {
    return vla_lr_open_internal(root, NULL, opts, out);
}

const vla_lr_feature *vla_lerobot_feature(const vla_lerobot *ds, const char *key) {
    for (int i = 0; i < ds->n_features; i++)
        if (!strcmp(ds->features[i].key, key)) return &ds->features[i];
    return NULL;
}

const vla_lr_stats *vla_lerobot_stats(const vla_lerobot *ds, const char *key) {
    for (int i = 0; i < ds->n_stats; i++)
        if (!strcmp(ds->stats[i].key, key)) return &ds->stats[i];
    return NULL;
}

int vla_lerobot_camera(const vla_lerobot *ds, const char *key) {
    const vla_lr_feature *f = vla_lerobot_feature(ds, key);
    return f ? f->camera : -1;
}
