/* lerobot_convert.c — `vla dataset convert`: any dataset vla.c reads
 * (LeRobot v2.1/v3.0, with its episode and feature selections) rewritten
 * as LeRobot v3.0 through the writer (lerobot_write.c). Cameras are
 * remuxed — their packets copied and cut by episode, as LeRobot's own
 * converter does — where the packets allow, else re-encoded; every frame is
 * still decoded, for the image statistics. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "data/lerobot_internal.h"

vla_status vla_lerobot_convert(const char *src_root, const char *dst_root, const char *video_codec) {
    return vla_lerobot_convert_opts(src_root, NULL, dst_root, video_codec);
}

/* Rewrite ds at dst_root; with copy the cameras' packets are copied (each
 * frame is still decoded, for the image statistics), else re-encoded. */
static vla_status convert_with(const vla_lerobot *ds, const char *src_root, const char *dst_root, const char *video_codec, bool copy) {
    vla_lr_feature_spec *specs = calloc((size_t)ds->n_features + 1, sizeof *specs);
    int *map = calloc((size_t)ds->n_features + 1, sizeof *map);
    int ns = 0, nv = 0, ncam = 0;
    vla_status st = specs && map ? VLA_OK : vla_error(VLA_ERR_NOMEM, "out of memory");
    /* writer order: the caller's features; values[] holds non-video ones in order, images[] the videos */
    int cams[64];
    for (int i = 0; st == VLA_OK && i < ds->n_features; i++) {
        const vla_lr_feature *f = &ds->features[i];
        static const char *reserved[] = {"timestamp", "frame_index", "episode_index", "index", "task_index"};
        int skip = 0;
        for (int k = 0; k < 5; k++) skip |= !strcmp(f->key, reserved[k]);
        if (skip) continue;
        vla_lr_feature_spec *s = &specs[ns++];
        s->key = f->key;
        if (f->dtype == VLA_LR_VIDEO) {
            if (ncam >= 64) { st = vla_error(VLA_ERR_UNSUPPORTED, "too many cameras"); break; }
            s->dtype = "video";
            s->ndim = 3;
            s->shape[0] = f->height;
            s->shape[1] = f->width_px;
            s->shape[2] = 3;
            cams[ncam++] = f->camera;
        } else if (f->values) {
            s->dtype = f->dtype == VLA_LR_FLOAT64 ? "float64" : f->dtype == VLA_LR_INT64 || f->dtype == VLA_LR_INT32 ? "int64"
                       : f->dtype == VLA_LR_BOOL ? "bool" : "float32";
            s->ndim = f->ndim > 3 ? 3 : f->ndim;
            for (int d = 0; d < s->ndim; d++) s->shape[d] = f->shape[d];
            if (f->ndim > 3) st = vla_error(VLA_ERR_UNSUPPORTED, "%s: feature '%s' has %d dimensions", src_root, f->key, f->ndim);
            map[nv++] = i;
        } else {
            st = vla_error(VLA_ERR_UNSUPPORTED, "%s: feature '%s' (dtype %s) cannot be converted", src_root, f->key, f->dtype_name);
        }
    }
    vla_lr_writer *w = NULL;
    if (st == VLA_OK) {
        vla_lr_writer_opts o = {.fps = (int)lround(ds->fps), .robot_type = ds->robot_type, .features = specs, .n_features = ns,
                                .video_codec = video_codec, .copy_video = copy};
        if (fabs(ds->fps - lround(ds->fps)) > 1e-9) st = vla_error(VLA_ERR_UNSUPPORTED, "%s: fractional fps %g", src_root, ds->fps);
        else st = vla_lr_writer_open(dst_root, &o, &w);
    }
    vla_lr_reader *r = NULL;
    if (st == VLA_OK) st = vla_lr_reader_open(ds, &r);
    const float *vals[1024];
    const uint8_t *imgs[64];
    uint8_t *buf[64] = {0};
    for (int c = 0; st == VLA_OK && c < ncam; c++) {
        const vla_lr_feature *f = &ds->features[ds->camera_feature[cams[c]]];
        buf[c] = malloc((size_t)f->width_px * f->height * 3);
        imgs[c] = buf[c];
        if (!buf[c]) st = vla_error(VLA_ERR_NOMEM, "out of memory");
    }
    if (nv > 1024) st = vla_error(VLA_ERR_UNSUPPORTED, "too many features");
    for (int64_t e = 0; st == VLA_OK && e < ds->n_episodes; e++) {
        const vla_lr_episode *ep = &ds->episodes[e];
        for (int64_t row = ep->from; st == VLA_OK && row < ep->to; row++) {
            for (int k = 0; k < nv; k++) vals[k] = ds->features[map[k]].values + row * ds->features[map[k]].width;
            for (int c = 0; st == VLA_OK && c < ncam; c++) st = vla_lr_reader_frame(r, cams[c], row, 0, 0, 0, buf[c]);
            int64_t t = ds->task_index[row];
            const char *task = t >= 0 && t < ds->n_tasks ? ds->tasks[t] : "";
            if (st == VLA_OK) st = vla_lr_writer_add_frame(w, task, vals, imgs);
        }
        for (int c = 0; copy && st == VLA_OK && c < ncam; c++) {
            char src[2048];
            st = vla_lerobot_video_file(ds, cams[c], e, src, sizeof src);
            if (st == VLA_OK) st = vla_lr_writer_copy_video(w, c, src, ep->video[cams[c]].from_ts, ep->video[cams[c]].to_ts);
        }
        if (st == VLA_OK) st = vla_lr_writer_save_episode(w);
    }
    for (int c = 0; c < ncam; c++) free(buf[c]);
    vla_lr_reader_close(r);
    if (st == VLA_OK) st = vla_lr_writer_close(w);
    else if (w) vla_lr_writer_abort(w);
    free(specs);
    free(map);
    return st;
}

vla_status vla_lerobot_convert_opts(const char *src_root, const vla_lr_open_opts *opts, const char *dst_root,
                                    const char *video_codec) {
    vla_lerobot *ds;
    VLA_TRY(vla_lerobot_open_opts(src_root, opts, &ds));
    vla_status st;
    if (!video_codec && ds->n_cameras > 0) {
        /* LeRobot's converter remuxes: so do we where the packets can be cut by episode */
        st = convert_with(ds, src_root, dst_root, NULL, true);
        if (st == VLA_ERR_UNSUPPORTED) {
            VLA_INFO("%s: re-encoding the videos (%s)", src_root, vla_error_message());
            st = convert_with(ds, src_root, dst_root, NULL, false);
        }
    } else {
        st = convert_with(ds, src_root, dst_root, video_codec, false);
    }
    vla_lerobot_close(ds);
    return st;
}
