/* attn_simt.cu — the f32 attention kernels (FlashAttention-2's algorithm on
 * CUDA cores): what precision FP32 runs, and the fallback for anything the
 * tensor-core kernels do not take (VLA_CUDA_ATTN=simt forces it).
 *
 * Tiles of 32 queries × 32 keys; 128 threads, four per row ("a quad": the
 * row's scores are split over its four threads, its output columns too).
 * Tiles and the output accumulators live in shared memory with a row
 * stride of head_dim + 1 (no bank conflicts between rows), so one kernel
 * serves every head dim up to 256 (no per-size instantiation). The forward
 * keeps a running max and sum per row (online softmax) and writes out and
 * the log-sum-exp; the backward is two passes that recompute the
 * probabilities from the saved log-sum-exp: dK/dV per (k-tile, kv head),
 * summing over the group's query heads and the sample's q-tiles, then dQ per
 * (q-tile, head) — every output row owned by one block, no atomics,
 * deterministic (a split dK/dV walk, tensor/attn_plan.h, writes its parts
 * apart and attention.cu sums them in order). Tiles the group rule rules
 * out are skipped; tiles it leaves whole are computed without a
 * per-element test (tensor/attn_plan.h). */
#include "tensor/cuda/attn_kernels.cuh"


#include "tensor/cuda/attn_simt_kernels.cuh"

template <typename K>
static cudaError_t launch(K kernel, int tiles, int small, int ints, int64_t blocks, const vla_attn_args *a,
                          cudaStream_t s) {
    if (blocks <= 0) return cudaSuccess;
    size_t smem = vla_attn_simt_smem(a->d, tiles, small, ints);
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    kernel<<<(unsigned)blocks, NTH, smem, s>>>(*a);
    return cudaGetLastError();
}

cudaError_t vla_attn_simt_forward(const vla_attn_args *a, cudaStream_t s) {
    return launch(k_simt_fwd, VLA_SIMT_FWD_SMEM, a->n_qt * a->H, a, s);
}
cudaError_t vla_attn_simt_dkdv(const vla_attn_args *a, cudaStream_t s) {
    return launch(k_simt_dkdv, VLA_SIMT_DKDV_SMEM, a->n_kt * a->Hkv * a->kv_splits, a, s);
}
cudaError_t vla_attn_simt_dq(const vla_attn_args *a, cudaStream_t s) {
    return launch(k_simt_dq, VLA_SIMT_DQ_SMEM, a->n_qt * a->H, a, s);
}
