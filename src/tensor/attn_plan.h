/* attn_plan.h — the host side of the device attention kernels (the cuda
 * backend's tensor/cuda/attention.cu): the packed batch cut into tiles, the
 * order the thread blocks take them in, and the attention statistics. Plain
 * C, built into every configuration and unit-tested on the CPU
 * (tests/tensor/test_attn_plan.c), because it decides what the kernels
 * compute and skip (nn/attention.h has the contract).
 *
 * A q-tile is up to bq consecutive query tokens of one sample; a k-tile up
 * to bk consecutive key tokens of one sample from one key source (the
 * cached forward has two: the cache, then the new rows, per sample). Each
 * tile carries the range of attention groups inside it, so a (q-tile,
 * k-tile) pair is SKIPped when every key group exceeds every query group
 * (the prefix-LM rule: key j is visible to query i iff group[j] <=
 * group[i]), computed FULL (no per-element test) when every key group is
 * <= every query group, else PARTIAL. The mask itself is never built.
 *
 * Work order: thread blocks are launched heaviest tile first (longest
 * processing time first: tiles of long samples see many k-tiles), the
 * order a function of the metadata alone, so a run is reproducible.
 *
 * Everything the kernels need is packed into ONE int32 buffer, uploaded per
 * call (the host metadata arrives as host pointers: docs/design.md). */
#ifndef VLA_TENSOR_ATTN_PLAN_H
#define VLA_TENSOR_ATTN_PLAN_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

enum { VLA_TILE_SKIP = 0, VLA_TILE_FULL = 1, VLA_TILE_PARTIAL = 2 };

/* 8 int32: one tile, as the kernels read it */
typedef struct {
    int32_t seg, start, len, src;
    int32_t gmin, gmax; /* range of attention groups inside the tile */
    int32_t first, n;   /* q-tile: its sample's k-tiles [first, first + n); k-tile: the sample's q-tiles */
} vla_attn_tile;

#define VLA_ATTN_MAX_SRC 2

typedef struct {
    int32_t n_seg, H, Hkv, d, rep, bq, bk, n_src;
    float scale; /* resolved: cfg->scale or 1/sqrt(d) */
    int64_t n_qt, n_kt;
    vla_attn_tile *qt, *kt;
    int32_t *q_order;  /* [n_qt] q-tiles heaviest first */
    int32_t *k_order;  /* [n_kt] k-tiles heaviest first */
    int64_t nq, nk[VLA_ATTN_MAX_SRC]; /* tokens on the query side and per key source */
    int64_t pairs_computed;           /* Σ over heads of len_q·len_k of the tiles not skipped (FLOP count) */
} vla_attn_plan;

/* The checks every backend relies on (nn/attention.c runs them before each
 * attention op): positive sizes, heads a multiple of KV heads, tile sizes
 * not negative, both sides' cu_seqlens valid and of the same sample count. */
vla_status vla_attn_check(const vla_attn_config *cfg, const vla_attn_seqs *qs, int n_src,
                          const vla_attn_seqs *const *ks);

/* Checks the configuration and the packed layout (the same errors as the
 * cpu backend), then builds the tiles of bq queries × bk keys. ks has n_src
 * entries (1, or 2 for the cached forward), each with the query side's
 * n_seg. */
vla_status vla_attn_plan_make(vla_attn_plan *p, const vla_attn_config *cfg, int32_t bq, int32_t bk,
                              const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks);
void vla_attn_plan_free(vla_attn_plan *p);

static inline int vla_attn_tile_class(const vla_attn_tile *q, const vla_attn_tile *k) {
    if (k->gmin > q->gmax) return VLA_TILE_SKIP;
    if (k->gmax <= q->gmin) return VLA_TILE_FULL;
    return VLA_TILE_PARTIAL;
}

/* The statistics of one call over this tiling (per head, summed over heads). */
void vla_attn_plan_stats(const vla_attn_plan *p, vla_attn_stats *st);

/* The upload: int32 words, at these offsets (in words) of one buffer.
 * Groups of a NULL side are absent (offset −1): the kernel reads group 0. */
typedef struct {
    int64_t qt, kt, q_order, k_order, group_q, group_k[VLA_ATTN_MAX_SRC];
    int64_t words;
} vla_attn_pack_layout;

vla_attn_pack_layout vla_attn_plan_pack_layout(const vla_attn_plan *p, const vla_attn_seqs *qs, int n_src,
                                               const vla_attn_seqs *const *ks);
/* Writes the buffer (layout.words int32). */
void vla_attn_plan_pack(const vla_attn_plan *p, const vla_attn_pack_layout *l, const vla_attn_seqs *qs, int n_src,
                        const vla_attn_seqs *const *ks, int32_t *out);

#endif
