/* video.h — video files through FFmpeg: a frame-accurate decoder that looks
 * frames up by timestamp (LeRobot's rule: the decoded frame must lie within
 * tolerance_s of the requested time) and returns RGB24, and an encoder with
 * LeRobot's defaults (libsvtav1, yuv420p, g=2, crf=30) whose episodes can be
 * concatenated in one file and addressed by from/to timestamps.
 *
 * Decoding. One vla_video_decoder per file stays open. A request for time t
 * first looks in a small cache of recently decoded frames, then decodes
 * forward when t is ahead of the decoder inside the same GOP (or only a few
 * frames ahead), and seeks to the keyframe before t only when t is behind
 * the decoder or far ahead. RGB conversion uses the same swscale settings as
 * the ffmpeg CLI's default yuv→rgb24 conversion (bicubic, the frame's own
 * colour matrix and range), so frames equal `ffmpeg -i f -pix_fmt rgb24`
 * byte for byte. A decoder is not thread-safe; vla_video_read_batch() runs
 * several decoders (cameras) in parallel, one thread each.
 *
 * Encoding. The writer writes to a temp file next to the target, and close
 * flushes, writes the trailer, fsyncs and renames it into place, so the
 * target is either complete or absent. Frame k has pts k/fps exactly.
 * Sizes: yuv420p needs even width and height (odd sizes are rejected with
 * VLA_ERR_INVALID_ARG); libsvtav1 needs at least 64×64 — below that the
 * writer falls back to libx264 (as it does when libsvtav1 is absent). */
#ifndef VLA_IO_VIDEO_H
#define VLA_IO_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* ---- encoder ----------------------------------------------------------- */

typedef struct vla_video_writer vla_video_writer;
typedef struct { int width, height, fps; const char *codec; /* NULL: libsvtav1, else e.g. "libx264" */ int crf; /* -1: default 30 */ int gop; /* -1: default 2 */ } vla_video_writer_opts;
/* FFmpeg logs errors only (its info lines: stream details, the mp4 muxer's
 * "moving the moov atom") unless VLA_LOG=debug; every reader and writer
 * calls it, once per process. */
void vla_video_quiet_ffmpeg(void);
/* What decodes and encodes video in this build, for `vla version`:
 * "libavcodec 59.37.100", or why there is none (FFmpeg not installed, or a
 * VLA_MEDIA=OFF build). Loads FFmpeg (base/dynlib.h) if it can. */
void vla_video_describe(char *buf, size_t size);
vla_status vla_video_writer_open(const char *path, const vla_video_writer_opts *opts, vla_video_writer **out); /* writes to a temp file; renamed into place on close */
vla_status vla_video_writer_add_rgb(vla_video_writer *w, const uint8_t *rgb, int stride_bytes); /* one RGB24 frame */
double vla_video_writer_time(const vla_video_writer *w); /* seconds of video written so far (for from/to timestamps of concatenated episodes) */
int64_t vla_video_writer_bytes(const vla_video_writer *w); /* encoded bytes so far (the encoder may still hold a few frames) */
vla_status vla_video_writer_close(vla_video_writer *w); /* flush, trailer, fsync, atomic rename; frees w */
void vla_video_writer_abort(vla_video_writer *w); /* discard, remove temp; frees w */

/* The encoder the writer actually uses ("libsvtav1", "libx264", …), after
 * fallback; for a copying writer the source's codec ("av1", "h264"). */
const char *vla_video_writer_codec(const vla_video_writer *w);

/* Copy instead of encode (remux): a writer whose stream is `source`'s video
 * stream (codec, size and header copied), to which ranges of compressed
 * packets of that file or of others with the same stream are appended,
 * frame after frame at `fps`, with no decode or re-encode. A stream that
 * reorders frames (B-frames) is refused with VLA_ERR_UNSUPPORTED. */
vla_status vla_video_writer_open_copy(const char *path, const char *source, int fps, vla_video_writer **out);
/* Append the packets of `source` whose times lie in [from_s, to_s) (within
 * half a frame); *frames receives how many. VLA_ERR_UNSUPPORTED (nothing a
 * re-encode could not do) when the range does not start on a keyframe, the
 * stream differs from the writer's, or the frame rate is not constant. */
vla_status vla_video_writer_copy(vla_video_writer *w, const char *source, double from_s, double to_s, int64_t *frames);

/* ---- decoder ----------------------------------------------------------- */

/* LeRobot's default tolerance_s. */
#define VLA_VIDEO_DEFAULT_TOLERANCE_S 1e-4

typedef struct {
    char codec[32];      /* codec name as FFmpeg reports it: "av1", "h264", "hevc" */
    char decoder[32];    /* decoder in use: "libdav1d", "h264", … */
    char pix_fmt[32];    /* "yuv420p", … */
    int width, height;
    double fps;          /* average frame rate (0 if unknown) */
    double duration;     /* seconds (0 if unknown) */
    int64_t frame_count; /* from the container, else duration × fps rounded */
} vla_video_info;

typedef struct {
    int threads;      /* decoder threads per file; 0 → 1 (parallelism comes from cameras/loaders) */
    int cache_frames; /* decoded frames kept for reuse; 0 → 8, -1 → none */
    int strict;       /* ask the decoder to check CRCs and bitstream conformance (vla_video_scan) */
} vla_video_decoder_opts;

typedef struct vla_video_decoder vla_video_decoder;

/* Open a file for decoding. opts may be NULL. */
vla_status vla_video_decoder_open(const char *path, const vla_video_decoder_opts *opts, vla_video_decoder **out);
void vla_video_decoder_close(vla_video_decoder *d);
const vla_video_info *vla_video_decoder_info(const vla_video_decoder *d);

/* The frame nearest to time t (seconds, in the file's timeline), which must
 * lie within tol seconds of t, as packed RGB24 (out_w*3 bytes per row) into
 * rgb. out_w/out_h 0 → native size; otherwise scaled (bicubic, as the ffmpeg
 * CLI's scale filter). frame_t, if not NULL, receives the decoded frame's
 * time. Fails with VLA_ERR_NOT_FOUND "…: no frame within 0.0001 s of
 * t=3.4333 (nearest 3.4000)" when no frame is close enough. */
vla_status vla_video_decoder_read(vla_video_decoder *d, double t, double tol, int out_w, int out_h,
                                  uint8_t *rgb, double *frame_t);

/* Counters since open, for benchmarks and tests. */
typedef struct {
    int64_t seeks, decoded, cache_hits, returned;
} vla_video_stats;
vla_video_stats vla_video_decoder_stats(const vla_video_decoder *d);

/* Decode every frame of a file in order and report, instead of concealing,
 * what is damaged: packets the demuxer or decoder rejects ("Invalid data
 * found when processing input", as the ffmpeg CLI says), frames the decoder
 * flags corrupt or had to conceal, and frames missing against the
 * container's count. Each finding goes to `on_error` with the time (s, in
 * the file's timeline; NAN when unknown) and what happened; reading goes on
 * after one (at most `max_errors` are reported, then counted). Returns
 * VLA_OK when the file could be read through (clean or not) with the frame
 * count and error count in *frames / *errors; an error status when it does
 * not open. `progress` (may be NULL) is called every 64 frames. */
typedef void (*vla_video_error_fn)(void *user, double t, const char *what);
vla_status vla_video_scan(const char *path, int max_errors, vla_video_error_fn on_error, void *user,
                          void (*progress)(void *user, int64_t frames), int64_t *frames, int64_t *errors);

/* One camera's part of a batch: n timestamps from one decoder. rgb holds n
 * frames of out_w×out_h×3 bytes (native size when 0), in the order of ts. */
typedef struct {
    vla_video_decoder *dec;
    const double *ts;
    int n;
    double tol;
    int out_w, out_h;
    uint8_t *rgb;
    vla_status status; /* set per request */
    char error[256];   /* message when status != VLA_OK */
} vla_video_request;

/* Decode n requests (distinct decoders), one thread per request; within a
 * request timestamps are decoded in ascending order so windows decode
 * forward. Returns the first failing request's status (its message in the
 * thread's error), VLA_OK if all succeeded. */
vla_status vla_video_read_batch(vla_video_request *reqs, int n);

#endif
