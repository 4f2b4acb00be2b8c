/* grid_stride.cuh — the grid-stride loop of the elementwise kernels: element i of n for every thread of
 * any grid, so a launch's shape never changes what is computed (only how fast). */
#ifndef VLA_TENSOR_CUDA_GRID_STRIDE_CUH
#define VLA_TENSOR_CUDA_GRID_STRIDE_CUH

#include <stdint.h>

#define VLA_GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#endif
