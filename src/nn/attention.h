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
 * The CPU kernel splits the forward over (sample, head, q-tile) and the
 * backward as vla_attn_bwd_mode says. Every output row is written by one
 * work item in a fixed order, so results do not depend on the thread
 * count. */
#ifndef VLA_NN_ATTENTION_H
#define VLA_NN_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* vla_attn_config, vla_attn_seqs, vla_attn_stats and the backward modes
 * are tensor/ops.h's: the attention is one op of the backend (the CPU's
 * tiled kernel is tensor/cpu/ops_cpu_attention.c); these entry points check the
 * shapes and the packed layout on the host, then call it. Tile defaults
 * (cpu): 64, or 128 for heads of <= 32 or >= 128 dims. */

/* out [Nq, H, d] and lse [Nq, H] (saved for backward, NULL if none follows;
 * a query that sees no key gets out = 0 and lse = −inf). Self-attention passes the same seqs
 * for q and k; cross-attention gives each side its own cu_seqlens (same
 * n_seg) and groups. Token counts are cu_seqlens[n_seg]. */
vla_status vla_attention_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                 const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                 const vla_attn_seqs *ks, vla_attn_stats *stats);

/* The same, also writing out's bf16 GEMM-ready copy into out_ready (NULL: none) for the o-projection
 * (nn/linear.h, producer casts). */
vla_status vla_attention_forward_ready(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                       const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                       const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready);

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
