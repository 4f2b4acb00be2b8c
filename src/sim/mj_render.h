/* mj_render.h — MuJoCo (C API, Debian's libmujoco 2.2.2) shared by the 3-D
 * environments: error handling that never exits the process, model loading
 * from a file or from a built-in MJCF text with the parser's message (file
 * and line) passed on, and offscreen rendering of a model's cameras.
 *
 * RENDERING: OSMesa (Mesa's off-screen GL, libosmesa6), not EGL. Decided by
 * trying both on this machine (no GPU, no display): OSMesa needs nothing
 * but the library — no X server, no DRM render node, no glvnd EGL vendor
 * file — and always rasterises with llvmpipe on the CPU, so the same state
 * gives the same pixels wherever vla.c runs, which keeps the determinism
 * promise (same seed → same episode, byte for byte) true of images too.
 * EGL's surfaceless platform also worked here, but picks whatever driver the
 * machine has (a GPU's, where there is one), and its software path measured
 * ~10 ms per 96×96 frame against ~0.3–0.9 ms for OSMesa.
 *
 * One GL context per thread, made on first use and kept (thread-local): an
 * env holds no GL state, so episodes can move between threads, many envs in
 * one thread share a context, and an env that is never rendered costs no GL
 * memory. llvmpipe would start rasterizer threads of its own per context;
 * episodes already run one per core, so LP_NUM_THREADS defaults to 0 here
 * (rasterize in the calling thread; measured 3–10× faster per frame on 2
 * loaded cores) unless the user set it.
 *
 * ERRORS: MuJoCo reports errors through mju_user_error and, by default,
 * writes MUJOCO_LOG.TXT and exits. Calls that can fail run under
 * VLA_MJ_TRY, which turns such an error into a vla_status; warnings (which
 * MuJoCo would print on stdout, corrupting --json output) are counted in
 * mjData and reported by the caller. */
#ifndef VLA_SIM_MJ_RENDER_H
#define VLA_SIM_MJ_RENDER_H

#include "sim/mujoco_api.h"
#include <setjmp.h>
#include <stdint.h>

#include "base/status.h"

/* Install the error/warning handlers (once per process; every function
 * here calls it). */
void vla_mj_init(void);

/* Run the statements given after `what` so that a MuJoCo error inside them
 * lands in `status` as VLA_ERR_INTERNAL with MuJoCo's message instead of
 * exiting. The statements must not return or break out; `status` must be
 * declared volatile (it lives across setjmp), and what they were writing
 * when MuJoCo failed is left for the caller to reset. */
typedef struct vla_mj_guard {
    jmp_buf jb;
    struct vla_mj_guard *prev;
} vla_mj_guard;
void vla_mj_guard_push(vla_mj_guard *g);
void vla_mj_guard_pop(vla_mj_guard *g);
const char *vla_mj_last_error(void);
#define VLA_MJ_TRY(status, what, ...)                                                                           \
    do {                                                                                                        \
        vla_mj_guard g_;                                                                                        \
        vla_mj_guard_push(&g_);                                                                                 \
        if (setjmp(g_.jb) == 0) {                                                                               \
            __VA_ARGS__;                                                                                        \
            vla_mj_guard_pop(&g_);                                                                              \
        } else {                                                                                                \
            vla_mj_guard_pop(&g_);                                                                              \
            (status) = vla_error(VLA_ERR_INTERNAL, "%s: MuJoCo: %s", (what), vla_mj_last_error());              \
        }                                                                                                       \
    } while (0)

/* Load an MJCF model: from `path`, or (path NULL) from the text `xml` under
 * the virtual file name `vname`. A missing file or a parse/compile error
 * fails with MuJoCo's message, which names the element and its line. */
vla_status vla_mj_load(const char *path, const char *xml, const char *vname, mjModel **out);

/* Render camera `cam_id` of model `m` in state `d` at width×height into
 * rgb (rows top first, `stride` bytes apart) with this thread's context.
 * `model_gen` identifies the model (a new value rebuilds the context's
 * uploaded assets). The size must fit the model's offscreen buffer
 * (<visual><global offwidth offheight>); *render_s (if not NULL) gets the
 * seconds spent in mjr_render + mjr_readPixels alone. */
vla_status vla_mj_render(const mjModel *m, mjData *d, uint64_t model_gen, int cam_id, int width, int height,
                         uint8_t *rgb, int stride, double *render_s);

#endif
