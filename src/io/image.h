/* image.h — still images as RGB24: PNG encode (to memory or an atomic file)
 * and decode (files or the PNG bytes LeRobot embeds in parquet image
 * columns), through FFmpeg's png codec.
 *
 * RGB24 buffers are packed rows of width*3 bytes unless a stride is given.
 * Decoding accepts every PNG colour type and bit depth: alpha is dropped
 * (as PIL's convert("RGB") does), grey is replicated, palettes are
 * expanded and 16-bit samples keep their high byte. Images over 2^25 pixels
 * are refused, and so is a file whose chunks do not check out (a CRC-32
 * mismatch, a chunk past the end, no IEND): a cut or damaged PNG is an
 * error, never the pixels that happened to survive. */
#ifndef VLA_IO_IMAGE_H
#define VLA_IO_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* PNG bytes of an RGB24 image into a malloc'd buffer (zlib level 1, as
 * LeRobot's image writer). stride_bytes 0 means width*3. */
vla_status vla_image_encode_png(const uint8_t *rgb, int width, int height, int stride_bytes, uint8_t **png,
                                size_t *png_size);
/* The same, written atomically to path. */
vla_status vla_image_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride_bytes);

/* Decode PNG bytes into a malloc'd packed RGB24 buffer. */
vla_status vla_image_decode_png(const uint8_t *png, size_t png_size, uint8_t **rgb, int *width, int *height);
/* Read and decode a PNG file. */
vla_status vla_image_read_png(const char *path, uint8_t **rgb, int *width, int *height);

#endif
