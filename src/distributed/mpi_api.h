/* mpi_api.h — Open MPI as vla.c calls it (distributed/comm.c, under
 * mpirun): loaded at the first use, not at process start (base/dynlib.h
 * says why and how). Include this instead of <mpi.h>; a new MPI call goes
 * into VLA_MPI_SYMBOLS and gets its redirect below, or the link fails. */
#ifndef VLA_DISTRIBUTED_MPI_API_H
#define VLA_DISTRIBUTED_MPI_API_H

#include "base/dynlib.h"

#include <mpi.h>

/* MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM… are Open MPI's macros for the address
 * of its variables (ompi_mpi_comm_world…), listed here as data symbols. */
#define VLA_MPI_SYMBOLS(X) \
    X(MPI_Abort) \
    X(MPI_Allgatherv) \
    X(MPI_Allreduce) \
    X(MPI_Barrier) \
    X(MPI_Bcast) \
    X(MPI_Comm_dup) \
    X(MPI_Comm_free) \
    X(MPI_Comm_rank) \
    X(MPI_Comm_set_errhandler) \
    X(MPI_Comm_size) \
    X(MPI_Error_string) \
    X(MPI_Finalize) \
    X(MPI_Get_version) \
    X(MPI_Iallreduce) \
    X(MPI_Init_thread) \
    X(MPI_Initialized) \
    X(MPI_Reduce_scatter) \
    X(MPI_Test) \
    X(MPI_Wait) \
    X(ompi_mpi_byte) \
    X(ompi_mpi_comm_world) \
    X(ompi_mpi_double) \
    X(ompi_mpi_errors_return) \
    X(ompi_mpi_float) \
    X(ompi_mpi_int64_t) \
    X(ompi_mpi_op_max) \
    X(ompi_mpi_op_min) \
    X(ompi_mpi_op_sum)
VLA_DYNLIB_DECLARE(mpi, VLA_MPI_SYMBOLS)

#ifndef VLA_MPI_API_IMPL
#define MPI_Abort (vla_mpi()->MPI_Abort)
#define MPI_Allgatherv (vla_mpi()->MPI_Allgatherv)
#define MPI_Allreduce (vla_mpi()->MPI_Allreduce)
#define MPI_Barrier (vla_mpi()->MPI_Barrier)
#define MPI_Bcast (vla_mpi()->MPI_Bcast)
#define MPI_Comm_dup (vla_mpi()->MPI_Comm_dup)
#define MPI_Comm_free (vla_mpi()->MPI_Comm_free)
#define MPI_Comm_rank (vla_mpi()->MPI_Comm_rank)
#define MPI_Comm_set_errhandler (vla_mpi()->MPI_Comm_set_errhandler)
#define MPI_Comm_size (vla_mpi()->MPI_Comm_size)
#define MPI_Error_string (vla_mpi()->MPI_Error_string)
#define MPI_Finalize (vla_mpi()->MPI_Finalize)
#define MPI_Get_version (vla_mpi()->MPI_Get_version)
#define MPI_Iallreduce (vla_mpi()->MPI_Iallreduce)
#define MPI_Init_thread (vla_mpi()->MPI_Init_thread)
#define MPI_Initialized (vla_mpi()->MPI_Initialized)
#define MPI_Reduce_scatter (vla_mpi()->MPI_Reduce_scatter)
#define MPI_Test (vla_mpi()->MPI_Test)
#define MPI_Wait (vla_mpi()->MPI_Wait)
#define ompi_mpi_byte (*vla_mpi()->ompi_mpi_byte)
#define ompi_mpi_comm_world (*vla_mpi()->ompi_mpi_comm_world)
#define ompi_mpi_double (*vla_mpi()->ompi_mpi_double)
#define ompi_mpi_errors_return (*vla_mpi()->ompi_mpi_errors_return)
#define ompi_mpi_float (*vla_mpi()->ompi_mpi_float)
#define ompi_mpi_int64_t (*vla_mpi()->ompi_mpi_int64_t)
#define ompi_mpi_op_max (*vla_mpi()->ompi_mpi_op_max)
#define ompi_mpi_op_min (*vla_mpi()->ompi_mpi_op_min)
#define ompi_mpi_op_sum (*vla_mpi()->ompi_mpi_op_sum)
#endif

#endif
