/* key_cache.h — a small cache from byte-string keys to payloads, least
 * recently used evicted first: what a device backend keeps per distinct
 * input (the cuda backend's attention plans, keyed by their layout words;
 * recorded regions, keyed by the caller's key, on cuda and on checked).
 * Keys are compared whole (no hash can collide). Not thread-safe: the
 * caller locks. Plain C, tested on the CPU (tests/tensor/test_attn_plan.c). */
#ifndef VLA_TENSOR_KEY_CACHE_H
#define VLA_TENSOR_KEY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vla_key_cache vla_key_cache;
/* destroy: called on a payload when its entry is evicted or the cache freed (NULL: none) */
vla_key_cache *vla_key_cache_new(int capacity, void (*destroy)(void *payload));
void vla_key_cache_free(vla_key_cache *c); /* destroys every payload */
/* the payload under key (bytes long), or NULL; a hit becomes the most recently used */
void *vla_key_cache_get(vla_key_cache *c, const void *key, size_t bytes);
/* keeps a copy of key with payload (evicting the least recently used entry when full); false: out of
 * memory (nothing kept, payload not destroyed) */
bool vla_key_cache_put(vla_key_cache *c, const void *key, size_t bytes, void *payload);
int vla_key_cache_count(const vla_key_cache *c);

/* Building a key (a captured region's, tensor/ops.h run_captured): parts appended in order into a
 * growing buffer; an int32 array goes in with its length first, so two arrays cannot run into each
 * other (NULL reads as zeros). On out of memory the key is marked failed (b NULL): callers then run
 * without one. */
typedef struct {
    unsigned char *b;
    size_t n, cap;
    bool failed;
} vla_key;
void vla_key_add(vla_key *k, const void *p, size_t bytes);
void vla_key_add_i32s(vla_key *k, const int32_t *a, int64_t n);
void vla_key_release(vla_key *k);

#endif
