/* cairo_api.c — cairo's table of entry points, filled at the first use
 * (io/cairo_api.h). */
#define VLA_CAIRO_API_IMPL
#include "io/cairo_api.h"

#include "vla_sonames.h" /* the build's cairo soname (CMakeLists.txt, vla_sonames) */

VLA_DYNLIB_DEFINE(cairo, VLA_CAIRO_SYMBOLS, "cairo", "libcairo2", VLA_SONAMES_CAIRO);
