/* key_cache.c — the least-recently-used key cache (key_cache.h). */
#include "tensor/key_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *key;
    size_t bytes;
    void *payload;
    uint64_t used; /* the cache's clock at the last get or put */
} key_entry;

struct vla_key_cache {
    int capacity, count;
    uint64_t clock;
    void (*destroy)(void *);
    key_entry *e;
};

vla_key_cache *vla_key_cache_new(int capacity, void (*destroy)(void *payload)) {
    vla_key_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->capacity = capacity > 0 ? capacity : 1, c->destroy = destroy;
    if (!(c->e = calloc((size_t)c->capacity, sizeof *c->e))) {
        free(c);
        return NULL;
    }
    return c;
}

static void entry_drop(vla_key_cache *c, key_entry *e) {
    if (c->destroy && e->payload) c->destroy(e->payload);
    free(e->key);
    *e = c->e[--c->count]; /* the last entry fills the hole */
    memset(&c->e[c->count], 0, sizeof c->e[c->count]);
}

void vla_key_cache_free(vla_key_cache *c) {
    if (!c) return;
    while (c->count > 0) entry_drop(c, &c->e[c->count - 1]);
    free(c->e), free(c);
}

void *vla_key_cache_get(vla_key_cache *c, const void *key, size_t bytes) {
    for (int i = 0; i < c->count; i++)
        if (c->e[i].bytes == bytes && !memcmp(c->e[i].key, key, bytes)) {
            c->e[i].used = ++c->clock;
            return c->e[i].payload;
        }
    return NULL;
}

bool vla_key_cache_put(vla_key_cache *c, const void *key, size_t bytes, void *payload) {
    unsigned char *copy = malloc(bytes ? bytes : 1);
    if (!copy) return false;
    if (bytes) memcpy(copy, key, bytes);
    if (c->count == c->capacity) { /* evict the least recently used */
        int lru = 0;
        for (int i = 1; i < c->count; i++)
            if (c->e[i].used < c->e[lru].used) lru = i;
        entry_drop(c, &c->e[lru]);
    }
    c->e[c->count++] = (key_entry){copy, bytes, payload, ++c->clock};
    return true;
}

int vla_key_cache_count(const vla_key_cache *c) { return c->count; }

void vla_key_add(vla_key *k, const void *p, size_t bytes) {
    if (k->failed || !bytes) return;
    if (k->n + bytes > k->cap) {
        size_t cap = k->cap ? k->cap : 256;
        while (cap < k->n + bytes) cap *= 2;
        unsigned char *b = realloc(k->b, cap);
        if (!b) {
            vla_key_release(k);
            k->failed = true;
            return;
        }
        k->b = b, k->cap = cap;
    }
    if (p) memcpy(k->b + k->n, p, bytes);
    else memset(k->b + k->n, 0, bytes);
    k->n += bytes;
}

void vla_key_add_i32s(vla_key *k, const int32_t *a, int64_t n) {
    int64_t len = n > 0 ? n : 0;
    vla_key_add(k, &len, sizeof len);
    vla_key_add(k, a, (size_t)len * sizeof(int32_t));
}

void vla_key_release(vla_key *k) {
    free(k->b);
    k->b = NULL, k->n = k->cap = 0;
}
