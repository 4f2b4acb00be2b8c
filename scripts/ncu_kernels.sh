#!/usr/bin/env bash
# ncu_kernels.sh — the kernels of an Nsight Compute CSV log, each kernel's launches summed: one line
# "NAME TOTAL_US LAUNCHES" per kernel, the largest total first (at most N lines, default 8).
# Usage: scripts/ncu_kernels.sh LOG.csv [N]
# The log is what `ncu --csv --print-units base --metrics gpu__time_duration.sum --log-file LOG.csv …`
# writes: a header row naming the columns ("Kernel Name", "Metric Name", "Metric Value", …; found by
# name, so a column added by another ncu version moves nothing), then one row per launch and metric,
# every field quoted. A kernel's name is cut at its template or parameter list (k_mma_fwd<256, …> →
# k_mma_fwd) and followed by its grid (k_mma_fwd[304x1x1]): launches of one kernel on one shape add up,
# a training pass and a chunk's cached call stay apart. Durations are nanoseconds (base units).
# gpu_check.sh calls it on its ncu_attention log; tests/scripts/ncu_kernels.sh checks it on a fixture.
set -uo pipefail
log=${1:?usage: ncu_kernels.sh LOG.csv [N]}
top=${2:-8}
[ -r "$log" ] || { echo "ncu_kernels: cannot read $log" >&2; exit 2; }
awk -F'","' '
    /^"ID"/ {
        for (i = 1; i <= NF; i++) { f = $i; gsub(/"/, "", f); col[f] = i }
        hdr = ("Kernel Name" in col) && ("Metric Name" in col) && ("Metric Value" in col)
        next
    }
    hdr && /^"/ {
        m = $col["Metric Name"]; gsub(/"/, "", m)
        if (m != "gpu__time_duration.sum") next
        n = $col["Kernel Name"]; gsub(/"/, "", n); sub(/^void /, "", n); sub(/[<(].*/, "", n)
        if ("Grid Size" in col) { g = $col["Grid Size"]; gsub(/[" ()]/, "", g); gsub(/,/, "x", g); n = n "[" g "]" }
        v = $col["Metric Value"]; gsub(/[",]/, "", v)
        t[n] += v; c[n]++
    }
    END { for (n in t) printf "%s %.1f %d\n", n, t[n] / 1000, c[n] }' "$log" | sort -k2,2 -rn | head -n "$top"
