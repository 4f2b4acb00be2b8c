/* attention.cu — the packed attention ops of the cuda backend (forward,
 * backward, KV-cached forward): the host side. Checks and tiles the packed
 * batch (tensor/attn_plan.h, the cpu backend's tiling: the same errors,
 * tiles with their group ranges, MQA folding — a folded q-tile keeps the
 * kernel's rows — heaviest-first order), uploads the plan and the
 * groups in one copy — once per distinct layout, cached — and launches the f32 kernels (attn_simt.cu) for
 * precision FP32 or the bf16 tensor-core kernels (attn_mma.cu) for BF16 and
 * FP8 — VLA_CUDA_ATTN=simt forces the f32 ones. Never a mask or a score
 * matrix in memory. docs/cuda.md, "Attention", says why these are our own
 * kernels rather than cuDNN's SDPA. */
#include "tensor/cuda/internal.cuh"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "tensor/cuda/attn_kernels.cuh"
#include "tensor/cuda/attn_parts_kernels.cuh"
#include "base/numfmt.h"
extern "C" {
#include "tensor/cuda/gemm_plan.h"
}
extern "C" {
#include "tensor/key_cache.h"
}

static bool use_mma(const vla_attn_config *cfg) {
    return cfg->precision != VLA_PREC_FP32 && vla_cuda_ctx_get()->attn_impl == 0 && vla_attn_mma_dpad(cfg->head_dim);
}

static vla_status check_dim(const vla_attn_config *cfg) {
    if (cfg->head_dim > 256)
        return vla_error(VLA_ERR_UNSUPPORTED, "attention: head_dim %d: the cuda backend's kernels take up to 256",
                         cfg->head_dim);
    return VLA_OK;
}

/* A plan, uploaded: built on the host (tensor/attn_plan.h), packed and
 * copied to device memory of its own, then kept in a cache keyed by its
 * inputs (attn_plan.h, "PLAN CACHE"), so the layers of a batch — and the
 * flow steps of a chunk — share one upload. */
typedef struct {
    vla_attn_plan p;
    void *dev;
    bool recorded; /* dev is a recording's memory (graph.cu): it lives and dies with the recording */
    vla_attn_pack_layout l;
} dev_plan;

#define PLAN_CACHE_ENTRIES 32
/* Held for a whole attention op: a plan from the cache stays in use until the op has issued its
 * kernels, so no other host thread may evict it meanwhile (ops on one stream serialise anyway). */
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static vla_key_cache *plan_cache;
static int64_t plan_builds; /* cache misses so far (plans built and uploaded) */
static int32_t last_kv_splits = 0; /* the parts of the last backward's dK/dV walk (bench attention prints it) */
static int32_t last_backward_passes = 0; /* the kernels over the tiles the last backward ran: 2, or 1 fused */
static int32_t last_q_splits = 0;  /* the parts of the last bf16 forward's key walk (SPLIT KEYS) */

static void dev_plan_destroy(void *v) {
    dev_plan *dp = (dev_plan *)v;
    if (!dp) return;
    if (dp->dev && !dp->recorded) vla_cuda_scratch_free(dp->dev); /* stream-ordered: its readers are issued */
    vla_attn_plan_free(&dp->p);
    free(dp);
}

static vla_status dev_plan_build(dev_plan **out, const vla_attn_config *cfg, int bq, int bk,
                                 const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks) {
    dev_plan *dp = (dev_plan *)calloc(1, sizeof *dp);
    if (!dp) return vla_error(VLA_ERR_NOMEM, "attention: out of memory for a plan");
    vla_status st = vla_attn_plan_make(&dp->p, cfg, bq, bk, VLA_ATTN_FOLD_ROWS, qs, n_src, ks);
    if (st != VLA_OK) {
        free(dp);
        return st;
    }
    dp->l = vla_attn_plan_pack_layout(&dp->p, qs, n_src, ks);
    size_t bytes = sizeof(int32_t) * (size_t)dp->l.words;
    int32_t *host = (int32_t *)malloc(bytes);
    if (!host) {
        dev_plan_destroy(dp);
        return vla_error(VLA_ERR_NOMEM, "attention: out of memory for the plan (%lld words)", (long long)dp->l.words);
    }
    vla_attn_plan_pack(&dp->p, &dp->l, qs, n_src, ks, host);
    /* through the pinned ring (no host wait), then into the plan's own memory */
    vla_cuda_upload_t up = vla_cuda_upload(host, bytes);
    free(host);
    if (vla_cuda_capturing()) { /* recording a region: the plan stays with the recording, read in place */
        dp->dev = up.dev, dp->recorded = true;
        *out = dp;
        return VLA_OK;
    }
    dp->dev = vla_cuda_scratch(bytes);
    VLA_CUDA_OK(cudaMemcpyAsync(dp->dev, up.dev, bytes, cudaMemcpyDeviceToDevice, vla_cuda_stream()),
                "attention: plan upload");
    vla_cuda_upload_release(&up);
    __atomic_fetch_add(&plan_builds, 1, __ATOMIC_RELAXED);
    *out = dp;
    return VLA_OK;
}

/* The plan for these inputs: from the cache, or built now and kept there.
 * *owned: the caller destroys it after use (the cache could not keep it).
 * Called with plan_lock held. */
static vla_status dev_plan_get(dev_plan **out, bool *owned, const vla_attn_config *cfg, int bq, int bk,
                               const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks) {
    VLA_TRY(vla_attn_check(cfg, qs, n_src, ks)); /* the key reads the layout: it must be valid first */
    int64_t n = vla_attn_plan_key(cfg, bq, bk, VLA_ATTN_FOLD_ROWS, qs, n_src, ks, NULL);
    int32_t *key = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!key) return vla_error(VLA_ERR_NOMEM, "attention: out of memory for a plan key");
    vla_attn_plan_key(cfg, bq, bk, VLA_ATTN_FOLD_ROWS, qs, n_src, ks, key);
    if (!plan_cache) plan_cache = vla_key_cache_new(PLAN_CACHE_ENTRIES, dev_plan_destroy);
    /* recording a region (graph.cu): a plan of its own, which no eviction can free under the graph */
    bool recording = vla_cuda_capturing();
    dev_plan *dp = plan_cache && !recording ? (dev_plan *)vla_key_cache_get(plan_cache, key, sizeof(int32_t) * (size_t)n) : NULL;
    vla_status st = VLA_OK;
    *owned = false;
    if (recording) {
        st = dev_plan_build(&dp, cfg, bq, bk, qs, n_src, ks);
        *owned = true;
    } else if (!dp) {
        st = dev_plan_build(&dp, cfg, bq, bk, qs, n_src, ks);
        if (st == VLA_OK && !(plan_cache && vla_key_cache_put(plan_cache, key, sizeof(int32_t) * (size_t)n, dp))) *owned = true;
    }
    free(key);
    *out = dp;
    return st;
}

static void dev_plan_done(dev_plan *dp, bool owned) {
    if (owned) dev_plan_destroy(dp);
}

extern "C" int64_t vla_cuda_attn_plan_builds(void) { return __atomic_load_n(&plan_builds, __ATOMIC_RELAXED); }

/* one of the figures above, read under the lock the calls write them under */
static int32_t read_locked(const int32_t *v) {
    pthread_mutex_lock(&plan_lock);
    int32_t s = *v;
    pthread_mutex_unlock(&plan_lock);
    return s;
}

extern "C" int32_t vla_cuda_attn_last_kv_splits(void) { return read_locked(&last_kv_splits); }
extern "C" int32_t vla_cuda_attn_last_backward_passes(void) { return read_locked(&last_backward_passes); }
extern "C" int32_t vla_cuda_attn_last_q_splits(void) { return read_locked(&last_q_splits); }

extern "C" int32_t vla_cuda_attn_last_staging(void) {
    pthread_mutex_lock(&plan_lock);
    int32_t s = vla_attn_mma_staged();
    pthread_mutex_unlock(&plan_lock);
    return s;
}

static vla_status launched(cudaError_t e, const char *what) {
    if (e != cudaSuccess) vla_cuda_error(what, e);
    vla_cuda_check(what);
    return VLA_OK;
}

/* ---- the operands' bf16 copies (attn_mma.cu, "asynchronous staging") ----------------------------------- */

/* a GEMM operand's bf16 cast (gemm.cu, prepare_operand): [rows][k] f32 → [rows][vla_q_bf16_ld(k)] bf16 */
static const vla_gemm_q BF16_CAST = {VLA_PREC_BF16, {VLA_FP8_E4M3, NULL, NULL}, {VLA_FP8_E4M3, NULL, NULL}, NULL, NULL};

/* How the bf16 kernels stage (VLA_CUDA_ATTN_STAGING), and unless from the f32 tensors, their operands' bf16
 * copies: each src[i] ([rows[i]][d], rows = tokens × heads) cast as a GEMM operand is — [rows][dp] bf16, dp =
 * d rounded up to 8, zeros past d, the rounding the kernels' own staging does, so every way gives the same
 * bits — into one scratch allocation, *dst[i] pointed into it, all of them by one launch (cast_rows.h).
 * Returns that allocation for the caller to free (stream-ordered) once its kernels are issued; NULL when
 * staging from f32. */
static void *bf16_copies(vla_attn_args *a, int n, const float *const *src, const int64_t *rows,
                         const uint16_t **const *dst) {
    a->staging = vla_cuda_ctx_get()->attn_staging;
    a->dp = (int32_t)vla_q_bf16_ld(a->d);
    if (a->staging == VLA_ATTN_STAGE_F32) return NULL;
    static_assert(1 + 2 * VLA_ATTN_MAX_SRC <= VLA_CAST_ROWS_MAX, "one launch casts a forward's q and every k, v");
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (size_t)rows[i] * (size_t)a->dp * 2;
    uint16_t *buf = (uint16_t *)vla_cuda_scratch(total ? total : 16);
    /* the kernels' 16-byte copies need it (the pool hands out 256-byte blocks); NULL: a recording that has
     * already failed (it is thrown away and the body runs again plainly) */
    if (!buf || (uintptr_t)buf & 15) {
        a->staging = VLA_ATTN_STAGE_F32;
        return buf;
    }
    vla_cast_rows c;
    memset(&c, 0, sizeof c);
    c.n = n, c.K = a->d, c.kp = a->dp;
    uint16_t *at = buf;
    for (int i = 0; i < n; i++) {
        *dst[i] = at;
        c.src[i] = src[i], c.dst[i] = at, c.ld[i] = a->d, c.rows[i] = rows[i];
        at += rows[i] * a->dp;
    }
    if (!vla_cuda_cast_rows_bf16(&c)) a->staging = VLA_ATTN_STAGE_F32; /* one launch for the call's operands */
    return buf;
}

/* the plan's parts in the kernels' arguments */
static void args_plan(vla_attn_args *a, const dev_plan *dp) { vla_attn_args_plan(a, (const int32_t *)dp->dev, &dp->l, &dp->p); }

/* The grid a split walk aims at (the forward's keys, the backward's dK/dV): four blocks of four warps per SM
 * of an H100/H200 (132 SMs; two resident at a time for head dim 256 — in dK/dV one block of eight warps,
 * counted as two — so two waves, whose tails even out). More
 * parts cost little: the work is the same, each part stages its fixed tile once more and writes a partial
 * that one pass combines. A constant, not the device's count, so that the split — and the bits — depend on
 * the shapes alone. */
#define SPLIT_TARGET_BLOCKS 528

/* the parts' kernels (k_combine_parts, k_sum_parts): attn_parts_kernels.cuh */

static vla_status forward_locked(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                 const vla_attn_seqs *qs, int n_src, const vla_attn_seqs *const *ks,
                                 const float *const *k, const float *const *v, vla_attn_stats *stats,
                                 void *out_ready) {
    VLA_TRY(check_dim(cfg));
    bool mma = use_mma(cfg);
    int bq = VLA_SIMT_TILE, bk = VLA_SIMT_TILE, kbq, kbk;
    if (mma) vla_attn_mma_tiles(cfg->head_dim, &bq, &bk, &kbq, &kbk);
    dev_plan *dp;
    bool owned;
    VLA_TRY(dev_plan_get(&dp, &owned, cfg, bq, bk, qs, n_src, ks));
    vla_attn_plan_stats(&dp->p, stats);
    vla_attn_args a;
    memset(&a, 0, sizeof a);
    args_plan(&a, dp);
    a.q = q, a.out = out, a.lse = lse;
    /* the o-projection's bf16 copy in the kernels' store when its rows need no pad (n_heads·d a multiple of 8:
     * the copy's index is out's), else cast after them */
    int64_t width = (int64_t)cfg->n_heads * cfg->head_dim, tokens = qs->cu_seqlens[qs->n_seg];
    bool in_kernel = out_ready && vla_q_bf16_ld(width) == width;
    a.out_ready = in_kernel ? (uint16_t *)out_ready : NULL;
    for (int i = 0; i < n_src; i++) a.k[i] = k[i], a.v[i] = v[i];
    void *copies = NULL;
    if (mma) { /* q, then each source's k and v */
        const float *src[1 + 2 * VLA_ATTN_MAX_SRC] = {q};
        const uint16_t **dst[1 + 2 * VLA_ATTN_MAX_SRC] = {&a.qb};
        int64_t rows[1 + 2 * VLA_ATTN_MAX_SRC] = {tokens * cfg->n_heads};
        for (int i = 0; i < n_src; i++) {
            int64_t kr = (int64_t)ks[i]->cu_seqlens[ks[i]->n_seg] * cfg->n_kv_heads;
            src[1 + 2 * i] = k[i], dst[1 + 2 * i] = &a.kb[i], rows[1 + 2 * i] = kr;
            src[2 + 2 * i] = v[i], dst[2 + 2 * i] = &a.vb[i], rows[2 + 2 * i] = kr;
        }
        copies = bf16_copies(&a, 1 + 2 * n_src, src, rows, dst);
    }
    /* the key walk cut in parts when the grid is small for the device (attn_plan.h, "SPLIT KEYS") */
    float *parts = NULL;
    a.q_splits = 1;
    if (mma) {
        int forced = vla_cuda_ctx_get()->attn_q_splits;
        a.q_splits = forced ? forced
                            : vla_attn_walk_splits(dp->p.n_qt * dp->p.H, vla_attn_plan_max_q_walk(&dp->p), SPLIT_TARGET_BLOCKS);
        a.q_rows = dp->p.nq * dp->p.H;
        if (a.q_splits > 1 && a.q_rows > 0) {
            int64_t S = a.q_splits, n = a.q_rows;
            parts = (float *)vla_cuda_scratch(sizeof(float) * (size_t)(S * n * (cfg->head_dim + 2)));
            a.o_part = parts, a.m_part = parts + S * n * cfg->head_dim, a.l_part = a.m_part + S * n;
        } else {
            a.q_splits = 1;
        }
        last_q_splits = a.q_splits;
    }
    cudaStream_t s = vla_cuda_stream();
    vla_status st = mma ? launched(vla_attn_mma_forward(&a, s), "attention_forward (bf16 tensor cores)")
                        : launched(vla_attn_simt_forward(&a, s), "attention_forward (f32)");
    if (st == VLA_OK && parts) {
        int64_t n = a.q_rows * cfg->head_dim;
        k_combine_parts<<<vla_cuda_blocks(n, 256), 256, 0, s>>>(out, lse, a.out_ready, a.o_part, a.m_part, a.l_part,
                                                             a.q_rows, cfg->head_dim, a.q_splits);
        st = launched(cudaGetLastError(), "attention_forward: the key walk's parts combined");
    }
    if (parts) vla_cuda_scratch_free(parts);
    if (copies) vla_cuda_scratch_free(copies);
    dev_plan_done(dp, owned);
    if (st == VLA_OK && out_ready && !in_kernel) vla_cuda_prepare_operand(&BF16_CAST, true, tokens, width, out, width, out_ready);
    return st;
}

static vla_status forward(const vla_attn_config *cfg, float *out, float *lse, const float *q, const vla_attn_seqs *qs,
                          int n_src, const vla_attn_seqs *const *ks, const float *const *k, const float *const *v,
                          vla_attn_stats *stats, void *out_ready) {
    pthread_mutex_lock(&plan_lock);
    vla_status st = forward_locked(cfg, out, lse, q, qs, n_src, ks, k, v, stats, out_ready);
    pthread_mutex_unlock(&plan_lock);
    return st;
}

extern "C" vla_status vla_cuda_attention_forward(const vla_attn_config *cfg, float *out, float *lse, const float *q,
                                                 const float *k, const float *v, const vla_attn_seqs *qs,
                                                 const vla_attn_seqs *ks, vla_attn_stats *stats, void *out_ready) {
    const vla_attn_seqs *srcs[1] = {ks};
    const float *kk[1] = {k}, *vv[1] = {v};
    return forward(cfg, out, lse, q, qs, 1, srcs, kk, vv, stats, out_ready);
}

extern "C" vla_status vla_cuda_attention_forward_cached(const vla_attn_config *cfg, float *out, float *lse,
                                                        const float *q, const vla_attn_seqs *qs, const float *k_cache,
                                                        const float *v_cache, const vla_attn_seqs *cs,
                                                        const float *k_new, const float *v_new,
                                                        const vla_attn_seqs *ns, vla_attn_stats *stats) {
    const vla_attn_seqs *srcs[2] = {cs, ns};
    const float *kk[2] = {k_cache, k_new}, *vv[2] = {v_cache, v_new};
    return forward(cfg, out, lse, q, qs, 2, srcs, kk, vv, stats, NULL);
}

/* dvec[row] = Σ_c dO[row, c]·O[row, c] (f32 of a double sum), one warp per (token, head) row */
__global__ void k_rowdot(float *dvec, const float *dout, const float *o, int64_t rows, int d) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    double s = 0.0;
    for (int c = lane; c < d; c += 32) s += (double)dout[row * d + c] * (double)o[row * d + c];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) dvec[row] = (float)s;
}


static vla_status backward_locked(const vla_attn_config *cfg, float *dq, float *dk, float *dv, const float *d_out,
                                  const float *q, const float *k, const float *v, const float *out, const float *lse,
                                  const vla_attn_seqs *qs, const vla_attn_seqs *ks, vla_attn_stats *stats) {
    VLA_TRY(check_dim(cfg));
    bool mma = use_mma(cfg);
    int bq = VLA_SIMT_TILE, bk = VLA_SIMT_TILE, kbq = VLA_SIMT_TILE, kbk = VLA_SIMT_TILE;
    if (mma) vla_attn_mma_tiles(cfg->head_dim, &bq, &bk, &kbq, &kbk);
    const vla_attn_seqs *srcs[1] = {ks};
    dev_plan *pq, *pk = NULL;
    bool owned_q, owned_k = false;
    VLA_TRY(dev_plan_get(&pq, &owned_q, cfg, bq, bk, qs, 1, srcs));
    bool shared = kbq == bq && kbk == bk;
    if (!shared) {
        vla_status st = dev_plan_get(&pk, &owned_k, cfg, kbq, kbk, qs, 1, srcs);
        if (st != VLA_OK) {
            dev_plan_done(pq, owned_q);
            return st;
        }
    }
    vla_attn_plan_stats(&pq->p, stats);
    int64_t rows = pq->p.nq * pq->p.H;
    cudaStream_t s = vla_cuda_stream();
    float *dvec = (float *)vla_cuda_scratch(sizeof(float) * (size_t)(rows > 0 ? rows : 1));
    if (rows > 0) {
        k_rowdot<<<(unsigned)((rows + 7) / 8), 256, 0, s>>>(dvec, d_out, out, rows, cfg->head_dim);
        vla_cuda_check("attention_backward: rowsum(dO·O)");
    }
    vla_attn_args a;
    memset(&a, 0, sizeof a);
    a.q = q, a.k[0] = k, a.v[0] = v, a.d_out = d_out, a.lse_in = lse, a.dvec = dvec, a.dq = dq, a.dk = dk, a.dv = dv;
    const dev_plan *kp = shared ? pq : pk;
    args_plan(&a, kp);
    void *copies = NULL;
    if (mma) { /* q, dO, k, v */
        int64_t qr = (int64_t)qs->cu_seqlens[qs->n_seg] * cfg->n_heads, kr = (int64_t)ks->cu_seqlens[ks->n_seg] * cfg->n_kv_heads;
        const float *src[4] = {q, d_out, k, v};
        const uint16_t **dst[4] = {&a.qb, &a.dob, &a.kb[0], &a.vb[0]};
        int64_t rows[4] = {qr, qr, kr, kr};
        copies = bf16_copies(&a, 4, src, rows, dst);
    }
    /* the dK/dV walk cut in parts when its grid is too small for the device (tensor/attn_plan.h), counted in
     * blocks of four warps (head dim 256's blocks are two such groups) */
    int64_t kv_blocks = kp->p.n_kt * kp->p.Hkv * (mma ? vla_attn_mma_dkdv_warp_groups(cfg->head_dim) : 1);
    int forced = vla_cuda_ctx_get()->attn_kv_splits;
    a.kv_splits = forced ? forced : vla_attn_walk_splits(kv_blocks, vla_attn_plan_max_kv_walk(&kp->p), SPLIT_TARGET_BLOCKS);
    int64_t n_kv = kp->p.nk[0] * kp->p.Hkv * kp->p.d;
    float *parts = NULL;
    if (a.kv_splits > 1 && n_kv > 0) {
        a.part_stride = n_kv;
        parts = (float *)vla_cuda_scratch(sizeof(float) * (size_t)(2 * a.kv_splits * n_kv));
        a.dk_part = parts, a.dv_part = parts + a.kv_splits * n_kv;
        /* every element is written by its part's block; zeroed anyway, so a key no k-tile covers adds 0 */
        VLA_CUDA_OK(cudaMemsetAsync(parts, 0, sizeof(float) * (size_t)(2 * a.kv_splits * n_kv), s),
                    "attention_backward: dK/dV parts");
    } else {
        a.kv_splits = 1;
    }
    last_kv_splits = a.kv_splits;
    /* the fused backward (bf16 kernels only): dQ added by the dK/dV pass, atomically — asked by the config
     * (bwd_mode FUSED), or for AUTO by VLA_CUDA_ATTN_BACKWARD=fused (two passes otherwise) */
    a.fused_dq = mma && (cfg->bwd_mode == VLA_ATTN_BWD_FUSED ||
                         (cfg->bwd_mode == VLA_ATTN_BWD_AUTO && vla_cuda_ctx_get()->attn_fused_dq));
    a.dq_pairs = vla_attn_dq_pairs(dq, cfg->head_dim);
    last_backward_passes = a.fused_dq ? 1 : 2;
    vla_status st = mma ? launched(vla_attn_mma_dkdv(&a, s), a.fused_dq ? "attention_backward dK/dV/dQ (bf16 tensor "
                                                                         "cores, fused)"
                                                                       : "attention_backward dK/dV (bf16 tensor cores)")
                        : launched(vla_attn_simt_dkdv(&a, s), "attention_backward dK/dV (f32)");
    if (st == VLA_OK && parts) {
        k_sum_parts<<<vla_cuda_blocks(n_kv, 256), 256, 0, s>>>(dk, dv, a.dk_part, a.dv_part, n_kv, a.kv_splits);
        st = launched(cudaGetLastError(), "attention_backward: dK/dV parts summed");
    }
    if (parts) vla_cuda_scratch_free(parts);
    args_plan(&a, pq);
    if (st == VLA_OK && !a.fused_dq)
        st = mma ? launched(vla_attn_mma_dq(&a, s), "attention_backward dQ (bf16 tensor cores)")
                 : launched(vla_attn_simt_dq(&a, s), "attention_backward dQ (f32)");
    if (copies) vla_cuda_scratch_free(copies);
    vla_cuda_scratch_free(dvec);
    if (!shared) dev_plan_done(pk, owned_k);
    dev_plan_done(pq, owned_q);
    return st;
}

extern "C" vla_status vla_cuda_attention_backward(const vla_attn_config *cfg, float *dq, float *dk, float *dv,
                                                  const float *d_out, const float *q, const float *k, const float *v,
                                                  const float *out, const float *lse, const vla_attn_seqs *qs,
                                                  const vla_attn_seqs *ks, vla_attn_stats *stats) {
    pthread_mutex_lock(&plan_lock);
    vla_status st = backward_locked(cfg, dq, dk, dv, d_out, q, k, v, out, lse, qs, ks, stats);
    pthread_mutex_unlock(&plan_lock);
    return st;
}
