/* backend.c — the registry of op tables (backend.h): the only file that
 * names a concrete backend. */
#include "tensor/backend.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/checked/ops_checked.h"
#include "tensor/cpu/ops_cpu_internal.h"
#include "tensor/meta/ops_meta.h"
#ifdef VLA_HAVE_CUDA
#include "tensor/cuda/ops_cuda.h"
#endif

typedef const vla_ops *(*table_fn)(void);

static const struct {
    const char *name;
    table_fn table;
    vla_status (*probe)(void); /* NULL: runs anywhere */
} BACKENDS[] = {
    {"cpu", vla_cpu_backend_table, NULL},
    {"checked", vla_checked_backend_table, NULL},
#ifdef VLA_HAVE_CUDA
    {"cuda", vla_cuda_backend_table, vla_cuda_probe},
#endif
};
#define N_BACKENDS ((int)(sizeof BACKENDS / sizeof BACKENDS[0]))

/* LeRobot's habit (lerobot/utils/utils.py get_safe_torch_device / auto_select_torch_device: cuda when
 * torch.cuda.is_available()): the GPU when one is compiled in and usable here, else the CPU. Resolved
 * once; the probe of a cuda build on a machine without a GPU costs one failed cudaGetDeviceCount. */
const char *vla_backend_default_name(void) {
    const char *e = getenv("VLA_DEVICE");
    if (e && *e) return e;
    for (int i = 0; i < N_BACKENDS; i++)
        if (BACKENDS[i].probe && !strcmp(BACKENDS[i].name, "cuda"))
            return BACKENDS[i].probe() == VLA_OK ? "cuda" : VLA_BACKEND_DEFAULT;
    return VLA_BACKEND_DEFAULT;
}

const char *vla_backend_default_why(void) {
    const char *e = getenv("VLA_DEVICE");
    if (e && *e) return "$VLA_DEVICE";
    for (int i = 0; i < N_BACKENDS; i++)
        if (BACKENDS[i].probe && !strcmp(BACKENDS[i].name, "cuda"))
            return BACKENDS[i].probe() == VLA_OK ? "a usable GPU" : "no usable GPU here";
    return "no GPU backend in this build";
}

int vla_backend_count(void) { return N_BACKENDS; }

const char *vla_backend_name(int i) { return i >= 0 && i < N_BACKENDS ? BACKENDS[i].name : NULL; }

const vla_ops *vla_backend_find(const char *name) {
    for (int i = 0; name && i < N_BACKENDS; i++)
        if (!strcmp(name, BACKENDS[i].name)) return BACKENDS[i].table();
    return NULL;
}

vla_status vla_backend_probe(const char *name) {
    for (int i = 0; name && i < N_BACKENDS; i++)
        if (!strcmp(name, BACKENDS[i].name)) return BACKENDS[i].probe ? BACKENDS[i].probe() : VLA_OK;
    return vla_error(VLA_ERR_INVALID_ARG, "unknown device '%s'", name ? name : "(none)");
}

vla_status vla_backend_meta(const char *as, const vla_ops **out) {
    *out = NULL;
    if (as && !strcmp(as, "cuda")) *out = vla_meta_backend_table(VLA_META_AS_CUDA);
    else if (as && !strcmp(as, "checked")) *out = vla_meta_backend_table(VLA_META_AS_CHECKED);
    else if (as && !strcmp(as, "cpu")) *out = vla_meta_backend_table(VLA_META_AS_CPU);
    return *out ? VLA_OK
                : vla_error(VLA_ERR_INVALID_ARG, "memory measured as device '%s': only cuda, checked and cpu are known",
                            as ? as : "(none)");
}

vla_status vla_backend_get(const char *name, const vla_ops **out) {
    *out = vla_backend_find(name);
    if (*out) {
        vla_status st = vla_backend_probe(name);
        if (st != VLA_OK) *out = NULL;
        return st == VLA_OK ? VLA_OK : vla_error_context(st, "--device=%s", name);
    }
    char list[256] = "";
    for (int i = 0; i < N_BACKENDS; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, BACKENDS[i].name, sizeof list - strlen(list) - 1);
    }
    if (name && !strcmp(name, "cuda")) /* the one backend a build leaves out: say how to get it */
        return vla_error(VLA_ERR_INVALID_ARG, "unknown device 'cuda': this build has %s; build the cuda backend with "
                         "`make CUDA=1` (nvcc, cuBLASLt, NCCL; docs/cuda.md) and run build-cuda/vla", list);
    return vla_error(VLA_ERR_INVALID_ARG, "unknown device '%s': this build has %s", name ? name : "(none)", list);
}
