/* tensor.c — descriptor helpers: construction, views, shape checks. */
#include "tensor/tensor.h"

#include <stdio.h>
#include <string.h>

vla_tensor vla_tensor_make(void *data, vla_dtype dtype, int ndim, const int64_t *shape) {
    vla_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.device = VLA_DEVICE_CPU;
    t.ndim = ndim < 0 ? 0 : ndim > VLA_MAX_DIMS ? VLA_MAX_DIMS : ndim;
    int64_t stride = 1;
    for (int i = t.ndim - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.stride[i] = stride;
        stride *= shape[i];
    }
    return t;
}

vla_tensor vla_tensor_f32_1d(float *data, int64_t n0) { return vla_tensor_make(data, VLA_F32, 1, &n0); }
vla_tensor vla_tensor_f32_2d(float *data, int64_t n0, int64_t n1) {
    int64_t s[2] = {n0, n1};
    return vla_tensor_make(data, VLA_F32, 2, s);
}
vla_tensor vla_tensor_f32_3d(float *data, int64_t n0, int64_t n1, int64_t n2) {
    int64_t s[3] = {n0, n1, n2};
    return vla_tensor_make(data, VLA_F32, 3, s);
}

int64_t vla_tensor_numel(const vla_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t vla_tensor_nbytes(const vla_tensor *t) { return (size_t)vla_tensor_numel(t) * vla_dtype_size(t->dtype); }

bool vla_tensor_is_contiguous(const vla_tensor *t) {
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != stride) return false;
        stride *= t->shape[i];
    }
    return true;
}

bool vla_tensor_same_shape(const vla_tensor *a, const vla_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

vla_tensor vla_tensor_transpose(const vla_tensor *t, int d0, int d1) {
    vla_tensor r = *t;
    if (d0 < 0 || d1 < 0 || d0 >= t->ndim || d1 >= t->ndim) return r;
    r.shape[d0] = t->shape[d1];
    r.shape[d1] = t->shape[d0];
    r.stride[d0] = t->stride[d1];
    r.stride[d1] = t->stride[d0];
    return r;
}

vla_tensor vla_tensor_narrow0(const vla_tensor *t, int64_t start, int64_t len) {
    vla_tensor r = *t;
    if (t->ndim == 0) return r;
    r.data = (char *)t->data + (size_t)(start * t->stride[0]) * vla_dtype_size(t->dtype);
    r.shape[0] = len;
    return r;
}

vla_status vla_tensor_reshape(const vla_tensor *t, int ndim, const int64_t *shape, vla_tensor *out) {
    char buf[128];
    if (!vla_tensor_is_contiguous(t))
        return vla_error(VLA_ERR_INVALID_ARG, "reshape of non-contiguous tensor %s",
                         vla_tensor_describe(t, buf, sizeof buf));
    if (ndim < 0 || ndim > VLA_MAX_DIMS) return vla_error(VLA_ERR_INVALID_ARG, "reshape to %d dims", ndim);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (n != vla_tensor_numel(t))
        return vla_error(VLA_ERR_INVALID_ARG, "reshape of %s to %lld elements",
                         vla_tensor_describe(t, buf, sizeof buf), (long long)n);
    *out = vla_tensor_make(t->data, t->dtype, ndim, shape);
    out->device = t->device;
    return VLA_OK;
}

const char *vla_tensor_describe(const vla_tensor *t, char *buf, size_t cap) {
    size_t off = (size_t)snprintf(buf, cap, "%s[", vla_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (off < cap) snprintf(buf + off, cap - off, "]");
    return buf;
}
