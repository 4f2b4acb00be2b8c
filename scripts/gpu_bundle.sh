#!/usr/bin/env bash
# scripts/gpu_bundle.sh — the cuda build of this checkout as a directory that
# runs on a GPU machine lacking vla.c's Debian packages: what
# `scripts/gpu_check.sh --prebuilt=DIR` runs (docs/cuda.md, "The GPU check").
#
#   scripts/gpu_bundle.sh [OUT_DIR]     (default gpu-bundle; also OUT_DIR.tar.xz)
#
# Builds with -DVLA_CUDA=ON (build-cuda/), copies the CLI and the two test
# programs gpu_check runs, and every shared library they need except the C
# library's own, libstdc++/libgcc (the target's are newer) and CUDA's (the
# target's toolkit or CUDA 13 wheels provide cuBLASLt and NCCL, found through
# LD_LIBRARY_PATH by gpu_check); stripped, then packed with xz. Binaries
# built on Debian 12 (glibc 2.36) run on newer glibc. Prints the sizes: the
# lent GPU machine takes 64 MiB of carried files per call.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
BUILD=${BUILD:-build-cuda}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVLA_CUDA=ON -DVLA_INSTALLABLE=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target vla_cli test_conformance test_backends
rm -rf "$OUT"
mkdir -p "$OUT/tests" "$OUT/lib"
cp "$BUILD/vla" "$OUT/"
cp "$BUILD/tests/test_conformance" "$BUILD/tests/test_backends" "$OUT/tests/"
ldd "$OUT/vla" "$OUT/tests/"* | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libnccl|libcudart|libcuda)\.so|ld-linux' |
    while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
strip --strip-unneeded "$OUT/vla" "$OUT/tests/"* "$OUT/lib/"* 2>/dev/null || true
tar -C "$(dirname "$OUT")" -cJf "$OUT.tar.xz" "$(basename "$OUT")"
echo "gpu_bundle: $(du -sh "$OUT" | cut -f1) in $OUT ($(ls "$OUT/lib" | wc -l) libraries), $(du -h "$OUT.tar.xz" | cut -f1) packed in $OUT.tar.xz"
