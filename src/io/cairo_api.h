/* cairo_api.h — cairo as vla.c calls it (plots, PushT's frames): loaded at
 * the first use, not at process start (base/dynlib.h says why and how).
 * Include this instead of <cairo.h>; a new cairo call goes into
 * VLA_CAIRO_SYMBOLS and gets its redirect below, or the link fails. */
#ifndef VLA_IO_CAIRO_API_H
#define VLA_IO_CAIRO_API_H

#include "base/dynlib.h"

#include <cairo.h>

#define VLA_CAIRO_SYMBOLS(X) \
    X(cairo_arc) \
    X(cairo_clip) \
    X(cairo_close_path) \
    X(cairo_create) \
    X(cairo_debug_reset_static_data) \
    X(cairo_destroy) \
    X(cairo_fill) \
    X(cairo_fill_preserve) \
    X(cairo_format_stride_for_width) \
    X(cairo_image_surface_create) \
    X(cairo_image_surface_create_for_data) \
    X(cairo_image_surface_get_data) \
    X(cairo_image_surface_get_stride) \
    X(cairo_line_to) \
    X(cairo_move_to) \
    X(cairo_new_path) \
    X(cairo_paint) \
    X(cairo_rectangle) \
    X(cairo_rel_line_to) \
    X(cairo_restore) \
    X(cairo_rotate) \
    X(cairo_save) \
    X(cairo_scale) \
    X(cairo_select_font_face) \
    X(cairo_set_antialias) \
    X(cairo_set_font_size) \
    X(cairo_set_line_cap) \
    X(cairo_set_line_join) \
    X(cairo_set_line_width) \
    X(cairo_set_source_rgb) \
    X(cairo_set_source_rgba) \
    X(cairo_show_text) \
    X(cairo_status) \
    X(cairo_status_to_string) \
    X(cairo_stroke) \
    X(cairo_surface_destroy) \
    X(cairo_surface_flush) \
    X(cairo_surface_mark_dirty) \
    X(cairo_surface_status) \
    X(cairo_surface_write_to_png) \
    X(cairo_surface_write_to_png_stream) \
    X(cairo_text_extents) \
    X(cairo_translate)
VLA_DYNLIB_DECLARE(cairo, VLA_CAIRO_SYMBOLS)

#ifndef VLA_CAIRO_API_IMPL
#define cairo_arc (vla_cairo()->cairo_arc)
#define cairo_clip (vla_cairo()->cairo_clip)
#define cairo_close_path (vla_cairo()->cairo_close_path)
#define cairo_create (vla_cairo()->cairo_create)
#define cairo_debug_reset_static_data (vla_cairo()->cairo_debug_reset_static_data)
#define cairo_destroy (vla_cairo()->cairo_destroy)
#define cairo_fill (vla_cairo()->cairo_fill)
#define cairo_fill_preserve (vla_cairo()->cairo_fill_preserve)
#define cairo_format_stride_for_width (vla_cairo()->cairo_format_stride_for_width)
#define cairo_image_surface_create (vla_cairo()->cairo_image_surface_create)
#define cairo_image_surface_create_for_data (vla_cairo()->cairo_image_surface_create_for_data)
#define cairo_image_surface_get_data (vla_cairo()->cairo_image_surface_get_data)
#define cairo_image_surface_get_stride (vla_cairo()->cairo_image_surface_get_stride)
#define cairo_line_to (vla_cairo()->cairo_line_to)
#define cairo_move_to (vla_cairo()->cairo_move_to)
#define cairo_new_path (vla_cairo()->cairo_new_path)
#define cairo_paint (vla_cairo()->cairo_paint)
#define cairo_rectangle (vla_cairo()->cairo_rectangle)
#define cairo_rel_line_to (vla_cairo()->cairo_rel_line_to)
#define cairo_restore (vla_cairo()->cairo_restore)
#define cairo_rotate (vla_cairo()->cairo_rotate)
#define cairo_save (vla_cairo()->cairo_save)
#define cairo_scale (vla_cairo()->cairo_scale)
#define cairo_select_font_face (vla_cairo()->cairo_select_font_face)
#define cairo_set_antialias (vla_cairo()->cairo_set_antialias)
#define cairo_set_font_size (vla_cairo()->cairo_set_font_size)
#define cairo_set_line_cap (vla_cairo()->cairo_set_line_cap)
#define cairo_set_line_join (vla_cairo()->cairo_set_line_join)
#define cairo_set_line_width (vla_cairo()->cairo_set_line_width)
#define cairo_set_source_rgb (vla_cairo()->cairo_set_source_rgb)
#define cairo_set_source_rgba (vla_cairo()->cairo_set_source_rgba)
#define cairo_show_text (vla_cairo()->cairo_show_text)
#define cairo_status (vla_cairo()->cairo_status)
#define cairo_status_to_string (vla_cairo()->cairo_status_to_string)
#define cairo_stroke (vla_cairo()->cairo_stroke)
#define cairo_surface_destroy (vla_cairo()->cairo_surface_destroy)
#define cairo_surface_flush (vla_cairo()->cairo_surface_flush)
#define cairo_surface_mark_dirty (vla_cairo()->cairo_surface_mark_dirty)
#define cairo_surface_status (vla_cairo()->cairo_surface_status)
#define cairo_surface_write_to_png (vla_cairo()->cairo_surface_write_to_png)
#define cairo_surface_write_to_png_stream (vla_cairo()->cairo_surface_write_to_png_stream)
#define cairo_text_extents (vla_cairo()->cairo_text_extents)
#define cairo_translate (vla_cairo()->cairo_translate)
#endif

#endif
