#!/usr/bin/env bash
# fuzz.sh — run the libFuzzer targets built in BUILD_DIR/fuzz.
#
#   fuzz.sh BUILD_DIR [SECONDS]   smoke (make fuzz-smoke, make test): each target
#                                 SECONDS (default 10) from a scratch copy of its
#                                 seed corpus, FUZZ_JOBS targets at once (default:
#                                 one per core); a crash fails the script and leaves
#                                 the reproducer in BUILD_DIR/fuzz/.
#   fuzz.sh BUILD_DIR --long      campaign (make fuzz-long, docs/fuzzing.md): each
#                                 target until FUZZ_RUNS executions (default 10 M,
#                                 -runs) or FUZZ_MAX_TIME seconds (default 3600,
#                                 -max_total_time), whichever comes first. The
#                                 corpus grows in BUILD_DIR/corpus-<target>
#                                 (outside git, seeded from fuzz/corpus/<target>,
#                                 kept between campaigns); crashes, leaks, timeouts
#                                 and OOMs go to BUILD_DIR/findings/<target>/, and
#                                 after one the target resumes with what is left of
#                                 its budget (at most FUZZ_MAX_FINDINGS, default 3,
#                                 findings per target). Prints one table row per
#                                 target (executions, cov and ft from libFuzzer's
#                                 final stats, seconds, findings) and fails if any
#                                 target found something.
#
# FUZZ_TARGETS="fuzz_png fuzz_parquet_file" limits either mode to those targets.
# The committed corpus only changes by hand: a finding, once fixed, is copied
# into fuzz/corpus/<target>/ as regress-<what>, where make test replays it.
set -euo pipefail
build=$1
mode=${2:-10}
shopt -s nullglob
targets=()
for t in "$build"/fuzz/fuzz_*; do # the programs, not their logs and scratch corpora beside them
  [[ -f "$t" && -x "$t" && "$(basename "$t")" != *.* ]] && targets+=("$t")
done
if [ -n "${FUZZ_TARGETS:-}" ]; then
  targets=()
  for n in $FUZZ_TARGETS; do targets+=("$build/fuzz/$n"); done
fi
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz.sh: no fuzz targets built"; exit 0; fi

# Per-target input size: the video target pays FFmpeg's per-file cost
# (fuzz/fuzz_video_file.c), so it stays small; the rest take up to 64 KiB.
max_len() { case "$1" in fuzz_video_file) echo 16384 ;; *) echo 65536 ;; esac; }

seed_corpus() { # seed_corpus NAME DIR
  mkdir -p "$2"
  if [ -d "fuzz/corpus/$1" ]; then cp -n fuzz/corpus/"$1"/* "$2"/ 2>/dev/null || true; fi
}

if [ "$mode" != "--long" ]; then
  # Smoke: every target for the same seconds as before, FUZZ_JOBS of them at
  # once (default: one per core). Each target is single-threaded, so on 2
  # cores the 19 targets take half the wall time and get the same execution
  # budget each; a crash still stops the run with its log.
  seconds=$mode
  jobs=${FUZZ_JOBS:-$(nproc)}
  smoke_one() { # smoke_one PROGRAM: exit status of that target's run
    local name work
    name=$(basename "$1")
    work="$build/fuzz/$name.corpus"
    seed_corpus "$name" "$work"
    (cd "$build/fuzz" && ./"$name" -max_total_time="$seconds" -max_len="$(max_len "$name")" -rss_limit_mb=2048 \
        -print_final_stats=0 "$name.corpus" 2>"$name.log")
  }
  declare -A pid_name=()
  failed=""
  reap() { # wait for any one target; remember it if it failed
    local pid rc=0
    wait -n -p pid || rc=$?
    [ "$rc" -eq 0 ] || failed="$failed ${pid_name[$pid]}"
    unset "pid_name[$pid]"
  }
  for t in "${targets[@]}"; do
    while [ "${#pid_name[@]}" -ge "$jobs" ]; do reap; done
    echo "fuzz: $(basename "$t") for ${seconds}s"
    smoke_one "$t" &
    pid_name[$!]=$(basename "$t")
  done
  while [ "${#pid_name[@]}" -gt 0 ]; do reap; done
  if [ -n "$failed" ]; then
    for name in $failed; do echo "fuzz: $name FAILED; see $build/fuzz/$name.log"; tail -30 "$build/fuzz/$name.log"; done
    exit 1
  fi
  echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a crash ($jobs at a time)"
  exit 0
fi

# Files this campaign added to a findings directory (earlier ones stay until removed).
new_findings() { find "$1" -type f -newermt "@$(($2 - 1))" | wc -l; }

runs=${FUZZ_RUNS:-10000000}
max_time=${FUZZ_MAX_TIME:-3600}
max_findings=${FUZZ_MAX_FINDINGS:-3}
build_abs=$(cd "$build" && pwd)
date=$(date -u +%Y-%m-%d)
echo "fuzz-long: up to $runs executions or ${max_time}s per target; corpora in $build/corpus-*, findings in $build/findings/"
rows=()
total_findings=0
for t in "${targets[@]}"; do
  name=$(basename "$t")
  corpus="$build_abs/corpus-$name"
  findings="$build_abs/findings/$name"
  log="$build_abs/fuzz/$name.long.log"
  seed_corpus "$name" "$corpus"
  mkdir -p "$findings"
  execs=0 cov=- ft=- found=0
  start=$(date +%s)
  : >"$log"
  while :; do
    left_runs=$((runs - execs))
    left_time=$((max_time - ($(date +%s) - start)))
    [ "$left_runs" -gt 0 ] && [ "$left_time" -gt 0 ] || break
    echo "fuzz-long: $name ($left_runs executions, ${left_time}s left)"
    part="$log.part"
    rc=0
    (cd "$build_abs/fuzz" && ./"$name" -runs="$left_runs" -max_total_time="$left_time" -max_len="$(max_len "$name")" \
        -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" >"$part" 2>&1) || rc=$?
    cat "$part" >>"$log"
    # executions of this part: the final stats, else the last "#N" status line
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$part" | tail -1)
    [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$part" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
    last=$(grep -E 'cov: [0-9]+ ft: [0-9]+' "$part" | tail -1 || true)
    if [ -n "$last" ]; then
      cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<<"$last")
      ft=$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<<"$last")
    fi
    [ "$rc" -eq 0 ] && break
    found=$(new_findings "$findings" "$start")
    echo "fuzz-long: $name stopped (exit $rc) with a finding; $found in $findings/"
    if [ "$found" -ge "$max_findings" ] || [ "${n:-0}" -eq 0 ]; then break; fi
  done
  rm -f "$log.part"
  found=$(new_findings "$findings" "$start")
  total_findings=$((total_findings + found))
  rows+=("| $name | $execs | $cov | $ft | $(($(date +%s) - start)) s | $date | $found |")
done
echo
echo "| target | executions | cov | ft | time | date | findings |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [ "$total_findings" -gt 0 ]; then
  echo "fuzz-long: $total_findings findings under $build/findings/ (logs: $build/fuzz/*.long.log)"
  exit 1
fi
