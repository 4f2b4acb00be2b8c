#!/usr/bin/env bash
# gpu_recipe_rehearse.sh BUILD_DIR — scripts/gpu_recipe.sh's rehearsal at its smallest budget (ctest runs
# it, label slow): 2 PushT expert episodes, a few CPU training steps, 2 eval episodes; then the staged
# directory holds data.tar.xz (a shard set that unpacks), train.sh and sizes.txt, the checkpoint loads
# as JSON with the recipe's random shift recorded, and the assess row and the eval JSON parse.
source "$(dirname "$0")/rehearse_setup.sh" "$@" # SRC, BUILD, T, fail
BUILD=$BUILD RECIPE_REHEARSE_DIR=$T RECIPE_EPISODES=2 RECIPE_BUDGET_S=5 CAL_STEPS=2 RECIPE_BATCH=4 \
    RECIPE_EVAL_EPISODES=2 bash "$SRC/scripts/gpu_recipe.sh" pusht-pixels rehearse >"$T/log" 2>&1 ||
    { tail -20 "$T/log"; fail "the rehearsal exited $?"; }
R=$T/pusht-pixels
for f in staged/data.tar.xz staged/train.sh staged/sizes.txt out/pretrained_model/model.safetensors \
    out/pretrained_model/config.json out/train_summary.json eval/eval_info.json eval.json rows.md; do
    [ -s "$R/$f" ] || fail "no $f"
done
mkdir "$T/unpacked" && tar -C "$T/unpacked" -xJf "$R/staged/data.tar.xz" || fail "data.tar.xz does not unpack"
[ -f "$T/unpacked/manifest.json" ] || fail "data.tar.xz holds no shard set (manifest.json)"
grep -q -- '--augment.shift=4' "$R/staged/train.sh" || fail "train.sh lacks the random shift"
grep -q 'one GPU call .* MiB of 64' "$R/staged/sizes.txt" || fail "sizes.txt says nothing of the limit"
[ "$(jq -r '.flags["augment.shift"]' "$R/out/pretrained_model/train_config.json")" = 4 ] ||
    fail "train_config.json does not keep --augment.shift=4"
jq -e '.success_rate >= 0 and .zero_action.success_rate >= 0 and .random.success_rate >= 0' "$R/eval.json" >/dev/null ||
    fail "eval.json lacks the policy's or a baseline's success"
row=$(tail -1 "$R/rows.md")
grep -qE '^\| pusht-pixels \| cpu \| [0-9.]+ \| [0-9]+ × 4 \| 1600000–1600001 \| \*\*[0-9]+%\*\* \| [0-9.]+ / [0-9.]+ \| [0-9]+% / [0-9.]+ \| [0-9]+% / [0-9.]+ \| eval_episode_[0-9]\.mp4' <<<"$row" ||
    fail "the assess row does not parse: $row"
[ "$(ls "$R/eval/videos" | wc -l)" -le 2 ] || fail "more than a success's and a failure's video kept"
echo "gpu_recipe rehearsal: ok ($row)"
