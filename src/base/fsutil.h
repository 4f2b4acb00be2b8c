/* fsutil.h — files that are complete or absent: atomic writes, whole-file
 * reads, directory creation.
 *
 * An atomic write goes to "<path>.tmp-<pid>-<n>" in the same directory, is
 * fsync'ed, renamed over <path> and the directory is fsync'ed, so a crash
 * (even SIGKILL or power loss) at any moment leaves either the old file or
 * the new one, never a mix. On any failure the temp file is removed and the
 * old file is untouched.
 *
 * For tests, vla_fault_inject_write() makes the N-th byte written through
 * this module fail with EIO, in the manner of SQLite's fault injection. */
#ifndef VLA_BASE_FSUTIL_H
#define VLA_BASE_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct {
    int fd;
    char *path;
    char *tmp_path;
    uint64_t written;
} vla_atomic_file;

vla_status vla_atomic_open(vla_atomic_file *af, const char *path);
vla_status vla_atomic_write(vla_atomic_file *af, const void *data, size_t n);
/* fsync, close, rename over the target, fsync the directory. On failure the
 * temp file is removed (the handle is closed either way). */
vla_status vla_atomic_commit(vla_atomic_file *af);
/* Discard: close and remove the temp file. Safe to call after commit. */
void vla_atomic_abort(vla_atomic_file *af);

/* One-shot atomic write of a buffer. */
vla_status vla_write_file_atomic(const char *path, const void *data, size_t n);
/* Read a whole file into a malloc'd buffer with a terminating NUL (not counted). */
vla_status vla_read_file(const char *path, char **data, size_t *n);
/* A whole regular file mapped read-only (zero-copy readers: safetensors,
 * Parquet). An empty file maps to data == NULL, size 0 (mmap refuses
 * length 0; the format's parser then explains what is missing). */
typedef struct {
    const uint8_t *data;
    size_t size;
} vla_mapped_file;
vla_status vla_map_file(const char *path, vla_mapped_file *out);
void vla_unmap_file(vla_mapped_file *m);

/* mkdir -p. */
vla_status vla_mkdirs(const char *path);
vla_status vla_fsync_dir(const char *dir);
int vla_path_exists(const char *path);
/* Remove a file or a directory tree (symlinks are removed, not followed);
 * absent is fine. */
vla_status vla_remove_tree(const char *path);
int vla_is_dir(const char *path);
/* Copy a file or a directory tree (regular files and directories; each file
 * written atomically). `dst` is created; files in it are replaced. */
vla_status vla_copy_tree(const char *src, const char *dst);

/* Fault injection for tests: fail writes once `bytes` more bytes have been
 * written (-1 disables). */
void vla_fault_inject_write(int64_t bytes);

#endif
