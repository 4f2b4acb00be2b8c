/* backend.h — the backends compiled into this build, by name: the one place
 * that names a concrete op table. Commands take `--device=NAME` (default
 * $VLA_DEVICE, else "cpu"); tests run on the same default
 * (tests/test_util.h: test_backend).
 *
 *   cpu      OpenBLAS GEMMs cut into tiles by shape + OpenMP kernels;
 *            bitwise the same at any thread count (docs/design.md).
 *   checked  the cpu kernels, but the addresses of its memory are mapped
 *            PROT_NONE for the host (the ops reach the bytes through a
 *            second mapping): model code that touches a tensor without
 *            going through the table crashes (ops_checked.c). The suite a
 *            new backend must pass runs under it (`ctest -R checked`).
 *   cuda     (when built with CUDA=1) */
#ifndef VLA_TENSOR_BACKEND_H
#define VLA_TENSOR_BACKEND_H

#include <stddef.h>

#include "base/status.h"
#include "tensor/ops.h"

#define VLA_BACKEND_DEFAULT "cpu"

/* The backend used when --device is not given: $VLA_DEVICE when set, else
 * "cpu" (how the test suite runs whole commands on `checked`). */
const char *vla_backend_default_name(void);

/* The table named `name`, or NULL. */
const vla_ops *vla_backend_find(const char *name);
/* The same, or an error naming the backends compiled in (for --device). */
vla_status vla_backend_get(const char *name, const vla_ops **out);
/* Backends compiled in: count and names in registry order. */
int vla_backend_count(void);
const char *vla_backend_name(int i);

#endif
