/* ops_checked.h — the `checked` backend (see ops_checked.c); reached
 * through the registry (backend.h). The hooks below exist for its tests. */
#ifndef VLA_TENSOR_OPS_CHECKED_H
#define VLA_TENSOR_OPS_CHECKED_H

#include <stddef.h>

#include "tensor/ops.h"

const vla_ops *vla_checked_backend_table(void);

/* Bytes of backend memory currently mapped, and how many regions. */
size_t vla_checked_mapped_bytes(void);
int vla_checked_regions(void);

#endif
