/* render_off.c — sim/env.h's drawing in a VLA_MEDIA=OFF build (no cairo):
 * PushT and Reach step and observe vectors as always; their pixels fail
 * with media_off.h's error. Stands in for src/sim/render.c. */
#include "nomedia/media_off.h"
#include "sim/env.h"

vla_status vla_sim_draw(const vla_draw_scene *scene, vla_render_style style, int width, int height, uint8_t *rgb,
                        int stride, vla_draw_scratch *scratch) {
    (void)scene, (void)style, (void)rgb, (void)stride, (void)scratch;
    return vla_media_off_error("drawing a %dx%d frame", width, height);
}
vla_status vla_sim_write_png(const char *path, const uint8_t *rgb, int width, int height, int stride) {
    (void)rgb, (void)width, (void)height, (void)stride;
    return vla_media_off_error("writing %s", path);
}
