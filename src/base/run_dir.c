/* run_dir.c — fresh, unique and never-shared run directories (see run_dir.h). */
#include "base/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fsutil.h"

static void stamp(char *date, size_t dcap, char *tod, size_t tcap) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, dcap, "%Y-%m-%d", &tm);
    strftime(tod, tcap, "%H-%M-%S", &tm);
}

vla_status vla_run_dir_default(const char *kind, const char *job_name, char *out, size_t cap) {
    char date[32], tod[32], job[128];
    stamp(date, sizeof date, tod, sizeof tod);
    size_t n = 0;
    for (const char *c = job_name && *job_name ? job_name : "run"; *c && n + 1 < sizeof job; c++)
        job[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                           *c == '_' || *c == '.'
                       ? *c
                       : '_';
    job[n] = 0;
    char parent[512];
    snprintf(parent, sizeof parent, "outputs/%s/%s", kind, date);
    VLA_TRY(vla_mkdirs(parent));
    for (int k = 1; k < 1000; k++) {
        int w = k == 1 ? snprintf(out, cap, "%s/%s_%s", parent, tod, job)
                       : snprintf(out, cap, "%s/%s_%s_%d", parent, tod, job, k);
        if (w < 0 || (size_t)w >= cap) return vla_error(VLA_ERR_INVALID_ARG, "output directory name too long");
        if (mkdir(out, 0755) == 0) return VLA_OK; /* exclusive: a concurrent run gets the next name */
        if (errno != EEXIST) return vla_error(VLA_ERR_IO, "%s: cannot create: %s", out, strerror(errno));
    }
    return vla_error(VLA_ERR_IO, "%s/%s_%s: a thousand runs this second already", parent, tod, job);
}

/* Up to three entries of dir, "a, b, c, …", into buf; returns how many it holds (capped at 4). */
static int list_some(const char *dir, char *buf, size_t cap) {
    buf[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    size_t used = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 4;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n < 3) used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%s", n ? ", " : "", e->d_name);
        else if (used < cap) snprintf(buf + used, cap - used, ", …");
        if (used >= cap) used = cap - 1;
        n++;
    }
    closedir(d);
    return n;
}

bool vla_run_dir_nonempty(const char *dir) {
    char buf[8];
    return list_some(dir, buf, sizeof buf) > 0;
}

vla_status vla_run_dir_claim(const char *dir, bool overwrite, const char *resume_hint, char *moved_to, size_t cap) {
    if (moved_to && cap) moved_to[0] = 0;
    if (vla_path_exists(dir) && !vla_is_dir(dir))
        return vla_error(VLA_ERR_INVALID_ARG, "%s exists and is not a directory; choose another output directory", dir);
    char some[512];
    if (list_some(dir, some, sizeof some) == 0) return vla_mkdirs(dir);
    if (!overwrite)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s already holds files of another run (%s): %smove it aside with --overwrite=true (it is "
                         "renamed %s.old-<date>_<time>, nothing is deleted), or choose another --output_dir",
                         dir, some, resume_hint ? resume_hint : "", dir);
    char date[32], tod[32], aside[4200];
    stamp(date, sizeof date, tod, sizeof tod);
    /* a trailing slash would make the new name a path inside dir */
    char base[4096];
    snprintf(base, sizeof base, "%s", dir);
    for (size_t l = strlen(base); l > 1 && base[l - 1] == '/'; l--) base[l - 1] = 0;
    for (int k = 1;; k++) {
        if (k == 1) snprintf(aside, sizeof aside, "%s.old-%s_%s", base, date, tod);
        else snprintf(aside, sizeof aside, "%s.old-%s_%s-%d", base, date, tod, k);
        if (!vla_path_exists(aside)) break;
        if (k > 1000) return vla_error(VLA_ERR_IO, "%s: no free name to move it aside to", dir);
    }
    if (rename(base, aside) != 0)
        return vla_error(VLA_ERR_IO, "%s: cannot move it aside to %s: %s", dir, aside, strerror(errno));
    if (moved_to && cap) snprintf(moved_to, cap, "%s", aside);
    return vla_mkdirs(base);
}
