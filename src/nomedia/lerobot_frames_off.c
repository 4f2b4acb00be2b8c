/* lerobot_frames_off.c — a LeRobot dataset's camera frames in a VLA_MEDIA=OFF
 * build: frames from training shards (`vla data prepare`: the stored bytes,
 * no codec) as src/data/lerobot_frames.c reads them; video files and PNG
 * `image` features (both FFmpeg's) fail with media_off.h's error. Stands in
 * for src/data/lerobot_frames.c, whose shards branch is repeated here: that
 * file mixes it with the FFmpeg code in one function (the split that would
 * let this file go: the shards branch in a file of its own). */
#include "data/lerobot_internal.h"
#include "data/shards.h"
#include "nomedia/media_off.h"

#include <stdlib.h>

struct vla_lr_reader {
    const vla_lerobot *ds;
};

vla_status vla_lr_reader_open(const vla_lerobot *ds, vla_lr_reader **out) {
    vla_lr_reader *r = calloc(1, sizeof *r);
    if (!r) return vla_error(VLA_ERR_NOMEM, "out of memory");
    r->ds = ds;
    *out = r;
    return VLA_OK;
}

void vla_lr_reader_close(vla_lr_reader *r) { free(r); }

void vla_lr_reader_counters(const vla_lr_reader *r, int64_t *seeks, int64_t *decoded, int64_t *cache_hits,
                            int64_t *returned, int *open_decoders) {
    (void)r; /* no decoders: nothing decoded, nothing cached */
    if (seeks) *seeks = 0;
    if (decoded) *decoded = 0;
    if (cache_hits) *cache_hits = 0;
    if (returned) *returned = 0;
    if (open_decoders) *open_decoders = 0;
}

vla_status vla_lr_reader_sample(vla_lr_reader *r, const int *cams, int n_cams, const int64_t *rows, int n,
                                int out_w, int out_h, double tol_s, uint8_t *const *rgb) {
    (void)tol_s;
    const vla_lerobot *ds = r->ds;
    if (n_cams < 0 || n < 0) return vla_error(VLA_ERR_INVALID_ARG, "negative camera or frame count");
    for (int i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= ds->n_rows)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: row %lld out of range [0, %lld)", ds->root, (long long)rows[i],
                             (long long)ds->n_rows);
    for (int j = 0; j < n_cams; j++) {
        int cam = cams[j];
        if (cam < 0 || cam >= ds->n_cameras)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: camera %d out of range", ds->root, cam);
        const vla_lr_feature *f = &ds->features[ds->camera_feature[cam]];
        if (!ds->shards) return vla_media_off_error("%s: camera '%s'", ds->root, f->key);
        int ow = out_w ? out_w : f->width_px, oh = out_h ? out_h : f->height;
        for (int i = 0; i < n; i++)
            VLA_TRY(vla_shards_frame(ds, cam, rows[i], ow, oh, rgb[j] + (size_t)i * ow * oh * 3));
    }
    return VLA_OK;
}

vla_status vla_lr_reader_frames(vla_lr_reader *r, int camera, const int64_t *rows, int n, int out_w, int out_h,
                                double tol_s, uint8_t *rgb) {
    uint8_t *p[1] = {rgb};
    return vla_lr_reader_sample(r, &camera, 1, rows, n, out_w, out_h, tol_s, p);
}

vla_status vla_lr_reader_frame(vla_lr_reader *r, int camera, int64_t row, int out_w, int out_h, double tol_s,
                               uint8_t *rgb) {
    return vla_lr_reader_frames(r, camera, &row, 1, out_w, out_h, tol_s, rgb);
}
