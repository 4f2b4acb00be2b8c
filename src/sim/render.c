/* render.c — draws a simulator scene with cairo, in gym-pusht's look: white
 * background, goal filled LightGreen, block filled with a 1.2× lighter tint
 * of LightSlateGray and outlined by 2-px-radius fat segments, agent a
 * RoyalBlue disc with a lighter inner disc of radius r−4, walls LightGray,
 * and a red cross at the last action (gym-pusht's pusht.py and
 * pymunk_override.py).
 *
 * Two styles (env.h): GYM paints the 512-unit world without antialiasing at
 * integer positions, as pygame, and resizes it as cv2.resize(INTER_LINEAR),
 * so images look like gym-pusht's and the lerobot/pusht dataset's; SMOOTH
 * draws directly at the requested size, antialiased, and is faster. */
#include "io/cairo_api.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/env.h"

typedef struct {
    double r, g, b;
} rgb3;

/* pygame colour names; light = min(1.2·c, 255) truncated, as light_color(). */
static const rgb3 light_green = {144, 238, 144};
static const rgb3 slate = {119, 136, 153}, slate_light = {142, 163, 183};
static const rgb3 royal = {65, 105, 225}, royal_light = {78, 126, 255};
static const rgb3 light_gray = {211, 211, 211};

static void set_color(cairo_t *cr, rgb3 c) { cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

/* pygame draws at integer pixel positions (pymunk's to_pygame rounds). */
static double px(double v, bool gym) { return gym ? round(v) : v; }

static void poly_path(cairo_t *cr, const vla_draw_item *it, bool gym) {
    cairo_move_to(cr, px(it->pts[0][0], gym), px(it->pts[0][1], gym));
    for (int k = 1; k < it->n; k++) cairo_line_to(cr, px(it->pts[k][0], gym), px(it->pts[k][1], gym));
    cairo_close_path(cr);
}

/* Draw the items in world units on a cairo context already scaled. */
static void paint(cairo_t *cr, const vla_draw_scene *sc, bool gym) {
    cairo_set_antialias(cr, gym ? CAIRO_ANTIALIAS_NONE : CAIRO_ANTIALIAS_DEFAULT);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (int i = 0; i < sc->n_items; i++) {
        const vla_draw_item *it = &sc->items[i];
        double cx = px(it->pts[0][0], gym), cy = px(it->pts[0][1], gym);
        switch (it->role) {
        case VLA_DRAW_GOAL:
            poly_path(cr, it, gym);
            set_color(cr, light_green);
            cairo_fill(cr);
            break;
        case VLA_DRAW_BLOCK:
            poly_path(cr, it, gym);
            set_color(cr, slate_light);
            cairo_fill_preserve(cr);
            set_color(cr, slate);
            cairo_set_line_width(cr, 4.0); /* fat segments of radius 2 */
            cairo_stroke(cr);
            break;
        case VLA_DRAW_AGENT:
            set_color(cr, royal);
            cairo_arc(cr, cx, cy, px(it->radius, gym), 0, 2 * M_PI);
            cairo_fill(cr);
            set_color(cr, royal_light);
            cairo_arc(cr, cx, cy, px(it->radius - 4, gym), 0, 2 * M_PI);
            cairo_fill(cr);
            break;
        case VLA_DRAW_WALL:
            set_color(cr, light_gray);
            cairo_set_line_width(cr, 2 * it->radius);
            cairo_move_to(cr, cx, cy);
            cairo_line_to(cr, px(it->pts[1][0], gym), px(it->pts[1][1], gym));
            cairo_stroke(cr);
            break;
        }
    }
}

/* Draw into a cairo RGB24 buffer of w×h (stride cstride) covering the world. */
static vla_status paint_buffer(const vla_draw_scene *sc, bool gym, int w, int h, uint32_t *buf, int cstride) {
    memset(buf, 0xff, (size_t)cstride * (size_t)h); /* white, faster than cairo_paint */
    cairo_surface_t *surf = cairo_image_surface_create_for_data((unsigned char *)buf, CAIRO_FORMAT_RGB24, w, h, cstride);
    cairo_t *cr = cairo_create(surf);
    cairo_scale(cr, w / sc->world_size, h / sc->world_size);
    paint(cr, sc, gym);
    cairo_destroy(cr);
    cairo_surface_flush(surf);
    vla_status st = VLA_OK;
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS)
        st = vla_error(VLA_ERR_INTERNAL, "render: cairo: %s", cairo_status_to_string(cairo_surface_status(surf)));
    cairo_surface_destroy(surf);
    return st;
}

static void xrgb_to_rgb(const uint32_t *buf, int cstride, int w, int h, uint8_t *rgb, int stride) {
    for (int y = 0; y < h; y++) {
        const uint32_t *src = (const uint32_t *)((const uint8_t *)buf + (size_t)y * (size_t)cstride);
        uint8_t *dst = rgb + (size_t)y * (size_t)stride;
        for (int x = 0; x < w; x++) {
            uint32_t p = src[x];
            dst[3 * x + 0] = (uint8_t)(p >> 16), dst[3 * x + 1] = (uint8_t)(p >> 8), dst[3 * x + 2] = (uint8_t)p;
        }
    }
}

/* cv2.resize(INTER_LINEAR) for 8-bit images: 2 taps per axis at
 * (d + 0.5)·scale − 0.5, 11-bit fixed-point weights, and the vertical pass
 * rounded as OpenCV's SIMD path rounds it. */
static void linear_taps(int src, int dst, int *idx, short *w) {
    double scale = (double)src / dst;
    for (int d = 0; d < dst; d++) {
        float f = (float)((d + 0.5) * scale - 0.5);
        int s = (int)floorf(f);
        f -= (float)s;
        if (s < 0) f = 0, s = 0;
        if (s >= src - 1) f = 0, s = src - 1;
        idx[d] = s;
        w[2 * d] = (short)lrintf((1.f - f) * 2048), w[2 * d + 1] = (short)lrintf(f * 2048);
    }
}

static vla_status resize_linear(const uint32_t *buf, int cstride, int sw, int sh, uint8_t *rgb, int stride, int dw,
                                int dh) {
    int *xi = malloc(sizeof(int) * (size_t)(dw + dh));
    short *xw = malloc(sizeof(short) * 2 * (size_t)(dw + dh));
    int *rows = malloc(sizeof(int) * 3 * (size_t)dw * 2);
    if (!xi || !xw || !rows) {
        free(xi), free(xw), free(rows);
        return vla_error(VLA_ERR_NOMEM, "render: out of memory");
    }
    int *yi = xi + dw;
    short *yw = xw + 2 * dw;
    linear_taps(sw, dw, xi, xw);
    linear_taps(sh, dh, yi, yw);
    for (int y = 0; y < dh; y++) {
        for (int r = 0; r < 2; r++) {
            int sy = yi[y] + r < sh ? yi[y] + r : sh - 1;
            const uint32_t *src = (const uint32_t *)((const uint8_t *)buf + (size_t)sy * (size_t)cstride);
            int *h = rows + r * 3 * dw;
            for (int x = 0; x < dw; x++) {
                int sx = xi[x], sx1 = sx + 1 < sw ? sx + 1 : sx;
                uint32_t p0 = src[sx], p1 = src[sx1];
                for (int c = 0; c < 3; c++) {
                    int sh8 = 16 - 8 * c;
                    h[3 * x + c] = (int)((p0 >> sh8) & 255) * xw[2 * x] + (int)((p1 >> sh8) & 255) * xw[2 * x + 1];
                }
            }
        }
        uint8_t *dst = rgb + (size_t)y * (size_t)stride;
        int b0 = yw[2 * y], b1 = yw[2 * y + 1];
        for (int i = 0; i < 3 * dw; i++) {
            int v = ((((rows[i] >> 4) * b0) >> 16) + (((rows[3 * dw + i] >> 4) * b1) >> 16) + 2) >> 2;
            dst[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    free(xi), free(xw), free(rows);
    return VLA_OK;
}

/* cv2.drawMarker(MARKER_CROSS) in red: size 8/96 and thickness 1/96 of the
 * image, at the action scaled to pixels (truncated, as astype(int32)). */
static void draw_marker(const vla_draw_scene *sc, int w, int h, uint8_t *rgb, int stride) {
    int size = w < h ? w : h;
    int ms = (int)(8.0 / 96 * size), th = (int)(1.0 / 96 * size);
    if (th < 1) th = 1;
    int x = (int)(sc->marker[0] / sc->world_size * w), y = (int)(sc->marker[1] / sc->world_size * h);
    for (int k = -ms / 2; k <= ms / 2; k++)
        for (int t = -(th / 2); t < th - th / 2; t++) {
            int pts[2][2] = {{x + k, y + t}, {x + t, y + k}};
            for (int q = 0; q < 2; q++) {
                int u = pts[q][0], v = pts[q][1];
                if (u < 0 || v < 0 || u >= w || v >= h) continue;
                uint8_t *p = rgb + (size_t)v * (size_t)stride + 3 * (size_t)u;
                p[0] = 255, p[1] = 0, p[2] = 0;
            }
        }
}

vla_status vla_sim_draw(const vla_draw_scene *sc, vla_render_style style, int width, int height, uint8_t *rgb,
                        int stride, vla_draw_scratch *scratch) {
    VLA_TRY(vla_cairo_require()); /* cairo missing: what to install, not an exit (base/dynlib.h) */
    if (width <= 0 || height <= 0) return vla_error(VLA_ERR_INVALID_ARG, "render: bad size %dx%d", width, height);
    bool gym = style == VLA_RENDER_GYM;
    /* gym style paints the world at one pixel per unit, then resizes */
    int cw = gym ? (int)sc->world_size : width, ch = gym ? (int)sc->world_size : height;
    int cstride = cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, cw);
    uint32_t stackbuf[128 * 128];
    size_t bytes = (size_t)cstride * (size_t)ch;
    uint32_t *buf = stackbuf;
    if (bytes > sizeof stackbuf) {
        if (scratch && scratch->cap >= bytes) {
            buf = scratch->buf;
        } else {
            buf = malloc(bytes);
            if (!buf) return vla_error(VLA_ERR_NOMEM, "render: out of memory for %dx%d", cw, ch);
            if (scratch) free(scratch->buf), scratch->buf = buf, scratch->cap = bytes;
        }
    }
    vla_status st = paint_buffer(sc, gym, cw, ch, buf, cstride);
    if (st == VLA_OK) {
        if (cw == width && ch == height)
            xrgb_to_rgb(buf, cstride, width, height, rgb, stride);
        else
            st = resize_linear(buf, cstride, cw, ch, rgb, stride, width, height);
    }
    if (st == VLA_OK && sc->has_marker) draw_marker(sc, width, height, rgb, stride);
    if (buf != stackbuf && (!scratch || buf != scratch->buf)) free(buf);
    return st;
}

vla_status vla_sim_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride) {
    if (stride == 0) stride = width * 3;
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(surf);
        return vla_error(VLA_ERR_NOMEM, "%s: cannot make a %dx%d surface", path, width, height);
    }
    cairo_surface_flush(surf);
    uint8_t *data = cairo_image_surface_get_data(surf);
    int cstride = cairo_image_surface_get_stride(surf);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            const uint8_t *p = rgb + (size_t)y * (size_t)stride + 3 * (size_t)x;
            ((uint32_t *)(data + (size_t)y * (size_t)cstride))[x] =
                (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        }
    cairo_surface_mark_dirty(surf);
    cairo_status_t cs = cairo_surface_write_to_png(surf, path);
    cairo_surface_destroy(surf);
    if (cs != CAIRO_STATUS_SUCCESS) return vla_error(VLA_ERR_IO, "%s: cannot write PNG: %s", path, cairo_status_to_string(cs));
    return VLA_OK;
}
