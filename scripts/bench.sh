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
