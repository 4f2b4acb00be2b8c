#!/usr/bin/env bash
# rtc_eval.sh — real-time chunking measured in PushT: for each inference
# delay, `vla eval` with synchronous chunks (the robot waits), naive
# asynchronous chunks and real-time chunking (docs/serve.md, "Real-time
# chunking"), the same episodes each time; prints a markdown table of
# success, mean max coverage, the actions' jerk overall and at chunk
# boundaries, and policy calls per episode. JSON lines of every run go to
# OUT/runs.jsonl.
#
#   scripts/rtc_eval.sh BUILD_DIR CHECKPOINT [OUT]
# Knobs (environment): RTC_EPISODES (100), RTC_SEED (200000), RTC_DELAYS
# ("0 1 2 3 4"), RTC_N_ACT (4: actions per chunk, the demo's), RTC_ABLATION
# (the delay at which RTC also runs without its VJP; "" for none; default 2).
set -euo pipefail
build=${1:?usage: rtc_eval.sh BUILD_DIR CHECKPOINT [OUT]}
ckpt=${2:?usage: rtc_eval.sh BUILD_DIR CHECKPOINT [OUT]}
out=${3:-outputs/rtc_eval}
eps=${RTC_EPISODES:-100}
seed=${RTC_SEED:-200000}
delays=${RTC_DELAYS:-0 1 2 3 4}
n_act=${RTC_N_ACT:-4}
ablation=${RTC_ABLATION-2}
vla="$build/vla"
mkdir -p "$out"
: >"$out/runs.jsonl"

field() { sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" <<<"$1" | tr -d '"'; }

run() { # mode delay [extra flags]
  local mode=$1 d=$2; shift 2
  local line
  line=$("$vla" eval --policy.path="$ckpt" --env.type=pusht --eval.n_episodes="$eps" --seed="$seed" \
    --policy.n_action_steps="$n_act" --eval.n_videos=0 --output_dir="$out/${mode}_d${d}$*" --json \
    --eval.inference_delay="$d" --eval.chunking="$mode" "$@" 2>/dev/null)
  echo "$line" >>"$out/runs.jsonl"
  printf '%s %s %s %s %s %s\n' "$(field "$line" success_rate)" "$(field "$line" mean_max_coverage)" \
    "$(field "$line" mean_jerk)" "$(field "$line" boundary_jerk)" "$(field "$line" chunks)" "$(field "$line" seconds)"
}

echo "| delay d | chunking | success | mean max coverage | jerk, all steps | jerk at chunk boundaries | chunks / episode | eval s |"
echo "|---|---|---|---|---|---|---|---|"
for d in $delays; do
  modes="sync naive rtc"
  [ "$d" = 0 ] && modes="sync rtc" # at d = 0 naive is sync
  for m in $modes; do
    read -r sr cov jerk bj ch secs < <(run "$m" "$d")
    printf '| %s | %s | %.0f%% | %.3f | %.1f | %.1f | %.1f | %.0f |\n' "$d" "$m" "$(awk -v x="$sr" 'BEGIN{print 100*x}')" \
      "$cov" "$jerk" "$bj" "$ch" "$secs"
  done
  if [ -n "$ablation" ] && [ "$d" = "$ablation" ]; then
    read -r sr cov jerk bj ch secs < <(run rtc "$d" --rtc.no_jacobian=true)
    printf '| %s | %s | %.0f%% | %.3f | %.1f | %.1f | %.1f | %.0f |\n' "$d" "rtc, no VJP" \
      "$(awk -v x="$sr" 'BEGIN{print 100*x}')" "$cov" "$jerk" "$bj" "$ch" "$secs"
  fi
done
