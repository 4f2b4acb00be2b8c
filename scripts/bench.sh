#!/usr/bin/env bash
# bench.sh BUILD_DIR — every benchmark, one JSON object per line on stdout
# (progress on stderr). Results and the command are recorded by hand in
# docs/benchmarks.md. Set BENCH_QUICK=1 for a fast smoke run.
set -euo pipefail
build=${1:-build}
vla="$build/vla"
quick=()
[ "${BENCH_QUICK:-0}" = 1 ] && quick=(--quick)
for b in $("$vla" bench --help | awk '/^  [a-z]/ {print $1}'); do
  echo "bench: $b" >&2
  "$vla" bench "$b" "${quick[@]}"
done
# the mixed-precision modes side by side (docs/precision.md)
echo "bench: policy --precision=fp32,bf16,fp8" >&2
"$vla" bench policy --config=pi05-tiny,groot-tiny --precision=fp32,bf16,fp8 --threads=0 --no-peer "${quick[@]}"
