/* zero1.c — ZeRO-1 sharded AdamW (+ EMA) over segments of a parameter
 * buffer, with shard state files that can be re-cut for another world size
 * (zero1.h). */
#include "distributed/zero1.h"

#include "base/fsutil.h"
#include "distributed/comm_device.h"
#include "distributed/nccl_plan.h"
#include "io/safetensors.h"
#include "tensor/ops.h"
#include "tensor/step_guard.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZERO1_FORMAT "vla-zero1-v1"
/* Σg² runs over fixed blocks whose partial sums are added in order, so the
 * result is the same whatever the number of threads (a bit-exact resume
 * relies on it). */
#define SUMSQ_BLOCK 65536

struct vla_zero1 {
    vla_comm *comm;
    const vla_ops *ops;
    vla_zero1_segment *seg;
    int64_t *flat; /* n_seg + 1 prefix sums: segment i is flat[i], flat[i+1]) */
    int n_seg;
    int64_t numel, lo, hi;
    float *m, *v;   /* shard moments (backend) */
    float *ema;     /* shard EMA, NULL: none (backend) */
    double ema_decay;
    float *gshard;  /* scratch shard: reduce-scatter target, grad_mul·g (backend) */
    float *gather;  /* host: flat scratch of numel for the all-gathers (multi-segment layouts, staging) */
    float *hgrad;   /* host: staging of the whole gradient for a reduce-scatter (backends off the host) */
    int64_t *counts, *displs;
    /* NCCL on the backend's memory (cuda): the padded flat buffer of
     * equal blocks (distributed/nccl_plan.h) and this rank's received block */
    vla_devcomm *dev;
    vla_nccl_shards shards;
    float *dpad, *drecv;
    /* the gradient norm's pieces (one per segment at most) and their Σg²,
     * host memory for one ops->sum_squares_multi per step */
    const float **ss_x;
    int64_t *ss_n;
    double *ss_out;
    /* one step's pieces as the multi-tensor slots take them (adamw_multi,
     * ema_multi): parameters, gradient, moments, EMA, sizes, decay */
    float **pl_w, **pl_m, **pl_v, **pl_e;
    const float **pl_g;
    int64_t *pl_n;
    bool *pl_decay;
    float *guard; /* a queued step's guard (backend [1], ops->clip_coef), made at its first use */
    uint64_t layout; /* hash of the segments, stored in the shard files */
    int64_t step;
};

void vla_zero1_shard_of(int64_t numel, int r, int world, int64_t *lo, int64_t *hi) {
    *lo = numel / world * r + (numel % world) * r / world;
    *hi = numel / world * (r + 1) + (numel % world) * (r + 1) / world;
}

static int cmp_seg_offset(const void *a, const void *b) {
    const vla_zero1_segment *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static uint64_t fnv(uint64_t h, int64_t x) {
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)((x >> (8 * i)) & 0xff)) * 1099511628211ull;
    return h;
}

/* backend memory of n floats, zeroed; NULL when out of memory */
static float *dev_zeros(const vla_ops *ops, size_t n) {
    float *p = ops->alloc(sizeof(float) * (n ? n : 1));
    if (p) ops->fill(p, 0.0f, (int64_t)n);
    return p;
}

static void dev_free(const vla_ops *ops, void *p) {
    if (p) ops->free(p);
}

vla_status vla_zero1_create_segments(vla_comm *comm, const vla_ops *ops, const vla_zero1_segment *seg, int n_seg,
                                     vla_zero1 **out) {
    *out = NULL;
    if (!ops) return vla_error(VLA_ERR_INVALID_ARG, "zero1: no op table");
    int world = vla_comm_world(comm), rank = vla_comm_rank(comm);
    if (n_seg < 1 || !seg) return vla_error(VLA_ERR_INVALID_ARG, "zero1: no segments");
    int64_t numel = 0;
    for (int i = 0; i < n_seg; i++) {
        if (seg[i].offset < 0 || seg[i].numel < 0 || seg[i].offset > INT64_MAX - seg[i].numel)
            return vla_error(VLA_ERR_INVALID_ARG, "zero1: segment %d [%lld, +%lld) is not valid", i,
                             (long long)seg[i].offset, (long long)seg[i].numel);
        numel += seg[i].numel;
    }
    if (numel < world)
        return vla_error(VLA_ERR_INVALID_ARG, "zero1: %lld parameters cannot be sharded over %d ranks",
                         (long long)numel, world);
    vla_zero1_segment *sorted = malloc(sizeof *sorted * (size_t)n_seg);
    if (!sorted) return vla_error(VLA_ERR_NOMEM, "zero1: out of memory");
    memcpy(sorted, seg, sizeof *sorted * (size_t)n_seg);
    qsort(sorted, (size_t)n_seg, sizeof *sorted, cmp_seg_offset);
    /* sorted by offset, each non-empty segment must start at or after the end of all earlier ones */
    int64_t end = 0;
    int last = -1;
    for (int i = 0; i < n_seg; i++) {
        if (sorted[i].numel == 0) continue;
        if (last >= 0 && sorted[i].offset < end) {
            vla_status st = vla_error(VLA_ERR_INVALID_ARG, "zero1: segments at %lld (+%lld) and %lld (+%lld) overlap",
                                      (long long)sorted[last].offset, (long long)sorted[last].numel,
                                      (long long)sorted[i].offset, (long long)sorted[i].numel);
            free(sorted);
            return st;
        }
        end = sorted[i].offset + sorted[i].numel, last = i;
    }
    free(sorted);
    vla_zero1 *z = calloc(1, sizeof *z);
    if (!z) return vla_error(VLA_ERR_NOMEM, "zero1: out of memory");
    z->comm = comm, z->ops = ops, z->numel = numel, z->n_seg = n_seg;
    vla_zero1_shard_of(numel, rank, world, &z->lo, &z->hi);
    size_t n = (size_t)(z->hi - z->lo);
    z->seg = malloc(sizeof *z->seg * (size_t)n_seg);
    z->flat = malloc(sizeof *z->flat * (size_t)(n_seg + 1));
    z->m = dev_zeros(ops, n);
    z->v = dev_zeros(ops, n);
    z->counts = malloc(sizeof(int64_t) * 2 * (size_t)world);
    size_t np = (size_t)(n_seg > 0 ? n_seg : 1);
    z->ss_x = malloc(sizeof *z->ss_x * np);
    z->ss_n = malloc(sizeof *z->ss_n * np);
    z->ss_out = malloc(sizeof *z->ss_out * np);
    z->pl_w = malloc(sizeof *z->pl_w * np), z->pl_m = malloc(sizeof *z->pl_m * np);
    z->pl_v = malloc(sizeof *z->pl_v * np), z->pl_e = malloc(sizeof *z->pl_e * np);
    z->pl_g = malloc(sizeof *z->pl_g * np), z->pl_n = malloc(sizeof *z->pl_n * np);
    z->pl_decay = malloc(sizeof *z->pl_decay * np);
    if (!z->seg || !z->flat || !z->m || !z->v || !z->counts || !z->ss_x || !z->ss_n || !z->ss_out || !z->pl_w ||
        !z->pl_m || !z->pl_v || !z->pl_e || !z->pl_g || !z->pl_n || !z->pl_decay) {
        vla_zero1_free(z);
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for a shard of %zu", n);
    }
    memcpy(z->seg, seg, sizeof *z->seg * (size_t)n_seg);
    z->flat[0] = 0;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n_seg; i++) {
        z->flat[i + 1] = z->flat[i] + seg[i].numel;
        h = fnv(fnv(fnv(h, seg[i].offset), seg[i].numel), seg[i].decay != 0);
    }
    z->layout = h;
    z->displs = z->counts + world;
    for (int r = 0; r < world; r++) {
        int64_t lo, hi;
        vla_zero1_shard_of(numel, r, world, &lo, &hi);
        z->counts[r] = hi - lo, z->displs[r] = lo;
    }
    vla_status st = vla_devcomm_get(comm, ops, &z->dev);
    if (st != VLA_OK) {
        vla_zero1_free(z);
        return st;
    }
    z->shards = vla_nccl_shards_make(numel, world);
    *out = z;
    return VLA_OK;
}

vla_status vla_zero1_create(vla_comm *comm, const vla_ops *ops, int64_t numel, vla_zero1 **out) {
    vla_zero1_segment s = {0, numel, 1};
    return vla_zero1_create_segments(comm, ops, &s, 1, out);
}

void vla_zero1_free(vla_zero1 *z) {
    if (!z) return;
    dev_free(z->ops, z->guard), dev_free(z->ops, z->m), dev_free(z->ops, z->v), dev_free(z->ops, z->ema), dev_free(z->ops, z->gshard);
    dev_free(z->ops, z->dpad), dev_free(z->ops, z->drecv);
    free(z->gather), free(z->hgrad), free(z->counts);
    free(z->seg), free(z->flat);
    free(z->ss_x), free(z->ss_n), free(z->ss_out);
    free(z->pl_w), free(z->pl_m), free(z->pl_v), free(z->pl_e), free(z->pl_g), free(z->pl_n), free(z->pl_decay);
    free(z);
}

int64_t vla_zero1_numel(const vla_zero1 *z) { return z->numel; }
void vla_zero1_shard(const vla_zero1 *z, int64_t *lo, int64_t *hi) { *lo = z->lo, *hi = z->hi; }
size_t vla_zero1_state_bytes(const vla_zero1 *z) {
    return (size_t)(z->hi - z->lo) * (z->ema ? 3 : 2) * sizeof(float);
}
double vla_zero1_budget_bytes(int64_t numel, int world, bool ema) {
    double shard = (double)numel / (world > 1 ? world : 1);
    return shard * sizeof(float) * (2 + 1 + (ema ? 1 : 0)); /* m, v, the scaled gradient shard; the EMA */
}

int64_t vla_zero1_step_count(const vla_zero1 *z) { return z->step; }
double vla_zero1_ema_decay(const vla_zero1 *z) { return z->ema ? z->ema_decay : 0.0; }

/* One segment at offset 0: the parameter and flat layouts coincide. */
static int identity_layout(const vla_zero1 *z) { return z->n_seg == 1 && z->seg[0].offset == 0; }

/* The pieces of flat [a, b) by segment: calls fn(z, seg, flat_lo, flat_hi, param_off, ctx). */
typedef void (*piece_fn)(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx);
static void for_pieces(const vla_zero1 *z, int64_t a, int64_t b, piece_fn fn, void *ctx) {
    for (int s = 0; s < z->n_seg; s++) {
        int64_t f0 = z->flat[s] > a ? z->flat[s] : a, f1 = z->flat[s + 1] < b ? z->flat[s + 1] : b;
        if (f0 < f1) fn(z, s, f0, f1, z->seg[s].offset + (f0 - z->flat[s]), ctx);
    }
}

/* Copies between a flat buffer (indexed by flat position, starting at
 * flat index src_base) and parameter layout, piece by piece. `how` says
 * where the two sides live: both in backend memory (ops->copy), flat on the
 * host and params in the backend (to_device / to_host), flat in the backend
 * and params on the host (to_host / to_device), or both on the host. */
typedef enum { COPY_DEVICE, COPY_HOST_FLAT, COPY_DEVICE_FLAT, COPY_HOST } copy_how;
typedef struct {
    float *dst;
    const float *src;
    int64_t src_base; /* flat index of the flat buffer's element 0 */
    int to_params;    /* 1: src flat → dst params; 0: src params → dst flat */
    copy_how how;
} copy_ctx;

static void copy_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    copy_ctx *c = ctx;
    int64_t n = f1 - f0;
    float *d = c->to_params ? c->dst + p0 : c->dst + (f0 - c->src_base);
    const float *src = c->to_params ? c->src + (f0 - c->src_base) : c->src + p0;
    switch (c->how) {
    case COPY_DEVICE: z->ops->copy(d, src, n); break;
    case COPY_HOST_FLAT:
        if (c->to_params) z->ops->to_device(d, src, sizeof(float) * (size_t)n);
        else z->ops->to_host(d, src, sizeof(float) * (size_t)n);
        break;
    case COPY_DEVICE_FLAT:
        if (c->to_params) z->ops->to_host(d, src, sizeof(float) * (size_t)n);
        else z->ops->to_device(d, src, sizeof(float) * (size_t)n);
        break;
    case COPY_HOST: memcpy(d, src, sizeof(float) * (size_t)n); break;
    }
}

typedef struct {
    const float *g; /* shard gradient, g[0] is flat lo */
    const float **x;
    int64_t *n;
    int count;
} sumsq_ctx;

/* per segment piece, so that at world 1 the blocking is per tensor: the
 * pieces are listed here and reduced by one sum_squares_multi (one wait on
 * a device backend instead of one per tensor) */
static void sumsq_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    sumsq_ctx *c = ctx;
    c->x[c->count] = c->g + (f0 - z->lo);
    c->n[c->count++] = f1 - f0;
}

/* The shard's pieces into the multi-tensor lists (z->pl_*), in piece order. */
typedef struct {
    float *params;
    const float *g;
    int wd_on, count;
} list_ctx;

static void list_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    list_ctx *c = ctx;
    int i = c->count++;
    int64_t k = f0 - z->lo;
    z->pl_w[i] = c->params + p0, z->pl_g[i] = c->g + k, z->pl_m[i] = z->m + k, z->pl_v[i] = z->v + k;
    z->pl_e[i] = z->ema ? z->ema + k : NULL;
    z->pl_n[i] = f1 - f0, z->pl_decay[i] = c->wd_on && z->seg[s].decay;
}

vla_status vla_zero1_ema_enable(vla_zero1 *z, double decay, const float *params) {
    if (!(decay > 0 && decay < 1)) return vla_error(VLA_ERR_INVALID_ARG, "zero1: EMA decay %g must be in (0, 1)", decay);
    size_t n = (size_t)(z->hi - z->lo);
    if (!z->ema && !(z->ema = dev_zeros(z->ops, n)))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for the EMA of %zu", n);
    z->ema_decay = decay;
    copy_ctx c = {z->ema, params, z->lo, 0, COPY_DEVICE};
    for_pieces(z, z->lo, z->hi, copy_piece, &c);
    return VLA_OK;
}

static vla_status need_gather(vla_zero1 *z) {
    if (!z->gather && !(z->gather = malloc(sizeof(float) * (size_t)(z->numel > 0 ? z->numel : 1))))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for the gather buffer of %lld", (long long)z->numel);
    return VLA_OK;
}

vla_status vla_zero1_ema_gather(vla_zero1 *z, float *out) {
    if (!z->ema) return vla_error(VLA_ERR_INVALID_ARG, "zero1: the EMA is not enabled");
    int world = vla_comm_world(z->comm);
    if (world == 1) { /* this shard is everything: straight into the host's parameter layout */
        copy_ctx c = {out, z->ema, z->lo, 1, COPY_DEVICE_FLAT};
        for_pieces(z, z->lo, z->hi, copy_piece, &c);
        return VLA_OK;
    }
    /* the shards meet in the host's flat scratch, then land in parameter layout */
    VLA_TRY(need_gather(z));
    z->ops->to_host(z->gather + z->lo, z->ema, sizeof(float) * (size_t)(z->hi - z->lo));
    VLA_TRY(vla_comm_allgatherv(z->comm, NULL, z->gather, z->counts, z->displs, VLA_COMM_F32));
    copy_ctx c = {out, z->gather, 0, 1, COPY_HOST};
    for_pieces(z, 0, z->numel, copy_piece, &c);
    return VLA_OK;
}

/* Local scan: first non-finite element of the shard's state; *what 0 exp_avg,
 * 1 exp_avg_sq, 2 ema; *nan whether it is NaN. Returns the flat index or -1. */
static int64_t local_nonfinite(const vla_zero1 *z, int *what, int *nan) {
    const float *parts[3] = {z->m, z->v, z->ema};
    int64_t n = z->hi - z->lo, best = -1;
    for (int k = 0; k < 3; k++) {
        if (!parts[k]) continue;
        int64_t at = z->ops->find_nonfinite(parts[k], n);
        if (at >= 0 && (best < 0 || at < best)) {
            float x;
            z->ops->to_host(&x, parts[k] + at, sizeof x);
            best = at, *what = k, *nan = isnan(x) != 0;
        }
    }
    return best < 0 ? -1 : z->lo + best;
}

static const char *const STATE_NAMES[3] = {"exp_avg", "exp_avg_sq", "ema"};

static int segment_of(const vla_zero1 *z, int64_t f) {
    int s = 0;
    while (s + 1 < z->n_seg && z->flat[s + 1] <= f) s++;
    return s;
}

vla_status vla_zero1_check_finite(vla_zero1 *z) {
    int what = 0, nan = 0;
    int64_t at = local_nonfinite(z, &what, &nan);
    /* the smallest bad flat index over all ranks, then what its owner saw */
    int64_t g[1] = {at < 0 ? INT64_MAX : at};
    VLA_TRY(vla_comm_allreduce(z->comm, g, g, 1, VLA_COMM_I64, VLA_COMM_MIN));
    if (g[0] == INT64_MAX) return VLA_OK;
    int64_t info[2] = {at == g[0] ? what : -1, at == g[0] ? nan : -1};
    VLA_TRY(vla_comm_allreduce(z->comm, info, info, 2, VLA_COMM_I64, VLA_COMM_MAX));
    int owner = 0, world = vla_comm_world(z->comm);
    while (owner + 1 < world && z->displs[owner + 1] <= g[0]) owner++;
    int s = segment_of(z, g[0]);
    return vla_error(VLA_ERR_NUMERIC, "zero1: %s of rank %d holds %s at flat index %lld (segment %d, element %lld)",
                     STATE_NAMES[info[0] >= 0 && info[0] < 3 ? info[0] : 0], owner, info[1] ? "NaN" : "Inf",
                     (long long)g[0], s, (long long)(g[0] - z->flat[s]));
}

/* The padded NCCL buffers, allocated on first use; the tails of the blocks
 * stay zero (never written). */
static vla_status need_dpad(vla_zero1 *z, bool recv) {
    int64_t padded = vla_nccl_padded_count(&z->shards);
    if (!z->dpad && !(z->dpad = dev_zeros(z->ops, (size_t)padded)))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of device memory for the NCCL buffer of %lld", (long long)padded);
    if (recv && !z->drecv && !(z->drecv = dev_zeros(z->ops, (size_t)z->shards.block)))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of device memory for the NCCL shard");
    return VLA_OK;
}

/* NCCL reduce-scatter (MEAN) of the flat gradient into z->gshard */
static vla_status dev_reduce_scatter(vla_zero1 *z, const float *grads) {
    VLA_TRY(need_dpad(z, true));
    int world = vla_comm_world(z->comm), rank = vla_comm_rank(z->comm);
    for (int r = 0; r < world; r++) {
        int64_t lo, hi, at;
        vla_nccl_shard(&z->shards, r, &lo, &hi, &at);
        z->ops->copy(z->dpad + at, grads + lo, hi - lo);
    }
    VLA_TRY(vla_devcomm_reduce_scatter(z->dev, z->dpad, z->drecv, z->shards.block, VLA_COMM_MEAN));
    int64_t lo, hi, at;
    vla_nccl_shard(&z->shards, rank, &lo, &hi, &at);
    z->ops->copy(z->gshard, z->drecv, hi - lo);
    return VLA_OK;
}

/* NCCL all-gather of the updated shards into every rank's parameters */
static vla_status dev_allgather_params(vla_zero1 *z, float *params) {
    VLA_TRY(need_dpad(z, false));
    int world = vla_comm_world(z->comm), rank = vla_comm_rank(z->comm);
    int64_t lo, hi, at;
    vla_nccl_shard(&z->shards, rank, &lo, &hi, &at);
    copy_ctx pc = {z->dpad + at, params, lo, 0, COPY_DEVICE};
    for_pieces(z, lo, hi, copy_piece, &pc);
    VLA_TRY(vla_devcomm_allgather(z->dev, z->dpad, z->shards.block));
    for (int r = 0; r < world; r++) {
        if (r == rank) continue;
        vla_nccl_shard(&z->shards, r, &lo, &hi, &at);
        copy_ctx uc = {params, z->dpad + at, lo, 1, COPY_DEVICE};
        for_pieces(z, lo, hi, copy_piece, &uc);
    }
    return VLA_OK;
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

/* Steps 1–2: the hyper-parameters checked, this shard's averaged gradient
 * (reduce-scattered if asked) times grad_mul, in *g. */
static vla_status shard_gradient(vla_zero1 *z, float *grads, vla_zero1_grad_mode mode, const vla_adamw_hparams *hp,
                                 vla_grad_buckets *buckets, const float **g_out) {
    const double gm = hp->grad_mul == 0 ? 1.0 : hp->grad_mul;
    if (!finite_nonneg(hp->lr) || !finite_nonneg(hp->weight_decay) || !(hp->eps > 0) || !isfinite(hp->eps) ||
        !(hp->beta1 >= 0 && hp->beta1 < 1) || !(hp->beta2 >= 0 && hp->beta2 < 1) || !isfinite(hp->max_grad_norm) ||
        !isfinite(gm)) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
        return vla_error(VLA_ERR_INVALID_ARG,
                         "zero1: bad hyper-parameters (lr %g, betas %g/%g, eps %g, weight decay %g, clip %g, "
                         "grad_mul %g): need lr, wd >= 0, 0 <= beta < 1, eps > 0, all finite",
                         hp->lr, hp->beta1, hp->beta2, hp->eps, hp->weight_decay, (double)hp->max_grad_norm, gm);
    }
    int64_t n = z->hi - z->lo;
    const float *g;
    if ((mode == VLA_ZERO1_REDUCE_SCATTER || gm != 1.0) && !z->gshard && !(z->gshard = dev_zeros(z->ops, (size_t)n)))
        return vla_error(VLA_ERR_NOMEM, "zero1: gradient shard");
    if (mode == VLA_ZERO1_REDUCE_SCATTER) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets)); /* must not race the buffer */
        if (z->dev) {
            VLA_TRY(dev_reduce_scatter(z, grads));
        } else if (z->ops->host_memory) {
            VLA_TRY(vla_comm_reduce_scatterv(z->comm, grads, z->gshard, z->counts, VLA_COMM_F32, VLA_COMM_MEAN));
        } else { /* through the host: the whole gradient out, this shard back */
            if (!z->hgrad && !(z->hgrad = malloc(sizeof(float) * (size_t)(z->numel + n))))
                return vla_error(VLA_ERR_NOMEM, "zero1: gradient staging");
            z->ops->to_host(z->hgrad, grads, sizeof(float) * (size_t)z->numel);
            VLA_TRY(vla_comm_reduce_scatterv(z->comm, z->hgrad, z->hgrad + z->numel, z->counts, VLA_COMM_F32,
                                             VLA_COMM_MEAN));
            z->ops->to_device(z->gshard, z->hgrad + z->numel, sizeof(float) * (size_t)n);
        }
        g = z->gshard;
    } else {
        /* wait only for the buckets that cover this shard */
        if (buckets) VLA_TRY(vla_grad_buckets_wait_range(buckets, z->lo, z->hi));
        g = grads + z->lo;
    }
    if (gm != 1.0) { /* one rounding of the exact product (ops->scale_to) */
        z->ops->scale_to(z->gshard, g, gm, n);
        g = z->gshard;
    }
    *g_out = g;
    return VLA_OK;
}

/* The shard's Σg² pieces (one per segment piece, so that at world 1 the
 * blocking is per tensor), listed in z->ss_x / z->ss_n; returns the count. */
static int sumsq_pieces(vla_zero1 *z, const float *g) {
    sumsq_ctx sc_ss = {g, z->ss_x, z->ss_n, 0};
    for_pieces(z, z->lo, z->hi, sumsq_piece, &sc_ss);
    return sc_ss.count;
}

static vla_status nonfinite_norm(const vla_zero1 *z, double norm, int64_t step) {
    return vla_error(VLA_ERR_NUMERIC, "zero1: gradient norm is %s at step %lld: the loss or the gradients hold "
                     "NaN/Inf", isnan(norm) ? "NaN" : "Inf", (long long)step);
}

/* Steps 4–5: AdamW (and the EMA) on the shard at step z->step + 1 with the
 * clip factor `clip`, or the backend's guard when `guard` is set; then the
 * buckets completed and the shards gathered. */
static vla_status update_and_gather(vla_zero1 *z, float *params, const float *g, const vla_adamw_hparams *hp,
                                    float clip, const float *guard, vla_grad_buckets *buckets) {
    const int64_t t = z->step + 1;
    /* Scalars are formed in double and rounded to f32 once, as torch does
     * when it passes Python floats to f32 kernels. */
    const double bc1 = 1.0 - pow(hp->beta1, (double)t), bc2 = 1.0 - pow(hp->beta2, (double)t);
    const vla_adamw_scalars sc = {
        .beta1 = (float)hp->beta1, .one_minus_beta1 = (float)(1.0 - hp->beta1),
        .beta2 = (float)hp->beta2, .one_minus_beta2 = (float)(1.0 - hp->beta2),
        .bias_correction2_sqrt = (float)sqrt(bc2), .eps = (float)hp->eps,
        .neg_step = (float)(-(hp->lr / bc1)), .decay_mul = (float)(1.0 - hp->lr * hp->weight_decay),
        .grad_scale = clip, .guard = guard,
    };
    /* every piece in one call each (one launch on a device, where it was one per tensor) */
    list_ctx lc = {params, g, hp->weight_decay != 0.0, 0};
    for_pieces(z, z->lo, z->hi, list_piece, &lc);
    z->ops->adamw_multi(lc.count, z->pl_w, z->pl_g, z->pl_m, z->pl_v, z->pl_n, z->pl_decay, &sc);
    if (z->ema)
        z->ops->ema_multi(lc.count, z->pl_e, (const float *const *)z->pl_w, z->pl_n, (float)z->ema_decay,
                          (float)(1.0 - z->ema_decay), guard);
    z->step = t;
    /* the rest of the buckets must be complete before backward reuses the buffer */
    if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
    if (z->dev) return dev_allgather_params(z, params); /* before the world-1 return: VLA_NCCL=1 runs it */
    if (vla_comm_world(z->comm) == 1) return VLA_OK;
    if (identity_layout(z) && z->ops->host_memory) /* in place */
        return vla_comm_allgatherv(z->comm, NULL, params, z->counts, z->displs, VLA_COMM_F32);
    /* pack this rank's updated shard into the host's flat scratch, gather,
     * copy the others' shards back into the parameters */
    VLA_TRY(need_gather(z));
    copy_ctx pc = {z->gather, params, 0, 0, COPY_HOST_FLAT};
    for_pieces(z, z->lo, z->hi, copy_piece, &pc);
    VLA_TRY(vla_comm_allgatherv(z->comm, NULL, z->gather, z->counts, z->displs, VLA_COMM_F32));
    copy_ctx uc2 = {params, z->gather, 0, 1, COPY_HOST_FLAT};
    for_pieces(z, 0, z->lo, copy_piece, &uc2);
    for_pieces(z, z->hi, z->numel, copy_piece, &uc2);
    return VLA_OK;
}

vla_status vla_zero1_step(vla_zero1 *z, float *params, float *grads, vla_zero1_grad_mode mode,
                          const vla_adamw_hparams *hp, vla_grad_buckets *buckets, double *grad_norm) {
    const float *g;
    VLA_TRY(shard_gradient(z, grads, mode, hp, buckets, &g));
    /* step 3: Σg² piece by piece, summed on the host in piece order */
    int count = sumsq_pieces(z, g);
    z->ops->sum_squares_multi(count, z->ss_x, z->ss_n, z->ss_out);
    double ss = 0;
    for (int i = 0; i < count; i++) ss += z->ss_out[i];
    VLA_TRY(vla_comm_allreduce(z->comm, &ss, &ss, 1, VLA_COMM_F64, VLA_COMM_SUM));
    double norm = sqrt(ss);
    if (grad_norm) *grad_norm = norm;
    float clip = vla_step_guard(ss, false, 0.0, hp->max_grad_norm);
    if (!isfinite(clip)) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
        return nonfinite_norm(z, norm, z->step + 1);
    }
    return update_and_gather(z, params, g, hp, clip, NULL, buckets);
}

vla_status vla_zero1_step_queued(vla_zero1 *z, float *params, float *grads, const vla_adamw_hparams *hp,
                                 vla_grad_buckets *buckets, const double *also, double *sumsq) {
    if (!z->guard && !(z->guard = z->ops->alloc(sizeof(float))))
        return vla_error(VLA_ERR_NOMEM, "zero1: the step's guard");
    const float *g;
    VLA_TRY(shard_gradient(z, grads, VLA_ZERO1_GRADS_AVERAGED, hp, buckets, &g));
    /* step 3 on the backend: the same sums, added in the same order there */
    int count = sumsq_pieces(z, g);
    z->ops->sum_squares_total(count, z->ss_x, z->ss_n, sumsq);
    if (vla_comm_world(z->comm) > 1) { /* the shards' sums, as vla_zero1_step adds them (one MPI_SUM of one double) */
        vla_status st = vla_comm_allreduce_backend(z->comm, z->ops, sumsq, 1, VLA_COMM_F64, VLA_COMM_SUM);
        if (st != VLA_OK) {
            if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
            return st;
        }
    }
    z->ops->clip_coef(z->guard, sumsq, also, hp->max_grad_norm);
    return update_and_gather(z, params, g, hp, 1.0f, z->guard, buckets);
}

vla_status vla_zero1_step_queued_result(vla_zero1 *z, double sumsq, bool also_finite, double *grad_norm) {
    double norm = sqrt(sumsq);
    if (grad_norm) *grad_norm = norm;
    if (isfinite(norm) && also_finite) return VLA_OK;
    z->step--; /* the guard was not finite: AdamW and the EMA left everything as it was */
    /* no step number: this verdict is read a step late (a later step may have counted itself already), and
     * the caller's message names the step it belongs to */
    return isfinite(norm) ? vla_error(VLA_ERR_NUMERIC, "zero1: the step's loss is not finite")
                          : vla_error(VLA_ERR_NUMERIC, "zero1: gradient norm is %s: the loss or the gradients hold "
                                      "NaN/Inf", isnan(norm) ? "NaN" : "Inf");
}

/* ---- shard files ---------------------------------------------------------- */

void vla_zero1_shard_file(int rank, char *buf, size_t cap) { snprintf(buf, cap, "zero1-rank%05d.safetensors", rank); }

static void shard_path(char *buf, size_t cap, const char *dir, int rank) {
    char name[64];
    vla_zero1_shard_file(rank, name, sizeof name);
    snprintf(buf, cap, "%s/%s", dir, name);
}

static vla_status write_shard(vla_zero1 *z, const char *dir) {
    int rank = vla_comm_rank(z->comm), world = vla_comm_world(z->comm);
    char path[4096], num[32];
    shard_path(path, sizeof path, dir, rank);
    /* NaN/Inf never reaches a checkpoint */
    int what = 0, nan = 0;
    int64_t bad = local_nonfinite(z, &what, &nan);
    if (bad >= 0)
        return vla_error(VLA_ERR_NUMERIC, "zero1: rank %d: %s holds %s at flat index %lld; not writing %s", rank,
                         STATE_NAMES[what], nan ? "NaN" : "Inf", (long long)bad, path);
    /* the writer reads the tensors on the host: the shard's state comes over once */
    int64_t cnt = z->hi - z->lo;
    size_t bytes = sizeof(float) * (size_t)cnt;
    float *h = malloc(bytes * 3 + sizeof(float));
    if (!h) return vla_error(VLA_ERR_NOMEM, "zero1: rank %d: out of memory for the shard's state", rank);
    z->ops->to_host(h, z->m, bytes);
    z->ops->to_host(h + cnt, z->v, bytes);
    if (z->ema) z->ops->to_host(h + 2 * cnt, z->ema, bytes);
    vla_safetensors_writer *w;
    vla_status st = vla_safetensors_writer_new(&w);
    if (st != VLA_OK) {
        free(h);
        return st;
    }
    int64_t shape[1] = {cnt};
    st = vla_safetensors_writer_add(w, "exp_avg", VLA_F32, 1, shape, h);
    if (st == VLA_OK) st = vla_safetensors_writer_add(w, "exp_avg_sq", VLA_F32, 1, shape, h + cnt);
    if (st == VLA_OK && z->ema) st = vla_safetensors_writer_add(w, "ema", VLA_F32, 1, shape, h + 2 * cnt);
    if (st == VLA_OK) {
        snprintf(num, sizeof num, "%016" PRIx64, z->layout);
        st = vla_safetensors_writer_set_meta(w, "layout", num);
    }
    const struct {
        const char *k;
        int64_t v;
    } meta[] = {{"rank", rank}, {"world", world}, {"offset", z->lo}, {"count", z->hi - z->lo},
                {"numel", z->numel}, {"step", z->step}};
    if (st == VLA_OK) st = vla_safetensors_writer_set_meta(w, "format", ZERO1_FORMAT);
    for (unsigned i = 0; st == VLA_OK && i < sizeof meta / sizeof meta[0]; i++) {
        snprintf(num, sizeof num, "%" PRId64, meta[i].v);
        st = vla_safetensors_writer_set_meta(w, meta[i].k, num);
    }
    if (st == VLA_OK) st = vla_safetensors_writer_write(w, path);
    vla_safetensors_writer_free(w);
    free(h);
    return st == VLA_OK ? VLA_OK : vla_error_context(st, "zero1: rank %d", rank);
}

vla_status vla_zero1_save(vla_zero1 *z, const char *dir) {
    vla_status st = vla_mkdirs(dir);
    if (st == VLA_OK) st = write_shard(z, dir);
    return vla_comm_agree(z->comm, st, "zero1: writing the optimizer shard");
}

static vla_status meta_int(const vla_safetensors *f, const char *path, const char *key, int64_t *out) {
    const char *s = vla_safetensors_meta_get(f, key);
    char *end;
    if (!s) return vla_error(VLA_ERR_FORMAT, "%s: metadata '%s' is missing", path, key);
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0') return vla_error(VLA_ERR_FORMAT, "%s: metadata '%s' is '%s'", path, key, s);
    *out = v;
    return VLA_OK;
}

/* Copy the part of old rank q's shard that falls into ours. */
static vla_status load_from(vla_zero1 *z, const char *dir, int q, int old_world, int64_t *step) {
    char path[4096];
    shard_path(path, sizeof path, dir, q);
    vla_safetensors f;
    VLA_TRY(vla_safetensors_open(path, &f));
    vla_status st = VLA_OK;
    int64_t world = 0, off = 0, count = 0, numel = 0, stp = 0;
    const char *fmt = vla_safetensors_meta_get(&f, "format");
    if (!fmt || strcmp(fmt, ZERO1_FORMAT) != 0) st = vla_error(VLA_ERR_FORMAT, "%s: not a %s file", path, ZERO1_FORMAT);
    if (st == VLA_OK) st = meta_int(&f, path, "world", &world);
    if (st == VLA_OK) st = meta_int(&f, path, "offset", &off);
    if (st == VLA_OK) st = meta_int(&f, path, "count", &count);
    if (st == VLA_OK) st = meta_int(&f, path, "numel", &numel);
    if (st == VLA_OK) st = meta_int(&f, path, "step", &stp);
    if (st == VLA_OK && (world != old_world || numel != z->numel || off < 0 || count < 0 || off + count > numel))
        st = vla_error(VLA_ERR_FORMAT, "%s: shard [%lld, +%lld) of %lld in world %lld does not fit %lld parameters "
                       "in world %d", path, (long long)off, (long long)count, (long long)numel, (long long)world,
                       (long long)z->numel, old_world);
    if (st == VLA_OK && *step >= 0 && stp != *step)
        st = vla_error(VLA_ERR_FORMAT, "%s: step %lld differs from the other shards' %lld", path, (long long)stp,
                       (long long)*step);
    /* files without "layout" (hand-made, older) are taken on trust */
    const char *lay = vla_safetensors_meta_get(&f, "layout");
    char want[32];
    snprintf(want, sizeof want, "%016" PRIx64, z->layout);
    if (st == VLA_OK && lay && strcmp(lay, want) != 0)
        st = vla_error(VLA_ERR_FORMAT, "%s: written for another segment layout (layout %s, this optimizer's %s): "
                       "the trainable tensors changed", path, lay, want);
    if (st == VLA_OK) *step = stp;
    int64_t a = off > z->lo ? off : z->lo, b = off + count < z->hi ? off + count : z->hi;
    float *dst[3] = {z->m, z->v, z->ema};
    for (int which = 0; st == VLA_OK && which < 3 && a < b; which++) {
        if (!dst[which]) continue;
        const vla_safetensors_tensor *t;
        if (!vla_safetensors_find(&f, STATE_NAMES[which])) {
            st = which == 2 ? vla_error(VLA_ERR_FORMAT, "%s: tensor 'ema' is missing, but this run has an EMA "
                                        "(decay %g): the state was saved without one", path, z->ema_decay)
                            : vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' is missing", path, STATE_NAMES[which]);
            break;
        }
        st = vla_safetensors_get(&f, STATE_NAMES[which], &t);
        if (st == VLA_OK && (t->dtype != VLA_F32 || t->numel != count))
            st = vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' must be F32[%lld]", path, t->name, (long long)count);
        if (st == VLA_OK)
            z->ops->to_device(dst[which] + (a - z->lo), (const char *)t->data + sizeof(float) * (size_t)(a - off),
                              sizeof(float) * (size_t)(b - a));
    }
    vla_safetensors_close(&f);
    return st;
}

vla_status vla_zero1_load(vla_zero1 *z, const char *dir) {
    char path[4096];
    shard_path(path, sizeof path, dir, 0);
    vla_safetensors f0;
    vla_status st = vla_safetensors_open(path, &f0);
    int64_t old_world = 0, step = -1;
    if (st == VLA_OK) {
        st = meta_int(&f0, path, "world", &old_world);
        vla_safetensors_close(&f0);
    }
    if (st == VLA_OK && (old_world < 1 || old_world > 1 << 20))
        st = vla_error(VLA_ERR_FORMAT, "%s: world %lld", path, (long long)old_world);
    /* Rank q of the old world held [shard_of(q)); read those that meet ours. */
    for (int q = 0; st == VLA_OK && q < old_world; q++) {
        int64_t lo, hi;
        vla_zero1_shard_of(z->numel, q, (int)old_world, &lo, &hi);
        if (hi <= z->lo || lo >= z->hi) continue;
        st = load_from(z, dir, q, (int)old_world, &step);
    }
    if (st == VLA_OK) z->step = step < 0 ? 0 : step;
    /* every rank must agree on the step (shards it did not read may differ) */
    int64_t mx = z->step, mn = z->step;
    vla_status st2 = vla_comm_agree(z->comm, st, "zero1: loading the optimizer shards");
    if (st2 != VLA_OK) return st2;
    VLA_TRY(vla_comm_allreduce(z->comm, &mx, &mx, 1, VLA_COMM_I64, VLA_COMM_MAX));
    VLA_TRY(vla_comm_allreduce(z->comm, &mn, &mn, 1, VLA_COMM_I64, VLA_COMM_MIN));
    if (mx != mn) return vla_error(VLA_ERR_FORMAT, "%s: shards are from different steps (%lld and %lld)", dir,
                                   (long long)mn, (long long)mx);
    return VLA_OK;
}
