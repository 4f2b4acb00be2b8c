#!/usr/bin/env bash
# recipes.sh BUILD_DIR [RECIPES] — issue 13's recipe table, measured: train each
# recipe of RECIPES (default scripts/recipes/pusht.txt; its header gives the
# format) once per training seed on the simulator's expert data, evaluate each
# on episode seeds that no training, demo, DAgger round or earlier selection
# used, and print one markdown row per run (also appended to
# RECIPE_OUT/recipes.md), ready for docs/train.md.
#   RECIPE_ENV (pusht)           the simulator: pusht, or aloha (scripts/recipes/aloha.txt)
#   RECIPE_RECORD_FLAGS ("")     extra `vla sim record` flags (aloha: --image_size=96, the policies' size)
#   RECIPE_SEEDS ("1000 2000")   training seeds (two, as issue 13 asks)
#   RECIPE_EVAL_SEED (500000)    first eval episode seed; the demo evaluates from 100000,
#                                and 200000/300000 were used to choose its recipe
#   RECIPE_EVAL_EPISODES (100)   RECIPE_EPISODES (100: expert episodes recorded, seed 0)
#   RECIPE_RANKS (nproc: MPI ranks, 1 thread each, as make demo)   RECIPE_BATCH (64, global)
#   RECIPE_OUT (outputs/recipes)
# Each row's "train min" is the training's own wall time (train.json), the
# recording and the evaluation not included; the whole run is timed in
# RECIPE_OUT/recipes.log. Recipes that stop on a time budget (--max_time_s)
# need a quiet machine: anything else running changes how many steps they get;
# step-budgeted ones get the same steps, only slower.
set -euo pipefail
build=${1:-build}
recipes=${2:-scripts/recipes/pusht.txt}
vla="$build/vla"
env=${RECIPE_ENV:-pusht}
record_flags=${RECIPE_RECORD_FLAGS:-}
seeds=${RECIPE_SEEDS:-1000 2000}
eval_seed=${RECIPE_EVAL_SEED:-500000}
eval_eps=${RECIPE_EVAL_EPISODES:-100}
episodes=${RECIPE_EPISODES:-100}
batch=${RECIPE_BATCH:-64}
out=${RECIPE_OUT:-outputs/recipes}
ranks=${RECIPE_RANKS:-$(nproc)}
[ -f "$recipes" ] || { echo "recipes.sh: no recipes file $recipes" >&2; exit 2; }
[ -x "$vla" ] || { echo "recipes.sh: no $vla (build first: make all)" >&2; exit 2; }
while [ "$ranks" -gt 1 ] && [ $((batch % ranks)) -ne 0 ]; do ranks=$((ranks - 1)); done
launch=()
if [ "$ranks" -gt 1 ] && command -v mpirun >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    launch=(mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
else
    ranks=1
fi
mkdir -p "$out"
data="$out/data/${env}_expert_$episodes"
t_start=$(date +%s)
# shellcheck disable=SC2086 # the flags are words
[ -d "$data" ] || "$vla" sim record --env="$env" --policy=expert --episodes="$episodes" --seed=0 --out="$data" \
    $record_flags --json >"$out/record_${env}_$episodes.json"
echo "recipes.sh: $env data $data ready at +$(( $(date +%s) - t_start )) s" >>"$out/recipes.log"
# a top-level field of a one-line JSON object (nested objects cut off first)
json_field() { sed -e 's/,"zero_action".*//' "$1" | sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p" | head -1 | tr -d '"'; }
slug() { tr -c 'a-zA-Z0-9\n' '_' <<<"$1"; }
trim() { sed -e 's/^ *//' -e 's/ *$//' <<<"$1"; }

header="| recipe | train seed | eval seeds | steps | train min | success | mean max coverage | avg_max_reward (LeRobot) |"
echo "$header"
echo "|---|---|---|---|---|---|---|---|"
[ -f "$out/recipes.md" ] || printf '%s\n|---|---|---|---|---|---|---|---|\n' "$header" >"$out/recipes.md"
while IFS='|' read -r name train_flags eval_flags; do
    name=$(trim "$name")
    [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
    train_flags=$(trim "$train_flags") eval_flags=$(trim "$eval_flags")
    for seed in $seeds; do
        if [ "${train_flags:0:1}" = "=" ]; then # an eval-only variant of an earlier recipe
            run="$out/$(slug "$(trim "${train_flags:1}")")_$seed"
            [ -f "$run/train.json" ] || { echo "recipes.sh: '$name' reuses '${train_flags:1}', which has not run" >&2; exit 1; }
        else
            run="$out/$(slug "$name")_$seed"
            rm -rf "$run/train" && mkdir -p "$run"
            # shellcheck disable=SC2086 # the flags are words
            "${launch[@]}" "$vla" train --dataset.root="$data" --policy.type=groot $train_flags \
                --batch_size=$((batch / ranks)) --seed="$seed" --num_workers=1 --log_freq=200 \
                --output_dir="$run/train" --json >"$run/train.json" </dev/null # mpirun forwards stdin: keep it off the recipes
        fi
        evald="$out/$(slug "$name")_${seed}_eval"
        rm -rf "$evald"
        # shellcheck disable=SC2086
        "$vla" eval --policy.path="$run/train" --env.type="$env" --eval.n_episodes="$eval_eps" --seed="$eval_seed" \
            --eval.n_videos=0 $eval_flags --output_dir="$evald" --json >"$evald.json" </dev/null
        steps=$(json_field "$run/train.json" steps) secs=$(json_field "$run/train.json" seconds)
        row=$(printf '| %s | %s | %s–%s | %s | %.1f | %.0f%% | %.3f | %.3f |' "$name" "$seed" "$eval_seed" \
            "$((eval_seed + eval_eps - 1))" "$steps" "$(awk -v s="$secs" 'BEGIN{print s/60}')" \
            "$(awk -v s="$(json_field "$evald.json" success_rate)" 'BEGIN{print 100*s}')" \
            "$(json_field "$evald.json" mean_max_coverage)" "$(json_field "$evald.json" mean_max_reward)")
        echo "$row"
        echo "$row" >>"$out/recipes.md"
        echo "recipes.sh: '$name' seed $seed done at +$(( $(date +%s) - t_start )) s" >>"$out/recipes.log"
    done
done <"$recipes"
