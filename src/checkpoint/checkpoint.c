/* checkpoint.c — atomic, verified training checkpoints (see checkpoint.h). */
#include "checkpoint/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"

#define MANIFEST_FORMAT "vla.checkpoint"
#define MANIFEST_VERSION 1

struct vla_ckpt_writer {
    char ckdir[VLA_CKPT_PATH_MAX]; /* OUTPUT/checkpoints */
    char tmp[VLA_CKPT_PATH_MAX];   /* ckdir/.tmp-<name>-<pid> */
    char name[32];                 /* 006000 */
    int64_t step;
    char **files; /* registered relative paths */
    size_t n_files, cap_files;
};

void vla_ckpt_step_name(int64_t step, int64_t total_steps, char *buf, size_t cap) {
    char tot[32];
    int digits = snprintf(tot, sizeof tot, "%lld", (long long)(total_steps > 0 ? total_steps : 0));
    if (digits < 6) digits = 6;
    snprintf(buf, cap, "%0*lld", digits, (long long)step);
}

static vla_status join(char *buf, size_t cap, const char *a, const char *b) {
    int n = snprintf(buf, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap) return vla_error(VLA_ERR_INVALID_ARG, "path too long: %s/%s", a, b);
    return VLA_OK;
}

/* snprintf into a path buffer; truncation is an error, not a silent cut. */
__attribute__((format(printf, 3, 4))) static vla_status fmt_path(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) return vla_error(VLA_ERR_INVALID_ARG, "path too long: %s...", buf);
    return VLA_OK;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf; a missing path is fine. */
static vla_status rm_rf(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return VLA_OK;
    if (nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return vla_error(VLA_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    return VLA_OK;
}

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* A relative path inside the checkpoint: not absolute, no "." / ".." / empty
 * components, printable characters only. */
static int safe_rel(const char *rel) {
    if (!rel || !*rel || rel[0] == '/' || strlen(rel) > 512) return 0;
    const char *p = rel;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) return 0;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)p[i] < 0x20) return 0;
        if (!e) break;
        p = e + 1;
        if (!*p) return 0;
    }
    return 1;
}

static int pid_alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

vla_status vla_ckpt_cleanup(const char *output_dir) {
    char ckdir[VLA_CKPT_PATH_MAX];
    VLA_TRY(join(ckdir, sizeof ckdir, output_dir, VLA_CKPT_DIR));
    DIR *d = opendir(ckdir);
    if (!d) {
        if (errno == ENOENT) return VLA_OK;
        return vla_error(VLA_ERR_IO, "%s: cannot list: %s", ckdir, strerror(errno));
    }
    vla_status st = VLA_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strncmp(n, ".tmp-", 5) != 0 && strncmp(n, ".last.tmp-", 10) != 0) continue;
        const char *dash = strrchr(n, '-');
        long pid = dash ? strtol(dash + 1, NULL, 10) : 0;
        if (pid != (long)getpid() && pid_alive(pid)) continue; /* another live writer's */
        char path[VLA_CKPT_PATH_MAX];
        if (join(path, sizeof path, ckdir, n) != VLA_OK) continue;
        VLA_INFO("removing unfinished checkpoint %s", path);
        vla_status s = rm_rf(path);
        if (s != VLA_OK && st == VLA_OK) st = s;
    }
    closedir(d);
    return st;
}

vla_status vla_ckpt_begin(const char *output_dir, int64_t step, int64_t total_steps, vla_ckpt_writer **out) {
    *out = NULL;
    if (step < 0) return vla_error(VLA_ERR_INVALID_ARG, "checkpoint: negative step %lld", (long long)step);
    vla_ckpt_writer *w = calloc(1, sizeof *w);
    if (!w) return vla_error(VLA_ERR_NOMEM, "checkpoint: out of memory");
    w->step = step;
    vla_ckpt_step_name(step, total_steps, w->name, sizeof w->name);
    vla_status st = join(w->ckdir, sizeof w->ckdir, output_dir, VLA_CKPT_DIR);
    if (st == VLA_OK) st = vla_mkdirs(w->ckdir);
    if (st == VLA_OK) {
        st = fmt_path(w->tmp, sizeof w->tmp, "%s/.tmp-%s-%ld", w->ckdir, w->name, (long)getpid());
    }
    if (st == VLA_OK) st = rm_rf(w->tmp); /* an earlier failed attempt of this process */
    char sub[VLA_CKPT_PATH_MAX];
    if (st == VLA_OK && mkdir(w->tmp, 0755) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot create: %s", w->tmp, strerror(errno));
    if (st == VLA_OK && (st = join(sub, sizeof sub, w->tmp, VLA_CKPT_MODEL_DIR)) == VLA_OK && mkdir(sub, 0755) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot create: %s", sub, strerror(errno));
    if (st == VLA_OK && (st = join(sub, sizeof sub, w->tmp, VLA_CKPT_STATE_DIR)) == VLA_OK && mkdir(sub, 0755) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot create: %s", sub, strerror(errno));
    if (st != VLA_OK) {
        vla_error_context(st, "checkpoint %s", w->name);
        vla_ckpt_abort(w);
        return st;
    }
    *out = w;
    return VLA_OK;
}

vla_status vla_ckpt_file_path(vla_ckpt_writer *w, const char *rel, char *buf, size_t cap) {
    if (!safe_rel(rel)) return vla_error(VLA_ERR_INVALID_ARG, "checkpoint: bad file name '%s'", rel ? rel : "");
    VLA_TRY(join(buf, cap, w->tmp, rel));
    char *slash = strrchr(buf, '/');
    if (slash && slash > buf + strlen(w->tmp)) { /* nested directory */
        *slash = '\0';
        vla_status st = vla_mkdirs(buf);
        *slash = '/';
        VLA_TRY(st);
    }
    return VLA_OK;
}

const char *vla_ckpt_writer_dir(const vla_ckpt_writer *w) { return w->tmp; }

vla_status vla_ckpt_add_file(vla_ckpt_writer *w, const char *rel) {
    if (!safe_rel(rel)) return vla_error(VLA_ERR_INVALID_ARG, "checkpoint: bad file name '%s'", rel ? rel : "");
    for (size_t i = 0; i < w->n_files; i++)
        if (strcmp(w->files[i], rel) == 0) return VLA_OK;
    if (w->n_files == w->cap_files) {
        size_t cap = w->cap_files ? 2 * w->cap_files : 8;
        char **f = realloc(w->files, cap * sizeof *f);
        if (!f) return vla_error(VLA_ERR_NOMEM, "checkpoint: out of memory");
        w->files = f;
        w->cap_files = cap;
    }
    if (!(w->files[w->n_files] = strdup(rel))) return vla_error(VLA_ERR_NOMEM, "checkpoint: out of memory");
    w->n_files++;
    return VLA_OK;
}

vla_status vla_ckpt_write_file(vla_ckpt_writer *w, const char *rel, const void *data, size_t n) {
    char path[VLA_CKPT_PATH_MAX];
    VLA_TRY(vla_ckpt_file_path(w, rel, path, sizeof path));
    VLA_TRY(vla_write_file_atomic(path, data, n));
    return vla_ckpt_add_file(w, rel);
}

vla_status vla_ckpt_write_json(vla_ckpt_writer *w, const char *rel, const json_t *value) {
    char path[VLA_CKPT_PATH_MAX];
    VLA_TRY(vla_ckpt_file_path(w, rel, path, sizeof path));
    VLA_TRY(vla_json_write_file(path, value));
    return vla_ckpt_add_file(w, rel);
}

vla_status vla_ckpt_write_safetensors(vla_ckpt_writer *w, const char *rel, vla_safetensors_writer *sw) {
    char path[VLA_CKPT_PATH_MAX];
    VLA_TRY(vla_ckpt_file_path(w, rel, path, sizeof path));
    VLA_TRY(vla_safetensors_writer_write(sw, path));
    return vla_ckpt_add_file(w, rel);
}

/* Size and CRC-32 (zlib) of a file, read in 1 MiB blocks. */
static vla_status crc_file(const char *path, uint64_t *size, uint32_t *crc) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vla_error(errno == ENOENT ? VLA_ERR_NOT_FOUND : VLA_ERR_IO, "%s: cannot open: %s", path,
                         strerror(errno));
    enum { BLOCK = 1 << 20 };
    unsigned char *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        return vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, BLOCK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            vla_status st = vla_error(VLA_ERR_IO, "%s: read failed at byte %llu: %s", path,
                                      (unsigned long long)total, strerror(errno));
            free(buf);
            close(fd);
            return st;
        }
        if (r == 0) break;
        c = crc32_z(c, buf, (size_t)r);
        total += (uint64_t)r;
    }
    free(buf);
    close(fd);
    *size = total;
    *crc = (uint32_t)c;
    return VLA_OK;
}

static vla_status write_manifest(vla_ckpt_writer *w) {
    json_t *files = json_array();
    vla_status st = VLA_OK;
    for (size_t i = 0; i < w->n_files && st == VLA_OK; i++) {
        if (strcmp(w->files[i], VLA_CKPT_MANIFEST) == 0) continue;
        char path[VLA_CKPT_PATH_MAX];
        uint64_t size;
        uint32_t crc;
        st = join(path, sizeof path, w->tmp, w->files[i]);
        if (st == VLA_OK) st = crc_file(path, &size, &crc);
        if (st != VLA_OK) break;
        json_t *f = json_object();
        json_object_set_new(f, "path", json_string(w->files[i]));
        json_object_set_new(f, "bytes", json_integer((json_int_t)size));
        json_object_set_new(f, "crc32", json_integer((json_int_t)crc));
        json_array_append_new(files, f);
    }
    if (st != VLA_OK) {
        json_decref(files);
        return st;
    }
    json_t *m = json_object();
    json_object_set_new(m, "format", json_string(MANIFEST_FORMAT));
    json_object_set_new(m, "version", json_integer(MANIFEST_VERSION));
    json_object_set_new(m, "step", json_integer((json_int_t)w->step));
    json_object_set_new(m, "files", files);
    char path[VLA_CKPT_PATH_MAX];
    st = vla_ckpt_file_path(w, VLA_CKPT_MANIFEST, path, sizeof path);
    if (st == VLA_OK) st = vla_json_write_file(path, m);
    json_decref(m);
    return st;
}

/* fsync every directory under (and including) the temporary one, so the
 * entries of the files and subdirectories are on disk before the rename. */
static vla_status fsync_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return vla_error(VLA_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    vla_status st = VLA_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && st == VLA_OK) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[VLA_CKPT_PATH_MAX];
        if ((st = join(sub, sizeof sub, dir, e->d_name)) != VLA_OK) break;
        struct stat sb;
        if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) st = fsync_tree(sub);
    }
    closedir(d);
    if (st == VLA_OK) st = vla_fsync_dir(dir);
    return st;
}

/* Move the finished directory to its name. When the name exists (a resumed
 * run saving the same step again) the two are exchanged atomically, so the
 * step is never absent, and the old one (now at tmp) is removed. */
static vla_status publish_dir(vla_ckpt_writer *w, const char *final) {
    if (rename(w->tmp, final) == 0) return VLA_OK;
    if (errno != ENOTEMPTY && errno != EEXIST)
        return vla_error(VLA_ERR_IO, "%s: cannot rename into place: %s", final, strerror(errno));
    if (renameat2(AT_FDCWD, w->tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) return rm_rf(w->tmp);
    if (errno != EINVAL && errno != ENOSYS)
        return vla_error(VLA_ERR_IO, "%s: cannot exchange with the new checkpoint: %s", final, strerror(errno));
    /* Filesystem without RENAME_EXCHANGE: move the old one aside first (a
     * crash in between leaves the previous step directories, and the stale
     * .tmp-* holding the old copy is removed on the next start). */
    char aside[VLA_CKPT_PATH_MAX];
    VLA_TRY(fmt_path(aside, sizeof aside, "%s/.tmp-old-%s-%ld", w->ckdir, w->name, (long)getpid()));
    VLA_TRY(rm_rf(aside));
    if (rename(final, aside) != 0)
        return vla_error(VLA_ERR_IO, "%s: cannot move the old checkpoint aside: %s", final, strerror(errno));
    if (rename(w->tmp, final) != 0) {
        vla_status st = vla_error(VLA_ERR_IO, "%s: cannot rename into place: %s", final, strerror(errno));
        if (rename(aside, final) != 0) VLA_WARN("%s: could not restore the old checkpoint from %s", final, aside);
        return st;
    }
    return rm_rf(aside);
}

static vla_status point_last(vla_ckpt_writer *w) {
    char link_tmp[VLA_CKPT_PATH_MAX], link[VLA_CKPT_PATH_MAX];
    VLA_TRY(fmt_path(link_tmp, sizeof link_tmp, "%s/.last.tmp-%ld", w->ckdir, (long)getpid()));
    VLA_TRY(join(link, sizeof link, w->ckdir, VLA_CKPT_LAST));
    unlink(link_tmp);
    if (symlink(w->name, link_tmp) != 0)
        return vla_error(VLA_ERR_IO, "%s: cannot create symlink: %s", link_tmp, strerror(errno));
    if (rename(link_tmp, link) != 0) {
        vla_status st = vla_error(VLA_ERR_IO, "%s: cannot replace: %s", link, strerror(errno));
        unlink(link_tmp);
        return st;
    }
    return vla_fsync_dir(w->ckdir);
}

static void writer_free(vla_ckpt_writer *w) {
    for (size_t i = 0; i < w->n_files; i++) free(w->files[i]);
    free(w->files);
    free(w);
}

vla_status vla_ckpt_commit(vla_ckpt_writer *w, vla_ckpt_info *info) {
    json_t *step = json_object();
    json_object_set_new(step, "step", json_integer((json_int_t)w->step));
    vla_status st = vla_ckpt_write_json(w, VLA_CKPT_STEP_FILE, step);
    json_decref(step);
    if (st == VLA_OK) st = write_manifest(w);
    if (st == VLA_OK) st = fsync_tree(w->tmp);
    char final[VLA_CKPT_PATH_MAX];
    if (st == VLA_OK) st = join(final, sizeof final, w->ckdir, w->name);
    if (st == VLA_OK) st = publish_dir(w, final);
    if (st != VLA_OK) {
        vla_error_context(st, "checkpoint %s not written", w->name);
        vla_ckpt_abort(w);
        return st;
    }
    /* From here the checkpoint exists and is complete. */
    st = vla_fsync_dir(w->ckdir);
    if (st == VLA_OK) st = point_last(w);
    if (st != VLA_OK) vla_error_context(st, "checkpoint %s written but '%s' not updated", w->name, VLA_CKPT_LAST);
    if (info) {
        info->step = w->step;
        snprintf(info->dir, sizeof info->dir, "%s", final);
    }
    writer_free(w);
    return st;
}

void vla_ckpt_abort(vla_ckpt_writer *w) {
    if (!w) return;
    if (w->tmp[0] && rm_rf(w->tmp) != VLA_OK) VLA_WARN("%s", vla_error_message());
    writer_free(w);
}

/* ---- loading ---------------------------------------------------------------- */

vla_status vla_ckpt_verify(const char *step_dir, int64_t *step_out) {
    char path[VLA_CKPT_PATH_MAX];
    VLA_TRY(join(path, sizeof path, step_dir, VLA_CKPT_MANIFEST));
    if (!vla_path_exists(path))
        return vla_error(VLA_ERR_NOT_FOUND, "%s: not a complete checkpoint: %s is missing", step_dir,
                         VLA_CKPT_MANIFEST);
    json_t *m = NULL;
    VLA_TRY(vla_json_load_file(path, &m));
    vla_status st = VLA_OK;
    const char *format = NULL;
    int64_t version = 0, step = -1;
    json_t *files = NULL;
    if ((st = vla_json_get_string(path, m, "format", &format)) != VLA_OK ||
        (st = vla_json_get_int(path, m, "version", &version)) != VLA_OK ||
        (st = vla_json_get_int(path, m, "step", &step)) != VLA_OK ||
        (st = vla_json_get_array(path, m, "files", &files)) != VLA_OK)
        goto done;
    if (strcmp(format, MANIFEST_FORMAT) != 0 || version != MANIFEST_VERSION) {
        st = vla_error(VLA_ERR_FORMAT, "%s: not a version %d vla checkpoint manifest (format '%s', version %lld)",
                       path, MANIFEST_VERSION, format, (long long)version);
        goto done;
    }
    int have_step_file = 0;
    for (size_t i = 0; i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        const char *rel;
        int64_t bytes, crc;
        char what[64];
        snprintf(what, sizeof what, "%s: files[%zu]", VLA_CKPT_MANIFEST, i);
        if ((st = vla_json_get_string(what, f, "path", &rel)) != VLA_OK ||
            (st = vla_json_get_int(what, f, "bytes", &bytes)) != VLA_OK ||
            (st = vla_json_get_int(what, f, "crc32", &crc)) != VLA_OK) {
            vla_error_context(st, "%s", step_dir);
            goto done;
        }
        if (!safe_rel(rel) || bytes < 0 || crc < 0 || crc > 0xffffffffLL) {
            st = vla_error(VLA_ERR_FORMAT, "%s: %s: bad entry for '%s'", step_dir, what, rel);
            goto done;
        }
        char fpath[VLA_CKPT_PATH_MAX];
        if ((st = join(fpath, sizeof fpath, step_dir, rel)) != VLA_OK) goto done;
        uint64_t size;
        uint32_t got;
        struct stat sb;
        if (stat(fpath, &sb) != 0) {
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: the checkpoint is incomplete: %s is missing (%s lists it)", step_dir,
                           rel, VLA_CKPT_MANIFEST);
            goto done;
        }
        if ((uint64_t)sb.st_size != (uint64_t)bytes) {
            st = vla_error(VLA_ERR_FORMAT, "%s: corrupted checkpoint: %s is %lld bytes, the manifest says %lld",
                           step_dir, rel, (long long)sb.st_size, (long long)bytes);
            goto done;
        }
        if ((st = crc_file(fpath, &size, &got)) != VLA_OK) goto done;
        if (size != (uint64_t)bytes || got != (uint32_t)crc) {
            st = vla_error(VLA_ERR_FORMAT,
                           "%s: corrupted checkpoint: %s fails its checksum (CRC-32 %08x, the manifest says %08x)",
                           step_dir, rel, got, (unsigned)crc);
            goto done;
        }
        if (strcmp(rel, VLA_CKPT_STEP_FILE) == 0) have_step_file = 1;
    }
    if (!have_step_file) {
        st = vla_error(VLA_ERR_FORMAT, "%s: the manifest does not list %s", step_dir, VLA_CKPT_STEP_FILE);
        goto done;
    }
    json_t *sj = NULL;
    int64_t file_step = -1;
    if ((st = join(path, sizeof path, step_dir, VLA_CKPT_STEP_FILE)) != VLA_OK) goto done;
    if ((st = vla_json_load_file(path, &sj)) != VLA_OK) goto done;
    st = vla_json_get_int(path, sj, "step", &file_step);
    json_decref(sj);
    if (st == VLA_OK && file_step != step)
        st = vla_error(VLA_ERR_FORMAT, "%s: step %lld differs from the manifest's %lld (%s)", path,
                       (long long)file_step, (long long)step, VLA_CKPT_MANIFEST);
    if (st == VLA_OK && step_out) *step_out = step;
done:
    json_decref(m);
    return st;
}

typedef struct {
    char name[256];
    long long step;
} step_entry;

static int cmp_step_desc(const void *a, const void *b) {
    const step_entry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : 0;
}

/* Numeric subdirectories of ckdir, newest first. */
static vla_status list_steps(const char *ckdir, step_entry **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(ckdir);
    if (!d)
        return vla_error(errno == ENOENT ? VLA_ERR_NOT_FOUND : VLA_ERR_IO, "%s: cannot list: %s", ckdir,
                         strerror(errno));
    step_entry *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!all_digits(e->d_name) || strlen(e->d_name) >= sizeof v->name) continue;
        char p[VLA_CKPT_PATH_MAX];
        if (join(p, sizeof p, ckdir, e->d_name) != VLA_OK || !vla_is_dir(p)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            step_entry *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                free(v);
                closedir(d);
                return vla_error(VLA_ERR_NOMEM, "out of memory");
            }
            v = nv;
        }
        snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
        v[n].step = strtoll(e->d_name, NULL, 10);
        n++;
    }
    closedir(d);
    if (n > 1) qsort(v, n, sizeof *v, cmp_step_desc);
    *out = v;
    *n_out = n;
    return VLA_OK;
}

static void read_last(const char *ckdir, char *buf, size_t cap) {
    char link[VLA_CKPT_PATH_MAX];
    buf[0] = '\0';
    if (join(link, sizeof link, ckdir, VLA_CKPT_LAST) != VLA_OK) return;
    ssize_t r = readlink(link, buf, cap - 1);
    buf[r > 0 ? r : 0] = '\0';
    char *slash = strrchr(buf, '/'); /* tolerate an absolute or ./ target */
    if (slash) memmove(buf, slash + 1, strlen(slash + 1) + 1);
}

vla_status vla_ckpt_find_last(const char *output_dir, vla_ckpt_info *out) {
    char ckdir[VLA_CKPT_PATH_MAX];
    VLA_TRY(join(ckdir, sizeof ckdir, output_dir, VLA_CKPT_DIR));
    step_entry *v;
    size_t n;
    vla_status st = list_steps(ckdir, &v, &n);
    if (st == VLA_ERR_NOT_FOUND)
        return vla_error(VLA_ERR_NOT_FOUND, "%s: no checkpoint to resume from (no %s directory)", output_dir,
                         VLA_CKPT_DIR);
    VLA_TRY(st);
    char last[256];
    read_last(ckdir, last, sizeof last);
    char first_err[1024] = "";
    for (size_t i = 0; i < n; i++) {
        char dir[VLA_CKPT_PATH_MAX];
        if (join(dir, sizeof dir, ckdir, v[i].name) != VLA_OK) continue;
        int64_t step;
        st = vla_ckpt_verify(dir, &step);
        if (st != VLA_OK) {
            VLA_WARN("skipping checkpoint %s: %s", v[i].name, vla_error_message());
            if (!first_err[0]) snprintf(first_err, sizeof first_err, "%s", vla_error_message());
            continue;
        }
        if (strcmp(last, v[i].name) != 0)
            VLA_WARN("%s/%s names '%s', but the newest complete checkpoint is %s: resuming from %s", ckdir,
                     VLA_CKPT_LAST, last[0] ? last : "(nothing)", v[i].name, v[i].name);
        out->step = step;
        snprintf(out->dir, sizeof out->dir, "%s", dir);
        free(v);
        return VLA_OK;
    }
    free(v);
    if (n == 0) return vla_error(VLA_ERR_NOT_FOUND, "%s: no checkpoint to resume from", ckdir);
    return vla_error(VLA_ERR_NOT_FOUND, "%s: none of the %zu checkpoints is complete and intact (newest: %s)", ckdir,
                     n, first_err);
}

vla_status vla_ckpt_prune(const char *output_dir, int keep) {
    if (keep < 1) return vla_error(VLA_ERR_INVALID_ARG, "checkpoint prune: keep must be >= 1 (got %d)", keep);
    char ckdir[VLA_CKPT_PATH_MAX];
    VLA_TRY(join(ckdir, sizeof ckdir, output_dir, VLA_CKPT_DIR));
    step_entry *v;
    size_t n;
    VLA_TRY(list_steps(ckdir, &v, &n));
    char last[256];
    read_last(ckdir, last, sizeof last);
    vla_status st = VLA_OK;
    for (size_t i = (size_t)keep; i < n && st == VLA_OK; i++) {
        if (strcmp(v[i].name, last) == 0) continue;
        /* Rename out of sight first, so a crash mid-removal leaves no
         * half-deleted step directory, only a stale .tmp-* for cleanup. */
        char dir[VLA_CKPT_PATH_MAX], aside[VLA_CKPT_PATH_MAX];
        if ((st = join(dir, sizeof dir, ckdir, v[i].name)) != VLA_OK ||
            (st = fmt_path(aside, sizeof aside, "%s/.tmp-prune-%s-%ld", ckdir, v[i].name, (long)getpid())) != VLA_OK)
            break;
        if (rename(dir, aside) != 0)
            st = vla_error(VLA_ERR_IO, "%s: cannot remove old checkpoint: %s", dir, strerror(errno));
        else
            st = rm_rf(aside);
    }
    free(v);
    return st;
}
