/* attention.c — packed attention as whole backend ops: the host-side checks
 * (head counts, tile sizes, cu_seqlens of both sides) that every backend
 * relies on, then ops->attention_*. */
#include "nn/attention.h"

#include "tensor/seqlens.h"

static vla_status check(const vla_attn_config *cfg, const vla_attn_seqs *qs, int n_src,
                        const vla_attn_seqs *const *ks) {
    if (cfg->n_heads <= 0 || cfg->n_kv_heads <= 0 || cfg->head_dim <= 0 || cfg->n_heads % cfg->n_kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "attention: %d heads, %d kv heads, head_dim %d: need positive sizes "
                         "and heads a multiple of kv heads", cfg->n_heads, cfg->n_kv_heads, cfg->head_dim);
    if (cfg->tile_q < 0 || cfg->tile_k < 0) return vla_error(VLA_ERR_INVALID_ARG, "attention: negative tile size");
    VLA_TRY(vla_seqlens_check(qs->cu_seqlens, qs->n_seg, -1, "attention queries"));
    for (int i = 0; i < n_src; i++) {
        VLA_TRY(vla_seqlens_check(ks[i]->cu_seqlens, ks[i]->n_seg, -1, "attention keys"));
        if (ks[i]->n_seg != qs->n_seg)
            return vla_error(VLA_ERR_INVALID_ARG, "attention: %d query samples but %d key samples", qs->n_seg,
                             ks[i]->n_seg);
    }
    return VLA_OK;
}

vla_status vla_attention_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                 const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                 const vla_attn_seqs *ks, vla_attn_stats *stats) {
    const vla_attn_seqs *src[1] = {ks};
    VLA_TRY(check(cfg, qs, 1, src));
    return ops->attention_forward(cfg, out, lse, q, k, v, qs, ks, stats);
}

vla_status vla_attention_backward(const vla_ops *ops, const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                  const float *d_out, const float *q, const float *k, const float *v,
                                  const float *out, const float *lse, const vla_attn_seqs *qs,
                                  const vla_attn_seqs *ks, vla_attn_stats *stats) {
    const vla_attn_seqs *src[1] = {ks};
    VLA_TRY(check(cfg, qs, 1, src));
    return ops->attention_backward(cfg, dq, dk, dv, d_out, q, k, v, out, lse, qs, ks, stats);
}

vla_status vla_attention_forward_cached(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *lse,
                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                        const float *v_cache, const vla_attn_seqs *cs, const float *k_new,
                                        const float *v_new, const vla_attn_seqs *ns, vla_attn_stats *stats) {
    const vla_attn_seqs *src[2] = {cs, ns};
    VLA_TRY(check(cfg, qs, 2, src));
    return ops->attention_forward_cached(cfg, out, lse, q, qs, k_cache, v_cache, cs, k_new, v_new, ns, stats);
}
