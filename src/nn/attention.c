/* attention.c — packed attention as whole backend ops: the host-side checks
 * (head counts, tile sizes, cu_seqlens of both sides) that every backend
 * relies on, then ops->attention_*. */
#include "nn/attention.h"

#include "tensor/attn_plan.h"

vla_status vla_attention_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                 const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                 const vla_attn_seqs *ks, vla_attn_stats *stats) {
    return vla_attention_forward_ready(ops, cfg, out, lse, q, k, v, qs, ks, stats, NULL);
}

vla_status vla_attention_forward_ready(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                       const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                       const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready) {
    const vla_attn_seqs *src[1] = {ks};
    VLA_TRY(vla_attn_check(cfg, qs, 1, src));
    return ops->attention_forward(cfg, out, lse, q, k, v, qs, ks, stats, out_ready);
}

vla_status vla_attention_backward(const vla_ops *ops, const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                  const float *d_out, const float *q, const float *k, const float *v,
                                  const float *out, const float *lse, const vla_attn_seqs *qs,
                                  const vla_attn_seqs *ks, vla_attn_stats *stats) {
    const vla_attn_seqs *src[1] = {ks};
    VLA_TRY(vla_attn_check(cfg, qs, 1, src));
    return ops->attention_backward(cfg, dq, dk, dv, d_out, q, k, v, out, lse, qs, ks, stats);
}

vla_status vla_attention_forward_cached(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                        const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
                                        const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats) {
    const vla_attn_seqs *src[2] = {cs, ns};
    VLA_TRY(vla_attn_check(cfg, qs, 2, src));
    return ops->attention_forward_cached(cfg, out, lse, q, qs, k_cache, v_cache, cs, k_new, v_new, ns, stats);
}
