/* mj_render.c — MuJoCo error handling, model loading and OSMesa offscreen
 * rendering for the 3-D environments (see mj_render.h). */
#include "sim/mj_render.h"

#include <GL/osmesa.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/timer.h"

/* ---- errors and warnings --------------------------------------------------- */

static _Thread_local vla_mj_guard *guard_top;
static _Thread_local char last_error[512];

static void on_error(const char *msg) {
    snprintf(last_error, sizeof last_error, "%s", msg);
    if (guard_top) longjmp(guard_top->jb, 1);
    /* an error outside any guarded call is a bug in the caller: MuJoCo cannot continue */
    fprintf(stderr, "vla: internal error: MuJoCo: %s\n", msg);
    abort();
}

/* MuJoCo also counts each warning in mjData.warning, where the envs look;
 * the text goes to the log (stderr) once per distinct message kind, never to
 * stdout where MuJoCo would print it. */
static void on_warning(const char *msg) {
    static _Thread_local int said;
    if (said++ < 3) VLA_WARN("MuJoCo: %s", msg);
}

static void init_once(void) {
    mju_user_error = on_error;
    mju_user_warning = on_warning;
    setenv("LP_NUM_THREADS", "0", 0); /* see mj_render.h; a user's setting wins */
}

void vla_mj_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
}

void vla_mj_guard_push(vla_mj_guard *g) {
    vla_mj_init();
    g->prev = guard_top;
    guard_top = g;
}
void vla_mj_guard_pop(vla_mj_guard *g) { guard_top = g->prev; }
const char *vla_mj_last_error(void) { return last_error; }

/* ---- loading ---------------------------------------------------------------- */

/* MuJoCo's messages end in a newline and may span lines ("Error: …\nElement
 * 'geom', line 12"); one line reads better after "file: ". */
static void one_line(char *s, size_t cap) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
    for (char *p = s; *p; p++)
        if (*p == '\n') *p = ' ';
    /* tinyxml2's parse errors say "Line number=N"; MuJoCo's own "line N" */
    char *ln = strstr(s, "Line number=");
    if (ln) {
        char tail[1024];
        snprintf(tail, sizeof tail, "line %s", ln + 12);
        snprintf(ln, cap - (size_t)(ln - s), "%s", tail);
    }
}

vla_status vla_mj_load(const char *path, const char *xml, const char *vname, mjModel **out) {
    *out = NULL;
    VLA_TRY(vla_mujoco_require()); /* MuJoCo missing: what to install, not an exit (base/dynlib.h) */
    vla_mj_init();
    char err[1024] = "";
    mjModel *m = NULL;
    volatile vla_status st = VLA_OK;
    if (path) {
        struct stat sb;
        if (stat(path, &sb) != 0) return vla_error(VLA_ERR_IO, "%s: cannot open the model file (missing?)", path);
        if (!S_ISREG(sb.st_mode)) return vla_error(VLA_ERR_IO, "%s: the model file is not a regular file", path);
        VLA_MJ_TRY(st, path, m = mj_loadXML(path, NULL, err, sizeof err));
    } else {
        mjVFS *vfs = calloc(1, sizeof *vfs); /* ~2 MB of file-name slots: not for the stack */
        if (!vfs) return vla_error(VLA_ERR_NOMEM, "%s: out of memory", vname);
        mj_defaultVFS(vfs);
        int len = (int)strlen(xml);
        if (mj_makeEmptyFileVFS(vfs, vname, len) != 0) {
            free(vfs);
            return vla_error(VLA_ERR_INTERNAL, "%s: cannot make a MuJoCo virtual file", vname);
        }
        int i = mj_findFileVFS(vfs, vname);
        memcpy(vfs->filedata[i], xml, (size_t)len);
        VLA_MJ_TRY(st, vname, m = mj_loadXML(vname, vfs, err, sizeof err));
        mj_deleteVFS(vfs);
        free(vfs);
    }
    if (st != VLA_OK) return st;
    if (!m) {
        one_line(err, sizeof err);
        return vla_error(VLA_ERR_FORMAT, "%s: %s", path ? path : vname, err[0] ? err : "MuJoCo could not load it");
    }
    *out = m;
    return VLA_OK;
}

/* ---- rendering ----------------------------------------------------------------- */

/* OSMesa, loaded on the first render rather than linked: Mesa brings
 * libLLVM (382k relocations) and libz3, which cost every `vla` process
 * ~80 ms of CPU at start (measured: an empty program linked with -lOSMesa,
 * 20 starts, 1.83 s against 0.21 s) though only a 3-D environment's
 * cameras use them. RTLD_GLOBAL: MuJoCo finds the GL entry points of the
 * library it dlopens itself (the same file, so the same handle) through
 * OSMesaGetProcAddress, as when it was linked. */
static struct {
    OSMesaContext (*create_context_ext)(GLenum, GLint, GLint, GLint, OSMesaContext);
    GLboolean (*make_current)(OSMesaContext, void *, GLenum, GLsizei, GLsizei);
    void (*destroy_context)(OSMesaContext);
    char error[512]; /* why loading failed ("" when it did not) */
} osmesa;

static void osmesa_load(void) {
    void *h = dlopen("libOSMesa.so.8", RTLD_NOW | RTLD_GLOBAL);
    if (!h) h = dlopen("libOSMesa.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(osmesa.error, sizeof osmesa.error, "%s", dlerror());
        return;
    }
    *(void **)&osmesa.create_context_ext = dlsym(h, "OSMesaCreateContextExt");
    *(void **)&osmesa.make_current = dlsym(h, "OSMesaMakeCurrent");
    *(void **)&osmesa.destroy_context = dlsym(h, "OSMesaDestroyContext");
    if (!osmesa.create_context_ext || !osmesa.make_current || !osmesa.destroy_context)
        snprintf(osmesa.error, sizeof osmesa.error, "libOSMesa lacks OSMesaCreateContextExt/MakeCurrent/DestroyContext");
}

static vla_status osmesa_ready(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, osmesa_load);
    if (osmesa.error[0])
        return vla_error(VLA_ERR_UNSUPPORTED, "render: cannot load OSMesa (%s); the 3-D environments' cameras need "
                         "it: apt-get install libosmesa6 (scripts/setup.sh build)", osmesa.error);
    return VLA_OK;
}

/* This thread's GL context and MuJoCo's render state for one model. */
typedef struct view {
    OSMesaContext gl;
    uint8_t *glbuf; /* OSMesa's window buffer; MuJoCo draws into its own offscreen FBO */
    mjrContext con;
    mjvScene scn;
    mjvOption opt;
    uint64_t gen;   /* the model these were made for (0: none) */
    bool ready;
    struct view *next; /* every live view, for the exit handler */
} view;

static pthread_key_t view_key;
/* Every thread's view: at exit the handler frees them all (a thread pool's
 * threads outlive main, so their key destructors never run), leaving Mesa
 * nothing of ours to report as leaked. */
static pthread_mutex_t views_lock = PTHREAD_MUTEX_INITIALIZER;
static view *views;

static void view_destroy(view *v) {
    if (v->gl && osmesa.make_current(v->gl, v->glbuf, GL_UNSIGNED_BYTE, 16, 16)) {
        if (v->ready) mjr_freeContext(&v->con);
    }
    if (v->ready) mjv_freeScene(&v->scn);
    /* unbind first: the window buffer a current context holds is freed only then */
    if (osmesa.make_current) osmesa.make_current(NULL, NULL, 0, 0, 0);
    if (v->gl) osmesa.destroy_context(v->gl);
    free(v->glbuf);
    free(v);
}

static void view_unlink(view *v) {
    pthread_mutex_lock(&views_lock);
    for (view **p = &views; *p; p = &(*p)->next)
        if (*p == v) {
            *p = v->next;
            break;
        }
    pthread_mutex_unlock(&views_lock);
}

/* A thread ends: its view goes. */
static void view_free(void *p) {
    if (!p) return;
    view_unlink(p);
    view_destroy(p);
}

static void free_all_views(void) {
    pthread_mutex_lock(&views_lock);
    view *v = views;
    views = NULL;
    pthread_mutex_unlock(&views_lock);
    while (v) {
        view *next = v->next;
        view_destroy(v);
        v = next;
    }
    pthread_setspecific(view_key, NULL);
}

static void key_once(void) { pthread_key_create(&view_key, view_free); }

/* Registered after Mesa's first context exists, so that it runs before Mesa's
 * own exit handlers (atexit runs last-registered first): those stop the
 * driver's worker threads, and a context destroyed after them crashes. */
static void exit_handler_once(void) { atexit(free_all_views); }

/* mjr_makeContext loads GL entry points into MuJoCo's process-wide table;
 * serialise it so two threads never fill that table at once. */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static vla_status view_get(const mjModel *m, uint64_t gen, view **out) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, key_once);
    VLA_TRY(osmesa_ready());
    view *v = pthread_getspecific(view_key);
    if (!v) {
        if (!(v = calloc(1, sizeof *v)) || !(v->glbuf = calloc(16 * 16, 4))) {
            free(v);
            return vla_error(VLA_ERR_NOMEM, "render: out of memory");
        }
        v->gl = osmesa.create_context_ext(OSMESA_RGBA, 24, 8, 0, NULL);
        if (!v->gl) {
            view_free(v);
            return vla_error(VLA_ERR_UNSUPPORTED, "render: OSMesa could not create a GL context (libosmesa6 missing or "
                             "broken?)");
        }
        static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
        pthread_once(&exit_once, exit_handler_once);
        pthread_setspecific(view_key, v);
        pthread_mutex_lock(&views_lock);
        v->next = views, views = v;
        pthread_mutex_unlock(&views_lock);
    }
    if (!osmesa.make_current(v->gl, v->glbuf, GL_UNSIGNED_BYTE, 16, 16))
        return vla_error(VLA_ERR_UNSUPPORTED, "render: OSMesaMakeCurrent failed");
    if (v->ready && v->gen != gen) {
        mjr_freeContext(&v->con);
        mjv_freeScene(&v->scn);
        v->ready = false;
    }
    if (!v->ready) {
        volatile vla_status st = VLA_OK;
        pthread_mutex_lock(&make_lock);
        mjv_defaultScene(&v->scn);
        mjr_defaultContext(&v->con);
        VLA_MJ_TRY(st, "render", {
            mjv_makeScene(m, &v->scn, 2000);
            mjr_makeContext(m, &v->con, mjFONTSCALE_100);
            mjr_setBuffer(mjFB_OFFSCREEN, &v->con);
        });
        pthread_mutex_unlock(&make_lock);
        if (st != VLA_OK) return st;
        if (v->con.currentBuffer != mjFB_OFFSCREEN)
            return vla_error(VLA_ERR_UNSUPPORTED, "render: no offscreen framebuffer in this GL context");
        mjv_defaultOption(&v->opt);
        v->gen = gen, v->ready = true;
    }
    *out = v;
    return VLA_OK;
}

vla_status vla_mj_render(const mjModel *m, mjData *d, uint64_t model_gen, int cam_id, int width, int height,
                         uint8_t *rgb, int stride, double *render_s) {
    if (cam_id < 0 || cam_id >= m->ncam) return vla_error(VLA_ERR_INVALID_ARG, "render: camera id %d out of range", cam_id);
    if (width > m->vis.global.offwidth || height > m->vis.global.offheight)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "render: %dx%d is larger than the model's offscreen buffer %dx%d (<visual><global "
                         "offwidth offheight>)",
                         width, height, m->vis.global.offwidth, m->vis.global.offheight);
    view *v;
    VLA_TRY(view_get(m, model_gen, &v));
    mjvCamera cam;
    mjv_defaultCamera(&cam);
    cam.type = mjCAMERA_FIXED, cam.fixedcamid = cam_id;
    volatile vla_status st = VLA_OK;
    double t0 = 0, t1 = 0;
    /* MuJoCo reads pixels bottom row first, packed (GL_PACK_ALIGNMENT 1) */
    uint8_t *tmp = stride == width * 3 ? rgb : malloc((size_t)width * height * 3);
    if (!tmp) return vla_error(VLA_ERR_NOMEM, "render: out of memory");
    VLA_MJ_TRY(st, "render", {
        mjv_updateScene(m, d, &v->opt, NULL, &cam, mjCAT_ALL, &v->scn);
        mjrRect vp = {0, 0, width, height};
        t0 = vla_now_s();
        mjr_render(vp, &v->scn, &v->con);
        mjr_readPixels(tmp, NULL, vp, &v->con);
        t1 = vla_now_s();
    });
    if (st == VLA_OK) {
        /* flip to rows top first, in place or into the strided buffer */
        size_t row = (size_t)width * 3;
        uint8_t line[8192 * 3];
        for (int y = 0; y < height / 2 && tmp == rgb; y++) {
            uint8_t *a = rgb + (size_t)y * row, *b = rgb + (size_t)(height - 1 - y) * row;
            memcpy(line, a, row), memcpy(a, b, row), memcpy(b, line, row);
        }
        if (tmp != rgb)
            for (int y = 0; y < height; y++) memcpy(rgb + (size_t)y * stride, tmp + (size_t)(height - 1 - y) * row, row);
        if (render_s) *render_s = t1 - t0;
    }
    if (tmp != rgb) free(tmp);
    return st;
}
