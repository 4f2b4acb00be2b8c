/* backend.h — the backends compiled into this build, by name: the one place
 * that names a concrete op table. Commands take `--device=NAME` (default
 * $VLA_DEVICE, else cuda when built in and usable, else "cpu"); tests run on the same default
 * (tests/test_util.h: test_backend).
 *
 *   cpu      OpenBLAS GEMMs cut into tiles by shape + OpenMP kernels;
 *            bitwise the same at any thread count (docs/design.md).
 *   checked  the cpu kernels, but the addresses of its memory are mapped
 *            PROT_NONE for the host (the ops reach the bytes through a
 *            second mapping): model code that touches a tensor without
 *            going through the table crashes (ops_checked.c). The suite a
 *            new backend must pass runs under it (`ctest -R checked`).
 *            $VLA_CHECKED_MEMORY_MIB gives it a device's capacity: beyond
 *            it alloc fails, and VLA_STAT_DEVICE_FREE_BYTES says what is
 *            left (the memory checks of vla train / bench / serve, tested).
 *   cuda     (built with `make CUDA=1`) NVIDIA GPUs: cuBLASLt GEMMs, our own
 *            packed attention kernels, NCCL; tensor/cuda/, docs/cuda.md.
 *   meta     (not a --device) the table with shapes and no data, sized as
 *            one of the above: what a step allocates, measured. */
#ifndef VLA_TENSOR_BACKEND_H
#define VLA_TENSOR_BACKEND_H

#include <stddef.h>

#include "base/status.h"
#include "tensor/ops.h"

#define VLA_BACKEND_DEFAULT "cpu"

/* The backend used when --device is not given, for every command: $VLA_DEVICE
 * when set (how the test suite runs whole commands on `checked`), else "cuda"
 * when compiled in and its probe finds a usable GPU (as LeRobot picks cuda),
 * else "cpu". */
const char *vla_backend_default_name(void);
/* Why the default is what it is, for info lines: "$VLA_DEVICE", "a usable
 * GPU", "no usable GPU here" or "no GPU backend in this build". */
const char *vla_backend_default_why(void);

/* The table named `name`, or NULL. */
const vla_ops *vla_backend_find(const char *name);
/* The same, checked usable here (vla_backend_probe), or an error naming the
 * backends compiled in (for --device). */
vla_status vla_backend_get(const char *name, const vla_ops **out);
/* VLA_OK when backend `name` can run on this machine (cuda: a usable GPU),
 * else an error saying why. Finding a table (vla_backend_find) needs no
 * device; running its ops does. */
vla_status vla_backend_probe(const char *name);
/* The `meta` table (tensor/meta/ops_meta.c: every op does nothing, memory is
 * address space alone) sized as backend `as` — "cuda" (in any build: its
 * sizing is plain C), "checked" or "cpu" — for measuring what a policy
 * allocates (policy/memory.h). Not a --device: nothing runs on it. */
vla_status vla_backend_meta(const char *as, const vla_ops **out);
/* Backends compiled in: count and names in registry order. */
int vla_backend_count(void);
const char *vla_backend_name(int i);

#endif
