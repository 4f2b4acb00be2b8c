/* attn_plan.h — the one tiling of packed attention, walked by the cpu
 * backend's kernels (tensor/cpu/ops_cpu_attention.c) and the cuda
 * backend's (tensor/cuda/attention.cu): the packed batch cut into tiles,
 * which (q-tile, k-tile) pairs the group mask skips, MQA folding of query
 * heads into tile rows, the order the thread blocks take the tiles in, and
 * the attention statistics. Plain C, built into every configuration and
 * unit-tested on the CPU (tests/tensor/test_attn_plan.c), because it
 * decides what the kernels compute and skip (nn/attention.h has the
 * contract).
 *
 * A q-tile is up to bq consecutive query rows of one sample; a k-tile up
 * to bk consecutive key tokens of one sample from one key source (the
 * cached forward has two: the cache, then the new rows, per sample). Each
 * tile carries the range of attention groups inside it, so a (q-tile,
 * k-tile) pair is SKIPped when every key group exceeds every query group
 * (the prefix-LM rule: key j is visible to query i iff group[j] <=
 * group[i]), computed FULL (no per-element test) when every key group is
 * <= every query group, else PARTIAL. The mask itself is never built.
 *
 * MQA FOLDING. With one KV head every query head reads the same K and V,
 * and the layout [tokens, heads, head_dim] puts a token's H query heads in
 * H consecutive rows of width head_dim. So Q, O, dQ, dO and the LSE are
 * read as N·H "pseudo-token" rows of a single head, each pseudo-token
 * carrying its token's sample and group: the plan then has H = rep = 1,
 * fold = the configuration's H, its query side in pseudo-tokens (nq = N·H,
 * the groups repeated in fold_group) — a kernel that indexes by the plan's
 * H and tiles reads the same memory either way. Folded tiles cover the same
 * tokens, so masks, skipped tiles and statistics are those of the per-head
 * form. On the cpu a folded q-tile keeps bq tokens (bq·H rows): one tile
 * product for all heads instead of one per head, K and V packed once
 * (tensor/cpu/ops_cpu_attention.c says what that gained); kernels of a
 * fixed tile shape keep bq rows.
 *
 * Work order: thread blocks are launched heaviest tile first (longest
 * processing time first: tiles of long samples see many k-tiles), the
 * order a function of the metadata alone, so a run is reproducible.
 *
 * Everything the device kernels need is packed into ONE int32 buffer,
 * uploaded per call (the host metadata arrives as host pointers:
 * docs/design.md). */
#ifndef VLA_TENSOR_ATTN_PLAN_H
#define VLA_TENSOR_ATTN_PLAN_H

#include <stdbool.h>
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
    int32_t n_seg, H, Hkv, d, rep, bq, bk, n_src; /* H, rep, bq: of the tiles, after folding */
    int32_t fold;       /* query heads folded into rows (MQA folding above), else 1 */
    float scale;        /* resolved: cfg->scale or 1/sqrt(d) */
    int64_t n_qt, n_kt;
    vla_attn_tile *qt, *kt;
    int32_t *q_first, *k_first; /* [n_seg + 1]: the tiles of sample s are [first[s], first[s + 1]) */
    int32_t *q_order;  /* [n_qt] q-tiles heaviest first */
    int32_t *k_order;  /* [n_kt] k-tiles heaviest first */
    int32_t *fold_group; /* [nq] the query groups per pseudo-token when folded (NULL groups: NULL) */
    int64_t nq, nk[VLA_ATTN_MAX_SRC]; /* query rows (pseudo-tokens when folded) and keys per source */
    int64_t pairs_computed;           /* Σ over heads of len_q·len_k of the tiles not skipped (FLOP count) */
} vla_attn_plan;

/* What a folded q-tile's bq counts (MQA folding above). */
typedef enum {
    VLA_ATTN_FOLD_TOKENS, /* bq tokens, so bq·H rows: the cpu's tile GEMMs grow to take every head */
    VLA_ATTN_FOLD_ROWS,   /* bq rows: kernels whose tile shape is fixed (cuda) */
} vla_attn_fold_tile;

/* The cpu backend's tile edge when the configuration names none: 64, or
 * 128 for heads of <= 32 or >= 128 dims (attn_plan.c says why). */
int32_t vla_attn_default_tile(int32_t head_dim);

/* The checks every backend relies on (nn/attention.c runs them before each
 * attention op): positive sizes, heads a multiple of KV heads, tile sizes
 * not negative, both sides' cu_seqlens valid and of the same sample count. */
vla_status vla_attn_check(const vla_attn_config *cfg, const vla_attn_seqs *qs, int n_src,
                          const vla_attn_seqs *const *ks);

/* Checks the configuration and the packed layout (vla_attn_check), then
 * builds the tiles of bq queries × bk keys (0: cfg->tile_q / tile_k, else
 * vla_attn_default_tile), folding the query heads when there is one KV
 * head and cfg->no_mqa_fold is not set (fold_tile: what a folded bq
 * counts). ks has n_src entries (1, or 2 for the cached forward), each with
 * the query side's n_seg. */
vla_status vla_attn_plan_make(vla_attn_plan *p, const vla_attn_config *cfg, int32_t bq, int32_t bk,
                              vla_attn_fold_tile fold_tile, const vla_attn_seqs *qs, int n_src,
                              const vla_attn_seqs *const *ks);

/* The query groups as the plan's rows see them: per pseudo-token when
 * folded, else the query side's own (NULL: every query in group 0). */
static inline const int32_t *vla_attn_plan_group_q(const vla_attn_plan *p, const vla_attn_seqs *qs) {
    return p->fold > 1 ? p->fold_group : qs->group;
}
void vla_attn_plan_free(vla_attn_plan *p);

static inline int vla_attn_tile_class(const vla_attn_tile *q, const vla_attn_tile *k) {
    if (k->gmin > q->gmax) return VLA_TILE_SKIP;
    if (k->gmax <= q->gmin) return VLA_TILE_FULL;
    return VLA_TILE_PARTIAL;
}

/* The statistics of one call over this tiling (per head, summed over heads:
 * a folded tile pair counts once per folded head). */
void vla_attn_plan_stats(const vla_attn_plan *p, vla_attn_stats *st);

/* SPLIT dK/dV. A device's dK/dV pass runs one block per (k-tile, kv head),
 * and each block walks every (query head of its group, q-tile of its
 * sample) serially. With one KV head that is few blocks doing long walks:
 * pi05's 2,424 packed tokens make ~40 k-tiles, each walking 8 heads' worth
 * of q-tiles, on a GPU of 132 SMs — the backward ran at ~9x its forward
 * (issue 41). So the walk is cut into S parts of consecutive items (item j
 * of a k-tile's walk: query head j / n, q-tile first + j % n, n its q-tile
 * count), one block per part; each part writes its partial dK/dV and a
 * second pass adds the parts into dK/dV in part order — deterministic, no
 * atomics. S comes from the shapes alone (never the device), so a run is
 * reproducible everywhere; S = 1 is the unsplit pass.
 *
 * vla_attn_walk_splits: the S that brings `blocks` (the unsplit grid) up to
 * `target_blocks`, leaving at least two items per part of the longest walk
 * (max_walk: here max over k-tiles of rep·n; for the forward's split keys
 * below, its longest k-tile walk), at most VLA_ATTN_MAX_SPLITS; 1 when the
 * grid is already large enough. */
#define VLA_ATTN_MAX_SPLITS 16
int32_t vla_attn_walk_splits(int64_t blocks, int64_t max_walk, int64_t target_blocks);
/* the longest dK/dV walk of the plan: max over k-tiles of rep · (its sample's q-tiles) */
int64_t vla_attn_plan_max_kv_walk(const vla_attn_plan *p);

/* SPLIT KEYS (the forward; FlashDecoding's split-KV). The forward runs one
 * block per (q-tile, head), each walking its q-tile's k-tiles. An action
 * chunk's attention at batch 1 is a few q-tiles over a long key side (π0.5:
 * 50 action tokens × 8 heads folded into 7 q-tiles, each walking ~27 k-tiles
 * of the prefix cache): 7 blocks on 132 SMs. So the walk is cut into S parts
 * of consecutive k-tiles (part s of q-tile i: its tiles first + [lo, hi) of
 * vla_attn_split_range(n, S, s)), one block each; each part writes its
 * unnormalised output, running max and sum (the log2 domain the kernels
 * keep), and one pass combines the parts in part order: m = max m_s,
 * l = Σ l_s·2^(m_s − m), out = Σ o_s·2^(m_s − m) / l — deterministic. S
 * from vla_attn_walk_splits(blocks, this, target) with the walk below: the
 * shapes alone decide it, as for dK/dV. */
int64_t vla_attn_plan_max_q_walk(const vla_attn_plan *p); /* max over q-tiles of its k-tiles */
/* the split's range is computed by the host tests and the cuda kernels alike: one definition for both */
#ifdef __CUDACC__
#define VLA_ATTN_HOST_DEVICE __host__ __device__
#else
#define VLA_ATTN_HOST_DEVICE
#endif
/* Part s of S of a walk of n items: items [lo, hi) (balanced, in order; empty when S > n). */
static inline VLA_ATTN_HOST_DEVICE void vla_attn_split_range(int64_t n, int32_t S, int32_t s, int64_t *lo, int64_t *hi) {
    *lo = n * s / S;
    *hi = n * (s + 1) / S;
}

/* (query, key) pairs the group rule allows between two packed sides,
 * summed over samples: key j of a sample is seen by query i of that sample
 * when group[j] <= group[i] (NULL groups: all 0) — the exact count model
 * FLOPs are made of (a policy's loss info, the profiler's attention rows),
 * where the plan's pairs_computed counts whole tiles. */
double vla_attn_pairs(const vla_attn_seqs *qs, const vla_attn_seqs *ks);

/* PLAN CACHE. Every layer of a batch attends over the same packed layout,
 * so a device backend builds and uploads each distinct plan once and reuses
 * it (π0.5's 18 expert layers × 10 flow steps make one plan, not 180; a
 * training step's layers, forward and backward, a handful). A plan is
 * keyed by everything it is made from — the configuration's sizes, the
 * tile shape and folding, each side's cu_seqlens and groups — written as
 * int32 words and compared whole (no hash can collide).
 *
 * vla_attn_plan_key writes those words into out (NULL: only counts them)
 * and returns their number. */
int64_t vla_attn_plan_key(const vla_attn_config *cfg, int32_t bq, int32_t bk, vla_attn_fold_tile fold_tile,
                          const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks, int32_t *out);

/* The cache a device keeps them in: tensor/key_cache.h, keyed by these words' bytes. */

/* The upload: int32 words, at these offsets (in words) of one buffer.
 * Groups of a NULL side are absent (offset −1): the kernel reads group 0;
 * the query groups are per row (vla_attn_plan_group_q). */
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
