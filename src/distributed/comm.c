/* comm.c — the communicator: single-process and MPI backends, the
 * dispatching front end, and the watchdog that turns a hung collective into
 * a clear message and a non-zero exit. See comm.h. */
#include "distributed/comm.h"

#include "base/log.h"
#include "base/timer.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef VLA_HAVE_MPI
#include "distributed/mpi_api.h"
#endif

struct vla_comm {
    const vla_comm_backend *be;
    int rank, world;
    double timeout_s;
    bool owns_mpi;
#ifdef VLA_HAVE_MPI
    MPI_Comm mpi;
#endif
    /* watchdog */
    pthread_t wd;
    bool wd_running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool wd_stop;
    _Atomic uint64_t watch_start_ns; /* 0: not blocked in a collective */
    _Atomic(const char *) watch_what;
    double blocked_s;
    /* the device communicator (comm_device.c: NCCL), created on first use */
    void *device;
    void (*device_free)(void *);
};

size_t vla_comm_dtype_size(vla_comm_dtype t) {
    switch (t) {
    case VLA_COMM_F32: return 4;
    case VLA_COMM_F64: return 8;
    case VLA_COMM_I64: return 8;
    case VLA_COMM_BYTE: return 1;
    }
    return 0;
}

/* MEAN = SUM / world, applied after the reduction. */
static vla_status finish_mean(vla_comm *c, void *buf, int64_t count, vla_comm_dtype t, vla_comm_op op) {
    if (op != VLA_COMM_MEAN || c->world == 1) return VLA_OK;
    if (t == VLA_COMM_F32) {
        float s = 1.0f / (float)c->world, *p = buf;
        for (int64_t i = 0; i < count; i++) p[i] *= s;
    } else if (t == VLA_COMM_F64) {
        double s = 1.0 / c->world, *p = buf;
        for (int64_t i = 0; i < count; i++) p[i] *= s;
    } else {
        return vla_error(VLA_ERR_INVALID_ARG, "comm: MEAN needs a floating-point dtype");
    }
    return VLA_OK;
}

/* ---- watchdog ------------------------------------------------------------ */

void vla_comm_watch_begin(vla_comm *c, const char *what) {
    atomic_store(&c->watch_what, what);
    atomic_store(&c->watch_start_ns, vla_now_ns());
}

void vla_comm_watch_end(vla_comm *c) {
    uint64_t t0 = atomic_exchange(&c->watch_start_ns, 0);
    if (t0) c->blocked_s += (double)(vla_now_ns() - t0) * 1e-9;
}

double vla_comm_blocked_s(const vla_comm *c) { return c->blocked_s; }

static void *watchdog_main(void *arg) {
    vla_comm *c = arg;
    double period = c->timeout_s / 10;
    if (period > 0.5) period = 0.5;
    if (period < 0.01) period = 0.01;
    pthread_mutex_lock(&c->mu);
    while (!c->wd_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)(period * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        uint64_t t0 = atomic_load(&c->watch_start_ns);
        if (t0 && !c->wd_stop) {
            double waited = (double)(vla_now_ns() - t0) * 1e-9;
            if (waited > c->timeout_s) {
                const char *what = atomic_load(&c->watch_what);
                /* Only async-signal-safe-ish work from here: the main thread is
                 * stuck inside MPI, which must not be called from this thread. */
                fprintf(stderr,
                        "vla: rank %d/%d: collective '%s' did not complete within %.1f s "
                        "(a peer rank died or hung); exiting with code %d\n",
                        c->rank, c->world, what ? what : "?", c->timeout_s, VLA_COMM_EXIT_TIMEOUT);
                fflush(stderr);
                _exit(VLA_COMM_EXIT_TIMEOUT);
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void watchdog_start(vla_comm *c) {
    if (c->world <= 1 || c->timeout_s <= 0) return;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->wd_stop = false;
    if (pthread_create(&c->wd, NULL, watchdog_main, c) == 0) c->wd_running = true;
    else VLA_WARN("comm: could not start the watchdog thread; hung collectives will not time out");
}

static void watchdog_stop(vla_comm *c) {
    if (!c->wd_running) return;
    pthread_mutex_lock(&c->mu);
    c->wd_stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->wd, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    c->wd_running = false;
}

/* ---- single-process backend --------------------------------------------- */

static vla_status single_barrier(vla_comm *c) { return VLA_OK; }
static vla_status single_bcast(vla_comm *c, void *buf, int64_t n, vla_comm_dtype t, int root) {
    if (root != 0) return vla_error(VLA_ERR_INVALID_ARG, "comm: bcast root %d outside world of 1", root);
    return VLA_OK;
}
static vla_status single_allreduce(vla_comm *c, const void *send, void *recv, int64_t n, vla_comm_dtype t,
                                   vla_comm_op op) {
    if (send && send != recv) memmove(recv, send, (size_t)n * vla_comm_dtype_size(t));
    return VLA_OK;
}
static vla_status single_iallreduce(vla_comm *c, const void *send, void *recv, int64_t n, vla_comm_dtype t,
                                    vla_comm_op op, vla_comm_request *req) {
    return single_allreduce(c, send, recv, n, t, op);
}
static vla_status single_test(vla_comm *c, vla_comm_request *req, bool *done) {
    *done = true;
    return VLA_OK;
}
static vla_status single_wait(vla_comm *c, vla_comm_request *req) { return VLA_OK; }
static vla_status single_reduce_scatterv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                         vla_comm_dtype t, vla_comm_op op) {
    if (send != recv) memmove(recv, send, (size_t)counts[0] * vla_comm_dtype_size(t));
    return VLA_OK;
}
static vla_status single_allgatherv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                    const int64_t *displs, vla_comm_dtype t) {
    size_t es = vla_comm_dtype_size(t);
    char *dst = (char *)recv + (size_t)displs[0] * es;
    if (send && send != dst) memmove(dst, send, (size_t)counts[0] * es);
    return VLA_OK;
}
static void single_finalize(vla_comm *c) {}

static const vla_comm_backend single_backend = {
    "single", single_barrier, single_bcast, single_allreduce, single_iallreduce, single_test,
    single_wait, single_reduce_scatterv, single_allgatherv, single_finalize,
};

/* ---- MPI backend ---------------------------------------------------------- */

#ifdef VLA_HAVE_MPI
_Static_assert(sizeof(MPI_Request) <= sizeof(((vla_comm_request *)0)->backend), "MPI_Request too large");

static bool mpi_was_finalized;

static MPI_Datatype mpi_type(vla_comm_dtype t) {
    switch (t) {
    case VLA_COMM_F32: return MPI_FLOAT;
    case VLA_COMM_F64: return MPI_DOUBLE;
    case VLA_COMM_I64: return MPI_INT64_T;
    case VLA_COMM_BYTE: return MPI_BYTE;
    }
    return MPI_BYTE;
}

static MPI_Op mpi_op(vla_comm_op op) {
    switch (op) {
    case VLA_COMM_SUM:
    case VLA_COMM_MEAN: return MPI_SUM;
    case VLA_COMM_MAX: return MPI_MAX;
    case VLA_COMM_MIN: return MPI_MIN;
    }
    return MPI_SUM;
}

static vla_status mpi_fail(vla_comm *c, int rc, const char *call) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return vla_error(VLA_ERR_INTERNAL, "rank %d/%d: %s failed: %s", c->rank, c->world, call, msg);
}

static vla_status check_int_count(vla_comm *c, int64_t n, const char *call) {
    if (n < 0 || n > INT_MAX)
        return vla_error(VLA_ERR_INVALID_ARG, "rank %d: %s: count %lld does not fit an MPI int", c->rank, call,
                         (long long)n);
    return VLA_OK;
}

static vla_status mpi_barrier(vla_comm *c) {
    vla_comm_watch_begin(c, "barrier");
    int rc = MPI_Barrier(c->mpi);
    vla_comm_watch_end(c);
    return rc == MPI_SUCCESS ? VLA_OK : mpi_fail(c, rc, "MPI_Barrier");
}

/* Blocking collectives over buffers larger than INT_MAX go in chunks. */
#define MPI_CHUNK ((int64_t)1 << 30)

static vla_status mpi_bcast(vla_comm *c, void *buf, int64_t n, vla_comm_dtype t, int root) {
    size_t es = vla_comm_dtype_size(t);
    for (int64_t off = 0; off < n; off += MPI_CHUNK) {
        int64_t k = n - off < MPI_CHUNK ? n - off : MPI_CHUNK;
        vla_comm_watch_begin(c, "bcast");
        int rc = MPI_Bcast((char *)buf + (size_t)off * es, (int)k, mpi_type(t), root, c->mpi);
        vla_comm_watch_end(c);
        if (rc != MPI_SUCCESS) return mpi_fail(c, rc, "MPI_Bcast");
    }
    return VLA_OK;
}

static vla_status mpi_allreduce(vla_comm *c, const void *send, void *recv, int64_t n, vla_comm_dtype t,
                                vla_comm_op op) {
    size_t es = vla_comm_dtype_size(t);
    for (int64_t off = 0; off < n; off += MPI_CHUNK) {
        int64_t k = n - off < MPI_CHUNK ? n - off : MPI_CHUNK;
        const void *s = (!send || send == recv) ? MPI_IN_PLACE : (const char *)send + (size_t)off * es;
        vla_comm_watch_begin(c, "allreduce");
        int rc = MPI_Allreduce(s, (char *)recv + (size_t)off * es, (int)k, mpi_type(t), mpi_op(op), c->mpi);
        vla_comm_watch_end(c);
        if (rc != MPI_SUCCESS) return mpi_fail(c, rc, "MPI_Allreduce");
    }
    return VLA_OK;
}

static vla_status mpi_iallreduce(vla_comm *c, const void *send, void *recv, int64_t n, vla_comm_dtype t,
                                 vla_comm_op op, vla_comm_request *req) {
    VLA_TRY(check_int_count(c, n, "MPI_Iallreduce"));
    MPI_Request r;
    const void *s = (!send || send == recv) ? MPI_IN_PLACE : send;
    int rc = MPI_Iallreduce(s, recv, (int)n, mpi_type(t), mpi_op(op), c->mpi, &r);
    if (rc != MPI_SUCCESS) return mpi_fail(c, rc, "MPI_Iallreduce");
    memcpy(req->backend, &r, sizeof r);
    return VLA_OK;
}

static vla_status mpi_test(vla_comm *c, vla_comm_request *req, bool *done) {
    MPI_Request r;
    memcpy(&r, req->backend, sizeof r);
    int flag = 0;
    int rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    memcpy(req->backend, &r, sizeof r);
    if (rc != MPI_SUCCESS) return mpi_fail(c, rc, "MPI_Test");
    *done = flag != 0;
    return VLA_OK;
}

static vla_status mpi_wait(vla_comm *c, vla_comm_request *req) {
    MPI_Request r;
    memcpy(&r, req->backend, sizeof r);
    vla_comm_watch_begin(c, req->what ? req->what : "iallreduce");
    int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    vla_comm_watch_end(c);
    memcpy(req->backend, &r, sizeof r);
    return rc == MPI_SUCCESS ? VLA_OK : mpi_fail(c, rc, "MPI_Wait");
}

static vla_status mpi_reduce_scatterv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                      vla_comm_dtype t, vla_comm_op op) {
    int *ic = malloc(sizeof(int) * (size_t)c->world);
    if (!ic) return vla_error(VLA_ERR_NOMEM, "comm: reduce_scatter counts");
    for (int r = 0; r < c->world; r++) {
        vla_status st = check_int_count(c, counts[r], "MPI_Reduce_scatter");
        if (st != VLA_OK) return free(ic), st;
        ic[r] = (int)counts[r];
    }
    vla_comm_watch_begin(c, "reduce_scatter");
    int rc = MPI_Reduce_scatter(send, recv, ic, mpi_type(t), mpi_op(op), c->mpi);
    vla_comm_watch_end(c);
    free(ic);
    return rc == MPI_SUCCESS ? VLA_OK : mpi_fail(c, rc, "MPI_Reduce_scatter");
}

static vla_status mpi_allgatherv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                 const int64_t *displs, vla_comm_dtype t) {
    int *ic = malloc(sizeof(int) * 2 * (size_t)c->world);
    if (!ic) return vla_error(VLA_ERR_NOMEM, "comm: allgatherv counts");
    int *id = ic + c->world;
    for (int r = 0; r < c->world; r++) {
        vla_status st = check_int_count(c, counts[r], "MPI_Allgatherv");
        if (st == VLA_OK) st = check_int_count(c, displs[r], "MPI_Allgatherv displacement");
        if (st != VLA_OK) return free(ic), st;
        ic[r] = (int)counts[r], id[r] = (int)displs[r];
    }
    size_t es = vla_comm_dtype_size(t);
    const char *mine = (const char *)recv + (size_t)displs[c->rank] * es;
    const void *s = (!send || send == mine) ? MPI_IN_PLACE : send;
    vla_comm_watch_begin(c, "allgatherv");
    int rc = MPI_Allgatherv(s, ic[c->rank], mpi_type(t), recv, ic, id, mpi_type(t), c->mpi);
    vla_comm_watch_end(c);
    free(ic);
    return rc == MPI_SUCCESS ? VLA_OK : mpi_fail(c, rc, "MPI_Allgatherv");
}

static void mpi_finalize(vla_comm *c) {
    MPI_Comm_free(&c->mpi);
    if (c->owns_mpi) {
        MPI_Finalize();
        mpi_was_finalized = true;
    }
}

static const vla_comm_backend mpi_backend = {
    "mpi", mpi_barrier, mpi_bcast, mpi_allreduce, mpi_iallreduce, mpi_test,
    mpi_wait, mpi_reduce_scatterv, mpi_allgatherv, mpi_finalize,
};

static vla_status mpi_init(vla_comm *c) {
    if (mpi_was_finalized)
        return vla_error(VLA_ERR_UNSUPPORTED, "comm: MPI was already finalized in this process");
    VLA_TRY(vla_mpi_require()); /* launched by mpirun without Open MPI's library: what to install */
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        /* FUNNELED: only this (the main) thread calls MPI; loader threads,
         * OpenMP workers and the watchdog never do. */
        int provided = 0;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return vla_error(VLA_ERR_INTERNAL, "comm: MPI_Init_thread failed (%d)", rc);
        if (provided < MPI_THREAD_FUNNELED)
            VLA_WARN("comm: MPI provides thread level %d < FUNNELED; continuing", provided);
        c->owns_mpi = true;
    }
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
    if (rc != MPI_SUCCESS) return vla_error(VLA_ERR_INTERNAL, "comm: MPI_Comm_dup failed (%d)", rc);
    /* Errors come back as return codes (turned into messages), not as an abort
     * deep inside the library with no context. */
    MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->mpi, &c->rank);
    MPI_Comm_size(c->mpi, &c->world);
    c->be = &mpi_backend;
    return VLA_OK;
}
#endif

/* ---- front end ---------------------------------------------------------- */

bool vla_comm_launched_by_mpi(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
    for (unsigned i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

vla_status vla_comm_init(const vla_comm_options *opts, vla_comm **out) {
    *out = NULL;
    vla_comm_options o = {VLA_COMM_AUTO, 0};
    if (opts) o = *opts;
    vla_comm *c = calloc(1, sizeof *c);
    if (!c) return vla_error(VLA_ERR_NOMEM, "comm: out of memory");
    c->timeout_s = o.timeout_s;
    if (c->timeout_s == 0) {
        const char *e = getenv("VLA_DIST_TIMEOUT");
        c->timeout_s = e ? atof(e) : 300.0;
        if (c->timeout_s == 0) c->timeout_s = 300.0;
    }
    vla_comm_kind kind = o.kind;
    if (kind == VLA_COMM_AUTO) kind = vla_comm_launched_by_mpi() ? VLA_COMM_MPI : VLA_COMM_SINGLE;
    if (kind == VLA_COMM_MPI) {
#ifdef VLA_HAVE_MPI
        vla_status st = mpi_init(c);
        if (st != VLA_OK) return free(c), st;
#else
        free(c);
        return vla_error(VLA_ERR_UNSUPPORTED, "comm: launched under MPI but this build has no MPI");
#endif
    } else {
        c->be = &single_backend;
        c->rank = 0, c->world = 1;
    }
    if (c->world > 1) vla_log_set_rank(c->rank);
    watchdog_start(c);
    *out = c;
    return VLA_OK;
}

void vla_comm_finalize(vla_comm *c) {
    if (!c) return;
    /* MPI_Finalize synchronises with the peers but is not watched: meet them
     * in a watched barrier first, so a peer that never arrives (stuck or
     * dead) ends this rank after timeout_s instead of a spin forever. */
    if (c->world > 1 && vla_comm_barrier(c) != VLA_OK) VLA_WARN("comm: %s", vla_error_message());
    if (c->device_free) c->device_free(c->device);
    watchdog_stop(c);
    c->be->finalize(c);
    free(c);
}

_Noreturn void vla_comm_abort(vla_comm *c, int code) {
    fflush(stdout);
    fflush(stderr);
#ifdef VLA_HAVE_MPI
    if (c && c->be == &mpi_backend) MPI_Abort(c->mpi, code);
#endif
    exit(code);
}

void *vla_comm_device(const vla_comm *c) { return c->device; }

void vla_comm_set_device(vla_comm *c, void *device, void (*free_fn)(void *)) {
    c->device = device;
    c->device_free = free_fn;
}

int vla_comm_rank(const vla_comm *c) { return c->rank; }
int vla_comm_world(const vla_comm *c) { return c->world; }
const char *vla_comm_backend_name(const vla_comm *c) { return c->be->name; }

vla_status vla_comm_barrier(vla_comm *c) { return c->be->barrier(c); }

vla_status vla_comm_bcast(vla_comm *c, void *buf, int64_t count, vla_comm_dtype t, int root) {
    if (root < 0 || root >= c->world) return vla_error(VLA_ERR_INVALID_ARG, "comm: bcast root %d", root);
    return c->be->bcast(c, buf, count, t, root);
}

vla_status vla_comm_allreduce(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                              vla_comm_op op) {
    VLA_TRY(c->be->allreduce(c, send, recv, count, t, op));
    return finish_mean(c, recv, count, t, op);
}

vla_status vla_comm_iallreduce(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                               vla_comm_op op, vla_comm_request *req, const char *what) {
    if (req->active) return vla_error(VLA_ERR_INVALID_ARG, "comm: request '%s' is still active", what);
    req->recv = recv, req->count = count, req->dtype = t, req->op = op, req->what = what;
    req->t_start = vla_now_s(), req->t_done = 0;
    VLA_TRY(c->be->iallreduce(c, send, recv, count, t, op, req));
    req->active = true;
    return VLA_OK;
}

static vla_status complete(vla_comm *c, vla_comm_request *req) {
    req->active = false;
    req->t_done = vla_now_s();
    return finish_mean(c, req->recv, req->count, req->dtype, req->op);
}

vla_status vla_comm_test(vla_comm *c, vla_comm_request *req, bool *done) {
    if (!req->active) {
        *done = true;
        return VLA_OK;
    }
    VLA_TRY(c->be->test(c, req, done));
    return *done ? complete(c, req) : VLA_OK;
}

vla_status vla_comm_wait(vla_comm *c, vla_comm_request *req) {
    if (!req->active) return VLA_OK;
    VLA_TRY(c->be->wait(c, req));
    return complete(c, req);
}

vla_status vla_comm_reduce_scatterv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                    vla_comm_dtype t, vla_comm_op op) {
    VLA_TRY(c->be->reduce_scatterv(c, send, recv, counts, t, op));
    return finish_mean(c, recv, counts[c->rank], t, op);
}

vla_status vla_comm_allgatherv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                               const int64_t *displs, vla_comm_dtype t) {
    return c->be->allgatherv(c, send, recv, counts, displs, t);
}

vla_status vla_comm_agree(vla_comm *c, vla_status local, const char *what) {
    int64_t bad = local != VLA_OK, any = bad;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", vla_error_message());
    vla_status st = vla_comm_allreduce(c, &bad, &any, 1, VLA_COMM_I64, VLA_COMM_MAX);
    if (st != VLA_OK) return st;
    if (bad) return vla_error(local, "%s", saved);
    if (any) return vla_error(VLA_ERR_IO, "%s failed on another rank", what);
    return VLA_OK;
}
