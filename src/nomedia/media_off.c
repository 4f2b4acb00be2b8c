/* media_off.c — the error of a VLA_MEDIA=OFF build's stand-ins (media_off.h). */
#include "nomedia/media_off.h"

#include <stdarg.h>
#include <stdio.h>

vla_status vla_media_off_error(const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return vla_error(VLA_ERR_UNSUPPORTED,
                     "%s: this build has no media (VLA_MEDIA=OFF, a training-node build: no video, images, drawing "
                     "or plots): decode datasets into shards with `vla data prepare` on a full build and train "
                     "from the shards",
                     what);
}
