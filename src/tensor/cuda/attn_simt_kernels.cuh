/* attn_simt_kernels.cuh — the f32 attention kernels (attn_simt.cu launches them; its opening comment has
 * the algorithm): tiles of 32 queries × 32 keys, 128 threads, four per row. A header, so the CPU tests
 * run these very kernels under an emulation of the CUDA execution model (tests/tensor/cuda_emu.h). */
#ifndef VLA_TENSOR_CUDA_ATTN_SIMT_KERNELS_CUH
#define VLA_TENSOR_CUDA_ATTN_SIMT_KERNELS_CUH

#include <math.h>

#include "base/numfmt.h"
#include "tensor/cuda/attn_kernels.cuh"

#define TQ VLA_SIMT_TILE
#define NTH 128
#define LDP (TQ + 1)

/* rows [start, start + len) of head `head` of x (row stride ld) into s[TQ][ld_s], zero elsewhere */
__device__ __forceinline__ void load_tile(float *s, int ld_s, const float *x, int64_t ld, int32_t start, int32_t len,
                                          int head, int d) {
    for (int idx = threadIdx.x; idx < TQ * d; idx += NTH) {
        int r = idx / d, c = idx % d;
        s[r * ld_s + c] = r < len ? x[(int64_t)(start + r) * ld + (int64_t)head * d + c] : 0.0f;
    }
}

__device__ __forceinline__ void zero_tile(float *s, int ld_s, int d) {
    for (int idx = threadIdx.x; idx < TQ * d; idx += NTH) s[(idx / d) * ld_s + idx % d] = 0.0f;
}

__device__ __forceinline__ float dot_rows(const float *x, const float *y, int d) {
    float acc = 0.0f;
    for (int c = 0; c < d; c++) acc += x[c] * y[c];
    return acc;
}

__global__ void __launch_bounds__(NTH) k_simt_fwd(vla_attn_args a) {
    VLA_DYN_SMEM(float, sm);
    const int d = a.d, LD = d + 1;
    float *Qs = sm, *Ks = Qs + TQ * LD, *Vs = Ks + TQ * LD, *Acc = Vs + TQ * LD, *Ps = Acc + TQ * LD;
    int32_t *kg = (int32_t *)(Ps + TQ * LDP);
    int64_t item = blockIdx.x;
    const vla_attn_tile qt = a.qt[a.q_order[item / a.H]];
    int h = (int)(item % a.H), kvh = h / a.rep;
    int r = threadIdx.x / 4, sub = threadIdx.x % 4;
    load_tile(Qs, LD, a.q, (int64_t)a.H * d, qt.start, qt.len, h, d);
    zero_tile(Acc, LD, d);
    __syncthreads(); /* the accumulators are zeroed by all threads, owned by one each */
    int32_t gi = a.group_q && r < qt.len ? a.group_q[qt.start + r] : 0;
    float m = -INFINITY, l = 0.0f;
    for (int32_t j = qt.first; j < qt.first + qt.n; j++) {
        const vla_attn_tile kt = a.kt[j];
        int cls = vla_attn_tile_class(qt, kt);
        if (cls == VLA_TILE_SKIP) continue;
        __syncthreads(); /* the previous tile's K, V are no longer read */
        int64_t ldk = (int64_t)a.Hkv * d;
        load_tile(Ks, LD, a.k[kt.src], ldk, kt.start, kt.len, kvh, d);
        load_tile(Vs, LD, a.v[kt.src], ldk, kt.start, kt.len, kvh, d);
        if (threadIdx.x < TQ)
            kg[threadIdx.x] = a.group_k[kt.src] && (int)threadIdx.x < kt.len ? a.group_k[kt.src][kt.start + threadIdx.x] : 0;
        __syncthreads();
        float s[TQ / 4], mx = -INFINITY;
#pragma unroll
        for (int t = 0; t < TQ / 4; t++) {
            int kk = sub + 4 * t;
            float acc = dot_rows(Qs + r * LD, Ks + kk * LD, d);
            bool ok = kk < kt.len && (cls == VLA_TILE_FULL || kg[kk] <= gi);
            s[t] = ok ? acc * a.scale : -INFINITY;
            mx = fmaxf(mx, s[t]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float mn = fmaxf(m, mx), mu = mn == -INFINITY ? 0.0f : mn;
        float corr = expf(m - mu), sum = 0.0f;
#pragma unroll
        for (int t = 0; t < TQ / 4; t++) {
            float p = expf(s[t] - mu);
            Ps[r * LDP + sub + 4 * t] = p;
            sum += p;
        }
        l = l * corr + sum;
        m = mn;
        __syncwarp();
        for (int c = sub; c < d; c += 4) {
            float acc = Acc[r * LD + c] * corr;
            for (int kk = 0; kk < TQ; kk++) acc += Ps[r * LDP + kk] * Vs[kk * LD + c];
            Acc[r * LD + c] = acc;
        }
        __syncwarp();
    }
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (r >= qt.len) return;
    int64_t row = (int64_t)(qt.start + r) * a.H + h;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = sub; c < d; c += 4) {
        float o = Acc[r * LD + c] * inv;
        a.out[row * d + c] = o;
        if (a.out_ready) a.out_ready[row * d + c] = vla_nf_f32_to_bf16(o);
    }
    if (sub == 0 && a.lse) a.lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
}

/* dK, dV of one (k-tile, kv head) */
__global__ void __launch_bounds__(NTH) k_simt_dkdv(vla_attn_args a) {
    VLA_DYN_SMEM(float, sm);
    const int d = a.d, LD = d + 1;
    float *Ks = sm, *Vs = Ks + TQ * LD, *Qs = Vs + TQ * LD, *Os = Qs + TQ * LD, *dK = Os + TQ * LD, *dV = dK + TQ * LD;
    float *Ps = dV + TQ * LD, *Ss = Ps + TQ * LDP;
    int32_t *qg = (int32_t *)(Ss + TQ * LDP);
    float *lse_s = (float *)(qg + TQ), *dv_s = lse_s + TQ;
    int64_t item = blockIdx.x / a.kv_splits;
    int32_t part = (int32_t)(blockIdx.x % a.kv_splits);
    const vla_attn_tile kt = a.kt[a.k_order[item / a.Hkv]];
    int kvh = (int)(item % a.Hkv);
    int r = threadIdx.x / 4, sub = threadIdx.x % 4; /* r: the key row */
    int64_t ldk = (int64_t)a.Hkv * d, ldq = (int64_t)a.H * d;
    load_tile(Ks, LD, a.k[0], ldk, kt.start, kt.len, kvh, d);
    load_tile(Vs, LD, a.v[0], ldk, kt.start, kt.len, kvh, d);
    zero_tile(dK, LD, d);
    zero_tile(dV, LD, d);
    __syncthreads();
    int32_t gk = a.group_k[0] && r < kt.len ? a.group_k[0][kt.start + r] : 0;
    int64_t j_lo, j_hi; /* this part's (query head, q-tile) items: head j / n, q-tile first + j % n */
    vla_attn_split_range((int64_t)a.rep * kt.n, a.kv_splits, part, &j_lo, &j_hi);
    for (int64_t j = j_lo; j < j_hi; j++) {
        int h = kvh * a.rep + (int)(j / kt.n);
        {
            const vla_attn_tile qt = a.qt[kt.first + (int32_t)(j % kt.n)];
            int cls = vla_attn_tile_class(qt, kt);
            if (cls == VLA_TILE_SKIP) continue;
            __syncthreads();
            load_tile(Qs, LD, a.q, ldq, qt.start, qt.len, h, d);
            load_tile(Os, LD, a.d_out, ldq, qt.start, qt.len, h, d);
            if (threadIdx.x < TQ) {
                int q = threadIdx.x;
                bool in = q < qt.len;
                int64_t row = (int64_t)(qt.start + q) * a.H + h;
                qg[q] = a.group_q && in ? a.group_q[qt.start + q] : 0;
                lse_s[q] = in ? a.lse_in[row] : -INFINITY;
                dv_s[q] = in ? a.dvec[row] : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int t = 0; t < TQ / 4; t++) {
                int q = sub + 4 * t;
                float s = dot_rows(Ks + r * LD, Qs + q * LD, d), dp = dot_rows(Os + q * LD, Vs + r * LD, d);
                bool ok = q < qt.len && r < kt.len && lse_s[q] != -INFINITY && (cls == VLA_TILE_FULL || gk <= qg[q]);
                float p = ok ? expf(s * a.scale - lse_s[q]) : 0.0f;
                Ps[r * LDP + q] = p;
                Ss[r * LDP + q] = p * (dp - dv_s[q]);
            }
            __syncwarp();
            for (int c = sub; c < d; c += 4) {
                float av = dV[r * LD + c], ak = dK[r * LD + c];
                for (int q = 0; q < TQ; q++) {
                    av += Ps[r * LDP + q] * Os[q * LD + c];
                    ak += Ss[r * LDP + q] * Qs[q * LD + c];
                }
                dV[r * LD + c] = av, dK[r * LD + c] = ak;
            }
            __syncwarp();
        }
    }
    if (r >= kt.len) return;
    int64_t row = (int64_t)(kt.start + r) * a.Hkv + kvh;
    if (a.kv_splits > 1) { /* this part's share, summed into dK/dV by attention.cu */
        float *pk = a.dk_part + part * a.part_stride, *pv = a.dv_part + part * a.part_stride;
        for (int c = sub; c < d; c += 4) pk[row * d + c] = a.scale * dK[r * LD + c], pv[row * d + c] = dV[r * LD + c];
        return;
    }
    for (int c = sub; c < d; c += 4) {
        a.dk[row * d + c] += a.scale * dK[r * LD + c];
        a.dv[row * d + c] += dV[r * LD + c];
    }
}

/* dQ of one (q-tile, head) */
__global__ void __launch_bounds__(NTH) k_simt_dq(vla_attn_args a) {
    VLA_DYN_SMEM(float, sm);
    const int d = a.d, LD = d + 1;
    float *Qs = sm, *Os = Qs + TQ * LD, *Ks = Os + TQ * LD, *Vs = Ks + TQ * LD, *dQ = Vs + TQ * LD;
    float *Ss = dQ + TQ * LD;
    int32_t *kg = (int32_t *)(Ss + TQ * LDP);
    int64_t item = blockIdx.x;
    const vla_attn_tile qt = a.qt[a.q_order[item / a.H]];
    int h = (int)(item % a.H), kvh = h / a.rep;
    int r = threadIdx.x / 4, sub = threadIdx.x % 4;
    int64_t ldk = (int64_t)a.Hkv * d, ldq = (int64_t)a.H * d;
    load_tile(Qs, LD, a.q, ldq, qt.start, qt.len, h, d);
    load_tile(Os, LD, a.d_out, ldq, qt.start, qt.len, h, d);
    zero_tile(dQ, LD, d);
    __syncthreads();
    bool in = r < qt.len;
    int64_t row = (int64_t)(qt.start + r) * a.H + h;
    int32_t gi = a.group_q && in ? a.group_q[qt.start + r] : 0;
    float L = in ? a.lse_in[row] : -INFINITY, Dr = in ? a.dvec[row] : 0.0f;
    for (int32_t j = qt.first; j < qt.first + qt.n; j++) {
        const vla_attn_tile kt = a.kt[j];
        int cls = vla_attn_tile_class(qt, kt);
        if (cls == VLA_TILE_SKIP) continue;
        __syncthreads();
        load_tile(Ks, LD, a.k[0], ldk, kt.start, kt.len, kvh, d);
        load_tile(Vs, LD, a.v[0], ldk, kt.start, kt.len, kvh, d);
        if (threadIdx.x < TQ)
            kg[threadIdx.x] = a.group_k[0] && (int)threadIdx.x < kt.len ? a.group_k[0][kt.start + threadIdx.x] : 0;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < TQ / 4; t++) {
            int kk = sub + 4 * t;
            float s = dot_rows(Qs + r * LD, Ks + kk * LD, d), dp = dot_rows(Os + r * LD, Vs + kk * LD, d);
            bool ok = kk < kt.len && L != -INFINITY && (cls == VLA_TILE_FULL || kg[kk] <= gi);
            float p = ok ? expf(s * a.scale - L) : 0.0f;
            Ss[r * LDP + kk] = p * (dp - Dr);
        }
        __syncwarp();
        for (int c = sub; c < d; c += 4) {
            float acc = dQ[r * LD + c];
            for (int kk = 0; kk < TQ; kk++) acc += Ss[r * LDP + kk] * Ks[kk * LD + c];
            dQ[r * LD + c] = acc;
        }
        __syncwarp();
    }
    if (!in) return;
    for (int c = sub; c < d; c += 4) a.dq[row * d + c] += a.scale * dQ[r * LD + c];
}

#endif
