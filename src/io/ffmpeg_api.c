/* ffmpeg_api.c — FFmpeg's table of entry points, filled at the first use
 * (io/ffmpeg_api.h). */
#define VLA_FFMPEG_API_IMPL
#include "io/ffmpeg_api.h"
#include "io/video.h"

#include <stdio.h>

#include "vla_sonames.h" /* the build's FFmpeg sonames (CMakeLists.txt, vla_sonames) */

VLA_DYNLIB_DEFINE(ffmpeg, VLA_FFMPEG_SYMBOLS, "FFmpeg", "libavformat59 libavcodec59 libavutil57 libswscale6", VLA_SONAMES_FFMPEG);

void vla_video_describe(char *buf, size_t size) {
    if (vla_ffmpeg_require() != VLA_OK) {
        snprintf(buf, size, "not available: %s", vla_error_message());
        return;
    }
    unsigned v = vla_ffmpeg()->avcodec_version(); /* no redirects in this file */
    snprintf(buf, size, "libavcodec %u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
}
