/* lerobot_frames.c — camera frames by row: video files through kept-open
 * decoders (an LRU of them per reader), or PNG bytes embedded in the data
 * parquet for `image` features. Format: huggingface/lerobot
 * src/lerobot/datasets/ (see lerobot.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ffmpeg_api.h"

#include "base/fsutil.h"
#include "data/lerobot_internal.h"
#include "data/shards.h"
#include "io/parquet.h"
#include "io/video.h"

#define READER_SLOTS 8

typedef struct {
    char *path;
    vla_video_decoder *dec;
    uint64_t used;
} dec_slot;

struct vla_lr_reader {
    const vla_lerobot *ds;
    dec_slot slots[READER_SLOTS];
    uint64_t clock;
    /* image features: the last parquet file and row group decoded */
    vla_parquet_file *pq;
    char *pq_path;
    int pq_col, pq_rg;
    int64_t pq_rg_first;
    vla_parquet_column pq_chunk;
    int pq_have;
    AVCodecContext *png;
    AVFrame *frame;
    AVPacket *pkt;
};

vla_status vla_lr_reader_open(const vla_lerobot *ds, vla_lr_reader **out) {
    vla_lr_reader *r = calloc(1, sizeof *r);
    if (!r) return vla_error(VLA_ERR_NOMEM, "out of memory");
    r->ds = ds;
    *out = r;
    return VLA_OK;
}

void vla_lr_reader_close(vla_lr_reader *r) {
    if (!r) return;
    for (int i = 0; i < READER_SLOTS; i++) {
        free(r->slots[i].path);
        vla_video_decoder_close(r->slots[i].dec);
    }
    if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
    vla_parquet_close(r->pq);
    free(r->pq_path);
    avcodec_free_context(&r->png);
    av_frame_free(&r->frame);
    av_packet_free(&r->pkt);
    free(r);
}

void vla_lr_reader_counters(const vla_lr_reader *r, int64_t *seeks, int64_t *decoded, int64_t *cache_hits, int64_t *returned,
                            int *open_decoders) {
    int64_t a = 0, b = 0, c = 0, d = 0;
    int n = 0;
    for (int i = 0; i < READER_SLOTS; i++)
        if (r->slots[i].dec) {
            vla_video_stats s = vla_video_decoder_stats(r->slots[i].dec);
            a += s.seeks, b += s.decoded, c += s.cache_hits, d += s.returned;
            n++;
        }
    if (seeks) *seeks = a;
    if (decoded) *decoded = b;
    if (cache_hits) *cache_hits = c;
    if (returned) *returned = d;
    if (open_decoders) *open_decoders = n;
}

/* The decoder of a file, opened once and kept (LRU of READER_SLOTS). */
static vla_status get_decoder(vla_lr_reader *r, const char *path, vla_video_decoder **out) {
    int victim = 0;
    for (int i = 0; i < READER_SLOTS; i++) {
        if (r->slots[i].path && !strcmp(r->slots[i].path, path)) {
            r->slots[i].used = ++r->clock;
            *out = r->slots[i].dec;
            return VLA_OK;
        }
        if (r->slots[i].used < r->slots[victim].used) victim = i;
    }
    if (!vla_path_exists(path)) return vla_error(VLA_ERR_NOT_FOUND, "%s: video file is missing", path);
    vla_video_decoder *d;
    VLA_TRY(vla_video_decoder_open(path, NULL, &d));
    char *copy = vla_lr_strdup(path);
    if (!copy) {
        vla_video_decoder_close(d);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    }
    dec_slot *s = &r->slots[victim];
    free(s->path);
    vla_video_decoder_close(s->dec);
    s->path = copy;
    s->dec = d;
    s->used = ++r->clock;
    *out = d;
    return VLA_OK;
}

static vla_status check_row(const vla_lerobot *ds, int64_t row) {
    if (row < 0 || row >= ds->n_rows)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: row %lld out of range [0, %lld)", ds->root, (long long)row, (long long)ds->n_rows);
    return VLA_OK;
}

/* PNG bytes → RGB24 at ow×oh through FFmpeg's PNG decoder and swscale. */
static vla_status decode_png(vla_lr_reader *r, const uint8_t *data, size_t n, int ow, int oh, uint8_t *rgb, const char *what) {
    if (!r->png) {
        const AVCodec *c = avcodec_find_decoder(AV_CODEC_ID_PNG);
        if (!c) return vla_error(VLA_ERR_UNSUPPORTED, "FFmpeg has no PNG decoder");
        r->png = avcodec_alloc_context3(c);
        r->frame = av_frame_alloc();
        r->pkt = av_packet_alloc();
        if (!r->png || !r->frame || !r->pkt || avcodec_open2(r->png, c, NULL) < 0) return vla_error(VLA_ERR_INTERNAL, "cannot open the PNG decoder");
    }
    avcodec_flush_buffers(r->png);
    av_packet_unref(r->pkt);
    if (av_new_packet(r->pkt, (int)n) < 0) return vla_error(VLA_ERR_NOMEM, "out of memory");
    memcpy(r->pkt->data, data, n);
    /* FFmpeg's PNG decoder treats a packet without the key flag as a
     * P-frame and adds the previous picture to it (PNG-in-MOV); every
     * embedded PNG is a whole image. */
    r->pkt->flags |= AV_PKT_FLAG_KEY;
    if (avcodec_send_packet(r->png, r->pkt) < 0 || avcodec_receive_frame(r->png, r->frame) < 0)
        return vla_error(VLA_ERR_FORMAT, "%s: PNG does not decode", what);
    int w = r->frame->width, h = r->frame->height;
    if (!ow) ow = w;
    if (!oh) oh = h;
    struct SwsContext *sws = sws_getContext(w, h, r->frame->format, ow, oh, AV_PIX_FMT_RGB24, SWS_BICUBIC, NULL, NULL, NULL);
    if (!sws) {
        av_frame_unref(r->frame);
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: PNG pixel format not convertible", what);
    }
    uint8_t *dst[4] = {rgb};
    int ls[4] = {ow * 3};
    sws_scale(sws, (const uint8_t *const *)r->frame->data, r->frame->linesize, 0, h, dst, ls);
    sws_freeContext(sws);
    av_frame_unref(r->frame);
    return VLA_OK;
}

static vla_status image_frame(vla_lr_reader *r, const vla_lr_feature *f, int64_t row, int ow, int oh, uint8_t *rgb) {
    const vla_lerobot *ds = r->ds;
    int64_t ep = ds->row_episode[row];
    char path[2048];
    VLA_TRY(vla_lerobot_data_file(ds, ep, path, sizeof path));
    int64_t frow = ds->episodes[ep].file_row + (row - ds->episodes[ep].from);
    if (!r->pq_path || strcmp(r->pq_path, path)) {
        if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
        r->pq_have = 0;
        vla_parquet_close(r->pq);
        r->pq = NULL;
        free(r->pq_path);
        r->pq_path = NULL;
        VLA_TRY(vla_parquet_open(path, &r->pq));
        r->pq_path = vla_lr_strdup(path);
        r->pq_rg = -1;
    }
    char cname[600];
    snprintf(cname, sizeof cname, "%s.bytes", f->key);
    int c = vla_parquet_find_column(r->pq, cname);
    if (c < 0) c = vla_parquet_find_column(r->pq, f->key);
    if (c < 0) return vla_error(VLA_ERR_NOT_FOUND, "%s: image column '%s.bytes' is missing", path, f->key);
    int64_t first = 0;
    int rg = 0;
    for (; rg < vla_parquet_num_row_groups(r->pq); rg++) {
        int64_t n = vla_parquet_row_group_rows(r->pq, rg);
        if (frow < first + n) break;
        first += n;
    }
    if (rg >= vla_parquet_num_row_groups(r->pq)) return vla_error(VLA_ERR_FORMAT, "%s: row %lld is beyond the file", path, (long long)frow);
    if (!r->pq_have || r->pq_rg != rg || r->pq_col != c) {
        if (r->pq_have) vla_parquet_column_free(&r->pq_chunk);
        r->pq_have = 0;
        memset(&r->pq_chunk, 0, sizeof r->pq_chunk);
        vla_status st = vla_parquet_read_column(r->pq, rg, c, &r->pq_chunk);
        if (st != VLA_OK) {
            vla_parquet_column_free(&r->pq_chunk);
            return st;
        }
        r->pq_have = 1;
        r->pq_rg = rg;
        r->pq_col = c;
        r->pq_rg_first = first;
    }
    const vla_parquet_column *col = &r->pq_chunk;
    int64_t s = frow - r->pq_rg_first;
    if (col->type != VLA_PQ_BYTE_ARRAY || col->max_rep || s >= col->num_values || !col->valid[s])
        return vla_error(VLA_ERR_FORMAT, "%s: image '%s' row %lld has no PNG bytes", path, f->key, (long long)frow);
    char what[2200];
    snprintf(what, sizeof what, "%s: image '%s' row %lld", path, f->key, (long long)frow);
    return decode_png(r, col->data + col->offsets[s], (size_t)(col->offsets[s + 1] - col->offsets[s]), ow ? ow : f->width_px,
                      oh ? oh : f->height, rgb, what);
}

vla_status vla_lr_reader_frames(vla_lr_reader *r, int camera, const int64_t *rows, int n, int out_w, int out_h, double tol_s,
                                uint8_t *rgb) {
    uint8_t *p[1] = {rgb};
    return vla_lr_reader_sample(r, &camera, 1, rows, n, out_w, out_h, tol_s, p);
}

vla_status vla_lr_reader_frame(vla_lr_reader *r, int camera, int64_t row, int out_w, int out_h, double tol_s, uint8_t *rgb) {
    return vla_lr_reader_frames(r, camera, &row, 1, out_w, out_h, tol_s, rgb);
}

#define MAX_CAMS 16
#define MAX_WINDOW 256

vla_status vla_lr_reader_sample(vla_lr_reader *r, const int *cams, int n_cams, const int64_t *rows, int n, int out_w, int out_h,
                                double tol_s, uint8_t *const *rgb) {
    const vla_lerobot *ds = r->ds;
    if (tol_s <= 0) tol_s = VLA_VIDEO_DEFAULT_TOLERANCE_S;
    /* all decoders of one call must fit the cache at once */
    if (n_cams > READER_SLOTS || n > MAX_WINDOW || n_cams < 0 || n < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "at most %d cameras and %d frames per call", READER_SLOTS, MAX_WINDOW);
    for (int i = 0; i < n; i++) VLA_TRY(check_row(ds, rows[i]));
    vla_video_request reqs[MAX_CAMS];
    double ts[MAX_CAMS][MAX_WINDOW];
    int nreq = 0;
    for (int j = 0; j < n_cams; j++) {
        int cam = cams[j];
        if (cam < 0 || cam >= ds->n_cameras) return vla_error(VLA_ERR_INVALID_ARG, "%s: camera %d out of range", ds->root, cam);
        const vla_lr_feature *f = &ds->features[ds->camera_feature[cam]];
        int ow = out_w ? out_w : f->width_px, oh = out_h ? out_h : f->height;
        if (ds->shards) { /* decoded once by `vla data prepare`: the stored bytes */
            for (int i = 0; i < n; i++) VLA_TRY(vla_shards_frame(ds, cam, rows[i], ow, oh, rgb[j] + (size_t)i * ow * oh * 3));
            continue;
        }
        if (f->dtype == VLA_LR_IMAGE) {
            for (int i = 0; i < n; i++) VLA_TRY(image_frame(r, f, rows[i], ow, oh, rgb[j] + (size_t)i * ow * oh * 3));
            continue;
        }
        if (n == 0) continue;
        int64_t ep = ds->row_episode[rows[0]];
        for (int i = 1; i < n; i++)
            if (ds->row_episode[rows[i]] != ep)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: rows of one frame request must lie in one episode", ds->root);
        char path[2048];
        VLA_TRY(vla_lerobot_video_file(ds, cam, ep, path, sizeof path));
        vla_video_decoder *dec = NULL;
        vla_status st = get_decoder(r, path, &dec);
        if (st != VLA_OK)
            return vla_error_context(st, "camera '%s', index %lld (episode %lld)", f->key, (long long)ds->index[rows[0]],
                                     (long long)ds->episodes[ep].episode_index);
        for (int k = 0; k < nreq; k++)
            if (reqs[k].dec == dec) return vla_error(VLA_ERR_INVALID_ARG, "camera %d requested twice", cam);
        for (int i = 0; i < n; i++) ts[nreq][i] = ds->episodes[ep].video[cam].from_ts + (double)ds->timestamp[rows[i]];
        vla_video_request *q = &reqs[nreq++];
        memset(q, 0, sizeof *q);
        q->dec = dec;
        q->ts = ts[nreq - 1];
        q->n = n;
        q->tol = tol_s;
        q->out_w = ow;
        q->out_h = oh;
        q->rgb = rgb[j];
    }
    if (nreq == 1) {
        /* no thread for a single camera */
        vla_video_request *q = &reqs[0];
        int order[MAX_WINDOW];
        for (int i = 0; i < n; i++) order[i] = i;
        for (int i = 1; i < n; i++)
            for (int k = i; k > 0 && q->ts[order[k - 1]] > q->ts[order[k]]; k--) {
                int t = order[k];
                order[k] = order[k - 1];
                order[k - 1] = t;
            }
        for (int i = 0; i < n; i++)
            VLA_TRY(vla_video_decoder_read(q->dec, q->ts[order[i]], q->tol, q->out_w, q->out_h,
                                           q->rgb + (size_t)order[i] * q->out_w * q->out_h * 3, NULL));
        return VLA_OK;
    }
    if (nreq > 1) return vla_video_read_batch(reqs, nreq);
    return VLA_OK;
}
