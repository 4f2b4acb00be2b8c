/* dynlib.h — a library loaded at its first use instead of at process start.
 *
 * Why: FFmpeg, cairo, MuJoCo and Open MPI bring ~150 shared objects with
 * them. Linked normally, every `vla` process maps and relocates all of them
 * before main() (~90 ms of a 100 ms `vla --help`; twice that under ASan,
 * whose leak checker scans each one's globals again at exit), and a robot
 * linking libvla.so for inference would need them installed. Loaded here,
 * only the processes that decode video, draw, simulate or launch under
 * mpirun pay for them.
 *
 * How (one header per library: io/ffmpeg_api.h, io/cairo_api.h,
 * sim/mujoco_api.h, distributed/mpi_api.h): the header includes the
 * library's own headers, lists the symbols vla.c uses in an X-macro, builds
 * a struct of pointers typed with __typeof__ of each declaration (so no
 * signature is written twice), and redirects each name to its slot with a
 * macro (`#define cairo_fill (vla_cairo()->cairo_fill)`), so call sites read
 * as plain library calls. A name used without a redirect fails to link,
 * because the library is no longer on the link line.
 *
 * The first use loads the library (thread-safe, once). Entry points that can
 * return an error call vla_dynlib_require() first, so a missing library is a
 * message saying what to install; a call that skipped that check and finds
 * the library missing prints the same message and exits (status 1). */
#ifndef VLA_BASE_DYNLIB_H
#define VLA_BASE_DYNLIB_H

#include "base/status.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *what;           /* "FFmpeg": how messages name it */
    const char *package;        /* Debian packages that provide it, for the hint */
    const char *const *sonames; /* NULL-terminated; each is loaded, in order */
    const char *const *names;   /* the symbols, each looked up in the sonames' handles in turn */
    size_t n_names;
    void **slots;               /* n_names pointers (a table whose fields are all pointers, in names' order) */
    /* state, zero-initialised */
    pthread_once_t once;
    int ready;       /* 1 once every symbol is resolved (read with acquire) */
    char error[512]; /* why loading failed, when it did */
} vla_dynlib;

#define VLA_DYNLIB_INIT(what_, package_, sonames_, names_, table_)                                                 \
    {(what_), (package_), (sonames_), (names_), sizeof(names_) / sizeof((names_)[0]), (void **)(table_),            \
     PTHREAD_ONCE_INIT, 0, {0}}

/* The table's field for one symbol, and its name, for the X-macros. */
#define VLA_DYNLIB_FIELD(sym) __typeof__(sym) *sym;
#define VLA_DYNLIB_NAME(sym) #sym,

/* What a library's header declares (io/cairo_api.h: VLA_DYNLIB_DECLARE(cairo,
 * VLA_CAIRO_SYMBOLS)): the table `struct vla_NAME_api` with one pointer per
 * symbol, the loader `vla_NAME_lib`, `vla_NAME()` — the table, the library
 * loaded or the process ended with the reason — and `vla_NAME_require()` —
 * VLA_OK once loaded, else an error saying what to install. */
#define VLA_DYNLIB_DECLARE(name, SYMBOLS)                                                                          \
    struct vla_##name##_api {                                                                                      \
        SYMBOLS(VLA_DYNLIB_FIELD)                                                                                  \
    };                                                                                                             \
    extern struct vla_##name##_api vla_##name##_api_table;                                                         \
    extern vla_dynlib vla_##name##_lib;                                                                            \
    static inline const struct vla_##name##_api *vla_##name(void) {                                               \
        vla_dynlib_need(&vla_##name##_lib);                                                                        \
        return &vla_##name##_api_table;                                                                            \
    }                                                                                                              \
    static inline vla_status vla_##name##_require(void) { return vla_dynlib_require(&vla_##name##_lib); }

/* What its .c defines (io/cairo_api.c), with the header included under
 * VLA_<NAME>_API_IMPL (no redirects): the table and its loader, opening the
 * sonames given last (strings) and naming WHAT and PACKAGE in messages. */
#define VLA_DYNLIB_DEFINE(name, SYMBOLS, what, package, ...)                                                        \
    struct vla_##name##_api vla_##name##_api_table;                                                                \
    static const char *const vla_##name##_names[] = {SYMBOLS(VLA_DYNLIB_NAME)};                                    \
    _Static_assert(sizeof(struct vla_##name##_api) == sizeof vla_##name##_names / sizeof(char *) * sizeof(void *), \
                   "every field of the table is one pointer");                                                    \
    static const char *const vla_##name##_sonames[] = {__VA_ARGS__, NULL};                                         \
    vla_dynlib vla_##name##_lib =                                                                                  \
        VLA_DYNLIB_INIT(what, package, vla_##name##_sonames, vla_##name##_names, &vla_##name##_api_table)

/* Load `lib` if not yet loaded: VLA_OK, or VLA_ERR_UNSUPPORTED with a message
 * naming the library, the loader's reason and the package to install. */
vla_status vla_dynlib_require(vla_dynlib *lib);

/* Whether `lib` has been loaded in this process (never loads it). */
bool vla_dynlib_loaded(vla_dynlib *lib);

/* vla_dynlib_require, or the message on stderr and exit(1). */
void vla_dynlib_need_slow(vla_dynlib *lib);
static inline void vla_dynlib_need(vla_dynlib *lib) {
    if (!__atomic_load_n(&lib->ready, __ATOMIC_ACQUIRE)) vla_dynlib_need_slow(lib);
}

#endif
