/* arena.h — bump allocators with one clear lifetime (model, step, batch).
 *
 * An arena hands out aligned blocks from large chunks and frees them all at
 * once. Growth adds a new chunk (blocks never move), so pointers stay valid
 * until vla_arena_reset() or vla_arena_free(). A mark/rewind pair lets a
 * step release its scratch without touching what came before it. */
#ifndef VLA_BASE_ARENA_H
#define VLA_BASE_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct vla_arena_chunk vla_arena_chunk;

typedef struct {
    vla_arena_chunk *head;  /* most recent chunk */
    size_t chunk_size;      /* default size of a new chunk */
    size_t used_total;      /* bytes handed out (with alignment padding) */
    size_t peak;            /* high-water mark of used_total */
    /* where chunks' memory comes from (NULL: malloc, header and data in one
     * block); see vla_arena_init_with */
    void *(*chunk_alloc)(size_t bytes);
    void (*chunk_free)(void *p);
} vla_arena;

typedef struct {
    vla_arena_chunk *chunk;
    size_t offset;
    size_t used_total;
} vla_arena_mark;

/* chunk_size 0 picks 1 MiB. Nothing is allocated until the first alloc. */
void vla_arena_init(vla_arena *a, size_t chunk_size);
/* An arena whose chunks' memory comes from `alloc`/`free` (a backend's
 * device memory: tensor/ops.h). The arena never reads or writes that
 * memory — chunk headers live in host memory — so vla_arena_calloc and
 * vla_arena_strdup are not for such arenas. Blocks are 64-byte aligned at
 * most (alloc's alignment). */
void vla_arena_init_with(vla_arena *a, size_t chunk_size, void *(*alloc)(size_t), void (*free_fn)(void *));
/* Aligned block (align a power of two, ≥ 1) or NULL when memory runs out. */
void *vla_arena_alloc(vla_arena *a, size_t size, size_t align);
/* Zeroed block. */
void *vla_arena_calloc(vla_arena *a, size_t size, size_t align);
char *vla_arena_strdup(vla_arena *a, const char *s);
vla_arena_mark vla_arena_get_mark(const vla_arena *a);
/* Where the next block (align) would start, nothing kept: what decides the addresses of the
 * allocations that follow (a captured region's key, tensor/ops.h); NULL when memory runs out. */
const void *vla_arena_next_block(vla_arena *a, size_t align);
/* Bytes the current chunk can still hand out (0: none yet): allocations
 * that add up to no more than this, alignment padding included, need no
 * new chunk. */
size_t vla_arena_room(const vla_arena *a);
/* Release everything allocated after `m` (later chunks are freed). */
void vla_arena_rewind(vla_arena *a, vla_arena_mark m);
/* The other way: from `from` (the arena's position now) forward to `to`, a
 * mark taken after some allocations were made from `from` before, in the
 * same chunk — as if they were made again: what a replayed captured
 * region's caller does for the allocations its body would have made
 * (policy/region.h). false, and nothing changes, when the arena is not at
 * `from` or `to` is not ahead of it in the current chunk. */
bool vla_arena_advance(vla_arena *a, vla_arena_mark from, vla_arena_mark to);
/* Release everything and make the next chunk `chunk_size` bytes (the
 * high-water mark of a step, so later steps of that shape allocate nothing);
 * keeps the allocator. */
void vla_arena_rebuild(vla_arena *a, size_t chunk_size);
/* Start a new call's lifetime (a policy's forward + backward, a chunk):
 * reset, and once a call has needed more than one chunk, rebuild with one
 * chunk of its high-water mark plus headroom for a somewhat larger batch —
 * an eighth, at most 256 MiB (a device's activation arena runs to tens of
 * GiB; a larger call just adds a chunk, and the next call rebuilds) — which
 * reset keeps, so later calls of about that size allocate nothing. */
void vla_arena_begin_call(vla_arena *a);
/* Release everything; keeps the first chunk for reuse. */
void vla_arena_reset(vla_arena *a);
void vla_arena_free(vla_arena *a);

#endif
