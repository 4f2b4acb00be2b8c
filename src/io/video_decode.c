/* video_decode.c — frames by timestamp from video files through FFmpeg
 * (libavformat demuxing, libavcodec decoding with dav1d for AV1, swscale to
 * RGB24 with the ffmpeg CLI's default settings), with forward decoding,
 * keyframe-aware seeking, a small frame cache and a parallel batch call. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ffmpeg_api.h"

#include "base/log.h"
#include "io/video.h"

/* Extra frames worth decoding forward to avoid a seek. A seek (mov index
 * lookup + decoder flush) costs far less than decoding one frame: on the
 * 640×480 AV1 g=2 bench clip, slack 3 gave 352 frames per CPU-second (2.24
 * decodes per returned frame) and slack 0 gave 483 (1.50, the minimum), so
 * decode forward only when it needs no more frames than seeking would. */
#define VLA_VIDEO_FORWARD_SLACK 0.0

/* Containers we open: mp4/mov (LeRobot), Matroska/WebM, AVI, MPEG-TS, FLV and
 * raw AV1/H.264/HEVC streams. */
#define VLA_VIDEO_DEMUXERS "mov,matroska,webm,avi,mpegts,flv,ivf,obu,h264,hevc"

typedef struct {
    AVFrame *frame; /* NULL when the slot is empty */
    double t;
} cache_slot;

struct vla_video_decoder {
    char *path;
    AVFormatContext *fmt;
    AVCodecContext *cc;
    AVStream *st;
    int si;
    double tb; /* stream time base in seconds */
    AVPacket *pkt;
    AVFrame *frame;
    vla_video_info info;

    double *key_t; /* keyframe times (seconds), ascending */
    int n_key;

    /* Decoder position: the time of the last frame it produced. */
    int have_pos;
    double last_t;
    int sent_eof; /* NULL packet sent: the decoder is draining */
    int at_eof;   /* the decoder has returned every frame */

    cache_slot *cache;
    int cache_cap, cache_next;

    struct SwsContext *sws;
    int sws_src_w, sws_src_h, sws_src_fmt, sws_cs, sws_range, sws_dst_w, sws_dst_h;

    vla_video_stats stats;
};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/* FFmpeg's default level (info) prints stream details on every open and the
 * mp4 muxer's "Starting second pass: moving the moov atom" on every close;
 * keep its errors only (what failed is reported again in vla's own
 * message), unless the application chose a level itself or vla logs at
 * debug (VLA_LOG=debug: FFmpeg's info lines too). */
static void quiet_ffmpeg_log(void) {
    if (av_log_get_level() == AV_LOG_INFO && vla_log_get_level() > VLA_LOG_DEBUG) av_log_set_level(AV_LOG_ERROR);
}

void vla_video_quiet_ffmpeg(void) { pthread_once(&log_once, quiet_ffmpeg_log); }

static double frame_time(const vla_video_decoder *d, const AVFrame *f) {
    int64_t pts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
    if (pts == AV_NOPTS_VALUE) pts = 0;
    return (double)pts * d->tb;
}

static void cache_clear(vla_video_decoder *d) {
    for (int i = 0; i < d->cache_cap; i++) av_frame_free(&d->cache[i].frame);
    d->cache_next = 0;
}

/* Keep a reference to the decoder's latest frame; the oldest slot is reused. */
static vla_status cache_put(vla_video_decoder *d, const AVFrame *f, double t) {
    cache_slot *s = &d->cache[d->cache_next];
    d->cache_next = (d->cache_next + 1) % d->cache_cap;
    if (!s->frame) {
        s->frame = av_frame_alloc();
        if (!s->frame) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for a frame", d->path);
    } else {
        av_frame_unref(s->frame);
    }
    if (av_frame_ref(s->frame, f) < 0) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for a frame", d->path);
    s->t = t;
    return VLA_OK;
}

static const cache_slot *cache_find(const vla_video_decoder *d, double t, double tol) {
    const cache_slot *best = NULL;
    double best_dt = 0;
    for (int i = 0; i < d->cache_cap; i++) {
        const cache_slot *s = &d->cache[i];
        if (!s->frame) continue;
        double dt = fabs(s->t - t);
        if (dt <= tol && (!best || dt < best_dt)) {
            best = s;
            best_dt = dt;
        }
    }
    return best;
}

void vla_video_decoder_close(vla_video_decoder *d) {
    if (!d) return;
    if (d->cache) {
        cache_clear(d);
        free(d->cache);
    }
    sws_freeContext(d->sws);
    av_frame_free(&d->frame);
    av_packet_free(&d->pkt);
    avcodec_free_context(&d->cc);
    avformat_close_input(&d->fmt);
    free(d->key_t);
    free(d->path);
    free(d);
}

static void copy_name(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "unknown");
}

static vla_status load_key_index(vla_video_decoder *d) {
    int n = avformat_index_get_entries_count(d->st);
    if (n <= 0) return VLA_OK;
    d->key_t = malloc(sizeof(double) * (size_t)n);
    if (!d->key_t) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for the keyframe index", d->path);
    for (int i = 0; i < n; i++) {
        const AVIndexEntry *e = avformat_index_get_entry(d->st, i);
        if (e && (e->flags & AVINDEX_KEYFRAME)) {
            double t = (double)e->timestamp * d->tb;
            if (d->n_key == 0 || t > d->key_t[d->n_key - 1]) d->key_t[d->n_key++] = t;
        }
    }
    return VLA_OK;
}

vla_status vla_video_decoder_open(const char *path, const vla_video_decoder_opts *opts, vla_video_decoder **out) {
    *out = NULL;
    VLA_TRY(vla_ffmpeg_require()); /* FFmpeg missing: what to install, not an exit (base/dynlib.h) */
    vla_video_quiet_ffmpeg();
    vla_video_decoder *d = calloc(1, sizeof(*d));
    if (!d) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    d->path = strdup(path);
    if (!d->path) {
        free(d);
        return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    }
    vla_status st = VLA_OK;
    /* Video files only, read from local files only: playlist-like demuxers
     * (hls, concat, …) would otherwise open whatever paths a crafted file
     * names. */
    AVDictionary *oo = NULL;
    av_dict_set(&oo, "protocol_whitelist", "file", 0);
    av_dict_set(&oo, "format_whitelist", VLA_VIDEO_DEMUXERS, 0);
    int r = avformat_open_input(&d->fmt, path, NULL, &oo);
    av_dict_free(&oo);
    if (r < 0) {
        if (r == AVERROR(ENOENT)) st = vla_error(VLA_ERR_NOT_FOUND, "%s: no such file", path);
        else st = vla_error(VLA_ERR_FORMAT, "%s: cannot open as a video file: %s", path, av_err2str(r));
        goto fail;
    }
    r = avformat_find_stream_info(d->fmt, NULL);
    if (r < 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: cannot read stream info: %s", path, av_err2str(r));
        goto fail;
    }
    d->si = av_find_best_stream(d->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (d->si < 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: no video stream", path);
        goto fail;
    }
    d->st = d->fmt->streams[d->si];
    for (unsigned i = 0; i < d->fmt->nb_streams; i++)
        if ((int)i != d->si) d->fmt->streams[i]->discard = AVDISCARD_ALL;
    d->tb = av_q2d(d->st->time_base);
    const AVCodecParameters *par = d->st->codecpar;
    /* FFmpeg's own AV1 decoder needs a hardware accelerator; prefer dav1d. */
    const AVCodec *codec = NULL;
    if (par->codec_id == AV_CODEC_ID_AV1) codec = avcodec_find_decoder_by_name("libdav1d");
    if (!codec) codec = avcodec_find_decoder(par->codec_id);
    if (!codec) {
        st = vla_error(VLA_ERR_UNSUPPORTED, "%s: no decoder for codec %s", path, avcodec_get_name(par->codec_id));
        goto fail;
    }
    d->cc = avcodec_alloc_context3(codec);
    if (!d->cc) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory for the decoder", path);
        goto fail;
    }
    r = avcodec_parameters_to_context(d->cc, par);
    if (r < 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: bad codec parameters: %s", path, av_err2str(r));
        goto fail;
    }
    d->cc->pkt_timebase = d->st->time_base;
    d->cc->thread_count = opts && opts->threads > 0 ? opts->threads : 1;
    if (opts && opts->strict) d->cc->err_recognition |= AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER;
    r = avcodec_open2(d->cc, codec, NULL);
    if (r < 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: cannot open the %s decoder: %s", path, codec->name, av_err2str(r));
        goto fail;
    }
    if (par->width <= 0 || par->height <= 0) {
        st = vla_error(VLA_ERR_FORMAT, "%s: video stream has no size", path);
        goto fail;
    }
    d->pkt = av_packet_alloc();
    d->frame = av_frame_alloc();
    int want = opts ? opts->cache_frames : 0;
    d->cache_cap = want == 0 ? 8 : want < 0 ? 1 : want;
    d->cache = calloc((size_t)d->cache_cap, sizeof(cache_slot));
    if (!d->pkt || !d->frame || !d->cache) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }

    vla_video_info *in = &d->info;
    copy_name(in->codec, sizeof in->codec, avcodec_get_name(par->codec_id));
    copy_name(in->decoder, sizeof in->decoder, codec->name);
    copy_name(in->pix_fmt, sizeof in->pix_fmt, av_get_pix_fmt_name((enum AVPixelFormat)par->format));
    in->width = par->width;
    in->height = par->height;
    AVRational fr = d->st->avg_frame_rate.num > 0 ? d->st->avg_frame_rate : d->st->r_frame_rate;
    in->fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 0;
    if (d->st->duration != AV_NOPTS_VALUE && d->st->duration > 0) in->duration = (double)d->st->duration * d->tb;
    else if (d->fmt->duration != AV_NOPTS_VALUE && d->fmt->duration > 0)
        in->duration = (double)d->fmt->duration / AV_TIME_BASE;
    in->frame_count = d->st->nb_frames > 0 ? d->st->nb_frames : (int64_t)llround(in->duration * in->fps);
    st = load_key_index(d);
    if (st != VLA_OK) goto fail;
    *out = d;
    return VLA_OK;
fail:
    vla_video_decoder_close(d);
    return st;
}

const vla_video_info *vla_video_decoder_info(const vla_video_decoder *d) { return &d->info; }

vla_video_stats vla_video_decoder_stats(const vla_video_decoder *d) { return d->stats; }

/* Next frame in presentation order into d->frame. Returns VLA_OK, or
 * VLA_ERR_NOT_FOUND at the end of the stream (no message), or an error. */
static vla_status decode_next(vla_video_decoder *d) {
    if (d->at_eof) return VLA_ERR_NOT_FOUND;
    for (;;) {
        int r = avcodec_receive_frame(d->cc, d->frame);
        if (r == 0) {
            d->stats.decoded++;
            return VLA_OK;
        }
        if (r == AVERROR_EOF) {
            d->at_eof = 1;
            return VLA_ERR_NOT_FOUND;
        }
        if (r != AVERROR(EAGAIN))
            return vla_error(VLA_ERR_FORMAT, "%s: decoding failed: %s", d->path, av_err2str(r));
        if (d->sent_eof) { /* draining decoder asked for input: treat as the end */
            d->at_eof = 1;
            return VLA_ERR_NOT_FOUND;
        }
        for (;;) {
            r = av_read_frame(d->fmt, d->pkt);
            if (r == AVERROR_EOF || (r < 0 && avio_feof(d->fmt->pb))) {
                avcodec_send_packet(d->cc, NULL);
                d->sent_eof = 1;
                break;
            }
            if (r < 0) return vla_error(VLA_ERR_FORMAT, "%s: reading packets failed: %s", d->path, av_err2str(r));
            if (d->pkt->stream_index != d->si) {
                av_packet_unref(d->pkt);
                continue;
            }
            r = avcodec_send_packet(d->cc, d->pkt);
            av_packet_unref(d->pkt);
            /* A damaged packet: the decoder reports it; skip it like the CLI does
             * and let the tolerance check decide whether the frame is there. */
            if (r < 0 && r != AVERROR(EAGAIN) && r != AVERROR_INVALIDDATA)
                return vla_error(VLA_ERR_FORMAT, "%s: decoding failed: %s", d->path, av_err2str(r));
            break;
        }
    }
}

/* ---- whole-file scan (validate --frames=all) ---- */

typedef struct {
    vla_video_error_fn fn;
    void *user;
    int max;
    int64_t n;
} scan_report;

static void report(scan_report *r, double t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(scan_report *r, double t, const char *fmt, ...) {
    if (r->n++ >= r->max || !r->fn) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->fn(r->user, t, msg);
}

static double pkt_time(const vla_video_decoder *d, const AVPacket *p) {
    int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
    return ts == AV_NOPTS_VALUE ? NAN : (double)ts * d->tb;
}

/* Frames out of the decoder until it wants input (or ends). */
static int scan_receive(vla_video_decoder *d, scan_report *rep, int64_t *frames,
                        void (*progress)(void *, int64_t), void *user) {
    for (;;) {
        int r = avcodec_receive_frame(d->cc, d->frame);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return r;
        if (r < 0) {
            report(rep, d->have_pos ? d->last_t : NAN, "decoding failed: %s", av_err2str(r));
            return r;
        }
        double t = frame_time(d, d->frame);
        d->have_pos = 1, d->last_t = t;
        if (d->frame->decode_error_flags || (d->frame->flags & AV_FRAME_FLAG_CORRUPT))
            report(rep, t, "frame decoded with errors (concealed by the decoder; flags 0x%x)",
                   d->frame->decode_error_flags);
        (*frames)++;
        if (progress && *frames % 64 == 0) progress(user, *frames);
        av_frame_unref(d->frame);
    }
}

vla_status vla_video_scan(const char *path, int max_errors, vla_video_error_fn on_error, void *user,
                          void (*progress)(void *user, int64_t frames), int64_t *frames, int64_t *errors) {
    *frames = 0;
    *errors = 0;
    VLA_TRY(vla_ffmpeg_require());
    vla_video_decoder_opts o = {.threads = 1, .cache_frames = -1, .strict = 1};
    vla_video_decoder *d;
    VLA_TRY(vla_video_decoder_open(path, &o, &d));
    scan_report rep = {on_error, user, max_errors, 0};
    int read_errors = 0;
    for (;;) {
        int r = av_read_frame(d->fmt, d->pkt);
        if (r == AVERROR_EOF || (r < 0 && avio_feof(d->fmt->pb))) break;
        if (r < 0) { /* the demuxer lost sync: say so, and stop after a few in a row */
            report(&rep, d->have_pos ? d->last_t : NAN, "reading packets failed: %s", av_err2str(r));
            if (++read_errors > 16) break;
            continue;
        }
        read_errors = 0;
        if (d->pkt->stream_index != d->si) {
            av_packet_unref(d->pkt);
            continue;
        }
        double t = pkt_time(d, d->pkt);
        if (d->pkt->flags & AV_PKT_FLAG_CORRUPT) report(&rep, t, "packet flagged corrupt by the demuxer");
        r = avcodec_send_packet(d->cc, d->pkt);
        av_packet_unref(d->pkt);
        if (r < 0 && r != AVERROR(EAGAIN)) report(&rep, t, "Invalid packet: %s", av_err2str(r));
        scan_receive(d, &rep, frames, progress, user);
    }
    avcodec_send_packet(d->cc, NULL);
    scan_receive(d, &rep, frames, progress, user);
    if (d->st->nb_frames > 0 && *frames < d->st->nb_frames)
        report(&rep, NAN, "%lld of the container's %lld frames decoded", (long long)*frames, (long long)d->st->nb_frames);
    *errors = rep.n;
    vla_video_decoder_close(d);
    return VLA_OK;
}

/* Seek so that the next decoded frame is at or before t (the keyframe
 * before t). ts_s is where to aim; the caller retries earlier on overshoot. */
static vla_status seek_to(vla_video_decoder *d, double ts_s) {
    /* The start is the first indexed packet (its dts is negative when the
     * stream has B-frames), else the stream's start time. */
    int64_t start = d->st->start_time != AV_NOPTS_VALUE ? d->st->start_time : 0;
    if (avformat_index_get_entries_count(d->st) > 0) {
        const AVIndexEntry *e = avformat_index_get_entry(d->st, 0);
        if (e && e->timestamp < start) start = e->timestamp;
    }
    int64_t ts = (int64_t)floor(ts_s / d->tb);
    if (ts_s <= 0 || ts < start) ts = start;
    int r = av_seek_frame(d->fmt, d->si, ts, AVSEEK_FLAG_BACKWARD);
    if (r < 0 && ts != start) r = av_seek_frame(d->fmt, d->si, start, AVSEEK_FLAG_BACKWARD);
    if (r < 0) {
        d->have_pos = 0; /* the demuxer's position is unknown now */
        return vla_error(VLA_ERR_FORMAT, "%s: seek to t=%.4f failed: %s", d->path, ts_s, av_err2str(r));
    }
    avcodec_flush_buffers(d->cc);
    d->have_pos = 0;
    d->sent_eof = 0;
    d->at_eof = 0;
    d->stats.seeks++;
    return VLA_OK;
}

/* Time of the keyframe at or before t, or -INFINITY when unknown. */
static double key_before(const vla_video_decoder *d, double t) {
    int lo = 0, hi = d->n_key; /* first index with key_t > t */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (d->key_t[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? d->key_t[lo - 1] : -INFINITY;
}

static int forward_is_cheaper(const vla_video_decoder *d, double t, double tol) {
    if (!d->have_pos || d->at_eof || t <= d->last_t) return 0;
    double fps = d->info.fps > 0 ? d->info.fps : 30.0;
    if (d->n_key == 0) return t - d->last_t <= 1.0;
    double k = key_before(d, t + tol);
    if (k <= d->last_t + tol) return 1; /* same GOP: a seek would land behind us */
    double frames_forward = (t - d->last_t) * fps;
    double frames_after_seek = (t - k) * fps + 1.0;
    /* 0.01: timestamps are doubles; k/fps differences are not exact integers of frames. */
    return frames_forward <= frames_after_seek + VLA_VIDEO_FORWARD_SLACK + 0.01;
}

static vla_status no_frame(const vla_video_decoder *d, double t, double tol, double nearest) {
    if (isnan(nearest))
        return vla_error(VLA_ERR_NOT_FOUND, "%s: no frame within %g s of t=%.4f (no frames decoded)", d->path, tol, t);
    return vla_error(VLA_ERR_NOT_FOUND, "%s: no frame within %g s of t=%.4f (nearest %.4f)", d->path, tol, t, nearest);
}

/* Decode forward from the current position until a frame within tol of t
 * (left in d->frame) or past it. */
static vla_status decode_until(vla_video_decoder *d, double t, double tol, double *found_t) {
    double prev = d->have_pos ? d->last_t : NAN;
    for (;;) {
        vla_status st = decode_next(d);
        if (st == VLA_ERR_NOT_FOUND) return no_frame(d, t, tol, prev);
        if (st != VLA_OK) return st;
        double ft = frame_time(d, d->frame);
        d->have_pos = 1;
        d->last_t = ft;
        VLA_TRY(cache_put(d, d->frame, ft));
        if (fabs(ft - t) <= tol) {
            *found_t = ft;
            return VLA_OK;
        }
        if (ft > t + tol) {
            double nearest = isnan(prev) || fabs(ft - t) < fabs(prev - t) ? ft : prev;
            return no_frame(d, t, tol, nearest);
        }
        prev = ft;
    }
}

static vla_status seek_and_decode(vla_video_decoder *d, double t, double tol, double *found_t) {
    /* Aim at t, then further back whenever the first frame after the seek is
     * already past t (index in decode order, B-frames, sparse keyframes). */
    double back = 0.0;
    for (int attempt = 0;; attempt++) {
        double aim = t - back;
        VLA_TRY(seek_to(d, aim < 0 ? 0 : aim));
        vla_status st = decode_next(d);
        if (st == VLA_ERR_NOT_FOUND) {
            if (aim <= 0) return no_frame(d, t, tol, NAN);
            back = back == 0 ? 1.0 : back * 4;
            continue;
        }
        if (st != VLA_OK) return st;
        double ft = frame_time(d, d->frame);
        d->have_pos = 1;
        d->last_t = ft;
        VLA_TRY(cache_put(d, d->frame, ft));
        if (fabs(ft - t) <= tol) {
            *found_t = ft;
            return VLA_OK;
        }
        if (ft > t + tol) {
            if (aim <= 0) return no_frame(d, t, tol, ft); /* t precedes the first frame */
            back = back == 0 ? 1.0 : back * 4;
            continue;
        }
        return decode_until(d, t, tol, found_t);
    }
}

static vla_status convert(vla_video_decoder *d, const AVFrame *f, int ow, int oh, uint8_t *rgb) {
    int cs = f->colorspace, range = f->color_range;
    if (!d->sws || d->sws_src_w != f->width || d->sws_src_h != f->height || d->sws_src_fmt != f->format ||
        d->sws_cs != cs || d->sws_range != range || d->sws_dst_w != ow || d->sws_dst_h != oh) {
        sws_freeContext(d->sws);
        /* The ffmpeg CLI's default: bicubic (its sws_flags default). */
        d->sws = sws_getContext(f->width, f->height, (enum AVPixelFormat)f->format, ow, oh, AV_PIX_FMT_RGB24,
                                SWS_BICUBIC, NULL, NULL, NULL);
        if (!d->sws)
            return vla_error(VLA_ERR_UNSUPPORTED, "%s: cannot convert %s %dx%d to rgb24 %dx%d", d->path,
                             av_get_pix_fmt_name((enum AVPixelFormat)f->format), f->width, f->height, ow, oh);
        /* As the CLI's scale filter (in_color_matrix=auto): the frame's own
         * matrix (BT.601 when unspecified) and range. */
        int *inv, *tab, src_full, dst_full, bri, con, sat;
        if (sws_getColorspaceDetails(d->sws, &inv, &src_full, &tab, &dst_full, &bri, &con, &sat) >= 0) {
            int c = cs;
            if (c < 1 || c > 10 || c == 8) c = AVCOL_SPC_BT470BG;
            const int *coef = sws_getCoefficients(c);
            if (range != AVCOL_RANGE_UNSPECIFIED) src_full = range == AVCOL_RANGE_JPEG;
            sws_setColorspaceDetails(d->sws, coef, src_full, coef, dst_full, bri, con, sat);
        }
        d->sws_src_w = f->width;
        d->sws_src_h = f->height;
        d->sws_src_fmt = f->format;
        d->sws_cs = cs;
        d->sws_range = range;
        d->sws_dst_w = ow;
        d->sws_dst_h = oh;
    }
    uint8_t *dst[4] = {rgb, NULL, NULL, NULL};
    int dst_stride[4] = {ow * 3, 0, 0, 0};
    int h = sws_scale(d->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, dst_stride);
    if (h != oh) return vla_error(VLA_ERR_INTERNAL, "%s: swscale produced %d rows, expected %d", d->path, h, oh);
    return VLA_OK;
}

vla_status vla_video_decoder_read(vla_video_decoder *d, double t, double tol, int out_w, int out_h, uint8_t *rgb,
                                  double *frame_t) {
    if (!rgb) return vla_error(VLA_ERR_INVALID_ARG, "%s: NULL output buffer", d->path);
    if (!isfinite(t)) return vla_error(VLA_ERR_INVALID_ARG, "%s: timestamp is not finite", d->path);
    if (!(tol >= 0)) return vla_error(VLA_ERR_INVALID_ARG, "%s: tolerance must be >= 0", d->path);
    if (out_w < 0 || out_h < 0 || (out_w == 0) != (out_h == 0))
        return vla_error(VLA_ERR_INVALID_ARG, "%s: bad output size %dx%d", d->path, out_w, out_h);
    int ow = out_w ? out_w : d->info.width, oh = out_h ? out_h : d->info.height;

    const cache_slot *hit = cache_find(d, t, tol);
    const AVFrame *f;
    double ft = 0;
    if (hit) {
        d->stats.cache_hits++;
        f = hit->frame;
        ft = hit->t;
    } else {
        vla_status st = forward_is_cheaper(d, t, tol) ? decode_until(d, t, tol, &ft) : seek_and_decode(d, t, tol, &ft);
        if (st != VLA_OK) return st;
        f = d->frame;
    }
    VLA_TRY(convert(d, f, ow, oh, rgb));
    d->stats.returned++;
    if (frame_t) *frame_t = ft;
    return VLA_OK;
}

/* ---- batch: one thread per decoder ------------------------------------- */

typedef struct {
    double t;
    int i;
} ts_index;

static int cmp_ts(const void *a, const void *b) {
    double x = ((const ts_index *)a)->t, y = ((const ts_index *)b)->t;
    return x < y ? -1 : x > y ? 1 : 0;
}

static void *run_request(void *arg) {
    vla_video_request *q = arg;
    q->status = VLA_OK;
    q->error[0] = 0;
    const vla_video_info *in = vla_video_decoder_info(q->dec);
    size_t frame_bytes = (size_t)(q->out_w ? q->out_w : in->width) * (size_t)(q->out_h ? q->out_h : in->height) * 3;
    ts_index *order = malloc(sizeof(ts_index) * (size_t)(q->n > 0 ? q->n : 1));
    if (!order) {
        q->status = vla_error(VLA_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < q->n; i++) order[i] = (ts_index){q->ts[i], i};
        /* Ascending order turns a delta window into forward decoding. */
        qsort(order, (size_t)q->n, sizeof *order, cmp_ts);
        for (int k = 0; k < q->n && q->status == VLA_OK; k++) {
            int i = order[k].i;
            q->status = vla_video_decoder_read(q->dec, q->ts[i], q->tol, q->out_w, q->out_h,
                                               q->rgb + frame_bytes * (size_t)i, NULL);
        }
        free(order);
    }
    if (q->status != VLA_OK) snprintf(q->error, sizeof q->error, "%s", vla_error_message());
    return NULL;
}

vla_status vla_video_read_batch(vla_video_request *reqs, int n) {
    if (n <= 0) return VLA_OK;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (reqs[i].dec == reqs[j].dec)
                return vla_error(VLA_ERR_INVALID_ARG, "video batch: requests %d and %d share a decoder", j, i);
    pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
    int *started = calloc((size_t)n, sizeof(int));
    if (!th || !started) {
        free(th);
        free(started);
        return vla_error(VLA_ERR_NOMEM, "video batch: out of memory");
    }
    /* The caller's thread takes the first request itself. */
    for (int i = 1; i < n; i++) started[i] = pthread_create(&th[i], NULL, run_request, &reqs[i]) == 0;
    run_request(&reqs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else run_request(&reqs[i]);
    }
    free(th);
    free(started);
    for (int i = 0; i < n; i++)
        if (reqs[i].status != VLA_OK) return vla_error(reqs[i].status, "%s", reqs[i].error);
    return VLA_OK;
}
