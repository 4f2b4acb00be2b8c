/* grad_buckets.c — bucketed, overlapped gradient all-reduce (see
 * grad_buckets.h): MPI on host memory, MPI through host staging for a
 * backend off the host without NCCL, NCCL in place on the device for cuda
 * (distributed/comm_device.h: a bucket starts on the communication stream
 * behind an event of the compute stream, and waiting orders the compute
 * stream behind it — the host never blocks). */
#include "distributed/grad_buckets.h"

#include "distributed/comm_device.h"

#include "base/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t lo, hi;   /* element range */
    int n_params;     /* parameters in this bucket */
    int pending;      /* not yet marked ready this step */
    bool started, done;
    vla_comm_request req;
    char what[48];
} bucket;

struct vla_grad_buckets {
    vla_comm *comm;
    const vla_ops *ops;
    float *grads;
    float *stage; /* host copy of the gradients for backends off the host (else NULL) */
    vla_devcomm *dev; /* NCCL on the backend's memory (cuda), else NULL */
    int n_params;
    int *param_bucket;  /* bucket of each parameter */
    bool *param_ready;
    int n_buckets;
    bucket *buckets;
    int next_to_start;  /* buckets start strictly in index order */
    bool waiting;       /* inside wait_* this step (for stats) */
    vla_grad_buckets_stats stats;
};

vla_status vla_grad_buckets_create(vla_comm *comm, const vla_ops *ops, float *grads, const int64_t *param_sizes,
                                   int n_params, size_t bucket_bytes, vla_grad_buckets **out) {
    *out = NULL;
    if (n_params <= 0) return vla_error(VLA_ERR_INVALID_ARG, "grad_buckets: no parameters");
    if (bucket_bytes == 0) bucket_bytes = (size_t)25 << 20;
    int64_t cap = (int64_t)(bucket_bytes / sizeof(float));
    if (cap < 1) cap = 1;
    vla_grad_buckets *b = calloc(1, sizeof *b);
    int64_t *offs = malloc(sizeof(int64_t) * (size_t)(n_params + 1));
    if (!b || !offs) return free(b), free(offs), vla_error(VLA_ERR_NOMEM, "grad_buckets: out of memory");
    offs[0] = 0;
    for (int i = 0; i < n_params; i++) {
        if (param_sizes[i] < 0) {
            free(b), free(offs);
            return vla_error(VLA_ERR_INVALID_ARG, "grad_buckets: parameter %d has size %lld", i,
                             (long long)param_sizes[i]);
        }
        offs[i + 1] = offs[i] + param_sizes[i];
    }
    b->comm = comm, b->ops = ops, b->grads = grads, b->n_params = n_params;
    vla_status dst = vla_devcomm_get(comm, ops, &b->dev);
    if (dst != VLA_OK) {
        free(offs), free(b);
        return dst;
    }
    /* one rank reduces nothing: no staging then */
    if (!b->dev && !ops->host_memory && vla_comm_world(comm) > 1 &&
        !(b->stage = malloc(sizeof(float) * (size_t)(offs[n_params] > 0 ? offs[n_params] : 1)))) {
        free(offs), free(b);
        return vla_error(VLA_ERR_NOMEM, "grad_buckets: out of memory for the host staging buffer");
    }
    b->param_bucket = malloc(sizeof(int) * (size_t)n_params);
    b->param_ready = calloc((size_t)n_params, sizeof(bool));
    b->buckets = calloc((size_t)n_params, sizeof(bucket)); /* at most one bucket per parameter */
    if (!b->param_bucket || !b->param_ready || !b->buckets) {
        free(offs);
        vla_grad_buckets_free(b);
        return vla_error(VLA_ERR_NOMEM, "grad_buckets: out of memory");
    }
    /* Walk parameters from last to first, closing a bucket once it holds at
     * least `cap` elements (a parameter is never split). */
    int k = -1;
    for (int i = n_params - 1; i >= 0; i--) {
        if (k < 0 || b->buckets[k].hi - b->buckets[k].lo >= cap) {
            k++;
            b->buckets[k].hi = offs[i + 1];
            b->buckets[k].lo = offs[i + 1];
        }
        b->buckets[k].lo = offs[i];
        b->buckets[k].n_params++;
        b->param_bucket[i] = k;
    }
    b->n_buckets = k + 1;
    for (int j = 0; j < b->n_buckets; j++)
        snprintf(b->buckets[j].what, sizeof b->buckets[j].what, "allreduce grad bucket %d/%d", j, b->n_buckets);
    b->stats.n_buckets = b->n_buckets;
    b->stats.total_elems = offs[n_params];
    free(offs);
    *out = b;
    return vla_grad_buckets_begin(b);
}

void vla_grad_buckets_free(vla_grad_buckets *b) {
    if (!b) return;
    free(b->stage);
    free(b->param_bucket);
    free(b->param_ready);
    free(b->buckets);
    free(b);
}

int vla_grad_buckets_count(const vla_grad_buckets *b) { return b->n_buckets; }

void vla_grad_buckets_range(const vla_grad_buckets *b, int k, int64_t *lo, int64_t *hi) {
    *lo = b->buckets[k].lo, *hi = b->buckets[k].hi;
}

vla_status vla_grad_buckets_begin(vla_grad_buckets *b) {
    for (int k = 0; k < b->n_buckets; k++) {
        if (b->buckets[k].req.active)
            return vla_error(VLA_ERR_INVALID_ARG, "grad_buckets: begin while bucket %d is in flight", k);
        b->buckets[k].pending = b->buckets[k].n_params;
        b->buckets[k].started = b->buckets[k].done = false;
    }
    memset(b->param_ready, 0, sizeof(bool) * (size_t)b->n_params);
    b->next_to_start = 0;
    b->waiting = false;
    b->stats.started_before_wait = b->stats.completed_before_wait = 0;
    b->stats.exposed_s = b->stats.comm_s = 0;
    b->stats.first_start_s = b->stats.wait_begin_s = 0;
    return VLA_OK;
}

static vla_status start_bucket(vla_grad_buckets *b, int k) {
    bucket *bk = &b->buckets[k];
    float *p = b->grads + bk->lo;
    if (b->dev) {
        VLA_TRY(vla_devcomm_iallreduce(b->dev, p, bk->hi - bk->lo, VLA_COMM_MEAN, &bk->req, bk->what));
        bk->started = true;
        if (k == 0) b->stats.first_start_s = bk->req.t_start;
        if (!b->waiting) b->stats.started_before_wait++;
        return VLA_OK;
    }
    if (b->stage) { /* the bucket's final gradients leave the backend once */
        b->ops->to_host(b->stage + bk->lo, p, sizeof(float) * (size_t)(bk->hi - bk->lo));
        p = b->stage + bk->lo;
    }
    VLA_TRY(vla_comm_iallreduce(b->comm, p, p, bk->hi - bk->lo, VLA_COMM_F32, VLA_COMM_MEAN, &bk->req, bk->what));
    bk->started = true;
    if (k == 0) b->stats.first_start_s = bk->req.t_start;
    if (!b->waiting) b->stats.started_before_wait++;
    return VLA_OK;
}

/* Start, in order, every bucket whose parameters are all ready (or all
 * buckets when `force`). */
static vla_status start_ready(vla_grad_buckets *b, bool force) {
    while (b->next_to_start < b->n_buckets && (force || b->buckets[b->next_to_start].pending == 0)) {
        VLA_TRY(start_bucket(b, b->next_to_start));
        b->next_to_start++;
    }
    return VLA_OK;
}

static void note_done(vla_grad_buckets *b, bucket *bk) {
    bk->done = true;
    if (b->stage) /* the averaged bucket goes back */
        b->ops->to_device(b->grads + bk->lo, b->stage + bk->lo, sizeof(float) * (size_t)(bk->hi - bk->lo));
    b->stats.comm_s += bk->req.t_done - bk->req.t_start;
    if (!b->waiting) b->stats.completed_before_wait++;
}

vla_status vla_grad_buckets_progress(vla_grad_buckets *b) {
    for (int k = 0; k < b->next_to_start; k++) {
        bucket *bk = &b->buckets[k];
        if (bk->done) continue;
        bool done = false;
        if (b->dev) VLA_TRY(vla_devcomm_test(b->dev, &bk->req, &done));
        else VLA_TRY(vla_comm_test(b->comm, &bk->req, &done));
        if (done) note_done(b, bk);
        else break; /* later buckets rarely finish first; keep polling cheap */
    }
    return VLA_OK;
}

vla_status vla_grad_buckets_mark_ready(vla_grad_buckets *b, int i) {
    if (i < 0 || i >= b->n_params) return vla_error(VLA_ERR_INVALID_ARG, "grad_buckets: parameter %d", i);
    if (b->param_ready[i]) return vla_error(VLA_ERR_INVALID_ARG, "grad_buckets: parameter %d marked twice", i);
    b->param_ready[i] = true;
    b->buckets[b->param_bucket[i]].pending--;
    VLA_TRY(start_ready(b, false));
    return vla_grad_buckets_progress(b);
}

static vla_status wait_buckets(vla_grad_buckets *b, int64_t lo, int64_t hi) {
    if (!b->waiting) {
        b->waiting = true;
        b->stats.wait_begin_s = vla_now_s();
    }
    VLA_TRY(vla_grad_buckets_progress(b));
    VLA_TRY(start_ready(b, true));
    double t0 = vla_now_s();
    for (int k = 0; k < b->n_buckets; k++) {
        bucket *bk = &b->buckets[k];
        if (bk->done || bk->hi <= lo || bk->lo >= hi) continue;
        if (b->dev) VLA_TRY(vla_devcomm_wait(b->dev, &bk->req));
        else VLA_TRY(vla_comm_wait(b->comm, &bk->req));
        note_done(b, bk);
    }
    double dt = vla_now_s() - t0;
    b->stats.exposed_s += dt;
    b->stats.total_exposed_s += dt;
    return VLA_OK;
}

vla_status vla_grad_buckets_wait_range(vla_grad_buckets *b, int64_t lo, int64_t hi) {
    return wait_buckets(b, lo, hi);
}

vla_status vla_grad_buckets_wait_all(vla_grad_buckets *b) {
    VLA_TRY(wait_buckets(b, 0, b->stats.total_elems));
    b->stats.steps++;
    return VLA_OK;
}

vla_grad_buckets_stats vla_grad_buckets_get_stats(const vla_grad_buckets *b) { return b->stats; }

void vla_grad_buckets_reset_stats(vla_grad_buckets *b) {
    b->stats.total_exposed_s = 0;
    b->stats.steps = 0;
}
