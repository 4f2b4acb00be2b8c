#!/usr/bin/env bash
# ctest_costs.sh — the test times ctest schedules by, for a fresh build folder.
#
# ctest -j starts the longest tests first when it knows their times
# (<build>/Testing/Temporary/CTestCostData.txt, which every run rewrites);
# without them it starts in declaration order, and on 2 cores the last long
# test ran alone for about a minute of the ASan suite while the other core
# idled. A clean clone has no times, so `make test` seeds each build folder
# from tests/ctest_costs/<suite>.txt, times measured by a `make test` on a
# 2-core machine; a folder that has run keeps its own. Only the order
# depends on them: a stale or missing entry costs time, never a result.
#   ctest_costs.sh seed BUILD SUITE   copy the committed times in if BUILD has none
#   ctest_costs.sh save BUILD SUITE   commit BUILD's times (after a full run)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || { echo "usage: scripts/ctest_costs.sh seed|save BUILD SUITE" >&2; exit 2; }
action=$1 build=$2 suite=$3
have=$build/Testing/Temporary/CTestCostData.txt
committed=tests/ctest_costs/$suite.txt
case "$action" in
  seed)
    [ -s "$have" ] && exit 0
    [ -f "$committed" ] || exit 0
    mkdir -p "$(dirname "$have")"
    cp "$committed" "$have.tmp" && mv "$have.tmp" "$have" ;;
  save)
    [ -s "$have" ] || { echo "ctest_costs.sh: $have: no times yet (run ctest in $build first)" >&2; exit 1; }
    # the "---" section lists the last run's failures: not a time, not committed
    sed '/^---$/,$d' "$have" | sort > "$committed.tmp" && mv "$committed.tmp" "$committed"
    echo "ctest_costs.sh: $(wc -l < "$committed") times in $committed" ;;
  *) echo "ctest_costs.sh: unknown action '$action' (seed or save)" >&2; exit 2 ;;
esac
