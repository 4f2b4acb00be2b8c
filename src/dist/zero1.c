/* zero1.c — ZeRO-1 sharded AdamW over a flat f32 parameter vector, with
 * shard state files that can be re-cut for another world size (zero1.h). */
#include "dist/zero1.h"

#include "base/fsutil.h"
#include "io/safetensors.h"
#include "tensor/ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZERO1_FORMAT "vla-zero1-v1"

struct vla_zero1 {
    vla_comm *comm;
    int64_t numel, lo, hi;
    float *m, *v;      /* shard moments */
    float *gshard;     /* reduce-scatter target (REDUCE_SCATTER mode) */
    uint8_t *no_decay; /* per shard element, NULL: decay everywhere */
    int64_t *counts, *displs;
    int64_t step;
};

void vla_zero1_shard_of(int64_t numel, int r, int world, int64_t *lo, int64_t *hi) {
    *lo = numel / world * r + (numel % world) * r / world;
    *hi = numel / world * (r + 1) + (numel % world) * (r + 1) / world;
}

vla_status vla_zero1_create(vla_comm *comm, int64_t numel, vla_zero1 **out) {
    *out = NULL;
    int world = vla_comm_world(comm), rank = vla_comm_rank(comm);
    if (numel < world)
        return vla_error(VLA_ERR_INVALID_ARG, "zero1: %lld parameters cannot be sharded over %d ranks",
                         (long long)numel, world);
    vla_zero1 *z = calloc(1, sizeof *z);
    if (!z) return vla_error(VLA_ERR_NOMEM, "zero1: out of memory");
    z->comm = comm, z->numel = numel;
    vla_zero1_shard_of(numel, rank, world, &z->lo, &z->hi);
    size_t n = (size_t)(z->hi - z->lo);
    z->m = calloc(n, sizeof(float));
    z->v = calloc(n, sizeof(float));
    z->counts = malloc(sizeof(int64_t) * 2 * (size_t)world);
    if (!z->m || !z->v || !z->counts) {
        vla_zero1_free(z);
        return vla_error(VLA_ERR_NOMEM, "zero1: out of memory for a shard of %zu", n);
    }
    z->displs = z->counts + world;
    for (int r = 0; r < world; r++) {
        int64_t lo, hi;
        vla_zero1_shard_of(numel, r, world, &lo, &hi);
        z->counts[r] = hi - lo, z->displs[r] = lo;
    }
    *out = z;
    return VLA_OK;
}

void vla_zero1_free(vla_zero1 *z) {
    if (!z) return;
    free(z->m), free(z->v), free(z->gshard), free(z->counts), free(z->no_decay);
    free(z);
}

void vla_zero1_shard(const vla_zero1 *z, int64_t *lo, int64_t *hi) { *lo = z->lo, *hi = z->hi; }
size_t vla_zero1_state_bytes(const vla_zero1 *z) { return (size_t)(z->hi - z->lo) * 2 * sizeof(float); }
int64_t vla_zero1_step_count(const vla_zero1 *z) { return z->step; }

vla_status vla_zero1_set_no_decay(vla_zero1 *z, const int64_t *lo, const int64_t *hi, int n) {
    int64_t len = z->hi - z->lo;
    free(z->no_decay);
    z->no_decay = NULL;
    if (n <= 0) return VLA_OK;
    if (!(z->no_decay = calloc((size_t)(len > 0 ? len : 1), 1))) return vla_error(VLA_ERR_NOMEM, "zero1: decay mask");
    for (int i = 0; i < n; i++) {
        if (lo[i] < 0 || hi[i] > z->numel || lo[i] > hi[i])
            return vla_error(VLA_ERR_INVALID_ARG, "zero1: no-decay range [%lld, %lld) outside %lld parameters",
                             (long long)lo[i], (long long)hi[i], (long long)z->numel);
        int64_t a = lo[i] > z->lo ? lo[i] : z->lo, b = hi[i] < z->hi ? hi[i] : z->hi;
        if (a < b) memset(z->no_decay + (a - z->lo), 1, (size_t)(b - a));
    }
    return VLA_OK;
}

vla_status vla_zero1_step(vla_zero1 *z, float *params, float *grads, vla_zero1_grad_mode mode,
                          const vla_adamw_hparams *hp, vla_grad_buckets *buckets, double *grad_norm) {
    int64_t n = z->hi - z->lo;
    const float *g;
    if (mode == VLA_ZERO1_REDUCE_SCATTER) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets)); /* must not race the buffer */
        if (!z->gshard && !(z->gshard = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1))))
            return vla_error(VLA_ERR_NOMEM, "zero1: gradient shard");
        VLA_TRY(vla_comm_reduce_scatterv(z->comm, grads, z->gshard, z->counts, VLA_COMM_F32, VLA_COMM_MEAN));
        g = z->gshard;
    } else {
        /* wait only for the buckets that cover this shard */
        if (buckets) VLA_TRY(vla_grad_buckets_wait_range(buckets, z->lo, z->hi));
        g = grads + z->lo;
    }

    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    VLA_TRY(vla_comm_allreduce(z->comm, &ss, &ss, 1, VLA_COMM_F64, VLA_COMM_SUM));
    double norm = sqrt(ss);
    if (grad_norm) *grad_norm = norm;
    if (!isfinite(norm)) {
        if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
        return vla_error(VLA_ERR_NUMERIC, "zero1: gradient norm is %g at step %lld", norm,
                         (long long)z->step + 1);
    }
    float clip = 1.0f;
    if (hp->max_grad_norm > 0 && norm > hp->max_grad_norm) clip = (float)(hp->max_grad_norm / (norm + 1e-6));

    z->step++;
    const double bc1 = 1.0 - pow(hp->beta1, (double)z->step), bc2 = 1.0 - pow(hp->beta2, (double)z->step);
    const vla_adamw_scalars sc = {
        .beta1 = hp->beta1, .one_minus_beta1 = 1.0f - hp->beta1, .beta2 = hp->beta2,
        .one_minus_beta2 = 1.0f - hp->beta2, .bias_correction2_sqrt = (float)sqrt(bc2), .eps = hp->eps,
        .neg_step = (float)(-(hp->lr / bc1)), .decay_mul = 1.0f - hp->lr * hp->weight_decay, .grad_scale = clip,
    };
    /* runs of equal decay flag go to the op table's AdamW as one call each */
    const vla_ops *ops = vla_ops_cpu();
    float *p = params + z->lo, *m = z->m, *v = z->v;
    for (int64_t i = 0; i < n;) {
        int nd = z->no_decay ? z->no_decay[i] : 0;
        int64_t j = i + 1;
        while (j < n && (z->no_decay ? z->no_decay[j] : 0) == nd) j++;
        ops->adamw(p + i, g + i, m + i, v + i, j - i, &sc, !nd);
        i = j;
    }
    /* the rest of the buckets must be complete before backward reuses the buffer */
    if (buckets) VLA_TRY(vla_grad_buckets_wait_all(buckets));
    return vla_comm_allgatherv(z->comm, NULL, params, z->counts, z->displs, VLA_COMM_F32);
}

/* ---- shard files ---------------------------------------------------------- */

static void shard_path(char *buf, size_t cap, const char *dir, int rank) {
    snprintf(buf, cap, "%s/zero1-rank%05d.safetensors", dir, rank);
}

static vla_status write_shard(vla_zero1 *z, const char *dir) {
    int rank = vla_comm_rank(z->comm), world = vla_comm_world(z->comm);
    char path[4096], num[32];
    shard_path(path, sizeof path, dir, rank);
    vla_safetensors_writer *w;
    VLA_TRY(vla_safetensors_writer_new(&w));
    int64_t shape[1] = {z->hi - z->lo};
    vla_status st = vla_safetensors_writer_add(w, "exp_avg", VLA_F32, 1, shape, z->m);
    if (st == VLA_OK) st = vla_safetensors_writer_add(w, "exp_avg_sq", VLA_F32, 1, shape, z->v);
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
    if (st == VLA_OK) *step = stp;
    int64_t a = off > z->lo ? off : z->lo, b = off + count < z->hi ? off + count : z->hi;
    for (int which = 0; st == VLA_OK && which < 2 && a < b; which++) {
        const vla_safetensors_tensor *t;
        st = vla_safetensors_get(&f, which ? "exp_avg_sq" : "exp_avg", &t);
        if (st == VLA_OK && (t->dtype != VLA_F32 || t->numel != count))
            st = vla_error(VLA_ERR_FORMAT, "%s: tensor '%s' must be F32[%lld]", path, t->name, (long long)count);
        if (st == VLA_OK)
            memcpy((which ? z->v : z->m) + (a - z->lo), (const char *)t->data + sizeof(float) * (size_t)(a - off),
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
