/* attention.h — multi-head attention over packed batches, tiled with an
 * online softmax (flash-attention style), with grouped KV heads and
 * structured masks that are never materialised.
 *
 * Layout: Q and O are [tokens, n_heads, head_dim]; K and V are
 * [tokens, n_kv_heads, head_dim] (n_heads a multiple of n_kv_heads; query
 * head h reads KV head h / (n_heads / n_kv_heads), as HF's repeat_kv).
 * Samples lie end to end on the token axis, delimited by cu_seqlens; no
 * token ever sees another sample.
 *
 * The mask is given by an int32 "attention group" per token (openpi's
 * cumsum of the ar mask): query i may attend key j iff they are in the
 * same sample and group_k[j] <= group_q[i]. So
 *   bidirectional: all groups 0 (or group = NULL);
 *   causal:        group = position within the sample;
 *   prefix-LM:     prefix tokens 0, suffix tokens 1 (π0 / π0.5).
 * A (q-tile, k-tile) pair whose key groups all exceed its query groups is
 * skipped; one whose key groups are all <= its query groups is computed with
 * no per-element test. The forward keeps only the log-sum-exp per (token,
 * head) for the backward, which recomputes scores tile by tile (FA2).
 *
 * The forward splits work over (sample, head, q-tile) with OpenMP; the
 * backward as vla_attn_bwd_mode says. Every output row is written by one
 * work item in a fixed order, so results do not depend on the thread
 * count. GEMMs on tiles go through the op table. */
#ifndef VLA_NN_ATTENTION_H
#define VLA_NN_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* How the backward splits its work (all deterministic, no atomics):
 *  FUSED:    one work item per (sample, kv head) walks its k-tiles and, for
 *            each, the q-tiles of the group's heads: 5 GEMMs per tile, dK/dV
 *            and dQ rows all owned by the item; parallel only across
 *            samples × kv heads (good for packed batches).
 *  TWO_PASS: dK/dV per (sample, kv head, k-tile), then dQ per (sample,
 *            head, q-tile): 7 GEMMs per tile but parallel within a sample
 *            (good for one long sample with few kv heads).
 *  AUTO:     FUSED when samples × kv heads >= 4 (or the problem is small).
 *            The choice depends on the shapes only, never on the thread
 *            count. */
typedef enum { VLA_ATTN_BWD_AUTO = 0, VLA_ATTN_BWD_FUSED, VLA_ATTN_BWD_TWO_PASS } vla_attn_bwd_mode;

typedef struct {
    int32_t n_heads, n_kv_heads, head_dim;
    float scale;            /* softmax scale; 0 means 1/sqrt(head_dim) */
    int32_t tile_q, tile_k; /* 0 means 64 (128 when head_dim <= 32 or >= 128) */
    vla_attn_bwd_mode bwd_mode;
    /* One KV head (MQA, e.g. Gemma's): by default a token's query heads are
     * folded into consecutive rows of one head, so each tile product serves
     * all heads at once (attention.c); true keeps one tile per head. The
     * results agree to rounding; for tests and measurements. */
    bool no_mqa_fold;
} vla_attn_config;

/* One packed sequence of tokens (the query side or the key side). */
typedef struct {
    int32_t n_seg;
    const int32_t *cu_seqlens; /* [n_seg + 1] */
    const int32_t *group;      /* [tokens] attention group, or NULL for all 0 */
} vla_attn_seqs;

/* Tile counts of the last call, summed over heads (optional: pass NULL). */
typedef struct {
    int64_t tiles_total;    /* (q-tile, k-tile) pairs within samples, summed over heads */
    int64_t tiles_computed; /* those the mask did not rule out */
    int64_t tiles_unmasked; /* of the computed ones, those with no per-element mask test */
} vla_attn_stats;

/* out [Nq, H, d] and lse [Nq, H] (saved for backward, NULL if none follows;
 * a query that sees no key gets out = 0 and lse = −inf). Self-attention passes the same seqs
 * for q and k; cross-attention gives each side its own cu_seqlens (same
 * n_seg) and groups. Token counts are cu_seqlens[n_seg]. */
vla_status vla_attention_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                 const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                 const vla_attn_seqs *ks, vla_attn_stats *stats);

/* dq, dk, dv accumulate (+=); none may be NULL. out and lse are the forward's. */
vla_status vla_attention_backward(const vla_ops *ops, const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                  const float *d_out, const float *q, const float *k, const float *v,
                                  const float *out, const float *lse, const vla_attn_seqs *qs,
                                  const vla_attn_seqs *ks, vla_attn_stats *stats);

/* KV-cache entry point (sampling): the keys of sample s are the cached rows
 * [cs.cu[s], cs.cu[s+1]) of k_cache/v_cache followed by the new rows
 * [ns.cu[s], ns.cu[s+1]) of k_new/v_new — no concatenation. Each side has
 * its own groups (e.g. prefix cache 0, action tokens 1). Forward only. */
vla_status vla_attention_forward_cached(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                        const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
                                        const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats);

#endif
