/* lerobot_validate.c — read every file of a LeRobot dataset and list every
 * problem with the file it is in and the reason: row counts against
 * info/episodes, contiguous index, episode ranges, frame_index, timestamps
 * against fps, finite values, task indices, and for videos presence,
 * duration and decodability (first and last frame of every episode; with
 * all_frames every frame, every problem reported by vla_video_scan). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "base/fsutil.h"
#include "base/timer.h"
#include "data/lerobot_internal.h"
#include "io/video.h"

/* The data file holding row r (relative), for reports. */
static void row_file(const vla_lerobot *ds, int64_t r, char *buf, size_t cap) {
    snprintf(buf, cap, "data");
    int64_t e = r >= 0 && r < ds->n_rows ? ds->row_episode[r] : -1;
    if (e < 0) return;
    char p[4096];
    if (vla_lerobot_data_file(ds, e, p, sizeof p) == VLA_OK) snprintf(buf, cap, "%s", vla_lr_rel(ds, p));
}

#define MAX_PER_CHECK 5 /* list the first few of a kind, then a count */

static void check_rows(const vla_lerobot *ds, json_t *pr) {
    char f[4096];
    double tol = 1e-4;
    /* index contiguity was reported by open (first break); report frame_index, episode_index, timestamps */
    int64_t n_idx = 0;
    for (int64_t r = 1; r < ds->n_rows; r++)
        if (ds->index[r] != ds->index[r - 1] + 1 && !(ds->selected && ds->row_episode[r] != ds->row_episode[r - 1])) {
            if (++n_idx <= MAX_PER_CHECK) {
                row_file(ds, r, f, sizeof f);
                vla_lr_problem(pr, f, "column 'index' jumps from %lld to %lld at row %lld", (long long)ds->index[r - 1],
                               (long long)ds->index[r], (long long)r);
            }
        }
    if (n_idx > MAX_PER_CHECK) vla_lr_problem(pr, "data", "%lld more breaks in column 'index'", (long long)(n_idx - MAX_PER_CHECK));
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        int64_t bad_fi = 0, bad_ei = 0, bad_ts = 0;
        for (int64_t r = ep->from; r < ep->to && r < ds->n_rows; r++) {
            row_file(ds, r, f, sizeof f);
            if (ds->episode_index[r] != ep->episode_index && ++bad_ei <= 1)
                vla_lr_problem(pr, f, "row %lld: episode_index %lld, but the episodes metadata puts the row in episode %lld",
                               (long long)r, (long long)ds->episode_index[r], (long long)ep->episode_index);
            if (ds->frame_index[r] != r - ep->from && ++bad_fi <= 1)
                vla_lr_problem(pr, f, "row %lld: frame_index %lld, expected %lld (episode %lld)", (long long)r,
                               (long long)ds->frame_index[r], (long long)(r - ep->from), (long long)ep->episode_index);
            if (r > ep->from) {
                double dt = (double)ds->timestamp[r] - (double)ds->timestamp[r - 1];
                if (!(fabs(dt - 1.0 / ds->fps) <= tol) && ++bad_ts <= 1)
                    vla_lr_problem(pr, f, "row %lld: timestamp %.6f follows %.6f: step %.6f s, fps %g wants %.6f s (tolerance %g s)",
                                   (long long)r, ds->timestamp[r], ds->timestamp[r - 1], dt, ds->fps, 1.0 / ds->fps, tol);
            }
            if (ds->task_index[r] < 0 || ds->task_index[r] >= ds->n_tasks) {
                vla_lr_problem(pr, f, "row %lld: task_index %lld is not in the tasks file (%lld tasks)", (long long)r,
                               (long long)ds->task_index[r], (long long)ds->n_tasks);
                break;
            }
        }
        if (bad_ei > 1) vla_lr_problem(pr, f, "episode %lld: %lld rows with a wrong episode_index", (long long)ep->episode_index, (long long)bad_ei);
        if (bad_fi > 1) vla_lr_problem(pr, f, "episode %lld: %lld rows with a wrong frame_index", (long long)ep->episode_index, (long long)bad_fi);
        if (bad_ts > 1) vla_lr_problem(pr, f, "episode %lld: %lld timestamp steps inconsistent with fps", (long long)ep->episode_index, (long long)bad_ts);
    }
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *ft = &ds->features[i];
        if (!ft->values) continue;
        int64_t bad = 0, first = -1;
        for (int64_t k = 0; k < ds->n_rows * ft->width; k++)
            if (!isfinite(ft->values[k])) {
                if (first < 0) first = k;
                bad++;
            }
        if (bad) {
            row_file(ds, first / ft->width, f, sizeof f);
            vla_lr_problem(pr, f, "feature '%s' has %lld non-finite values (NaN/Inf), first at row %lld, element %lld", ft->key,
                           (long long)bad, (long long)(first / ft->width), (long long)(first % ft->width));
        }
    }
}

static void check_videos(const vla_lerobot *ds, json_t *pr) {
    for (int c = 0; c < ds->n_cameras; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        if (f->dtype != VLA_LR_VIDEO) continue;
        vla_video_decoder *dec = NULL;
        char cur[2048] = "";
        int cur_bad = 0;
        uint8_t *rgb = malloc((size_t)f->width_px * f->height * 3);
        for (int64_t e = 0; rgb && e < ds->n_episodes; e++) {
            const vla_lr_episode *ep = &ds->episodes[e];
            char path[2048];
            if (vla_lerobot_video_file(ds, c, e, path, sizeof path) != VLA_OK) {
                vla_lr_problem(pr, "meta/info.json", "%s", vla_error_message());
                break;
            }
            if (strcmp(path, cur)) {
                vla_video_decoder_close(dec);
                dec = NULL;
                snprintf(cur, sizeof cur, "%s", path);
                cur_bad = 0;
                if (!vla_path_exists(path)) {
                    vla_lr_problem(pr, vla_lr_rel(ds, path), "video file is missing (camera '%s', episode %lld)", f->key, (long long)ep->episode_index);
                    cur_bad = 1;
                } else if (vla_video_decoder_open(path, NULL, &dec) != VLA_OK) {
                    vla_lr_problem(pr, vla_lr_rel(ds, path), "video does not open: %s", vla_error_message());
                    cur_bad = 1;
                } else {
                    const vla_video_info *vi = vla_video_decoder_info(dec);
                    if (vi->width != f->width_px || vi->height != f->height)
                        vla_lr_problem(pr, vla_lr_rel(ds, path), "video is %dx%d, info.json says %dx%d for '%s'", vi->width, vi->height,
                                       f->width_px, f->height, f->key);
                    if (vi->fps > 0 && fabs(vi->fps - ds->fps) > 1e-3)
                        vla_lr_problem(pr, vla_lr_rel(ds, path), "video fps %g, dataset fps %g", vi->fps, ds->fps);
                }
            }
            if (cur_bad || !dec || ep->length == 0) continue;
            const vla_video_info *vi = vla_video_decoder_info(dec);
            if (vi->duration > 0 && ep->video[c].to_ts > vi->duration + 1.0 / ds->fps + 1e-3)
                vla_lr_problem(pr, vla_lr_rel(ds, path), "episode %lld ends at %.4f s but the video lasts %.4f s", (long long)ep->episode_index,
                               ep->video[c].to_ts, vi->duration);
            if (ep->to > ds->n_rows) continue; /* rows missing: reported above */
            double t_last = ep->video[c].from_ts + (double)ds->timestamp[ep->to - 1];
            double t_first = ep->video[c].from_ts + (double)ds->timestamp[ep->from];
            double ts[2] = {t_first, t_last};
            for (int k = 0; k < 2; k++)
                if (vla_video_decoder_read(dec, ts[k], VLA_VIDEO_DEFAULT_TOLERANCE_S, 0, 0, rgb, NULL) != VLA_OK) {
                    vla_lr_problem(pr, vla_lr_rel(ds, path), "episode %lld: %s frame does not decode: %s", (long long)ep->episode_index,
                                   k ? "last" : "first", vla_error_message());
                    break;
                }
        }
        vla_video_decoder_close(dec);
        free(rgb);
    }
}

/* ---- every frame (--frames=all) ---- */

#define SCAN_MAX_FINDINGS 20 /* per file; the rest are counted */

typedef struct {
    double t;
    char what[240];
} finding;

typedef struct {
    int64_t frames; /* decoded so far, all files */
    int64_t files_done, n_files;
    double t0, last_print;
    bool on;
} scan_progress;

typedef struct {
    int cam;
    char path[2048];
    int64_t frames, errors;
    int64_t counted;        /* of frames, added to prog->frames so far */
    scan_progress *prog;    /* shared by the jobs of one validate */
    finding found[SCAN_MAX_FINDINGS];
    int n_found;
    vla_status st;
    char err[512];
} scan_job;

static void on_finding(void *user, double t, const char *what) {
    scan_job *j = user;
    if (j->n_found < SCAN_MAX_FINDINGS) {
        j->found[j->n_found].t = t;
        snprintf(j->found[j->n_found].what, sizeof j->found[j->n_found].what, "%s", what);
        j->n_found++;
    }
}

static void print_progress(scan_progress *p, bool final) {
    double now = vla_now_s();
    if (!p->on || (!final && now - p->last_print < 0.5)) return;
    p->last_print = now;
    double el = now - p->t0, rate = el > 0 ? (double)p->frames / el : 0;
    char eta[32];
    vla_format_hms(vla_eta_s(el, p->files_done, p->n_files - p->files_done), eta, sizeof eta);
    fprintf(stderr, "\rvalidate: files %lld/%lld | %lld frames decoded | %.0f frames/s | ETA %s%s",
            (long long)p->files_done, (long long)p->n_files, (long long)p->frames, rate, eta, final ? "\n" : "");
    fflush(stderr);
}

/* Add a job's newly decoded frames to the shared count (`frames` is its total so far). */
static void count_frames(scan_job *j, int64_t frames) {
    int64_t add = frames - j->counted;
    j->counted = frames;
#pragma omp atomic
    j->prog->frames += add;
}

static void on_frames(void *user, int64_t frames) {
    scan_job *j = user;
    count_frames(j, frames);
    if (omp_get_thread_num() == 0) print_progress(j->prog, false);
}

/* The distinct video files the episodes use, per camera, that exist
 * (missing ones were listed by check_videos). */
static int scan_jobs(const vla_lerobot *ds, scan_job **out) {
    int cap = 16, n = 0;
    scan_job *j = malloc((size_t)cap * sizeof *j);
    for (int c = 0; j && c < ds->n_cameras; c++) {
        if (ds->features[ds->camera_feature[c]].dtype != VLA_LR_VIDEO) continue;
        for (int64_t e = 0; e < ds->n_episodes; e++) {
            char path[2048];
            if (vla_lerobot_video_file(ds, c, e, path, sizeof path) != VLA_OK || !vla_path_exists(path)) continue;
            int seen = 0;
            for (int k = n - 1; k >= 0 && !seen; k--) seen = j[k].cam == c && !strcmp(j[k].path, path);
            if (seen) continue;
            if (n == cap) {
                scan_job *g = realloc(j, (size_t)(cap *= 2) * sizeof *g);
                if (!g) break;
                j = g;
            }
            memset(&j[n], 0, sizeof j[n]);
            j[n].cam = c;
            snprintf(j[n].path, sizeof j[n].path, "%s", path);
            n++;
        }
    }
    vla_error_clear();
    *out = j;
    return j ? n : 0;
}

/* Where a finding at time t of camera c's file `path` falls: "episode E,
 * t=… s (frame F of the episode)", or the file time alone. */
static void locate(const vla_lerobot *ds, int c, const char *path, double t, char *buf, size_t cap) {
    if (!isfinite(t)) {
        snprintf(buf, cap, "whole file");
        return;
    }
    double half = 0.5 / ds->fps;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        char p[2048];
        if (vla_lerobot_video_file(ds, c, e, p, sizeof p) != VLA_OK || strcmp(p, path)) continue;
        const vla_lr_episode_video *v = &ds->episodes[e].video[c];
        if (t >= v->from_ts - half && t < v->to_ts + half) {
            snprintf(buf, cap, "episode %lld, t=%.3f s (episode time %.3f s, frame %lld)",
                     (long long)ds->episodes[e].episode_index, t, t - v->from_ts,
                     (long long)llround((t - v->from_ts) * ds->fps));
            return;
        }
    }
    vla_error_clear();
    snprintf(buf, cap, "t=%.3f s (in no selected episode)", t);
}

static void check_all_frames(const vla_lerobot *ds, json_t *pr, bool progress) {
    scan_job *jobs = NULL;
    int n = scan_jobs(ds, &jobs);
    scan_progress prog = {0, 0, n, vla_now_s(), 0, progress};
    for (int i = 0; i < n; i++) jobs[i].prog = &prog;
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < n; i++) {
        scan_job *j = &jobs[i];
        j->st = vla_video_scan(j->path, SCAN_MAX_FINDINGS, on_finding, j, on_frames, &j->frames, &j->errors);
        if (j->st != VLA_OK) snprintf(j->err, sizeof j->err, "%s", vla_error_message());
        count_frames(j, j->frames);
#pragma omp atomic
        prog.files_done++;
    }
    print_progress(&prog, true);
    for (int i = 0; i < n; i++) { /* in file order, whatever order the threads finished in */
        const scan_job *j = &jobs[i];
        const char *key = ds->features[ds->camera_feature[j->cam]].key;
        if (j->st != VLA_OK) {
            vla_lr_problem(pr, vla_lr_rel(ds, j->path), "camera '%s': video does not decode: %s", key, j->err);
            continue;
        }
        for (int k = 0; k < j->n_found; k++) {
            char where[256];
            locate(ds, j->cam, j->path, j->found[k].t, where, sizeof where);
            vla_lr_problem(pr, vla_lr_rel(ds, j->path), "camera '%s', %s: %s", key, where, j->found[k].what);
        }
        if (j->errors > j->n_found)
            vla_lr_problem(pr, vla_lr_rel(ds, j->path), "camera '%s': %lld more decode problems in this file", key,
                           (long long)(j->errors - j->n_found));
    }
    free(jobs);
}

vla_status vla_lerobot_validate(const char *root, json_t *problems) {
    return vla_lerobot_validate_opts(root, NULL, NULL, problems);
}

vla_status vla_lerobot_validate_opts(const char *root, const vla_lr_open_opts *opts, const vla_lr_validate_opts *v,
                                     json_t *problems) {
    vla_lerobot *ds;
    vla_lr_open_opts o = opts ? *opts : (vla_lr_open_opts){0};
    o.meta_only = false;
    vla_status st = vla_lr_open_internal(root, problems, &o, &ds);
    if (st != VLA_OK) {
        /* the message names the file; split "path: reason" when it does */
        const char *msg = vla_error_message();
        size_t n = strlen(root);
        const char *file = "meta/info.json";
        char fbuf[1024];
        if (!strncmp(msg, root, n) && msg[n] == '/') {
            const char *colon = strstr(msg + n + 1, ": ");
            if (colon && (size_t)(colon - (msg + n + 1)) < sizeof fbuf) {
                memcpy(fbuf, msg + n + 1, (size_t)(colon - (msg + n + 1)));
                fbuf[colon - (msg + n + 1)] = 0;
                file = fbuf;
                msg = colon + 2;
            }
        }
        vla_lr_problem(problems, file, "%s", msg);
        return st;
    }
    check_rows(ds, problems);
    if (!ds->shards) { /* a shard set's frames were checked against their CRCs when it opened */
        check_videos(ds, problems);
        if (v && v->all_frames) check_all_frames(ds, problems, v->progress);
    }
    vla_lerobot_close(ds);
    return VLA_OK;
}
