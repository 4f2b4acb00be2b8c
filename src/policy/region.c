/* region.c — captured regions that restore the host state their body leaves (region.h). */
#include "policy/region.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_switch.h"
#include "base/log.h"

/* More than a device keeps recordings (cuda: 64, graph.cu), so a replayed key's outputs are still here. */
#define REGION_OUTS_KEPT 128

struct vla_region_outs {
    vla_key_cache *c;
};

typedef struct {
    vla_arena_mark end; /* where the body's carving ended */
    size_t need;        /* the bytes it carved, padding included */
    size_t n;
    unsigned char out[];
} kept;

typedef struct {
    vla_status (*body)(void *ctx);
    void *ctx;
    vla_arena *arena;
    vla_arena_mark from;
    bool ran;
} noted;

static atomic_bool emulate;
static atomic_long restored;

static atomic_int train_regions = -1; /* -1: VLA_TRAIN_GRAPHS decides at the first use */

bool vla_train_regions_on(void) { return vla_env_switch(&train_regions, "VLA_TRAIN_GRAPHS"); }
void vla_train_regions_set(bool on) { atomic_store(&train_regions, on); }

void vla_region_emulate_replays(bool on) { atomic_store(&emulate, on); }
long vla_region_restored(void) { return atomic_load(&restored); }

/* The body, noted as run, carving from the region's start every time: a device that runs it twice in
 * one call (a recording that failed, run again plainly) gets the same blocks twice, not twice as many. */
static vla_status noted_body(void *v) {
    noted *w = v;
    w->ran = true;
    vla_arena_rewind(w->arena, w->from);
    return w->body(w->ctx);
}

/* the body's outputs and end under key (nothing kept when out of memory: a later replay runs the body again) */
static void keep(vla_region_outs *o, const vla_key *key, const vla_arena *arena, vla_arena_mark from, const void *out,
                 size_t n) {
    kept *k = vla_key_cache_get(o->c, key->b, key->n);
    if (k && k->n != n) return; /* a key's outputs have one size (its call site's) */
    if (!k) {
        k = malloc(sizeof *k + (n ? n : 1));
        if (!k) return;
        if (!vla_key_cache_put(o->c, key->b, key->n, k)) {
            free(k);
            return;
        }
    }
    k->end = vla_arena_get_mark(arena);
    k->need = k->end.used_total - from.used_total;
    k->n = n;
    if (n) memcpy(k->out, out, n); /* (a region may leave no host output: out NULL) */
}

/* the host state of a replay from the kept entry; false when it cannot be */
static bool restore(vla_region_outs *o, const vla_key *key, vla_arena *arena, vla_arena_mark from, void *out,
                    size_t n) {
    kept *k = vla_key_cache_get(o->c, key->b, key->n);
    if (!k || k->n != n || !vla_arena_advance(arena, from, k->end)) return false;
    if (n) memcpy(out, k->out, n);
    atomic_fetch_add(&restored, 1);
    return true;
}

vla_status vla_region_run(const vla_ops *ops, vla_region_outs **outs, vla_key *key, vla_arena *arena,
                          vla_status (*body)(void *ctx), void *ctx, void *out, size_t out_bytes) {
    if (!key->failed && !*outs) {
        vla_region_outs *o = calloc(1, sizeof *o);
        if (o && !(o->c = vla_key_cache_new(REGION_OUTS_KEPT, free))) free(o), o = NULL;
        *outs = o;
    }
    if (key->failed || !*outs) { /* no key (or no memory to keep outputs): no region */
        vla_key_release(key);
        return body(ctx);
    }
    vla_region_outs *o = *outs;
    vla_arena_mark from = vla_arena_get_mark(arena);
    /* A key's first call, or one whose blocks would not fit the arena's chunk, runs plainly: a region
     * may not keep memory it allocates (a device could not record it), and a growing arena would. The
     * first call tells what the body carves. */
    const kept *seen = vla_key_cache_get(o->c, key->b, key->n);
    if (!seen || seen->n != out_bytes || vla_arena_room(arena) < seen->need) {
        vla_status st = body(ctx);
        if (st == VLA_OK) keep(o, key, arena, from, out, out_bytes);
        vla_key_release(key);
        return st;
    }
    noted w = {body, ctx, arena, from, false};
    vla_status st = vla_ops_run_captured(ops, key->b, key->n, noted_body, &w);
    if (st == VLA_OK && w.ran && atomic_load(&emulate)) {
        /* a replay's host side: what the body left forgotten, then restored (or, failing that, run again) */
        vla_arena_rewind(arena, from);
        if (out_bytes) memset(out, 0xa5, out_bytes);
        w.ran = false;
    }
    if (st == VLA_OK && !w.ran && !restore(o, key, arena, from, out, out_bytes)) {
        vla_arena_rewind(arena, from);
        st = body(ctx); /* nothing to restore from: the same ops again, plainly */
        w.ran = true;
    }
    if (st == VLA_OK && w.ran) keep(o, key, arena, from, out, out_bytes);
    vla_key_release(key);
    return st;
}

bool vla_train_regions_open(const vla_region_trial *t) {
    return vla_train_regions_on() && !t->stopped;
}

void vla_region_trial_check(vla_region_trial *t, vla_region_outs *outs, vla_key *key, const char *who) {
    if (!t->stopped && !key->failed) {
        t->new_keys += !(outs && vla_key_cache_get(outs->c, key->b, key->n));
        if (++t->calls >= VLA_REGION_TRIAL_CALLS && 2 * t->new_keys > t->calls) {
            t->stopped = true;
            VLA_INFO("%s: this training step's captured region off — %lld of %lld batches were new to it (another "
                     "layout or prompt), so few recordings would be replayed (docs/cuda.md, \"Graphs\")",
                     who, (long long)t->new_keys, (long long)t->calls);
        }
    }
    if (t->stopped && !key->failed) {
        vla_key_release(key);
        key->failed = true;
    }
}

void vla_region_outs_free(vla_region_outs *o) {
    if (!o) return;
    vla_key_cache_free(o->c);
    free(o);
}
