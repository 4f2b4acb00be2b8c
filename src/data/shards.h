/* shards.h — training shards: a LeRobot dataset decoded once (`vla data
 * prepare`) into files a trainer maps and reads with no video decode.
 *
 * A shard set is a directory:
 *
 *   SHARDS/manifest.json        what was prepared, from what, and every shard
 *                               (written last, atomically: without it the set
 *                               is unfinished and a rerun of prepare resumes)
 *   SHARDS/meta/                the source dataset's meta/ (info, tasks,
 *                               episodes, stats) as it was
 *   SHARDS/shard-00000.vshard   consecutive whole episodes, ~shard_mb each
 *
 * A shard file (little-endian; numeric sections start on 64-byte and
 * camera sections on 4096-byte boundaries, so frames can be mapped; the
 * bytes between are zeros, and checked, so no byte goes unverified):
 *
 *   "VLASHRD1" · u32 header length · u32 CRC-32 of the header
 *   header: JSON {"format":"vla-shard","version":1,"shard":k,"rows":N,
 *                 "episodes":[[episode_index, length], …],
 *                 "sections":[{"name","kind","width","offset","bytes"
 *                              [,"height","width_px"]}, …],"file_bytes":B}
 *   sections, in header order:
 *     every numeric feature of the dataset, f32 [N × width], as the reader
 *     holds it (lerobot.h); "#timestamp" f32 and "#frame_index",
 *     "#episode_index", "#index", "#task_index" i64 [N];
 *     every camera, "rgb8" [N × height × width_px × 3], each frame exactly
 *     what vla_lr_reader_frame returns for that row at the stored size
 *   trailer: u32 CRC-32 of each section · u32 CRC-32 of those · "VLASHEND"
 *
 * So a sample read from shards equals the direct read by construction: the
 * rows are the same floats, and a frame is the same bytes the decoder and
 * scaler gave (the trainer asks for the stored size; another size is
 * refused, naming the size to prepare with). Which episodes go in which
 * shard depends only on the episode list, the stored frame size and
 * shard_mb — never on the rank count — so N ranks write the same files one
 * rank would, and an interrupted prepare (any rank count) keeps every shard
 * that is complete and matches the plan.
 *
 * Opening: vla_lerobot_open(SHARDS) (and every command that takes a
 * dataset) sees manifest.json and reads meta/ from the set, the rows from
 * the shards' numeric sections, and frames from the mapped camera sections.
 * Every shard's size, header CRC and section CRCs are checked at open; a
 * truncated, corrupt or missing shard is refused with its file name.
 *
 * Not stored: per-sample prompt token counts. They depend on the policy's
 * tokenizer and, for π0.5, on the normalised state (the prompt carries it
 * discretised), which prepare does not know; the loader tokenises each
 * sample as it does for a dataset (microseconds against a step). */
#ifndef VLA_DATA_SHARDS_H
#define VLA_DATA_SHARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "data/lerobot.h"

#define VLA_SHARDS_MANIFEST "manifest.json"
#define VLA_SHARDS_MIXTURE "mixture.json"
#define VLA_SHARDS_MIXTURE_MAX 16

/* A prepared mixture (`vla data prepare --dataset.root=A,B`): one shard set
 * per dataset in subdirectories of OUT and OUT/mixture.json
 * {"format":"vla-shard-mixture","version":1,"sets":[{"dir":"00-a","source":A},…]},
 * written atomically once every set is complete. Training takes the sets in
 * this order (one embodiment each). */
bool vla_shards_is_mixture(const char *dir);
vla_status vla_shards_mixture_write(const char *dir, const char *const *sets, const char *const *sources, int n);
/* The sets' paths "DIR/00-a,DIR/01-b" into out; each must be a complete set. */
vla_status vla_shards_mixture_paths(const char *dir, char *out, size_t cap);

/* A comma-separated list of dataset directories (`--dataset.root=A,B`,
 * `--dataset.shards=S1,S2`) into roots[0..*n), at most max; with
 * expand_mixtures a prepared mixture's directory stands for its sets, in
 * order. Fails on an empty or overlong element or more than max. */
#define VLA_ROOT_MAX 4096
vla_status vla_dataset_roots(const char *list, bool expand_mixtures, char roots[][VLA_ROOT_MAX], int max, int *n);

typedef struct {
    const char *out;             /* the shard set directory (created) */
    const vla_lr_open_opts *sel; /* episode selection of the source (NULL: all) */
    int image_h, image_w;        /* stored frame size (0, 0: each camera's own size) */
    double shard_mb;             /* target shard size in MiB (≤ 0: 256); a shard holds whole episodes */
    int rank, world;             /* this process writes shards k with k % world == rank (world ≤ 1: all) */
    int num_workers;             /* threads of this process, one shard each at a time (≤ 0: 1) */
    bool progress;               /* a progress line on stderr */
} vla_shards_prepare_opts;

typedef struct {
    int64_t shards;      /* in the plan */
    int64_t mine;        /* of those, this process's */
    int64_t written;     /* written by this call */
    int64_t kept;        /* found complete and matching the plan (a resumed prepare) */
    int64_t rows;        /* rows written by this call */
    int64_t frames;      /* frames decoded by this call (rows × cameras) */
    double seconds;
} vla_shards_prepare_stats;

/* Write this process's shards of `root` (a LeRobot dataset) into o->out.
 * Every rank calls it; then one process (rank 0, after a barrier) calls
 * vla_shards_finish. */
vla_status vla_shards_prepare(const char *root, const vla_shards_prepare_opts *o, vla_shards_prepare_stats *stats);
/* Check that every shard of the plan is present and whole (size, header;
 * its CRCs were checked when it was written or kept), remove leftovers
 * (temporary files of killed writers, shards beyond the plan), copy meta/
 * and write manifest.json atomically. */
vla_status vla_shards_finish(const char *root, const vla_shards_prepare_opts *o);

/* Is `root` a shard set (it holds manifest.json)? */
bool vla_shards_is_set(const char *root);

/* ---- used by the dataset reader (lerobot_open.c, lerobot_rows.c, lerobot_frames.c) ---- */

typedef struct vla_shard_set vla_shard_set;
/* Read manifest.json of ds->root (whose meta/ is already read) and map and
 * check every shard (with verify_data, every section's CRC too: what a
 * training open does; `dataset info` skips it); *episodes receives the
 * episode_index values to select: the manifest's, or `want` (each must be
 * in the manifest). ds->shards is set. */
vla_status vla_shards_attach(vla_lerobot *ds, const int64_t *want, int64_t n_want, bool verify_data, int64_t **episodes,
                             int64_t *n_episodes);
/* The selected episodes' rows from the shards into ds (after the selection
 * is applied; ds's row arrays are allocated here). */
vla_status vla_shards_load_rows(vla_lerobot *ds);
/* Camera `camera` at row `row`, RGB24 at out_w × out_h (0, 0: the stored size). */
vla_status vla_shards_frame(const vla_lerobot *ds, int camera, int64_t row, int out_w, int out_h, uint8_t *rgb);
void vla_shards_free(vla_shard_set *s);
int64_t vla_shards_count(const vla_shard_set *s);

#endif
