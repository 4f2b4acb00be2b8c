/* video_off.c — io/video.h in a VLA_MEDIA=OFF build (no FFmpeg): opening a
 * video for reading or writing fails with media_off.h's error; the
 * accessors of objects that cannot exist are never reached. Stands in for
 * src/io/video_decode.c, src/io/video_encode.c and the FFmpeg table
 * (src/io/ffmpeg_api.c). */
#include "io/video.h"
#include "nomedia/media_off.h"

#include <stdio.h>
#include <stdlib.h>

void vla_video_quiet_ffmpeg(void) {}

void vla_video_describe(char *buf, size_t size) { snprintf(buf, size, "%s", VLA_MEDIA_OFF_NOTE); }

vla_status vla_video_writer_open(const char *path, const vla_video_writer_opts *opts, vla_video_writer **out) {
    (void)opts;
    *out = NULL;
    return vla_media_off_error("writing video %s", path);
}
vla_status vla_video_writer_open_copy(const char *path, const char *source, int fps, vla_video_writer **out) {
    (void)fps;
    *out = NULL;
    return vla_media_off_error("copying video %s into %s", source, path);
}
vla_status vla_video_writer_add_rgb(vla_video_writer *w, const uint8_t *rgb, int stride_bytes) {
    (void)w, (void)rgb, (void)stride_bytes;
    return vla_media_off_error("encoding a video frame");
}
vla_status vla_video_writer_copy(vla_video_writer *w, const char *source, double from_s, double to_s, int64_t *frames) {
    (void)w, (void)from_s, (void)to_s, (void)frames;
    return vla_media_off_error("copying video %s", source);
}
double vla_video_writer_time(const vla_video_writer *w) { return (void)w, 0.0; }
int64_t vla_video_writer_bytes(const vla_video_writer *w) { return (void)w, 0; }
const char *vla_video_writer_codec(const vla_video_writer *w) { return (void)w, "none"; }
vla_status vla_video_writer_close(vla_video_writer *w) {
    return w ? vla_media_off_error("closing a video") : VLA_OK;
}
void vla_video_writer_abort(vla_video_writer *w) { (void)w; }

vla_status vla_video_decoder_open(const char *path, const vla_video_decoder_opts *opts, vla_video_decoder **out) {
    (void)opts;
    *out = NULL;
    return vla_media_off_error("decoding video %s", path);
}
void vla_video_decoder_close(vla_video_decoder *d) { (void)d; }
const vla_video_info *vla_video_decoder_info(const vla_video_decoder *d) { return (void)d, NULL; }
vla_video_stats vla_video_decoder_stats(const vla_video_decoder *d) {
    (void)d;
    vla_video_stats s = {0};
    return s;
}
vla_status vla_video_decoder_read(vla_video_decoder *d, double t, double tol, int out_w, int out_h, uint8_t *rgb,
                                  double *frame_t) {
    (void)d, (void)t, (void)tol, (void)out_w, (void)out_h, (void)rgb, (void)frame_t;
    return vla_media_off_error("decoding a video frame");
}
vla_status vla_video_scan(const char *path, int max_errors, vla_video_error_fn on_error, void *user,
                          void (*progress)(void *user, int64_t frames), int64_t *frames, int64_t *errors) {
    (void)max_errors, (void)on_error, (void)user, (void)progress;
    if (frames) *frames = 0;
    if (errors) *errors = 0;
    return vla_media_off_error("scanning video %s", path);
}
vla_status vla_video_read_batch(vla_video_request *reqs, int n) {
    (void)reqs;
    return n > 0 ? vla_media_off_error("decoding %d video frames", n) : VLA_OK;
}
