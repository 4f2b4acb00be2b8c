/* attn_kernels.cuh — what the attention kernels receive and the entry
 * points attention.cu launches them through: the f32 kernels
 * (attn_simt.cu) and the bf16 tensor-core kernels (attn_mma.cu). The tiles,
 * their order and the groups come from the host plan (tensor/attn_plan.h),
 * uploaded as one int32 buffer per call. */
#ifndef VLA_TENSOR_CUDA_ATTN_KERNELS_CUH
#define VLA_TENSOR_CUDA_ATTN_KERNELS_CUH

#ifndef VLA_CUDA_EMU /* tests/tensor/cuda_emu.h compiles the f32 kernels on the host: no runtime there */
#include <cuda_runtime.h>
#endif
#include <stdint.h>

extern "C" {
#include "tensor/attn_plan.h"
}

typedef struct {
    /* tensors (device) */
    const float *q, *k[VLA_ATTN_MAX_SRC], *v[VLA_ATTN_MAX_SRC];
    float *out, *lse;                     /* forward */
    uint16_t *out_ready;                  /* forward: NULL, or out's bf16 copy (n_heads·d a multiple of 8: no pad) */
    const float *d_out, *lse_in, *dvec;   /* backward: dO, the forward's lse, rowsum(dO ⊙ O) */
    float *dq, *dk, *dv;
    /* the plan (device) */
    const vla_attn_tile *qt, *kt;
    const int32_t *q_order, *k_order;
    const int32_t *group_q, *group_k[VLA_ATTN_MAX_SRC]; /* NULL: group 0 */
    int32_t H, Hkv, rep, d;
    float scale;
    int64_t n_qt, n_kt;
    /* the dK/dV pass cut in kv_splits parts (tensor/attn_plan.h, "SPLIT
     * dK/dV"): block x takes part x % kv_splits of (k-tile, kv head)
     * x / kv_splits; with more than one part each writes (not adds) its
     * dK·scale and dV into dk_part / dv_part + part·part_stride, in dk's
     * layout, and attention.cu adds the parts into dk / dv in order */
    int32_t kv_splits;
    float *dk_part, *dv_part;
    int64_t part_stride;
    /* the fused backward (bf16 kernels; VLA_CUDA_ATTN_BACKWARD=fused): the dK/dV pass adds dQ too, atomically,
     * and no dQ pass runs; dq_pairs: two elements an atomic (vla_attn_dq_pairs) */
    int32_t fused_dq, dq_pairs;
    /* the forward's walk cut in q_splits parts (tensor/attn_plan.h, "SPLIT KEYS"; bf16 kernels): block x
     * takes part x % q_splits of (q-tile, head) x / q_splits; with more than one part each writes its
     * unnormalised output, running max (log2 domain) and sum into o_part / m_part / l_part + part · (rows ·
     * d, rows, rows), rows = q_rows (the plan's query rows × heads), and attention.cu combines them */
    int32_t q_splits;
    float *o_part, *m_part, *l_part;
    int64_t q_rows;
    /* how the bf16 kernels stage their tiles (VLA_CUDA_ATTN_STAGING; the same bits in every way): from the f32
     * tensors, or from bf16 copies of q, k, v (and dO) that attention.cu casts once per call — qb, kb, vb, dob:
     * [rows][heads][dp], dp = d rounded up to 8, zeros past d — plainly or fetched asynchronously
     * (attn_mma.cu, "asynchronous staging") */
    int32_t staging; /* VLA_ATTN_STAGE_* */
    const uint16_t *qb, *kb[VLA_ATTN_MAX_SRC], *vb[VLA_ATTN_MAX_SRC], *dob;
    int32_t dp;
} vla_attn_args;

enum {
    VLA_ATTN_STAGE_AUTO,     /* bf16 copies; the prefetching kernel where it costs no blocks per SM (default) */
    VLA_ATTN_STAGE_F32,      /* from the f32 tensors, converting while staging (the kernels of 2026-12-06) */
    VLA_ATTN_STAGE_BF16,     /* bf16 copies, staged plainly */
    VLA_ATTN_STAGE_PREFETCH, /* bf16 copies, the prefetching kernel in every pass */
};

/* how a (q-tile, k-tile) pair is computed under the group rule (attn_plan.h: skipped, whole, or masked
 * element by element), from the tiles' group ranges; both kernel families ask it */
#ifdef __CUDACC__
__device__ __forceinline__
#else
static inline
#endif
int vla_attn_tile_class(const vla_attn_tile &q, const vla_attn_tile &k) {
    if (k.gmin > q.gmax) return VLA_TILE_SKIP;
    if (k.gmax <= q.gmin) return VLA_TILE_FULL;
    return VLA_TILE_PARTIAL;
}

/* whether the fused backward may add dQ two elements at a time (sm_90's float2 atomic: 8-byte aligned
 * addresses): an even head dim and dq itself 8-byte aligned (a caller's dq may sit one float into its
 * allocation: test_conformance's misaligned case) */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int32_t vla_attn_dq_pairs(const float *dq, int d) {
    return d % 2 == 0 && ((uintptr_t)dq & 7u) == 0;
}

/* A kernel's dynamic shared memory (the size its launch gives) */
#ifdef VLA_CUDA_EMU
#define VLA_DYN_SMEM(T, name) T *name = (T *)emu_dyn_smem()
#else
#define VLA_DYN_SMEM(T, name) extern __shared__ __align__(16) T name[]
#endif

/* plan p's parts (packed as attn_plan.h's layout l says, at b in device memory) and sizes in the kernels'
 * arguments */
static inline void vla_attn_args_plan(vla_attn_args *a, const int32_t *b, const vla_attn_pack_layout *l,
                                      const vla_attn_plan *p) {
    a->qt = (const vla_attn_tile *)(b + l->qt), a->kt = (const vla_attn_tile *)(b + l->kt);
    a->q_order = b + l->q_order, a->k_order = b + l->k_order;
    a->group_q = l->group_q >= 0 ? b + l->group_q : NULL;
    for (int i = 0; i < VLA_ATTN_MAX_SRC; i++) a->group_k[i] = l->group_k[i] >= 0 ? b + l->group_k[i] : NULL;
    a->H = p->H, a->Hkv = p->Hkv, a->rep = p->rep, a->d = p->d, a->scale = p->scale;
    a->n_qt = p->n_qt, a->n_kt = p->n_kt;
}

/* f32 kernels: 32×32 tiles, head_dim <= 256 (attn_simt.cu; attn_simt_kernels.cuh). A pass's dynamic shared
 * memory: `tiles` tiles of 32 rows × (d + 1) floats, `small` of 32 × 33, `ints` int32 rows of 32 */
#define VLA_SIMT_TILE 32
static inline size_t vla_attn_simt_smem(int d, int tiles, int small, int ints) {
    return ((size_t)tiles * VLA_SIMT_TILE * (size_t)(d + 1) + (size_t)small * VLA_SIMT_TILE * (VLA_SIMT_TILE + 1)) *
               sizeof(float) +
           (size_t)ints * VLA_SIMT_TILE * 4;
}
/* the (tiles, small, ints) of each pass's shared memory */
#define VLA_SIMT_FWD_SMEM 4, 1, 1
#define VLA_SIMT_DKDV_SMEM 6, 2, 3
#define VLA_SIMT_DQ_SMEM 5, 1, 1
#ifndef VLA_CUDA_EMU
cudaError_t vla_attn_simt_forward(const vla_attn_args *a, cudaStream_t s);
cudaError_t vla_attn_simt_dkdv(const vla_attn_args *a, cudaStream_t s);
cudaError_t vla_attn_simt_dq(const vla_attn_args *a, cudaStream_t s);

/* bf16 tensor-core kernels (attn_mma.cu): head_dim padded to the next of
 * 16, 32, 48, 64, 80, 128, 256; the tile shapes each pass uses: */
int vla_attn_mma_dpad(int d); /* 0: not supported */
void vla_attn_mma_tiles(int d, int *fwd_bq, int *fwd_bk, int *kv_bq, int *kv_bk);
cudaError_t vla_attn_mma_forward(const vla_attn_args *a, cudaStream_t s);
cudaError_t vla_attn_mma_dkdv(const vla_attn_args *a, cudaStream_t s); /* and dQ, when a->fused_dq */
/* the dK/dV pass's groups of four warps per block (one block per (k-tile, kv head, part)): 2 for head dim
 * 256, else 1 */
int vla_attn_mma_dkdv_warp_groups(int d);
cudaError_t vla_attn_mma_dq(const vla_attn_args *a, cudaStream_t s);
/* how the passes staged at their last launch: bits 0-2 forward, dK/dV, dQ prefetched; bit 3 from bf16
 * copies (-1: none ran) */
int32_t vla_attn_mma_staged(void);
#endif /* VLA_CUDA_EMU */

#endif
