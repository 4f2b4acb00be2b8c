# scripts/cuda_flags.sh — the one set of CMake flags every cuda build of this
# tree uses: sourced by scripts/gpu_bundle.sh and scripts/gpu_check.sh, read
# by the Makefile's cuda-compile (`. scripts/cuda_flags.sh; echo …`), so the
# compile check, the GPU check's own build and the bundle build the same way.
#
#   VLA_CUDA_CMAKE_FLAGS   the cuda backend for sm_90a (CMakeLists.txt's
#                          VLA_CUDA_GENCODE default), no installable artifacts
#   VLA_CUDA_TARGET        the one CMake target a GPU check builds (vla_cuda_check:
#                          the CLI, the conformance and equivalence programs and
#                          the suites of `ctest -L cuda`); the build writes those
#                          suites' programs, one a line, to BUILD/cuda_suites.txt
#                          (CMakeLists.txt keeps the one list, with each backend's
#                          exclusions: a VLA_MEDIA=OFF build leaves out the suites
#                          that record datasets with rendered frames)
#   VLA_BUNDLE_CMAKE_FLAGS the bundle's extra: portable (no -march=native: the
#                          GPU machine's host is another CPU) and a training-node
#                          build (VLA_MEDIA=OFF: no FFmpeg/cairo/MuJoCo/OSMesa)
VLA_CUDA_CMAKE_FLAGS="-DVLA_CUDA=ON -DVLA_INSTALLABLE=OFF"
VLA_CUDA_TARGET=vla_cuda_check
VLA_BUNDLE_CMAKE_FLAGS="-DVLA_NATIVE=OFF -DVLA_MEDIA=OFF"
