#!/usr/bin/env bash
# demo.sh BUILD_DIR — the main job on its built-in default, nothing to download.
# Until training lands (see README's status table) this runs the most complete
# end-to-end path that exists and says so.
set -euo pipefail
build=${1:-build}
vla="$build/vla"
echo "== vla.c demo =="
"$vla" version
echo
echo "-- SGEMM ceiling of this machine (the figure MFU is quoted against) --"
"$vla" bench gemm --quick --seconds=0.1
echo
echo "demo: training and closed-loop evaluation are not built yet; this demo shows the"
echo "      runtime that exists today (see README.md, 'Status')."
