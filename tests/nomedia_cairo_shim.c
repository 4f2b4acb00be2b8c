/* nomedia_cairo_shim.c — linked into the tests of a VLA_MEDIA=OFF build only
 * (CMakeLists.txt): tests/test_util.c's test_release_font_caches calls
 * cairo_debug_reset_static_data itself, and such a build links no cairo.
 * Nothing drew with cairo there, so there is nothing to release. (The seam
 * to remove it: test_util.c calling libvla's vla_plot_release_caches.) */
void cairo_debug_reset_static_data(void);
void cairo_debug_reset_static_data(void) {}
