# scripts/cuda_flags.sh — the one set of CMake flags every cuda build of this
# tree uses: sourced by scripts/gpu_bundle.sh and scripts/gpu_check.sh, read
# by the Makefile's cuda-compile (`. scripts/cuda_flags.sh; echo …`), so the
# compile check, the GPU check's own build and the bundle build the same way.
#
#   VLA_CUDA_CMAKE_FLAGS   the cuda backend for sm_90a (CMakeLists.txt's
#                          VLA_CUDA_GENCODE default), no installable artifacts
#   VLA_CUDA_SUITES        the suites of `ctest -L cuda` that a training-node
#                          build runs (the policy suites; the training/resume/eval
#                          suites record their datasets with rendered frames,
#                          tests/test_fixtures.c, which VLA_MEDIA=OFF cannot)
#   VLA_CUDA_TARGETS       what a GPU check runs: the CLI, the conformance and
#                          equivalence programs and those suites
#   VLA_BUNDLE_CMAKE_FLAGS the bundle's extra: portable (no -march=native: the
#                          GPU machine's host is another CPU) and a training-node
#                          build (VLA_MEDIA=OFF: no FFmpeg/cairo/MuJoCo/OSMesa)
VLA_CUDA_CMAKE_FLAGS="-DVLA_CUDA=ON -DVLA_INSTALLABLE=OFF"
VLA_CUDA_SUITES="test_pi05 test_groot test_pi05_vit test_grad_ready test_policy_params"
VLA_CUDA_TARGETS="vla_cli test_conformance test_backends $VLA_CUDA_SUITES"
VLA_BUNDLE_CMAKE_FLAGS="-DVLA_NATIVE=OFF -DVLA_MEDIA=OFF"
