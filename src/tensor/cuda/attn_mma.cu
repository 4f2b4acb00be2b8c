/* attn_mma.cu — the bf16 tensor-core attention kernels (FlashAttention-2 on
 * mma.sync.m16n8k16, f32 accumulation), what precision BF16 and FP8 run.
 *
 * Written for the shapes these policies have (head dims 48 GR00T DiT, 64
 * VL/DiT, 72 SigLIP, 128 Qwen3, 256 Gemma; MQA/GQA; prefix-LM groups), not
 * for a general library: the head dim is padded to the next of 16, 32, 48,
 * 64, 80, 128, 256 (zeros contribute nothing: the QKᵀ contraction's k-step is
 * 16); tiles are staged into shared memory as bf16 and fragments read from
 * them with ldmatrix, at the row addresses tensor/cuda/mma_layout.h gives
 * (tested on the CPU: the fragments against the PTX layouts, ldmatrix's
 * addresses against an emulation of the instruction). Each kernel comes
 * three ways ("asynchronous staging" below): staging from the f32 tensors,
 * from bf16 copies cast once per call, or from those copies fetched with
 * cp.async while the block computes on the tile before — the same bits,
 * chosen per pass by attention.cu (VLA_CUDA_ATTN_STAGING). docs/cuda.md
 * lists what comes next (bf16 operands written by their producers, wgmma on
 * sm_90a).
 *
 * Forward: a block of 4 warps takes 64 queries (16 per warp) of one head
 * and walks the sample's k-tiles of BK keys: S = Q·Kᵀ in registers, masked
 * by the group rule only in PARTIAL tiles, online softmax in the log2
 * domain (exp2), P re-used in registers as the A operand of P·V.
 * Backward, two passes as the f32 kernels (no atomics): dK/dV per (k-tile of
 * 64 keys, kv head, part of the walk when split — tensor/attn_plan.h; head
 * dim 256's block eight warps, two groups each owning half the columns)
 * recomputing Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ; dQ per
 * (q-tile, head) recomputing S and dP. Or fused (VLA_CUDA_ATTN_BACKWARD=fused,
 * FlashAttention-2's backward): the dK/dV pass also adds dS·K into dQ with
 * f32 atomics, five products per tile pair instead of seven, one pass — the
 * bits of dQ then depend on the order the atomics land in. */
#include "tensor/cuda/attn_mma_kernels.cuh"

/* ---- launch ------------------------------------------------------------------------------------ */


int vla_attn_mma_dpad(int d) {
    static const int pads[] = {16, 32, 48, 64, 80, 128, 256};
    for (int p : pads)
        if (d <= p) return p;
    return 0;
}

void vla_attn_mma_tiles(int d, int *fwd_bq, int *fwd_bk, int *kv_bq, int *kv_bk) {
    int D = vla_attn_mma_dpad(d);
    *fwd_bq = 16 * NW, *fwd_bk = bk_of(D), *kv_bq = kv_bq_of(D), *kv_bk = 16 * NW;
}

template <typename K>
static cudaError_t launch(K kernel, size_t smem, dim3 grid, int threads, const vla_attn_args *a, cudaStream_t s) {
    if (grid.x == 0) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    kernel<<<grid, threads, smem, s>>>(*a);
    return cudaGetLastError();
}

/* Which of a pass's three kernels runs (attention.cu sets a->staging, VLA_CUDA_ATTN_STAGING): the one
 * staging from the f32 tensors (VLA_ATTN_STAGE_F32), or — once the operands are cast to bf16 copies — the
 * plain one staging from those (BF16), the prefetching one where it keeps the plain one's blocks per SM
 * (AUTO), or the prefetching one always (PREFETCH). Its raw tile adds shared memory (head dim 256: 16 KB),
 * which where registers allow two blocks per SM can leave room for one — the dQ pass at head dim 256 on an
 * H100/H200 (the dK/dV pass there is one eight-warp block per SM whatever it stages: AUTO prefetches);
 * whether the prefetch is worth a block is gpu_check's measurement (VLA_CUDA_ATTN_STAGING=prefetch), so by
 * default it costs none. Decided once per kernel. */
static int32_t staged = -1; /* bits 0-2: forward, dK/dV, dQ prefetched at their last launch (the fused backward:
                             * dQ's bit is dK/dV's, whose pass computes it); 3: bf16 copies */

template <typename KP, typename KB, typename KF>
static cudaError_t launch_pass(KP k_pf, size_t smem_pf, KB k_bf16, KF k_f32, size_t smem, int *decided, int bit,
                               dim3 grid, int threads, const vla_attn_args *a, cudaStream_t s) {
    bool pf = a->staging == VLA_ATTN_STAGE_PREFETCH;
    if (a->staging == VLA_ATTN_STAGE_AUTO) {
        if (*decided < 0) {
            int n_pf = 0, n_plain = 0;
            cudaError_t e = cudaFuncSetAttribute(k_pf, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_pf);
            if (e == cudaSuccess)
                e = cudaFuncSetAttribute(k_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n_pf, k_pf, threads, smem_pf);
            if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n_plain, k_bf16, threads, smem);
            if (e != cudaSuccess) return e;
            *decided = n_pf >= n_plain && n_pf > 0;
        }
        pf = *decided == 1;
    }
    bool bf16 = a->staging != VLA_ATTN_STAGE_F32;
    if (staged < 0) staged = 0;
    staged = pf ? staged | (1 << bit) : staged & ~(1 << bit);
    staged = bf16 ? staged | 8 : staged & ~8;
    if (pf) return launch(k_pf, smem_pf, grid, threads, a, s);
    return bf16 ? launch(k_bf16, smem, grid, threads, a, s) : launch(k_f32, smem, grid, threads, a, s);
}

int32_t vla_attn_mma_staged(void) { return staged; }

template <int D>
static cudaError_t fwd(const vla_attn_args *a, cudaStream_t s) {
    constexpr int BK = bk_of(D);
    static int decided = -1;
    return launch_pass(k_mma_fwd<D, BK, true, uint16_t>, vla_attn_smem_fwd(D, 1).bytes,
                       k_mma_fwd<D, BK, false, uint16_t>, k_mma_fwd<D, BK, false, float>, vla_attn_smem_fwd(D, 0).bytes,
                       &decided, 0,
                       dim3((unsigned)(a->n_qt * a->H * (a->q_splits > 1 ? a->q_splits : 1))), NTH, a, s);
}
template <int D>
static cudaError_t dq(const vla_attn_args *a, cudaStream_t s) {
    constexpr int BK = bk_of(D);
    static int decided = -1;
    return launch_pass(k_mma_dq<D, BK, true, uint16_t>, vla_attn_smem_dq(D, 1).bytes,
                       k_mma_dq<D, BK, false, uint16_t>, k_mma_dq<D, BK, false, float>, vla_attn_smem_dq(D, 0).bytes,
                       &decided, 2,
                       dim3((unsigned)(a->n_qt * a->H)), NTH, a, s);
}
template <int D, bool DQ>
static cudaError_t dkdv_pass(const vla_attn_args *a, cudaStream_t s) {
    constexpr int BQ = kv_bq_of(D), DC = dc_of(D);
    static int decided = -1;
    return launch_pass(k_mma_dkdv<D, BQ, DC, true, uint16_t, DQ>, vla_attn_smem_dkdv(D, 1, DQ).bytes,
                       k_mma_dkdv<D, BQ, DC, false, uint16_t, DQ>, k_mma_dkdv<D, BQ, DC, false, float, DQ>,
                       vla_attn_smem_dkdv(D, 0, DQ).bytes, &decided,
                       1, dim3((unsigned)(a->n_kt * a->Hkv * a->kv_splits)), 32 * VLA_ATTN_MMA_KV_WARPS(D), a, s);
}
template <int D>
static cudaError_t dkdv(const vla_attn_args *a, cudaStream_t s) {
    if (!a->fused_dq) return dkdv_pass<D, false>(a, s);
    cudaError_t e = dkdv_pass<D, true>(a, s);
    staged = (staged & ~4) | ((staged & 2) << 1); /* dQ staged as the pass that computed it */
    return e;
}

int vla_attn_mma_dkdv_warp_groups(int d) {
    int D = vla_attn_mma_dpad(d);
    return D ? VLA_ATTN_MMA_KV_WARPS(D) / 4 : 1;
}

#define DISPATCH(F)                                        \
    switch (vla_attn_mma_dpad(a->d)) {                      \
    case 16: return F<16>(a, s);                            \
    case 32: return F<32>(a, s);                            \
    case 48: return F<48>(a, s);                            \
    case 64: return F<64>(a, s);                            \
    case 80: return F<80>(a, s);                            \
    case 128: return F<128>(a, s);                          \
    case 256: return F<256>(a, s);                          \
    default: return cudaErrorInvalidValue;                  \
    }

cudaError_t vla_attn_mma_forward(const vla_attn_args *a, cudaStream_t s) { DISPATCH(fwd) }
cudaError_t vla_attn_mma_dkdv(const vla_attn_args *a, cudaStream_t s) { DISPATCH(dkdv) }
cudaError_t vla_attn_mma_dq(const vla_attn_args *a, cudaStream_t s) { DISPATCH(dq) }
