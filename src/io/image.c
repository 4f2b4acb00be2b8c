/* image.c — PNG encode/decode of RGB24 images through FFmpeg's png codec
 * (see image.h for the conversions applied on decode). */
#include <stdlib.h>
#include <string.h>

#include "io/ffmpeg_api.h"
#include <zlib.h>

#include "base/fsutil.h"
#include "io/image.h"

#define MAX_DIM 65535
#define VLA_IMAGE_MAX_PIXELS (1 << 25)

vla_status vla_image_encode_png(const uint8_t *rgb, int width, int height, int stride_bytes, uint8_t **png,
                                size_t *png_size) {
    *png = NULL;
    *png_size = 0;
    VLA_TRY(vla_ffmpeg_require()); /* FFmpeg's PNG codec; missing: what to install (base/dynlib.h) */
    if (!rgb || width <= 0 || height <= 0 || width > MAX_DIM || height > MAX_DIM)
        return vla_error(VLA_ERR_INVALID_ARG, "png: bad image size %dx%d", width, height);
    if (stride_bytes == 0) stride_bytes = width * 3;
    if (stride_bytes < width * 3)
        return vla_error(VLA_ERR_INVALID_ARG, "png: stride %d is less than width*3 = %d", stride_bytes, width * 3);
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
    if (!codec) return vla_error(VLA_ERR_UNSUPPORTED, "png: FFmpeg has no png encoder");
    AVCodecContext *cc = avcodec_alloc_context3(codec);
    AVFrame *f = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    vla_status st = VLA_OK;
    if (!cc || !f || !pkt) {
        st = vla_error(VLA_ERR_NOMEM, "png: out of memory");
        goto done;
    }
    cc->width = width;
    cc->height = height;
    cc->pix_fmt = AV_PIX_FMT_RGB24;
    cc->time_base = (AVRational){1, 25};
    cc->compression_level = 1; /* LeRobot writes PNGs with PIL compress_level=1 */
    int r = avcodec_open2(cc, codec, NULL);
    if (r < 0) {
        st = vla_error(VLA_ERR_INTERNAL, "png: cannot open the encoder: %s", av_err2str(r));
        goto done;
    }
    /* Borrow the caller's rows; the encoder only reads them. */
    f->format = AV_PIX_FMT_RGB24;
    f->width = width;
    f->height = height;
    f->data[0] = (uint8_t *)rgb;
    f->linesize[0] = stride_bytes;
    f->pts = 0;
    r = avcodec_send_frame(cc, f);
    if (r >= 0) r = avcodec_receive_packet(cc, pkt);
    if (r < 0) {
        st = vla_error(VLA_ERR_INTERNAL, "png: encoding failed: %s", av_err2str(r));
        goto done;
    }
    *png = malloc((size_t)pkt->size);
    if (!*png) {
        st = vla_error(VLA_ERR_NOMEM, "png: out of memory for %d bytes", pkt->size);
        goto done;
    }
    memcpy(*png, pkt->data, (size_t)pkt->size);
    *png_size = (size_t)pkt->size;
done:
    av_packet_free(&pkt);
    av_frame_free(&f);
    avcodec_free_context(&cc);
    return st;
}

vla_status vla_image_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride_bytes) {
    uint8_t *png;
    size_t n;
    vla_status st = vla_image_encode_png(rgb, width, height, stride_bytes, &png, &n);
    if (st != VLA_OK) return vla_error_context(st, "%s", path);
    st = vla_write_file_atomic(path, png, n);
    free(png);
    return st;
}

/* Convert one decoded frame of any PNG pixel format to packed RGB24. */
static vla_status to_rgb24(const AVFrame *f, uint8_t *out) {
    int w = f->width, h = f->height;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = f->data[0] + (size_t)y * (size_t)f->linesize[0];
        uint8_t *d = out + (size_t)y * (size_t)w * 3;
        switch (f->format) {
        case AV_PIX_FMT_RGB24: memcpy(d, s, (size_t)w * 3); break;
        case AV_PIX_FMT_RGBA:
            for (int x = 0; x < w; x++) memcpy(d + 3 * x, s + 4 * x, 3);
            break;
        case AV_PIX_FMT_RGB48BE:
            for (int x = 0; x < w * 3; x++) d[x] = s[2 * x];
            break;
        case AV_PIX_FMT_RGBA64BE:
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) d[3 * x + c] = s[8 * x + 2 * c];
            break;
        case AV_PIX_FMT_GRAY8:
            for (int x = 0; x < w; x++) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
            break;
        case AV_PIX_FMT_YA8:
            for (int x = 0; x < w; x++) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[2 * x];
            break;
        case AV_PIX_FMT_GRAY16BE:
            for (int x = 0; x < w; x++) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[2 * x];
            break;
        case AV_PIX_FMT_YA16BE:
            for (int x = 0; x < w; x++) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[4 * x];
            break;
        case AV_PIX_FMT_MONOBLACK:
        case AV_PIX_FMT_MONOWHITE:
            for (int x = 0; x < w; x++) {
                int bit = (s[x >> 3] >> (7 - (x & 7))) & 1;
                uint8_t v = (uint8_t)((f->format == AV_PIX_FMT_MONOBLACK ? bit : !bit) ? 255 : 0);
                d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = v;
            }
            break;
        case AV_PIX_FMT_PAL8: {
            const uint32_t *pal = (const uint32_t *)f->data[1]; /* native-endian 0xAARRGGBB */
            for (int x = 0; x < w; x++) {
                uint32_t c = pal[s[x]];
                d[3 * x] = (uint8_t)(c >> 16);
                d[3 * x + 1] = (uint8_t)(c >> 8);
                d[3 * x + 2] = (uint8_t)c;
            }
            break;
        }
        default:
            return vla_error(VLA_ERR_UNSUPPORTED, "png: pixel format %s is not supported",
                             av_get_pix_fmt_name((enum AVPixelFormat)f->format));
        }
    }
    return VLA_OK;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walk the chunks (length, type, data, CRC-32 of type and data; PNG spec
 * §5.3) up to IEND. FFmpeg's decoder checks neither the CRCs (unless asked)
 * nor that IEND is there, so a cut or damaged file would otherwise decode to
 * whatever pixels survived. Bytes after IEND are ignored, as readers do. */
static vla_status check_chunks(const uint8_t *png, size_t n) {
    size_t pos = 8;
    for (;;) {
        if (n - pos < 12) return vla_error(VLA_ERR_FORMAT, "png: truncated at byte %zu (no IEND chunk)", n);
        uint32_t len = be32(png + pos);
        char type[5] = {0};
        for (int i = 0; i < 4; i++) {
            uint8_t ch = png[pos + 4 + i];
            type[i] = ch >= 32 && ch < 127 ? (char)ch : '?';
        }
        if (len > n - pos - 12)
            return vla_error(VLA_ERR_FORMAT, "png: chunk '%s' at byte %zu: %u bytes run past the end (%zu bytes)", type,
                             pos, len, n);
        const uint8_t *c = png + pos + 8 + len;
        if ((uint32_t)crc32(0, png + pos + 4, len + 4) != be32(c))
            return vla_error(VLA_ERR_FORMAT, "png: chunk '%s' at byte %zu: CRC mismatch", type, pos);
        if (!memcmp(png + pos + 4, "IEND", 4)) return VLA_OK;
        pos += 12 + (size_t)len;
    }
}

vla_status vla_image_decode_png(const uint8_t *png, size_t png_size, uint8_t **rgb, int *width, int *height) {
    *rgb = NULL;
    *width = *height = 0;
    VLA_TRY(vla_ffmpeg_require());
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!png || png_size < 8 || memcmp(png, sig, 8) != 0) return vla_error(VLA_ERR_FORMAT, "png: bad signature");
    if (png_size > (size_t)INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE)
        return vla_error(VLA_ERR_FORMAT, "png: %zu bytes is too large", png_size);
    VLA_TRY(check_chunks(png, png_size));
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_PNG);
    if (!codec) return vla_error(VLA_ERR_UNSUPPORTED, "png: FFmpeg has no png decoder");
    AVCodecContext *cc = avcodec_alloc_context3(codec);
    AVFrame *f = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    uint8_t *buf = av_malloc(png_size + AV_INPUT_BUFFER_PADDING_SIZE); /* decoders read a little past the end */
    vla_status st = VLA_OK;
    if (!cc || !f || !pkt || !buf) {
        st = vla_error(VLA_ERR_NOMEM, "png: out of memory");
        av_free(buf);
        goto done;
    }
    memcpy(buf, png, png_size);
    memset(buf + png_size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
    if (av_packet_from_data(pkt, buf, (int)png_size) < 0) {
        av_free(buf);
        st = vla_error(VLA_ERR_NOMEM, "png: out of memory");
        goto done;
    }
    cc->thread_count = 1;
    cc->max_pixels = VLA_IMAGE_MAX_PIXELS; /* a forged IHDR must not allocate gigabytes */
    int r = avcodec_open2(cc, codec, NULL);
    if (r < 0) {
        st = vla_error(VLA_ERR_INTERNAL, "png: cannot open the decoder: %s", av_err2str(r));
        goto done;
    }
    r = avcodec_send_packet(cc, pkt);
    if (r >= 0) r = avcodec_receive_frame(cc, f);
    if (r == AVERROR(EAGAIN)) { /* the decoder wants end-of-stream to emit */
        avcodec_send_packet(cc, NULL);
        r = avcodec_receive_frame(cc, f);
    }
    if (r < 0) {
        st = vla_error(VLA_ERR_FORMAT, "png: cannot decode %zu bytes: %s", png_size, av_err2str(r));
        goto done;
    }
    if (f->width <= 0 || f->height <= 0) {
        st = vla_error(VLA_ERR_FORMAT, "png: decoded image has no size");
        goto done;
    }
    uint8_t *out = malloc((size_t)f->width * (size_t)f->height * 3);
    if (!out) {
        st = vla_error(VLA_ERR_NOMEM, "png: out of memory for %dx%d", f->width, f->height);
        goto done;
    }
    st = to_rgb24(f, out);
    if (st != VLA_OK) {
        free(out);
        goto done;
    }
    *rgb = out;
    *width = f->width;
    *height = f->height;
done:
    av_packet_free(&pkt);
    av_frame_free(&f);
    avcodec_free_context(&cc);
    return st;
}

vla_status vla_image_read_png(const char *path, uint8_t **rgb, int *width, int *height) {
    char *data;
    size_t n;
    VLA_TRY(vla_read_file(path, &data, &n));
    vla_status st = vla_image_decode_png((const uint8_t *)data, n, rgb, width, height);
    free(data);
    if (st != VLA_OK) return vla_error_context(st, "%s", path);
    return VLA_OK;
}
