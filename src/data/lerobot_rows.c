/* lerobot_rows.c — the rows: every numeric column of the data parquet files
 * read into memory (one float array per feature, plus the index columns),
 * checked against the metadata (totals, contiguous index, every row in an
 * episode), and delta_timestamps windows over them. Format:
 * huggingface/lerobot src/lerobot/datasets/. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "data/lerobot_internal.h"
#include "data/shards.h"
#include "io/parquet.h"
#include "io/video.h"

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

vla_status vla_lr_read_col_f64(vla_parquet_file *pq, const char *name, double **out, int64_t *rows) {
    int64_t n = vla_parquet_num_rows(pq);
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    if (!*out) return vla_error(VLA_ERR_NOMEM, "out of memory");
    VLA_TRY(read_numeric(pq, name, 1, NULL, *out, n, rows));
    if (*rows != n)
        return vla_error(VLA_ERR_FORMAT, "%s: column '%s' has %lld values for %lld rows", vla_parquet_path(pq), name,
                         (long long)*rows, (long long)n);
    return VLA_OK;
}

bool vla_lr_is_row_feature(const vla_lr_feature *f) {
    return f->dtype != VLA_LR_VIDEO && f->dtype != VLA_LR_IMAGE && f->dtype != VLA_LR_STRING && vla_lr_is_numeric_dtype(f->dtype_name);
}

vla_status vla_lr_alloc_rows(vla_lerobot *ds, int64_t cap) {
    for (int i = 0; i < ds->n_features; i++) {
        vla_lr_feature *f = &ds->features[i];
        if (!vla_lr_is_row_feature(f)) continue;
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
        st = vla_lr_alloc_rows(ds, nc);
        if (st == VLA_OK) *cap = nc;
    }
    int64_t r0 = ds->n_rows;
    for (int i = 0; st == VLA_OK && i < ds->n_features; i++) {
        vla_lr_feature *f = &ds->features[i];
        if (!vla_lr_is_row_feature(f)) continue;
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

/* Position in ds->episodes of an episode_index, or -1 (episodes are sorted). */
static int64_t episode_pos(const vla_lerobot *ds, int64_t episode_index) {
    int64_t lo = 0, hi = ds->n_episodes - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (ds->episodes[mid].episode_index < episode_index) lo = mid + 1;
        else if (ds->episodes[mid].episode_index > episode_index) hi = mid - 1;
        else return mid;
    }
    return -1;
}

/* Selection: of the rows [r0, n_rows) just read from one file, keep those
 * of selected episodes (in place, in order); each kept episode's file_row
 * is where its rows start inside the file. */
static void keep_selected_rows(vla_lerobot *ds, int64_t r0) {
    int64_t w = r0;
    for (int64_t r = r0; r < ds->n_rows; r++) {
        int64_t e = episode_pos(ds, ds->episode_index[r]);
        if (e < 0) continue;
        if (w == r0 || ds->episode_index[w - 1] != ds->episode_index[r]) ds->episodes[e].file_row = r - r0;
        if (w != r) {
            for (int i = 0; i < ds->n_features; i++) {
                vla_lr_feature *f = &ds->features[i];
                if (f->values) memcpy(f->values + w * f->width, f->values + r * f->width, (size_t)f->width * sizeof(float));
            }
            ds->timestamp[w] = ds->timestamp[r];
            ds->frame_index[w] = ds->frame_index[r];
            ds->episode_index[w] = ds->episode_index[r];
            ds->index[w] = ds->index[r];
            ds->task_index[w] = ds->task_index[r];
        }
        w++;
    }
    ds->n_rows = w;
}

static vla_status load_data(vla_lerobot *ds, json_t *problems) {
    int64_t cap = ds->total_frames > 0 ? ds->total_frames : 1024;
    VLA_TRY(vla_lr_alloc_rows(ds, cap));
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
            vla_lr_problem(problems, vla_lr_rel(ds, path), "data file is missing (episode %lld)", (long long)ds->episodes[ep].episode_index);
            continue;
        }
        int64_t r0 = ds->n_rows;
        vla_status fs = load_data_file(ds, path, &cap);
        if (fs == VLA_OK && ds->selected) keep_selected_rows(ds, r0);
        if (fs != VLA_OK) {
            if (!problems) { st = fs; break; }
            vla_lr_problem(problems, vla_lr_rel(ds, path), "%s", vla_error_message());
        }
    }
    /* each episode's first row inside its file */
    for (int64_t e = 0; st == VLA_OK && !ds->selected && e < ds->n_episodes; e++) {
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
    if (!ds->selected && ds->n_rows != ds->total_frames)
        REPORT(info_file, "total_frames is %lld but the data files hold %lld rows", (long long)ds->total_frames, (long long)ds->n_rows);
    if (ds->n_episodes_listed != ds->total_episodes)
        REPORT(info_file, "total_episodes is %lld but %s lists %lld episodes", (long long)ds->total_episodes, ep_file, (long long)ds->n_episodes_listed);
    int64_t sum = ds->n_episodes ? ds->episodes[ds->n_episodes - 1].to : 0;
    if (sum != ds->n_rows)
        REPORT(ep_file, "episodes cover rows [0, %lld) but the data files hold %lld rows", (long long)sum, (long long)ds->n_rows);
    if (ds->total_tasks >= 0 && ds->total_tasks != ds->n_tasks)
        REPORT(info_file, "total_tasks is %lld but the tasks file lists %lld", (long long)ds->total_tasks, (long long)ds->n_tasks);
    /* row → episode */
    for (int64_t r = 0; r < ds->n_rows; r++) ds->row_episode[r] = -1;
    for (int64_t e = 0; e < ds->n_episodes; e++)
        for (int64_t r = ds->episodes[e].from; r < ds->episodes[e].to && r < ds->n_rows; r++) ds->row_episode[r] = e;
    /* `index` runs on inside each episode from where the metadata puts it (0, 1, 2, … over a whole dataset) */
    for (int64_t r = 0; r < ds->n_rows; r++) {
        int64_t e = ds->row_episode[r];
        int64_t want = e >= 0 ? ds->episodes[e].index_from + (r - ds->episodes[e].from) : r;
        if (ds->index[r] != want) {
            char df[2048] = "data";
            if (e >= 0) vla_lerobot_data_file(ds, e, df, sizeof df);
            REPORT(vla_lr_rel(ds, df), "column 'index' is not contiguous: row %lld has index %lld", (long long)r, (long long)ds->index[r]);
            break;
        }
    }
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

vla_status vla_lr_load_rows(vla_lerobot *ds, json_t *problems, const char *ep_file) {
    VLA_TRY(ds->shards ? vla_shards_load_rows(ds) : load_data(ds, problems));
    VLA_TRY(check_rows(ds, problems, "meta/info.json", ep_file));
    count_nonfinite(ds);
    return VLA_OK;
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
