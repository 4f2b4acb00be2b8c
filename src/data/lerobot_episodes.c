/* lerobot_episodes.c — the episode index: each episode's rows, data file
 * and per-camera video file and time span, from meta/episodes.jsonl (v2.1:
 * lengths, one file per episode) or meta/episodes/chunk-*\/file-*.parquet
 * (v3.0: explicit locations), and the check that episodes tile the rows.
 * Format: huggingface/lerobot src/lerobot/datasets/. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot_internal.h"
#include "io/parquet.h"

static vla_status add_episode(vla_lerobot *ds, vla_lr_episode **out) {
    if (ds->n_episodes % 64 == 0) {
        vla_lr_episode *e = realloc(ds->episodes, (size_t)(ds->n_episodes + 64) * sizeof *e);
        if (!e) return vla_error(VLA_ERR_NOMEM, "out of memory");
        ds->episodes = e;
    }
    vla_lr_episode *e = &ds->episodes[ds->n_episodes++];
    memset(e, 0, sizeof *e);
    e->video = calloc((size_t)(ds->n_cameras ? ds->n_cameras : 1), sizeof *e->video);
    if (!e->video) return vla_error(VLA_ERR_NOMEM, "out of memory");
    *out = e;
    return VLA_OK;
}

static vla_status episode_line(vla_lerobot *ds, const char *what, int line, json_t *obj) {
    int64_t idx, len;
    VLA_TRY(vla_json_get_int(what, obj, "episode_index", &idx));
    VLA_TRY(vla_json_get_int(what, obj, "length", &len));
    if (idx < 0 || len < 0 || len > ((int64_t)1 << 32)) return vla_error(VLA_ERR_FORMAT, "%s: negative or huge episode_index/length", what);
    vla_lr_episode *e;
    VLA_TRY(add_episode(ds, &e));
    e->episode_index = idx;
    e->length = len;
    json_t *tasks = json_object_get(obj, "tasks");
    if (json_is_array(tasks) && json_array_size(tasks) > 0) {
        e->tasks = calloc(json_array_size(tasks), sizeof *e->tasks);
        if (!e->tasks) return vla_error(VLA_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < json_array_size(tasks); i++) {
            const char *t = json_string_value(json_array_get(tasks, i));
            if (!t) return vla_error(VLA_ERR_FORMAT, "%s: tasks[%zu] is not a string", what, i);
            if (!(e->tasks[e->n_tasks++] = vla_lr_strdup(t))) return vla_error(VLA_ERR_NOMEM, "out of memory");
        }
    }
    return VLA_OK;
}

static int cmp_episode(const void *a, const void *b) {
    const vla_lr_episode *x = a, *y = b;
    return (x->episode_index > y->episode_index) - (x->episode_index < y->episode_index);
}

/* With no episodes the list is NULL, and qsort's array must not be NULL
 * even for zero elements (C11 7.22.5). */
static void sort_episodes(vla_lerobot *ds) {
    if (ds->n_episodes > 1) qsort(ds->episodes, (size_t)ds->n_episodes, sizeof *ds->episodes, cmp_episode);
}

/* v2.1 episodes: rows from cumulative lengths, one data file and one video
 * per episode. */
static vla_status finish_v21_episodes(vla_lerobot *ds, const char *what) {
    sort_episodes(ds);
    int64_t row = 0;
    for (int64_t i = 0; i < ds->n_episodes; i++) {
        vla_lr_episode *e = &ds->episodes[i];
        if (i && e->episode_index == ds->episodes[i - 1].episode_index)
            return vla_error(VLA_ERR_FORMAT, "%s: episode_index %lld appears twice", what, (long long)e->episode_index);
        e->from = row;
        e->to = row + e->length;
        row = e->to;
        e->data_chunk = e->episode_index / ds->chunks_size;
        e->data_file = e->episode_index;
        e->file_row = 0;
        for (int c = 0; c < ds->n_cameras; c++) {
            e->video[c].chunk = e->data_chunk;
            e->video[c].file = e->episode_index;
            e->video[c].from_ts = 0;
            e->video[c].to_ts = (double)e->length / ds->fps;
        }
    }
    return VLA_OK;
}

/* Sorted list of "<dir>/chunk-*\/file-*.parquet" files. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static vla_status list_chunk_files(const char *dir, const char *ext, char ***out, int *n) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return vla_error(VLA_ERR_NOT_FOUND, "%s: directory is missing", dir);
    struct dirent *de;
    char **list = NULL;
    int cnt = 0, cap = 0;
    vla_status st = VLA_OK;
    while ((de = readdir(d)) && st == VLA_OK) {
        if (strncmp(de->d_name, "chunk-", 6)) continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        DIR *d2 = opendir(sub);
        if (!d2) continue;
        struct dirent *f;
        while ((f = readdir(d2))) {
            size_t l = strlen(f->d_name), el = strlen(ext);
            if (l <= el || strcmp(f->d_name + l - el, ext) || f->d_name[0] == '.') continue;
            if (cnt == cap) {
                cap = cap ? cap * 2 : 16;
                char **nl = realloc(list, (size_t)cap * sizeof *nl);
                if (!nl) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
                list = nl;
            }
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
            char *copy = vla_lr_strdup(path);
            if (!copy) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
            list[cnt++] = copy;
        }
        closedir(d2);
    }
    closedir(d);
    if (list) qsort(list, (size_t)cnt, sizeof *list, cmp_str);
    *out = list;
    *n = cnt;
    return st;
}

static void free_list(char **l, int n) {
    for (int i = 0; i < n; i++) free(l[i]);
    free(l);
}

static vla_status read_col_i64(vla_parquet_file *pq, const char *name, int64_t **out, int64_t *rows) {
    vla_status st = vla_parquet_read_i64(pq, -1, name, out, rows);
    if (st != VLA_OK) return vla_error_context(st, "column '%s'", name);
    if (*rows != vla_parquet_num_rows(pq))
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld values for %lld rows", vla_parquet_path(pq), name,
                         (long long)*rows, (long long)vla_parquet_num_rows(pq));
    return VLA_OK;
}

/* Where each camera's frames of episodes [base, base + n) are: the columns
 * videos/<key>/{chunk_index,file_index,from_timestamp,to_timestamp}. */
static vla_status read_video_locations(vla_lerobot *ds, vla_parquet_file *pq, int64_t base, int64_t n) {
    vla_status st = VLA_OK;
    int64_t rows;
    for (int c = 0; st == VLA_OK && c < ds->n_cameras; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        if (f->dtype != VLA_LR_VIDEO) continue;
        char name[600];
        int64_t *vc = NULL, *vf = NULL;
        double *a = NULL, *b = NULL;
        snprintf(name, sizeof name, "videos/%s/chunk_index", f->key);
        st = read_col_i64(pq, name, &vc, &rows);
        snprintf(name, sizeof name, "videos/%s/file_index", f->key);
        if (st == VLA_OK) st = read_col_i64(pq, name, &vf, &rows);
        snprintf(name, sizeof name, "videos/%s/from_timestamp", f->key);
        if (st == VLA_OK) st = vla_lr_read_col_f64(pq, name, &a, &rows);
        snprintf(name, sizeof name, "videos/%s/to_timestamp", f->key);
        if (st == VLA_OK) st = vla_lr_read_col_f64(pq, name, &b, &rows);
        for (int64_t r = 0; st == VLA_OK && r < n; r++) {
            vla_lr_episode_video *v = &ds->episodes[base + r].video[c];
            v->chunk = vc[r];
            v->file = vf[r];
            v->from_ts = a[r];
            v->to_ts = b[r];
        }
        free(vc);
        free(vf);
        free(a);
        free(b);
    }
    return st;
}

/* The optional column 'tasks' (list<string>) of episodes [base, base + n). */
static vla_status read_episode_tasks(vla_lerobot *ds, vla_parquet_file *pq, const char *path, int64_t base, int64_t n) {
    int tc = vla_parquet_find_column(pq, "tasks");
    if (tc < 0) {
        vla_error_clear(); /* no such column: no tasks per episode */
        return VLA_OK;
    }
    vla_status st = VLA_OK;
    int64_t r0 = 0;
    for (int rg = 0; st == VLA_OK && rg < vla_parquet_num_row_groups(pq); rg++) {
        vla_parquet_column col = {0};
        st = vla_parquet_read_column(pq, rg, tc, &col);
        if (st == VLA_OK && (col.type != VLA_PQ_BYTE_ARRAY || col.max_rep != 1))
            st = vla_error(VLA_ERR_FORMAT, "%s: column 'tasks' must be list<string>", path);
        for (int64_t r = 0; st == VLA_OK && r < col.num_rows && r0 + r < n; r++) {
            vla_lr_episode *e = &ds->episodes[base + r0 + r];
            int64_t s0 = col.list[0].offsets[r], s1 = col.list[0].offsets[r + 1];
            if (s1 <= s0) continue;
            e->tasks = calloc((size_t)(s1 - s0), sizeof *e->tasks);
            if (!e->tasks) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
            for (int64_t s = s0; s < s1; s++) {
                if (!col.valid[s]) continue;
                e->tasks[e->n_tasks++] = vla_lr_strndup((const char *)col.data + col.offsets[s], (size_t)(col.offsets[s + 1] - col.offsets[s]));
                if (!e->tasks[e->n_tasks - 1]) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
            }
        }
        r0 += col.num_rows;
        vla_parquet_column_free(&col);
    }
    return st;
}

static vla_status load_episodes_parquet(vla_lerobot *ds, const char *path) {
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    int64_t n = vla_parquet_num_rows(pq), rows;
    int64_t *ei = NULL, *len = NULL, *from = NULL, *to = NULL, *dc = NULL, *df = NULL;
    vla_status st = read_col_i64(pq, "episode_index", &ei, &rows);
    if (st == VLA_OK) st = read_col_i64(pq, "length", &len, &rows);
    if (st == VLA_OK) st = read_col_i64(pq, "dataset_from_index", &from, &rows);
    if (st == VLA_OK) st = read_col_i64(pq, "dataset_to_index", &to, &rows);
    if (st == VLA_OK) st = read_col_i64(pq, "data/chunk_index", &dc, &rows);
    if (st == VLA_OK) st = read_col_i64(pq, "data/file_index", &df, &rows);
    int64_t base = ds->n_episodes;
    for (int64_t r = 0; st == VLA_OK && r < n; r++) {
        vla_lr_episode *e;
        st = add_episode(ds, &e);
        if (st != VLA_OK) break;
        e->episode_index = ei[r];
        e->length = len[r];
        e->from = from[r];
        e->to = to[r];
        e->data_chunk = dc[r];
        e->data_file = df[r];
    }
    if (st == VLA_OK) st = read_video_locations(ds, pq, base, n);
    if (st == VLA_OK) st = read_episode_tasks(ds, pq, path, base, n);
    if (st != VLA_OK) st = vla_error_context(st, "%s", path);
    free(ei);
    free(len);
    free(from);
    free(to);
    free(dc);
    free(df);
    vla_parquet_close(pq);
    return st;
}

static vla_status check_episodes(vla_lerobot *ds, const char *what, json_t *problems) {
    sort_episodes(ds);
    int64_t expect = 0;
    for (int64_t i = 0; i < ds->n_episodes; i++) {
        vla_lr_episode *e = &ds->episodes[i];
        char msg[512] = "";
        if (i && e->episode_index == ds->episodes[i - 1].episode_index)
            snprintf(msg, sizeof msg, "episode_index %lld appears twice", (long long)e->episode_index);
        else if (e->from < 0 || e->to < e->from || e->to - e->from != e->length)
            snprintf(msg, sizeof msg, "episode %lld: dataset_from_index %lld .. dataset_to_index %lld does not match length %lld",
                     (long long)e->episode_index, (long long)e->from, (long long)e->to, (long long)e->length);
        else if (e->from != expect)
            snprintf(msg, sizeof msg, "episode %lld starts at row %lld, expected %lld (episodes must tile the rows)",
                     (long long)e->episode_index, (long long)e->from, (long long)expect);
        if (msg[0]) {
            if (!problems) return vla_error(VLA_ERR_FORMAT, "%s: %s", what, msg);
            vla_lr_problem(problems, what, "%s", msg);
        }
        if (e->to > expect) expect = e->to;
        for (int c = 0; c < ds->n_cameras; c++)
            if (!(e->video[c].to_ts >= e->video[c].from_ts) || e->video[c].from_ts < 0) {
                snprintf(msg, sizeof msg, "episode %lld: camera %s: bad from/to timestamps %g..%g", (long long)e->episode_index,
                         ds->features[ds->camera_feature[c]].key, e->video[c].from_ts, e->video[c].to_ts);
                if (!problems) return vla_error(VLA_ERR_FORMAT, "%s: %s", what, msg);
                vla_lr_problem(problems, what, "%s", msg);
            }
    }
    return VLA_OK;
}

vla_status vla_lr_episodes_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len) {
    VLA_TRY(vla_lr_parse_jsonl(ds, what, text, len, episode_line));
    return finish_v21_episodes(ds, what);
}

vla_status vla_lr_load_episodes(vla_lerobot *ds, json_t *problems, const char **ep_file) {
    char path[2048];
    vla_status st;
    *ep_file = "meta/episodes";
    if (ds->version == 30) {
        char **files;
        int nf;
        snprintf(path, sizeof path, "%s/meta/episodes", ds->root);
        st = list_chunk_files(path, ".parquet", &files, &nf);
        if (st == VLA_OK && nf == 0) st = vla_error(VLA_ERR_NOT_FOUND, "%s: no chunk-*/file-*.parquet files", path);
        for (int i = 0; st == VLA_OK && i < nf; i++) st = load_episodes_parquet(ds, files[i]);
        free_list(files, nf);
    } else {
        char *text = NULL;
        size_t len;
        *ep_file = "meta/episodes.jsonl";
        snprintf(path, sizeof path, "%s/meta/episodes.jsonl", ds->root);
        st = vla_read_file(path, &text, &len);
        if (st == VLA_OK) st = vla_lr_episodes_jsonl(ds, path, text, len);
        free(text);
    }
    if (st == VLA_OK) st = check_episodes(ds, *ep_file, problems);
    return st;
}
