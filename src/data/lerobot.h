/* lerobot.h — LeRobot datasets (codebase v2.1 and v3.0): metadata, rows,
 * frames by timestamp, delta_timestamps windows, stats, validation, and a
 * v3.0 writer. The format is huggingface/lerobot's (src/lerobot/datasets/;
 * v2.1 = the tree before commit f55c6e89f "Dataset v3 (#1412)").
 *
 * Opening a dataset reads meta/ (info, tasks, episodes, stats) and every
 * numeric column of the data parquet files into memory as f32 rows (and the
 * index columns as int64): a training step then touches no parquet at all.
 * That costs total_frames × (numeric width) × 4 bytes — 0.4 MB for PushT,
 * ~100 MB for a 1M-frame 26-D dataset — and is what LeRobot's Arrow cache
 * holds too. Videos are not opened until a frame is asked for; a missing
 * video is an error of that request (and of `validate`), not of open, so the
 * metadata of a dataset without its videos can still be inspected.
 *
 * Rows are addressed by their global `index` (0..total_frames-1); open
 * checks that the files deliver them in that order.
 *
 * A dataset is immutable after open and may be shared by threads. Frames are
 * read through a vla_lr_reader, which owns open video decoders and is used
 * by one thread at a time (one reader per loader thread). */
#ifndef VLA_DATA_LEROBOT_H
#define VLA_DATA_LEROBOT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    VLA_LR_FLOAT32,
    VLA_LR_FLOAT64,
    VLA_LR_INT64,
    VLA_LR_INT32,
    VLA_LR_BOOL,
    VLA_LR_STRING,
    VLA_LR_VIDEO,
    VLA_LR_IMAGE,
    VLA_LR_OTHER
} vla_lr_dtype;

typedef struct {
    char *key;         /* "observation.state" */
    char *dtype_name;  /* as written in info.json */
    vla_lr_dtype dtype;
    int ndim;
    int64_t shape[4];
    int64_t width;     /* values per row (product of shape); H·W·C for cameras */
    int camera;        /* index in cameras[] for video/image features, else -1 */
    /* cameras */
    int height, width_px, channels;
    char codec[32], pix_fmt[32];
    /* numeric features: all rows, [total_frames × width] as f32 (NULL otherwise) */
    float *values;
} vla_lr_feature;

typedef struct {
    int64_t chunk, file;
    double from_ts, to_ts; /* the episode's seconds inside the (concatenated) mp4 */
} vla_lr_episode_video;

typedef struct {
    int64_t episode_index;
    int64_t length;
    int64_t from, to;       /* rows [from, to) of this dataset object (compact over a selection) */
    int64_t index_from;     /* the stored `index` of its first row (== from unless episodes are selected) */
    int64_t data_chunk, data_file;
    int64_t file_row;       /* row of the episode's first frame inside its data file */
    int n_tasks;
    char **tasks;
    vla_lr_episode_video *video; /* one per camera */
} vla_lr_episode;

/* One feature's stored statistics, flattened (image stats: 3 values, one per channel). */
typedef struct {
    char *key;
    int n;              /* values per statistic */
    double *min, *max, *mean, *std;
    double *q01, *q10, *q50, *q90, *q99; /* NULL when the file has no quantiles (v2.1) */
    int64_t count;
} vla_lr_stats;

typedef struct {
    char *root;
    int version;            /* 21 or 30 */
    char codebase_version[16];
    double fps;
    char *robot_type;
    int64_t total_episodes, total_frames, total_tasks, chunks_size;
    char *data_path, *video_path; /* templates from info.json (video_path may be NULL) */

    int n_features;
    vla_lr_feature *features;
    int n_cameras;
    int *camera_feature;    /* feature index of each camera */

    int64_t n_tasks;
    char **tasks;           /* by task_index */

    int64_t n_episodes;
    vla_lr_episode *episodes; /* in episode_index order (the selected ones, when selected) */
    int64_t n_episodes_listed; /* episodes the metadata lists (n_episodes unless selected) */
    bool selected;            /* opened with an episode selection (vla_lr_open_opts.episodes) */
    int64_t n_selected_dropped; /* listed episodes left out by the selection (kept after n_episodes for close) */
    bool meta_only;           /* opened with meta_only: no rows were read (n_rows == 0) */

    int64_t n_rows;
    float *timestamp;
    int64_t *frame_index, *episode_index, *index, *task_index;
    int64_t *row_episode;   /* position in episodes[] of each row */

    int n_stats;
    vla_lr_stats *stats;

    /* Non-finite values found in numeric features at open (also logged as a
     * warning naming the first one): a trainer must refuse a dataset with
     * nonzero count rather than train on NaN; `validate` lists them. */
    int64_t n_nonfinite;

    json_t *info;           /* meta/info.json as read */

    /* Opened from a shard set (data/shards.h): rows came from the shards and
     * frames come from their mapped pixels, not from data files and videos. */
    struct vla_shard_set *shards;
} vla_lerobot;

/* `root` may also be a shard set written by `vla data prepare` (it holds
 * manifest.json; data/shards.h): the same dataset, decoded once. */
vla_status vla_lerobot_open(const char *root, vla_lerobot **out);
void vla_lerobot_close(vla_lerobot *ds);

/* PARTIAL DATASETS. LeRobot downloads a subset of episodes when asked
 * (`episodes=[…]`); info.json still lists them all. Opening with
 * `episodes` reads only those episodes' rows (LeRobot's
 * --dataset.episodes): rows are addressed compactly, 0..n_rows-1 over the
 * selected episodes in episode_index order, and each row's stored `index`
 * stays in ds->index. Without a selection a dataset whose data files are
 * partly missing is refused by a message that counts the missing episodes
 * and suggests --dataset.episodes with the present ones. `meta_only` reads
 * meta/ and nothing else (for `vla dataset info`). */
typedef struct {
    const int64_t *episodes; /* episode_index values, any order, no duplicates (NULL: all) */
    int64_t n_episodes;
    bool meta_only;
} vla_lr_open_opts;
vla_status vla_lerobot_open_opts(const char *root, const vla_lr_open_opts *opts, vla_lerobot **out);
/* "1,2,4", "3-7", "[1, 2, 4]" (LeRobot's list) into a malloc'd array. */
vla_status vla_lerobot_parse_episodes(const char *spec, int64_t **episodes, int64_t *n);
/* LeRobot's name for a dataset, --dataset.repo_id=ORG/NAME (several,
 * comma-separated, for a mixture): the local copy in LeRobot's cache,
 * $HF_LEROBOT_HOME/ORG/NAME, else $HF_HOME/lerobot/ORG/NAME, else
 * $XDG_CACHE_HOME/huggingface/lerobot/ORG/NAME, else
 * ~/.cache/huggingface/lerobot/ORG/NAME (LeRobot's own rule). The roots,
 * comma-separated, go to `roots`. A repo id that is not there (no
 * meta/info.json) is an error that names where it looked and how to
 * download it; nothing is downloaded here. */
vla_status vla_lerobot_repo_roots(const char *repo_ids, char *roots, size_t cap);

/* Which episodes have their data file: returns how many; *first_missing is
 * the first missing one's episode_index (-1: none); `list` (may be NULL)
 * receives the present ones as a --dataset.episodes value ("0-2,5", cut at
 * cap). One stat per distinct file. */
int64_t vla_lerobot_presence(const vla_lerobot *ds, int64_t *first_missing, char *list, size_t cap);
/* The compact row of a stored `index` value, or -1 when not loaded. */
int64_t vla_lerobot_row_of_index(const vla_lerobot *ds, int64_t index);

/* Metadata only (no data files, no stats): info.json text plus, for v2.1,
 * episodes.jsonl and tasks.jsonl texts (either may be NULL). Episode rows
 * come from cumulative lengths. For the fuzzer and for tools. */
vla_status vla_lerobot_open_meta_buffers(const char *info_json, size_t info_len, const char *episodes_jsonl,
                                         size_t episodes_len, const char *tasks_jsonl, size_t tasks_len,
                                         vla_lerobot **out);

/* NULL when absent (no error recorded). */
const vla_lr_feature *vla_lerobot_feature(const vla_lerobot *ds, const char *key);
const vla_lr_stats *vla_lerobot_stats(const vla_lerobot *ds, const char *key);
/* Camera index for a key, or -1. */
int vla_lerobot_camera(const vla_lerobot *ds, const char *key);

/* Path of camera `camera`'s video for episode position `ep` (in episodes[]). */
vla_status vla_lerobot_video_file(const vla_lerobot *ds, int camera, int64_t ep, char *buf, size_t cap);
/* Path of the data parquet holding episode position `ep`. */
vla_status vla_lerobot_data_file(const vla_lerobot *ds, int64_t ep, char *buf, size_t cap);

/* ---- delta_timestamps windows (LeRobot's _get_query_indices) ----------
 * Each delta (seconds) must be a multiple of 1/fps within tol_s; it becomes
 * the frame offset round(d·fps). */
vla_status vla_lerobot_delta_offsets(const vla_lerobot *ds, const double *deltas, int n, double tol_s,
                                     int *offsets);
/* Rows of the window around `row`: row + offset clamped to the episode, with
 * is_pad[i] = 1 where the unclamped row fell outside it. */
void vla_lerobot_window_rows(const vla_lerobot *ds, int64_t row, const int *offsets, int n, int64_t *rows,
                             uint8_t *is_pad);
/* A numeric feature's values over the window: out is [n × width]. */
vla_status vla_lerobot_window(const vla_lerobot *ds, const char *key, int64_t row, const int *offsets, int n,
                              float *out, uint8_t *is_pad);

/* ---- frames ------------------------------------------------------------- */

typedef struct vla_lr_reader vla_lr_reader;
vla_status vla_lr_reader_open(const vla_lerobot *ds, vla_lr_reader **out);
void vla_lr_reader_close(vla_lr_reader *r);
/* Camera `camera` at global row `row`, RGB24 at out_w×out_h (0: native) into
 * rgb. Video: time = episode from_timestamp + row timestamp, must decode
 * within tol_s (LeRobot's tolerance_s; ≤ 0 means 1e-4). */
vla_status vla_lr_reader_frame(vla_lr_reader *r, int camera, int64_t row, int out_w, int out_h, double tol_s,
                               uint8_t *rgb);
/* Several rows of one camera (a window), decoded in ascending time order. */
vla_status vla_lr_reader_frames(vla_lr_reader *r, int camera, const int64_t *rows, int n, int out_w, int out_h,
                                double tol_s, uint8_t *rgb);

/* Decoder counters summed over the reader's open decoders (seeks, frames
 * decoded, cache hits, frames returned): how much forward decoding and
 * reuse a sampling pattern gets. `open_decoders` receives how many are open. */
void vla_lr_reader_counters(const vla_lr_reader *r, int64_t *seeks, int64_t *decoded, int64_t *cache_hits,
                            int64_t *returned, int *open_decoders);

/* Several cameras at once, in parallel (one thread per camera): camera
 * cams[j] at rows[0..n) into rgb[j] (n frames each). The rows of one call
 * must lie in one episode (a window) for video cameras. */
vla_status vla_lr_reader_sample(vla_lr_reader *r, const int *cams, int n_cams, const int64_t *rows, int n,
                                int out_w, int out_h, double tol_s, uint8_t *const *rgb);

/* ---- stats ----------------------------------------------------------------
 * Recompute stats.json-style statistics from the data (numeric features:
 * min/max/mean/std (population)/count and exact q01…q99 by sorting; cameras,
 * when `images`: per-channel values in [0,1] over the frames and pixels
 * LeRobot's compute_stats samples — per episode, about L^0.75 frames (all of
 * a short episode), every s-th pixel (lerobot_internal.h) — the rule the
 * writer's stats.json follows, so counts agree exactly; quantiles exact from
 * 256-bin histograms). New JSON reference. */
vla_status vla_lerobot_compute_stats(const vla_lerobot *ds, bool images, json_t **out);
/* Compare recomputed stats with the stored ones: one entry per feature and
 * statistic {"feature","stat","max_abs_diff","tolerance","ok"[,"note"]} into
 * `report`; *n_bad counts judged entries over tolerance. Not judged (a
 * "note" says why): quantiles (LeRobot's stored ones are per-episode
 * envelopes) and a video camera's min and max (the writer's statistics are
 * of the frames before lossy encoding, whose chroma subsampling moves the
 * extremes; its mean and std are judged at 0.05). */
vla_status vla_lerobot_compare_stats(const vla_lerobot *ds, const json_t *computed, json_t *report, int *n_bad);

/* ---- validation -------------------------------------------------------------
 * Read every file and check: row counts against info and episodes, contiguous
 * `index`, episode ranges, frame_index, timestamps consistent with fps,
 * finite numeric values, task indices, video presence, duration and
 * decodability (first and last frame of every episode). Problems are appended
 * to `problems` as {"file": ..., "reason": ...}. Returns VLA_OK when the
 * checks could run (clean or not); a dataset that cannot even be opened gives
 * one problem and the open error. */
vla_status vla_lerobot_validate(const char *root, json_t *problems);
/* The same over a selection of episodes (opts->episodes; meta_only ignored),
 * and with v->all_frames every frame of every video the episodes use is
 * decoded (files in parallel, one thread per core; vla_video_scan) and each
 * decode problem is listed with its file, camera, episode and time; with
 * v->progress a progress line goes to stderr. v may be NULL. */
typedef struct {
    bool all_frames;
    bool progress;
} vla_lr_validate_opts;
vla_status vla_lerobot_validate_opts(const char *root, const vla_lr_open_opts *opts, const vla_lr_validate_opts *v,
                                     json_t *problems);

/* ---- writer (v3.0) -------------------------------------------------------- */

typedef struct {
    const char *key;
    const char *dtype;    /* "float32", "int64", "bool", "video" */
    int ndim;
    int64_t shape[3];     /* video: height, width, 3 */
    const char *const *names; /* optional per-channel names */
    int n_names;
} vla_lr_feature_spec;

typedef struct {
    int fps;
    const char *robot_type;
    const vla_lr_feature_spec *features; /* user features; timestamp/frame_index/episode_index/index/task_index are added */
    int n_features;
    const char *video_codec; /* NULL: libsvtav1 (libx264 fallback) */
    /* Roll-over as LeRobot v3.0 does: the next episode goes to a new file
     * (file_index + 1; chunk_index + 1 and file_index 0 after chunks_size
     * files) when the current file plus the episode would reach the size.
     * Episodes never straddle files. ≤ 0: LeRobot's defaults, 100 MB, 200 MB
     * and 1000 files per chunk. */
    double data_files_size_in_mb, video_files_size_in_mb;
    int chunks_size;
    /* Cameras are filled with compressed packets copied from existing files
     * (vla_lr_writer_copy_video, once per camera and episode) instead of
     * encoding: the images given to add_frame then only feed the image
     * statistics. */
    bool copy_video;
} vla_lr_writer_opts;

typedef struct vla_lr_writer vla_lr_writer;

/* The dataset is built in "<root>.partial-<pid>" and renamed to `root` by
 * close, so `root` is complete or absent. `root` must not exist. */
vla_status vla_lr_writer_open(const char *root, const vla_lr_writer_opts *opts, vla_lr_writer **out);
/* One frame: values[i] for the i-th non-video feature (width floats; bools
 * as 0/1), images[j] for the j-th video feature (RGB24, tightly packed). */
vla_status vla_lr_writer_add_frame(vla_lr_writer *w, const char *task, const float *const *values,
                                   const uint8_t *const *images);
/* Copy mode: camera `camera`'s frames of this episode are the packets of
 * `source` in [from_s, to_s) (vla_video_writer_copy; VLA_ERR_UNSUPPORTED
 * when they cannot be cut there); they must be as many as the episode's
 * rows by save_episode. */
vla_status vla_lr_writer_copy_video(vla_lr_writer *w, int camera, const char *source, double from_s, double to_s);
vla_status vla_lr_writer_save_episode(vla_lr_writer *w);
void vla_lr_writer_discard_episode(vla_lr_writer *w);
int64_t vla_lr_writer_num_episodes(const vla_lr_writer *w);
/* Write meta/ and rename into place. Frees w either way. */
vla_status vla_lr_writer_close(vla_lr_writer *w);
void vla_lr_writer_abort(vla_lr_writer *w);

/* Rewrite any readable dataset (v2.1 or v3.0) as v3.0 at `dst` (absent):
 * rows, tasks and episodes as they are. Videos: with video_codec NULL the
 * compressed packets are copied, as LeRobot's converter remuxes (frames are
 * still decoded once, for the image statistics); where they cannot be cut
 * by episode (an episode not starting on a keyframe, B-frames, cameras whose
 * files differ in stream) everything is re-encoded with the writer's
 * defaults instead, with an info line saying why. A codec named: re-encoded
 * with it. Files roll over by LeRobot's default sizes. */
vla_status vla_lerobot_convert(const char *src_root, const char *dst_root, const char *video_codec);
/* The same over a selection of episodes (episodes renumbered 0..n-1, as
 * LeRobot writes a subset). */
vla_status vla_lerobot_convert_opts(const char *src_root, const vla_lr_open_opts *opts, const char *dst_root,
                                    const char *video_codec);

#endif
