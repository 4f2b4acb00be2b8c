#!/bin/bash
# precision_curves.sh — train the same run in f32, bf16 and FP8 and compare
# the loss curves (docs/precision.md, "Loss curves"): for each policy preset
# and mode, `vla train` on a PushT dataset recorded here (same seed, data,
# schedule), then one markdown row per run: the mean loss of the last 50
# steps, its relative difference from f32, the largest relative gap between
# the two curves over the whole run (each logged point is a 10-step mean),
# and seconds per step. Mode "control" is f32 again at half the batch with
# 2 accumulation steps: the same samples and the same sums in another
# order, so its gap to f32 is how far any rounding difference alone moves a
# run (the noise floor the other modes are read against). Exits 1 when a
# mode's final loss differs from f32's by more than its tolerance.
#
# Usage: scripts/precision_curves.sh [BUILD_DIR]   (default build)
# Knobs (environment): STEPS=300 BATCH=16 LR=1e-3 SEED=1 EPISODES=50
#   POLICIES="pi05-tiny groot-tiny" MODES="fp32 control bf16 fp8" THREADS=2
#   TOL_BF16=0.02 TOL_FP8=0.05 (relative, final loss vs f32)
#   OUT=outputs/precision_curves (runs and the dataset; reused when present)
set -euo pipefail
BUILD=${1:-build}
VLA=$BUILD/vla
STEPS=${STEPS:-300} BATCH=${BATCH:-16} LR=${LR:-1e-3} SEED=${SEED:-1} EPISODES=${EPISODES:-50}
POLICIES=${POLICIES:-"pi05-tiny groot-tiny"} MODES=${MODES:-"fp32 control bf16 fp8"} THREADS=${THREADS:-2}
TOL_BF16=${TOL_BF16:-0.02} TOL_FP8=${TOL_FP8:-0.05}
OUT=${OUT:-outputs/precision_curves}
[ -x "$VLA" ] || { echo "precision_curves.sh: no $VLA (run make first)" >&2; exit 2; }
mkdir -p "$OUT"
DATA=$OUT/pusht
[ -f "$DATA/meta/info.json" ] || "$VLA" sim record --env=pusht --episodes="$EPISODES" --out="$DATA" >&2

# column 2 (loss) of metrics.csv, one value per logged step
losses() { awk -F, 'NR > 1 && $2 != "" { print $2 }' "$1/metrics.csv"; }

fail=0
echo "| policy | precision | final loss (last 50 steps) | vs fp32 | largest gap over the run | s/step |"
echo "|---|---|---|---|---|---|"
for pol in $POLICIES; do
    type=${pol%%-*}
    for mode in $MODES; do
        run=$OUT/${pol}_$mode
        if [ ! -f "$run/metrics.csv" ] || [ "$(losses "$run" | wc -l)" -lt $((STEPS / 10)) ]; then
            rm -rf "$run"
            how="--precision=$mode --batch_size=$BATCH"
            [ "$mode" = control ] && how="--precision=fp32 --batch_size=$((BATCH / 2)) --gradient_accumulation_steps=2"
            # shellcheck disable=SC2086
            "$VLA" train --dataset.root="$DATA" --policy.type="$type" --policy.config="$pol" $how \
                --steps="$STEPS" --seed="$SEED" --optimizer.lr="$LR" --log_freq=10 --num_workers=1 --quiet \
                --dist.threads_per_rank="$THREADS" --json --output_dir="$run" > "$run.json"
        fi
        secs=$(jq -r '.seconds' "$run.json" 2>/dev/null || echo nan)
        final=$(losses "$run" | tail -5 | awk '{ s += $1 } END { printf "%.5f", s / NR }')
        if [ "$mode" = fp32 ] || [ ! -f "$OUT/${pol}_fp32/metrics.csv" ]; then
            echo "| $pol | $mode | $final | — | — | $(awk -v s="$secs" -v n="$STEPS" 'BEGIN { printf "%.3f", s / n }') |"
            continue
        fi
        ref=$(losses "$OUT/${pol}_fp32" | tail -5 | awk '{ s += $1 } END { printf "%.5f", s / NR }')
        rel=$(awk -v a="$final" -v b="$ref" 'BEGIN { d = (a - b) / b; printf "%+.4f", d }')
        gap=$(paste <(losses "$run") <(losses "$OUT/${pol}_fp32") |
              awk '{ d = ($1 - $2) / $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.4f", m }')
        tol=$TOL_FP8
        [ "$mode" = bf16 ] || [ "$mode" = control ] && tol=$TOL_BF16
        verdict=$(awk -v r="$rel" -v t="$tol" 'BEGIN { if (r < 0) r = -r; print (r <= t) ? "within" : "OUTSIDE" }')
        [ "$verdict" = OUTSIDE ] && fail=1
        echo "| $pol | $mode | $final | $rel ($verdict ±$tol) | $gap | $(awk -v s="$secs" -v n="$STEPS" 'BEGIN { printf "%.3f", s / n }') |"
    done
done
exit $fail
