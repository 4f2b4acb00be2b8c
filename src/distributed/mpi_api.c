/* mpi_api.c — Open MPI's table of entry points, filled at the first use
 * (distributed/mpi_api.h). Empty in a build without MPI. */
#if VLA_HAVE_MPI
#define VLA_MPI_API_IMPL
#include "distributed/mpi_api.h"

#include "vla_sonames.h" /* the build's libmpi soname (CMakeLists.txt, vla_sonames) */

VLA_DYNLIB_DEFINE(mpi, VLA_MPI_SYMBOLS, "Open MPI", "libopenmpi3 openmpi-bin", VLA_SONAMES_MPI);
#else
typedef int vla_mpi_api_unused; /* ISO C: a translation unit declares something */
#endif
