/* comm_device.h — collectives on backend memory: NCCL when the backend is
 * cuda (built with `make CUDA=1`), so gradients, ZeRO-1 shards and FP8
 * amaxes never leave the GPU.
 *
 * Bootstrap (NCCL User Guide, "Creating a Communicator"; llm.c): rank 0
 * calls ncclGetUniqueId, the MPI communicator broadcasts it, every rank
 * calls ncclCommInitRank on the device its backend chose (local rank mod
 * device count). It happens on first use, a collective point every rank
 * reaches in the same order (the gradient buckets' or ZeRO-1's creation).
 *
 * Streams and events (llm.c's overlap pattern): a collective waits for an
 * event recorded on the compute stream after the kernels that produced its
 * data, runs on the communication stream, and records an event there; the
 * compute stream waits for that event before anything reads the result.
 * Nothing blocks the host: a bucket's all-reduce overlaps the rest of
 * backward, and `wait` only orders the compute stream behind it. Errors:
 * every ncclResult_t is checked (ncclGetErrorString), and test/wait poll
 * ncclCommGetAsyncError; a hung peer is the MPI watchdog's (it exits).
 *
 * One rank needs no communication: there is no device communicator unless
 * VLA_NCCL=1 (then a one-rank NCCL communicator runs every call — how one
 * GPU exercises this path: NCCL runs one-rank collectives as copies or
 * no-ops, gpu-notes §6.2). */
#ifndef VLA_DISTRIBUTED_COMM_DEVICE_H
#define VLA_DISTRIBUTED_COMM_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "distributed/comm.h"
#include "tensor/ops.h"

typedef struct vla_devcomm vla_devcomm;

/* The device communicator of comm for ops, created on first use
 * (collective), or *out = NULL when there is none: ops's memory is the
 * host's, this build has no NCCL, or one rank without VLA_NCCL=1. */
vla_status vla_devcomm_get(vla_comm *comm, const vla_ops *ops, vla_devcomm **out);
const char *vla_devcomm_name(const vla_devcomm *d); /* "nccl 2.28.9" */

/* In place, ordered between the compute stream's work before and after. */
vla_status vla_devcomm_allreduce(vla_devcomm *d, void *buf, int64_t count, vla_comm_dtype t, vla_comm_op op);
/* Start an in-place all-reduce of f32 (a gradient bucket); test never
 * blocks; wait orders the compute stream behind it (the host does not block). */
vla_status vla_devcomm_iallreduce(vla_devcomm *d, float *buf, int64_t count, vla_comm_op op, vla_comm_request *req,
                                  const char *what);
vla_status vla_devcomm_test(vla_devcomm *d, vla_comm_request *req, bool *done);
vla_status vla_devcomm_wait(vla_devcomm *d, vla_comm_request *req);
/* Equal blocks (distributed/nccl_plan.h): recv[block] ← op over ranks of send[rank·block ..]. */
vla_status vla_devcomm_reduce_scatter(vla_devcomm *d, const float *send, float *recv, int64_t block, vla_comm_op op);
/* In place: buf[world·block] with this rank's block at rank·block on entry. */
vla_status vla_devcomm_allgather(vla_devcomm *d, float *buf, int64_t block);

/* An all-reduce of n values of type t in backend memory, whatever the
 * backend: NCCL when there is a device communicator, MPI directly on host
 * memory, else through host staging. What the FP8 recipe's amax all-reduce
 * (MAX) and a queued step's loss sum and Σg² (SUM, F64) call. */
vla_status vla_comm_allreduce_backend(vla_comm *comm, const vla_ops *ops, void *buf, int64_t count, vla_comm_dtype t,
                                      vla_comm_op op);

#endif
