#!/usr/bin/env bash
# bench_compare.sh — two builds of vla side by side: `vla bench policy` for each
# config and thread count, the two binaries alternating round after round (so a
# machine whose speed drifts over minutes treats both alike), each keeping its
# best round. Prints one JSON line per (config, threads) with both samples/s and
# new/old. Knobs (environment): CONFIGS (comma list), THREADS (e.g. 1,2), ROUNDS,
# SECONDS_PER (timing window per run), BATCH.
# Usage: scripts/bench_compare.sh OLD_VLA NEW_VLA
set -euo pipefail
old=${1:?usage: bench_compare.sh OLD_VLA NEW_VLA}
new=${2:?usage: bench_compare.sh OLD_VLA NEW_VLA}
configs=${CONFIGS:-pi05-tiny,groot-tiny,pi05-small,groot-small,groot-pusht}
threads=${THREADS:-1,2}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER:-3}
batch=${BATCH:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
IFS=, read -ra cfgs <<<"$configs"
IFS=, read -ra thr <<<"$threads"
for c in "${cfgs[@]}"; do
  for t in "${thr[@]}"; do
    for r in $(seq "$rounds"); do
      for side in old new; do
        bin=$old; [ "$side" = new ] && bin=$new
        OMP_NUM_THREADS=$t "$bin" bench policy --config="$c" --threads="$t" --no-peer --seconds="$secs" \
          --batch="$batch" 2>/dev/null | grep '"policy_train"' >>"$tmp/$c.$t.$side" || true
      done
    done
    best() { grep -o '"samples_per_s":[0-9.]*' "$1" 2>/dev/null | cut -d: -f2 | sort -g | tail -1; }
    o=$(best "$tmp/$c.$t.old"); n=$(best "$tmp/$c.$t.new")
    if [ -n "$o" ] && [ -n "$n" ]; then
      awk -v c="$c" -v t="$t" -v o="$o" -v n="$n" -v r="$rounds" 'BEGIN {
        printf "{\"bench\":\"compare_policy_train\",\"config\":\"%s\",\"threads\":%d,\"rounds\":%d,\"old_samples_per_s\":%.2f,\"new_samples_per_s\":%.2f,\"new_over_old\":%.4f}\n", c, t, r, o, n, n / o }'
    else
      echo "{\"bench\":\"compare_policy_train\",\"config\":\"$c\",\"threads\":$t,\"error\":\"a run printed no policy_train line\"}"
    fi
  done
done
