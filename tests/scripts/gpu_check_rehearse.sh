#!/usr/bin/env bash
# gpu_check_rehearse.sh BUILD_DIR — scripts/gpu_check.sh --rehearse on this build (ctest runs it, label
# slow): every figure stage's command line on the checked backend with the nano presets, so a flag that
# a stage passes and the binary no longer takes, a figure line the summary no longer reads, or a stage
# that fails shows here, not in the next 15 minutes of a GPU. Then a rehearsal with a stage made to
# fail (a planted vla that fails every run) must say so and exit 1.
source "$(dirname "$0")/rehearse_setup.sh" "$@" # SRC, BUILD, T, fail
out=$(bash "$SRC/scripts/gpu_check.sh" --rehearse --prebuilt="$BUILD" --out="$T/ok" 2>&1)
rc=$?
[ $rc = 0 ] || { echo "$out" | tail -40; fail "the rehearsal exited $rc"; }
R=$T/ok/results.jsonl
# every figure stage ran (ok), with the figure line the summary reads
for s in conformance gemm gemm_fp8 train_bf16_groot-n1.5 train_bf16_pi05 infer_groot-n1.5 infer_pi05 \
    infer_nograph_pi05 serve attention attention_unsplit packing train_fp8_groot-n1.5 train_fp8_pi05 \
    train_fp8_groot-n1.5_md1024 train_bf16_groot-n1.5_b64; do
    grep -q "\"stage\":\"$s\",\"status\":\"ok\"" "$R" || fail "stage $s did not run ok: $(grep "\"stage\":\"$s\"" "$R" | head -2)"
done
for pair in train_bf16_groot-n1.5:policy_train train_bf16_pi05:policy_train infer_pi05:policy_infer \
    infer_groot-n1.5:policy_infer train_fp8_groot-n1.5_md1024:policy_train packing:packing gemm:gemm serve:serve; do
    grep -q "^{\"stage\":\"${pair%%:*}\",\"bench\":\"${pair#*:}\"" "$R" || fail "no ${pair#*:} line from ${pair%%:*}"
done
for s in train_bf16_groot-n1.5 train_bf16_pi05 infer_groot-n1.5 infer_pi05; do # the profiled stages
    grep -q "^{\"stage\":\"$s\",\"bench\":\"policy_profile\"" "$R" || fail "no profile from $s"
done
for s in infer_groot-n1.5 infer_pi05; do # and the chunk with its regions timed whole (graph replays on cuda)
    grep -q "^{\"stage\":\"$s\",\"bench\":\"policy_profile\".*\"what\":\"chunk_regions_whole\".*\"op\":\"run_captured\"" "$R" ||
        fail "no whole-region profile from $s"
done
grep -q '"fp8_linears"' <<<"$(grep '"stage":"train_fp8_groot-n1.5_md1024","bench":"policy_train"' "$R")" ||
    fail "the FP8 min_dim stage's line has no fp8_linears"
# the summary read them: figures, profiles with their phases, targets with figures
for pat in 'train groot-n1.5 bf16' 'inference pi05, batch 1' 'profile train_bf16_groot-n1.5 \(train_step' \
    'profile infer_pi05 \(chunk' 'profile infer_groot-n1.5 \(chunk_regions_whole.*' '      run_captured +[0-9.]+ ms' 'phases: zero_grad [0-9.]+ ms, forward' 'phases: inputs [0-9.]+ ms, prefix' \
    'GR00T-N1.5 action chunk, batch 1 +[0-9.]+ ms' 'serve .* on checked' 'every rehearsed stage ran on checked'; do
    grep -qE -- "$pat" <<<"$out" || { echo "$out" | tail -60; fail "the summary has no /$pat/"; }
done
# a stage that fails: the rehearsal says so and exits 1 (a vla that answers --help but fails every run)
mkdir -p "$T/broken/tests"
printf '#!/usr/bin/env bash\nfor a in "$@"; do [ "$a" = --help ] && exec "%s/vla" "$@"; done\necho "planted failure" >&2\nexit 3\n' \
    "$BUILD" >"$T/broken/vla"
chmod +x "$T/broken/vla"
out=$(bash "$SRC/scripts/gpu_check.sh" --rehearse --prebuilt="$T/broken" --out="$T/bad" --only=train_bf16 2>&1)
rc=$?
[ $rc = 1 ] || { echo "$out" | tail -20; fail "a failed stage exited $rc, want 1"; }
grep -q 'gpu_check --rehearse: a stage failed' <<<"$out" || fail "a failed stage was not reported"
grep -q '"stage":"train_bf16_groot-n1.5","status":"failed"' "$T/bad/results.jsonl" || fail "the failed stage is not recorded"
echo "gpu_check_rehearse: every figure stage rehearsed on checked; a failing stage fails the rehearsal"
