/* lerobot_meta.c — the dataset's description in meta/: info.json (version,
 * fps, features, cameras, the data and video path templates) and the task
 * list (meta/tasks.jsonl or, v3.0, meta/tasks.parquet). The episode index and
 * the stats of meta/ have files of their own (lerobot_episodes.c,
 * lerobot_stats_meta.c). Format: huggingface/lerobot src/lerobot/datasets/. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "data/lerobot_internal.h"
#include "io/parquet.h"

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
                while (isdigit((unsigned char)*s) && width <= 32) width = width * 10 + (*s++ - '0'); /* no overflow */
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
    f->key = vla_lr_strdup(key);
    f->camera = -1;
    const char *dt;
    VLA_TRY(vla_json_get_string(what, fj, "dtype", &dt));
    f->dtype_name = vla_lr_strdup(dt);
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

vla_status vla_lr_parse_info(vla_lerobot *ds, const char *what) {
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
    ds->robot_type = vla_lr_strdup(rt ? rt : "unknown");
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
    ds->data_path = vla_lr_strdup(dp);
    const char *vp = json_string_value(json_object_get(info, "video_path"));
    ds->video_path = vla_lr_strdup(vp);
    json_t *feats;
    VLA_TRY(vla_json_get_object(what, info, "features", &feats));
    size_t nf = json_object_size(feats);
    if (nf > 4096) return vla_error(VLA_ERR_FORMAT, "%s: %zu features", what, nf);
    ds->features = calloc(nf ? nf : 1, sizeof *ds->features);
    ds->camera_feature = calloc(nf ? nf : 1, sizeof *ds->camera_feature);
    if (!ds->features || !ds->camera_feature || !ds->robot_type || !ds->data_path || (vp && !ds->video_path))
        return vla_error(VLA_ERR_NOMEM, "out of memory");
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
    ds->tasks[idx] = vla_lr_strndup(s, n);
    return ds->tasks[idx] ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
}

static vla_status check_tasks(vla_lerobot *ds, const char *what) {
    for (int64_t i = 0; i < ds->n_tasks; i++)
        if (!ds->tasks[i]) return vla_error(VLA_ERR_FORMAT, "%s: task_index %lld is missing (indices must be 0..%lld)", what,
                                           (long long)i, (long long)ds->n_tasks - 1);
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

vla_status vla_lr_tasks_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len) {
    VLA_TRY(vla_lr_parse_jsonl(ds, what, text, len, task_line));
    return check_tasks(ds, what);
}

vla_status vla_lr_load_tasks(vla_lerobot *ds) {
    char path[2048], *text = NULL;
    size_t len;
    if (ds->version == 30) {
        snprintf(path, sizeof path, "%s/meta/tasks.parquet", ds->root);
        if (vla_path_exists(path)) {
            VLA_TRY(load_tasks_parquet(ds, path));
            return check_tasks(ds, path);
        }
        snprintf(path, sizeof path, "%s/meta/tasks.jsonl", ds->root);
        if (vla_read_file(path, &text, &len) != VLA_OK)
            return vla_error(VLA_ERR_NOT_FOUND, "%s/meta/tasks.parquet: file is missing", ds->root);
    } else {
        snprintf(path, sizeof path, "%s/meta/tasks.jsonl", ds->root);
        VLA_TRY(vla_read_file(path, &text, &len));
    }
    vla_status st = vla_lr_tasks_jsonl(ds, path, text, len);
    free(text);
    return st;
}
