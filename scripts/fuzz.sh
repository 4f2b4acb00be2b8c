#!/usr/bin/env bash
# fuzz.sh BUILD_DIR SECONDS — run every libFuzzer target in BUILD_DIR/fuzz for
# SECONDS each, starting from its seed corpus in fuzz/corpus/<target>. New
# inputs go to a scratch copy so the committed corpus only changes by hand.
# A crash makes the script fail and leaves the reproducer in BUILD_DIR/fuzz/.
set -euo pipefail
build=$1; seconds=${2:-10}
shopt -s nullglob
targets=("$build"/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz.sh: no fuzz targets built"; exit 0; fi
for t in "${targets[@]}"; do
  name=$(basename "$t")
  work="$build/fuzz/$name.corpus"
  mkdir -p "$work"
  [ -d "fuzz/corpus/$name" ] && cp -n fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $name for ${seconds}s"
  (cd "$build/fuzz" && ./"$name" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
      -print_final_stats=0 "$name.corpus" 2>"$name.log") || {
    echo "fuzz: $name FAILED; see $build/fuzz/$name.log"; tail -30 "$build/fuzz/$name.log"; exit 1; }
done
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a crash"
