#!/usr/bin/env bash
# check_layers.sh — every #include in src/ respects the layer order (docs/design.md, "Layers"): a file in
# src/Y/ may include "X/..." only when layer X comes no later than Y. The order is CMakeLists.txt's
# VLA_LAYERS (the one list: CMake builds libvla from it, this script reads it), then TOP below,
# the folders that come after every layer and may include any of them:
#   cli      the `vla` command;
#   bench    the benchmarks (`vla bench <name>`), commands compiled into the CLI beside cli/;
#   nomedia  the stand-ins of a VLA_MEDIA=OFF build (src/nomedia/media_off.h). Each replaces a file of
#            some layer (io, data, sim, train), so it is treated like cli: it may include any layer,
#            and no layer may include it (no layer may depend on which build it is in).
# A folder under src/ in neither list fails the check: place it in the order first.
# Only quoted includes whose first path part is a folder of src/ are checked ("vla.h", the public
# header, and <system> headers are not layers). Files: *.c *.h *.cu *.cuh, subfolders included.
#   check_layers.sh [ROOT]         check ROOT (default: the repository holding this script)
#   check_layers.sh --self-test    plant upward includes in a temporary tree and check they are caught
set -uo pipefail

TOP="cli bench nomedia"

check() {
    local root=$1
    local layers
    layers=$(sed -nE 's/^[[:space:]]*set\(VLA_LAYERS[[:space:]]+([a-z_ ]+)\).*/\1/p' "$root/CMakeLists.txt")
    if [ -z "$layers" ]; then
        echo "check_layers: no set(VLA_LAYERS ...) line in $root/CMakeLists.txt" >&2
        return 2
    fi
    declare -A rank=()
    local i=0 l
    for l in $layers; do rank[$l]=$i; i=$((i + 1)); done
    for l in $TOP; do rank[$l]=$i; done # all of TOP share the last rank: they may include one another
    local bad=0 dir y
    for dir in "$root"/src/*/; do
        y=$(basename "$dir")
        if [ -z "${rank[$y]+x}" ]; then
            echo "src/$y/: not in the layer order (add it to VLA_LAYERS in CMakeLists.txt, or to TOP in scripts/check_layers.sh)"
            bad=1
        fi
    done
    local file line x text
    # file:line:text of every quoted include with a folder part
    while IFS=: read -r file line text; do
        y=${file#"$root"/src/}
        y=${y%%/*}
        x=${text#*\"} # the grep below guarantees `#include "X/`: X is what lies between " and /
        x=${x%%/*}
        [ -n "${rank[$x]+x}" ] || continue # not a folder of src/ (a relative include inside a layer)
        [ -n "${rank[$y]+x}" ] || continue # reported above
        if [ "${rank[$x]}" -gt "${rank[$y]}" ]; then
            echo "${file#"$root"/}:$line: layer $y includes \"${text#*\"}: $x comes after $y in the layer order"
            bad=1
        fi
    done < <(grep -rnE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' \
                 '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' "$root/src" | sort -t: -k1,1 -k2,2n)
    if [ $bad = 0 ]; then
        echo "check_layers: src/ follows the layer order: $layers, then $TOP"
    else
        echo "check_layers: upward includes above (docs/design.md, \"Layers\": move the code down, or give it a seam)" >&2
    fi
    return $bad
}

self_test() {
    local tmp
    tmp=$(mktemp -d) || return 2
    trap 'rm -rf "$tmp"' RETURN
    local t=$tmp/tree
    mkdir -p "$t/src/base" "$t/src/train" "$t/src/serve" "$t/src/cli" "$t/src/nomedia" "$t/src/tensor/cuda"
    printf 'project(x)\nset(VLA_LAYERS base tensor train serve)\n' >"$t/CMakeLists.txt"
    printf '#include "base/a.h"\n' >"$t/src/base/a.c"
    printf '#include "base/a.h"\n#include "tensor/cuda/k.cuh"\n' >"$t/src/tensor/cuda/k.cu"
    printf '#include "base/a.h"\n#include "tensor/t.h"\n#include "train/t.h"\n#include <stdio.h>\n' >"$t/src/train/t.c"
    printf '#include "train/t.h"\n#include "vla.h"\n#include "cuda/local.h"\n' >"$t/src/serve/s.c"
    printf '#include "serve/s.h"\n#include "nomedia/m.h"\n' >"$t/src/cli/main.c"
    printf '#include "cli/cmd.c"\n#include "train/t.h"\n' >"$t/src/nomedia/n.c"
    local out fails=0
    out=$(check "$t") || { echo "self-test: a clean tree failed:"; echo "$out"; fails=1; }
    # each plant alone must fail, naming its file and line
    local plant
    for plant in 'src/base/a.c|#include "train/t.h"|3' 'src/train/t.h|  #  include "serve/s.h"|1' \
                 'src/tensor/cuda/k.cu|#include "train/x.h"|4' 'src/serve/s.c|#include "cli/cli.h"|5' \
                 'src/serve/s.c|#include "nomedia/media_off.h"|5'; do
        IFS='|' read -r f inc ln <<<"$plant"
        rm -rf "$tmp/p" && cp -r "$t" "$tmp/p"
        if [ "$ln" = 1 ]; then printf '%s\n' "$inc" >"$tmp/p/$f"; else printf '\n%s\n' "$inc" >>"$tmp/p/$f"; fi
        out=$(check "$tmp/p" 2>/dev/null)
        if [ $? = 0 ] || ! grep -q "^$f:$ln: " <<<"$out"; then
            echo "self-test: planted $inc in $f (line $ln) was not reported as $f:$ln:"; echo "$out"; fails=1
        fi
    done
    # a folder outside the order fails
    rm -rf "$tmp/p" && cp -r "$t" "$tmp/p" && mkdir "$tmp/p/src/extra" && printf '\n' >"$tmp/p/src/extra/b.c"
    if out=$(check "$tmp/p" 2>/dev/null) || ! grep -q '^src/extra/: not in the layer order' <<<"$out"; then
        echo "self-test: src/extra/, outside the order, was not reported:"; echo "$out"; fails=1
    fi
    # the order comes from VLA_LAYERS: swapping two layers makes a good include upward
    rm -rf "$tmp/p" && cp -r "$t" "$tmp/p"
    printf 'project(x)\nset(VLA_LAYERS base tensor serve train)\n' >"$tmp/p/CMakeLists.txt"
    if out=$(check "$tmp/p" 2>/dev/null) || ! grep -q '^src/serve/s.c:1: ' <<<"$out"; then
        echo "self-test: with serve before train, serve/s.c's train include was not reported:"; echo "$out"; fails=1
    fi
    [ $fails = 0 ] && echo "check_layers: self-test passed (clean tree accepted, 7 planted violations reported)"
    return $fails
}

if [ "${1:-}" = --self-test ]; then
    self_test
    exit $?
fi
check "${1:-$(cd "$(dirname "$0")/.." && pwd)}"
