/* shards_write.c — `vla data prepare`: a LeRobot dataset decoded once into
 * shards (the plan of which episodes go where, each shard written
 * atomically with its CRCs, resume by keeping the shards that match the
 * plan), and the finishing step that ties them together with meta/ and
 * manifest.json. Layout and guarantees: shards.h. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "base/fault.h"
#include "base/json.h"
#include "base/log.h"
#include "base/timer.h"
#include "data/lerobot_internal.h"
#include "data/shards.h"
#include "data/shards_internal.h"

/* ---- the plan ------------------------------------------------------------------- */

typedef struct {
    const vla_lerobot *ds;
    int n_cams;
    int cam_h[64], cam_w[64];
    int64_t row_bytes;   /* stored bytes per row */
    int64_t n_shards;
    int64_t *first;      /* [n_shards + 1]: shard k holds episodes [first[k], first[k+1]) of ds */
    double tol_s;
} plan;

static void plan_free(plan *p) { free(p->first); }

/* Whole episodes in order, a new shard when the next would pass the target
 * size: depends on the episode list, the stored sizes and shard_mb only. */
static vla_status make_plan(const vla_lerobot *ds, const vla_shards_prepare_opts *o, plan *p) {
    memset(p, 0, sizeof *p);
    p->ds = ds;
    if (ds->n_cameras > 64) return vla_error(VLA_ERR_UNSUPPORTED, "%s: %d cameras (at most 64)", ds->root, ds->n_cameras);
    if (ds->n_episodes == 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: no episodes to prepare", ds->root);
    p->n_cams = ds->n_cameras;
    p->row_bytes = 4 + 4 * 8;
    for (int i = 0; i < ds->n_features; i++)
        if (vla_lr_is_row_feature(&ds->features[i])) p->row_bytes += 4 * ds->features[i].width;
    for (int c = 0; c < ds->n_cameras; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        p->cam_h[c] = o->image_h > 0 ? o->image_h : f->height;
        p->cam_w[c] = o->image_w > 0 ? o->image_w : f->width_px;
        if (p->cam_h[c] < 1 || p->cam_w[c] < 1 || p->cam_h[c] > 8192 || p->cam_w[c] > 8192)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: camera '%s' has no usable size (%dx%d); give --image_size=H,W", ds->root,
                             f->key, p->cam_w[c], p->cam_h[c]);
        p->row_bytes += (int64_t)p->cam_h[c] * p->cam_w[c] * 3;
    }
    double target = (o->shard_mb > 0 ? o->shard_mb : 256) * 1048576.0;
    if (!(p->first = malloc((size_t)(ds->n_episodes + 1) * sizeof *p->first))) return vla_error(VLA_ERR_NOMEM, "out of memory");
    double cur = 0;
    p->first[0] = 0;
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        double eb = (double)ds->episodes[e].length * (double)p->row_bytes;
        if (e > 0 && cur > 0 && cur + eb > target) {
            p->first[++p->n_shards] = e;
            cur = 0;
        }
        cur += eb;
    }
    p->first[++p->n_shards] = ds->n_episodes;
    if (p->n_shards > 99999) return vla_error(VLA_ERR_INVALID_ARG, "%s: %lld shards; raise --shard_mb", ds->root, (long long)p->n_shards);
    p->tol_s = 0.5 / (ds->fps > 0 ? ds->fps : 10); /* the loader's default tolerance (train/loader.h) */
    return VLA_OK;
}

/* Shard k's header as JSON text (compact, fixed key order: the same plan
 * always gives the same bytes, which is how a resume recognises a shard) and
 * its layout. */
static vla_status plan_header(const plan *p, int64_t k, char **text, vla_shard_header *h) {
    const vla_lerobot *ds = p->ds;
    memset(h, 0, sizeof *h);
    int64_t e0 = p->first[k], e1 = p->first[k + 1];
    h->shard = k;
    h->rows = ds->episodes[e1 - 1].to - ds->episodes[e0].from;
    /* sections: numeric features, index columns, cameras */
    int n = 0;
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (!vla_lr_is_row_feature(f)) continue;
        if (n >= VLA_SHARD_MAX_SECTIONS - 5 - p->n_cams || strlen(f->key) >= sizeof h->sec[0].name)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: too many features or a key too long for a shard", ds->root);
        snprintf(h->sec[n].name, sizeof h->sec[n].name, "%s", f->key);
        h->sec[n].kind = VLA_SHARD_F32, h->sec[n++].width = f->width;
    }
        for (int c = 0; c < 5; c++) {
        snprintf(h->sec[n].name, sizeof h->sec[n].name, "%s", vla_shard_index_sections[c]);
        h->sec[n].kind = c == 0 ? VLA_SHARD_F32 : VLA_SHARD_I64, h->sec[n++].width = 1;
    }
    for (int c = 0; c < p->n_cams; c++) {
        snprintf(h->sec[n].name, sizeof h->sec[n].name, "%s", ds->features[ds->camera_feature[c]].key);
        h->sec[n].kind = VLA_SHARD_RGB8, h->sec[n].height = p->cam_h[c], h->sec[n].width_px = p->cam_w[c];
        h->sec[n++].width = (int64_t)p->cam_h[c] * p->cam_w[c] * 3;
    }
    h->n_sections = n;
    /* the header's length depends on the offsets it lists: grow its reserved space until it fits */
    uint64_t reserved = 1024;
    for (;;) {
        uint64_t off = reserved;
        for (int i = 0; i < n; i++) {
            uint64_t align = h->sec[i].kind == VLA_SHARD_RGB8 ? VLA_SHARD_ALIGN : VLA_SHARD_SECTION_ALIGN;
            h->sec[i].offset = off = (off + align - 1) / align * align;
            h->sec[i].bytes = (uint64_t)h->rows * (uint64_t)h->sec[i].width * (uint64_t)vla_shard_kind_size(h->sec[i].kind);
            off += h->sec[i].bytes;
        }
        h->file_bytes = h->sec[n - 1].offset + h->sec[n - 1].bytes + 4 * (uint64_t)n + 12;
        json_t *eps = json_array(), *secs = json_array();
        for (int64_t e = e0; e < e1; e++)
            json_array_append_new(eps, json_pack("[I,I]", (json_int_t)ds->episodes[e].episode_index, (json_int_t)ds->episodes[e].length));
        for (int i = 0; i < n; i++) {
            const vla_shard_section *s = &h->sec[i];
            json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I}", "name", s->name, "kind", vla_shard_kind_name(s->kind), "width",
                                  (json_int_t)s->width, "offset", (json_int_t)s->offset, "bytes", (json_int_t)s->bytes);
            if (s->kind == VLA_SHARD_RGB8) {
                json_object_set_new(o, "height", json_integer(s->height));
                json_object_set_new(o, "width_px", json_integer(s->width_px));
            }
            json_array_append_new(secs, o);
        }
        json_t *j = json_pack("{s:s,s:i,s:I,s:I,s:o,s:o,s:I}", "format", "vla-shard", "version", 1, "shard", (json_int_t)k, "rows",
                              (json_int_t)h->rows, "episodes", eps, "sections", secs, "file_bytes", (json_int_t)h->file_bytes);
        *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(j);
        if (!*text) return vla_error(VLA_ERR_NOMEM, "out of memory");
        if (16 + strlen(*text) <= reserved) return VLA_OK;
        reserved = (16 + strlen(*text) + 1023) / 1024 * 1024;
        free(*text);
        *text = NULL;
    }
}

/* ---- writing one shard -------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t mu;
    int64_t frames_done, frames_total, shards_done, shards_total;
    double t0, last_print;
    bool print;
    _Atomic int64_t written; /* frames this process wrote (the fault point's count) */
} progress;

static void progress_add(progress *pr, int64_t frames, int64_t shards, bool final) {
    pthread_mutex_lock(&pr->mu);
    pr->frames_done += frames, pr->shards_done += shards;
    double now = vla_now_s();
    if (pr->print && (final || now - pr->last_print > 0.5)) {
        pr->last_print = now;
        double el = now - pr->t0;
        char eta[32];
        vla_format_hms(vla_eta_s(el, pr->frames_done, pr->frames_total - pr->frames_done), eta, sizeof eta);
        fprintf(stderr, "\rprepare: shards %lld/%lld | %lld/%lld frames | %.0f frames/s | ETA %s%s", (long long)pr->shards_done,
                (long long)pr->shards_total, (long long)pr->frames_done, (long long)pr->frames_total,
                el > 0 ? pr->frames_done / el : 0.0, eta, final ? "\n" : "");
    }
    pthread_mutex_unlock(&pr->mu);
}


/* Zeros up to `offset`. */
static vla_status pad_to(vla_atomic_file *af, uint64_t offset) {
    static const uint8_t zeros[VLA_SHARD_ALIGN];
    while (af->written < offset) {
        uint64_t n = offset - af->written < sizeof zeros ? offset - af->written : sizeof zeros;
        VLA_TRY(vla_atomic_write(af, zeros, (size_t)n));
    }
    return VLA_OK;
}

static vla_status write_section(vla_atomic_file *af, const vla_shard_section *s, const void *data, uint32_t *crc) {
    VLA_TRY(pad_to(af, s->offset));
    *crc = vla_shard_crc(data, s->bytes);
    return vla_atomic_write(af, data, (size_t)s->bytes);
}

/* Write shard k of the plan (rows from ds, frames through rd) to `path`, atomically. */
static vla_status write_shard(const plan *p, int64_t k, const char *path, const char *text, const vla_shard_header *h,
                              vla_lr_reader *rd, progress *pr) {
    const vla_lerobot *ds = p->ds;
    int64_t r0 = ds->episodes[p->first[k]].from, rows = h->rows;
    vla_atomic_file af;
    VLA_TRY(vla_atomic_open(&af, path));
    uint8_t pre[16], *frame = NULL;
    uint32_t crcs[VLA_SHARD_MAX_SECTIONS + 1];
    memcpy(pre, VLA_SHARD_MAGIC, 8);
    vla_shard_put32(pre + 8, (uint32_t)strlen(text));
    vla_shard_put32(pre + 12, vla_shard_crc(text, strlen(text)));
    vla_status st = vla_atomic_write(&af, pre, 16);
    if (st == VLA_OK) st = vla_atomic_write(&af, text, strlen(text));
    int n = 0;
    for (int i = 0; st == VLA_OK && i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        if (vla_lr_is_row_feature(f)) st = write_section(&af, &h->sec[n], f->values + r0 * f->width, &crcs[n]), n++;
    }
    /* index columns: timestamp f32, then the int64 columns */
    if (st == VLA_OK) st = write_section(&af, &h->sec[n], ds->timestamp + r0, &crcs[n]), n++;
    const int64_t *i64cols[] = {ds->frame_index, ds->episode_index, ds->index, ds->task_index};
    for (int c = 0; st == VLA_OK && c < 4; c++) st = write_section(&af, &h->sec[n], i64cols[c] + r0, &crcs[n]), n++;
    /* cameras: each decoded in row order, written as it comes */
    for (int c = 0; st == VLA_OK && c < p->n_cams; c++, n++) {
        size_t fb = (size_t)p->cam_h[c] * p->cam_w[c] * 3;
        free(frame);
        if (!(frame = malloc(fb))) {
            st = vla_error(VLA_ERR_NOMEM, "out of memory");
            break;
        }
        st = pad_to(&af, h->sec[n].offset);
        uLong crc = crc32(0L, Z_NULL, 0);
        for (int64_t r = r0; st == VLA_OK && r < r0 + rows; r++) {
            st = vla_lr_reader_frame(rd, c, r, p->cam_w[c], p->cam_h[c], p->tol_s, frame);
            if (st == VLA_OK) st = vla_atomic_write(&af, frame, fb);
            crc = crc32(crc, frame, (uInt)fb);
            if (st == VLA_OK && (r - r0) % 64 == 63) progress_add(pr, 64, 0, false);
            /* testing (`--crash_at_frame`): die here as a killed prepare would, mid-shard */
            if (st == VLA_OK) (void)vla_fault_at(VLA_FAULT_SHARD_FRAME, atomic_fetch_add(&pr->written, 1) + 1);
        }
        crcs[n] = (uint32_t)crc;
        if (st == VLA_OK) progress_add(pr, rows % 64, 0, false);
    }
    if (st == VLA_OK) st = pad_to(&af, h->file_bytes - (4 * (uint64_t)n + 12));
    uint8_t tail[4 * VLA_SHARD_MAX_SECTIONS + 12];
    for (int i = 0; i < n; i++) vla_shard_put32(tail + 4 * i, crcs[i]);
    vla_shard_put32(tail + 4 * n, vla_shard_crc(tail, 4 * (uint64_t)n));
    memcpy(tail + 4 * n + 4, VLA_SHARD_END, 8);
    if (st == VLA_OK) st = vla_atomic_write(&af, tail, 4 * (size_t)n + 12);
    if (st == VLA_OK && af.written != h->file_bytes)
        st = vla_error(VLA_ERR_INTERNAL, "%s: wrote %llu bytes, planned %llu", path, (unsigned long long)af.written,
                       (unsigned long long)h->file_bytes);
    if (st == VLA_OK) st = vla_atomic_commit(&af);
    else vla_atomic_abort(&af);
    free(frame);
    return st;
}

/* Does the file at `path` hold exactly the planned shard (header bytes equal;
 * with verify_data every section's CRC too)? The status says why not. */
static vla_status check_existing(const char *path, const char *text, bool verify_data, vla_shard_header *out) {
    vla_mapped_file m;
    VLA_TRY(vla_map_file(path, &m));
    vla_shard_header h;
    vla_status st = vla_shard_parse(path, m.data, m.size, verify_data, &h);
    size_t n = strlen(text);
    if (st == VLA_OK && (h.header_len != n || memcmp(m.data + 16, text, n)))
        st = vla_error(VLA_ERR_FORMAT, "%s: holds another plan (other episodes, features or frame size)", path);
    vla_unmap_file(&m);
    if (st == VLA_OK && out) *out = h;
    else vla_shard_header_free(&h);
    return st;
}

static vla_status open_source(const char *root, const vla_shards_prepare_opts *o, bool meta_only, vla_lerobot **ds) {
    if (vla_shards_is_set(root))
        return vla_error(VLA_ERR_INVALID_ARG, "%s: is already a shard set; prepare from the LeRobot dataset it came from", root);
    vla_lr_open_opts oo = {0};
    if (o->sel) oo = *o->sel;
    oo.meta_only = meta_only;
    return vla_lerobot_open_opts(root, &oo, ds);
}

typedef struct {
    const plan *p;
    const vla_shards_prepare_opts *o;
    const int64_t *todo;
    int64_t n_todo, next;
    progress *pr;
    pthread_mutex_t mu;
    vla_status st;
    char err[1024];
} job_queue;

static void *prepare_worker(void *arg) {
    job_queue *q = arg;
    vla_lr_reader *rd = NULL;
    vla_status st = vla_lr_reader_open(q->p->ds, &rd);
    for (;;) {
        pthread_mutex_lock(&q->mu);
        int64_t i = st == VLA_OK && q->st == VLA_OK && q->next < q->n_todo ? q->next++ : -1;
        pthread_mutex_unlock(&q->mu);
        if (i < 0) break;
        int64_t k = q->todo[i];
        char name[64], *text = NULL, path[4096];
        vla_shard_file_name(k, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", q->o->out, name);
        vla_shard_header h;
        st = plan_header(q->p, k, &text, &h);
        if (st == VLA_OK) st = write_shard(q->p, k, path, text, &h, rd, q->pr);
        free(text);
        if (st == VLA_OK) progress_add(q->pr, 0, 1, false);
    }
    if (st != VLA_OK) {
        pthread_mutex_lock(&q->mu);
        if (q->st == VLA_OK) {
            q->st = st;
            snprintf(q->err, sizeof q->err, "%s", vla_error_message());
        }
        pthread_mutex_unlock(&q->mu);
    }
    vla_lr_reader_close(rd);
    return NULL;
}

vla_status vla_shards_prepare(const char *root, const vla_shards_prepare_opts *o, vla_shards_prepare_stats *stats) {
    memset(stats, 0, sizeof *stats);
    double t0 = vla_now_s();
    int world = o->world > 1 ? o->world : 1, rank = o->world > 1 ? o->rank : 0;
    if (!o->out) return vla_error(VLA_ERR_INVALID_ARG, "prepare: no output directory");
    vla_lerobot *ds;
    VLA_TRY(open_source(root, o, false, &ds));
    plan p;
    vla_status st = make_plan(ds, o, &p);
    if (st == VLA_OK) st = vla_mkdirs(o->out);
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/%s", o->out, VLA_SHARDS_MANIFEST);
    /* a set being rewritten is unfinished until finish writes the manifest again */
    if (st == VLA_OK && rank == 0 && vla_path_exists(mpath) && unlink(mpath) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot remove the old manifest", mpath);
    int64_t *todo = st == VLA_OK ? malloc((size_t)(p.n_shards + 1) * sizeof *todo) : NULL;
    if (st == VLA_OK && !todo) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    progress pr = {.t0 = vla_now_s(), .print = o->progress};
    pthread_mutex_init(&pr.mu, NULL);
    int64_t n_todo = 0;
    for (int64_t k = rank; st == VLA_OK && k < p.n_shards; k += world) {
        stats->mine++;
        char name[64], *text = NULL, path[4096];
        vla_shard_file_name(k, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", o->out, name);
        vla_shard_header h;
        st = plan_header(&p, k, &text, &h);
        if (st == VLA_OK && vla_path_exists(path)) {
            if (check_existing(path, text, true, NULL) == VLA_OK) {
                stats->kept++;
                free(text);
                continue;
            }
            VLA_INFO("prepare: rewriting %s (%s)", name, vla_error_message());
        }
        free(text);
        todo[n_todo++] = k;
        pr.frames_total += h.rows * p.n_cams;
        stats->rows += h.rows;
    }
    stats->shards = p.n_shards;
    pr.shards_total = n_todo;
    if (st == VLA_OK && n_todo > 0) {
        job_queue q = {.p = &p, .o = o, .todo = todo, .n_todo = n_todo, .pr = &pr, .st = VLA_OK};
        pthread_mutex_init(&q.mu, NULL);
        int nw = o->num_workers > 0 ? o->num_workers : 1;
        if (nw > n_todo) nw = (int)n_todo;
        if (nw > 64) nw = 64;
        pthread_t th[64];
        int started = 0;
        for (; started < nw - 1; started++)
            if (pthread_create(&th[started], NULL, prepare_worker, &q) != 0) break;
        prepare_worker(&q); /* this thread is a worker too */
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        pthread_mutex_destroy(&q.mu);
        if (q.st != VLA_OK) st = vla_error(q.st, "%s", q.err);
        progress_add(&pr, 0, 0, true);
    }
    if (st == VLA_OK) {
        stats->written = n_todo;
        stats->frames = pr.frames_done;
    } else {
        stats->rows = 0;
    }
    pthread_mutex_destroy(&pr.mu);
    stats->seconds = vla_now_s() - t0;
    free(todo);
    plan_free(&p);
    vla_lerobot_close(ds);
    return st;
}

/* Remove what killed writers and bigger earlier plans left behind. */
static vla_status remove_leftovers(const char *out, int64_t n_shards) {
    DIR *d = opendir(out);
    if (!d) return vla_error(VLA_ERR_IO, "%s: cannot list", out);
    vla_status st = VLA_OK;
    for (struct dirent *e; st == VLA_OK && (e = readdir(d));) {
        long long k;
        int used = 0;
        bool stale = strstr(e->d_name, ".vshard.tmp-") != NULL || !strncmp(e->d_name, "meta.tmp-", 9);
        if (!stale && sscanf(e->d_name, "shard-%lld.vshard%n", &k, &used) == 1 && e->d_name[used] == 0 && k >= n_shards) stale = true;
        if (!stale) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        st = vla_remove_tree(path);
    }
    closedir(d);
    return st;
}

vla_status vla_shards_finish(const char *root, const vla_shards_prepare_opts *o) {
    vla_lerobot *ds;
    VLA_TRY(open_source(root, o, true, &ds));
    plan p;
    vla_status st = make_plan(ds, o, &p);
    json_t *shards = json_array(), *eps = json_array(), *cams = json_array();
    int64_t rows = 0;
    for (int64_t k = 0; st == VLA_OK && k < p.n_shards; k++) {
        char name[64], *text = NULL, path[4096];
        vla_shard_file_name(k, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", o->out, name);
        vla_shard_header h;
        st = plan_header(&p, k, &text, &h);
        if (st == VLA_OK && !vla_path_exists(path))
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: shard is missing (did every rank finish?); rerun `vla data prepare` to resume",
                           path);
        vla_shard_header got;
        if (st == VLA_OK) st = check_existing(path, text, false, &got);
        free(text);
        if (st != VLA_OK) break;
        json_t *le = json_array();
        for (int64_t e = 0; e < got.n_episodes; e++) json_array_append_new(le, json_integer(got.episodes[2 * e]));
        json_array_append_new(shards, json_pack("{s:s,s:I,s:I,s:I,s:o}", "file", name, "rows", (json_int_t)got.rows, "bytes",
                                                (json_int_t)got.file_bytes, "header_crc32", (json_int_t)got.header_crc,
                                                "episodes", le));
        rows += got.rows;
        vla_shard_header_free(&got);
    }
    for (int64_t e = 0; st == VLA_OK && e < ds->n_episodes; e++) json_array_append_new(eps, json_integer(ds->episodes[e].episode_index));
    for (int c = 0; st == VLA_OK && c < p.n_cams; c++)
        json_array_append_new(cams, json_pack("{s:s,s:i,s:i}", "key", ds->features[ds->camera_feature[c]].key, "height", p.cam_h[c],
                                              "width", p.cam_w[c]));
    if (st == VLA_OK) st = remove_leftovers(o->out, p.n_shards);
    /* meta/ as the source has it, swapped in whole */
    char src_meta[4096], tmp[4096], dst_meta[4096], mpath[4096], abs_root[PATH_MAX];
    snprintf(src_meta, sizeof src_meta, "%s/meta", root);
    snprintf(tmp, sizeof tmp, "%s/meta.tmp-%ld", o->out, (long)getpid());
    snprintf(dst_meta, sizeof dst_meta, "%s/meta", o->out);
    snprintf(mpath, sizeof mpath, "%s/%s", o->out, VLA_SHARDS_MANIFEST);
    if (st == VLA_OK) st = vla_copy_tree(src_meta, tmp);
    if (st == VLA_OK) st = vla_remove_tree(dst_meta);
    if (st == VLA_OK && rename(tmp, dst_meta) != 0) st = vla_error(VLA_ERR_IO, "%s: cannot rename into place", dst_meta);
    if (st == VLA_OK) st = vla_fsync_dir(o->out);
    if (st == VLA_OK) {
        if (!realpath(root, abs_root)) snprintf(abs_root, sizeof abs_root, "%s", root);
        json_t *m = json_pack("{s:s,s:i,s:s,s:s,s:I,s:I,s:f,s:f,s:O,s:O,s:O}", "format", "vla-shards", "version", 1, "source", abs_root,
                              "codebase_version", ds->codebase_version, "n_shards", (json_int_t)p.n_shards, "rows", (json_int_t)rows,
                              "shard_mb", o->shard_mb > 0 ? o->shard_mb : 256.0, "tolerance_s", p.tol_s, "cameras", cams,
                              "episodes", eps, "shards", shards);
        st = m ? vla_json_write_file(mpath, m) : vla_error(VLA_ERR_NOMEM, "out of memory");
        json_decref(m);
    }
    if (st != VLA_OK) vla_remove_tree(tmp);
    json_decref(shards), json_decref(eps), json_decref(cams);
    plan_free(&p);
    vla_lerobot_close(ds);
    return st;
}
