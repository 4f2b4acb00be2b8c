/* stage_ring.h — the bookkeeping of a staging ring: how the cuda backend
 * uploads per-call host metadata (cu_seqlens, groups, index maps, masks)
 * without a synchronisation per op. A pinned host buffer and a device
 * buffer of the same size are cut into chunks; small uploads take
 * consecutive 256-byte-aligned regions of the current chunk (memcpy into
 * the pinned region, one asynchronous copy to the device region on the
 * compute stream, the kernel reads the device region). When a chunk is full
 * the ring moves to the next one and records an event for the chunk it
 * left; before it writes into a chunk again it waits for that chunk's event
 * — by then every copy from it and every kernel that read it has finished,
 * since they were issued on the same stream before the event. In steady
 * state the wait is one chunk's worth of work in the past: free.
 *
 * This file is the pure logic (plain C, tested on the CPU:
 * tests/tensor/test_stage_ring.c); tensor/cuda/context.cu owns the memory
 * and the events. */
#ifndef VLA_TENSOR_STAGE_RING_H
#define VLA_TENSOR_STAGE_RING_H

#include <stddef.h>
#include <stdint.h>

#define VLA_STAGE_ALIGN 256

typedef struct {
    size_t chunk_bytes;
    int n_chunks;
    int cur;     /* chunk in use */
    size_t used; /* bytes taken from it */
} vla_stage_ring;

void vla_stage_ring_init(vla_stage_ring *r, size_t chunk_bytes, int n_chunks);

/* What a take asks of its caller, in this order: record the event of chunk
 * `left` (when >= 0), then wait for the event of chunk `entered` (when >= 0;
 * a chunk never used has no event to wait for). */
typedef struct {
    int64_t offset; /* into the ring (bytes); −1: larger than a chunk — the caller uploads another way */
    int left, entered;
} vla_stage_take;

vla_stage_take vla_stage_ring_take(vla_stage_ring *r, size_t bytes);

#endif
