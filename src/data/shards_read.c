/* shards_read.c — a shard set opened as a dataset: the manifest, every shard
 * mapped and checked (size, header and section CRCs), the rows copied into
 * the vla_lerobot, frames served from the mapped camera sections. Layout and
 * guarantees: shards.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "base/json.h"
#include "data/lerobot_internal.h"
#include "data/shards.h"
#include "data/shards_internal.h"

/* ---- one shard file ----------------------------------------------------------- */


uint32_t vla_shard_crc(const void *data, uint64_t n) {
    const uint8_t *p = data;
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) { /* crc32_z takes size_t, but stay in uInt steps for old zlibs */
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, step);
        p += step, n -= step;
    }
    return (uint32_t)c;
}

const char *const vla_shard_index_sections[5] = {"#timestamp", "#frame_index", "#episode_index", "#index", "#task_index"};

int vla_shard_kind_size(vla_shard_kind k) { return k == VLA_SHARD_F32 ? 4 : k == VLA_SHARD_I64 ? 8 : 1; }
const char *vla_shard_kind_name(vla_shard_kind k) { return k == VLA_SHARD_F32 ? "f32" : k == VLA_SHARD_I64 ? "i64" : "rgb8"; }
void vla_shard_file_name(int64_t shard, char *buf, size_t cap) { snprintf(buf, cap, "shard-%05lld.vshard", (long long)shard); }

void vla_shard_header_free(vla_shard_header *h) {
    free(h->episodes);
    h->episodes = NULL;
}

static vla_status parse_section(const char *what, int i, const json_t *o, vla_shard_section *s) {
    char where[600];
    snprintf(where, sizeof where, "%s: header sections[%d]", what, i);
    const char *name, *kind;
    int64_t width, offset, bytes;
    if (!json_is_object(o)) return vla_error(VLA_ERR_FORMAT, "%s: not an object", where);
    VLA_TRY(vla_json_get_string(where, o, "name", &name));
    VLA_TRY(vla_json_get_string(where, o, "kind", &kind));
    VLA_TRY(vla_json_get_int(where, o, "width", &width));
    VLA_TRY(vla_json_get_int(where, o, "offset", &offset));
    VLA_TRY(vla_json_get_int(where, o, "bytes", &bytes));
    if (strlen(name) == 0 || strlen(name) >= sizeof s->name) return vla_error(VLA_ERR_FORMAT, "%s: bad name", where);
    snprintf(s->name, sizeof s->name, "%s", name);
    if (!strcmp(kind, "f32")) s->kind = VLA_SHARD_F32;
    else if (!strcmp(kind, "i64")) s->kind = VLA_SHARD_I64;
    else if (!strcmp(kind, "rgb8")) s->kind = VLA_SHARD_RGB8;
    else return vla_error(VLA_ERR_FORMAT, "%s: unknown kind '%s'", where, kind);
    if (width < 1 || width > (1 << 26) || offset < 0 || bytes < 0 || offset % VLA_SHARD_SECTION_ALIGN)
        return vla_error(VLA_ERR_FORMAT, "%s: bad width, offset or size", where);
    s->width = width, s->offset = (uint64_t)offset, s->bytes = (uint64_t)bytes;
    s->height = s->width_px = 0;
    if (s->kind == VLA_SHARD_RGB8) {
        int64_t h, w;
        VLA_TRY(vla_json_get_int(where, o, "height", &h));
        VLA_TRY(vla_json_get_int(where, o, "width_px", &w));
        if (h < 1 || w < 1 || h > 8192 || w > 8192 || h * w * 3 != width)
            return vla_error(VLA_ERR_FORMAT, "%s: frame size %lldx%lld does not give width %lld", where, (long long)w,
                             (long long)h, (long long)width);
        s->height = (int)h, s->width_px = (int)w;
    }
    return VLA_OK;
}

static vla_status parse_json_header(const char *what, const json_t *j, uint64_t size, vla_shard_header *h) {
    char where[600];
    snprintf(where, sizeof where, "%s: header", what);
    const char *format;
    int64_t version, fb;
    json_t *eps, *secs;
    VLA_TRY(vla_json_get_string(where, j, "format", &format));
    VLA_TRY(vla_json_get_int(where, j, "version", &version));
    if (strcmp(format, "vla-shard") || version != 1)
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: format '%s' version %lld (this build reads vla-shard 1)", where, format,
                         (long long)version);
    VLA_TRY(vla_json_get_int(where, j, "shard", &h->shard));
    VLA_TRY(vla_json_get_int(where, j, "rows", &h->rows));
    VLA_TRY(vla_json_get_int(where, j, "file_bytes", &fb));
    VLA_TRY(vla_json_get_array(where, j, "episodes", &eps));
    VLA_TRY(vla_json_get_array(where, j, "sections", &secs));
    if (h->shard < 0 || h->shard > 99999 || h->rows < 1 || h->rows > ((int64_t)1 << 34))
        return vla_error(VLA_ERR_FORMAT, "%s: bad shard number or row count", where);
    if (fb < 0 || (uint64_t)fb != size)
        return vla_error(VLA_ERR_FORMAT, "%s: the header says %lld bytes but the file has %llu (truncated?)", what, (long long)fb,
                         (unsigned long long)size);
    h->file_bytes = size;
    size_t ne = json_array_size(eps), ns = json_array_size(secs);
    if (ne < 1 || ns < 1 || ns > VLA_SHARD_MAX_SECTIONS || (int64_t)ne > h->rows)
        return vla_error(VLA_ERR_FORMAT, "%s: %zu episodes and %zu sections for %lld rows", where, ne, ns, (long long)h->rows);
    h->episodes = malloc(ne * 2 * sizeof *h->episodes);
    if (!h->episodes) return vla_error(VLA_ERR_NOMEM, "out of memory");
    h->n_episodes = (int64_t)ne;
    int64_t sum = 0;
    for (size_t i = 0; i < ne; i++) {
        const json_t *e = json_array_get(eps, i);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(json_array_get(e, 0)) ||
            !json_is_integer(json_array_get(e, 1)))
            return vla_error(VLA_ERR_FORMAT, "%s: episodes[%zu] is not [episode_index, length]", where, i);
        int64_t idx = json_integer_value(json_array_get(e, 0)), len = json_integer_value(json_array_get(e, 1));
        if (idx < 0 || len < 1 || len > h->rows - sum || (i > 0 && idx <= h->episodes[2 * i - 2]))
            return vla_error(VLA_ERR_FORMAT, "%s: episodes[%zu] = [%lld, %lld] is out of order or too long", where, i,
                             (long long)idx, (long long)len);
        h->episodes[2 * i] = idx, h->episodes[2 * i + 1] = len;
        sum += len;
    }
    if (sum != h->rows) return vla_error(VLA_ERR_FORMAT, "%s: episodes hold %lld rows, not %lld", where, (long long)sum, (long long)h->rows);
    h->n_sections = (int)ns;
    uint64_t end = 0, trailer = 4 * (uint64_t)ns + 12;
    for (int i = 0; i < (int)ns; i++) {
        vla_shard_section *s = &h->sec[i];
        VLA_TRY(parse_section(what, i, json_array_get(secs, (size_t)i), s));
        uint64_t want = (uint64_t)h->rows * (uint64_t)s->width * (uint64_t)vla_shard_kind_size(s->kind);
        if (size < trailer || s->bytes != want || s->offset < end || s->offset > size - trailer ||
            s->bytes > size - trailer - s->offset)
            return vla_error(VLA_ERR_FORMAT, "%s: section '%s' (%llu bytes at %llu) does not fit %lld rows in a %llu-byte file", what,
                             s->name, (unsigned long long)s->bytes, (unsigned long long)s->offset, (long long)h->rows,
                             (unsigned long long)size);
        end = s->offset + s->bytes;
    }
    return VLA_OK;
}

vla_status vla_shard_parse(const char *what, const uint8_t *data, size_t size, bool verify_data, vla_shard_header *h) {
    memset(h, 0, sizeof *h);
    if (size < 16 + 12 || memcmp(data, VLA_SHARD_MAGIC, 8))
        return vla_error(VLA_ERR_FORMAT, "%s: not a vla shard (no %s magic)", what, VLA_SHARD_MAGIC);
    uint32_t hlen = vla_shard_get32(data + 8);
    if (hlen < 2 || hlen > size - 16)
        return vla_error(VLA_ERR_FORMAT, "%s: header length %u does not fit the file (truncated?)", what, hlen);
    h->header_len = hlen;
    h->header_crc = vla_shard_get32(data + 12);
    if (vla_shard_crc(data + 16, hlen) != h->header_crc) return vla_error(VLA_ERR_FORMAT, "%s: header CRC mismatch (corrupt)", what);
    json_t *j;
    char where[600];
    snprintf(where, sizeof where, "%s: header", what);
    VLA_TRY(vla_json_parse(where, (const char *)data + 16, hlen, &j));
    vla_status st = json_is_object(j) ? parse_json_header(what, j, size, h) : vla_error(VLA_ERR_FORMAT, "%s: not a JSON object", where);
    json_decref(j);
    if (st == VLA_OK && h->n_sections > 0 && h->sec[0].offset < 16 + (uint64_t)hlen)
        st = vla_error(VLA_ERR_FORMAT, "%s: the first section overlaps the header", what);
    /* trailer: crc per section, crc of those, end magic */
    const uint8_t *t = data + size - (4 * (size_t)h->n_sections + 12);
    if (st == VLA_OK && memcmp(data + size - 8, VLA_SHARD_END, 8))
        st = vla_error(VLA_ERR_FORMAT, "%s: no %s trailer (truncated?)", what, VLA_SHARD_END);
    if (st == VLA_OK && vla_shard_crc(t, 4 * (uint64_t)h->n_sections) != vla_shard_get32(t + 4 * h->n_sections))
        st = vla_error(VLA_ERR_FORMAT, "%s: trailer CRC mismatch (corrupt)", what);
    /* the bytes between header, sections and trailer are zeros: no byte of a shard goes unchecked */
    uint64_t from = 16 + (uint64_t)hlen;
    for (int i = 0; st == VLA_OK && i <= h->n_sections; i++) {
        uint64_t to = i < h->n_sections ? h->sec[i].offset : (uint64_t)(t - data);
        for (uint64_t b = from; b < to && st == VLA_OK; b++)
            if (data[b]) st = vla_error(VLA_ERR_FORMAT, "%s: byte %llu between sections is not zero (corrupt)", what, (unsigned long long)b);
        if (i < h->n_sections) from = h->sec[i].offset + h->sec[i].bytes;
    }
    for (int i = 0; st == VLA_OK && i < h->n_sections; i++) {
        h->sec[i].crc = vla_shard_get32(t + 4 * i);
        if (verify_data && vla_shard_crc(data + h->sec[i].offset, h->sec[i].bytes) != h->sec[i].crc)
            st = vla_error(VLA_ERR_FORMAT, "%s: section '%s' fails its CRC (corrupt)", what, h->sec[i].name);
    }
    if (st != VLA_OK) vla_shard_header_free(h);
    return st;
}

/* ---- the set ------------------------------------------------------------------- */

typedef struct {
    char *path;
    vla_mapped_file map;
    vla_shard_header h;
    int *section;     /* [ds->n_features] section of each numeric feature and camera (-1: none), found once at open */
    int index_section[5]; /* of vla_shard_index_sections */
} shard;

typedef struct {
    int64_t episode_index, shard, row0, length; /* row0: the episode's first row inside its shard */
} ep_loc;

struct vla_shard_set {
    int64_t n_shards;
    shard *shards;
    int64_t n_locs;
    ep_loc *locs;   /* sorted by episode_index */
    ep_loc *by_pos; /* [ds->n_episodes] after the selection (load_rows) */
    int *cam_h, *cam_w;
};

bool vla_shards_is_set(const char *root) {
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", root, VLA_SHARDS_MANIFEST);
    return vla_path_exists(p) != 0;
}

void vla_shards_free(vla_shard_set *s) {
    if (!s) return;
    for (int64_t i = 0; s->shards && i < s->n_shards; i++) { /* shards is NULL when its allocation failed */
        free(s->shards[i].path);
        vla_unmap_file(&s->shards[i].map);
        vla_shard_header_free(&s->shards[i].h);
        free(s->shards[i].section);
    }
    free(s->shards);
    free(s->locs);
    free(s->by_pos);
    free(s->cam_h);
    free(s->cam_w);
    free(s);
}

int64_t vla_shards_count(const vla_shard_set *s) { return s ? s->n_shards : 0; }

static int cmp_loc(const void *a, const void *b) {
    int64_t x = ((const ep_loc *)a)->episode_index, y = ((const ep_loc *)b)->episode_index;
    return (x > y) - (x < y);
}

static const ep_loc *find_loc(const vla_shard_set *s, int64_t episode_index) {
    ep_loc key = {episode_index, 0, 0, 0};
    return s->n_locs ? bsearch(&key, s->locs, (size_t)s->n_locs, sizeof key, cmp_loc) : NULL;
}

static int find_section(const vla_shard_header *h, const char *name) {
    for (int i = 0; i < h->n_sections; i++)
        if (!strcmp(h->sec[i].name, name)) return i;
    return -1;
}

/* One shard of the manifest: mapped, checked against the manifest entry and the dataset's features. */
static vla_status open_shard(vla_lerobot *ds, vla_shard_set *set, const json_t *entry, int64_t k, const char *mpath,
                             bool verify_data) {
    char where[2600];
    snprintf(where, sizeof where, "%s: shards[%lld]", mpath, (long long)k);
    const char *file;
    int64_t bytes, hcrc;
    if (!json_is_object(entry)) return vla_error(VLA_ERR_FORMAT, "%s: not an object", where);
    VLA_TRY(vla_json_get_string(where, entry, "file", &file));
    VLA_TRY(vla_json_get_int(where, entry, "bytes", &bytes));
    VLA_TRY(vla_json_get_int(where, entry, "header_crc32", &hcrc));
    char want[64];
    vla_shard_file_name(k, want, sizeof want);
    if (strcmp(file, want)) return vla_error(VLA_ERR_FORMAT, "%s: file '%s', expected '%s'", where, file, want);
    shard *sh = &set->shards[k];
    size_t pl = strlen(ds->root) + strlen(file) + 2;
    if (!(sh->path = malloc(pl))) return vla_error(VLA_ERR_NOMEM, "out of memory");
    snprintf(sh->path, pl, "%s/%s", ds->root, file);
    if (!vla_path_exists(sh->path))
        return vla_error(VLA_ERR_NOT_FOUND, "%s: shard is missing (listed in %s); rerun `vla data prepare` to rewrite it",
                         sh->path, VLA_SHARDS_MANIFEST);
    VLA_TRY(vla_map_file(sh->path, &sh->map));
    if ((int64_t)sh->map.size != bytes)
        return vla_error(VLA_ERR_FORMAT, "%s: %zu bytes, the manifest says %lld (truncated or replaced); rerun `vla data prepare`",
                         sh->path, sh->map.size, (long long)bytes);
    VLA_TRY(vla_shard_parse(sh->path, sh->map.data, sh->map.size, verify_data, &sh->h));
    if (sh->h.shard != k || (int64_t)sh->h.header_crc != hcrc)
        return vla_error(VLA_ERR_FORMAT, "%s: its header is not the one the manifest lists (shard %lld)", sh->path, (long long)k);
    /* every numeric feature and camera of the dataset, at one size per camera over the set */
    if (!(sh->section = malloc(((size_t)ds->n_features + 1) * sizeof *sh->section))) return vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int i = 0; i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        int s = sh->section[i] = vla_lr_is_row_feature(f) || f->camera >= 0 ? find_section(&sh->h, f->key) : -1;
        if (vla_lr_is_row_feature(f) && (s < 0 || sh->h.sec[s].kind != VLA_SHARD_F32 || sh->h.sec[s].width != f->width))
            return vla_error(VLA_ERR_FORMAT, "%s: no f32 section '%s' of width %lld (meta/info.json's feature)", sh->path, f->key,
                             (long long)f->width);
    }
    for (int c = 0; c < 5; c++) {
        int s = sh->index_section[c] = find_section(&sh->h, vla_shard_index_sections[c]);
        if (s < 0 || sh->h.sec[s].width != 1 || sh->h.sec[s].kind != (c == 0 ? VLA_SHARD_F32 : VLA_SHARD_I64))
            return vla_error(VLA_ERR_FORMAT, "%s: no section '%s'", sh->path, vla_shard_index_sections[c]);
    }
    for (int c = 0; c < ds->n_cameras; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        int s = sh->section[ds->camera_feature[c]];
        if (s < 0 || sh->h.sec[s].kind != VLA_SHARD_RGB8)
            return vla_error(VLA_ERR_FORMAT, "%s: no frames of camera '%s'", sh->path, f->key);
        if (k > 0 && (sh->h.sec[s].height != set->cam_h[c] || sh->h.sec[s].width_px != set->cam_w[c]))
            return vla_error(VLA_ERR_FORMAT, "%s: camera '%s' is stored at %dx%d, shard 0 at %dx%d", sh->path, f->key,
                             sh->h.sec[s].width_px, sh->h.sec[s].height, set->cam_w[c], set->cam_h[c]);
        set->cam_h[c] = sh->h.sec[s].height, set->cam_w[c] = sh->h.sec[s].width_px;
    }
    return VLA_OK;
}

vla_status vla_shards_attach(vla_lerobot *ds, const int64_t *want, int64_t n_want, bool verify_data, int64_t **episodes,
                             int64_t *n_episodes) {
    *episodes = NULL, *n_episodes = 0;
    char mpath[2048];
    snprintf(mpath, sizeof mpath, "%s/%s", ds->root, VLA_SHARDS_MANIFEST);
    json_t *m, *shards, *eps;
    VLA_TRY(vla_json_load_file(mpath, &m));
    const char *format;
    int64_t version;
    vla_status st = vla_json_get_string(mpath, m, "format", &format);
    if (st == VLA_OK) st = vla_json_get_int(mpath, m, "version", &version);
    if (st == VLA_OK && (strcmp(format, "vla-shards") || version != 1))
        st = vla_error(VLA_ERR_UNSUPPORTED, "%s: format '%s' version %lld (this build reads vla-shards 1)", mpath, format, (long long)version);
    if (st == VLA_OK) st = vla_json_get_array(mpath, m, "shards", &shards);
    if (st == VLA_OK) st = vla_json_get_array(mpath, m, "episodes", &eps);
    if (st == VLA_OK && (json_array_size(shards) == 0 || json_array_size(shards) > 100000))
        st = vla_error(VLA_ERR_FORMAT, "%s: lists %zu shards", mpath, json_array_size(shards));
    vla_shard_set *set = NULL;
    if (st == VLA_OK && !(set = calloc(1, sizeof *set))) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    if (st == VLA_OK) {
        ds->shards = set;
        set->n_shards = (int64_t)json_array_size(shards);
        set->shards = calloc((size_t)set->n_shards, sizeof *set->shards);
        set->cam_h = calloc((size_t)ds->n_cameras + 1, sizeof *set->cam_h);
        set->cam_w = calloc((size_t)ds->n_cameras + 1, sizeof *set->cam_w);
        if (!set->shards || !set->cam_h || !set->cam_w) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; st == VLA_OK && k < set->n_shards; k++) st = open_shard(ds, set, json_array_get(shards, (size_t)k), k, mpath, verify_data);
    /* where each episode lives */
    for (int64_t k = 0; st == VLA_OK && k < set->n_shards; k++) set->n_locs += set->shards[k].h.n_episodes;
    if (st == VLA_OK && !(set->locs = malloc((size_t)(set->n_locs + 1) * sizeof *set->locs))) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int64_t k = 0, n = 0; st == VLA_OK && k < set->n_shards; k++)
        for (int64_t e = 0, row0 = 0; e < set->shards[k].h.n_episodes; row0 += set->shards[k].h.episodes[2 * e + 1], e++)
            set->locs[n++] = (ep_loc){set->shards[k].h.episodes[2 * e], k, row0, set->shards[k].h.episodes[2 * e + 1]};
    if (st == VLA_OK && set->n_locs > 1) qsort(set->locs, (size_t)set->n_locs, sizeof *set->locs, cmp_loc);
    for (int64_t i = 1; st == VLA_OK && i < set->n_locs; i++)
        if (set->locs[i].episode_index == set->locs[i - 1].episode_index)
            st = vla_error(VLA_ERR_FORMAT, "%s: episode %lld is in two shards", ds->root, (long long)set->locs[i].episode_index);
    if (st == VLA_OK && (int64_t)json_array_size(eps) != set->n_locs)
        st = vla_error(VLA_ERR_FORMAT, "%s: lists %zu episodes, the shards hold %lld", mpath, json_array_size(eps), (long long)set->n_locs);
    /* the selection: the manifest's episodes, or the wanted subset of them */
    int64_t n = want ? n_want : set ? set->n_locs : 0;
    int64_t *sel = st == VLA_OK ? malloc((size_t)(n + 1) * sizeof *sel) : NULL;
    if (st == VLA_OK && !sel) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == VLA_OK && i < n; i++) {
        sel[i] = want ? want[i] : set->locs[i].episode_index;
        if (want && !find_loc(set, want[i]))
            st = vla_error(VLA_ERR_NOT_FOUND, "%s: --dataset.episodes: episode %lld was not prepared into these shards", ds->root,
                           (long long)want[i]);
    }
    /* stored frame sizes are this set's cameras' sizes (what "native" means for it) */
    for (int c = 0; st == VLA_OK && c < ds->n_cameras; c++) {
        vla_lr_feature *f = &ds->features[ds->camera_feature[c]];
        f->height = set->cam_h[c], f->width_px = set->cam_w[c];
        if (f->ndim == 3) f->shape[0] = f->height, f->shape[1] = f->width_px;
        f->width = (int64_t)f->height * f->width_px * 3;
    }
    json_decref(m);
    if (st != VLA_OK) {
        free(sel);
        return st; /* set (if any) is ds->shards: freed by vla_lerobot_close */
    }
    *episodes = sel, *n_episodes = n;
    return VLA_OK;
}

/* The start of rows [row0, …) of section `sec` of a shard (`size` bytes per value). */
static const uint8_t *rows_at(const shard *sh, int sec, int64_t row0, int64_t width, int size) {
    return sh->map.data + sh->h.sec[sec].offset + (size_t)(row0 * width) * (size_t)size;
}

vla_status vla_shards_load_rows(vla_lerobot *ds) {
    vla_shard_set *set = ds->shards;
    int64_t n_rows = ds->n_episodes ? ds->episodes[ds->n_episodes - 1].to : 0;
    VLA_TRY(vla_lr_alloc_rows(ds, n_rows));
    free(set->by_pos);
    if (!(set->by_pos = malloc((size_t)(ds->n_episodes + 1) * sizeof *set->by_pos))) return vla_error(VLA_ERR_NOMEM, "out of memory");
    for (int64_t e = 0; e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        const ep_loc *loc = find_loc(set, ep->episode_index);
        if (!loc) return vla_error(VLA_ERR_INTERNAL, "%s: episode %lld has no shard", ds->root, (long long)ep->episode_index);
        const shard *sh = &set->shards[loc->shard];
        int64_t len = loc->length;
        if (len != ep->length)
            return vla_error(VLA_ERR_FORMAT, "%s: episode %lld has %lld rows, meta/ says %lld", sh->path, (long long)ep->episode_index,
                             (long long)len, (long long)ep->length);
        set->by_pos[e] = *loc;
        for (int i = 0; i < ds->n_features; i++) {
            vla_lr_feature *f = &ds->features[i];
            if (f->values)
                memcpy(f->values + ep->from * f->width, rows_at(sh, sh->section[i], loc->row0, f->width, 4), (size_t)(len * f->width) * 4);
        }
        memcpy(ds->timestamp + ep->from, rows_at(sh, sh->index_section[0], loc->row0, 1, 4), (size_t)len * 4);
        int64_t *dst[] = {ds->frame_index, ds->episode_index, ds->index, ds->task_index};
        for (int c = 0; c < 4; c++) memcpy(dst[c] + ep->from, rows_at(sh, sh->index_section[c + 1], loc->row0, 1, 8), (size_t)len * 8);
    }
    ds->n_rows = n_rows;
    return VLA_OK;
}

vla_status vla_shards_frame(const vla_lerobot *ds, int camera, int64_t row, int out_w, int out_h, uint8_t *rgb) {
    const vla_shard_set *set = ds->shards;
    if (camera < 0 || camera >= ds->n_cameras || row < 0 || row >= ds->n_rows || !set->by_pos)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: camera %d row %lld out of range", ds->root, camera, (long long)row);
    int w = set->cam_w[camera], h = set->cam_h[camera];
    if ((out_w && out_w != w) || (out_h && out_h != h))
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s: camera '%s' is stored at %dx%d but %dx%d was asked for; prepare the shards again with "
                         "--image_size=%d,%d (the policy's size)",
                         ds->root, ds->features[ds->camera_feature[camera]].key, w, h, out_w, out_h, out_h, out_w);
    int64_t e = ds->row_episode[row];
    const ep_loc *loc = &set->by_pos[e];
    const shard *sh = &set->shards[loc->shard];
    int64_t fb = (int64_t)w * h * 3;
    memcpy(rgb, rows_at(sh, sh->section[ds->camera_feature[camera]], loc->row0 + row - ds->episodes[e].from, fb, 1), (size_t)fb);
    return VLA_OK;
}
