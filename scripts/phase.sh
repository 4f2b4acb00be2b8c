#!/usr/bin/env bash
# phase.sh — run one phase of `make test` and say how long it took.
# Usage: scripts/phase.sh NAME COMMAND...   (exits with COMMAND's status)
set -uo pipefail
name=$1; shift
start=$(date +%s)
"$@"; status=$?
secs=$(( $(date +%s) - start ))
printf 'make test: %s took %d min %02d s%s\n' "$name" $((secs / 60)) $((secs % 60)) \
  "$([ $status -eq 0 ] || echo " and failed ($status)")" >&2
exit $status
