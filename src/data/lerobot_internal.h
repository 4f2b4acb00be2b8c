/* lerobot_internal.h — helpers shared by the lerobot_*.c files (not API).
 *
 * Reading a dataset is split by what is read: lerobot_open.c runs the
 * sequence (info.json → tasks → episode index → stats → rows) and holds the
 * shared helpers; lerobot_meta.c reads info.json and the tasks,
 * lerobot_episodes.c the episode index, lerobot_stats_meta.c the shipped
 * stats, lerobot_rows.c the data files and windows, lerobot_frames.c the
 * camera frames. */
#ifndef VLA_DATA_LEROBOT_INTERNAL_H
#define VLA_DATA_LEROBOT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/lerobot.h"
#include "io/parquet.h"

/* Open with consistency problems collected into `problems` (each
 * {"file","reason"}) instead of failing; files that cannot be read are
 * skipped. problems == NULL is the strict open of vla_lerobot_open. */
vla_status vla_lr_open_internal(const char *root, json_t *problems, const vla_lr_open_opts *opts, vla_lerobot **out);

/* lerobot_select.c: keep only the selected episodes (rows recomputed
 * compactly, index_from kept); an episode_index not listed is an error. */
vla_status vla_lr_apply_selection(vla_lerobot *ds, const int64_t *episodes, int64_t n);
/* lerobot_select.c: strict open of a partial download: the error that counts
 * the missing episodes and suggests --dataset.episodes (VLA_OK when every
 * data file is there). */
vla_status vla_lr_check_present(const vla_lerobot *ds);

/* Append {"file": file (relative to the root), "reason": ...}. */
void vla_lr_problem(json_t *problems, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Statistics of one channel-interleaved block [n × width]: 10 arrays of
 * `width` doubles in the order min,max,mean,std,q01,q10,q50,q90,q99 (9
 * arrays; count = n). Non-finite values are skipped. `scratch` holds n floats. */
#define VLA_LR_NSTAT 9
extern const char *const vla_lr_stat_names[VLA_LR_NSTAT];
extern const double vla_lr_quantiles[5];
void vla_lr_numeric_stats(const float *v, int64_t n, int64_t width, int64_t stride, float *scratch, double *out);

/* Per-channel image statistics from 256-bin histograms (values /255). hist is
 * [3][256], sums [3] of value and value² (in [0,1] units); out as above with width 3. */
void vla_lr_hist_stats(const uint64_t *hist, int64_t count_per_channel, double *out);

/* Which pixels image statistics see — one rule for the writer (stats.json
 * and the per-episode stats) and `vla dataset stats`, LeRobot's
 * compute_stats.py: per episode of L frames, n = L when L < 100, else
 * max(100, min(int(L^0.75), 10000)) frames at numpy's
 * round(linspace(0, L-1, n)); of each frame every s-th pixel of every s-th
 * row, s = 1 when the long side is under 300 px, else int(long side / 150)
 * (about 150 px). Counts are in frames sampled. */
int64_t vla_lr_image_sample_count(int64_t ep_len);
int64_t vla_lr_image_sample_frame(int64_t ep_len, int64_t n, int64_t k);
int vla_lr_image_stride(int width, int height);
/* Add one frame's sampled pixels to hist [3][256]; returns the pixel count. */
int64_t vla_lr_hist_add(uint64_t *hist, const uint8_t *rgb, int width, int height);

/* Stats JSON object of one feature from out[] (layout above); image: nested 3×1×1. */
json_t *vla_lr_stats_json(const double *out, int64_t width, int64_t count, int image);

/* Expand a path template. */
typedef struct {
    int64_t chunk, file, episode_index;
    const char *video_key, *image_key;
} vla_lr_tmpl_vars;
vla_status vla_lr_format_path(const char *tmpl, const vla_lr_tmpl_vars *v, char *buf, size_t cap);

int vla_lr_is_numeric_dtype(const char *dtype);
/* lerobot_rows.c: a feature whose values are held per row in memory (numeric, not a camera or a string). */
bool vla_lr_is_row_feature(const vla_lr_feature *f);

/* ---- shared by the reader files (lerobot_open.c) ---- */

/* malloc'd copies (NULL when out of memory; vla_lr_strdup(NULL) is NULL). */
char *vla_lr_strdup(const char *s);
char *vla_lr_strndup(const char *s, size_t n);
/* `path` relative to the dataset root when inside it (for problem reports). */
const char *vla_lr_rel(const vla_lerobot *ds, const char *path);

/* The next non-empty line of a JSONL buffer, parsed into *obj (NULL at the
 * end of the buffer); c->where ("what:line") locates it for messages. Start
 * with a zeroed cursor. */
typedef struct {
    size_t pos;
    int line;
    char where[2600];
} vla_lr_jsonl_cursor;
vla_status vla_lr_jsonl_next(const char *what, const char *text, size_t len, vla_lr_jsonl_cursor *c, json_t **obj);
/* Call fn for each non-empty line of a JSONL buffer (each must be an
 * object); `what` and the line number locate errors. */
typedef vla_status (*vla_lr_jsonl_fn)(vla_lerobot *ds, const char *what, int line, json_t *obj);
vla_status vla_lr_parse_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len, vla_lr_jsonl_fn fn);

/* ---- the steps of opening (each fails with a message naming the file) ---- */

/* lerobot_meta.c: ds->info (parsed JSON of `what`) into version, fps,
 * features, cameras and path templates. */
vla_status vla_lr_parse_info(vla_lerobot *ds, const char *what);
/* lerobot_meta.c: tasks from JSONL text, then checked for gaps in task_index. */
vla_status vla_lr_tasks_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len);
/* lerobot_meta.c: meta/tasks.parquet (v3.0; tasks.jsonl where a v3.0 writer
 * left that) or meta/tasks.jsonl (v2.1). */
vla_status vla_lr_load_tasks(vla_lerobot *ds);
/* lerobot_episodes.c: v2.1 episodes from JSONL text, laid out one data file
 * and one video per episode. */
vla_status vla_lr_episodes_jsonl(vla_lerobot *ds, const char *what, const char *text, size_t len);
/* lerobot_episodes.c: the episode index of either version, checked to tile
 * the rows (problems != NULL: mismatches are listed instead of failing);
 * *ep_file is the index's name for later reports. */
vla_status vla_lr_load_episodes(vla_lerobot *ds, json_t *problems, const char **ep_file);
/* lerobot_stats_meta.c: meta/stats.json or (v2.1) meta/episodes_stats.jsonl
 * aggregated; optional (a dataset without stats loads), and with problems
 * != NULL a bad stats file is listed instead of failing. */
vla_status vla_lr_load_stats(vla_lerobot *ds, json_t *problems);
void vla_lr_stats_free(vla_lr_stats *s);
/* lerobot_rows.c: every data file's numeric columns into memory, checked
 * against info.json and the episode index, non-finite values counted. */
vla_status vla_lr_load_rows(vla_lerobot *ds, json_t *problems, const char *ep_file);
/* lerobot_rows.c: (re)allocate every per-row array (numeric features, index
 * columns, row → episode) for `cap` rows. */
vla_status vla_lr_alloc_rows(vla_lerobot *ds, int64_t cap);
/* lerobot_rows.c: a scalar numeric column of all row groups, as double
 * (*out malloc'd, one value per row). */
vla_status vla_lr_read_col_f64(vla_parquet_file *pq, const char *name, double **out, int64_t *rows);

#endif
