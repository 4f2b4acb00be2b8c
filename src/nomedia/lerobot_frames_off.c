/* lerobot_frames_off.c — a LeRobot dataset's camera frames in a VLA_MEDIA=OFF
 * build: no reader opens (its frames are video or PNG, both FFmpeg's), so a
 * dataset with cameras fails at the first frame with media_off.h's error
 * (train from shards instead); numeric features never need one. Stands in
 * for src/data/lerobot_frames.c. */
#include "data/lerobot.h"
#include "nomedia/media_off.h"

#include <stddef.h>

vla_status vla_lr_reader_open(const vla_lerobot *ds, vla_lr_reader **out) {
    (void)ds;
    *out = NULL;
    return vla_media_off_error("reading a LeRobot dataset's camera frames");
}
void vla_lr_reader_close(vla_lr_reader *r) { (void)r; }
vla_status vla_lr_reader_frame(vla_lr_reader *r, int camera, int64_t row, int out_w, int out_h, double tol_s,
                               uint8_t *rgb) {
    (void)r, (void)out_w, (void)out_h, (void)tol_s, (void)rgb;
    return vla_media_off_error("camera %d, row %lld", camera, (long long)row);
}
vla_status vla_lr_reader_frames(vla_lr_reader *r, int camera, const int64_t *rows, int n, int out_w, int out_h,
                                double tol_s, uint8_t *rgb) {
    (void)r, (void)rows, (void)n, (void)out_w, (void)out_h, (void)tol_s, (void)rgb;
    return vla_media_off_error("camera %d", camera);
}
void vla_lr_reader_counters(const vla_lr_reader *r, int64_t *seeks, int64_t *decoded, int64_t *cache_hits,
                            int64_t *returned, int *open_decoders) {
    (void)r;
    *seeks = *decoded = *cache_hits = *returned = 0;
    *open_decoders = 0;
}
vla_status vla_lr_reader_sample(vla_lr_reader *r, const int *cams, int n_cams, const int64_t *rows, int n,
                                int out_w, int out_h, double tol_s, uint8_t *const *rgb) {
    (void)r, (void)cams, (void)rows, (void)n, (void)out_w, (void)out_h, (void)tol_s, (void)rgb;
    return vla_media_off_error("%d cameras", n_cams);
}
