/* media_off.h — the one error every stand-in of a VLA_MEDIA=OFF build
 * returns (src/nomedia/README.md: a build for GPU training nodes, which
 * train from shards and link no FFmpeg, cairo, MuJoCo or OSMesa). */
#ifndef VLA_NOMEDIA_MEDIA_OFF_H
#define VLA_NOMEDIA_MEDIA_OFF_H

#include "base/status.h"

/* `what` names the operation ("decoding video x.mp4", "drawing PushT"). */
#define VLA_MEDIA_OFF_ERROR(...)                                                                                     \
    vla_media_off_error(__VA_ARGS__)

vla_status vla_media_off_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What `vla version` prints for the media libraries of this build. */
#define VLA_MEDIA_OFF_NOTE                                                                                           \
    "none: VLA_MEDIA=OFF, a training-node build (no video, images, cairo, MuJoCo): train from shards; "              \
    "decode datasets into shards with `vla data prepare` on a full build"

#endif
