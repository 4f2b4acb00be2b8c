#!/usr/bin/env bash
# scripts/gpu_check.sh — the cuda backend's whole validation on one GPU, in one
# command, in under 9 minutes on an H200 (docs/cuda.md, "The GPU check").
#
#   scripts/gpu_check.sh [--out=DIR] [--build=DIR] [--prebuilt=DIR|ARCHIVE] [--jobs=N]
#                        [--budget=SECONDS] [--only=stage,stage] [--skip=stage,stage]
#   scripts/gpu_check.sh --summary=RESULTS.jsonl   (the verdict of a recorded run, no GPU needed)
#   scripts/gpu_check.sh --rehearse [--prebuilt=…]  (every figure stage here, without a GPU: below)
#
# From the archive of scripts/gpu_bundle.sh, the whole device check is one
# command (docs/cuda.md, "The GPU check"):
#   scripts/gpu_check.sh --prebuilt=gpu-bundle.tar.xz
#
# Stages, in order of what matters most when time runs short:
#   env          the GPU, driver, nvcc, cuBLASLt/NCCL (toolkit or CUDA 13 wheels)
#   build        CMake with -DVLA_CUDA=ON for sm_90a (-gencode, gpu-notes §2),
#                the CLI and the two test programs below (skipped with --prebuilt)
#   conformance  every slot of the op table against cpu on random shapes and
#                ragged packed batches (tests/tensor/test_conformance.c); then
#                its attention problems again with the bf16 kernels staging
#                plainly and prefetching in every pass (VLA_CUDA_ATTN_STAGING
#                bf16, prefetch), so every attention kernel has conformed,
#                and with the fused backward (VLA_CUDA_ATTN_BACKWARD=fused)
#   equiv        20 training steps of pi05-small and groot-small on cuda and
#                cpu from the same weights and batch in fp32, bf16 and fp8: the
#                loss curve, every gradient tensor against max(rtol·|g_t|,
#                floor·|g|) (tests/tensor/test_backends.c, per-mode tolerances)
#   nccl         the same on the nano presets with VLA_NCCL=1: ZeRO-1's
#                all-gather through a one-rank NCCL communicator
#   gemm         bf16 and FP8 GEMMs through the op table (each shape also with
#                B cast once, as a step holds its weights) and the tensor
#                cores' bf16 and FP8 peaks (vla bench gemm)
#   train_bf16   vla bench policy: samples/s and MFU against the bf16 peak of
#                groot-n1.5 (batch 32; batch 64 last of all, as time allows,
#                then π0.5 with the fused attention backward, then both
#                keeping f32 activations beside the bf16 copies,
#                VLA_KEPT_COPIES=0, with what vla policy info budgets)
#                and pi05 (batch 8) at full size
#   infer        one chunk at batch 1: GR00T-N1.5 (4 flow steps), π0.5 (10)
#   serve        vla serve on loopback, the CPU server then the GPU one (bf16,
#                weights cast once): one robot's chunk, 8 robots without and
#                with batching (vla bench serve --device=cpu,cuda); then the
#                GPU server's robots on eight tasks (--tasks=8: each batch
#                mixes prompt layouts) with its graph replays per batch, and
#                again in arrival order (VLA_SERVE_BATCH_ORDER=arrival)
#   attention    the packed prefix-LM attention vs the same computed with a
#                dense mask, on the GPU (vla bench attention --device=cuda),
#                and vs PyTorch on the same GPU and layout (eager dense mask,
#                SDPA efficient/cuDNN/math, FlashAttention varlen:
#                tools/bench_torch_attention.py --device cuda); then again
#                with the dK/dV walk and the forward's key walk unsplit
#                (VLA_CUDA_ATTN_KV_SPLITS=1, VLA_CUDA_ATTN_Q_SPLITS=1), and
#                with the bf16 kernels staging from the f32 tensors
#                (VLA_CUDA_ATTN_STAGING=f32, the kernels before bf16 copies
#                and prefetch) and prefetching in every pass (=prefetch): the
#                times, and the fused outputs' bits compared (same bits);
#                then with the fused backward (VLA_CUDA_ATTN_BACKWARD=fused:
#                dQ added by the dK/dV pass, one pass over the tiles);
#                last of all, as time allows and where compute-sanitizer
#                works, the prefetching kernels under its racecheck (the
#                conformance suite's attention problems), then where ncu
#                reads the counters one bench attention pass with every
#                attention kernel's launches timed (ncu_attention: totals by
#                kernel and grid, scripts/ncu_kernels.sh)
#   packing      packed vs padded training of groot-n1.5 on a mixture, padded
#                to the paper's fraction (+188%: --pad_fraction=1.88)
#   train_fp8    as train_bf16 in FP8
#   suites       the policy suites of `ctest -L cuda` with VLA_DEVICE=cuda
#                (BIN/cuda_suites.txt, written by CMake's one list; each program run
#                directly: a bundle has no ctest tree)
#   torch        the PyTorch bf16 peers of groot-n1.5 (batch 32) and pi05
#                (batch 8, 3 cameras) on the same GPU
#                (tools/bench_torch_policy.py --device=cuda), their ratios to
#                train_bf16's samples/s
#
# Every stage has its own timeout inside a global budget (--budget, default
# 530 s); its log is kept in OUT/logs/STAGE.log, its figures are appended to
# OUT/results.jsonl as one JSON object per line the moment they exist, and a
# stage that fails or times out does not stop the ones after it. The end
# prints every stage's status (a stage the budget or a missing GPU left out
# is NOT RUN) and a table of each figure against its target: MET, MISSED or
# NOT RUN (no figure). Exit status: 1 when a stage failed or did not run,
# else 3 when a target was missed, else 0.
#
# --rehearse runs the stages that need no peer and no second backend on the
# `checked` backend, the nano presets in place of the full-size ones, tiny
# batches and short timings — every command line, flag and figure line of
# the run, and the summary that reads them, checked here before a GPU
# minute is spent on them (tests/scripts/gpu_check_rehearse.sh, a ctest).
# The figures mean nothing (its targets are not judged: exit 0 when every
# rehearsed stage ran); equiv, nccl, suites and torch are left out (the
# test suite runs their programs on checked already).
#
# Without the Debian packages vla.c builds against (the CUDA image of a lent
# GPU may lack them), `build` says which are missing; --prebuilt=DIR then runs
# binaries built elsewhere (DIR/vla, DIR/tests/…, DIR/lib/*.so:
# scripts/gpu_bundle.sh makes such a directory).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/cuda_flags.sh # the flags, targets and suites every cuda build here shares

OUT=gpu-check-out BUILD=build-gpu PREBUILT="" JOBS=$(nproc) BUDGET=530 ONLY="" SKIP="" SUMMARY_OF="" REHEARSE=0
for a in "$@"; do
    case "$a" in
    --out=*) OUT=${a#*=} ;;
    --build=*) BUILD=${a#*=} ;;
    --prebuilt=*) PREBUILT=${a#*=} ;;
    --jobs=*) JOBS=${a#*=} ;;
    --budget=*) BUDGET=${a#*=} ;;
    --only=*) ONLY=",${a#*=}," ;;
    --skip=*) SKIP=",${a#*=}," ;;
    --summary=*) SUMMARY_OF=${a#*=} ;;
    --rehearse) REHEARSE=1 ;;
    -h | --help) sed -n '2,65p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument '$a' (see --help)" >&2; exit 2 ;;
    esac
done
# DEV: the backend under test; cfg/bat/secs: a full-size preset, batch and timing as run (--rehearse:
# the nano preset, batch 2, a fifth of a second)
DEV=cuda
[ "$REHEARSE" = 1 ] && DEV=checked
cfg() {
    if [ "$REHEARSE" = 1 ]; then
        case $1 in groot-n1.5) echo groot-nano ;; pi05) echo pi05-nano ;; *) echo "$1" ;; esac
    else echo "$1"; fi
}
bat() { if [ "$REHEARSE" = 1 ]; then echo 2; else echo "$1"; fi; }
secs() { if [ "$REHEARSE" = 1 ]; then echo 0.2; else echo "$1"; fi; }
reps() { if [ "$REHEARSE" = 1 ]; then echo 1; else echo "$1"; fi; }
RQ=() # --rehearse: the benches' short form too (--quick: shapes, peaks), the rest of their flags as run
[ "$REHEARSE" = 1 ] && RQ=(--quick)
if [ -n "$SUMMARY_OF" ]; then # judge a recorded run: nothing is created or run
    OUT=$(dirname "$SUMMARY_OF")
else
    mkdir -p "$OUT/logs" || exit 1
fi
OUT=$(cd "$OUT" && pwd)
RESULTS=$OUT/results.jsonl
[ -n "$SUMMARY_OF" ] || : >"$RESULTS"
T0=$(date +%s)
FAILED=0

say() { printf '[gpu_check %4ds] %s\n' $(($(date +%s) - T0)) "$*"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t' '  '; }
record() { echo "$1" >>"$RESULTS"; }
wanted() {
    [ -n "$ONLY" ] && [[ "$ONLY" != *",$1,"* ]] && return 1
    [[ "$SKIP" == *",$1,"* ]] && return 1
    return 0
}

# ---- the verdict: stage statuses and figures against targets --------------------------------
# Reads RESULTS only, so `--summary=FILE` judges a recorded run anywhere
# (tests/scripts/gpu_check_summary.sh feeds it recorded lines).
STAGES="conformance equiv nccl suites gemm train_bf16 infer serve attention packing train_fp8 torch"
num() { sed -n "s/.*\"$2\":\(-\{0,1\}[0-9.e+-]*\).*/\1/p" <<<"$1" | head -1; }
# the first figure line of a stage (exactly STAGE, or its retries after running out of memory: STAGE_gc
# with gradient checkpointing, STAGE_half at half the batch)
stage_line() { grep -E "\"stage\":\"$1(_gc|_half)?\"" "$RESULTS" | grep -E "\"bench\":\"$2\"" | head -1; }
# what `vla policy info` (and `vla plan`) measured for CONFIG's bf16 training stage (its longest prompts), as
# recorded beside it
budget_words() { # CONFIG
    local l
    l=$(grep '"bench":"policy_info"' "$RESULTS" | grep -F "\"config\":\"$1\"" | head -1)
    [ -n "$l" ] && awk -v a="$(num "$l" activations_bf16)" -v c="$(num "$l" activations_f32)" \
        'BEGIN { printf "; vla policy info measures %.3g and %.3g GiB", a / 2^30, c / 2^30 }'
}
# STATUS of a stage group: FAILED (a part failed or timed out), NOT RUN (no
# record, or a part skipped), PASSED; "not asked" when --only/--skip left it out
stage_verdict() {
    local g=$1 st
    st=$(grep -E "\"stage\":\"$g(_[^\"]*)?\",\"status\"" "$RESULTS" | sed -n 's/.*"status":"\([^"]*\)".*/\1/p' | sort -u)
    if grep -qE '^(failed|timeout)$' <<<"$st"; then echo FAILED
    elif [ -z "$st" ] && ! wanted "$g"; then echo "not asked"
    elif [ -z "$st" ] || grep -q '^skipped$' <<<"$st"; then echo "NOT RUN"
    else echo PASSED; fi
}
# target NAME FIGURE OP LIMIT UNIT: one row of the table; sets MISSED
target() {
    local name=$1 fig=$2 op=$3 lim=$4 unit=$5 v
    if [ -z "$fig" ]; then
        v="NOT RUN"
    elif awk -v f="$fig" -v l="$lim" -v o="$op" 'BEGIN { exit !((o == ">=" && f >= l) || (o == "<=" && f <= l)) }'; then
        v=MET
    else
        v=MISSED
        MISSED=1
    fi
    printf '  %-44s %12s %-3s %s %-5s %s\n' "$name" "${fig:--}" "$unit" "$op" "$lim" "$v"
}
# the op-table GEMM line of PRECISION at 2048x4096x1024 (issue 40's shape)
gemm_line() { grep '"bench":"gemm",' "$RESULTS" | grep "\"precision\":\"$1\"" | grep '"m":2048,"n":4096,"k":1024' | head -1; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b }'; }
digest() { sed -n 's/.*"fused_digest":"\([0-9a-f]*\)".*/\1/p' <<<"$1"; }
# how the bf16 attention kernels stage their tiles (docs/cuda.md, "Staging"): the default run's line ($1)
# against the runs staging from the f32 tensors and prefetching in every pass — times, how each staged
# (bits 0-2: forward, dK/dV, dQ prefetched; 8: from bf16 copies), and the outputs' bits, which must not move
attention_staging_summary() {
    local l=$1 f p
    f=$(grep '^{"stage":"attention_f32staging",' "$RESULTS" | grep '"pi05_packed"' | head -1)
    p=$(grep '^{"stage":"attention_prefetch_all",' "$RESULTS" | grep '"pi05_packed"' | head -1)
    [ -n "$l" ] && [ -n "$f" ] || return 0
    echo "    attention staging (issue 41): fwd $(num "$l" fwd_ms) / fwd+bwd $(num "$l" fwd_bwd_ms) ms (staging $(num "$l" staging)); from f32 $(num "$f" fwd_ms) / $(num "$f" fwd_bwd_ms) ms$([ -n "$p" ] && echo "; prefetch in every pass $(num "$p" fwd_ms) / $(num "$p" fwd_bwd_ms) ms")"
    local want got x
    want=$(digest "$f")
    for x in "$l" "$p"; do
        got=$(digest "$x")
        [ -z "$x" ] || [ -z "$want" ] || [ "$got" = "$want" ] ||
            echo "    ATTENTION STAGING BITS DIFFER: fused outputs $got staged $(num "$x" staging), $want from f32"
    done
}
# the backward two ways (issue 41: backward ≤ 2.5× its forward, fwd+bwd ≥ 2.65× the dense mask): the default run's
# line ($1) against the fused backward's, and whether the fused one conformed
# a bench attention line's backward as a multiple of its forward: (fwd+bwd − fwd) / fwd
bwd_vs_fwd() { awk -v a="$(num "$1" fwd_bwd_ms)" -v b="$(num "$1" fwd_ms)" 'BEGIN { if (a != "" && b > 0) printf "%.2f", (a - b) / b }'; }
attention_backward_summary() {
    local l=$1 f c n
    f=$(grep '^{"stage":"attention_fused_bwd",' "$RESULTS" | grep '"pi05_packed"' | head -1)
    passes() { n=$(num "$1" backward_passes); [ -n "$n" ] && echo " ($n pass$([ "$n" != 1 ] && echo es))"; }
    [ -n "$l" ] && echo "    attention backward (π0.5 packed)$(passes "$l"): $(bwd_vs_fwd "$l")× the forward$([ -n "$f" ] && echo "; fused$(passes "$f"): $(bwd_vs_fwd "$f")× the forward, fwd+bwd $(num "$f" fwd_bwd_ms) ms vs $(num "$l" fwd_bwd_ms) ms = $(num "$f" vs_dense)× the dense mask")"
    # on cuda the fused backward computes dK and dV as the two passes do (only dQ's sum order moves): the same
    # bits (the cpu's fused backward is another work split, with its own sum order)
    local a b
    a=$(sed -n 's/.*"digest_without_dq":"\([0-9a-f]*\)".*/\1/p' <<<"$l")
    b=$(sed -n 's/.*"digest_without_dq":"\([0-9a-f]*\)".*/\1/p' <<<"$f")
    if [ "$DEV" = cuda ] && [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]; then
        echo "    FUSED BACKWARD dK/dV BITS DIFFER from the two passes' (out, lse, dK, dV digests $b vs $a)"
    fi
    c="$OUT/logs/conformance_fused_bwd.log"
    [ -f "$c" ] || return 0
    if grep -q "backend $DEV conforms" "$c"; then echo "    fused attention backward: conforms"
    else echo "    FUSED ATTENTION BACKWARD DOES NOT CONFORM: logs/conformance_fused_bwd.log"; fi
}
summary() {
    local bad=0 g v l f cfg p s1 s2 nc ng g1 rk c1 c2
    MISSED=0
    echo
    echo "=== gpu_check: results in $RESULTS ==="
    l=$(grep -E '"stage":"device","status":"failed"' "$RESULTS" | head -1)
    [ -n "$l" ] && echo "  NO USABLE GPU: the device stages did not run ($(sed -n 's/.*"why":"\(.\{0,240\}\).*/\1/p' <<<"$l"))"
    echo "  stages:"
    for g in $STAGES; do
        v=$(stage_verdict "$g")
        printf '    %-12s %s\n' "$g" "$v"
        case "$v" in FAILED | "NOT RUN") bad=1 ;; esac
    done
    echo "  figures:"
    for cfg in groot-n1.5 groot-n1.5_b64 groot-n1.5_md1024 groot-n1.5_nograph groot-n1.5_nocopy groot-n1.5_keptf32 pi05 pi05_fusedbwd pi05_nograph pi05_keptf32 nograph_pi05 \
        qunsplit_pi05; do
        for p in bf16 fp8; do
            l=$(stage_line "train_${p}_$cfg" policy_train)
            [ -n "$l" ] && echo "    train $cfg $p$([ -n "$(num "$l" fp8_linears)" ] && echo " ($(num "$l" fp8_linears) of $(num "$l" block_linears) block linears in FP8)"), batch $(num "$l" batch)$(grep -q '"gradient_checkpointing":true' <<<"$l" && echo ", gradient checkpointing"): $(num "$l" samples_per_s) samples/s, activations $(num "$l" act_gib) GiB, MFU $(num "$l" mfu) of the $(sed -n 's/.*"peak_precision":"\([a-z0-9]*\)".*/\1/p' <<<"$l") peak ($(num "$l" peak_tflops) TFLOP/s), host waits per step $(num "$l" host_waits_per_step), launches per step $(num "$l" launches_per_step), operand casts per step $(num "$l" operand_casts_per_step), attention plans built per step $(num "$l" attn_plans_built_per_step), graph replays per step $(num "$l" graph_replays_per_step), device memory in use $(num "$l" device_used_gib) GiB"
        done
        l=$(stage_line "infer_$cfg" policy_infer)
        [ -n "$l" ] && echo "    inference $cfg, batch 1, $(sed -n 's/.*"precision":"\([a-z0-9]*\)".*/\1/p' <<<"$l"), $(num "$l" flow_steps) flow steps: best $(num "$l" best_ms) ms, mean $(num "$l" mean_ms) ms, host waits per chunk $(num "$l" host_waits_per_chunk), launches per chunk $(num "$l" launches_per_chunk), attention plans built per chunk $(num "$l" attn_plans_built_per_chunk), graph replays per chunk $(num "$l" graph_replays_per_chunk)"
    done
    for p in bf16 fp8; do
        l=$(gemm_line $p)
        [ -n "$l" ] && echo "    GEMM 2048x4096x1024 $p: $(num "$l" gflops) GFLOP/s with both operands cast per call, $(num "$l" b_ready_gflops) with B held$([ -n "$(num "$l" ab_ready_gflops)" ] && echo ", $(num "$l" ab_ready_gflops) with A held too (no cast: what bf16 activations would give)")$([ "$(num "$l" emulated_calls)" ] && [ "$(num "$l" emulated_calls)" != 0 ] && echo " — EMULATED in f32 ($(num "$l" emulated_calls) calls found no cuBLASLt algorithm)")"
    done
    l=$(grep '^{"stage":"serve","bench":"serve"' "$RESULTS" | grep "\"device\":\"$DEV\"" | grep '"mode":"batching"' | head -1)
    [ -n "$l" ] && echo "    serve (groot-pusht, 8 robots, batching) on $DEV $(sed -n 's/.*"precision":"\([a-z0-9]*\)".*/\1/p' <<<"$l"): p50 $(num "$l" p50_ms) ms, p99 $(num "$l" p99_ms) ms, one robot's chunk $(num "$l" single_chunk_ms) ms, $(num "$l" throughput_rps) replies/s = $(num "$l" throughput_vs_base_device)× the CPU server"
    l=$(grep '^{"stage":"serve_tasks","bench":"serve"' "$RESULTS" | grep '"mode":"batching"' | head -1)
    [ -n "$l" ] && echo "    serve, 8 robots on $(num "$l" tasks) tasks (a batch mixes prompt layouts): p99 $(num "$l" p99_ms) ms = $(num "$l" p99_vs_single_chunk)× one robot's chunk, mean batch $(num "$l" mean_batch), graph replays per batch $(num "$l" graph_replays_per_batch)"
    u=$(grep '^{"stage":"serve_tasks_arrival","bench":"serve"' "$RESULTS" | grep '"mode":"batching"' | head -1)
    [ -n "$u" ] && echo "    the same in arrival order (VLA_SERVE_BATCH_ORDER=arrival): p99 $(num "$u" p99_ms) ms = $(num "$u" p99_vs_single_chunk)× one robot's chunk, graph replays per batch $(num "$u" graph_replays_per_batch)"
    l=$(grep '^{"stage":"attention","bench":"attention"' "$RESULTS" | grep '"pi05_packed"' | head -1)
    [ -n "$l" ] && echo "    attention (π0.5 packed, bf16): fused $(num "$l" fwd_bwd_ms) ms vs dense mask $(num "$l" dense_fwd_bwd_ms) ms: $(num "$l" vs_dense)×"
    u=$(grep '^{"stage":"attention_unsplit",' "$RESULTS" | grep '"pi05_packed"' | head -1)
    [ -n "$l" ] && [ -n "$u" ] && echo "    attention dK/dV split (issue 41): fwd+bwd $(num "$l" fwd_bwd_ms) ms in $(num "$l" kv_splits) parts (forward $(num "$l" q_splits)); both walks unsplit $(num "$u" fwd_bwd_ms) ms"
    c1=$(grep '^{"stage":"attention","bench":"attention_chunk"' "$RESULTS" | head -1)
    c2=$(grep '^{"stage":"attention_unsplit","bench":"attention_chunk"' "$RESULTS" | head -1)
    [ -n "$c1" ] && echo "    attention at a chunk's shape (batch 1: $(num "$c1" queries) action tokens on $(num "$c1" cached_keys) cached keys and themselves): $(num "$c1" us_per_call) µs per call in $(num "$c1" q_splits) parts$([ -n "$c2" ] && echo ", unsplit $(num "$c2" us_per_call) µs: $(ratio "$(num "$c2" us_per_call)" "$(num "$c1" us_per_call)")×")"
    attention_staging_summary "$l"
    attention_backward_summary "$l"
    s1=$(num "$(stage_line infer_pi05 policy_infer)" best_ms)
    s2=$(num "$(stage_line infer_qunsplit_pi05 policy_infer)" best_ms)
    [ -n "$s1" ] && [ -n "$s2" ] && echo "    split keys (issue 41): pi05 chunk $s1 ms with the forward's key walk split, $s2 ms unsplit (VLA_CUDA_ATTN_Q_SPLITS=1): $(ratio "$s2" "$s1")×"
    rk=$(grep '^{"stage":"racecheck",' "$RESULTS" | head -1)
    if [ -n "$rk" ]; then
        v=$(sed -n 's/.*"summary":"\([^"]*\)".*/\1/p' <<<"$rk" | sed 's/^=* *//')
        echo "    racecheck of the prefetching attention kernels: ${v:-no summary, see logs/racecheck.log}"
        grep -qE 'SUMMARY: [1-9][0-9]* hazard' <<<"$v" && echo "    ATTENTION RACECHECK FOUND HAZARDS: logs/racecheck.log names them"
        grep -q 'TIMED OUT' <<<"$v" && echo "    ATTENTION RACECHECK TIMED OUT: no verdict on hazards"
    fi
    l2=$(grep '^{"stage":"ncu_attention",' "$RESULTS" | head -1)
    if [ -n "$l2" ]; then
        v=$(sed -n 's/.*"kernels":"\([^"]*\)".*/\1/p' <<<"$l2")
        echo "    attention kernels under ncu (µs summed over launches, largest first): ${v:-none timed, see logs/ncu_attention.log}"
    fi
    [ -n "$l" ] && [ -n "$(num "$l" torch_best_fwd_bwd_ms)" ] && echo "    attention, PyTorch on the same GPU: fastest $(sed -n 's/.*"torch_best":"\([a-z_]*\)".*/\1/p' <<<"$l") $(num "$l" torch_best_fwd_bwd_ms) ms, eager dense mask $(num "$l" torch_dense_fwd_bwd_ms) ms; vla.c / fastest = $(num "$l" vs_torch_best)×"
    s1=$(num "$(stage_line train_bf16_groot-n1.5 policy_train)" samples_per_s)
    s2=$(num "$(stage_line torch_groot-n1.5 policy_train_peer)" samples_per_s)
    [ -n "$s2" ] && echo "    PyTorch bf16 peer groot-n1.5 (autocast, SDPA), same batch and GPU: $s2 samples/s; vla.c / PyTorch = $(ratio "$s1" "$s2")"
    p1=$(num "$(stage_line train_bf16_pi05 policy_train)" samples_per_s)
    p2=$(num "$(stage_line torch_pi05 policy_train_peer)" samples_per_s)
    [ -n "$p2" ] && echo "    PyTorch bf16 peer pi05 (autocast, SDPA, 3 cameras), batch 8, same GPU: $p2 samples/s; vla.c / PyTorch = $(ratio "$p1" "$p2")"
    grep '^{"stage":"torch_' "$RESULTS" | grep '"out_of_memory":true' | while IFS= read -r l; do
        echo "    PyTorch bf16 peer $(sed -n 's/.*"config":"\([^"]*\)".*/\1/p' <<<"$l") ran out of GPU memory at batch $(num "$l" batch)"
    done
    ng=$(num "$(stage_line train_bf16_groot-n1.5_nograph policy_train)" samples_per_s)
    [ -n "$s1" ] && [ -n "$ng" ] && echo "    training graphs (docs/cuda.md): groot-n1.5 bf16 $s1 samples/s with them, $ng without (VLA_TRAIN_GRAPHS=0): $(ratio "$s1" "$ng")×"
    g1=$(num "$(stage_line train_bf16_pi05 policy_train)" samples_per_s)
    ng=$(num "$(stage_line train_bf16_pi05_nograph policy_train)" samples_per_s)
    [ -n "$g1" ] && [ -n "$ng" ] && echo "    training graphs (docs/cuda.md): pi05 bf16 $g1 samples/s with them, $ng without (VLA_TRAIN_GRAPHS=0): $(ratio "$g1" "$ng")×"
    f1=$(num "$(stage_line train_fp8_groot-n1.5 policy_train)" samples_per_s)
    fn=$(num "$(stage_line train_fp8_groot-n1.5_noshare policy_train)" samples_per_s)
    [ -n "$f1" ] && [ -n "$fn" ] && echo "    shared FP8 casts (nn/linear.h): groot-n1.5 fp8 $f1 samples/s sharing each input's casts, $fn with a cast per linear (VLA_FP8_SHARED_CASTS=0): $(ratio "$f1" "$fn")×"
    for kc in groot-n1.5 pi05; do # the activations kept copies save, and what the budget said for the run
        kl=$(stage_line "train_bf16_$kc" policy_train) kf=$(stage_line "train_bf16_${kc}_keptf32" policy_train)
        k1=$(num "$kl" act_gib) k2=$(num "$kf" act_gib)
        [ -n "$k1" ] && [ -n "$k2" ] && echo "    kept copies (docs/precision.md): $kc bf16 batch $(num "$kl" batch) activations $k1 GiB keeping the normed inputs and MLP hidden as bf16 copies alone, $k2 GiB keeping f32 too (VLA_KEPT_COPIES=0), $(num "$kl" samples_per_s) vs $(num "$kf" samples_per_s) samples/s$(budget_words "$(sed -n 's/.*"config":"\([^"]*\)".*/\1/p' <<<"$kl")")"
    done
    # each training stage's activation arenas against the same step measured on the meta backend sized as
    # cuda (policy/memory.h: what vla policy info and vla plan report): equal, or where they differ
    mm=$(grep '"bench":"policy_train"' "$RESULTS" | grep '"act_gib_measured"' | while IFS= read -r l; do
        a=$(num "$l" act_gib) m=$(num "$l" act_gib_measured)
        if [ "$a" = "$m" ]; then echo "="; else echo "$(sed -n 's/.*"stage":"\([^"]*\)".*/\1/p' <<<"$l") (run $a, measured $m GiB)"; fi
    done)
    if [ -n "$mm" ]; then
        ne=$(grep -c '^=$' <<<"$mm") diff=$(grep -v '^=$' <<<"$mm" | paste -sd';' - | sed 's/;/; /g')
        echo "    memory measured on the meta backend (docs/policy.md): $ne of $(wc -l <<<"$mm") training stages' activations equal to the run's${diff:+; DIFFER: $diff}"
    fi
    nc=$(num "$(stage_line train_bf16_groot-n1.5_nocopy policy_train)" samples_per_s)
    [ -n "$s1" ] && [ -n "$nc" ] && echo "    producer copies (docs/precision.md): groot-n1.5 bf16 $s1 samples/s with them, $nc without (VLA_PRODUCER_CASTS=0): $(ratio "$s1" "$nc")×"
    # captured regions a stage's device could not record (they ran op by op: its graph figures are not graphs')
    grep -E '"graph_refusals":[1-9]' "$RESULTS" | while IFS= read -r l; do
        echo "    GRAPH RECORDINGS REFUSED in $(sed -n 's/.*"stage":"\([^"]*\)".*/\1/p' <<<"$l"): $(num "$l" graph_refusals) region(s), the first because $(sed -n 's/.*"graph_refused_why":"\([^"]*\)".*/\1/p' <<<"$l")"
    done
    # where the time goes: each profiled stage's five largest ops (tensor/profile.h; the full rows are in RESULTS)
    # (a training stage also times a chunk: its profile is the infer stages' business, left out here)
    grep '"bench":"policy_profile"' "$RESULTS" | grep -v '"stage":"train_[^"]*",.*"what":"chunk[^"]*"' | while IFS= read -r l; do
        echo "    profile $(sed -n 's/.*"stage":"\([^"]*\)".*/\1/p' <<<"$l") ($(sed -n 's/.*"what":"\([a-z_]*\)".*/\1/p' <<<"$l"), $(sed -n 's/.*"clock":"\([a-z]*\)".*/\1/p' <<<"$l") clock): ops $(num "$l" op_ms_per) ms, between ops $(num "$l" between_ops_ms_per) ms, $(num "$l" calls_per) calls, $(num "$l" launches_per) launches; largest:"
        grep -o '{"op":"[^"]*","calls":[0-9.]*,"ms":[0-9.]*,"share":[0-9.]*\(,"launches":[0-9.]*\)\{0,1\}\(,"tflops":[0-9.]*\)\{0,1\}\(,"gbps":[0-9.]*\)\{0,1\}' <<<"$l" | head -5 |
            sed 's/{"op":"\([^"]*\)","calls":\([0-9.]*\),"ms":\([0-9.]*\),"share":\([0-9.]*\)\(,"launches":\([0-9.]*\)\)\{0,1\}\(,"tflops":\([0-9.]*\)\)\{0,1\}\(,"gbps":\([0-9.]*\)\)\{0,1\}/\1|\2|\3|\4|\6|\8|\10/' |
            awk -F'|' '{ printf "      %-32s %8.4f ms %5.1f%% %8.1f calls%s%s%s\n", $1, $3, 100 * $4, $2, ($5 != "" ? sprintf(" %8.1f launches", $5) : ""), ($6 != "" ? sprintf(" %7.1f TFLOP/s", $6) : ""), ($7 != "" ? sprintf(" %7.1f GB/s", $7) : "") }'
        ph=$(grep -o '{"phase":"[^"]*","calls":[0-9.]*,"ms":[0-9.]*' <<<"$l" | sed 's/{"phase":"\([^"]*\)","calls":[0-9.]*,"ms":\([0-9.]*\)/\1 \2 ms/' | paste -sd, - | sed 's/,/, /g')
        [ -n "$ph" ] && echo "      phases: $ph"
    done
    printf '  %-44s %12s %-3s %s %-5s %s\n' "targets (issues 40, 41)" figure "" target "" verdict
    target "groot-n1.5 bf16 training MFU" "$(num "$(stage_line train_bf16_groot-n1.5 policy_train)" mfu)" ">=" 0.45 ""
    target "groot-n1.5 bf16, vla.c / PyTorch samples/s" "$(ratio "$s1" "$s2")" ">=" 1.4 "x"
    target "groot-n1.5 training, FP8 / bf16 samples/s" \
        "$(ratio "$(num "$(stage_line train_fp8_groot-n1.5 policy_train)" samples_per_s)" "$s1")" ">=" 1.3 "x"
    target "  the same, FP8 only for linears >= 1024 wide" \
        "$(ratio "$(num "$(stage_line train_fp8_groot-n1.5_md1024 policy_train)" samples_per_s)" "$s1")" ">=" 1.3 "x"
    target "groot-n1.5 bf16, host waits per step (not logged)" \
        "$(num "$(stage_line train_bf16_groot-n1.5 policy_train)" host_waits_per_step)" "<=" 0 ""
    l=$(stage_line train_bf16_pi05 policy_train) # the target is batch 8's: a halved batch misses it
    if [ -n "$l" ] && [ "$(num "$l" batch)" != 8 ]; then
        target "pi05 bf16 training MFU, batch 8 (did not fit)" 0 ">=" 0.45 ""
    else
        target "pi05 bf16 training MFU, batch 8" "$(num "$l" mfu)" ">=" 0.45 ""
    fi
    # the op-table GEMM at the expert MLP's shape with B held (cast once, as a step holds its weights)
    target "GEMM 2048x4096x1024, FP8 / bf16 (B held)" \
        "$(ratio "$(num "$(gemm_line fp8)" b_ready_gflops)" "$(num "$(gemm_line bf16)" b_ready_gflops)")" ">=" 1.5 "x"
    l=$(grep '^{"stage":"attention","bench":"attention"' "$RESULTS" | grep '"pi05_packed"' | head -1)
    target "π0.5 attention fwd+bwd, dense / fused" "$(num "$l" vs_dense)" ">=" 2.65 "x"
    target "π0.5 attention fwd+bwd, PyTorch / fused" "$(num "$l" vs_torch_best)" ">=" 1.0 "x"
    target "π0.5 attention backward / forward" "$(bwd_vs_fwd "$l")" "<=" 2.5 "x"
    f=$(grep '^{"stage":"attention_fused_bwd",' "$RESULTS" | grep '"pi05_packed"' | head -1)
    target "π0.5 attention backward / forward, fused" "$(bwd_vs_fwd "$f")" "<=" 2.5 "x"
    target "groot-n1.5 packed / padded (+188% padding)" "$(num "$(grep '"bench":"packing"' "$RESULTS" | head -1)" packing_speedup)" ">=" 2 "x"
    target "GR00T-N1.5 action chunk, batch 1" "$(num "$(stage_line infer_groot-n1.5 policy_infer)" best_ms)" "<=" 15 "ms"
    target "π0.5 action chunk, batch 1" "$(num "$(stage_line infer_pi05 policy_infer)" best_ms)" "<=" 40 "ms"
    target "serve p99 at 8 robots / one robot's chunk" "$(num "$(grep '^{"stage":"serve","bench":"serve"' "$RESULTS" | grep "\"device\":\"$DEV\"" | grep '"mode":"batching"' | head -1)" p99_vs_single_chunk)" "<=" 2 "x"
    [ "$bad" = 1 ] && return 1
    [ "$MISSED" = 1 ] && return 3
    return 0
}
if [ -n "$SUMMARY_OF" ]; then
    RESULTS=$SUMMARY_OF
    [ -r "$RESULTS" ] || { echo "gpu_check: --summary=$RESULTS: no such file" >&2; exit 2; }
    summary
    exit $?
fi

# run STAGE TIMEOUT CMD...: the command's stdout JSON lines go to the results
# (tagged with the stage), everything to the stage's log; a status line per stage
run() {
    local stage=$1 limit=$2
    shift 2
    local remain
    remain=$(left)
    if [ "$remain" -lt 15 ]; then
        say "$stage: skipped (budget spent)"
        record "{\"stage\":\"$stage\",\"status\":\"skipped\",\"why\":\"budget of ${BUDGET} s spent\"}"
        return 1
    fi
    [ "$limit" -gt "$remain" ] && limit=$remain
    local log=$OUT/logs/$stage.log t1 rc
    say "$stage: running (timeout ${limit} s): $*"
    t1=$(date +%s)
    timeout -k 10 "$limit" "$@" >"$log.out" 2>"$log.err"
    rc=$?
    cat "$log.out" "$log.err" >"$log"
    grep -E '^\{' "$log.out" | sed "s/^{/{\"stage\":\"$stage\",/" >>"$RESULTS"
    local secs=$(($(date +%s) - t1)) status=ok
    [ $rc -ne 0 ] && status=failed && FAILED=1
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && status=timeout
    local tail_ refused why
    tail_=$(grep -vE '^\{' "$log" | tail -3)
    # regions the device could not record as graphs (graph.cu says why, once per key): they ran op by op
    refused=$(grep -c 'could not be recorded as a CUDA graph' "$log")
    why=$(grep -m1 -o 'could not be recorded as a CUDA graph (.*): it runs' "$log" | sed 's/^could not be recorded as a CUDA graph (//; s/): it runs$//')
    record "{\"stage\":\"$stage\",\"status\":\"$status\",\"rc\":$rc,\"seconds\":$secs,\"tail\":\"$(json_str "$tail_")\",\"graph_refusals\":$refused,\"graph_refused_why\":\"$(json_str "$why")\"}"
    say "$stage: $status in ${secs} s (log: $log)"
    [ "$status" != ok ] && grep -vE '^\{' "$log" | tail -5 | sed 's/^/    /'
    return $rc
}

# ---- env: the GPU, the toolchain, the libraries -------------------------------------------
SP=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
for d in "$SP/nvidia/cu13/lib" "$SP/nvidia/nccl/lib" "$SP/nvidia/cudnn/lib" /usr/local/cuda/lib64; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
env_info() {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -2
    nvcc --version 2>&1 | tail -2
    echo "cores $(nproc); python purelib ${SP:-none}; LD_LIBRARY_PATH $LD_LIBRARY_PATH"
    ls "$SP/nvidia/nccl/lib" "$SP/nvidia/cu13/lib" 2>/dev/null | grep -E 'nccl|cublasLt' | head -4
}
if wanted env; then
    env_info >"$OUT/logs/env.log" 2>&1
    record "{\"stage\":\"env\",\"status\":\"ok\",\"info\":\"$(json_str "$(cat "$OUT/logs/env.log")")\"}"
    say "env: $(head -1 "$OUT/logs/env.log")"
fi

# ---- build --------------------------------------------------------------------------------
if [ -n "$PREBUILT" ]; then
    if [[ "$PREBUILT" == *.tar.xz ]]; then # scripts/gpu_bundle.sh's archive
        mkdir -p "$OUT/bundle" && tar -C "$OUT/bundle" -xJf "$PREBUILT" || { say "cannot unpack $PREBUILT"; exit 1; }
        PREBUILT=$(ls -d "$OUT"/bundle/*/ | head -1)
    fi
    BIN=$(cd "$PREBUILT" && pwd)
    [ -d "$BIN/lib" ] && export LD_LIBRARY_PATH="$BIN/lib:$LD_LIBRARY_PATH"
    # the vocabularies of the full-size presets travel in the bundle
    [ -d "$BIN/tokenizers" ] && export VLA_TOKENIZER_DIR=${VLA_TOKENIZER_DIR:-$BIN/tokenizers}
    [ -d "$BIN/configs" ] && export VLA_CONFIG_DIR=${VLA_CONFIG_DIR:-$BIN/configs}
    say "build: using prebuilt binaries in $BIN"
    record "{\"stage\":\"build\",\"status\":\"prebuilt\",\"dir\":\"$(json_str "$BIN")\"}"
else
    BIN=$ROOT/$BUILD
    if wanted build; then
        missing=""
        for m in jansson libavformat libavcodec libavutil libswscale cairo libzstd snappy libpcre2-8 libutf8proc \
            libwebsockets msgpack cmocka; do
            pkg-config --exists "$m" 2>/dev/null || missing="$missing $m"
        done
        [ -e /usr/include/chipmunk/chipmunk.h ] || missing="$missing chipmunk(libchipmunk-dev)"
        ls /usr/lib/*/openblas-openmp/libopenblas.so* >/dev/null 2>&1 || missing="$missing openblas-openmp"
        command -v nvcc >/dev/null || missing="$missing nvcc"
        if [ -n "$missing" ]; then
            say "build: cannot build here, missing:$missing (install with scripts/setup.sh build, or run with --prebuilt=DIR from scripts/gpu_bundle.sh)"
            record "{\"stage\":\"build\",\"status\":\"failed\",\"why\":\"missing:$(json_str "$missing")\"}"
            FAILED=1
        else
            run build 300 bash -c "cmake -S . -B '$BUILD' -DCMAKE_BUILD_TYPE=RelWithDebInfo $VLA_CUDA_CMAKE_FLAGS \
                >/dev/null && cmake --build '$BUILD' -j $JOBS --target $VLA_CUDA_TARGET"
        fi
    fi
fi
VLA=$BIN/vla
have() { [ -x "$1" ] || { say "$2: skipped (no $1)"; record "{\"stage\":\"$2\",\"status\":\"skipped\",\"why\":\"no binary\"}"; return 1; }; }
if [ -x "$VLA" ] && [ "$REHEARSE" = 1 ]; then
    say "rehearsal: the figure stages on $DEV with the nano presets (--rehearse); no peer, no NCCL, no suites"
    for g in equiv nccl suites torch; do
        wanted "$g" && record "{\"stage\":\"$g\",\"status\":\"skipped\",\"why\":\"rehearsal\"}"
        SKIP="$SKIP,$g,"
    done
elif [ -x "$VLA" ]; then
    "$VLA" version --json >"$OUT/logs/version.json" 2>&1 && record "$(sed 's/^{/{"stage":"version",/' "$OUT/logs/version.json")"
    if ! grep -q '"cuda":"yes' "$OUT/logs/version.json"; then
        why=$(sed -n 's/.*"cuda":"\([^"]*\)".*/\1/p' "$OUT/logs/version.json")
        say "the cuda backend cannot run here: ${why:-$(head -c 300 "$OUT/logs/version.json")}"
        record "{\"stage\":\"device\",\"status\":\"failed\",\"why\":\"$(json_str "${why:-$(head -c 300 "$OUT/logs/version.json")}")\"}"
        FAILED=1
        for g in conformance equiv nccl suites gemm train_bf16 infer serve attention packing train_fp8 torch; do
            wanted "$g" && record "{\"stage\":\"$g\",\"status\":\"skipped\",\"why\":\"no usable GPU\"}"
            SKIP="$SKIP,$g,"
        done
    fi
fi

# ---- correctness ---------------------------------------------------------------------------
# conform_with TAG VAR VALUE WHAT: conformance again with VAR=VALUE (stage conformance_TAG); when it
# conforms, VAR stays exported for the stages below and says so; else VAR is as it was
conform_with() {
    local tag=$1 var=$2 val=$3 what=$4 had=${!2-} set=${!2+x}
    export "$var=$val"
    if VLA_CONFORMANCE=$DEV run "conformance_$tag" 60 "$BIN/tests/test_conformance" &&
        grep -q "backend $DEV conforms" "$OUT/logs/conformance_$tag.log"; then
        say "$what failed, $var=$val conforms: the stages below run with $var=$val"
        record "{\"stage\":\"conformance\",\"note\":\"$what failed, $var=$val conforms: $var=$val from here on\"}"
        return 0
    fi
    if [ -n "$set" ]; then export "$var=$had"; else unset "$var"; fi
    return 1
}
if wanted conformance && have "$BIN/tests/test_conformance" conformance; then
    VLA_CONFORMANCE=$DEV run conformance 120 "$BIN/tests/test_conformance"
    if ! grep -q "backend $DEV conforms" "$OUT/logs/conformance.log"; then
        FAILED=1
        record '{"stage":"conformance","status":"failed","why":"the cuda backend did not conform (or was skipped): see logs/conformance.log"}'
        # name the op that faulted: every op synchronised and checked
        VLA_CONFORMANCE=$DEV VLA_CUDA_SYNC=1 run conformance_sync 60 "$BIN/tests/test_conformance"
        # one setting changed at a time, the newest first, the first that conforms kept for the stages
        # below: the bf16 attention staging from f32 (docs/cuda.md, "Staging"), its forward's key walk
        # unsplit ("Split keys"), the unsplit dK/dV pass (tensor/attn_plan.h, "SPLIT dK/dV"), the f32
        # attention kernels, op by op without CUDA graphs ("Graphs")
        conform_with f32staging VLA_CUDA_ATTN_STAGING f32 "the attention's bf16 copies and prefetch" ||
            conform_with qunsplit VLA_CUDA_ATTN_Q_SPLITS 1 "the attention forward's split key walk" ||
            conform_with unsplit VLA_CUDA_ATTN_KV_SPLITS 1 "split dK/dV" ||
            conform_with simt VLA_CUDA_ATTN simt "bf16 tensor-core attention" ||
            conform_with nograph VLA_CUDA_GRAPHS 0 "captured regions"
    elif [ -z "${VLA_CUDA_ATTN_STAGING:-}" ]; then
        # the default runs the prefetching kernels nearly everywhere: the attention slots again with the
        # plain bf16 kernels and with prefetch in every pass, so every kernel of attn_mma.cu has conformed
        for way in bf16 prefetch; do
            VLA_CUDA_ATTN_STAGING=$way VLA_CONFORMANCE=$DEV VLA_CONFORMANCE_ONLY=attention run conformance_$way 60 \
                "$BIN/tests/test_conformance"
        done
        # the fused backward (dQ added by the dK/dV pass, atomically; docs/cuda.md, "Fused backward")
        VLA_CUDA_ATTN_BACKWARD=fused VLA_CONFORMANCE=$DEV VLA_CONFORMANCE_ONLY=attention run conformance_fused_bwd 60 \
            "$BIN/tests/test_conformance"
    fi
fi
if wanted equiv && have "$BIN/tests/test_backends" equiv; then
    VLA_EQUIV_ONLY=1 VLA_EQUIV_DEVICE=cuda VLA_EQUIV_CONFIGS=pi05-small,groot-small VLA_EQUIV_MODES=fp32,bf16,fp8 \
        VLA_EQUIV_STEPS=20 run equiv 200 "$BIN/tests/test_backends"
fi
if wanted nccl && have "$BIN/tests/test_backends" nccl; then
    VLA_NCCL=1 VLA_EQUIV_ONLY=1 VLA_EQUIV_DEVICE=cuda VLA_EQUIV_CONFIGS=pi05-nano,groot-nano \
        run nccl 60 "$BIN/tests/test_backends"
fi
# the suites of `ctest -L cuda` (CMakeLists.txt), each program run directly on cuda
if wanted suites; then
    mkdir -p "$OUT/suites"
    for t in $(cat "$BIN/cuda_suites.txt" 2>/dev/null); do
        if [ ! -x "$BIN/tests/$t" ]; then
            record "{\"stage\":\"suites_$t\",\"status\":\"skipped\",\"why\":\"no $BIN/tests/$t\"}"
            continue
        fi
        VLA_DEVICE=cuda VLA_CONFORMANCE=cuda VLA_SOURCE_DIR=$ROOT VLA_BINARY_DIR=$OUT/suites VLA_CLI=$VLA \
            run "suites_$t" 90 "$BIN/tests/$t"
    done
fi

# ---- figures -------------------------------------------------------------------------------
HAS_PRECISION=0
# bench policy's flags, read once into a variable: `vla … --help | grep -q` under pipefail failed at
# random (grep leaves at the first match, vla's remaining output meets a closed pipe: SIGPIPE, 141),
# and a stage was silently left out — the rehearsal caught it under load
POLICY_HELP=""
[ -x "$VLA" ] && POLICY_HELP=$("$VLA" bench policy --help 2>&1)
policy_has() { grep -q -- "$1" <<<"$POLICY_HELP"; }
policy_has '--precision' && HAS_PRECISION=1
# where the time goes (tensor/profile.h): two more steps or chunks after the timing, op by op on the
# device's clock, in the stages whose figures the targets read (the timing itself is not profiled)
PROFILE=()
policy_has '--profile' && PROFILE=(--profile=2)
record_budget() { # POLICY_TRAIN_LINE: one "policy_info" line, the activation budget at its config and batch
    local l=$1 c b gc="" info
    c=$(sed -n 's/.*"config":"\([^"]*\)".*/\1/p' <<<"$l"); b=$(num "$l" batch)
    [ -n "$c" ] && [ -n "$b" ] || return 0
    grep -q '"gradient_checkpointing":true' <<<"$l" && gc=gradient_checkpointing_
    info=$(timeout 60 "$VLA" policy info --config="$c" --batch="$b" --json 2>/dev/null) || return 0
    [ -n "$(num "$info" "activations_${gc}bf16")" ] && [ -n "$(num "$info" "activations_${gc}f32")" ] || return 0
    record "{\"stage\":\"budget_$c\",\"bench\":\"policy_info\",\"config\":\"$c\",\"batch\":$b,\"gradient_checkpointing\":$([ -n "$gc" ] && echo true || echo false),\"activations_bf16\":$(num "$info" "activations_${gc}bf16"),\"activations_f32\":$(num "$info" "activations_${gc}f32")}"
}
policy_train() { # STAGE CONFIG BATCH PRECISION [TAG [FLAG...]]: the stage is STAGE_CONFIG[_TAG]
    local extra=() name="$1_$2${5:+_$5}"
    if [ "$HAS_PRECISION" = 1 ]; then
        extra=(--precision="$4" "${@:6}")
    elif [ "$4" != fp32 ]; then
        record "{\"stage\":\"$name\",\"config\":\"$2\",\"status\":\"skipped\",\"why\":\"vla bench policy has no --precision in this build (the precision plumbing of issue 31's point 2)\"}"
        return 1
    fi
    run "$name" 150 "$VLA" bench policy --device=$DEV --config="$(cfg "$2")" --batch="$(bat "$3")" --seconds="$(secs 4)" \
        --threads=0 --no-peer --reps="$(reps 3)" "${extra[@]}" "${RQ[@]}" && return 0
    grep -qi "out of" "$OUT/logs/$name.log" || return 1 # only out of memory is worth another try
    # the same batch with each layer's activations recomputed in backward (docs/train.md), then half the batch
    if policy_has '--gradient_checkpointing'; then
        run "${name}_gc" 150 "$VLA" bench policy --device=$DEV --config="$(cfg "$2")" --batch="$(bat "$3")" \
            --seconds="$(secs 4)" --threads=0 --no-peer --reps="$(reps 3)" --gradient_checkpointing "${extra[@]}" "${RQ[@]}" &&
            return 0
        grep -qi "out of" "$OUT/logs/${name}_gc.log" || return 1
    fi
    run "${name}_half" 120 "$VLA" bench policy --device=$DEV --config="$(cfg "$2")" --batch="$(bat $(($3 / 2)))" \
        --seconds="$(secs 4)" --threads=0 --no-peer --reps="$(reps 3)" "${extra[@]}" "${RQ[@]}"
}
if wanted gemm && have "$VLA" gemm; then
    run gemm 60 "$VLA" bench gemm --device=$DEV --precision=bf16 --seconds=0.05 --reps="$(reps 2)" "${RQ[@]}"
    run gemm_fp8 60 "$VLA" bench gemm --device=$DEV --precision=fp8 --seconds=0.05 --reps="$(reps 2)" "${RQ[@]}"
fi
if wanted train_bf16 && have "$VLA" train_bf16; then
    p=bf16
    [ "$HAS_PRECISION" = 1 ] || p=fp32
    policy_train train_$p groot-n1.5 32 $p "" "${PROFILE[@]}"
    policy_train train_$p pi05 8 $p "" "${PROFILE[@]}"
fi
if wanted infer && have "$VLA" infer; then
    run infer_groot-n1.5 90 "$VLA" bench policy --device=$DEV --config="$(cfg groot-n1.5)" --infer_only --reps="$(reps 10)" --no-peer \
        --precision=bf16 "${PROFILE[@]}" "${RQ[@]}"
    run infer_pi05 90 "$VLA" bench policy --device=$DEV --config="$(cfg pi05)" --infer_only --reps="$(reps 5)" --no-peer --precision=bf16 \
        "${PROFILE[@]}" "${RQ[@]}"
    # the same chunk op by op (no CUDA graph): what recording the flow steps saves (docs/cuda.md, "Graphs")
    VLA_CUDA_GRAPHS=0 run infer_nograph_pi05 90 "$VLA" bench policy --device=$DEV --config="$(cfg pi05)" --infer_only --reps="$(reps 5)" \
        --no-peer --precision=bf16 "${RQ[@]}"
    # the same chunk with the attention forward's key walk unsplit (attn_plan.h, SPLIT KEYS): what the split saves
    [ -z "${VLA_CUDA_ATTN_Q_SPLITS:-}" ] && VLA_CUDA_ATTN_Q_SPLITS=1 run infer_qunsplit_pi05 90 "$VLA" bench policy \
        --device=$DEV --config="$(cfg pi05)" --infer_only --reps="$(reps 5)" --no-peer --precision=bf16 "${RQ[@]}"
fi
if wanted serve && have "$VLA" serve; then # groot-pusht with random weights: the serving path, not a model's FLOPs
    run serve 60 "$VLA" bench serve --device=cpu,$DEV --clients=8 --seconds="$(secs 2)" --rounds=1
    # robots on eight jobs: each batch mixes prompt layouts, which a captured region keys by (docs/cuda.md, "Graphs")
    run serve_tasks 40 "$VLA" bench serve --device=$DEV --clients=8 --tasks=8 --seconds="$(secs 2)" --rounds=1
    # the same with each batch in arrival order (before 2026-12-07): what ordering by instruction saves
    VLA_SERVE_BATCH_ORDER=arrival run serve_tasks_arrival 40 "$VLA" bench serve --device=$DEV --clients=8 --tasks=8 \
        --seconds="$(secs 2)" --rounds=1
fi
PY=${VLA_PEER_PYTHON:-python3}
if wanted attention && have "$VLA" attention; then # with PyTorch on the same GPU (every SDPA way) when it is there
    PEER=(--python="$PY") # --rehearse: no peer (no torch with CUDA here)
    [ "$REHEARSE" = 1 ] && PEER=(--no-peer)
    run attention 120 "$VLA" bench attention --device=$DEV --precision=bf16 --reps="$(reps 5)" "${PEER[@]}" "${RQ[@]}"
    # the same with the dK/dV walk and the forward's key walk unsplit (before 2026-12-06 and 12-07): what the
    # splits gain, in the same run (the packed case's fwd+bwd; the chunk line's microseconds per call)
    [ -z "${VLA_CUDA_ATTN_KV_SPLITS:-}" ] && [ -z "${VLA_CUDA_ATTN_Q_SPLITS:-}" ] && VLA_CUDA_ATTN_KV_SPLITS=1 \
        VLA_CUDA_ATTN_Q_SPLITS=1 run attention_unsplit 60 "$VLA" bench attention --device=$DEV --precision=bf16 \
        --reps="$(reps 5)" --no-peer "${RQ[@]}"
    # the bf16 kernels staging from the f32 tensors, then prefetching in every pass even where it costs a
    # block per SM: the times, and the fused outputs' digest, which must not move (docs/cuda.md, "Staging")
    if [ -z "${VLA_CUDA_ATTN_STAGING:-}" ]; then
        VLA_CUDA_ATTN_STAGING=f32 run attention_f32staging 30 "$VLA" bench attention --device=$DEV --precision=bf16 \
            --reps="$(reps 5)" --no-peer "${RQ[@]}"
        VLA_CUDA_ATTN_STAGING=prefetch run attention_prefetch_all 30 "$VLA" bench attention --device=$DEV \
            --precision=bf16 --reps="$(reps 5)" --no-peer "${RQ[@]}"
    fi
    # the fused backward (one pass, dQ by atomics; docs/cuda.md, "Fused backward") beside the two passes
    run attention_fused_bwd 30 "$VLA" bench attention --device=$DEV --precision=bf16 --bwd=fused --reps="$(reps 5)" \
        --no-peer "${RQ[@]}"
fi
if wanted packing && have "$VLA" packing; then
    run packing 120 "$VLA" bench packing --device=$DEV --config="$(cfg groot-n1.5)" --batch="$(bat 16)" --seconds="$(secs 2)" --rounds=2 \
        --pad_fraction=1.88
fi
if wanted train_fp8 && have "$VLA" train_fp8; then
    policy_train train_fp8 groot-n1.5 32 fp8
    policy_train train_fp8 pi05 8 fp8
    # FP8 only where it pays (docs/precision.md): block linears under 1024 features read bf16
    if policy_has '--fp8.min_dim'; then
        policy_train train_fp8 groot-n1.5 32 fp8 md1024 --fp8.min_dim=1024
    fi
fi
if wanted torch; then # the PyTorch bf16 peer of train_bf16's groot-n1.5, same batch, same GPU
    if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        run torch_groot-n1.5 120 "$PY" tools/bench_torch_policy.py --config configs/groot-n1.5.json --batch 32 \
            --seconds 10 --device cuda --precision bf16
    else
        record "{\"stage\":\"torch\",\"status\":\"skipped\",\"why\":\"$PY has no torch with CUDA\"}"
    fi
fi
if wanted train_bf16 && have "$VLA" train_bf16; then # issue 40 asks for batch 32 and 64: 64 last, as time allows
    p=bf16
    [ "$HAS_PRECISION" = 1 ] || p=fp32
    policy_train train_$p groot-n1.5 64 $p b64
    # π0.5's batch-8 step with the fused attention backward (docs/cuda.md, "Fused backward"): what it gains
    # end to end where attention weighs most (head dim 256, one KV head, a long prefix)
    [ -z "${VLA_CUDA_ATTN_BACKWARD:-}" ] && VLA_CUDA_ATTN_BACKWARD=fused policy_train train_$p pi05 8 $p fusedbwd
    # the batch-32 step with its trainable part op by op instead of two graphs per micro-batch
    # (VLA_TRAIN_GRAPHS=0; policy/groot.c, "a training step's captured regions"): what the graphs save
    VLA_TRAIN_GRAPHS=0 policy_train train_$p groot-n1.5 32 $p nograph
    # the same batch-32 step with the GEMMs casting their inputs again instead of the norms, GLU and
    # epilogues writing the copies (docs/precision.md, "The producer writes the copy"): what those save
    if [ "$p" = bf16 ]; then VLA_PRODUCER_CASTS=0 policy_train train_$p groot-n1.5 32 $p nocopy; fi
    VLA_TRAIN_GRAPHS=0 policy_train train_$p pi05 8 $p nograph # π0.5's step without its two graphs
    # π0.5's batch-8 step keeping the normed inputs and GLU hidden as f32 beside their copies again
    # (VLA_KEPT_COPIES=0; docs/precision.md, "Kept copies"): the activation memory the copies alone save
    if [ "$p" = bf16 ]; then VLA_KEPT_COPIES=0 policy_train train_$p pi05 8 $p keptf32; fi
    # what `vla policy info` and `vla plan` budget for the runs' activations (their batch, and gradient
    # checkpointing where it was needed), bf16 on cuda and f32, beside the arena's act_gib in the summary
    if [ "$p" = bf16 ]; then
        record_budget "$(stage_line train_bf16_pi05 policy_train)"
        record_budget "$(stage_line train_bf16_groot-n1.5 policy_train)"
        # the same for GR00T, whose DiT's and VL blocks' MLPs are plain (GELU): their hidden kept as copies too
        VLA_KEPT_COPIES=0 policy_train train_$p groot-n1.5 32 $p keptf32
    fi
fi
if wanted train_fp8 && have "$VLA" train_fp8; then # as the budget allows: FP8 with each linear casting its
    # own input again (VLA_FP8_SHARED_CASTS=0; nn/linear.h, the shared FP8 casts): what the sharing saves
    VLA_FP8_SHARED_CASTS=0 policy_train train_fp8 groot-n1.5 32 fp8 noshare
fi

# ---- summary --------------------------------------------------------------------------------
echo
echo "gpu_check: $(($(date +%s) - T0)) s"
# last, as time allows: the prefetching attention kernels (cp.async, ldmatrix, swizzled tiles) under
# compute-sanitizer's racecheck, where the machine has the tool and it works (Firecracker; KINDS.md): a
# shared-memory hazard named by line. The conformance suite's attention problems (every head dim, GQA/MQA,
# the cached forward's two sources); its own record, no stage verdict: a tool that refuses the device says
# so in the log
CS=$(command -v compute-sanitizer || true)
if wanted attention && [ -n "$CS" ] && [ -x "$BIN/tests/test_conformance" ] && [ "$(left)" -gt 100 ]; then
    say "racecheck: the prefetching attention kernels under compute-sanitizer (90 s at most)"
    VLA_CUDA_ATTN_STAGING=prefetch VLA_CONFORMANCE=$DEV VLA_CONFORMANCE_ONLY=attention timeout -k 5 90 "$CS" \
        --tool racecheck "$BIN/tests/test_conformance" >"$OUT/logs/racecheck.log" 2>&1
    rc=$?
    sm=$(grep -m1 'RACECHECK SUMMARY' "$OUT/logs/racecheck.log")
    { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && sm="TIMED OUT after 90 s: no summary"
    record "{\"stage\":\"racecheck\",\"status\":\"rc $rc\",\"summary\":\"$(json_str "$sm")\"}"
fi
# then, where the machine has Nsight Compute and it reads the counters (Firecracker; KINDS.md), one bench
# attention pass with each attention kernel's launches timed on the device (ncu, the clocks left alone):
# which pass the time goes to — forward, dK/dV, dQ, the operand copies, the split parts' combine and sum —
# what the next kernel work (a one-pass backward, wgmma) waits on. The per-launch log stays in logs/; the
# record keeps each kernel's total (scripts/ncu_kernels.sh)
NCU=$(command -v ncu || true)
if wanted attention && [ -n "$NCU" ] && [ "$REHEARSE" != 1 ] && [ "$(left)" -gt 90 ]; then
    say "ncu: the attention kernels of one bench attention pass, each launch timed (60 s at most)"
    timeout -k 5 60 "$NCU" --clock-control none --csv --print-units base --metrics gpu__time_duration.sum \
        --kernel-name regex:'k_(mma|cast_rows|combine|rowdot|sum_parts)' --launch-count 400 \
        --log-file "$OUT/logs/ncu_attention.csv" "$VLA" bench attention --device=$DEV --precision=bf16 --reps=1 \
        --no-peer >"$OUT/logs/ncu_attention.log" 2>&1
    rc=$?
    k=""
    [ -s "$OUT/logs/ncu_attention.csv" ] && k=$(bash "$ROOT/scripts/ncu_kernels.sh" "$OUT/logs/ncu_attention.csv" 8 |
        awk '{printf "%s%s %s us/%s", (NR > 1 ? "; " : ""), $1, $2, $3}')
    record "{\"stage\":\"ncu_attention\",\"status\":\"rc $rc\",\"kernels\":\"$(json_str "$k")\"}"
fi
# and after it, as time allows, the PyTorch peer of π0.5 (3 cameras, batch 8) as train_bf16 runs it: the
# peer keeps every activation (no checkpointing), so on an 80 GB card it may run out of memory — a failed
# stage, said as one
if wanted torch && [ "$(left)" -gt 60 ] && "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    run torch_pi05 90 "$PY" tools/bench_torch_policy.py --config configs/pi05.json --batch 8 \
        --seconds 8 --device cuda --precision bf16
fi
summary
verdict=$?
[ "$FAILED" = 1 ] && [ "$verdict" != 1 ] && verdict=1 # a failure outside the stage table (build, device)
if [ "$REHEARSE" = 1 ]; then # the figures of nano presets on a CPU judge nothing: did every rehearsed stage run?
    [ "$FAILED" = 1 ] && { echo "gpu_check --rehearse: a stage failed (above)"; exit 1; }
    echo "gpu_check --rehearse: every rehearsed stage ran on $DEV"
    exit 0
fi
exit $verdict
