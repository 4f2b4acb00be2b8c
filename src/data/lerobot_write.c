/* lerobot_write.c — write LeRobot v3.0 datasets: data parquet (one row
 * group per episode, SNAPPY, dictionary where it pays), meta/episodes
 * parquet with per-episode stats, tasks.parquet with pandas metadata,
 * info.json, stats.json (with q01…q99), and one mp4 per camera in which
 * episodes follow each other, addressed by from/to timestamps.
 *
 * Everything is built under "<root>.partial-<pid>" and renamed to <root> at
 * close, so the dataset is complete or absent. A discarded episode's frames
 * may already be in the camera's mp4: they stay there unreferenced (no
 * episode's from/to covers them), which costs space, not correctness.
 *
 * Files roll over by size as LeRobot's do (vla_lr_writer_opts): a data
 * file when its bytes plus the episode's uncompressed size would reach
 * data_files_size_in_mb, a camera's mp4 when its encoded bytes plus the
 * previous episode's would reach video_files_size_in_mb (the episode is
 * encoded as it arrives, so its own size is not known before it starts;
 * LeRobot encodes to a temporary file first). The meta/episodes parquet is
 * one file.
 *
 * Image statistics sample frames and pixels by LeRobot's compute_stats rule
 * (lerobot_internal.h, shared with `vla dataset stats`): which frames count
 * depends on the episode's length, so each frame's histogram is kept until
 * the episode is saved (3 KiB a frame).
 *
 * Simplifications against LeRobot: stats.json quantiles are exact global
 * quantiles rather than LeRobot's per-episode envelope; per-episode image
 * stats are flat lists of 3 values instead of nested 3×1×1 lists. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "data/lerobot_internal.h"
#include "io/parquet.h"
#include "io/video.h"

typedef enum { K_F32, K_F64, K_I64, K_BOOL } num_kind;

typedef struct {
    char *key;
    num_kind kind;
    int ndim;
    int64_t shape[3];
    int64_t width;
    json_t *names;
    int user;        /* index among the caller's values[], -1 for defaults */
    float *ep;       /* this episode's values [frames × width] */
    float *all;      /* every saved row, for stats.json */
} num_feat;

typedef struct {
    char *key;
    int h, w;
    json_t *names;
    vla_video_writer *vw;
    int64_t chunk, file;                 /* of the mp4 being written */
    int64_t ep_start_bytes, last_ep_bytes; /* encoded bytes at the episode's start; the last episode's size */
    int64_t ep_copied;                   /* copy mode: frames copied for this episode */
    double ep_start;
    int ep_started;
    uint64_t hist[3 * 256], ep_hist[3 * 256];
    int64_t hist_n, ep_hist_n, frames, ep_frames;
    uint32_t *fh;      /* this episode's per-frame histograms [ep_frames][3 × 256]: which frames the
                          statistics sample depends on the episode's length (lerobot_internal.h) */
    int64_t fh_cap;    /* frames fh holds room for */
    int64_t fh_pixels; /* sampled pixels of one frame */
} cam_feat;

typedef struct {
    int64_t index, length, from, to;
    int64_t *task_ids;
    int n_tasks;
    double *from_ts, *to_ts;     /* per camera */
    int64_t data_chunk, data_file;
    int64_t *vchunk, *vfile;     /* per camera */
    double *num_stats;           /* per numeric feature: 9 × width, concatenated */
    double *cam_stats;           /* per camera: 9 × 3 */
    int64_t *cam_count;
} ep_rec;

struct vla_lr_writer {
    char *root, *tmp;
    int fps;
    char *robot_type, *codec_req;
    int n_num, n_cam;
    num_feat *num;
    cam_feat *cam;
    int64_t ep_frames, ep_cap, all_rows, all_cap;
    int64_t *ep_task;
    char **tasks;
    int64_t n_tasks;
    ep_rec *eps;
    int64_t n_eps;
    vla_parquet_writer *data;
    int64_t data_chunk, data_file; /* of the data parquet being written */
    double data_mb, video_mb;
    int chunks_size;
    bool copy_video;
    int64_t stats_width_total;
    char video_codec_used[32];
};

static vla_status add_num(vla_lr_writer *w, const char *key, num_kind kind, int ndim, const int64_t *shape, json_t *names, int user) {
    num_feat *f = &w->num[w->n_num++];
    memset(f, 0, sizeof *f);
    f->key = vla_lr_strdup(key);
    f->kind = kind;
    f->ndim = ndim;
    f->width = 1;
    for (int i = 0; i < ndim; i++) {
        f->shape[i] = shape[i];
        f->width *= shape[i];
    }
    f->names = names;
    f->user = user;
    if (!f->key || f->width <= 0) return vla_error(VLA_ERR_INVALID_ARG, "feature '%s': bad shape", key);
    return VLA_OK;
}

static json_t *names_json(const vla_lr_feature_spec *s) {
    if (!s->names || s->n_names <= 0) return json_null();
    json_t *a = json_array();
    for (int i = 0; i < s->n_names; i++) json_array_append_new(a, json_string(s->names[i] ? s->names[i] : ""));
    return a;
}

static void writer_free(vla_lr_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n_num; i++) {
        free(w->num[i].key);
        free(w->num[i].ep);
        free(w->num[i].all);
        json_decref(w->num[i].names);
    }
    for (int i = 0; i < w->n_cam; i++) {
        free(w->cam[i].key);
        free(w->cam[i].fh);
        json_decref(w->cam[i].names);
        if (w->cam[i].vw) vla_video_writer_abort(w->cam[i].vw);
    }
    free(w->num);
    free(w->cam);
    for (int64_t i = 0; i < w->n_tasks; i++) free(w->tasks[i]);
    free(w->tasks);
    for (int64_t i = 0; i < w->n_eps; i++) {
        ep_rec *e = &w->eps[i];
        free(e->task_ids);
        free(e->from_ts);
        free(e->to_ts);
        free(e->vchunk);
        free(e->vfile);
        free(e->num_stats);
        free(e->cam_stats);
        free(e->cam_count);
    }
    free(w->eps);
    free(w->ep_task);
    if (w->data) vla_parquet_writer_abort(w->data);
    free(w->root);
    free(w->tmp);
    free(w->robot_type);
    free(w->codec_req);
    free(w);
}

static void rm_rf(const char *path) {
    if (vla_remove_tree(path) != VLA_OK) VLA_WARN("%s", vla_error_message());
}

vla_status vla_lr_writer_open(const char *root, const vla_lr_writer_opts *opts, vla_lr_writer **out) {
    *out = NULL;
    if (!root || !opts || opts->fps <= 0 || opts->n_features < 0 || opts->n_features > 1000)
        return vla_error(VLA_ERR_INVALID_ARG, "lerobot writer: bad options");
    if (vla_path_exists(root)) return vla_error(VLA_ERR_INVALID_ARG, "%s: already exists; a dataset is written into a new directory: choose another one, or move this one away", root);
    vla_lr_writer *w = calloc(1, sizeof *w);
    if (!w) return vla_error(VLA_ERR_NOMEM, "out of memory");
    w->root = vla_lr_strdup(root);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial-%d", root, (int)getpid());
    w->tmp = vla_lr_strdup(tmp);
    w->fps = opts->fps;
    w->robot_type = vla_lr_strdup(opts->robot_type ? opts->robot_type : "unknown");
    w->codec_req = vla_lr_strdup(opts->video_codec);
    w->data_mb = opts->data_files_size_in_mb > 0 ? opts->data_files_size_in_mb : 100;
    w->video_mb = opts->video_files_size_in_mb > 0 ? opts->video_files_size_in_mb : 200;
    w->chunks_size = opts->chunks_size > 0 ? opts->chunks_size : 1000;
    w->copy_video = opts->copy_video;
    w->num = calloc((size_t)opts->n_features + 5, sizeof *w->num);
    w->cam = calloc((size_t)opts->n_features + 1, sizeof *w->cam);
    vla_status st = w->num && w->cam && w->root && w->tmp ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
    int nuser = 0;
    static const char *reserved[] = {"timestamp", "frame_index", "episode_index", "index", "task_index"};
    for (int i = 0; st == VLA_OK && i < opts->n_features; i++) {
        const vla_lr_feature_spec *s = &opts->features[i];
        if (!s->key || !s->dtype || s->ndim < 1 || s->ndim > 3) { st = vla_error(VLA_ERR_INVALID_ARG, "feature %d: key, dtype and 1–3 dims needed", i); break; }
        for (int k = 0; k < 5; k++)
            if (!strcmp(s->key, reserved[k])) st = vla_error(VLA_ERR_INVALID_ARG, "feature '%s' is added by the writer", s->key);
        if (st != VLA_OK) break;
        if (!strcmp(s->dtype, "video")) {
            if (s->ndim != 3 || s->shape[2] != 3 || s->shape[0] < 2 || s->shape[1] < 2 || (s->shape[0] & 1) || (s->shape[1] & 1)) {
                st = vla_error(VLA_ERR_INVALID_ARG, "video feature '%s': shape must be [even height, even width, 3]", s->key);
                break;
            }
            cam_feat *c = &w->cam[w->n_cam++];
            c->key = vla_lr_strdup(s->key);
            c->h = (int)s->shape[0];
            c->w = (int)s->shape[1];
            c->names = json_pack("[sss]", "height", "width", "channels");
            continue;
        }
        num_kind kind;
        if (!strcmp(s->dtype, "float32")) kind = K_F32;
        else if (!strcmp(s->dtype, "float64")) kind = K_F64;
        else if (!strcmp(s->dtype, "int64")) kind = K_I64;
        else if (!strcmp(s->dtype, "bool")) kind = K_BOOL;
        else { st = vla_error(VLA_ERR_UNSUPPORTED, "feature '%s': dtype '%s' (writer supports float32, float64, int64, bool, video)", s->key, s->dtype); break; }
        st = add_num(w, s->key, kind, s->ndim, s->shape, names_json(s), nuser++);
    }
    int64_t one = 1;
    if (st == VLA_OK) st = add_num(w, "timestamp", K_F32, 1, &one, json_null(), -1);
    if (st == VLA_OK) st = add_num(w, "frame_index", K_I64, 1, &one, json_null(), -1);
    if (st == VLA_OK) st = add_num(w, "episode_index", K_I64, 1, &one, json_null(), -1);
    if (st == VLA_OK) st = add_num(w, "index", K_I64, 1, &one, json_null(), -1);
    if (st == VLA_OK) st = add_num(w, "task_index", K_I64, 1, &one, json_null(), -1);
    if (st == VLA_OK && vla_path_exists(w->tmp)) rm_rf(w->tmp);
    char p[4200];
    snprintf(p, sizeof p, "%s/meta/episodes/chunk-000", w->tmp);
    if (st == VLA_OK) st = vla_mkdirs(p);
    snprintf(p, sizeof p, "%s/data/chunk-000", w->tmp);
    if (st == VLA_OK) st = vla_mkdirs(p);
    for (int c = 0; st == VLA_OK && c < w->n_cam; c++) {
        snprintf(p, sizeof p, "%s/videos/%s/chunk-000", w->tmp, w->cam[c].key);
        st = vla_mkdirs(p);
    }
    if (st != VLA_OK) {
        if (w->tmp && vla_path_exists(w->tmp)) rm_rf(w->tmp);
        writer_free(w);
        return st;
    }
    *out = w;
    return VLA_OK;
}

static vla_status grow_f(float **p, int64_t n) {
    float *q = realloc(*p, (size_t)(n ? n : 1) * sizeof *q);
    if (!q) return vla_error(VLA_ERR_NOMEM, "out of memory");
    *p = q;
    return VLA_OK;
}

/* The file after (chunk, file): LeRobot's update_chunk_file_indices. */
static void next_file(const vla_lr_writer *w, int64_t *chunk, int64_t *file) {
    if (*file >= w->chunks_size - 1) {
        *file = 0;
        ++*chunk;
    } else {
        ++*file;
    }
}

/* "<tmp>/<dir>/chunk-CCC/file-FFF.<ext>", its directory created. */
static vla_status chunk_file_path(const vla_lr_writer *w, const char *dir, int64_t chunk, int64_t file, const char *ext, char *p,
                                  size_t cap) {
    snprintf(p, cap, "%s/%s/chunk-%03lld", w->tmp, dir, (long long)chunk);
    VLA_TRY(vla_mkdirs(p));
    size_t n = strlen(p);
    snprintf(p + n, cap - n, "/file-%03lld.%s", (long long)file, ext);
    return VLA_OK;
}

/* A camera's episode starts: its file rolls over to the next one when the
 * current file plus an episode like the last would reach the size, the file
 * is opened if needed (encoding, or copying packets of `copy_source`), and
 * the episode's start time and bytes are noted. */
static vla_status start_episode_video(vla_lr_writer *w, cam_feat *cf, const char *copy_source) {
    if (cf->vw && (double)(vla_video_writer_bytes(cf->vw) + cf->last_ep_bytes) >= w->video_mb * 1048576.0) {
        vla_status st = vla_video_writer_close(cf->vw);
        cf->vw = NULL;
        VLA_TRY(st);
        next_file(w, &cf->chunk, &cf->file);
    }
    if (!cf->vw) {
        char p[4200], dir[1100];
        snprintf(dir, sizeof dir, "videos/%s", cf->key);
        VLA_TRY(chunk_file_path(w, dir, cf->chunk, cf->file, "mp4", p, sizeof p));
        vla_video_writer_opts vo = {cf->w, cf->h, w->fps, w->codec_req, -1, -1};
        VLA_TRY(copy_source ? vla_video_writer_open_copy(p, copy_source, w->fps, &cf->vw) : vla_video_writer_open(p, &vo, &cf->vw));
        snprintf(w->video_codec_used, sizeof w->video_codec_used, "%s", vla_video_writer_codec(cf->vw));
    }
    cf->ep_start = vla_video_writer_time(cf->vw);
    cf->ep_start_bytes = vla_video_writer_bytes(cf->vw);
    cf->ep_started = 1;
    return VLA_OK;
}

static int64_t task_id(vla_lr_writer *w, const char *task) {
    for (int64_t i = 0; i < w->n_tasks; i++)
        if (!strcmp(w->tasks[i], task)) return i;
    char **t = realloc(w->tasks, (size_t)(w->n_tasks + 1) * sizeof *t);
    if (!t) return -1;
    w->tasks = t;
    w->tasks[w->n_tasks] = vla_lr_strdup(task);
    return w->tasks[w->n_tasks] ? w->n_tasks++ : -1;
}

/* One frame's histogram, kept until the episode ends and its length says which frames count. */
static vla_status hist_add(cam_feat *c, const uint8_t *rgb) {
    if (c->ep_frames >= c->fh_cap) {
        int64_t cap = c->fh_cap ? c->fh_cap * 2 : 256;
        uint32_t *g = realloc(c->fh, (size_t)cap * 3 * 256 * sizeof *g);
        if (!g) return vla_error(VLA_ERR_NOMEM, "add_frame: out of memory for '%s' image statistics", c->key);
        c->fh = g, c->fh_cap = cap;
    }
    uint64_t h[3 * 256] = {0};
    c->fh_pixels = vla_lr_hist_add(h, rgb, c->w, c->h);
    uint32_t *dst = c->fh + (size_t)c->ep_frames * 3 * 256;
    for (int k = 0; k < 3 * 256; k++) dst[k] = (uint32_t)h[k];
    return VLA_OK;
}

/* The episode's sampled frames into ep_hist; returns how many frames were sampled. */
static int64_t hist_episode(cam_feat *c) {
    int64_t L = c->ep_frames, n = vla_lr_image_sample_count(L);
    for (int64_t k = 0; k < n; k++) {
        const uint32_t *src = c->fh + (size_t)vla_lr_image_sample_frame(L, n, k) * 3 * 256;
        for (int b = 0; b < 3 * 256; b++) c->ep_hist[b] += src[b];
        c->ep_hist_n += c->fh_pixels;
    }
    return n;
}

vla_status vla_lr_writer_add_frame(vla_lr_writer *w, const char *task, const float *const *values, const uint8_t *const *images) {
    if (!task) return vla_error(VLA_ERR_INVALID_ARG, "add_frame: task is required");
    if (w->ep_frames == w->ep_cap) {
        int64_t nc = w->ep_cap ? w->ep_cap * 2 : 256;
        for (int i = 0; i < w->n_num; i++) VLA_TRY(grow_f(&w->num[i].ep, nc * w->num[i].width));
        int64_t *t = realloc(w->ep_task, (size_t)nc * sizeof *t);
        if (!t) return vla_error(VLA_ERR_NOMEM, "out of memory");
        w->ep_task = t;
        w->ep_cap = nc;
    }
    int64_t k = w->ep_frames;
    int64_t tid = task_id(w, task);
    if (tid < 0) return vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < w->n_num; i++) {
        num_feat *f = &w->num[i];
        float *dst = f->ep + k * f->width;
        if (f->user >= 0) {
            if (!values || !values[f->user]) return vla_error(VLA_ERR_INVALID_ARG, "add_frame: no values for '%s'", f->key);
            memcpy(dst, values[f->user], (size_t)f->width * sizeof *dst);
            if (f->kind == K_BOOL)
                for (int64_t j = 0; j < f->width; j++) dst[j] = dst[j] != 0;
        } else if (!strcmp(f->key, "timestamp")) dst[0] = (float)((double)k / w->fps);
        else if (!strcmp(f->key, "frame_index")) dst[0] = (float)k;
        else if (!strcmp(f->key, "episode_index")) dst[0] = (float)w->n_eps;
        else if (!strcmp(f->key, "index")) dst[0] = (float)(w->all_rows + k);
        else dst[0] = (float)tid;
    }
    for (int c = 0; c < w->n_cam; c++) {
        cam_feat *cf = &w->cam[c];
        if (!images || !images[c]) return vla_error(VLA_ERR_INVALID_ARG, "add_frame: no image for '%s'", cf->key);
        if (!w->copy_video) { /* copy mode: the frames come from vla_lr_writer_copy_video; this one feeds the stats */
            if (!cf->ep_started) VLA_TRY(start_episode_video(w, cf, NULL));
            VLA_TRY(vla_video_writer_add_rgb(cf->vw, images[c], cf->w * 3));
        }
        VLA_TRY(hist_add(cf, images[c]));
        cf->ep_frames++;
    }
    w->ep_task[k] = tid;
    w->ep_frames++;
    return VLA_OK;
}

vla_status vla_lr_writer_copy_video(vla_lr_writer *w, int camera, const char *source, double from_s, double to_s) {
    if (!w->copy_video) return vla_error(VLA_ERR_INVALID_ARG, "copy_video: the writer was not opened to copy video");
    if (camera < 0 || camera >= w->n_cam) return vla_error(VLA_ERR_INVALID_ARG, "copy_video: camera %d out of range", camera);
    cam_feat *cf = &w->cam[camera];
    if (cf->ep_started) return vla_error(VLA_ERR_INVALID_ARG, "copy_video: camera '%s' already has this episode's video", cf->key);
    VLA_TRY(start_episode_video(w, cf, source));
    return vla_video_writer_copy(cf->vw, source, from_s, to_s, &cf->ep_copied);
}

void vla_lr_writer_discard_episode(vla_lr_writer *w) {
    w->ep_frames = 0;
    for (int c = 0; c < w->n_cam; c++) {
        w->cam[c].ep_copied = 0;
        w->cam[c].ep_started = 0;
        w->cam[c].ep_frames = 0;
        w->cam[c].ep_hist_n = 0;
        memset(w->cam[c].ep_hist, 0, sizeof w->cam[c].ep_hist);
    }
}

int64_t vla_lr_writer_num_episodes(const vla_lr_writer *w) { return w->n_eps; }

/* ---- data parquet --------------------------------------------------------- */

static vla_pqw_type pq_type(num_kind k) {
    switch (k) {
    case K_F32: return VLA_PQW_FLOAT;
    case K_F64: return VLA_PQW_DOUBLE;
    case K_I64: return VLA_PQW_INT64;
    default: return VLA_PQW_BOOLEAN;
    }
}

/* HF `datasets` features (the "huggingface" schema metadata) so that
 * datasets.Dataset.from_parquet restores Sequence/Value types. */
static char *hf_metadata(const vla_lr_writer *w) {
    json_t *feats = json_object();
    static const char *hfd[] = {"float32", "float64", "int64", "bool"};
    for (int i = 0; i < w->n_num; i++) {
        const num_feat *f = &w->num[i];
        json_t *v = json_pack("{s:s,s:s}", "dtype", hfd[f->kind], "_type", "Value");
        if (f->width > 1) v = json_pack("{s:o,s:I,s:s}", "feature", v, "length", (json_int_t)f->width, "_type", "List");
        json_object_set_new(feats, f->key, v);
    }
    json_t *root = json_pack("{s:{s:o}}", "info", "features", feats);
    char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return s;
}

/* shape [1] is a scalar column (HF Value); anything wider a list (Sequence) */
static int is_list(const num_feat *f) { return f->width > 1 || f->ndim > 1; }

static vla_status write_data_row_group(vla_lr_writer *w) {
    int64_t n = w->ep_frames;
    vla_status st = VLA_OK;
    double ep_bytes = 0; /* uncompressed: the file can only come out smaller */
    for (int i = 0; i < w->n_num; i++) ep_bytes += (double)(n * w->num[i].width) * (w->num[i].kind == K_F32 ? 4 : w->num[i].kind == K_BOOL ? 1 : 8);
    if (w->data && (double)vla_parquet_writer_bytes(w->data) + ep_bytes >= w->data_mb * 1048576.0) {
        st = vla_parquet_writer_close(w->data); /* full: this episode starts the next file */
        w->data = NULL;
        VLA_TRY(st);
        next_file(w, &w->data_chunk, &w->data_file);
    }
    if (!w->data) {
        vla_parquet_field *fields = calloc((size_t)w->n_num, sizeof *fields);
        if (!fields) return vla_error(VLA_ERR_NOMEM, "out of memory");
        for (int i = 0; i < w->n_num; i++) {
            fields[i].name = w->num[i].key;
            fields[i].type = pq_type(w->num[i].kind);
            fields[i].is_list = is_list(&w->num[i]);
            fields[i].nullable = 0;
        }
        char p[4200];
        vla_parquet_write_options o = vla_parquet_write_defaults();
        st = chunk_file_path(w, "data", w->data_chunk, w->data_file, "parquet", p, sizeof p);
        if (st == VLA_OK) st = vla_parquet_writer_open(p, fields, w->n_num, &o, &w->data);
        free(fields);
        if (st != VLA_OK) return st;
        char *hf = hf_metadata(w);
        if (hf) st = vla_parquet_writer_add_kv(w->data, "huggingface", hf);
        free(hf);
        if (st != VLA_OK) return st;
    }
    vla_parquet_wcolumn *cols = calloc((size_t)w->n_num, sizeof *cols);
    void **bufs = calloc((size_t)w->n_num, sizeof *bufs);
    int64_t **offs = calloc((size_t)w->n_num, sizeof *offs);
    if (!cols || !bufs || !offs) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int i = 0; st == VLA_OK && i < w->n_num; i++) {
        const num_feat *f = &w->num[i];
        int64_t m = n * f->width;
        size_t es = f->kind == K_F32 ? 4 : f->kind == K_BOOL ? 1 : 8;
        bufs[i] = malloc((size_t)(m ? m : 1) * es);
        if (!bufs[i]) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
        for (int64_t j = 0; j < m; j++) {
            float v = f->ep[j];
            switch (f->kind) {
            case K_F32: ((float *)bufs[i])[j] = v; break;
            case K_F64: ((double *)bufs[i])[j] = v; break;
            case K_BOOL: ((uint8_t *)bufs[i])[j] = v != 0; break;
            case K_I64:
                /* the defaults are exact integers computed here, not floats */
                if (!strcmp(f->key, "frame_index")) ((int64_t *)bufs[i])[j] = j;
                else if (!strcmp(f->key, "episode_index")) ((int64_t *)bufs[i])[j] = w->n_eps;
                else if (!strcmp(f->key, "index")) ((int64_t *)bufs[i])[j] = w->all_rows + j;
                else if (!strcmp(f->key, "task_index") && f->user < 0) ((int64_t *)bufs[i])[j] = w->ep_task[j];
                else ((int64_t *)bufs[i])[j] = (int64_t)llround(v);
                break;
            }
        }
        cols[i].values = bufs[i];
        if (is_list(f)) {
            offs[i] = malloc((size_t)(n + 1) * sizeof(int64_t));
            if (!offs[i]) { st = vla_error(VLA_ERR_NOMEM, "out of memory"); break; }
            for (int64_t r = 0; r <= n; r++) offs[i][r] = r * f->width;
            cols[i].list_offsets = offs[i];
        }
    }
    if (st == VLA_OK) st = vla_parquet_writer_write_row_group(w->data, n, cols);
    for (int i = 0; bufs && i < w->n_num; i++) free(bufs[i]);
    free(bufs);
    free(cols);
    for (int i = 0; offs && i < w->n_num; i++) free(offs[i]);
    free(offs);
    return st;
}

vla_status vla_lr_writer_save_episode(vla_lr_writer *w) {
    int64_t n = w->ep_frames;
    if (n == 0) return vla_error(VLA_ERR_INVALID_ARG, "save_episode: the episode has no frames");
    for (int c = 0; w->copy_video && c < w->n_cam; c++)
        if (w->cam[c].ep_copied != n)
            return vla_error(VLA_ERR_FORMAT, "save_episode: %lld frames of '%s' were copied for an episode of %lld rows",
                             (long long)w->cam[c].ep_copied, w->cam[c].key, (long long)n);
    VLA_TRY(write_data_row_group(w));
    ep_rec *eps = realloc(w->eps, (size_t)(w->n_eps + 1) * sizeof *eps);
    if (!eps) return vla_error(VLA_ERR_NOMEM, "out of memory");
    w->eps = eps;
    ep_rec *e = &w->eps[w->n_eps];
    memset(e, 0, sizeof *e);
    e->index = w->n_eps;
    e->length = n;
    e->from = w->all_rows;
    e->to = w->all_rows + n;
    int64_t tw = 0;
    for (int i = 0; i < w->n_num; i++) tw += w->num[i].width;
    e->num_stats = malloc((size_t)(tw * VLA_LR_NSTAT + 1) * sizeof(double));
    e->cam_stats = malloc((size_t)(w->n_cam * 3 * VLA_LR_NSTAT + 1) * sizeof(double));
    e->cam_count = calloc((size_t)w->n_cam + 1, sizeof *e->cam_count);
    e->from_ts = calloc((size_t)w->n_cam + 1, sizeof(double));
    e->to_ts = calloc((size_t)w->n_cam + 1, sizeof(double));
    e->vchunk = calloc((size_t)w->n_cam + 1, sizeof(int64_t));
    e->vfile = calloc((size_t)w->n_cam + 1, sizeof(int64_t));
    e->data_chunk = w->data_chunk, e->data_file = w->data_file;
    e->task_ids = malloc((size_t)n * sizeof *e->task_ids);
    float *scratch = malloc((size_t)n * sizeof *scratch);
    w->n_eps++; /* owned by w from here, freed with it */
    if (!e->num_stats || !e->cam_stats || !e->cam_count || !e->from_ts || !e->to_ts || !e->vchunk || !e->vfile || !e->task_ids ||
        !scratch) {
        free(scratch);
        return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < n; k++) {
        int seen = 0;
        for (int t = 0; t < e->n_tasks && !seen; t++) seen = e->task_ids[t] == w->ep_task[k];
        if (!seen) e->task_ids[e->n_tasks++] = w->ep_task[k];
    }
    int64_t off = 0;
    vla_status st = VLA_OK;
    for (int i = 0; i < w->n_num && st == VLA_OK; i++) {
        num_feat *f = &w->num[i];
        vla_lr_numeric_stats(f->ep, n, f->width, f->width, scratch, e->num_stats + off * VLA_LR_NSTAT);
        off += f->width;
        if (w->all_rows + n > w->all_cap || !f->all) {
            int64_t nc = w->all_cap * 2 > w->all_rows + n ? w->all_cap * 2 : w->all_rows + n;
            st = grow_f(&f->all, nc * f->width);
        }
        if (st == VLA_OK) memcpy(f->all + w->all_rows * f->width, f->ep, (size_t)(n * f->width) * sizeof(float));
    }
    if (st == VLA_OK && w->all_rows + n > w->all_cap) w->all_cap = w->all_cap * 2 > w->all_rows + n ? w->all_cap * 2 : w->all_rows + n;
    free(scratch);
    for (int c = 0; c < w->n_cam; c++) {
        cam_feat *cf = &w->cam[c];
        e->from_ts[c] = cf->ep_start;
        e->to_ts[c] = vla_video_writer_time(cf->vw);
        e->vchunk[c] = cf->chunk, e->vfile[c] = cf->file;
        cf->last_ep_bytes = vla_video_writer_bytes(cf->vw) - cf->ep_start_bytes;
        int64_t sampled = hist_episode(cf); /* LeRobot's count: frames sampled */
        vla_lr_hist_stats(cf->ep_hist, cf->ep_hist_n, e->cam_stats + (size_t)c * 3 * VLA_LR_NSTAT);
        e->cam_count[c] = sampled;
        for (int k = 0; k < 3 * 256; k++) cf->hist[k] += cf->ep_hist[k];
        cf->hist_n += cf->ep_hist_n;
        cf->frames += sampled;
    }
    w->all_rows += n;
    vla_lr_writer_discard_episode(w);
    return st;
}

/* ---- meta ---------------------------------------------------------------------- */

static const char *codec_short(const char *enc) {
    if (!strcmp(enc, "libsvtav1") || !strcmp(enc, "libaom-av1") || !strcmp(enc, "libdav1d")) return "av1";
    if (!strcmp(enc, "libx264")) return "h264";
    if (!strcmp(enc, "libx265")) return "hevc";
    return enc;
}

/* LeRobot writes the sizes as integers; a fraction (tests) stays a number. */
static json_t *mb_json(double mb) { return mb == floor(mb) ? json_integer((json_int_t)mb) : json_real(mb); }

static vla_status write_info(vla_lr_writer *w) {
    json_t *feats = json_object();
    for (int c = 0; c < w->n_cam; c++) {
        const cam_feat *cf = &w->cam[c];
        json_t *inf = json_pack("{s:i,s:i,s:s,s:s,s:b,s:i,s:i,s:b,s:i,s:i}", "video.height", cf->h, "video.width", cf->w, "video.codec",
                                codec_short(w->video_codec_used[0] ? w->video_codec_used : "libsvtav1"), "video.pix_fmt", "yuv420p",
                                "video.is_depth_map", 0, "video.fps", w->fps, "video.channels", 3, "has_audio", 0, "video.g", 2,
                                "video.crf", 30);
        json_object_set_new(feats, cf->key, json_pack("{s:s,s:[i,i,i],s:O,s:o}", "dtype", "video", "shape", cf->h, cf->w, 3, "names",
                                                      cf->names, "info", inf));
    }
    static const char *dn[] = {"float32", "float64", "int64", "bool"};
    for (int i = 0; i < w->n_num; i++) {
        const num_feat *f = &w->num[i];
        json_t *shape = json_array();
        for (int d = 0; d < f->ndim; d++) json_array_append_new(shape, json_integer(f->shape[d]));
        json_object_set_new(feats, f->key, json_pack("{s:s,s:o,s:O,s:f}", "dtype", dn[f->kind], "shape", shape, "names",
                                                     f->names ? f->names : json_null(), "fps", (double)w->fps));
    }
    char split[64];
    snprintf(split, sizeof split, "0:%lld", (long long)w->n_eps);
    json_t *info = json_pack("{s:s,s:s,s:I,s:I,s:I,s:i,s:o,s:o,s:i,s:{s:s},s:s,s:o,s:o}", "codebase_version", "v3.0", "robot_type",
                             w->robot_type, "total_episodes", (json_int_t)w->n_eps, "total_frames", (json_int_t)w->all_rows,
                             "total_tasks", (json_int_t)w->n_tasks, "chunks_size", w->chunks_size, "data_files_size_in_mb",
                             mb_json(w->data_mb), "video_files_size_in_mb", mb_json(w->video_mb), "fps", w->fps, "splits", "train", split, "data_path",
                             "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", "video_path",
                             w->n_cam ? json_string("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4") : json_null(),
                             "features", feats);
    if (!info) return vla_error(VLA_ERR_INTERNAL, "info.json: cannot build");
    char p[4200];
    snprintf(p, sizeof p, "%s/meta/info.json", w->tmp);
    vla_status st = vla_json_write_file(p, info);
    json_decref(info);
    return st;
}

static vla_status write_stats(vla_lr_writer *w) {
    json_t *root = json_object();
    float *scratch = malloc((size_t)(w->all_rows + 1) * sizeof *scratch);
    if (!scratch) return vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < w->n_num; i++) {
        const num_feat *f = &w->num[i];
        double *o = malloc((size_t)(f->width * VLA_LR_NSTAT) * sizeof *o);
        if (!o) break;
        vla_lr_numeric_stats(f->all, w->all_rows, f->width, f->width, scratch, o);
        json_object_set_new(root, f->key, vla_lr_stats_json(o, f->width, w->all_rows, 0));
        free(o);
    }
    free(scratch);
    for (int c = 0; c < w->n_cam; c++) {
        double o[3 * VLA_LR_NSTAT];
        vla_lr_hist_stats(w->cam[c].hist, w->cam[c].hist_n, o);
        json_object_set_new(root, w->cam[c].key, vla_lr_stats_json(o, 3, w->cam[c].frames, 1));
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/meta/stats.json", w->tmp);
    vla_status st = vla_json_write_file(p, root);
    json_decref(root);
    return st;
}

static vla_status write_tasks(vla_lr_writer *w) {
    vla_parquet_field fields[2] = {{"task_index", VLA_PQW_INT64, 0, 0}, {"__index_level_0__", VLA_PQW_STRING, 0, 0}};
    char p[4200];
    snprintf(p, sizeof p, "%s/meta/tasks.parquet", w->tmp);
    vla_parquet_write_options o = vla_parquet_write_defaults();
    vla_parquet_writer *pw;
    VLA_TRY(vla_parquet_writer_open(p, fields, 2, &o, &pw));
    /* pandas restores the index named "task" from this */
    const char *pandas =
        "{\"index_columns\": [\"__index_level_0__\"], \"column_indexes\": [{\"name\": null, \"field_name\": null, "
        "\"pandas_type\": \"unicode\", \"numpy_type\": \"object\", \"metadata\": {\"encoding\": \"UTF-8\"}}], \"columns\": "
        "[{\"name\": \"task_index\", \"field_name\": \"task_index\", \"pandas_type\": \"int64\", \"numpy_type\": \"int64\", "
        "\"metadata\": null}, {\"name\": \"task\", \"field_name\": \"__index_level_0__\", \"pandas_type\": \"unicode\", "
        "\"numpy_type\": \"object\", \"metadata\": null}], \"creator\": {\"library\": \"vla.c\", \"version\": \"0.1\"}, "
        "\"pandas_version\": \"2.2.3\"}";
    vla_status st = vla_parquet_writer_add_kv(pw, "pandas", pandas);
    int64_t n = w->n_tasks;
    int64_t *idx = malloc((size_t)(n + 1) * sizeof *idx), *bo = malloc((size_t)(n + 1) * sizeof *bo);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += strlen(w->tasks[i]);
    char *bytes = malloc(total + 1);
    if (!idx || !bo || !bytes) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    if (st == VLA_OK) {
        bo[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            idx[i] = i;
            size_t l = strlen(w->tasks[i]);
            memcpy(bytes + bo[i], w->tasks[i], l);
            bo[i + 1] = bo[i] + (int64_t)l;
        }
        vla_parquet_wcolumn cols[2] = {{.values = idx}, {.byte_offsets = bo, .bytes = (const uint8_t *)bytes}};
        st = vla_parquet_writer_write_row_group(pw, n, cols);
    }
    free(idx);
    free(bo);
    free(bytes);
    if (st != VLA_OK) {
        vla_parquet_writer_abort(pw);
        return st;
    }
    return vla_parquet_writer_close(pw);
}

/* A growable set of episodes-parquet columns. */
typedef struct {
    vla_parquet_field *f;
    vla_parquet_wcolumn *c;
    void **owned;
    int n, cap, n_owned, own_cap;
} colset;

static void *own(colset *s, void *p) {
    if (!p) return NULL;
    if (s->n_owned == s->own_cap) {
        s->own_cap = s->own_cap ? s->own_cap * 2 : 64;
        void **o = realloc(s->owned, (size_t)s->own_cap * sizeof *o);
        if (!o) { free(p); return NULL; }
        s->owned = o;
    }
    s->owned[s->n_owned++] = p;
    return p;
}

static vla_status col_add(colset *s, const char *name, vla_pqw_type t, int is_list, const void *values, const int64_t *loff,
                          const int64_t *boff, const void *bytes) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        vla_parquet_field *f = realloc(s->f, (size_t)s->cap * sizeof *f);
        if (f) s->f = f;
        vla_parquet_wcolumn *c = realloc(s->c, (size_t)s->cap * sizeof *c);
        if (c) s->c = c;
        if (!f || !c) return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    char *nm = own(s, vla_lr_strdup(name));
    if (!values && !bytes) return vla_error(VLA_ERR_NOMEM, "out of memory");
    s->f[s->n] = (vla_parquet_field){nm, t, is_list, 0};
    s->c[s->n] = (vla_parquet_wcolumn){.values = values, .list_offsets = loff, .byte_offsets = boff, .bytes = bytes};
    s->n++;
    return nm ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
}

static int64_t *i64col(colset *s, int64_t n) { return own(s, malloc((size_t)(n + 1) * sizeof(int64_t))); }
static double *f64col(colset *s, int64_t n) { return own(s, malloc((size_t)(n + 1) * sizeof(double))); }

static vla_status write_episodes(vla_lr_writer *w) {
    colset s = {0};
    int64_t n = w->n_eps;
    vla_status st = VLA_OK;
    int64_t *v;
    /* episode_index, tasks, length */
    v = i64col(&s, n);
    for (int64_t i = 0; v && i < n; i++) v[i] = w->eps[i].index;
    st = col_add(&s, "episode_index", VLA_PQW_INT64, 0, v, NULL, NULL, NULL);
    int64_t nt = 0;
    size_t tb = 0;
    for (int64_t i = 0; i < n; i++) {
        nt += w->eps[i].n_tasks;
        for (int t = 0; t < w->eps[i].n_tasks; t++) tb += strlen(w->tasks[w->eps[i].task_ids[t]]);
    }
    int64_t *loff = i64col(&s, n), *boff = i64col(&s, nt);
    char *bytes = own(&s, malloc(tb + 1));
    if (loff && boff && bytes) {
        int64_t k = 0;
        loff[0] = 0;
        boff[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            for (int t = 0; t < w->eps[i].n_tasks; t++, k++) {
                const char *ts = w->tasks[w->eps[i].task_ids[t]];
                size_t l = strlen(ts);
                memcpy(bytes + boff[k], ts, l);
                boff[k + 1] = boff[k] + (int64_t)l;
            }
            loff[i + 1] = k;
        }
    }
    if (st == VLA_OK) st = col_add(&s, "tasks", VLA_PQW_STRING, 1, NULL, loff, boff, bytes);
    const char *ints[] = {"length", "data/chunk_index", "data/file_index", "dataset_from_index", "dataset_to_index"};
    for (int k = 0; st == VLA_OK && k < 5; k++) {
        v = i64col(&s, n);
        for (int64_t i = 0; v && i < n; i++) {
            const ep_rec *e = &w->eps[i];
            v[i] = k == 0 ? e->length : k == 1 ? e->data_chunk : k == 2 ? e->data_file : k == 3 ? e->from : e->to;
        }
        st = col_add(&s, ints[k], VLA_PQW_INT64, 0, v, NULL, NULL, NULL);
    }
    char name[1024];
    for (int c = 0; st == VLA_OK && c < w->n_cam; c++) {
        for (int k = 0; st == VLA_OK && k < 2; k++) {
            v = i64col(&s, n);
            for (int64_t i = 0; v && i < n; i++) v[i] = k ? w->eps[i].vfile[c] : w->eps[i].vchunk[c];
            snprintf(name, sizeof name, "videos/%s/%s", w->cam[c].key, k ? "file_index" : "chunk_index");
            st = col_add(&s, name, VLA_PQW_INT64, 0, v, NULL, NULL, NULL);
        }
        for (int k = 0; st == VLA_OK && k < 2; k++) {
            double *d = f64col(&s, n);
            for (int64_t i = 0; d && i < n; i++) d[i] = k ? w->eps[i].to_ts[c] : w->eps[i].from_ts[c];
            snprintf(name, sizeof name, "videos/%s/%s", w->cam[c].key, k ? "to_timestamp" : "from_timestamp");
            st = col_add(&s, name, VLA_PQW_DOUBLE, 0, d, NULL, NULL, NULL);
        }
    }
    /* stats/<feature>/<stat>: list<double> of width values per episode */
    int64_t off = 0;
    for (int i = 0; st == VLA_OK && i < w->n_num + w->n_cam; i++) {
        int is_cam = i >= w->n_num;
        const char *key = is_cam ? w->cam[i - w->n_num].key : w->num[i].key;
        int64_t width = is_cam ? 3 : w->num[i].width;
        int64_t *lo = i64col(&s, n);
        for (int64_t r = 0; lo && r <= n; r++) lo[r] = r * width;
        for (int k = 0; st == VLA_OK && k < VLA_LR_NSTAT; k++) {
            double *d = f64col(&s, n * width);
            for (int64_t r = 0; d && r < n; r++)
                for (int64_t j = 0; j < width; j++)
                    d[r * width + j] = is_cam ? w->eps[r].cam_stats[(size_t)(i - w->n_num) * 3 * VLA_LR_NSTAT + (size_t)k * 3 + j]
                                              : w->eps[r].num_stats[off * VLA_LR_NSTAT + k * width + j];
            snprintf(name, sizeof name, "stats/%s/%s", key, vla_lr_stat_names[k]);
            st = col_add(&s, name, VLA_PQW_DOUBLE, 1, d, lo, NULL, NULL);
        }
        int64_t *cnt = i64col(&s, n), *lo1 = i64col(&s, n);
        for (int64_t r = 0; cnt && lo1 && r < n; r++) {
            cnt[r] = is_cam ? w->eps[r].cam_count[i - w->n_num] : w->eps[r].length;
            lo1[r] = r;
        }
        if (lo1) lo1[n] = n;
        snprintf(name, sizeof name, "stats/%s/count", key);
        if (st == VLA_OK) st = col_add(&s, name, VLA_PQW_INT64, 1, cnt, lo1, NULL, NULL);
        if (!is_cam) off += width;
    }
    for (int k = 0; st == VLA_OK && k < 2; k++) {
        v = i64col(&s, n);
        for (int64_t i = 0; v && i < n; i++) v[i] = 0;
        st = col_add(&s, k ? "meta/episodes/file_index" : "meta/episodes/chunk_index", VLA_PQW_INT64, 0, v, NULL, NULL, NULL);
    }
    if (st == VLA_OK) {
        char p[4200];
        snprintf(p, sizeof p, "%s/meta/episodes/chunk-000/file-000.parquet", w->tmp);
        vla_parquet_write_options o = vla_parquet_write_defaults();
        vla_parquet_writer *pw;
        st = vla_parquet_writer_open(p, s.f, s.n, &o, &pw);
        if (st == VLA_OK) st = vla_parquet_writer_write_row_group(pw, n, s.c);
        if (st == VLA_OK) st = vla_parquet_writer_close(pw);
        else vla_parquet_writer_abort(pw);
    }
    for (int i = 0; i < s.n_owned; i++) free(s.owned[i]);
    free(s.owned);
    free(s.f);
    free(s.c);
    return st;
}

vla_status vla_lr_writer_close(vla_lr_writer *w) {
    vla_status st = VLA_OK;
    if (w->ep_frames) VLA_WARN("%s: an unsaved episode of %lld frames is dropped", w->root, (long long)w->ep_frames);
    if (w->n_eps == 0) st = vla_error(VLA_ERR_INVALID_ARG, "%s: no episode was saved", w->root);
    for (int c = 0; st == VLA_OK && c < w->n_cam; c++) {
        st = vla_video_writer_close(w->cam[c].vw);
        w->cam[c].vw = NULL;
    }
    if (st == VLA_OK) {
        st = vla_parquet_writer_close(w->data);
        w->data = NULL;
    }
    if (st == VLA_OK) st = write_tasks(w);
    if (st == VLA_OK) st = write_episodes(w);
    if (st == VLA_OK) st = write_stats(w);
    if (st == VLA_OK) st = write_info(w);
    if (st == VLA_OK && rename(w->tmp, w->root) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot rename %s into place: %s", w->root, w->tmp, strerror(errno));
    if (st != VLA_OK) {
        st = vla_error_context(st, "writing %s", w->root);
        rm_rf(w->tmp);
    } else {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", w->root);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = 0;
            vla_fsync_dir(parent);
        }
    }
    writer_free(w);
    return st;
}

void vla_lr_writer_abort(vla_lr_writer *w) {
    if (!w) return;
    char *tmp = vla_lr_strdup(w->tmp);
    writer_free(w);
    if (tmp) rm_rf(tmp);
    free(tmp);
}
