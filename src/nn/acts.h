/* acts.h — size tables (llm.c style): a set of named f32 tensors whose sizes
 * are computed once, carved from one allocation, each 64-byte aligned.
 *
 * A module lists its tensors once as an X-macro, X(name, floats), and gets
 * from it the struct of pointers (VLA_ACTS_FIELD), the size array
 * (VLA_ACTS_SIZE) and the carving:
 *
 *   #define MY_ACTS(X) X(h, n * D) X(rstd, n)
 *   typedef struct { MY_ACTS(VLA_ACTS_FIELD) } my_acts;
 *   const int64_t sizes[] = {MY_ACTS(VLA_ACTS_SIZE)};
 *   float *buf = …vla_acts_total(sizes, VLA_ACTS_COUNT(sizes)) floats…;
 *   vla_acts_carve(sizes, VLA_ACTS_COUNT(sizes), buf, (float **)&acts);
 *
 * A tensor of size 0 gets a NULL pointer. */
#ifndef VLA_NN_ACTS_H
#define VLA_NN_ACTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"

#define VLA_ACTS_FIELD(name, size) float *name;
#define VLA_ACTS_FIELD_I32(name, size) int32_t *name;
#define VLA_ACTS_SIZE(name, size) (size),
#define VLA_ACTS_COUNT(sizes) ((int)(sizeof(sizes) / sizeof((sizes)[0])))

/* Floats of the whole table (each tensor rounded up to 16 floats = 64 bytes). */
static inline int64_t vla_acts_total(const int64_t *sizes, int count) {
    int64_t t = 0;
    for (int i = 0; i < count; i++) t += (sizes[i] + 15) & ~(int64_t)15;
    return t;
}

/* Point ptrs[i] into buf (64-byte aligned) in table order. */
static inline void vla_acts_carve(const int64_t *sizes, int count, float *buf, float **ptrs) {
    for (int i = 0; i < count; i++) {
        ptrs[i] = sizes[i] > 0 ? buf : NULL;
        buf += (sizes[i] + 15) & ~(int64_t)15;
    }
}

/* The same for a table of int32 index arrays. */
static inline void vla_acts_carve_i32(const int64_t *sizes, int count, int32_t *buf, int32_t **ptrs) {
    for (int i = 0; i < count; i++) {
        ptrs[i] = sizes[i] > 0 ? buf : NULL;
        buf += (sizes[i] + 15) & ~(int64_t)15;
    }
}

/* One arena allocation holding the whole table, carved into ptrs
 * (VLA_ERR_NOMEM, naming the size, when the arena cannot grow). */
static inline vla_status vla_acts_from_arena(vla_arena *a, const int64_t *sizes, int count, float **ptrs) {
    int64_t total = vla_acts_total(sizes, count);
    float *buf = (float *)vla_arena_alloc(a, (size_t)(total > 0 ? total : 1) * sizeof(float), 64);
    if (!buf) {
        for (int i = 0; i < count; i++) ptrs[i] = NULL;
        return vla_error(VLA_ERR_NOMEM, "out of activation memory (%lld floats)", (long long)total);
    }
    vla_acts_carve(sizes, count, buf, ptrs);
    return VLA_OK;
}

static inline vla_status vla_acts_from_arena_i32(vla_arena *a, const int64_t *sizes, int count, int32_t **ptrs) {
    int64_t total = vla_acts_total(sizes, count);
    int32_t *buf = (int32_t *)vla_arena_alloc(a, (size_t)(total > 0 ? total : 1) * sizeof(int32_t), 64);
    if (!buf) {
        for (int i = 0; i < count; i++) ptrs[i] = NULL;
        return vla_error(VLA_ERR_NOMEM, "out of memory for index arrays (%lld)", (long long)total);
    }
    vla_acts_carve_i32(sizes, count, buf, ptrs);
    return VLA_OK;
}

#endif
