/* attention_dense.c — reference attention with a materialised additive mask. */
#include "nn/attention_dense.h"

#include <math.h>

#include "tensor/seqlens.h"

static vla_status check(const vla_attn_config *cfg, const vla_attn_seqs *qs, const vla_attn_seqs *ks) {
    if (cfg->n_heads <= 0 || cfg->n_kv_heads <= 0 || cfg->head_dim <= 0 || cfg->n_heads % cfg->n_kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "dense attention: %d heads, %d kv heads, head_dim %d", cfg->n_heads,
                         cfg->n_kv_heads, cfg->head_dim);
    VLA_TRY(vla_seqlens_check(qs->cu_seqlens, qs->n_seg, -1, "dense attention queries"));
    VLA_TRY(vla_seqlens_check(ks->cu_seqlens, ks->n_seg, -1, "dense attention keys"));
    if (qs->n_seg != ks->n_seg)
        return vla_error(VLA_ERR_INVALID_ARG, "dense attention: %d query samples but %d key samples", qs->n_seg,
                         ks->n_seg);
    return VLA_OK;
}

static float scale_of(const vla_attn_config *cfg) {
    return cfg->scale != 0.0f ? cfg->scale : (float)(1.0 / sqrt((double)cfg->head_dim));
}

int64_t vla_attention_dense_probs_floats(const vla_attn_config *cfg, const vla_attn_seqs *qs,
                                         const vla_attn_seqs *ks) {
    return (int64_t)cfg->n_heads * qs->cu_seqlens[qs->n_seg] * ks->cu_seqlens[ks->n_seg];
}

vla_status vla_attention_dense_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *probs,
                                       const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                       const vla_attn_seqs *ks) {
    VLA_TRY(check(cfg, qs, ks));
    int64_t nq = qs->cu_seqlens[qs->n_seg], nk = ks->cu_seqlens[ks->n_seg];
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, d = cfg->head_dim, rep = H / Hkv;
    float *mask = ops->alloc((size_t)(nq * nk > 0 ? nq * nk : 1) * sizeof(float));
    if (!mask) return vla_error(VLA_ERR_NOMEM, "dense attention: cannot allocate a %lldx%lld mask", (long long)nq,
                                (long long)nk);
    ops->attention_mask(mask, qs, ks); /* the materialised mask of the whole pack */
    float s = scale_of(cfg);
    for (int64_t h = 0; h < H; h++) {
        float *P = probs + h * nq * nk;
        int64_t kvh = h / rep;
        ops->sgemm(false, true, nq, nk, d, s, q + h * d, H * d, k + kvh * d, Hkv * d, 0.0f, P, nk);
        ops->add(P, P, mask, nq * nk);
        ops->softmax_rows(P, P, nq, nk);
        ops->sgemm(false, false, nq, d, nk, 1.0f, P, nk, v + kvh * d, Hkv * d, 0.0f, out + h * d, H * d);
    }
    ops->free(mask);
    return VLA_OK;
}

vla_status vla_attention_dense_backward(const vla_ops *ops, const vla_attn_config *cfg, float *dq, float *dk,
                                        float *dv, const float *d_out, const float *q, const float *k,
                                        const float *v, const float *probs, const vla_attn_seqs *qs,
                                        const vla_attn_seqs *ks) {
    VLA_TRY(check(cfg, qs, ks));
    int64_t nq = qs->cu_seqlens[qs->n_seg], nk = ks->cu_seqlens[ks->n_seg];
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, d = cfg->head_dim, rep = H / Hkv;
    float *dS = ops->alloc((size_t)(nq * nk > 0 ? nq * nk : 1) * sizeof(float));
    if (!dS) return vla_error(VLA_ERR_NOMEM, "dense attention backward: cannot allocate %lldx%lld", (long long)nq,
                              (long long)nk);
    float s = scale_of(cfg);
    for (int64_t h = 0; h < H; h++) {
        const float *P = probs + h * nq * nk;
        int64_t kvh = h / rep;
        const float *dO = d_out + h * d;
        /* dV += Pᵀ·dO; dP = dO·Vᵀ; dS = softmax backward; dQ += s·dS·K; dK += s·dSᵀ·Q */
        ops->sgemm(true, false, nk, d, nq, 1.0f, P, nk, dO, H * d, 1.0f, dv + kvh * d, Hkv * d);
        ops->sgemm(false, true, nq, nk, d, 1.0f, dO, H * d, v + kvh * d, Hkv * d, 0.0f, dS, nk);
        ops->softmax_rows_backward(dS, P, dS, nq, nk);
        ops->sgemm(false, false, nq, d, nk, s, dS, nk, k + kvh * d, Hkv * d, 1.0f, dq + h * d, H * d);
        ops->sgemm(true, false, nk, d, nq, s, dS, nk, q + h * d, H * d, 1.0f, dk + kvh * d, Hkv * d);
    }
    ops->free(dS);
    return VLA_OK;
}
