/* lerobot_read.c — open LeRobot datasets (v2.1 and v3.0): meta/ (info,
 * tasks, episodes, stats), every numeric column of the data parquet files
 * into memory, delta_timestamps windows, and frames through kept-open video
 * decoders (or PNG bytes embedded in the parquet for `image` features).
 * Format: huggingface/lerobot src/lerobot/datasets/ (see lerobot.h). */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "data/lerobot_internal.h"
#include "io/parquet.h"
#include "io/video.h"

/* ---- small helpers ------------------------------------------------------ */

static char *xstrdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *xstrndup(const char *s, size_t n) {
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

/* Relative path of a file inside the root (for problem reports). */
static const char *rel(const vla_lerobot *ds, const char *path) {
    size_t n = strlen(ds->root);
    if (!strncmp(path, ds->root, n) && path[n] == '/') return path + n + 1;
    return path;
}

/* ---- path templates ------------------------------------------------------ */

vla_status vla_lr_format_path(const char *tmpl, const vla_lr_tmpl_vars *v, char *buf, size_t cap) {
    size_t o = 0;
    for (const char *p = tmpl; *p;) {
        if (*p != '{') {
            if (o + 1 >= cap) return vla_error(VLA_ERR_INVALID_ARG, "path template '%s': result too long", tmpl);
            buf[o++] = *p++;
            continue;
        }
        const char *end = strchr(p, '}');
        if (!end) return vla_error(VLA_ERR_FORMAT, "path template '%s': unclosed '{'", tmpl);
        char name[64] = {0}, spec[16] = {0};
        const char *colon = memchr(p, ':', (size_t)(end - p));
        size_t nlen = (size_t)((colon ? colon : end) - p - 1);
        if (nlen >= sizeof name) return vla_error(VLA_ERR_FORMAT, "path template '%s': bad field", tmpl);
        memcpy(name, p + 1, nlen);
        if (colon) {
            size_t slen = (size_t)(end - colon - 1);
            if (slen >= sizeof spec) return vla_error(VLA_ERR_FORMAT, "path template '%s': bad format", tmpl);
            memcpy(spec, colon + 1, slen);
        }
        char piece[512];
        const char *str = NULL;
        int64_t num = 0;
        int is_num = 1;
        if (!strcmp(name, "chunk_index") || !strcmp(name, "episode_chunk")) num = v->chunk;
        else if (!strcmp(name, "file_index")) num = v->file;
        else if (!strcmp(name, "episode_index")) num = v->episode_index;
        else if (!strcmp(name, "video_key")) str = v->video_key, is_num = 0;
        else if (!strcmp(name, "image_key")) str = v->image_key, is_num = 0;
        else return vla_error(VLA_ERR_FORMAT, "path template '%s': unknown field '{%s}'", tmpl, name);
        if (is_num) {
            int width = 0;
            if (spec[0]) {
                /* only "0Nd" / "Nd" / "d" */
                const char *s = spec;
                if (*s == '0') s++;
                while (isdigit((unsigned char)*s)) width = width * 10 + (*s++ - '0');
                if (strcmp(s, "d") || width > 32)
                    return vla_error(VLA_ERR_UNSUPPORTED, "path template '%s': format ':%s' not supported", tmpl, spec);
            }
            snprintf(piece, sizeof piece, "%0*lld", width, (long long)num);
        } else {
            if (!str) return vla_error(VLA_ERR_INVALID_ARG, "path template '%s': no value for '{%s}'", tmpl, name);
            snprintf(piece, sizeof piece, "%s", str);
        }
        size_t pl = strlen(piece);
        if (o + pl + 1 >= cap) return vla_error(VLA_ERR_INVALID_ARG, "path template '%s': result too long", tmpl);
        memcpy(buf + o, piece, pl);
        o += pl;
        p = end + 1;
    }
    buf[o] = 0;
    return VLA_OK;
}

static vla_status join_root(const vla_lerobot *ds, const char *relp, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s/%s", ds->root ? ds->root : ".", relp);
    if (n < 0 || (size_t)n >= cap) return vla_error(VLA_ERR_INVALID_ARG, "path too long: %s/%s", ds->root, relp);
    return VLA_OK;
}

vla_status vla_lerobot_data_file(const vla_lerobot *ds, int64_t ep, char *buf, size_t cap) {
    if (ep < 0 || ep >= ds->n_episodes) return vla_error(VLA_ERR_INVALID_ARG, "episode position %lld out of range", (long long)ep);
    const vla_lr_episode *e = &ds->episodes[ep];
    vla_lr_tmpl_vars v = {e->data_chunk, e->data_file, e->episode_index, NULL, NULL};
    char relp[1024];
    VLA_TRY(vla_lr_format_path(ds->data_path, &v, relp, sizeof relp));
    return join_root(ds, relp, buf, cap);
}

vla_status vla_lerobot_video_file(const vla_lerobot *ds, int camera, int64_t ep, char *buf, size_t cap) {
    if (ep < 0 || ep >= ds->n_episodes) return vla_error(VLA_ERR_INVALID_ARG, "episode position %lld out of range", (long long)ep);
    if (camera < 0 || camera >= ds->n_cameras) return vla_error(VLA_ERR_INVALID_ARG, "camera %d out of range", camera);
    const vla_lr_feature *f = &ds->features[ds->camera_feature[camera]];
    if (f->dtype != VLA_LR_VIDEO) return vla_error(VLA_ERR_INVALID_ARG, "%s: feature '%s' is not a video", ds->root, f->key);
    if (!ds->video_path) return vla_error(VLA_ERR_FORMAT, "%s/meta/info.json: video feature '%s' but video_path is null", ds->root, f->key);
    const vla_lr_episode *e = &ds->episodes[ep];
    vla_lr_tmpl_vars v = {e->video[camera].chunk, e->video[camera].file, e->episode_index, f->key, f->key};
    char relp[1024];
    VLA_TRY(vla_lr_format_path(ds->video_path, &v, relp, sizeof relp));
    return join_root(ds, relp, buf, cap);
}

/* ---- info.json ----------------------------------------------------------- */

static vla_lr_dtype dtype_of(const char *s) {
    if (!strcmp(s, "float32")) return VLA_LR_FLOAT32;
    if (!strcmp(s, "float64")) return VLA_LR_FLOAT64;
    if (!strcmp(s, "int64")) return VLA_LR_INT64;
    if (!strcmp(s, "int32")) return VLA_LR_INT32;
    if (!strcmp(s, "bool")) return VLA_LR_BOOL;
    if (!strcmp(s, "string")) return VLA_LR_STRING;
    if (!strcmp(s, "video")) return VLA_LR_VIDEO;
    if (!strcmp(s, "image")) return VLA_LR_IMAGE;
    return VLA_LR_OTHER;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

static vla_status parse_feature(const char *what, const char *key, json_t *fj, vla_lr_feature *f) {
    if (!json_is_object(fj)) return vla_error(VLA_ERR_FORMAT, "%s: feature '%s' is not an object", what, key);
    f->key = xstrdup(key);
    f->camera = -1;
    const char *dt;
    VLA_TRY(vla_json_get_string(what, fj, "dtype", &dt));
    f->dtype_name = xstrdup(dt);
    if (!f->key || !f->dtype_name) return vla_error(VLA_ERR_NOMEM, "out of memory");
    f->dtype = dtype_of(dt);
    json_t *shape = json_object_get(fj, "shape");
    if (!json_is_array(shape)) return vla_error(VLA_ERR_FORMAT, "%s: feature '%s': 'shape' must be an array", what, key);
    size_t nd = json_array_size(shape);
    if (nd > 4) return vla_error(VLA_ERR_UNSUPPORTED, "%s: feature '%s': %zu dimensions (at most 4)", what, key, nd);
    f->ndim = (int)nd;
    f->width = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1 << 20))
            return vla_error(VLA_ERR_FORMAT, "%s: feature '%s': shape[%zu] must be an integer in [0, 2^20]", what, key, i);
        f->shape[i] = json_integer_value(d);
        f->width *= f->shape[i];
        if (f->width > ((int64_t)1 << 31)) return vla_error(VLA_ERR_FORMAT, "%s: feature '%s': shape too large", what, key);
    }
    if (f->dtype == VLA_LR_VIDEO || f->dtype == VLA_LR_IMAGE) {
        if (nd != 3) return vla_error(VLA_ERR_FORMAT, "%s: camera '%s': shape must have 3 dimensions", what, key);
        /* LeRobot writes [h, w, c] with names height,width,channels; some
         * datasets are channel-first, which names say. */
        json_t *names = json_object_get(fj, "names");
        int chw = 0;
        if (json_is_array(names) && json_array_size(names) == 3) {
            const char *n0 = json_string_value(json_array_get(names, 0));
            if (n0 && (!strcmp(n0, "channels") || !strcmp(n0, "channel"))) chw = 1;
        }
        f->height = (int)(chw ? f->shape[1] : f->shape[0]);
        f->width_px = (int)(chw ? f->shape[2] : f->shape[1]);
        f->channels = (int)(chw ? f->shape[0] : f->shape[2]);
        json_t *inf = json_object_get(fj, "info");
        if (!json_is_object(inf)) inf = json_object_get(fj, "video_info");
        if (json_is_object(inf)) {
            copy_str(f->codec, sizeof f->codec, json_string_value(json_object_get(inf, "video.codec")));
            copy_str(f->pix_fmt, sizeof f->pix_fmt, json_string_value(json_object_get(inf, "video.pix_fmt")));
            json_t *h = json_object_get(inf, "video.height"), *w = json_object_get(inf, "video.width");
            if (json_is_integer(h) && json_is_integer(w) && json_integer_value(h) > 0 && json_integer_value(w) > 0 &&
                json_integer_value(h) < 65536 && json_integer_value(w) < 65536) {
                f->height = (int)json_integer_value(h);
                f->width_px = (int)json_integer_value(w);
            }
        }
        if (f->height <= 0 || f->width_px <= 0 || f->height > 16384 || f->width_px > 16384)
            return vla_error(VLA_ERR_FORMAT, "%s: camera '%s': bad size %dx%d", what, key, f->width_px, f->height);
    }
    return VLA_OK;
}

static vla_status parse_info(vla_lerobot *ds, const char *what) {
    json_t *info = ds->info;
    if (!json_is_object(info)) return vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", what);
    const char *cv;
    VLA_TRY(vla_json_get_string(what, info, "codebase_version", &cv));
    copy_str(ds->codebase_version, sizeof ds->codebase_version, cv);
    if (!strcmp(cv, "v3.0")) ds->version = 30;
    else if (!strcmp(cv, "v2.1") || !strcmp(cv, "v2.0")) ds->version = 21;
    else return vla_error(VLA_ERR_UNSUPPORTED, "%s: codebase_version '%s' (supported: v2.1, v3.0)", what, cv);
    VLA_TRY(vla_json_get_number(what, info, "fps", &ds->fps));
    if (!(ds->fps > 0 && ds->fps <= 10000)) return vla_error(VLA_ERR_FORMAT, "%s: fps %g must be in (0, 10000]", what, ds->fps);
    const char *rt = json_string_value(json_object_get(info, "robot_type"));
    ds->robot_type = xstrdup(rt ? rt : "unknown");
    VLA_TRY(vla_json_get_int(what, info, "total_episodes", &ds->total_episodes));
    VLA_TRY(vla_json_get_int(what, info, "total_frames", &ds->total_frames));
    if (ds->total_episodes < 0 || ds->total_frames < 0 || ds->total_frames > ((int64_t)1 << 40))
        return vla_error(VLA_ERR_FORMAT, "%s: negative or huge total_episodes/total_frames", what);
    json_t *tt = json_object_get(info, "total_tasks");
    ds->total_tasks = json_is_integer(tt) ? json_integer_value(tt) : -1;
    json_t *cs = json_object_get(info, "chunks_size");
    ds->chunks_size = json_is_integer(cs) && json_integer_value(cs) > 0 ? json_integer_value(cs) : 1000;
    const char *dp;
    VLA_TRY(vla_json_get_string(what, info, "data_path", &dp));
    ds->data_path = xstrdup(dp);
    const char *vp = json_string_value(json_object_get(info, "video_path"));
    ds->video_path = xstrdup(vp);
    json_t *feats;
    VLA_TRY(vla_json_get_object(what, info, "features", &feats));
    size_t nf = json_object_size(feats);
    if (nf > 4096) return vla_error(VLA_ERR_FORMAT, "%s: %zu features", what, nf);
    ds->features = calloc(nf ? nf : 1, sizeof *ds->features);
    ds->camera_feature = calloc(nf ? nf : 1, sizeof *ds->camera_feature);
    if (!ds->features || !ds->camera_feature || !ds->robot_type || !ds->data_path) return vla_error(VLA_ERR_NOMEM, "out of memory");
    const char *key;
    json_t *fj;
    json_object_foreach(feats, key, fj) {
        vla_lr_feature *f = &ds->features[ds->n_features++];
        vla_status st = parse_feature(what, key, fj, f);
        if (st != VLA_OK) return st;
        if (f->dtype == VLA_LR_VIDEO || f->dtype == VLA_LR_IMAGE) {
            f->camera = ds->n_cameras;
            ds->camera_feature[ds->n_cameras++] = ds->n_features - 1;
        }
    }
    static const char *required[] = {"timestamp", "frame_index", "episode_index", "index", "task_index"};
    for (int i = 0; i < 5; i++)
        if (!vla_lerobot_feature(ds, required[i]))
            return vla_error(VLA_ERR_FORMAT, "%s: features: required feature '%s' is missing", what, required[i]);
    for (int c = 0; c < ds->n_cameras; c++)
        if (ds->features[ds->camera_feature[c]].dtype == VLA_LR_VIDEO && !ds->video_path)
            return vla_error(VLA_ERR_FORMAT, "%s: video feature '%s' but video_path is null", what,
                             ds->features[ds->camera_feature[c]].key);
    return VLA_OK;
}

/* ---- tasks ---------------------------------------------------------------- */

static vla_status set_task(vla_lerobot *ds, const char *what, int64_t idx, const char *s, size_t n) {
    if (idx < 0 || idx > 10000000) return vla_error(VLA_ERR_FORMAT, "%s: task_index %lld out of range", what, (long long)idx);
    if (idx >= ds->n_tasks) {
        char **t = realloc(ds->tasks, (size_t)(idx + 1) * sizeof *t);
        if (!t) return vla_error(VLA_ERR_NOMEM, "out of memory");
        for (int64_t i = ds->n_tasks; i <= idx; i++) t[i] = NULL;
        ds->tasks = t;
        ds->n_tasks = idx + 1;
    }
    if (ds->tasks[idx]) return vla_error(VLA_ERR_FORMAT, "%s: task_index %lld appears twice", what, (long long)idx);
    ds->tasks[idx] = xstrndup(s, n);
    return ds->tasks[idx] ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
}

static vla_status check_tasks(vla_lerobot *ds, const char *what) {
    for (int64_t i = 0; i < ds->n_tasks; i++)
        if (!ds->tasks[i]) return vla_error(VLA_ERR_FORMAT, "%s: task_index %lld is missing (indices must be 0..%lld)", what,
                                           (long long)i, (long long)ds->n_tasks - 1);
    return VLA_OK;
}

/* Iterate over the non-empty lines of a JSONL buffer. */
typedef vla_status (*jsonl_fn)(vla_lerobot *ds, const char *what, int line, json_t *obj);

static vla_status parse_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len, jsonl_fn fn) {
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        size_t e = pos;
        while (e < len && text[e] != '\n') e++;
        line++;
        size_t b = pos;
        while (b < e && isspace((unsigned char)text[b])) b++;
        if (b < e) {
            char where[2600];
            snprintf(where, sizeof where, "%s:%d", what, line);
            json_t *obj;
            VLA_TRY(vla_json_parse(where, text + b, e - b, &obj));
            vla_status st = json_is_object(obj) ? fn(ds, where, line, obj)
                                                : vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", where);
            json_decref(obj);
            if (st != VLA_OK) return st;
        }
        pos = e + 1;
    }
    return VLA_OK;
}

static vla_status task_line(vla_lerobot *ds, const char *what, int line, json_t *obj) {
    int64_t idx;
    const char *task;
    VLA_TRY(vla_json_get_int(what, obj, "task_index", &idx));
    VLA_TRY(vla_json_get_string(what, obj, "task", &task));
    return set_task(ds, what, idx, task, strlen(task));
}

static vla_status load_tasks_parquet(vla_lerobot *ds, const char *path) {
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    vla_status st = VLA_OK;
    int sc = vla_parquet_find_column(pq, "__index_level_0__");
    if (sc < 0) sc = vla_parquet_find_column(pq, "task");
    int ic = vla_parquet_find_column(pq, "task_index");
    if (sc < 0 || ic < 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: needs columns task_index and __index_level_0__ (or task)", path);
        goto done;
    }
    for (int rg = 0; rg < vla_parquet_num_row_groups(pq) && st == VLA_OK; rg++) {
        vla_parquet_column sccol = {0}, iccol = {0};
        st = vla_parquet_read_column(pq, rg, sc, &sccol);
        if (st == VLA_OK) st = vla_parquet_read_column(pq, rg, ic, &iccol);
        if (st == VLA_OK && (sccol.type != VLA_PQ_BYTE_ARRAY || sccol.max_rep || iccol.max_rep ||
                             (iccol.type != VLA_PQ_INT64 && iccol.type != VLA_PQ_INT32)))
            st = vla_error(VLA_ERR_FORMAT, "%s: task column must be strings and task_index integers", path);
        for (int64_t r = 0; st == VLA_OK && r < sccol.num_values && r < iccol.num_values; r++) {
            int64_t idx = iccol.type == VLA_PQ_INT64 ? ((int64_t *)iccol.values)[r] : ((int32_t *)iccol.values)[r];
            st = set_task(ds, path, idx, (const char *)sccol.data + sccol.offsets[r], (size_t)(sccol.offsets[r + 1] - sccol.offsets[r]));
        }
        vla_parquet_column_free(&sccol);
        vla_parquet_column_free(&iccol);
    }
done:
    vla_parquet_close(pq);
    return st;
}

/* ---- episodes -------------------------------------------------------------- */

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
            e->tasks[e->n_tasks++] = xstrdup(t);
        }
    }
    return VLA_OK;
}

static int cmp_episode(const void *a, const void *b) {
    const vla_lr_episode *x = a, *y = b;
    return (x->episode_index > y->episode_index) - (x->episode_index < y->episode_index);
}

/* v2.1 episodes: rows from cumulative lengths, one data file and one video
 * per episode. */
static vla_status finish_v21_episodes(vla_lerobot *ds, const char *what) {
    qsort(ds->episodes, (size_t)ds->n_episodes, sizeof *ds->episodes, cmp_episode);
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
            list[cnt++] = xstrdup(path);
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

/* A scalar integer or float column of all row groups, as double. */
static vla_status read_col_f64(vla_parquet_file *pq, const char *name, double **out, int64_t *rows);

static vla_status read_col_i64(vla_parquet_file *pq, const char *name, int64_t **out, int64_t *rows) {
    vla_status st = vla_parquet_read_i64(pq, -1, name, out, rows);
    if (st != VLA_OK) return vla_error_context(st, "column '%s'", name);
    if (*rows != vla_parquet_num_rows(pq))
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld values for %lld rows", vla_parquet_path(pq), name,
                         (long long)*rows, (long long)vla_parquet_num_rows(pq));
    return VLA_OK;
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
    /* per-camera locations */
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
        if (st == VLA_OK) st = read_col_f64(pq, name, &a, &rows);
        snprintf(name, sizeof name, "videos/%s/to_timestamp", f->key);
        if (st == VLA_OK) st = read_col_f64(pq, name, &b, &rows);
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
    /* tasks: list<string> */
    int tc = st == VLA_OK ? vla_parquet_find_column(pq, "tasks") : -1;
    if (tc >= 0) {
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
                    e->tasks[e->n_tasks++] = xstrndup((const char *)col.data + col.offsets[s], (size_t)(col.offsets[s + 1] - col.offsets[s]));
                }
            }
            r0 += col.num_rows;
            vla_parquet_column_free(&col);
        }
    } else if (st == VLA_OK) {
        vla_error_clear();
    }
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
    qsort(ds->episodes, (size_t)ds->n_episodes, sizeof *ds->episodes, cmp_episode);
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

/* ---- stats ------------------------------------------------------------------- */

static int flatten(json_t *v, double *out, int cap, int n) {
    if (json_is_number(v)) {
        if (n < cap) out[n] = json_number_value(v);
        return n + 1;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            n = flatten(json_array_get(v, i), out, cap, n);
            if (n < 0 || n > (1 << 20)) return -1;
        }
        return n;
    }
    return -1;
}

static double *flat_array(json_t *v, int *n) {
    int k = flatten(v, NULL, 0, 0);
    if (k < 0) return NULL;
    double *d = malloc((size_t)(k ? k : 1) * sizeof *d);
    if (!d) return NULL;
    flatten(v, d, k, 0);
    *n = k;
    return d;
}

static void stats_free(vla_lr_stats *s) {
    free(s->key);
    free(s->min);
    free(s->max);
    free(s->mean);
    free(s->std);
    free(s->q01);
    free(s->q10);
    free(s->q50);
    free(s->q90);
    free(s->q99);
}

static vla_status stats_from_json(const char *what, const char *key, json_t *obj, vla_lr_stats *s) {
    memset(s, 0, sizeof *s);
    s->key = xstrdup(key);
    double **dst[] = {&s->min, &s->max, &s->mean, &s->std, &s->q01, &s->q10, &s->q50, &s->q90, &s->q99};
    const char *names[] = {"min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"};
    s->n = -1;
    for (int k = 0; k < 9; k++) {
        json_t *v = json_object_get(obj, names[k]);
        if (!v) {
            if (k < 4) return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' is missing", what, key, names[k]);
            continue;
        }
        int n;
        *dst[k] = flat_array(v, &n);
        if (!*dst[k]) return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' must be numbers", what, key, names[k]);
        if (s->n >= 0 && n != s->n)
            return vla_error(VLA_ERR_FORMAT, "%s: stats of '%s': '%s' has %d values, 'min' has %d", what, key, names[k], n, s->n);
        s->n = n;
    }
    /* quantiles all-or-none */
    if (!(s->q01 && s->q10 && s->q50 && s->q90 && s->q99)) {
        free(s->q01), free(s->q10), free(s->q50), free(s->q90), free(s->q99);
        s->q01 = s->q10 = s->q50 = s->q90 = s->q99 = NULL;
    }
    json_t *c = json_object_get(obj, "count");
    int nc;
    double *cv = c ? flat_array(c, &nc) : NULL;
    s->count = cv && nc > 0 ? (int64_t)cv[0] : 0;
    free(cv);
    return VLA_OK;
}

static vla_status load_stats_object(vla_lerobot *ds, const char *what, json_t *root) {
    if (!json_is_object(root)) return vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", what);
    ds->stats = calloc(json_object_size(root) + 1, sizeof *ds->stats);
    if (!ds->stats) return vla_error(VLA_ERR_NOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!json_is_object(v)) continue;
        VLA_TRY(stats_from_json(what, key, v, &ds->stats[ds->n_stats++]));
    }
    return VLA_OK;
}

/* v2.1: aggregate episodes_stats.jsonl (count-weighted mean, pooled variance,
 * min of mins, max of maxs; quantiles as LeRobot's envelope when present). */
static vla_status aggregate_episode_stats(vla_lerobot *ds, const char *path, const char *text, size_t len) {
    /* First pass: collect per key lists. */
    json_t *per = json_object(); /* key → array of stats objects */
    size_t pos = 0;
    int line = 0;
    vla_status st = VLA_OK;
    while (pos < len && st == VLA_OK) {
        size_t e = pos;
        while (e < len && text[e] != '\n') e++;
        line++;
        size_t b = pos;
        while (b < e && isspace((unsigned char)text[b])) b++;
        if (b < e) {
            char where[2600];
            snprintf(where, sizeof where, "%s:%d", path, line);
            json_t *obj;
            st = vla_json_parse(where, text + b, e - b, &obj);
            if (st != VLA_OK) break;
            json_t *stats = json_object_get(obj, "stats");
            if (!json_is_object(stats)) st = vla_error(VLA_ERR_FORMAT, "%s: 'stats' is missing", where);
            const char *key;
            json_t *v;
            if (st == VLA_OK) json_object_foreach(stats, key, v) {
                json_t *arr = json_object_get(per, key);
                if (!arr) json_object_set_new(per, key, arr = json_array());
                json_array_append(arr, v);
            }
            json_decref(obj);
        }
        pos = e + 1;
    }
    if (st == VLA_OK) {
        ds->stats = calloc(json_object_size(per) + 1, sizeof *ds->stats);
        if (!ds->stats) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    const char *key;
    json_t *arr;
    if (st == VLA_OK) json_object_foreach(per, key, arr) {
        vla_lr_stats agg;
        memset(&agg, 0, sizeof agg);
        double total = 0;
        double *m2 = NULL;
        for (size_t i = 0; i < json_array_size(arr) && st == VLA_OK; i++) {
            vla_lr_stats s;
            st = stats_from_json(path, key, json_array_get(arr, i), &s);
            if (st == VLA_OK && i == 0) {
                agg = s; /* takes s's arrays and key */
                s.key = NULL;
                s.min = s.max = s.mean = s.std = s.q01 = s.q10 = s.q50 = s.q90 = s.q99 = NULL;
                m2 = calloc((size_t)agg.n + 1, sizeof *m2);
                for (int k = 0; k < agg.n; k++) m2[k] = (double)agg.count * agg.std[k] * agg.std[k];
                total = (double)agg.count;
            } else if (st == VLA_OK) {
                if (s.n != agg.n) st = vla_error(VLA_ERR_FORMAT, "%s: stats of '%s' change width across episodes", path, key);
                double c = (double)s.count;
                for (int k = 0; st == VLA_OK && k < agg.n; k++) {
                    double nt = total + c;
                    double d = s.mean[k] - agg.mean[k];
                    double mean = nt > 0 ? agg.mean[k] + d * c / nt : agg.mean[k];
                    m2[k] += c * s.std[k] * s.std[k] + (nt > 0 ? d * d * total * c / nt : 0);
                    agg.mean[k] = mean;
                    if (s.min[k] < agg.min[k]) agg.min[k] = s.min[k];
                    if (s.max[k] > agg.max[k]) agg.max[k] = s.max[k];
                    if (agg.q01 && s.q01) {
                        agg.q01[k] = fmin(agg.q01[k], s.q01[k]);
                        agg.q10[k] = fmin(agg.q10[k], s.q10[k]);
                        agg.q50[k] = fmin(agg.q50[k], s.q50[k]);
                        agg.q90[k] = fmax(agg.q90[k], s.q90[k]);
                        agg.q99[k] = fmax(agg.q99[k], s.q99[k]);
                    }
                }
                total += c;
            }
            if (i > 0 || st != VLA_OK) stats_free(&s);
        }
        if (st == VLA_OK && agg.key) {
            for (int k = 0; k < agg.n; k++) agg.std[k] = total > 0 ? sqrt(m2[k] / total) : 0;
            agg.count = (int64_t)total;
            ds->stats[ds->n_stats++] = agg;
        } else {
            stats_free(&agg);
        }
        free(m2);
        if (st != VLA_OK) break;
    }
    json_decref(per);
    return st;
}

/* ---- data ------------------------------------------------------------------- */

static double slot_value(const vla_parquet_column *col, int64_t s) {
    if (col->valid && !col->valid[s]) return NAN;
    switch (col->type) {
    case VLA_PQ_FLOAT: return ((const float *)col->values)[s];
    case VLA_PQ_DOUBLE: return ((const double *)col->values)[s];
    case VLA_PQ_INT32: return ((const int32_t *)col->values)[s];
    case VLA_PQ_INT64: return (double)((const int64_t *)col->values)[s];
    case VLA_PQ_BOOLEAN: return ((const uint8_t *)col->values)[s];
    default: return NAN;
    }
}

/* A numeric column (scalar or nested lists of any depth, flattened row-major)
 * with exactly `width` values per row, into f32 (dst32) or f64 (dst64). */
static vla_status read_numeric(vla_parquet_file *pq, const char *name, int64_t width, float *dst32, double *dst64,
                               int64_t max_rows, int64_t *rows_out) {
    int c = vla_parquet_find_column(pq, name);
    if (c < 0) return vla_error(VLA_ERR_NOT_FOUND, "%s: column '%s' is missing", vla_parquet_path(pq), name);
    const vla_parquet_column_info *ci = vla_parquet_column_at(pq, c);
    if (ci->type != VLA_PQ_FLOAT && ci->type != VLA_PQ_DOUBLE && ci->type != VLA_PQ_INT32 && ci->type != VLA_PQ_INT64 &&
        ci->type != VLA_PQ_BOOLEAN)
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: column '%s' is not numeric", vla_parquet_path(pq), name);
    int64_t row = 0;
    vla_status st = VLA_OK;
    for (int rg = 0; rg < vla_parquet_num_row_groups(pq) && st == VLA_OK; rg++) {
        vla_parquet_column col = {0};
        st = vla_parquet_read_column(pq, rg, c, &col);
        for (int64_t r = 0; st == VLA_OK && r < col.num_rows; r++, row++) {
            int64_t a = r, b = r + 1;
            for (int k = 0; k < col.max_rep; k++) {
                a = col.list[k].offsets[a];
                b = col.list[k].offsets[b];
            }
            if (b - a != width) {
                st = vla_error(VLA_ERR_FORMAT, "%s: column '%s' row %lld has %lld values, info.json's shape says %lld",
                               vla_parquet_path(pq), name, (long long)row, (long long)(b - a), (long long)width);
                break;
            }
            if (row >= max_rows) {
                st = vla_error(VLA_ERR_FORMAT, "%s: column '%s' has more rows than the file's metadata", vla_parquet_path(pq), name);
                break;
            }
            for (int64_t s = a; s < b; s++) {
                double v = slot_value(&col, s);
                if (dst32) dst32[row * width + (s - a)] = (float)v;
                else dst64[row * width + (s - a)] = v;
            }
        }
        vla_parquet_column_free(&col);
    }
    if (rows_out) *rows_out = row;
    return st;
}

static vla_status read_col_f64(vla_parquet_file *pq, const char *name, double **out, int64_t *rows) {
    int64_t n = vla_parquet_num_rows(pq);
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    if (!*out) return vla_error(VLA_ERR_NOMEM, "out of memory");
    VLA_TRY(read_numeric(pq, name, 1, NULL, *out, n, rows));
    if (*rows != n)
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld values for %lld rows", vla_parquet_path(pq), name,
                         (long long)*rows, (long long)n);
    return VLA_OK;
}

static int is_row_feature(const vla_lr_feature *f) {
    return f->dtype != VLA_LR_VIDEO && f->dtype != VLA_LR_IMAGE && f->dtype != VLA_LR_STRING && vla_lr_is_numeric_dtype(f->dtype_name);
}

/* Grow every per-row array to hold `cap` rows. */
static vla_status grow_rows(vla_lerobot *ds, int64_t cap) {
    for (int i = 0; i < ds->n_features; i++) {
        vla_lr_feature *f = &ds->features[i];
        if (!is_row_feature(f)) continue;
        float *v = realloc(f->values, (size_t)(cap * f->width + 1) * sizeof *v);
        if (!v) return vla_error(VLA_ERR_NOMEM, "out of memory for %lld rows of '%s'", (long long)cap, f->key);
        f->values = v;
    }
    int64_t **arrs[] = {&ds->frame_index, &ds->episode_index, &ds->index, &ds->task_index, &ds->row_episode};
    for (int k = 0; k < 5; k++) {
        int64_t *p = realloc(*arrs[k], (size_t)(cap + 1) * sizeof *p);
        if (!p) return vla_error(VLA_ERR_NOMEM, "out of memory");
        *arrs[k] = p;
    }
    float *t = realloc(ds->timestamp, (size_t)(cap + 1) * sizeof *t);
    if (!t) return vla_error(VLA_ERR_NOMEM, "out of memory");
    ds->timestamp = t;
    return VLA_OK;
}

/* Append one data file's rows. */
static vla_status load_data_file(vla_lerobot *ds, const char *path, int64_t *cap) {
    vla_parquet_file *pq;
    VLA_TRY(vla_parquet_open(path, &pq));
    int64_t n = vla_parquet_num_rows(pq), got;
    vla_status st = VLA_OK;
    if (n < 0 || n > ((int64_t)1 << 34)) st = vla_error(VLA_ERR_FORMAT, "%s: bad row count", path);
    if (st == VLA_OK && ds->n_rows + n > *cap) {
        int64_t nc = *cap * 2 > ds->n_rows + n ? *cap * 2 : ds->n_rows + n;
        st = grow_rows(ds, nc);
        if (st == VLA_OK) *cap = nc;
    }
    int64_t r0 = ds->n_rows;
    for (int i = 0; st == VLA_OK && i < ds->n_features; i++) {
        vla_lr_feature *f = &ds->features[i];
        if (!is_row_feature(f)) continue;
        st = read_numeric(pq, f->key, f->width, f->values + r0 * f->width, NULL, n, &got);
        if (st == VLA_OK && got != n) st = vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld rows, file has %lld", path, f->key, (long long)got, (long long)n);
    }
    int64_t *tmp = NULL;
    const char *icols[] = {"frame_index", "episode_index", "index", "task_index"};
    int64_t *dst[] = {ds->frame_index, ds->episode_index, ds->index, ds->task_index};
    for (int k = 0; st == VLA_OK && k < 4; k++) {
        st = vla_parquet_read_i64(pq, -1, icols[k], &tmp, &got);
        if (st == VLA_OK && got != n) st = vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld rows, file has %lld", path, icols[k], (long long)got, (long long)n);
        if (st == VLA_OK) memcpy(dst[k] + r0, tmp, (size_t)n * sizeof *tmp);
        free(tmp);
        tmp = NULL;
    }
    const vla_lr_feature *ts = vla_lerobot_feature(ds, "timestamp");
    if (st == VLA_OK && ts && ts->values) memcpy(ds->timestamp + r0, ts->values + r0 * ts->width, (size_t)n * sizeof(float));
    else if (st == VLA_OK) st = read_numeric(pq, "timestamp", 1, ds->timestamp + r0, NULL, n, &got);
    vla_parquet_close(pq);
    if (st == VLA_OK) ds->n_rows += n;
    return st;
}

typedef struct { int64_t chunk, file; } file_key;

static vla_status load_data(vla_lerobot *ds, json_t *problems) {
    int64_t cap = ds->total_frames > 0 ? ds->total_frames : 1024;
    VLA_TRY(grow_rows(ds, cap));
    /* distinct data files, in order */
    file_key *keys = malloc((size_t)(ds->n_episodes + 1) * sizeof *keys);
    int64_t *first_row = malloc((size_t)(ds->n_episodes + 1) * sizeof *first_row);
    int64_t nk = 0;
    vla_status st = keys && first_row ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == VLA_OK && i < ds->n_episodes; i++) {
        file_key k = {ds->episodes[i].data_chunk, ds->episodes[i].data_file};
        int seen = 0;
        for (int64_t j = nk - 1; j >= 0 && !seen; j--) seen = keys[j].chunk == k.chunk && keys[j].file == k.file;
        if (!seen) keys[nk++] = k;
    }
    /* v3 files are visited in (chunk, file) order, which is row order */
    for (int64_t i = 1; i < nk; i++)
        for (int64_t j = i; j > 0 && (keys[j - 1].chunk > keys[j].chunk || (keys[j - 1].chunk == keys[j].chunk && keys[j - 1].file > keys[j].file)); j--) {
            file_key t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    for (int64_t i = 0; st == VLA_OK && i < nk; i++) {
        /* any episode of that file gives the path */
        int64_t ep = -1;
        for (int64_t e = 0; e < ds->n_episodes && ep < 0; e++)
            if (ds->episodes[e].data_chunk == keys[i].chunk && ds->episodes[e].data_file == keys[i].file) ep = e;
        char path[2048];
        st = vla_lerobot_data_file(ds, ep, path, sizeof path);
        if (st != VLA_OK) break;
        first_row[i] = ds->n_rows;
        if (!vla_path_exists(path)) {
            if (!problems) { st = vla_error(VLA_ERR_NOT_FOUND, "%s: data file is missing (episode %lld)", path, (long long)ds->episodes[ep].episode_index); break; }
            vla_lr_problem(problems, rel(ds, path), "data file is missing (episode %lld)", (long long)ds->episodes[ep].episode_index);
            continue;
        }
        vla_status fs = load_data_file(ds, path, &cap);
        if (fs != VLA_OK) {
            if (!problems) { st = fs; break; }
            vla_lr_problem(problems, rel(ds, path), "%s", vla_error_message());
        }
    }
    /* each episode's first row inside its file */
    for (int64_t e = 0; st == VLA_OK && e < ds->n_episodes; e++) {
        vla_lr_episode *ep = &ds->episodes[e];
        for (int64_t i = 0; i < nk; i++)
            if (keys[i].chunk == ep->data_chunk && keys[i].file == ep->data_file) {
                ep->file_row = ep->from - first_row[i];
                if (ep->file_row < 0) ep->file_row = 0;
            }
    }
    free(keys);
    free(first_row);
    return st;
}

/* Rows against metadata; strict mode fails at the first mismatch. */
static vla_status check_rows(vla_lerobot *ds, json_t *problems, const char *info_file, const char *ep_file) {
    char msg[512];
#define REPORT(file, ...)                                                  \
    do {                                                                   \
        snprintf(msg, sizeof msg, __VA_ARGS__);                            \
        if (!problems) return vla_error(VLA_ERR_FORMAT, "%s: %s", file, msg); \
        vla_lr_problem(problems, file, "%s", msg);                         \
    } while (0)
    if (ds->n_rows != ds->total_frames)
        REPORT(info_file, "total_frames is %lld but the data files hold %lld rows", (long long)ds->total_frames, (long long)ds->n_rows);
    if (ds->n_episodes != ds->total_episodes)
        REPORT(info_file, "total_episodes is %lld but %s lists %lld episodes", (long long)ds->total_episodes, ep_file, (long long)ds->n_episodes);
    int64_t sum = ds->n_episodes ? ds->episodes[ds->n_episodes - 1].to : 0;
    if (sum != ds->n_rows)
        REPORT(ep_file, "episodes cover rows [0, %lld) but the data files hold %lld rows", (long long)sum, (long long)ds->n_rows);
    if (ds->total_tasks >= 0 && ds->total_tasks != ds->n_tasks)
        REPORT(info_file, "total_tasks is %lld but the tasks file lists %lld", (long long)ds->total_tasks, (long long)ds->n_tasks);
    for (int64_t r = 0; r < ds->n_rows; r++)
        if (ds->index[r] != r) {
            char df[2048] = "data";
            for (int64_t e = 0; e < ds->n_episodes; e++)
                if (r >= ds->episodes[e].from && r < ds->episodes[e].to) { vla_lerobot_data_file(ds, e, df, sizeof df); break; }
            REPORT(rel(ds, df), "column 'index' is not contiguous: row %lld has index %lld", (long long)r, (long long)ds->index[r]);
            break;
        }
    /* row → episode */
    for (int64_t r = 0; r < ds->n_rows; r++) ds->row_episode[r] = -1;
    for (int64_t e = 0; e < ds->n_episodes; e++)
        for (int64_t r = ds->episodes[e].from; r < ds->episodes[e].to && r < ds->n_rows; r++) ds->row_episode[r] = e;
    for (int64_t r = 0; r < ds->n_rows; r++)
        if (ds->row_episode[r] < 0) {
            REPORT(ep_file, "row %lld belongs to no episode", (long long)r);
            break;
        }
    return VLA_OK;
#undef REPORT
}

static void count_nonfinite(vla_lerobot *ds) {
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (!f->values) continue;
        int64_t n = ds->n_rows * f->width, bad = 0, first = -1;
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(f->values[k])) {
                if (first < 0) first = k;
                bad++;
            }
        if (bad) VLA_WARN("%s: feature '%s' has %lld non-finite values (first at row %lld)", ds->root, f->key, (long long)bad,
                          (long long)(first / f->width));
        ds->n_nonfinite += bad;
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
    for (int64_t i = 0; i < ds->n_episodes; i++) {
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
    for (int i = 0; i < ds->n_stats; i++) stats_free(&ds->stats[i]);
    free(ds->stats);
    json_decref(ds->info);
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
    ds->root = xstrdup(".");
    vla_status st = vla_json_parse("meta/info.json", info_json, info_len, &ds->info);
    if (st == VLA_OK) st = parse_info(ds, "meta/info.json");
    if (st == VLA_OK && tasks_jsonl) st = parse_jsonl(ds, "meta/tasks.jsonl", tasks_jsonl, tasks_len, task_line);
    if (st == VLA_OK && tasks_jsonl) st = check_tasks(ds, "meta/tasks.jsonl");
    if (st == VLA_OK && episodes_jsonl) st = parse_jsonl(ds, "meta/episodes.jsonl", episodes_jsonl, episodes_len, episode_line);
    if (st == VLA_OK && episodes_jsonl) st = finish_v21_episodes(ds, "meta/episodes.jsonl");
    if (st != VLA_OK) {
        vla_lerobot_close(ds);
        return st;
    }
    *out = ds;
    return VLA_OK;
}

vla_status vla_lr_open_internal(const char *root, json_t *problems, vla_lerobot **out) {
    *out = NULL;
    vla_lerobot *ds = calloc(1, sizeof *ds);
    if (!ds) return vla_error(VLA_ERR_NOMEM, "out of memory");
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    ds->root = xstrndup(root, rl);
    char path[2048], *text = NULL;
    size_t len;
    vla_status st = VLA_OK;
    const char *ep_file = "meta/episodes";
    if (!vla_is_dir(ds->root)) {
        st = vla_error(VLA_ERR_NOT_FOUND, "%s: not a directory", ds->root);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/meta/info.json", ds->root);
    if (!vla_path_exists(path)) {
        st = vla_error(VLA_ERR_NOT_FOUND, "%s: file is missing (not a LeRobot dataset?)", path);
        goto fail;
    }
    st = vla_json_load_file(path, &ds->info);
    if (st == VLA_OK) st = parse_info(ds, path);
    if (st != VLA_OK) goto fail;
    /* tasks */
    if (ds->version == 30) {
        snprintf(path, sizeof path, "%s/meta/tasks.parquet", ds->root);
        if (vla_path_exists(path)) st = load_tasks_parquet(ds, path);
        else {
            snprintf(path, sizeof path, "%s/meta/tasks.jsonl", ds->root);
            st = vla_read_file(path, &text, &len);
            if (st != VLA_OK) st = vla_error(VLA_ERR_NOT_FOUND, "%s/meta/tasks.parquet: file is missing", ds->root);
            else st = parse_jsonl(ds, path, text, len, task_line);
        }
    } else {
        snprintf(path, sizeof path, "%s/meta/tasks.jsonl", ds->root);
        st = vla_read_file(path, &text, &len);
        if (st == VLA_OK) st = parse_jsonl(ds, path, text, len, task_line);
    }
    free(text);
    text = NULL;
    if (st == VLA_OK) st = check_tasks(ds, path);
    if (st != VLA_OK) goto fail;
    /* episodes */
    if (ds->version == 30) {
        char **files;
        int nf;
        snprintf(path, sizeof path, "%s/meta/episodes", ds->root);
        st = list_chunk_files(path, ".parquet", &files, &nf);
        if (st == VLA_OK && nf == 0) st = vla_error(VLA_ERR_NOT_FOUND, "%s: no chunk-*/file-*.parquet files", path);
        for (int i = 0; st == VLA_OK && i < nf; i++) st = load_episodes_parquet(ds, files[i]);
        free_list(files, nf);
    } else {
        ep_file = "meta/episodes.jsonl";
        snprintf(path, sizeof path, "%s/meta/episodes.jsonl", ds->root);
        st = vla_read_file(path, &text, &len);
        if (st == VLA_OK) st = parse_jsonl(ds, path, text, len, episode_line);
        free(text);
        text = NULL;
        if (st == VLA_OK) st = finish_v21_episodes(ds, path);
    }
    if (st == VLA_OK) st = check_episodes(ds, ep_file, problems);
    if (st != VLA_OK) goto fail;
    /* stats (optional: a dataset without stats still loads) */
    snprintf(path, sizeof path, "%s/meta/stats.json", ds->root);
    if (ds->version == 21) {
        char p2[2048];
        snprintf(p2, sizeof p2, "%s/meta/episodes_stats.jsonl", ds->root);
        if (vla_read_file(p2, &text, &len) == VLA_OK) {
            st = aggregate_episode_stats(ds, p2, text, len);
            free(text);
            text = NULL;
            path[0] = 0;
        }
    }
    if (st == VLA_OK && path[0] && vla_path_exists(path)) {
        json_t *sj;
        st = vla_json_load_file(path, &sj);
        if (st == VLA_OK) st = load_stats_object(ds, path, sj);
        json_decref(sj);
    }
    if (st != VLA_OK) {
        if (!problems) goto fail;
        vla_lr_problem(problems, rel(ds, path[0] ? path : "meta/episodes_stats.jsonl"), "%s", vla_error_message());
        st = VLA_OK;
    }
    /* data */
    st = load_data(ds, problems);
    if (st == VLA_OK) st = check_rows(ds, problems, "meta/info.json", ep_file);
    if (st != VLA_OK) goto fail;
    count_nonfinite(ds);
    *out = ds;
    return VLA_OK;
fail:
    free(text);
    vla_lerobot_close(ds);
    return st;
}

vla_status vla_lerobot_open(const char *root, vla_lerobot **out) { return vla_lr_open_internal(root, NULL, out); }

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

/* ---- windows ------------------------------------------------------------------ */

vla_status vla_lerobot_delta_offsets(const vla_lerobot *ds, const double *deltas, int n, double tol_s, int *offsets) {
    if (tol_s <= 0) tol_s = VLA_VIDEO_DEFAULT_TOLERANCE_S;
    for (int i = 0; i < n; i++) {
        double f = deltas[i] * ds->fps;
        double r = round(f);
        if (!isfinite(f) || fabs(r) > 1e9 || fabs(deltas[i] - r / ds->fps) > tol_s)
            return vla_error(VLA_ERR_INVALID_ARG, "delta_timestamps[%d] = %g s is not a multiple of 1/fps = %g s (tolerance %g s)", i,
                             deltas[i], 1.0 / ds->fps, tol_s);
        offsets[i] = (int)r;
    }
    return VLA_OK;
}

void vla_lerobot_window_rows(const vla_lerobot *ds, int64_t row, const int *offsets, int n, int64_t *rows, uint8_t *is_pad) {
    const vla_lr_episode *e = &ds->episodes[ds->row_episode[row]];
    for (int i = 0; i < n; i++) {
        int64_t q = row + offsets[i];
        uint8_t pad = q < e->from || q >= e->to;
        if (q < e->from) q = e->from;
        if (q >= e->to) q = e->to - 1;
        rows[i] = q;
        if (is_pad) is_pad[i] = pad;
    }
}

vla_status vla_lerobot_window(const vla_lerobot *ds, const char *key, int64_t row, const int *offsets, int n, float *out,
                              uint8_t *is_pad) {
    const vla_lr_feature *f = vla_lerobot_feature(ds, key);
    if (!f) return vla_error(VLA_ERR_NOT_FOUND, "%s: no feature '%s'", ds->root, key);
    if (!f->values) return vla_error(VLA_ERR_INVALID_ARG, "%s: feature '%s' is not numeric", ds->root, key);
    if (row < 0 || row >= ds->n_rows) return vla_error(VLA_ERR_INVALID_ARG, "%s: row %lld out of range [0, %lld)", ds->root, (long long)row, (long long)ds->n_rows);
    int64_t rows[256];
    for (int i0 = 0; i0 < n; i0 += 256) {
        int m = n - i0 < 256 ? n - i0 : 256;
        vla_lerobot_window_rows(ds, row, offsets + i0, m, rows, is_pad ? is_pad + i0 : NULL);
        for (int i = 0; i < m; i++) memcpy(out + (size_t)(i0 + i) * f->width, f->values + rows[i] * f->width, (size_t)f->width * sizeof(float));
    }
    return VLA_OK;
}

/* ---- frame reader ------------------------------------------------------------- */

#define READER_SLOTS 8

typedef struct {
    char *path;
    vla_video_decoder *dec;
    uint64_t used;
} dec_slot;

struct vla_lr_reader {
    const vla_lerobot *ds;
    dec_slot slots[READER_SLOTS];
    uint64_t clock;
    /* image features: the last parquet file and row group decoded */
    vla_parquet_file *pq;
    char *pq_path;
    int pq_col, pq_rg;
    int64_t pq_rg_first;
    vla_parquet_column pq_chunk;
    int pq_have;
    AVCodecContext *png;
    AVFrame *frame;
    AVPacket *pkt;
};

vla_status vla_lr_reader_open(const vla_lerobot *ds, vla_lr_reader **out) {
    vla_lr_reader *r = calloc(1, sizeof *r);
    if (!r) return vla_error(VLA_ERR_NOMEM, "out of memory");
    r->ds = ds;
    *out = r;
    return VLA_OK;
}

void vla_lr_reader_close(vla_lr_reader *r) {
    if (!r) return;
    for (int i = 0; i < READER_SLOTS; i++) {
        free(r->slots[i].path);
        vla_video_decoder_close(r->slots[i].dec);
    }
    if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
    vla_parquet_close(r->pq);
    free(r->pq_path);
    avcodec_free_context(&r->png);
    av_frame_free(&r->frame);
    av_packet_free(&r->pkt);
    free(r);
}

void vla_lr_reader_counters(const vla_lr_reader *r, int64_t *seeks, int64_t *decoded, int64_t *cache_hits, int64_t *returned,
                            int *open_decoders) {
    int64_t a = 0, b = 0, c = 0, d = 0;
    int n = 0;
    for (int i = 0; i < READER_SLOTS; i++)
        if (r->slots[i].dec) {
            vla_video_stats s = vla_video_decoder_stats(r->slots[i].dec);
            a += s.seeks, b += s.decoded, c += s.cache_hits, d += s.returned;
            n++;
        }
    if (seeks) *seeks = a;
    if (decoded) *decoded = b;
    if (cache_hits) *cache_hits = c;
    if (returned) *returned = d;
    if (open_decoders) *open_decoders = n;
}

/* The decoder of a file, opened once and kept (LRU of READER_SLOTS). */
static vla_status get_decoder(vla_lr_reader *r, const char *path, vla_video_decoder **out) {
    int victim = 0;
    for (int i = 0; i < READER_SLOTS; i++) {
        if (r->slots[i].path && !strcmp(r->slots[i].path, path)) {
            r->slots[i].used = ++r->clock;
            *out = r->slots[i].dec;
            return VLA_OK;
        }
        if (r->slots[i].used < r->slots[victim].used) victim = i;
    }
    if (!vla_path_exists(path)) return vla_error(VLA_ERR_NOT_FOUND, "%s: video file is missing", path);
    vla_video_decoder *d;
    VLA_TRY(vla_video_decoder_open(path, NULL, &d));
    dec_slot *s = &r->slots[victim];
    free(s->path);
    vla_video_decoder_close(s->dec);
    s->path = xstrdup(path);
    s->dec = d;
    s->used = ++r->clock;
    *out = d;
    return VLA_OK;
}

static vla_status check_row(const vla_lerobot *ds, int64_t row) {
    if (row < 0 || row >= ds->n_rows)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: row %lld out of range [0, %lld)", ds->root, (long long)row, (long long)ds->n_rows);
    return VLA_OK;
}

/* PNG bytes → RGB24 at ow×oh through FFmpeg's PNG decoder and swscale. */
static vla_status decode_png(vla_lr_reader *r, const uint8_t *data, size_t n, int ow, int oh, uint8_t *rgb, const char *what) {
    if (!r->png) {
        const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_PNG);
        if (!c) return vla_error(VLA_ERR_UNSUPPORTED, "FFmpeg has no PNG decoder");
        r->png = avcodec_alloc_context3(c);
        r->frame = av_frame_alloc();
        r->pkt = av_packet_alloc();
        if (!r->png || !r->frame || !r->pkt || avcodec_open2(r->png, c, NULL) < 0) return vla_error(VLA_ERR_INTERNAL, "cannot open the PNG decoder");
    }
    avcodec_flush_buffers(r->png);
    av_packet_unref(r->pkt);
    if (av_new_packet(r->pkt, (int)n) < 0) return vla_error(VLA_ERR_NOMEM, "out of memory");
    memcpy(r->pkt->data, data, n);
    /* FFmpeg's PNG decoder treats a packet without the key flag as a
     * P-frame and adds the previous picture to it (PNG-in-MOV); every
     * embedded PNG is a whole image. */
    r->pkt->flags |= AV_PKT_FLAG_KEY;
    if (avcodec_send_packet(r->png, r->pkt) < 0 || avcodec_receive_frame(r->png, r->frame) < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: PNG does not decode", what);
    int w = r->frame->width, h = r->frame->height;
    if (!ow) ow = w;
    if (!oh) oh = h;
    struct SwsContext *sws = sws_getContext(w, h, r->frame->format, ow, oh, AV_PIX_FMT_RGB24, SWS_BICUBIC, NULL, NULL, NULL);
    if (!sws) {
        av_frame_unref(r->frame);
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: PNG pixel format not convertible", what);
    }
    uint8_t *dst[4] = {rgb};
    int ls[4] = {ow * 3};
    sws_scale(sws, (const uint8_t *const *)r->frame->data, r->frame->linesize, 0, h, dst, ls);
    sws_freeContext(sws);
    av_frame_unref(r->frame);
    return VLA_OK;
}

static vla_status image_frame(vla_lr_reader *r, const vla_lr_feature *f, int64_t row, int ow, int oh, uint8_t *rgb) {
    const vla_lerobot *ds = r->ds;
    int64_t ep = ds->row_episode[row];
    char path[2048];
    VLA_TRY(vla_lerobot_data_file(ds, ep, path, sizeof path));
    int64_t frow = ds->episodes[ep].file_row + (row - ds->episodes[ep].from);
    if (!r->pq_path || strcmp(r->pq_path, path)) {
        if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
        r->pq_have = 0;
        vla_parquet_close(r->pq);
        r->pq = NULL;
        free(r->pq_path);
        r->pq_path = NULL;
        VLA_TRY(vla_parquet_open(path, &r->pq));
        r->pq_path = xstrdup(path);
        r->pq_rg = -1;
    }
    char cname[600];
    snprintf(cname, sizeof cname, "%s.bytes", f->key);
    int c = vla_parquet_find_column(r->pq, cname);
    if (c < 0) c = vla_parquet_find_column(r->pq, f->key);
    if (c < 0) return vla_error(VLA_ERR_NOT_FOUND, "%s: image column '%s.bytes' is missing", path, f->key);
    int64_t first = 0;
    int rg = 0;
    for (; rg < vla_parquet_num_row_groups(r->pq); rg++) {
        int64_t n = vla_parquet_row_group_rows(r->pq, rg);
        if (frow < first + n) break;
        first += n;
    }
    if (rg >= vla_parquet_num_row_groups(r->pq)) return vla_error(VLA_ERR_FORMAT, "%s: row %lld is beyond the file", path, (long long)frow);
    if (!r->pq_have || r->pq_rg != rg || r->pq_col != c) {
        if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
        r->pq_have = 0;
        memset(&r->pq_chunk, 0, sizeof r->pq_chunk);
        vla_status st = vla_parquet_read_column(r->pq, rg, c, &r->pq_chunk);
        if (st != VLA_OK) {
            vla_parquet_column_free(&r->pq_chunk);
            return st;
        }
        r->pq_have = 1;
        r->pq_rg = rg;
        r->pq_col = c;
        r->pq_rg_first = first;
    }
    const vla_parquet_column *col = &r->pq_chunk;
    int64_t s = frow - r->pq_rg_first;
    if (col->type != VLA_PQ_BYTE_ARRAY || col->max_rep || s >= col->num_values || !col->valid[s])
        return vla_error(VLA_ERR_FORMAT, "%s: image '%s' row %lld has no PNG bytes", path, f->key, (long long)frow);
    char what[2200];
    snprintf(what, sizeof what, "%s: image '%s' row %lld", path, f->key, (long long)frow);
    return decode_png(r, col->data + col->offsets[s], (size_t)(col->offsets[s + 1] - col->offsets[s]), ow ? ow : f->width_px,
                      oh ? oh : f->height, rgb, what);
}

vla_status vla_lr_reader_frames(vla_lr_reader *r, int camera, const int64_t *rows, int n, int out_w, int out_h, double tol_s,
                                uint8_t *rgb) {
    uint8_t *p[1] = {rgb};
    return vla_lr_reader_sample(r, &camera, 1, rows, n, out_w, out_h, tol_s, p);
}

vla_status vla_lr_reader_frame(vla_lr_reader *r, int camera, int64_t row, int out_w, int out_h, double tol_s, uint8_t *rgb) {
    return vla_lr_reader_frames(r, camera, &row, 1, out_w, out_h, tol_s, rgb);
}

#define MAX_CAMS 16
#define MAX_WINDOW 256

vla_status vla_lr_reader_sample(vla_lr_reader *r, const int *cams, int n_cams, const int64_t *rows, int n, int out_w, int out_h,
                                double tol_s, uint8_t *const *rgb) {
    const vla_lerobot *ds = r->ds;
    if (tol_s <= 0) tol_s = VLA_VIDEO_DEFAULT_TOLERANCE_S;
    /* all decoders of one call must fit the cache at once */
    if (n_cams > READER_SLOTS || n > MAX_WINDOW || n_cams < 0 || n < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "at most %d cameras and %d frames per call", READER_SLOTS, MAX_WINDOW);
    for (int i = 0; i < n; i++) VLA_TRY(check_row(ds, rows[i]));
    vla_video_request reqs[MAX_CAMS];
    double ts[MAX_CAMS][MAX_WINDOW];
    int nreq = 0;
    for (int j = 0; j < n_cams; j++) {
        int cam = cams[j];
        if (cam < 0 || cam >= ds->n_cameras) return vla_error(VLA_ERR_INVALID_ARG, "%s: camera %d out of range", ds->root, cam);
        const vla_lr_feature *f = &ds->features[ds->camera_feature[cam]];
        int ow = out_w ? out_w : f->width_px, oh = out_h ? out_h : f->height;
        if (f->dtype == VLA_LR_IMAGE) {
            for (int i = 0; i < n; i++) VLA_TRY(image_frame(r, f, rows[i], ow, oh, rgb[j] + (size_t)i * ow * oh * 3));
            continue;
        }
        if (n == 0) continue;
        int64_t ep = ds->row_episode[rows[0]];
        for (int i = 1; i < n; i++)
            if (ds->row_episode[rows[i]] != ep)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: rows of one frame request must lie in one episode", ds->root);
        char path[2048];
        VLA_TRY(vla_lerobot_video_file(ds, cam, ep, path, sizeof path));
        vla_video_decoder *dec = NULL;
        vla_status st = get_decoder(r, path, &dec);
        if (st != VLA_OK) return vla_error_context(st, "camera '%s', row %lld", f->key, (long long)rows[0]);
        for (int k = 0; k < nreq; k++)
            if (reqs[k].dec == dec) return vla_error(VLA_ERR_INVALID_ARG, "camera %d requested twice", cam);
        for (int i = 0; i < n; i++) ts[nreq][i] = ds->episodes[ep].video[cam].from_ts + (double)ds->timestamp[rows[i]];
        vla_video_request *q = &reqs[nreq++];
        memset(q, 0, sizeof *q);
        q->dec = dec;
        q->ts = ts[nreq - 1];
        q->n = n;
        q->tol = tol_s;
        q->out_w = ow;
        q->out_h = oh;
        q->rgb = rgb[j];
    }
    if (nreq == 1) {
        /* no thread for a single camera */
        vla_video_request *q = &reqs[0];
        int order[MAX_WINDOW];
        for (int i = 0; i < n; i++) order[i] = i;
        for (int i = 1; i < n; i++)
            for (int k = i; k > 0 && q->ts[order[k - 1]] > q->ts[order[k]]; k--) {
                int t = order[k];
                order[k] = order[k - 1];
                order[k - 1] = t;
            }
        for (int i = 0; i < n; i++)
            VLA_TRY(vla_video_decoder_read(q->dec, q->ts[order[i]], q->tol, q->out_w, q->out_h,
                                           q->rgb + (size_t)order[i] * q->out_w * q->out_h * 3, NULL));
        return VLA_OK;
    }
    if (nreq > 1) return vla_video_read_batch(reqs, nreq);
    return VLA_OK;
}
