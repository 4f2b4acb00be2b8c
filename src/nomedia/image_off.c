/* image_off.c — io/image.h in a VLA_MEDIA=OFF build (no libavcodec PNG
 * codec): every call fails with media_off.h's error. Stands in for
 * src/io/image.c. */
#include "io/image.h"
#include "nomedia/media_off.h"

#include <stddef.h>

vla_status vla_image_encode_png(const uint8_t *rgb, int width, int height, int stride_bytes, uint8_t **png,
                                size_t *png_size) {
    (void)rgb, (void)stride_bytes;
    *png = NULL, *png_size = 0;
    return vla_media_off_error("encoding a %dx%d PNG", width, height);
}
vla_status vla_image_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride_bytes) {
    (void)rgb, (void)width, (void)height, (void)stride_bytes;
    return vla_media_off_error("writing %s", path);
}
vla_status vla_image_decode_png(const uint8_t *png, size_t png_size, uint8_t **rgb, int *width, int *height) {
    (void)png, (void)png_size, (void)width, (void)height;
    *rgb = NULL;
    return vla_media_off_error("decoding a PNG");
}
vla_status vla_image_read_png(const char *path, uint8_t **rgb, int *width, int *height) {
    (void)width, (void)height;
    *rgb = NULL;
    return vla_media_off_error("reading %s", path);
}
