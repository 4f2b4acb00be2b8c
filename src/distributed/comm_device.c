/* comm_device.c — NCCL collectives on the cuda backend's memory
 * (comm_device.h). Without NCCL in the build (no VLA_HAVE_NCCL) there is no
 * device communicator and callers take their host paths. */
#include "distributed/comm_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"

#ifdef VLA_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "tensor/cuda/ops_cuda.h"

struct vla_devcomm {
    ncclComm_t nc;
    cudaStream_t compute, comm;
    int rank, world;
    char name[48];
};

#define NCCL_TRY(call, what)                                                                                    \
    do {                                                                                                        \
        ncclResult_t r_ = (call);                                                                               \
        if (r_ != ncclSuccess)                                                                                  \
            return vla_error(VLA_ERR_IO, "nccl: %s: %s (rank %d of %d)", what, ncclGetErrorString(r_), d->rank, \
                             d->world);                                                                         \
    } while (0)
#define CUDA_TRY(call, what)                                                                            \
    do {                                                                                                \
        cudaError_t e_ = (call);                                                                        \
        if (e_ != cudaSuccess) return vla_error(VLA_ERR_IO, "nccl: %s: %s", what, cudaGetErrorString(e_)); \
    } while (0)

static void devcomm_free(void *p) {
    vla_devcomm *d = p;
    if (!d) return;
    cudaStreamSynchronize(d->comm);
    if (d->nc) ncclCommDestroy(d->nc); /* NULL: aborted already (async_error) */
    free(d);
}

static ncclDataType_t nccl_type(vla_comm_dtype t) {
    switch (t) {
    case VLA_COMM_F64: return ncclFloat64;
    case VLA_COMM_I64: return ncclInt64;
    case VLA_COMM_BYTE: return ncclUint8;
    default: return ncclFloat32;
    }
}

static ncclRedOp_t nccl_op(vla_comm_op op) {
    switch (op) {
    case VLA_COMM_MEAN: return ncclAvg;
    case VLA_COMM_MAX: return ncclMax;
    case VLA_COMM_MIN: return ncclMin;
    default: return ncclSum;
    }
}

vla_status vla_devcomm_get(vla_comm *comm, const vla_ops *ops, vla_devcomm **out) {
    *out = NULL;
    if (ops->device != VLA_DEVICE_CUDA || ops->host_memory) return VLA_OK;
    const char *force = getenv("VLA_NCCL");
    if (vla_comm_world(comm) == 1 && !(force && !strcmp(force, "1"))) return VLA_OK;
    if ((*out = vla_comm_device(comm))) return VLA_OK;
    VLA_TRY(vla_cuda_probe());
    vla_devcomm *d = calloc(1, sizeof *d);
    if (!d) return vla_error(VLA_ERR_NOMEM, "nccl: out of memory");
    d->rank = vla_comm_rank(comm), d->world = vla_comm_world(comm);
    d->compute = (cudaStream_t)vla_cuda_compute_stream();
    d->comm = (cudaStream_t)vla_cuda_comm_stream();
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = d->rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
    /* every rank takes part in the broadcast, so a failure on rank 0 cannot strand the others in it */
    int64_t ok = r == ncclSuccess;
    vla_status st = vla_comm_allreduce(comm, &ok, &ok, 1, VLA_COMM_I64, VLA_COMM_MIN);
    if (st == VLA_OK && !ok) st = vla_error(VLA_ERR_IO, "nccl: ncclGetUniqueId failed on rank 0: %s", ncclGetErrorString(r));
    if (st == VLA_OK) st = vla_comm_bcast(comm, &id, (int64_t)sizeof id, VLA_COMM_BYTE, 0);
    if (st == VLA_OK) {
        vla_comm_watch_begin(comm, "ncclCommInitRank");
        r = ncclCommInitRank(&d->nc, d->world, id, d->rank);
        vla_comm_watch_end(comm);
        if (r != ncclSuccess)
            st = vla_error(VLA_ERR_IO, "nccl: ncclCommInitRank (rank %d of %d, device %d): %s", d->rank, d->world,
                           vla_cuda_device_index(), ncclGetErrorString(r));
    }
    if (st != VLA_OK) {
        free(d);
        return st;
    }
    int v = 0;
    ncclGetVersion(&v);
    snprintf(d->name, sizeof d->name, "nccl %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    vla_comm_set_device(comm, d, devcomm_free);
    vla_cuda_note_comm_use();
    VLA_INFO("comm: %s on device %d, rank %d of %d", d->name, vla_cuda_device_index(), d->rank, d->world);
    *out = d;
    return VLA_OK;
}

const char *vla_devcomm_name(const vla_devcomm *d) { return d->name; }

/* stream `to` waits for the work issued on stream `from` so far */
static vla_status order_after(cudaStream_t to, cudaStream_t from) {
    cudaEvent_t e;
    CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
    CUDA_TRY(cudaEventRecord(e, from), "event record");
    CUDA_TRY(cudaStreamWaitEvent(to, e, 0), "stream wait");
    cudaEventDestroy(e);
    return VLA_OK;
}
static vla_status comm_after_compute(vla_devcomm *d) { return order_after(d->comm, d->compute); }
static vla_status compute_after_comm(vla_devcomm *d) { return order_after(d->compute, d->comm); }

static vla_status async_error(vla_devcomm *d) {
    ncclResult_t ar = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(d->nc, &ar), "ncclCommGetAsyncError");
    if (ar != ncclSuccess && ar != ncclInProgress) {
        ncclCommAbort(d->nc); /* frees the communicator: never destroyed again */
        d->nc = NULL;
        return vla_error(VLA_ERR_IO, "nccl: asynchronous error: %s (rank %d of %d)", ncclGetErrorString(ar), d->rank,
                         d->world);
    }
    return VLA_OK;
}

vla_status vla_devcomm_allreduce(vla_devcomm *d, void *buf, int64_t count, vla_comm_dtype t, vla_comm_op op) {
    if (count <= 0) return VLA_OK;
    VLA_TRY(comm_after_compute(d));
    NCCL_TRY(ncclAllReduce(buf, buf, (size_t)count, nccl_type(t), nccl_op(op), d->nc, d->comm), "ncclAllReduce");
    return compute_after_comm(d);
}

typedef struct {
    cudaEvent_t done;
} nccl_req;

vla_status vla_devcomm_iallreduce(vla_devcomm *d, float *buf, int64_t count, vla_comm_op op, vla_comm_request *req,
                                  const char *what) {
    memset(req, 0, sizeof *req);
    req->recv = buf, req->count = count, req->dtype = VLA_COMM_F32, req->op = op, req->what = what;
    req->t_start = vla_now_s();
    nccl_req *nr = (nccl_req *)req->backend;
    CUDA_TRY(cudaEventCreateWithFlags(&nr->done, cudaEventDisableTiming), "event");
    VLA_TRY(comm_after_compute(d));
    if (count > 0)
        NCCL_TRY(ncclAllReduce(buf, buf, (size_t)count, ncclFloat32, nccl_op(op), d->nc, d->comm), what);
    CUDA_TRY(cudaEventRecord(nr->done, d->comm), "event record");
    req->active = true;
    return VLA_OK;
}

static void finish(vla_comm_request *req) {
    nccl_req *nr = (nccl_req *)req->backend;
    cudaEventDestroy(nr->done); /* released once the streams waiting on it are past it */
    req->active = false;
    if (req->t_done == 0) req->t_done = vla_now_s();
}

vla_status vla_devcomm_test(vla_devcomm *d, vla_comm_request *req, bool *done) {
    *done = !req->active;
    if (!req->active) return VLA_OK;
    nccl_req *nr = (nccl_req *)req->backend;
    cudaError_t e = cudaEventQuery(nr->done);
    if (e == cudaErrorNotReady) return async_error(d);
    if (e != cudaSuccess) return vla_error(VLA_ERR_IO, "nccl: %s: %s", req->what, cudaGetErrorString(e));
    req->t_done = vla_now_s();
    /* complete on the device: the compute stream still has to be ordered behind it */
    CUDA_TRY(cudaStreamWaitEvent(d->compute, nr->done, 0), "stream wait");
    finish(req);
    *done = true;
    return VLA_OK;
}

vla_status vla_devcomm_wait(vla_devcomm *d, vla_comm_request *req) {
    if (!req->active) return VLA_OK;
    VLA_TRY(async_error(d));
    nccl_req *nr = (nccl_req *)req->backend;
    CUDA_TRY(cudaStreamWaitEvent(d->compute, nr->done, 0), "stream wait");
    finish(req);
    return VLA_OK;
}

vla_status vla_devcomm_reduce_scatter(vla_devcomm *d, const float *send, float *recv, int64_t block, vla_comm_op op) {
    VLA_TRY(comm_after_compute(d));
    NCCL_TRY(ncclReduceScatter(send, recv, (size_t)block, ncclFloat32, nccl_op(op), d->nc, d->comm),
             "ncclReduceScatter");
    return compute_after_comm(d);
}

vla_status vla_devcomm_allgather(vla_devcomm *d, float *buf, int64_t block) {
    VLA_TRY(comm_after_compute(d));
    NCCL_TRY(ncclAllGather(buf + (int64_t)d->rank * block, buf, (size_t)block, ncclFloat32, d->nc, d->comm),
             "ncclAllGather");
    return compute_after_comm(d);
}

#else /* no NCCL in this build: no device communicator */

struct vla_devcomm {
    int unused;
};

vla_status vla_devcomm_get(vla_comm *comm, const vla_ops *ops, vla_devcomm **out) {
    (void)comm, (void)ops;
    *out = NULL;
    return VLA_OK;
}
const char *vla_devcomm_name(const vla_devcomm *d) { return "none"; }
#define NO_NCCL vla_error(VLA_ERR_UNSUPPORTED, "nccl: this build has no NCCL (make CUDA=1)")
vla_status vla_devcomm_allreduce(vla_devcomm *d, void *buf, int64_t count, vla_comm_dtype t, vla_comm_op op) {
    return NO_NCCL;
}
vla_status vla_devcomm_iallreduce(vla_devcomm *d, float *buf, int64_t count, vla_comm_op op, vla_comm_request *req,
                                  const char *what) {
    return NO_NCCL;
}
vla_status vla_devcomm_test(vla_devcomm *d, vla_comm_request *req, bool *done) { return NO_NCCL; }
vla_status vla_devcomm_wait(vla_devcomm *d, vla_comm_request *req) { return NO_NCCL; }
vla_status vla_devcomm_reduce_scatter(vla_devcomm *d, const float *send, float *recv, int64_t block, vla_comm_op op) {
    return NO_NCCL;
}
vla_status vla_devcomm_allgather(vla_devcomm *d, float *buf, int64_t block) { return NO_NCCL; }

#endif

vla_status vla_comm_allreduce_backend(vla_comm *comm, const vla_ops *ops, void *buf, int64_t count, vla_comm_dtype t,
                                      vla_comm_op op) {
    if (count <= 0) return VLA_OK;
    vla_devcomm *d = NULL;
    VLA_TRY(vla_devcomm_get(comm, ops, &d));
    if (d) return vla_devcomm_allreduce(d, buf, count, t, op);
    if (vla_comm_world(comm) == 1) return VLA_OK; /* MEAN/SUM/MAX/MIN of one rank: itself */
    if (ops->host_memory) return vla_comm_allreduce(comm, buf, buf, count, t, op);
    size_t bytes = vla_comm_dtype_size(t) * (size_t)count;
    void *h = malloc(bytes);
    if (!h) return vla_error(VLA_ERR_NOMEM, "comm: out of memory staging %lld values", (long long)count);
    ops->to_host(h, buf, bytes);
    vla_status st = vla_comm_allreduce(comm, h, h, count, t, op);
    if (st == VLA_OK) ops->to_device(buf, h, bytes);
    free(h);
    return st;
}
