/* checkpoint.h — training checkpoints in LeRobot's layout, written so that a
 * checkpoint is complete or absent, never half-written, and verified on load.
 *
 *   OUTPUT/checkpoints/
 *     006000/                      step, zero-padded to max(6, digits(total))
 *       pretrained_model/          config.json, model.safetensors (caller's)
 *       training_state/            optimizer_state.safetensors, rng/sampler
 *                                  state, training_step.json ({"step": N}),
 *                                  manifest.json (byte length + CRC-32 of
 *                                  every other file of the checkpoint)
 *     last -> 006000               relative symlink, as LeRobot's
 *
 * Writing: vla_ckpt_begin() creates checkpoints/.tmp-<step>-<pid>/; files go
 * in through vla_ckpt_write_* (each written atomically and fsync'ed); commit
 * writes training_step.json and the manifest, fsyncs the directories, renames
 * the whole directory to checkpoints/<step> (an existing one is swapped out
 * with renameat2(RENAME_EXCHANGE), so <step> never disappears), fsyncs
 * checkpoints/, then repoints `last` by renaming a fresh temporary symlink
 * over it and fsyncs again. SIGKILL or power loss at any moment therefore
 * leaves the previous checkpoint intact and at most a hidden .tmp-* directory,
 * which vla_ckpt_cleanup() removes when a run starts.
 *
 * Loading: vla_ckpt_verify() checks the manifest, every file's size and
 * CRC-32, and refuses a corrupted checkpoint with a message naming the file.
 * vla_ckpt_find_last() returns the newest step directory that verifies:
 * `last` is only a hint, so a dangling or stale `last` (a kill between the
 * directory rename and the link update) or a damaged newest checkpoint falls
 * back to the newest valid one, with a warning. */
#ifndef VLA_CHECKPOINT_CHECKPOINT_H
#define VLA_CHECKPOINT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/status.h"
#include "io/safetensors.h"

#define VLA_CKPT_DIR "checkpoints"
#define VLA_CKPT_LAST "last"
#define VLA_CKPT_MODEL_DIR "pretrained_model"
#define VLA_CKPT_STATE_DIR "training_state"
#define VLA_CKPT_MANIFEST "training_state/manifest.json"
#define VLA_CKPT_STEP_FILE "training_state/training_step.json"
/* FP8 scaling state of a --precision=fp8 run (policy/precision.h, docs/precision.md) */
#define VLA_FP8_STATE_FILE "training_state/fp8_scaling.safetensors"
#define VLA_CKPT_PATH_MAX 4096

typedef struct vla_ckpt_writer vla_ckpt_writer;

typedef struct {
    int64_t step;
    char dir[VLA_CKPT_PATH_MAX]; /* OUTPUT/checkpoints/<step> */
} vla_ckpt_info;

/* LeRobot's step identifier: step zero-padded to max(6, digits(total_steps)). */
void vla_ckpt_step_name(int64_t step, int64_t total_steps, char *buf, size_t cap);

/* Remove stale checkpoints/.tmp-* directories and .last.tmp-* links left by
 * a killed writer (those of live processes other than this one are kept).
 * Call once when a run starts. A missing checkpoints/ is fine. */
vla_status vla_ckpt_cleanup(const char *output_dir);

/* Start writing checkpoint `step` of a run of total_steps (for the padding). */
vla_status vla_ckpt_begin(const char *output_dir, int64_t step, int64_t total_steps, vla_ckpt_writer **out);
/* Write a file at `rel` (e.g. "pretrained_model/config.json"; no "..", not
 * absolute) inside the checkpoint being built. */
vla_status vla_ckpt_write_file(vla_ckpt_writer *w, const char *rel, const void *data, size_t n);
vla_status vla_ckpt_write_json(vla_ckpt_writer *w, const char *rel, const json_t *value);
vla_status vla_ckpt_write_safetensors(vla_ckpt_writer *w, const char *rel, vla_safetensors_writer *sw);
/* The directory the checkpoint is being built in (hidden until commit): the
 * data-parallel trainer broadcasts it so every rank writes its own shard
 * there before rank 0 registers the files and commits. */
const char *vla_ckpt_writer_dir(const vla_ckpt_writer *w);
/* For files written by other means: the absolute path to write `rel` to
 * (parent directories are created), then vla_ckpt_add_file once it is
 * complete and fsync'ed. */
vla_status vla_ckpt_file_path(vla_ckpt_writer *w, const char *rel, char *buf, size_t cap);
vla_status vla_ckpt_add_file(vla_ckpt_writer *w, const char *rel);
/* Seal and publish (see above). Frees `w` whatever the outcome; on failure
 * nothing of the new checkpoint is visible. `info` (may be NULL) receives
 * the final directory. */
vla_status vla_ckpt_commit(vla_ckpt_writer *w, vla_ckpt_info *info);
/* Drop an unfinished checkpoint and free `w` (NULL is fine). */
void vla_ckpt_abort(vla_ckpt_writer *w);

/* Check a step directory against its manifest; *step from training_step.json
 * (may be NULL). VLA_ERR_FORMAT / VLA_ERR_NOT_FOUND name the bad file. */
vla_status vla_ckpt_verify(const char *step_dir, int64_t *step);
/* Newest valid checkpoint under OUTPUT/checkpoints (see above);
 * VLA_ERR_NOT_FOUND when there is none. */
vla_status vla_ckpt_find_last(const char *output_dir, vla_ckpt_info *out);
/* Keep the newest `keep` step directories (keep >= 1); older ones are
 * removed, never the one `last` names. */
vla_status vla_ckpt_prune(const char *output_dir, int keep);

#endif
