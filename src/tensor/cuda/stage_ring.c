/* stage_ring.c — staging ring bookkeeping (stage_ring.h). */
#include "tensor/cuda/stage_ring.h"

void vla_stage_ring_init(vla_stage_ring *r, size_t chunk_bytes, int n_chunks) {
    r->chunk_bytes = chunk_bytes / VLA_STAGE_ALIGN * VLA_STAGE_ALIGN;
    r->n_chunks = n_chunks < 2 ? 2 : n_chunks;
    r->cur = 0;
    r->used = 0;
}

vla_stage_take vla_stage_ring_take(vla_stage_ring *r, size_t bytes) {
    vla_stage_take t = {-1, -1, -1};
    size_t need = (bytes + VLA_STAGE_ALIGN - 1) / VLA_STAGE_ALIGN * VLA_STAGE_ALIGN;
    if (need == 0) need = VLA_STAGE_ALIGN;
    if (need > r->chunk_bytes) return t;
    if (r->used + need > r->chunk_bytes) {
        t.left = r->cur;
        r->cur = (r->cur + 1) % r->n_chunks;
        r->used = 0;
        t.entered = r->cur;
    }
    t.offset = (int64_t)((size_t)r->cur * r->chunk_bytes + r->used);
    r->used += need;
    return t;
}
