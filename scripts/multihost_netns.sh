#!/usr/bin/env bash
# multihost_netns.sh — two "hosts" on one machine: two network namespaces
# joined by a veth pair, one MPI rank in each, OpenMPI over TCP across the
# veth (a real network stack: addresses, routing, the kernel's TCP). Checks
# that `vla train` at 2 ranks across the "network" gives the same losses,
# gradient norms and final weights as one rank on one host, then removes
# everything it created.
#
# How mpirun reaches the second host: OpenMPI starts its daemon (orted) on
# every non-local host through an "rsh agent". Here the agent is a small
# script (written to a temp dir) that maps the host 10.77.0.2 to
#   ip netns exec vla-h2 unshare --uts sh -c 'hostname vla-h2; <orted …>'
# instead of ssh. mpirun itself runs in vla-h1 (hostname vla-h1). Shared
# memory is excluded (--mca btl self,tcp) and both the out-of-band channel
# and the MPI traffic are pinned to the veth subnet.
#
# Usage: scripts/multihost_netns.sh [BUILD_DIR]   (default build; needs root,
# iproute2, and BUILD_DIR/vla)
set -euo pipefail

build=${1:-build}
vla=$(readlink -f "$build/vla" 2>/dev/null || true)
[ -x "$vla" ] || { echo "multihost_netns: $build/vla not built" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "multihost_netns: SKIP: needs root (ip netns)" >&2; exit 77; }
command -v ip >/dev/null || { echo "multihost_netns: SKIP: needs iproute2" >&2; exit 77; }

# unique names: ctest may run this from two builds at once (addresses can
# repeat: each pair lives in its own namespaces)
ns1=vla-h1-$$ ns2=vla-h2-$$ if1=vv1-$$ if2=vv2-$$
ip1=10.77.0.1 ip2=10.77.0.2
tmp=$(mktemp -d)

cleanup() {
    ip netns del "$ns1" 2>/dev/null || true
    ip netns del "$ns2" 2>/dev/null || true
    ip link del "$if1" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" INT TERM HUP
cleanup_quiet() { ip netns del "$ns1" 2>/dev/null || true; ip netns del "$ns2" 2>/dev/null || true; }
cleanup_quiet

if ! err=$(ip netns add "$ns1" 2>&1); then
    echo "multihost_netns: SKIP: cannot create a network namespace: $err" >&2
    exit 77
fi
ip netns add "$ns2"
if ! err=$(ip link add "$if1" type veth peer name "$if2" 2>&1); then
    echo "multihost_netns: SKIP: cannot create a veth pair: $err" >&2
    exit 77
fi
ip link set "$if1" netns "$ns1"
ip link set "$if2" netns "$ns2"
ip -n "$ns1" addr add "$ip1/24" dev "$if1"
ip -n "$ns2" addr add "$ip2/24" dev "$if2"
for ns in "$ns1" "$ns2"; do ip -n "$ns" link set lo up; done
ip -n "$ns1" link set "$if1" up
ip -n "$ns2" link set "$if2" up
ip -n "$ns1" route get "$ip2" >/dev/null
echo "multihost_netns: $ns1 ($ip1) <-> $ns2 ($ip2) over a veth pair"

# the rsh agent: "agent [ssh-style options] HOST COMMAND..." -> run COMMAND in HOST's namespace
cat >"$tmp/netns-rsh" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in
  $ip1|vla-h1) ns=$ns1 name=vla-h1 ;;
  $ip2|vla-h2) ns=$ns2 name=vla-h2 ;;
  *) echo "netns-rsh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; \$*"
EOF
chmod +x "$tmp/netns-rsh"
printf '%s slots=1\n%s slots=1\n' "$ip1" "$ip2" >"$tmp/hostfile"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
compare() { # file1 file2 floor what
    paste "$1" "$2" | awk -v floor="$3" -v what="$4" '
        function abs(x) { return x < 0 ? -x : x }
        { n++; d = abs($1 - $2) / (abs($2) + floor); if (d > worst) worst = d }
        END { printf "multihost_netns: %d %s, max relative difference %.3g\n", n, what, worst
              exit (n == 0 || worst > 2e-4) }'
}
ok=1

# `vla train` (pi05-nano on a small Reach dataset recorded here, state only)
# at 2 ranks x batch 4 over the veth against 1 rank x batch 8: same losses,
# gradient norms and final weights.
"$vla" sim record --env=reach --policy=expert --episodes=12 --seed=0 --out="$tmp/reach" --image_size=32 \
    >/dev/null 2>&1 || { echo "multihost_netns: FAIL: recording the Reach dataset" >&2; exit 1; }
targs="train --dataset.root=$tmp/reach --policy.type=pi05 --policy.config=pi05-nano --dataset.image_keys= \
--steps=6 --seed=3 --optimizer.lr=3e-3 --log_freq=1 --save_freq=0 --num_workers=1 --quiet=true --dist.threads_per_rank=1 --json"
# reference: one rank, one host
ASAN_OPTIONS=detect_leaks=0 "$vla" $targs --batch_size=8 --output_dir="$tmp/t1" >/dev/null 2>"$tmp/t1.err" ||
    { cat "$tmp/t1.err" >&2; echo "multihost_netns: FAIL: 1-rank vla train" >&2; exit 1; }
tx0=$(ip netns exec "$ns1" cat /sys/class/net/$if1/statistics/tx_bytes)
# (in an ASan build, OpenMPI's exit-time allocations would read as leaks)
ip netns exec "$ns1" unshare --uts sh -c "hostname vla-h1; ASAN_OPTIONS=detect_leaks=0 exec mpirun --allow-run-as-root \
    --hostfile '$tmp/hostfile' -np 2 --map-by node --bind-to none \
    --mca plm_rsh_agent '$tmp/netns-rsh' --mca btl self,tcp \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 -x ASAN_OPTIONS \
    '$vla' $targs --batch_size=4 --output_dir='$tmp/t2'" >"$tmp/t2.json" 2>"$tmp/t2.err" ||
    { cat "$tmp/t2.err" >&2; echo "multihost_netns: FAIL: 2-host vla train" >&2; exit 1; }
tx1=$(ip netns exec "$ns1" cat /sys/class/net/$if1/statistics/tx_bytes)
echo "multihost_netns: $((tx1 - tx0)) bytes sent from $ns1 over $if1 during the 2-host run"
grep -q '"world":2' "$tmp/t2.json" || { echo "multihost_netns: FAIL: vla train did not have 2 ranks" >&2; exit 1; }
for col in loss grad_norm; do
    grep -o "\"$col\":[^,}]*" "$tmp/t1/metrics.jsonl" | cut -d: -f2 >"$tmp/c1"
    grep -o "\"$col\":[^,}]*" "$tmp/t2/metrics.jsonl" | cut -d: -f2 >"$tmp/c2"
    [ "$(wc -l <"$tmp/c1")" = 6 ] && [ "$(wc -l <"$tmp/c2")" = 6 ] || ok=0
    compare "$tmp/c1" "$tmp/c2" 1e-6 "vla train $col values" || ok=0
done
# the tensors' bytes after the safetensors header (same writer, same order)
tensors() { local h; h=$(od -An -t u8 -N8 "$1" | tr -d ' '); od -An -v -f -w4 -j $((8 + h)) "$1"; }
m=checkpoints/000006/pretrained_model/model.safetensors
tensors "$tmp/t1/$m" >"$tmp/w1"
tensors "$tmp/t2/$m" >"$tmp/w2"
[ "$(wc -l <"$tmp/w1")" = "$(wc -l <"$tmp/w2")" ] || ok=0
compare "$tmp/w1" "$tmp/w2" 1e-2 "vla train weights" || ok=0

if [ $ok = 1 ]; then
    echo "multihost_netns: OK: 2 ranks on 2 network namespaces over TCP match 1 rank"
else
    echo "multihost_netns: FAIL" >&2
    exit 1
fi
