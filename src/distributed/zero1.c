/* zero1.c — ZeRO-1 sharded AdamW (+ EMA) over segments of a parameter
 * buffer, with shard state files that can be re-cut for another world size
 * (zero1.h). */
#include "distributed/zero1.h"

#include "base/fsutil.h"
#include "io/safetensors.h"
#include "tensor/ops.h"

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
    vla_zero1_segment *seg;
    int64_t *flat; /* n_seg + 1 prefix sums: segment i is flat[i], flat[i+1]) */
    int n_seg;
    int64_t numel, lo, hi;
    float *m, *v;   /* shard moments */
    float *ema;     /* shard EMA, NULL: none */
    double ema_decay;
    float *gshard;  /* scratch shard: reduce-scatter target, grad_mul·g */
    float *gather;  /* flat scratch of numel for the all-gathers (multi-segment layouts) */
    int64_t *counts, *displs;
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

vla_status vla_zero1_create_segments(vla_comm *comm, const vla_zero1_segment *seg, int n_seg, vla_zero1 **out) {
    *out = NULL;
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
    z->comm = comm, z->numel = numel, z->n_seg = n_seg;
    vla_zero1_shard_of(numel, rank, world, &z->lo, &z->hi);
    size_t n = (size_t)(z->hi - z->lo);
    z->seg = malloc(sizeof *z->seg * (size_t)n_seg);
    z->flat = malloc(sizeof *z->flat * (size_t)(n_seg + 1));
    z->m = calloc(n ? n : 1, sizeof(float));
    z->v = calloc(n ? n : 1, sizeof(float));
    z->counts = malloc(sizeof(int64_t) * 2 * (size_t)world);
    if (!z->seg || !z->flat || !z->m || !z->v || !z->counts) {
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
    *out = z;
    return VLA_OK;
}

vla_status vla_zero1_create(vla_comm *comm, int64_t numel, vla_zero1 **out) {
    vla_zero1_segment s = {0, numel, 1};
    return vla_zero1_create_segments(comm, &s, 1, out);
}

void vla_zero1_free(vla_zero1 *z) {
    if (!z) return;
    free(z->m), free(z->v), free(z->ema), free(z->gshard), free(z->gather), free(z->counts);
    free(z->seg), free(z->flat);
    free(z);
}

int64_t vla_zero1_numel(const vla_zero1 *z) { return z->numel; }
void vla_zero1_shard(const vla_zero1 *z, int64_t *lo, int64_t *hi) { *lo = z->lo, *hi = z->hi; }
size_t vla_zero1_state_bytes(const vla_zero1 *z) {
    return (size_t)(z->hi - z->lo) * (z->ema ? 3 : 2) * sizeof(float);
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

/* flat buffer (indexed by flat position) → parameter layout */
typedef struct {
    float *dst;
    const float *src;
    int64_t src_base; /* flat index of src[0] */
    int to_params;    /* 1: src flat → dst params; 0: src params → dst flat */
} copy_ctx;

static void copy_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    copy_ctx *c = ctx;
    size_t bytes = sizeof(float) * (size_t)(f1 - f0);
    if (c->to_params)
        memcpy(c->dst + p0, c->src + (f0 - c->src_base), bytes);
    else
        memcpy(c->dst + (f0 - c->src_base), c->src + p0, bytes);
}

static double sumsq_range(const float *g, int64_t n) {
    int64_t nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    if (nb <= 1) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
        return s;
    }
    double *part = malloc((size_t)nb * sizeof *part);
    if (!part) { /* one sequential pass: same blocks, same order */
        double total = 0;
        for (int64_t b = 0; b < nb; b++) {
            double s = 0;
            int64_t end = (b + 1) * SUMSQ_BLOCK < n ? (b + 1) * SUMSQ_BLOCK : n;
            for (int64_t i = b * SUMSQ_BLOCK; i < end; i++) s += (double)g[i] * (double)g[i];
            total += s;
        }
        return total;
    }
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        double s = 0;
        int64_t end = (b + 1) * SUMSQ_BLOCK < n ? (b + 1) * SUMSQ_BLOCK : n;
        for (int64_t i = b * SUMSQ_BLOCK; i < end; i++) s += (double)g[i] * (double)g[i];
        part[b] = s;
    }
    double total = 0;
    for (int64_t b = 0; b < nb; b++) total += part[b];
    free(part);
    return total;
}

typedef struct {
    const float *g; /* shard gradient, g[0] is flat lo */
    double ss;
} sumsq_ctx;

/* per segment piece, so that at world 1 the blocking is per tensor */
static void sumsq_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    sumsq_ctx *c = ctx;
    c->ss += sumsq_range(c->g + (f0 - z->lo), f1 - f0);
}

typedef struct {
    float *params;
    const float *g;
    const vla_adamw_scalars *sc;
    int wd_on;
} update_ctx;

static void update_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    update_ctx *c = ctx;
    int64_t k = f0 - z->lo;
    vla_ops_cpu()->adamw(c->params + p0, c->g + k, z->m + k, z->v + k, f1 - f0, c->sc,
                         c->wd_on && z->seg[s].decay);
}

typedef struct {
    const float *params;
    float d, omd;
} ema_ctx;

static void ema_piece(const vla_zero1 *z, int s, int64_t f0, int64_t f1, int64_t p0, void *ctx) {
    ema_ctx *c = ctx;
    float *e = z->ema + (f0 - z->lo);
    const float *w = c->params + p0;
    const float d = c->d, omd = c->omd;
    int64_t n = f1 - f0;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) e[i] = d * e[i] + omd * w[i];
}

vla_status vla_zero1_ema_enable(vla_zero1 *z, double decay, const float *params) {
    if (!(decay > 0 && decay < 1)) return vla_error(VLA_ERR_INVALID_ARG, "zero1: EMA decay %g must be in (0, 1)", decay);
    size_t n = (size_t)(z->hi - z->lo);
    if (!z->ema && !(z->ema = malloc(sizeof(float) * (n ? n : 1))))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for the EMA of %zu", n);
    z->ema_decay = decay;
    copy_ctx c = {z->ema, params, z->lo, 0};
    for_pieces(z, z->lo, z->hi, copy_piece, &c);
    return VLA_OK;
}

/* Every rank's shard of `shard` (flat [lo, hi)) into `out` in parameter layout. */
static vla_status gather_to_params(vla_zero1 *z, const float *shard, float *out, int shard_in_out) {
    int world = vla_comm_world(z->comm);
    if (identity_layout(z)) {
        if (!shard_in_out) memcpy(out + z->lo, shard, sizeof(float) * (size_t)(z->hi - z->lo));
        return world > 1 ? vla_comm_allgatherv(z->comm, NULL, out, z->counts, z->displs, VLA_COMM_F32) : VLA_OK;
    }
    if (world == 1) {
        if (!shard_in_out) {
            copy_ctx c = {out, shard, z->lo, 1};
            for_pieces(z, z->lo, z->hi, copy_piece, &c);
        }
        return VLA_OK;
    }
    if (!z->gather && !(z->gather = malloc(sizeof(float) * (size_t)z->numel)))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for the gather buffer of %lld", (long long)z->numel);
    memcpy(z->gather + z->lo, shard, sizeof(float) * (size_t)(z->hi - z->lo));
    VLA_TRY(vla_comm_allgatherv(z->comm, NULL, z->gather, z->counts, z->displs, VLA_COMM_F32));
    copy_ctx c = {out, z->gather, 0, 1};
    if (shard_in_out) { /* ours is already in place */
        for_pieces(z, 0, z->lo, copy_piece, &c);
        for_pieces(z, z->hi, z->numel, copy_piece, &c);
    } else {
        for_pieces(z, 0, z->numel, copy_piece, &c);
    }
    return VLA_OK;
}

vla_status vla_zero1_ema_gather(vla_zero1 *z, float *out) {
    if (!z->ema) return vla_error(VLA_ERR_INVALID_ARG, "zero1: the EMA is not enabled");
    return gather_to_params(z, z->ema, out, 0);
}

static int64_t first_nonfinite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

/* Local scan: first non-finite element of the shard's state; *what 0 exp_avg,
 * 1 exp_avg_sq, 2 ema; *nan whether it is NaN. Returns the flat index or -1. */
static int64_t local_nonfinite(const vla_zero1 *z, int *what, int *nan) {
    const float *parts[3] = {z->m, z->v, z->ema};
    int64_t n = z->hi - z->lo, best = -1;
    for (int k = 0; k < 3; k++) {
        if (!parts[k]) continue;
        int64_t at = first_nonfinite(parts[k], n);
        if (at >= 0 && (best < 0 || at < best)) best = at, *what = k, *nan = isnan(parts[k][at]) != 0;
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

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

vla_status vla_zero1_step(vla_zero1 *z, float *params, float *grads, vla_zero1_grad_mode mode,
                          const vla_adamw_hparams *hp, vla_grad_buckets *buckets, double *grad_norm) {
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
    if ((mode == VLA_ZERO1_REDUCE_SCATTER || gm != 1.0) && !z->gshard &&
        !(z->gshard = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1))))
        return vla_error(VLA_ERR_NOMEM, "zero1: gradient shard");
    if (mode == VLA_ZERO1_REDUCE_SCATTER) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets)); /* must not race the buffer */
        VLA_TRY(vla_comm_reduce_scatterv(z->comm, grads, z->gshard, z->counts, VLA_COMM_F32, VLA_COMM_MEAN));
        g = z->gshard;
    } else {
        /* wait only for the buckets that cover this shard */
        if (buckets) VLA_TRY(vla_grad_buckets_wait_range(buckets, z->lo, z->hi));
        g = grads + z->lo;
    }
    if (gm != 1.0) {
        /* the product of two floats is exact in double: one rounding, as a
         * caller pre-scaling by a float would get */
        float *dst = z->gshard;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t i = 0; i < n; i++) dst[i] = (float)((double)g[i] * gm);
        g = dst;
    }

    sumsq_ctx sc_ss = {g, 0};
    for_pieces(z, z->lo, z->hi, sumsq_piece, &sc_ss);
    double ss = sc_ss.ss;
    VLA_TRY(vla_comm_allreduce(z->comm, &ss, &ss, 1, VLA_COMM_F64, VLA_COMM_SUM));
    double norm = sqrt(ss);
    if (grad_norm) *grad_norm = norm;
    if (!isfinite(norm)) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
        return vla_error(VLA_ERR_NUMERIC, "zero1: gradient norm is %s at step %lld: the loss or the gradients hold "
                         "NaN/Inf", isnan(norm) ? "NaN" : "Inf", (long long)z->step + 1);
    }
    /* torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), clamped to 1 */
    float clip = 1.0f;
    if (hp->max_grad_norm > 0) {
        double c = hp->max_grad_norm / (norm + 1e-6);
        if (c < 1.0) clip = (float)c;
    }

    const int64_t t = z->step + 1;
    /* Scalars are formed in double and rounded to f32 once, as torch does
     * when it passes Python floats to f32 kernels. */
    const double bc1 = 1.0 - pow(hp->beta1, (double)t), bc2 = 1.0 - pow(hp->beta2, (double)t);
    const vla_adamw_scalars sc = {
        .beta1 = (float)hp->beta1, .one_minus_beta1 = (float)(1.0 - hp->beta1),
        .beta2 = (float)hp->beta2, .one_minus_beta2 = (float)(1.0 - hp->beta2),
        .bias_correction2_sqrt = (float)sqrt(bc2), .eps = (float)hp->eps,
        .neg_step = (float)(-(hp->lr / bc1)), .decay_mul = (float)(1.0 - hp->lr * hp->weight_decay),
        .grad_scale = clip,
    };
    update_ctx uc = {params, g, &sc, hp->weight_decay != 0.0};
    for_pieces(z, z->lo, z->hi, update_piece, &uc);
    if (z->ema) {
        ema_ctx ec = {params, (float)z->ema_decay, (float)(1.0 - z->ema_decay)};
        for_pieces(z, z->lo, z->hi, ema_piece, &ec);
    }
    z->step = t;
    /* the rest of the buckets must be complete before backward reuses the buffer */
    if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
    if (identity_layout(z))
        return vla_comm_world(z->comm) > 1
                   ? vla_comm_allgatherv(z->comm, NULL, params, z->counts, z->displs, VLA_COMM_F32)
                   : VLA_OK;
    if (vla_comm_world(z->comm) == 1) return VLA_OK;
    /* pack this rank's updated shard, gather, scatter the others' back */
    if (!z->gather && !(z->gather = malloc(sizeof(float) * (size_t)z->numel)))
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for the gather buffer of %lld", (long long)z->numel);
    copy_ctx pc = {z->gather, params, 0, 0};
    for_pieces(z, z->lo, z->hi, copy_piece, &pc);
    VLA_TRY(vla_comm_allgatherv(z->comm, NULL, z->gather, z->counts, z->displs, VLA_COMM_F32));
    copy_ctx uc2 = {params, z->gather, 0, 1};
    for_pieces(z, 0, z->lo, copy_piece, &uc2);
    for_pieces(z, z->hi, z->numel, copy_piece, &uc2);
    return VLA_OK;
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
    vla_safetensors_writer *w;
    VLA_TRY(vla_safetensors_writer_new(&w));
    int64_t shape[1] = {z->hi - z->lo};
    vla_status st = vla_safetensors_writer_add(w, "exp_avg", VLA_F32, 1, shape, z->m);
    if (st == VLA_OK) st = vla_safetensors_writer_add(w, "exp_avg_sq", VLA_F32, 1, shape, z->v);
    if (st == VLA_OK && z->ema) st = vla_safetensors_writer_add(w, "ema", VLA_F32, 1, shape, z->ema);
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
            memcpy(dst[which] + (a - z->lo), (const char *)t->data + sizeof(float) * (size_t)(a - off),
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
