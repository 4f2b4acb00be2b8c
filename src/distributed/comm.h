/* comm.h — the communicator: who am I (rank), how many are we (world), and
 * the collectives data parallelism needs, behind a backend table.
 *
 * Backends:
 *   single — one process, no MPI: every collective is a copy or a no-op, so
 *            the trainer has one code path for N = 1 and N > 1.
 *   mpi    — OpenMPI (or any MPI-3): MPI_Init_thread(FUNNELED), a private
 *            duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN.
 *   nccl   — not a backend of this table but beside it: with the cuda backend
 *            (`make CUDA=1`) the collectives on backend memory — gradient
 *            buckets, ZeRO-1's reduce-scatter and all-gather, the FP8 amax
 *            all-reduce — go through NCCL on the backend's communication
 *            stream (distributed/comm_device.h); MPI stays the launcher, the
 *            host-scalar collectives and the bootstrap of the NCCL id.
 *
 * Threading: only the thread that called vla_comm_init calls into a
 * communicator (MPI_THREAD_FUNNELED); loader threads and OpenMP regions never
 * do. The watchdog thread never calls MPI.
 *
 * Failure: every MPI call returns a status (MPI_ERRORS_RETURN) that becomes a
 * vla_status naming the rank and the collective. A collective that does not
 * complete within `timeout_s` (a peer hung or died without the launcher
 * noticing) makes the watchdog print
 *   "vla: rank R/N: collective 'allreduce grad bucket 3' did not complete within T s …"
 * and _exit(VLA_COMM_EXIT_TIMEOUT); mpirun then tears the job down.
 * When a peer process dies, OpenMPI 4's mpirun itself kills the remaining
 * ranks at once ("mpirun noticed that process rank 1 … exited on signal 9")
 * and exits non-zero; see docs/distributed.md. */
#ifndef VLA_DISTRIBUTED_COMM_H
#define VLA_DISTRIBUTED_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Exit code of a rank whose collective timed out. */
#define VLA_COMM_EXIT_TIMEOUT 3

typedef enum { VLA_COMM_F32, VLA_COMM_F64, VLA_COMM_I64, VLA_COMM_BYTE } vla_comm_dtype;
/* MEAN is SUM divided by the world size (after the reduction, in the dtype). */
typedef enum { VLA_COMM_SUM, VLA_COMM_MEAN, VLA_COMM_MAX, VLA_COMM_MIN } vla_comm_op;
typedef enum { VLA_COMM_AUTO, VLA_COMM_SINGLE, VLA_COMM_MPI } vla_comm_kind;

typedef struct vla_comm vla_comm;

/* A non-blocking collective in flight. Caller-owned memory (e.g. one per
 * gradient bucket); the backend keeps its handle inside. */
typedef struct {
    void *recv;
    int64_t count;
    vla_comm_dtype dtype;
    vla_comm_op op;
    bool active;     /* started and not yet completed */
    double t_start;  /* vla_now_s() at start */
    double t_done;   /* when test/wait first saw it complete */
    const char *what;
    _Alignas(8) unsigned char backend[16];
} vla_comm_request;

typedef struct {
    vla_comm_kind kind;  /* AUTO: MPI when launched by mpirun/srun (env), else single */
    double timeout_s;    /* watchdog; 0 = $VLA_DIST_TIMEOUT or 300 s; < 0 = off */
} vla_comm_options;

typedef struct {
    const char *name;
    vla_status (*barrier)(vla_comm *c);
    vla_status (*bcast)(vla_comm *c, void *buf, int64_t count, vla_comm_dtype t, int root);
    vla_status (*allreduce)(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                            vla_comm_op op);
    vla_status (*iallreduce)(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                             vla_comm_op op, vla_comm_request *req);
    vla_status (*test)(vla_comm *c, vla_comm_request *req, bool *done);
    vla_status (*wait)(vla_comm *c, vla_comm_request *req);
    vla_status (*reduce_scatterv)(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                  vla_comm_dtype t, vla_comm_op op);
    vla_status (*allgatherv)(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                             const int64_t *displs, vla_comm_dtype t);
    void (*finalize)(vla_comm *c);
} vla_comm_backend;

/* Is this process one of several started by mpirun/srun (OMPI_COMM_WORLD_SIZE,
 * PMIX_RANK, PMI_SIZE with size > 1)? A plain `vla train` needs no MPI. */
bool vla_comm_launched_by_mpi(void);

/* opts may be NULL (AUTO, default timeout). MPI is initialised at most once
 * per process and finalised by the vla_comm_finalize that matches the init. */
vla_status vla_comm_init(const vla_comm_options *opts, vla_comm **out);
void vla_comm_finalize(vla_comm *c);
/* A rank that cannot go on while others may be waiting on it in a
 * collective: MPI_Abort (the launcher kills every rank), or exit(code) for a
 * single process. Does not return. */
_Noreturn void vla_comm_abort(vla_comm *c, int code);

int vla_comm_rank(const vla_comm *c);
int vla_comm_world(const vla_comm *c);
const char *vla_comm_backend_name(const vla_comm *c);
size_t vla_comm_dtype_size(vla_comm_dtype t);

/* Collectives. `send == recv` means in place. Counts are elements. */
vla_status vla_comm_barrier(vla_comm *c);
vla_status vla_comm_bcast(vla_comm *c, void *buf, int64_t count, vla_comm_dtype t, int root);
vla_status vla_comm_allreduce(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                              vla_comm_op op);
/* Start; `what` (a static or long-lived string) names it in timeout messages. */
vla_status vla_comm_iallreduce(vla_comm *c, const void *send, void *recv, int64_t count, vla_comm_dtype t,
                               vla_comm_op op, vla_comm_request *req, const char *what);
/* Progress and poll (never blocks). A completed MEAN is already divided. */
vla_status vla_comm_test(vla_comm *c, vla_comm_request *req, bool *done);
vla_status vla_comm_wait(vla_comm *c, vla_comm_request *req);
/* Reduce the full `send` buffer (Σ counts elements, rank r's block at
 * Σ_{q<r} counts[q]) and leave rank r's block in `recv` (counts[rank] elements). */
vla_status vla_comm_reduce_scatterv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                                    vla_comm_dtype t, vla_comm_op op);
/* Gather every rank's block into `recv` at displs[r]. send == recv + displs[rank]
 * (or NULL) means in place. */
vla_status vla_comm_allgatherv(vla_comm *c, const void *send, void *recv, const int64_t *counts,
                               const int64_t *displs, vla_comm_dtype t);

/* Agree on a status: returns VLA_OK on every rank only if `local` is VLA_OK
 * on every rank (used so a checkpoint counts only when all parts are written). */
vla_status vla_comm_agree(vla_comm *c, vla_status local, const char *what);

/* Watchdog hooks used by the backends (and by code that blocks on peers in
 * other ways): mark the start and end of a blocking wait. */
void vla_comm_watch_begin(vla_comm *c, const char *what);
void vla_comm_watch_end(vla_comm *c);

/* The device communicator of this communicator (distributed/comm_device.c
 * owns it; vla_comm_finalize calls free_fn). */
void *vla_comm_device(const vla_comm *c);
void vla_comm_set_device(vla_comm *c, void *device, void (*free_fn)(void *));

/* Seconds this rank has spent blocked inside collectives (exposed comm). */
double vla_comm_blocked_s(const vla_comm *c);

#endif
