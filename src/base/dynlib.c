/* dynlib.c — loading a library at its first use (base/dynlib.h says why). */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* pthread_once takes no argument: the library being loaded is handed over in
 * this thread-local (set just before the call, on the calling thread, which
 * is the one that runs the init routine). */
static _Thread_local vla_dynlib *loading;

static void load_once(void) {
    vla_dynlib *lib = loading;
    enum { MAX_HANDLES = 8 };
    void *handles[MAX_HANDLES];
    size_t n = 0;
    for (const char *const *so = lib->sonames; *so; so++) {
        /* GLOBAL: Open MPI's plugins resolve libmpi's symbols from the global
         * scope, and MuJoCo's renderer finds OSMesa's GL there
         * (sim/mj_render.c); LAZY: as the linked build bound them. */
        void *h = dlopen(*so, RTLD_LAZY | RTLD_GLOBAL);
        if (!h) {
            const char *why = dlerror();
            snprintf(lib->error, sizeof lib->error, "%s could not be loaded (%s): install %s (sudo scripts/setup.sh build)",
                     lib->what, why ? why : *so, lib->package);
            return;
        }
        if (n == MAX_HANDLES) {
            snprintf(lib->error, sizeof lib->error, "%s: more than %d libraries to load (base/dynlib.c)", lib->what,
                     MAX_HANDLES);
            return;
        }
        handles[n++] = h;
    }
    for (size_t i = 0; i < lib->n_names; i++) {
        void *addr = NULL;
        for (size_t k = 0; k < n && !addr; k++) addr = dlsym(handles[k], lib->names[i]);
        if (!addr) {
            snprintf(lib->error, sizeof lib->error,
                     "%s was loaded but lacks %s: this build of vla.c expects the version of %s it was compiled against",
                     lib->what, lib->names[i], lib->package);
            return;
        }
        lib->slots[i] = addr;
    }
    __atomic_store_n(&lib->ready, 1, __ATOMIC_RELEASE);
}

bool vla_dynlib_loaded(vla_dynlib *lib) { return __atomic_load_n(&lib->ready, __ATOMIC_ACQUIRE) != 0; }

vla_status vla_dynlib_require(vla_dynlib *lib) {
    if (vla_dynlib_loaded(lib)) return VLA_OK;
    loading = lib;
    pthread_once(&lib->once, load_once);
    loading = NULL;
    if (vla_dynlib_loaded(lib)) return VLA_OK;
    return vla_error(VLA_ERR_UNSUPPORTED, "%s", lib->error);
}

void vla_dynlib_need_slow(vla_dynlib *lib) {
    if (vla_dynlib_require(lib) == VLA_OK) return;
    fprintf(stderr, "vla: %s\n", lib->error);
    exit(1);
}
