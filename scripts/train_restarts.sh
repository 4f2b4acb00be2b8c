#!/usr/bin/env bash
# train_restarts.sh K -- CMD… — run a training command; when it fails (a rank
# killed, a node lost, the watchdog firing), run it again with --resume=true
# from its last complete checkpoint, at most K times. Works for one process
# and for a whole `mpirun … vla train …` job (MPI cannot replace one dead rank
# in place, so the job is relaunched; it may be relaunched with a different
# -np: the checkpoint resumes on any rank count with the same global batch).
#   scripts/train_restarts.sh 3 -- mpirun -np 2 build/vla train --dataset.root=D --output_dir=O …
# Exit status: the last attempt's. Usage errors (exit 2) are not retried.
set -uo pipefail
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
    echo "usage: $0 K -- COMMAND [ARGS…]   (restart COMMAND with --resume=true up to K times)" >&2
    exit 2
fi
k=$1
shift 2
case $k in '' | *[!0-9]*) echo "$0: K must be a number, got '$k'" >&2; exit 2 ;; esac
"$@"
rc=$?
attempt=0
while [ $rc -ne 0 ] && [ $rc -ne 2 ] && [ $attempt -lt "$k" ]; do
    attempt=$((attempt + 1))
    echo "train_restarts: exit status $rc; restart $attempt of $k from the last complete checkpoint" >&2
    "$@" --resume=true
    rc=$?
done
exit $rc
