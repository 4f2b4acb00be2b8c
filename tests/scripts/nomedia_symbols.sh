#!/usr/bin/env bash
# nomedia_symbols.sh — a VLA_MEDIA=OFF build links: every function and
# variable the media sources (CMakeLists.txt's VLA_MEDIA_SOURCES, as compiled
# into this build's libvla.a) export and the rest of libvla or the CLI uses
# is defined by src/nomedia's stand-ins too, so a new call from, say, the
# trainer into plot.c cannot silently break the training-node build
# (scripts/gpu_bundle.sh). (Symbols only the media sources and their own
# tests use — MuJoCo's helpers — need no stand-in: those go together.)
# ctest passes the objects:
#   nomedia_symbols.sh "MEDIA SOURCES" OBJECT... -- STANDIN_OBJECT...
set -uo pipefail
media=$1
shift
objs=() stand=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do objs+=("$1"); shift; done
shift
stand=("$@")
defined() { nm --defined-only -g "$@" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDRBC]$/ {print $3}' | sort -u; }
want=() rest=()
for o in "${objs[@]}"; do
    m=0
    for src in $media; do
        case "$o" in */"$src".o) m=1 ;; esac
    done
    if [ $m = 1 ]; then want+=("$o"); else rest+=("$o"); fi
done
n=$(wc -w <<<"$media")
if [ "${#want[@]}" -ne "$n" ]; then
    echo "nomedia_symbols: found ${#want[@]} of the $n media objects ($media) among libvla's" >&2
    exit 1
fi
[ "${#stand[@]}" -gt 0 ] || { echo "nomedia_symbols: no stand-in objects" >&2; exit 1; }
used=$(comm -12 <(defined "${want[@]}") <(nm --undefined-only -g "${rest[@]}" 2>/dev/null | awk '{print $NF}' | sort -u))
missing=$(comm -23 <(echo "$used") <(defined "${stand[@]}"))
if [ -n "$missing" ]; then
    echo "nomedia_symbols: exported by the media sources but not by src/nomedia (add them there, returning"
    echo "media_off.h's error, or a VLA_MEDIA=OFF build will not link):"
    echo "$missing" | sed 's/^/  /'
    exit 1
fi
echo "nomedia_symbols: src/nomedia defines all $(echo "$used" | wc -l) symbols of the $n media sources that the rest of libvla and the CLI use"
