/* tensor.h — the tensor descriptor: where the data is, its element type,
 * shape and strides. A descriptor never owns memory; arenas and files do. */
#ifndef VLA_TENSOR_TENSOR_H
#define VLA_TENSOR_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"

#define VLA_MAX_DIMS 8

typedef enum { VLA_DEVICE_CPU, VLA_DEVICE_CUDA } vla_device;

typedef struct {
    void *data;
    vla_dtype dtype;
    vla_device device;
    int ndim;
    int64_t shape[VLA_MAX_DIMS];
    int64_t stride[VLA_MAX_DIMS]; /* in elements, not bytes */
} vla_tensor;

/* Contiguous (row-major) CPU descriptor over `data`. */
vla_tensor vla_tensor_make(void *data, vla_dtype dtype, int ndim, const int64_t *shape);
/* Shorthands for 1-D/2-D/3-D f32. */
vla_tensor vla_tensor_f32_1d(float *data, int64_t n0);
vla_tensor vla_tensor_f32_2d(float *data, int64_t n0, int64_t n1);
vla_tensor vla_tensor_f32_3d(float *data, int64_t n0, int64_t n1, int64_t n2);

int64_t vla_tensor_numel(const vla_tensor *t);
size_t vla_tensor_nbytes(const vla_tensor *t);
bool vla_tensor_is_contiguous(const vla_tensor *t);
bool vla_tensor_same_shape(const vla_tensor *a, const vla_tensor *b);
/* View with dims d0 and d1 swapped (no copy). */
vla_tensor vla_tensor_transpose(const vla_tensor *t, int d0, int d1);
/* View of rows [start, start+len) of dim 0. */
vla_tensor vla_tensor_narrow0(const vla_tensor *t, int64_t start, int64_t len);
/* Contiguous view with a new shape of the same element count. */
vla_status vla_tensor_reshape(const vla_tensor *t, int ndim, const int64_t *shape, vla_tensor *out);
/* "f32[2, 3]" into buf. */
const char *vla_tensor_describe(const vla_tensor *t, char *buf, size_t cap);

#endif
