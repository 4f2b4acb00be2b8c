/* arena.c — chunked bump allocator (see arena.h). */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A chunk: its header, and `data` — right after the header (malloc arenas)
 * or a separate block from the arena's allocator (device memory). */
struct vla_arena_chunk {
    vla_arena_chunk *prev;
    size_t size;   /* usable bytes at data */
    size_t offset; /* next free byte */
    unsigned char *data;
    _Alignas(64) unsigned char inline_data[];
};

void vla_arena_init(vla_arena *a, size_t chunk_size) { vla_arena_init_with(a, chunk_size, NULL, NULL); }

void vla_arena_init_with(vla_arena *a, size_t chunk_size, void *(*alloc)(size_t), void (*free_fn)(void *)) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)1 << 20;
    a->used_total = 0;
    a->peak = 0;
    a->chunk_alloc = alloc;
    a->chunk_free = free_fn;
}

/* Headers are 64-byte aligned (the struct's own alignment, for its inline data). */
static vla_arena_chunk *header_alloc(size_t extra) {
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(vla_arena_chunk) + extra) != 0) return NULL;
    return p;
}

static vla_arena_chunk *chunk_new(vla_arena *a, size_t cap) {
    if (!a->chunk_alloc) {
        vla_arena_chunk *n = header_alloc(cap);
        if (n) n->data = n->inline_data;
        return n;
    }
    vla_arena_chunk *n = header_alloc(0);
    if (!n) return NULL;
    if (!(n->data = a->chunk_alloc(cap))) {
        free(n);
        return NULL;
    }
    return n;
}

static void chunk_free(vla_arena *a, vla_arena_chunk *c) {
    if (a->chunk_alloc) a->chunk_free(c->data);
    free(c);
}

static size_t align_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

void *vla_arena_alloc(vla_arena *a, size_t size, size_t align) {
    if (align == 0) align = 1;
    if (align & (align - 1)) return NULL;
    vla_arena_chunk *c = a->head;
    size_t off = 0;
    int fits = 0;
    if (c) {
        uintptr_t base = (uintptr_t)c->data;
        off = align_up(base + c->offset, align) - base;
        fits = off <= c->size && size <= c->size - off;
    }
    if (!fits) {
        size_t need = size + align;
        if (need < size) return NULL; /* overflow */
        size_t cap = need > a->chunk_size ? need : a->chunk_size;
        vla_arena_chunk *n = chunk_new(a, cap);
        if (!n) return NULL;
        n->prev = c;
        n->size = cap;
        n->offset = 0;
        a->head = c = n;
        uintptr_t base = (uintptr_t)c->data; /* 64-aligned; larger alignments pad */
        off = align_up(base, align) - base;
    }
    a->used_total += off - c->offset + size;
    if (a->used_total > a->peak) a->peak = a->used_total;
    c->offset = off + size;
    return c->data + off;
}

void *vla_arena_calloc(vla_arena *a, size_t size, size_t align) {
    void *p = vla_arena_alloc(a, size, align);
    if (p) memset(p, 0, size);
    return p;
}

char *vla_arena_strdup(vla_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = vla_arena_alloc(a, n, 1);
    if (p) memcpy(p, s, n);
    return p;
}

vla_arena_mark vla_arena_get_mark(const vla_arena *a) {
    vla_arena_mark m = {a->head, a->head ? a->head->offset : 0, a->used_total};
    return m;
}

void vla_arena_rewind(vla_arena *a, vla_arena_mark m) {
    while (a->head && a->head != m.chunk) {
        vla_arena_chunk *prev = a->head->prev;
        chunk_free(a, a->head);
        a->head = prev;
    }
    if (a->head) a->head->offset = m.offset;
    a->used_total = m.used_total;
}

size_t vla_arena_room(const vla_arena *a) { return a->head ? a->head->size - a->head->offset : 0; }

bool vla_arena_advance(vla_arena *a, vla_arena_mark from, vla_arena_mark to) {
    vla_arena_chunk *h = a->head;
    if (!h || h != from.chunk || h->offset != from.offset || a->used_total != from.used_total) return false;
    if (to.chunk != h || to.offset < from.offset || to.offset > h->size ||
        to.used_total - from.used_total != to.offset - from.offset)
        return false;
    h->offset = to.offset;
    a->used_total = to.used_total;
    if (a->used_total > a->peak) a->peak = a->used_total;
    return true;
}

void vla_arena_reset(vla_arena *a) {
    while (a->head && a->head->prev) {
        vla_arena_chunk *prev = a->head->prev;
        chunk_free(a, a->head);
        a->head = prev;
    }
    if (a->head) a->head->offset = 0;
    a->used_total = 0;
}

void vla_arena_free(vla_arena *a) {
    while (a->head) {
        vla_arena_chunk *prev = a->head->prev;
        chunk_free(a, a->head);
        a->head = prev;
    }
    a->used_total = 0;
}

void vla_arena_begin_call(vla_arena *a) {
    size_t peak = a->peak;
    if (peak > a->chunk_size) {
        size_t room = peak / 8, most = (size_t)256 << 20;
        vla_arena_rebuild(a, peak + (room < most ? room : most) + 4096);
    } else {
        vla_arena_reset(a);
    }
}

void vla_arena_rebuild(vla_arena *a, size_t chunk_size) {
    void *(*al)(size_t) = a->chunk_alloc;
    void (*fr)(void *) = a->chunk_free;
    vla_arena_free(a);
    vla_arena_init_with(a, chunk_size, al, fr);
}

const void *vla_arena_next_block(vla_arena *a, size_t align) {
    vla_arena_mark m = vla_arena_get_mark(a);
    const void *p = vla_arena_alloc(a, 1, align);
    vla_arena_rewind(a, m);
    return p;
}
