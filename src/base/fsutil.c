/* fsutil.c — atomic writes and small file helpers (see fsutil.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static _Atomic int64_t fault_budget = -1;
static _Atomic unsigned tmp_counter;

void vla_fault_inject_write(int64_t bytes) { atomic_store(&fault_budget, bytes); }

/* How many of `n` bytes may be written before the injected fault (n if none). */
static size_t fault_allow(size_t n) {
    int64_t b = atomic_load(&fault_budget);
    if (b < 0) return n;
    size_t allow = (uint64_t)b < n ? (size_t)b : n;
    atomic_store(&fault_budget, b - (int64_t)allow);
    return allow;
}

static char *dup_dirname(const char *path) {
    char *copy = strdup(path);
    if (!copy) return NULL;
    char *d = strdup(dirname(copy));
    free(copy);
    return d;
}

vla_status vla_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return vla_error(VLA_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    if (rc != 0 && err != EINVAL) /* some filesystems do not fsync directories */
        return vla_error(VLA_ERR_IO, "%s: fsync: %s", dir, strerror(err));
    return VLA_OK;
}

vla_status vla_atomic_open(vla_atomic_file *af, const char *path) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    size_t n = strlen(path) + 64;
    af->path = strdup(path);
    af->tmp_path = malloc(n);
    if (!af->path || !af->tmp_path) {
        vla_atomic_abort(af);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(af->tmp_path, n, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    af->fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (af->fd < 0) {
        vla_status st = vla_error(VLA_ERR_IO, "%s: cannot create temporary file: %s", path, strerror(errno));
        vla_atomic_abort(af);
        return st;
    }
    return VLA_OK;
}

vla_status vla_atomic_write(vla_atomic_file *af, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        size_t allow = fault_allow(chunk);
        ssize_t w = allow ? write(af->fd, p, allow) : -1;
        if (allow == 0) errno = EIO;
        if (w < 0) {
            if (errno == EINTR) continue;
            return vla_error(VLA_ERR_IO, "%s: write failed after %llu bytes: %s", af->path,
                             (unsigned long long)af->written, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
        af->written += (uint64_t)w;
    }
    return VLA_OK;
}

vla_status vla_atomic_commit(vla_atomic_file *af) {
    vla_status st = VLA_OK;
    /* before the rename: failing after it would report an error for a file
     * that was already replaced */
    char *dir = dup_dirname(af->path);
    if (!dir) st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", af->path);
    if (st == VLA_OK && fsync(af->fd) != 0)
        st = vla_error(VLA_ERR_IO, "%s: fsync: %s", af->path, strerror(errno));
    if (close(af->fd) != 0 && st == VLA_OK)
        st = vla_error(VLA_ERR_IO, "%s: close: %s", af->path, strerror(errno));
    af->fd = -1;
    if (st == VLA_OK && rename(af->tmp_path, af->path) != 0)
        st = vla_error(VLA_ERR_IO, "%s: rename into place: %s", af->path, strerror(errno));
    if (st == VLA_OK) {
        st = vla_fsync_dir(dir);
        free(af->tmp_path); /* renamed: nothing to remove */
        af->tmp_path = NULL;
    }
    free(dir);
    vla_atomic_abort(af);
    return st;
}

void vla_atomic_abort(vla_atomic_file *af) {
    if (af->fd >= 0) close(af->fd);
    af->fd = -1;
    if (af->tmp_path) unlink(af->tmp_path);
    free(af->tmp_path);
    free(af->path);
    af->tmp_path = NULL;
    af->path = NULL;
}

vla_status vla_write_file_atomic(const char *path, const void *data, size_t n) {
    vla_atomic_file af;
    VLA_TRY(vla_atomic_open(&af, path));
    vla_status st = vla_atomic_write(&af, data, n);
    if (st != VLA_OK) {
        vla_atomic_abort(&af);
        return st;
    }
    return vla_atomic_commit(&af);
}

vla_status vla_read_file(const char *path, char **data, size_t *n) {
    *data = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vla_error(errno == ENOENT ? VLA_ERR_NOT_FOUND : VLA_ERR_IO, "%s: cannot open: %s", path,
                         strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return vla_error(VLA_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return vla_error(VLA_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int err = r < 0 ? errno : 0;
            free(buf);
            close(fd);
            return vla_error(VLA_ERR_IO, "%s: read failed at byte %zu: %s", path, got,
                             err ? strerror(err) : "file shrank while reading");
        }
        got += (size_t)r;
    }
    close(fd);
    buf[size] = '\0';
    *data = buf;
    *n = size;
    return VLA_OK;
}

vla_status vla_map_file(const char *path, vla_mapped_file *out) {
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vla_error(errno == ENOENT ? VLA_ERR_NOT_FOUND : VLA_ERR_IO, "%s: cannot open: %s", path,
                         strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return vla_error(VLA_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    if (size > 0) {
        void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        int err = errno;
        if (p == MAP_FAILED) {
            close(fd);
            return vla_error(VLA_ERR_IO, "%s: mmap of %zu bytes failed: %s", path, size, strerror(err));
        }
        out->data = p;
        out->size = size;
    }
    close(fd);
    return VLA_OK;
}

void vla_unmap_file(vla_mapped_file *m) {
    if (m->data) munmap((void *)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

vla_status vla_mkdirs(const char *path) {
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return vla_error(VLA_ERR_INVALID_ARG, "bad directory path '%s'", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char saved = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return vla_error(VLA_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
            buf[i] = saved;
        }
    }
    if (!vla_is_dir(path)) return vla_error(VLA_ERR_IO, "%s: exists and is not a directory", path);
    return VLA_OK;
}

int vla_path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

int vla_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

vla_status vla_remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return VLA_OK;
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return vla_error(VLA_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    return VLA_OK;
}

vla_status vla_copy_tree(const char *src, const char *dst) {
    struct stat sb;
    if (stat(src, &sb) != 0) return vla_error(VLA_ERR_NOT_FOUND, "%s: %s", src, strerror(errno));
    if (S_ISREG(sb.st_mode)) {
        char *data;
        size_t n;
        VLA_TRY(vla_read_file(src, &data, &n));
        vla_status st = vla_write_file_atomic(dst, data, n);
        free(data);
        return st;
    }
    if (!S_ISDIR(sb.st_mode)) return vla_error(VLA_ERR_UNSUPPORTED, "%s: neither a file nor a directory", src);
    VLA_TRY(vla_mkdirs(dst));
    DIR *d = opendir(src);
    if (!d) return vla_error(VLA_ERR_IO, "%s: cannot list: %s", src, strerror(errno));
    vla_status st = VLA_OK;
    for (struct dirent *e; st == VLA_OK && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t ls = strlen(src) + strlen(e->d_name) + 2, ld = strlen(dst) + strlen(e->d_name) + 2;
        char *a = malloc(ls), *b = malloc(ld);
        if (a && b) {
            snprintf(a, ls, "%s/%s", src, e->d_name);
            snprintf(b, ld, "%s/%s", dst, e->d_name);
            st = vla_copy_tree(a, b);
        } else {
            st = vla_error(VLA_ERR_NOMEM, "out of memory");
        }
        free(a), free(b);
    }
    closedir(d);
    return st;
}
