/* run_dir.h — the directory a run writes into, so that two runs never mix
 * their files (checkpoints, metrics, videos) in one place.
 *
 * Rules (docs/train.md, "Run directories"):
 *  - A command given no output directory gets a fresh one per run, as
 *    LeRobot's `outputs/<kind>/<YYYY-MM-DD>/<HH-MM-SS>_<job_name>`; two runs
 *    started in the same second get `_2`, `_3`, … (the leaf is created with
 *    an exclusive mkdir, so even concurrent runs cannot share it).
 *  - A directory that is named explicitly must be empty or absent, unless
 *    the run continues it (`vla train --resume=true`) or `--overwrite=true`
 *    is given, which moves the old directory aside to `DIR.old-<date>_<time>`
 *    (never deletes it) and starts an empty one. */
#ifndef VLA_BASE_RUN_DIR_H
#define VLA_BASE_RUN_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* Create outputs/<kind>/<date>/<time>_<job_name> (job_name: letters, digits,
 * '-', '_', '.'; others become '_') and put its path in out. */
vla_status vla_run_dir_default(const char *kind, const char *job_name, char *out, size_t cap);

/* Make `dir` ready for a new run: created when absent; an empty one is
 * used as is; one holding files is refused — the message lists a few of
 * them and says what to do (`resume_hint`, e.g. "continue it with
 * --resume=true, ", may be ""), unless `overwrite`, which renames it to
 * DIR.old-<date>_<time>[-N] (the new name in moved_to, else moved_to[0] = 0)
 * and creates an empty one. */
vla_status vla_run_dir_claim(const char *dir, bool overwrite, const char *resume_hint, char *moved_to, size_t cap);

/* Does `dir` exist and hold at least one entry? */
bool vla_run_dir_nonempty(const char *dir);

#endif
