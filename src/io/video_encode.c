/* video_encode.c — write RGB24 frames as a video file through FFmpeg with
 * LeRobot's defaults (libsvtav1, yuv420p, g=2, crf=30, preset 12), falling
 * back to libx264; or build one by copying compressed packets of other
 * files (remux, no re-encoding); the file appears atomically on close. */
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ffmpeg_api.h"

#include "base/fsutil.h"
#include "base/log.h"
#include "io/video.h"

/* libsvtav1 refuses sources smaller than this in either dimension. */
#define SVTAV1_MIN_SIZE 64
/* LeRobot's LIBSVTAV1_DEFAULT_PRESET. */
#define SVTAV1_PRESET 12

struct vla_video_writer {
    char *path, *tmp;
    AVFormatContext *oc;
    AVCodecContext *cc;
    AVStream *st;
    struct SwsContext *sws;
    AVFrame *frame;
    AVPacket *pkt;
    int width, height, fps;
    int64_t nframes;
    int64_t packet_bytes; /* encoded bytes handed to the muxer so far */
    int io_open;
    int flushed; /* the encoder has been sent end-of-stream */
    char codec[32];
};

static void writer_free(vla_video_writer *w) {
    if (!w) return;
    /* libsvtav1 (1.4, FFmpeg 5.1) deadlocks in deinit unless it has seen
     * end-of-stream, and deadlocks on end-of-stream if it never got a frame;
     * so when discarding, feed it one blank frame if needed and drain it. */
    if (w->cc && !w->flushed && w->pkt) {
        w->flushed = 1;
        AVFrame *blank = NULL;
        if (w->nframes == 0 && (blank = av_frame_alloc())) {
            blank->format = AV_PIX_FMT_YUV420P;
            blank->width = w->width;
            blank->height = w->height;
            blank->pts = 0;
            if (av_frame_get_buffer(blank, 0) < 0 || avcodec_send_frame(w->cc, blank) < 0) av_frame_free(&blank);
        }
        if ((w->nframes > 0 || blank) && avcodec_send_frame(w->cc, NULL) >= 0)
            while (avcodec_receive_packet(w->cc, w->pkt) >= 0) av_packet_unref(w->pkt);
        av_frame_free(&blank);
    }
    if (w->oc) {
        if (w->io_open) avio_closep(&w->oc->pb);
        avformat_free_context(w->oc);
    }
    avcodec_free_context(&w->cc);
    sws_freeContext(w->sws);
    av_frame_free(&w->frame);
    av_packet_free(&w->pkt);
    free(w->path);
    free(w->tmp);
    free(w);
}

void vla_video_writer_abort(vla_video_writer *w) {
    if (!w) return;
    if (w->oc && w->io_open) {
        avio_closep(&w->oc->pb);
        w->io_open = 0;
    }
    if (w->tmp) unlink(w->tmp);
    writer_free(w);
}

const char *vla_video_writer_codec(const vla_video_writer *w) { return w->codec; }

double vla_video_writer_time(const vla_video_writer *w) { return (double)w->nframes / (double)w->fps; }
int64_t vla_video_writer_bytes(const vla_video_writer *w) { return w->packet_bytes; }

/* Open the encoder `name`; returns VLA_ERR_UNSUPPORTED (no message needed by
 * the caller for a fallback) when it is absent or refuses the settings. */
static vla_status open_encoder(vla_video_writer *w, const char *name, int crf, int gop) {
    /* SVT-AV1 prints a banner of Svt[info] lines per encoder to stderr; keep
     * its errors only, unless the user set SVT_LOG (or asked for debug logs). */
    if (!strcmp(name, "libsvtav1") && vla_log_get_level() > VLA_LOG_DEBUG) setenv("SVT_LOG", "1", 0);
    const AVCodec *codec = avcodec_find_encoder_by_name(name);
    if (!codec) return vla_error(VLA_ERR_UNSUPPORTED, "%s: encoder %s is not available in this FFmpeg", w->path, name);
    AVCodecContext *cc = avcodec_alloc_context3(codec);
    if (!cc) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for the encoder", w->path);
    cc->width = w->width;
    cc->height = w->height;
    cc->pix_fmt = AV_PIX_FMT_YUV420P;
    cc->time_base = (AVRational){1, w->fps};
    cc->framerate = (AVRational){w->fps, 1};
    cc->gop_size = gop;
    if (w->oc->oformat->flags & AVFMT_GLOBALHEADER) cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    char crf_s[16];
    snprintf(crf_s, sizeof crf_s, "%d", crf);
    av_opt_set(cc->priv_data, "crf", crf_s, 0);
    if (!strcmp(name, "libsvtav1")) av_opt_set_int(cc->priv_data, "preset", SVTAV1_PRESET, 0);
    int r = avcodec_open2(cc, codec, NULL);
    if (r < 0) {
        avcodec_free_context(&cc);
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: cannot open encoder %s for %dx%d at %d fps: %s", w->path, name,
                         w->width, w->height, w->fps, av_err2str(r));
    }
    w->cc = cc;
    snprintf(w->codec, sizeof w->codec, "%s", name);
    return VLA_OK;
}

/* A writer with its temp file's name and the muxer the target's extension
 * names (.mp4 → mp4); the temp file is the url so that faststart's second
 * pass reads it back. On failure *out is NULL. */
static vla_status writer_start(const char *path, int fps, vla_video_writer **out) {
    *out = NULL;
    vla_video_quiet_ffmpeg(); /* no "[mp4 @ 0x…] Starting second pass" on every close */
    vla_video_writer *w = calloc(1, sizeof(*w));
    if (!w) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    w->fps = fps;
    w->path = strdup(path);
    static int counter;
    int n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    size_t tl = strlen(path) + 48;
    w->tmp = malloc(tl);
    w->pkt = av_packet_alloc();
    vla_status st = VLA_OK;
    if (!w->path || !w->tmp || !w->pkt) st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    if (st == VLA_OK) snprintf(w->tmp, tl, "%s.tmp-%d-%d", path, (int)getpid(), n);
    const AVOutputFormat *of = st == VLA_OK ? av_guess_format(NULL, path, NULL) : NULL;
    if (st == VLA_OK && !of) st = vla_error(VLA_ERR_INVALID_ARG, "%s: no container format for this file extension", path);
    if (st == VLA_OK) {
        int r = avformat_alloc_output_context2(&w->oc, of, NULL, w->tmp);
        if (r < 0 || !w->oc) st = vla_error(VLA_ERR_NOMEM, "%s: cannot create the muxer: %s", path, av_err2str(r));
    }
    if (st != VLA_OK) {
        vla_video_writer_abort(w);
        return st;
    }
    *out = w;
    return VLA_OK;
}

/* Create the temp file and write the container header (mp4: faststart). */
static vla_status writer_header(vla_video_writer *w) {
    int r = avio_open(&w->oc->pb, w->tmp, AVIO_FLAG_WRITE);
    if (r < 0) return vla_error(VLA_ERR_IO, "%s: cannot create: %s", w->tmp, av_err2str(r));
    w->io_open = 1;
    AVDictionary *mux_opts = NULL;
    if (!strcmp(w->oc->oformat->name, "mp4") || !strcmp(w->oc->oformat->name, "mov"))
        av_dict_set(&mux_opts, "movflags", "+faststart", 0);
    r = avformat_write_header(w->oc, &mux_opts);
    av_dict_free(&mux_opts);
    if (r < 0) return vla_error(VLA_ERR_IO, "%s: cannot write the header: %s", w->path, av_err2str(r));
    return VLA_OK;
}

vla_status vla_video_writer_open(const char *path, const vla_video_writer_opts *opts, vla_video_writer **out) {
    *out = NULL;
    VLA_TRY(vla_ffmpeg_require()); /* FFmpeg missing: what to install, not an exit (base/dynlib.h) */
    if (!opts || opts->width <= 0 || opts->height <= 0 || opts->fps <= 0)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: video size and fps must be positive", path);
    if ((opts->width | opts->height) & 1)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: yuv420p video needs even width and height, got %dx%d", path,
                         opts->width, opts->height);
    if (opts->width > 16384 || opts->height > 16384)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: video size %dx%d is too large", path, opts->width, opts->height);
    int crf = opts->crf < 0 ? 30 : opts->crf;
    int gop = opts->gop < 0 ? 2 : opts->gop;
    if (gop == 0) gop = 1;

    vla_video_writer *w;
    VLA_TRY(writer_start(path, opts->fps, &w));
    w->width = opts->width;
    w->height = opts->height;
    vla_status st = VLA_OK;
    const char *want = opts->codec ? opts->codec : "libsvtav1";
    int svt = !strcmp(want, "libsvtav1");
    if (svt && (w->width < SVTAV1_MIN_SIZE || w->height < SVTAV1_MIN_SIZE)) {
        VLA_INFO("%s: %dx%d is below libsvtav1's %d-pixel minimum; encoding with libx264", path, w->width, w->height,
                 SVTAV1_MIN_SIZE);
        st = open_encoder(w, "libx264", crf, gop);
    } else {
        st = open_encoder(w, want, crf, gop);
        if (st == VLA_ERR_UNSUPPORTED && svt) {
            VLA_WARN("%s; falling back to libx264", vla_error_message());
            st = open_encoder(w, "libx264", crf, gop);
        }
    }
    if (st != VLA_OK) goto fail;

    w->st = avformat_new_stream(w->oc, NULL);
    w->frame = av_frame_alloc();
    if (!w->st || !w->frame) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    w->st->time_base = w->cc->time_base;
    w->st->avg_frame_rate = w->cc->framerate;
    int r = avcodec_parameters_from_context(w->st->codecpar, w->cc);
    if (r < 0) {
        st = vla_error(VLA_ERR_INTERNAL, "%s: codec parameters: %s", path, av_err2str(r));
        goto fail;
    }
    w->frame->format = AV_PIX_FMT_YUV420P;
    w->frame->width = w->width;
    w->frame->height = w->height;
    if (av_frame_get_buffer(w->frame, 0) < 0) {
        st = vla_error(VLA_ERR_NOMEM, "%s: out of memory for a frame", path);
        goto fail;
    }
    /* rgb24 → yuv420p as the ffmpeg CLI does by default (bicubic, BT.601,
     * limited range). */
    w->sws = sws_getContext(w->width, w->height, AV_PIX_FMT_RGB24, w->width, w->height, AV_PIX_FMT_YUV420P,
                            SWS_BICUBIC, NULL, NULL, NULL);
    if (!w->sws) {
        st = vla_error(VLA_ERR_INTERNAL, "%s: cannot create the rgb24 → yuv420p converter", path);
        goto fail;
    }
    if ((st = writer_header(w)) != VLA_OK) goto fail;
    *out = w;
    return VLA_OK;
fail:
    vla_video_writer_abort(w);
    return st;
}

/* ---- copying compressed packets (remux) ---------------------------------------- */

/* The source's video stream, opened for reading packets. */
static vla_status open_source(const char *source, AVFormatContext **ic, int *stream) {
    *ic = NULL;
    int r = avformat_open_input(ic, source, NULL, NULL);
    if (r < 0) return vla_error(VLA_ERR_IO, "%s: cannot open: %s", source, av_err2str(r));
    r = avformat_find_stream_info(*ic, NULL);
    if (r >= 0) r = av_find_best_stream(*ic, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (r < 0) {
        avformat_close_input(ic);
        return vla_error(VLA_ERR_FORMAT, "%s: no video stream: %s", source, av_err2str(r));
    }
    *stream = r;
    if ((*ic)->streams[r]->codecpar->video_delay > 0) {
        avformat_close_input(ic);
        return vla_error(VLA_ERR_UNSUPPORTED, "%s: the stream reorders frames (B-frames); its packets cannot be cut by episode",
                         source);
    }
    return VLA_OK;
}

vla_status vla_video_writer_open_copy(const char *path, const char *source, int fps, vla_video_writer **out) {
    *out = NULL;
    VLA_TRY(vla_ffmpeg_require());
    if (fps <= 0) return vla_error(VLA_ERR_INVALID_ARG, "%s: fps must be positive", path);
    AVFormatContext *ic;
    int si;
    VLA_TRY(open_source(source, &ic, &si));
    vla_video_writer *w;
    vla_status st = writer_start(path, fps, &w);
    if (st == VLA_OK) {
        const AVCodecParameters *par = ic->streams[si]->codecpar;
        w->width = par->width, w->height = par->height;
        snprintf(w->codec, sizeof w->codec, "%s", avcodec_get_name(par->codec_id));
        w->st = avformat_new_stream(w->oc, NULL);
        if (!w->st || avcodec_parameters_copy(w->st->codecpar, par) < 0) st = vla_error(VLA_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st == VLA_OK) {
        w->st->codecpar->codec_tag = 0; /* let the mp4 muxer pick its own tag */
        w->st->time_base = (AVRational){1, fps};
        w->st->avg_frame_rate = (AVRational){fps, 1};
        st = writer_header(w);
    }
    avformat_close_input(&ic);
    if (st != VLA_OK) {
        vla_video_writer_abort(w);
        return st;
    }
    *out = w;
    return VLA_OK;
}

static bool same_stream(const AVCodecParameters *a, const AVCodecParameters *b) {
    return a->codec_id == b->codec_id && a->width == b->width && a->height == b->height && a->format == b->format &&
           a->extradata_size == b->extradata_size && (!a->extradata_size || !memcmp(a->extradata, b->extradata, (size_t)a->extradata_size));
}

vla_status vla_video_writer_copy(vla_video_writer *w, const char *source, double from_s, double to_s, int64_t *frames) {
    *frames = 0;
    if (!w->st || w->cc) return vla_error(VLA_ERR_INVALID_ARG, "%s: not a writer opened for copying", w->path);
    AVFormatContext *ic;
    int si;
    VLA_TRY(open_source(source, &ic, &si));
    AVStream *in = ic->streams[si];
    vla_status st = same_stream(in->codecpar, w->st->codecpar)
                        ? VLA_OK
                        : vla_error(VLA_ERR_UNSUPPORTED, "%s: its stream (codec, size or header) differs from %s's", source, w->path);
    double half = 0.5 / w->fps;
    if (st == VLA_OK) {
        int64_t ts = (int64_t)floor((from_s - half) / av_q2d(in->time_base));
        if (av_seek_frame(ic, si, ts > 0 ? ts : 0, AVSEEK_FLAG_BACKWARD) < 0 && from_s > half)
            st = vla_error(VLA_ERR_IO, "%s: cannot seek to %.4f s", source, from_s);
    }
    int64_t n = 0;
    while (st == VLA_OK) {
        int r = av_read_frame(ic, w->pkt);
        if (r == AVERROR_EOF) break;
        if (r < 0) {
            st = vla_error(VLA_ERR_IO, "%s: reading a packet failed: %s", source, av_err2str(r));
            break;
        }
        if (w->pkt->stream_index != si || w->pkt->pts == AV_NOPTS_VALUE) {
            av_packet_unref(w->pkt);
            continue;
        }
        double t = (double)w->pkt->pts * av_q2d(in->time_base);
        if (t < from_s - half) {
            av_packet_unref(w->pkt);
            continue;
        }
        if (t >= to_s - half) {
            av_packet_unref(w->pkt);
            break;
        }
        if (n == 0 && !(w->pkt->flags & AV_PKT_FLAG_KEY))
            st = vla_error(VLA_ERR_UNSUPPORTED, "%s: the range starting at %.4f s does not start on a keyframe", source, from_s);
        else if (fabs(t - (from_s + (double)n / w->fps)) > half)
            st = vla_error(VLA_ERR_UNSUPPORTED, "%s: packet at %.4f s is not frame %lld at %d fps (variable frame rate)", source, t,
                           (long long)n, w->fps);
        if (st != VLA_OK) {
            av_packet_unref(w->pkt);
            break;
        }
        /* one frame per packet, at the output's frame count */
        int64_t pts = av_rescale_q(w->nframes, (AVRational){1, w->fps}, w->st->time_base);
        w->pkt->pts = w->pkt->dts = pts;
        w->pkt->duration = av_rescale_q(1, (AVRational){1, w->fps}, w->st->time_base);
        w->pkt->stream_index = w->st->index;
        w->pkt->pos = -1;
        w->packet_bytes += w->pkt->size;
        r = av_interleaved_write_frame(w->oc, w->pkt);
        av_packet_unref(w->pkt);
        if (r < 0) st = vla_error(VLA_ERR_IO, "%s: writing a packet failed: %s", w->tmp, av_err2str(r));
        w->nframes++;
        n++;
    }
    avformat_close_input(&ic);
    *frames = n;
    return st;
}

/* Hand the encoder a frame (NULL: flush) and mux every packet it returns. */
static vla_status encode(vla_video_writer *w, const AVFrame *f) {
    if (!f) w->flushed = 1;
    int r = avcodec_send_frame(w->cc, f);
    if (r < 0) return vla_error(VLA_ERR_INTERNAL, "%s: %s encoder refused a frame: %s", w->path, w->codec, av_err2str(r));
    for (;;) {
        r = avcodec_receive_packet(w->cc, w->pkt);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return VLA_OK;
        if (r < 0) return vla_error(VLA_ERR_INTERNAL, "%s: %s encoding failed: %s", w->path, w->codec, av_err2str(r));
        av_packet_rescale_ts(w->pkt, w->cc->time_base, w->st->time_base);
        w->pkt->stream_index = w->st->index;
        w->packet_bytes += w->pkt->size;
        r = av_interleaved_write_frame(w->oc, w->pkt);
        av_packet_unref(w->pkt);
        if (r < 0) return vla_error(VLA_ERR_IO, "%s: writing a packet failed: %s", w->tmp, av_err2str(r));
    }
}

vla_status vla_video_writer_add_rgb(vla_video_writer *w, const uint8_t *rgb, int stride_bytes) {
    if (!rgb) return vla_error(VLA_ERR_INVALID_ARG, "%s: NULL frame", w->path);
    if (stride_bytes == 0) stride_bytes = w->width * 3;
    if (stride_bytes < w->width * 3)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: stride %d is less than width*3 = %d", w->path, stride_bytes,
                         w->width * 3);
    /* The encoder may still reference the previous frame's buffers. */
    if (av_frame_make_writable(w->frame) < 0) return vla_error(VLA_ERR_NOMEM, "%s: out of memory for a frame", w->path);
    const uint8_t *src[4] = {rgb, NULL, NULL, NULL};
    int src_stride[4] = {stride_bytes, 0, 0, 0};
    sws_scale(w->sws, src, src_stride, 0, w->height, w->frame->data, w->frame->linesize);
    w->frame->pts = w->nframes; /* time base 1/fps: frame k at exactly k/fps */
    VLA_TRY(encode(w, w->frame));
    w->nframes++;
    return VLA_OK;
}

static vla_status fsync_path(const char *p) {
    int fd = open(p, O_RDONLY);
    if (fd < 0) return vla_error(VLA_ERR_IO, "%s: cannot reopen to fsync", p);
    int r = fsync(fd);
    close(fd);
    if (r != 0) return vla_error(VLA_ERR_IO, "%s: fsync failed", p);
    return VLA_OK;
}

vla_status vla_video_writer_close(vla_video_writer *w) {
    if (!w) return VLA_OK;
    if (w->nframes == 0) {
        vla_status st = vla_error(VLA_ERR_INVALID_ARG, "%s: no frames written; nothing to close", w->path);
        vla_video_writer_abort(w);
        return st;
    }
    vla_status st = w->cc ? encode(w, NULL) : VLA_OK; /* a copying writer has no encoder to drain */
    if (st == VLA_OK) {
        int r = av_write_trailer(w->oc);
        if (r < 0) st = vla_error(VLA_ERR_IO, "%s: cannot write the trailer: %s", w->tmp, av_err2str(r));
    }
    if (st == VLA_OK) {
        int r = avio_closep(&w->oc->pb);
        w->io_open = 0;
        if (r < 0) st = vla_error(VLA_ERR_IO, "%s: close failed: %s", w->tmp, av_err2str(r));
    }
    if (st == VLA_OK) st = fsync_path(w->tmp);
    if (st == VLA_OK && rename(w->tmp, w->path) != 0)
        st = vla_error(VLA_ERR_IO, "%s: cannot rename %s into place", w->path, w->tmp);
    if (st == VLA_OK) {
        char *dir_copy = strdup(w->path);
        if (dir_copy) {
            st = vla_fsync_dir(dirname(dir_copy));
            free(dir_copy);
        }
        writer_free(w);
        return st;
    }
    vla_video_writer_abort(w);
    return st;
}
