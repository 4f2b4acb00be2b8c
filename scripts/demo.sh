#!/usr/bin/env bash
# demo.sh BUILD_DIR — the main job end to end on its built-in default, nothing
# to download: record a PushT dataset with the scripted expert (LeRobot v3.0,
# 96×96 video), train groot-pusht on it, evaluate in closed loop on PushT against
# zero-action and random baselines, and print a summary. Sized to finish well
# under 15 minutes on 2 cores; the knobs below make it longer or shorter.
#   DEMO_OUT (outputs/demo)   DEMO_EPISODES (200)
#   DEMO_STEPS (auto: as many as this machine trains in DEMO_TRAIN_BUDGET_S,
#               from a 300-step calibration run; a number fixes them)
#   DEMO_BATCH (32)           DEMO_LR (2e-3)       DEMO_EVAL_EPISODES (100)
#   DEMO_TRAIN_BUDGET_S (660: the auto step count is planned to fill it, and
#                        training stops with a checkpoint 10% past it even if
#                        DEMO_STEPS are not done, so a loaded machine still
#                        finishes the demo in time)
#   DEMO_POLICY (groot-pusht) DEMO_N_ACTION_STEPS (4: actions executed per chunk of 8)
#   DEMO_N_OBS_STEPS (2: frames of state history)  DEMO_EMA (0.999: EMA of weights, exported)
#   DEMO_RELATIVE_ACTIONS (true: actions predicted relative to the agent position)
#   DEMO_ACTION_STATS_PER_STEP (true: each chunk step its own action statistics,
#                        --dataset.action_stats_per_step; false: one set pooled over the chunk)
#   DEMO_STATE_KEYS (observation.state,observation.environment_state)
#   DEMO_SEED (1000: the training seed; a second one shows how much a result owes to it)
#   DEMO_IMAGE_KEYS ("" : no camera; observation.image feeds the 96×96 video)
#   DEMO_DAGGER_ROUNDS (0: rounds of `vla dagger` after training, each
#                        DEMO_DAGGER_STEPS (2000) steps; docs/train.md measures them)
#
# Decision, first recipe (measured on 2 loaded cores): the policy sees
# the agent position plus the 16-D block keypoints (observation.environment_state)
# as its continuous state, and no image. With the image and observation.state
# alone neither tiny preset beat random in 9 minutes
# (pi05-tiny: 0% success, coverage 0.103; random 0.110): the from-scratch ViT
# cannot learn to read the block's pose in minutes, and without the ViT
# groot-tiny trains ~4× faster (≈320 vs 75 samples/s). GR00T's state encoder
# takes the state as a continuous token; π0.5 only as prompt digits.
# That recipe (groot-tiny, one frame, absolute actions, 2,985 steps × 64 in
# 540 s, loss 1.10 → 0.093): success 0%, mean max coverage 0.339 (seeds
# 100000+; random 0% / 0.110, zero-action 0% / 0.081).
#
# Decision, current recipe (issue #6: the best success a model this size reaches
# in the demo). Measured one experiment at a time on ONE core (taskset, 1
# OpenMP thread) — the demo's 2 ranks × 1 thread train about twice as fast, so
# 1,000 single-core seconds ≈ the 540-s budget; eval: 50 episodes, seeds
# 100000+, 1 policy group (rounding differs with the grouping and closed-loop
# PushT amplifies it: the same checkpoint gave 0.491 / 0.468 / 0.448), coverage
# = mean max coverage, n_act 8 unless noted (n_act = actions executed per re-plan).
# K = frames of state history.
#   recipe                                      steps×64  samples/s  loss   success  coverage
#   groot-tiny, K=1, absolute                     1,500     306*     0.116    0%     0.143 (n_act 16: 0.093)
#   groot-tiny, K=2                               2,500     359*     0.100    0%     0.191 (16: 0.176; 16 flow steps: 0.126)
#   groot-pusht, K=1, EMA .995                    2,500     929      0.098    0%     0.249 (16: 0.223)
#   groot-pusht, K=2, EMA .995                    2,500     664*     0.083    0%     0.281 (raw 0.275; 16: 0.228)
#   groot-pusht, K=2, EMA .999                   12,000   1,137      0.060    0%     0.354 (raw 0.375; 12: 2%, 0.341)
#     same, 300 episodes (36,880 frames)         12,000   1,124      0.059    0%     0.267 (raw 0.315)
#     same, 200 noisy episodes (--action_noise=10,
#       39,273 frames: DART, labels = expert's)  12,000   1,225      0.069    0%     0.263 (raw 0.254)
#   groot-pusht, K=2, relative actions, EMA .999 12,000   1,191      0.29†    0%     0.491 (raw 0.407; 4: 2%, 0.426; 16: 0.367; seeds 200000+: 0.478)
#   same, 16,000 steps (872 s)                   16,000   1,175      0.23†    4%     0.496 (raw 0%, 0.492; 2 policy groups: 2%, 0.498;
#                                                                                 4: 4%, 0.476; @8,000: 0.309; seeds 200000+: 10%, 0.501;
#                                                                                 300000+ ×100: 2%, 0.510)
#   same, lr 2e-3 (828 s)                        16,000   1,236      0.19†    8%     0.521 (raw 6%, 0.491; 2 groups: 8%, 0.534; @8,000: 0.370;
#                                                                                 seeds 200000+: 12%, 0.582; 300000+ ×100: 4%, 0.518)
#   the default: that checkpoint, re-planning
#     every 4 actions (n_act 4)                                               10%     0.661 (2 policy groups, as the demo evaluates: 20%, 0.630;
#                                                                                 seeds 200000+: 12%, 0.541; 300000+ ×100: 12%, 0.567;
#                                                                                 every 6: 10%, 0.597; every 2: 10%, 0.491)
#   the default as `make demo` runs it (2 MPI ranks x 32, 1 thread each; clean
#     machine, 2 cores): 16,000 steps in 445 s, 2,305 samples/s  →       8%     0.549 (loss 2.10 → 0.169; demo 465 s in all)
#   the default again, training seed 2000
#     (920 s, loss 0.20†)                        16,000   1,114      0.20†    6%     0.417 (2 groups: 4%, 0.409; seeds 200000+: 8%, 0.477;
#                                                                                 n_act 8: 8%, 0.531) — the training seed moves
#                                                                                 success between ~4% and ~20%
#   (* = core shared with builds; † relative actions are normalised mean/std,
#   a different loss scale.) groot-pusht = groot-tiny with the constant prompt
#   cut to 8 tokens and 2 language layers: ~2× the samples/s and a lower loss
#   per step. Two frames of state show the expert's phase (walk, push, back
#   off) and the velocities that one frame of positions hides. Relative
#   actions (action − agent position, normalised with the differences' own
#   statistics) put the network's precision where PushT's success is decided:
#   a few pixels near the block. More data (300 episodes, or 200 with
#   injected noise so the data shows recoveries) did worse at this budget, as
#   did executing 16 actions per chunk; re-planning every 4 instead of 8 helped
#   the best checkpoint (success 23 of 200 episodes vs 14 of 200 on three seed
#   ranges); EMA helped only with relative actions. With relative actions
#   the loss sits near 1.2 for the first 2,000–3,000 steps and then drops to
#   ~0.4 (seen in every run), so a budget cut far short of DEMO_STEPS costs
#   much (@8,000 of 16,000: 0.31–0.37).
#   Closed loop still drifts: the policy often brings the T most of the way
#   (several episodes ≥ 0.85) and then pushes it past.
#
# Decision, 2026-12-02 (issue #13, the recipe table of
# docs/journal/2026-12-02-demo-recipe.md: 100 held-out episodes from seed
# 500000, two training seeds, 2 ranks as the demo runs):
# per-step action statistics (DEMO_ACTION_STATS_PER_STEP=true) — each step of
# the relative chunk normalised with its own statistics — 31% / 22% success
# against 17% / 19% pooled; flow time uniform vs Beta(1.5, 1) no visible
# difference; 8 actions per chunk 8–9%. The action head's matrices now start
# from nn.Linear's default init (docs/groot.md): with GR00T's 0.02 normal
# training could sit at the predict-the-mean loss. `make demo` then: 24% /
# 0.612 over its 50 episodes, 570 s in all.
#
# Decision, 2026-12-03 (issue #13, docs/journal/2026-12-02-demo-recipe.md,
# "Dataset size, batch and Euler steps"): 200 expert episodes instead of 100
# and a global batch of 32 instead of 64. In the demo's budget the step count limits success: at a
# fixed 24,000 steps x 64, 200 episodes gave 59% where 100 episodes with the
# budget's 20,900-26,200 steps gave 26-36%; on a slower machine (Zen 3, no
# AVX-512: ~1,250 samples/s) 17,500 steps x 32, 10,100 x 64 and 31,000 x 16
# gave 34%, 25% and 23% (seeds 500000+): within the spread of two training
# seeds, so 32 (more steps, the same samples). Euler steps (2-16) at eval made
# no difference. There, with the 540-s budget, `make demo` scored 30% / 33%
# on fresh seeds 600000+ (two training seeds) in 566-586 s: short of 40% for
# want of samples. The budget is now 660 s, which the 15 minutes allow
# (668-721 s in all plus a 27-s build): 35% / 28% on fresh seeds 700000+
# (44% / 22% on 600000+, 38% / 37% on the demo's own 100000+).
#
# Decision, 2026-12-03 (docs/train.md, "The demo"): groot-pusht predicts
# chunks of 8 actions with 4 future tokens (the demo executes 4 per re-plan;
# the DiT runs 13 tokens per sample instead of 25), and the backbone runs
# once per distinct prompt (shared prefixes). On the same Zen 3, 2,100-3,400
# samples/s instead of ~1,300, and `make demo` from a fresh clone (13 min 16 s
# in all): 68% / 69% and 65% / 71% success over 100 episodes on fresh seeds
# 1200000+ / 1300000+ for training seeds 1000 and 2000. The former preset is
# scripts/recipes/groot-pusht-h16f8.json.
set -euo pipefail
build=${1:-build}
vla="$build/vla"
out=${DEMO_OUT:-outputs/demo}
episodes=${DEMO_EPISODES:-200}
steps=${DEMO_STEPS:-auto}
batch=${DEMO_BATCH:-32}
budget=${DEMO_TRAIN_BUDGET_S:-660}
lr=${DEMO_LR:-2e-3}
eval_eps=${DEMO_EVAL_EPISODES:-100}
policy=${DEMO_POLICY:-groot-pusht}
n_act=${DEMO_N_ACTION_STEPS:-4}
n_obs=${DEMO_N_OBS_STEPS:-2}
ema=${DEMO_EMA:-0.999}
relative=${DEMO_RELATIVE_ACTIONS:-true}
per_step=${DEMO_ACTION_STATS_PER_STEP:-true}
seed=${DEMO_SEED:-1000}
dagger_rounds=${DEMO_DAGGER_ROUNDS:-0}
dagger_steps=${DEMO_DAGGER_STEPS:-2000}
state_keys=${DEMO_STATE_KEYS:-observation.state,observation.environment_state}
image_keys=${DEMO_IMAGE_KEYS-}
type=${policy%%-*}
data="$out/data/pusht_expert_${episodes}"
run="$out/train"
evald="$out/eval"
mkdir -p "$out"
# a top-level field of a one-line JSON object (nested objects cut off first)
json_field() { sed -e 's/,"zero_action".*//' "$1" | sed -n "s/.*\"$2\":\\([^,}]*\\).*/\\1/p" | head -1 | tr -d '"'; }

echo "== vla.c demo: record PushT -> train $policy -> closed-loop eval =="
"$vla" version
t0=$(date +%s)

echo
echo "-- 1. dataset: $episodes successful expert episodes of PushT (LeRobot v3.0) --"
if [ -d "$data" ]; then
    echo "reusing $data"
else
    "$vla" sim record --env=pusht --policy=expert --episodes="$episodes" --seed=0 --out="$data" --json \
        | tee "$out/record.json"
fi
"$vla" dataset info "$data" 2>/dev/null | head -8 || true
t1=$(date +%s)

# Data parallel over this machine's cores (issue #7's trainer): one MPI rank
# per core, 1 thread each, per-rank batch = batch / ranks, so the global batch
# and the recipe are the same as one process (N ranks = 1 rank at N× the
# batch: tests/train/test_train_mpi.c); the tiny policy runs single-core per
# rank, so this is what makes the second core count. DEMO_RANKS=1: one process.
ranks=${DEMO_RANKS:-$(nproc)}
[ "$ranks" -gt 8 ] && ranks=8
while [ "$ranks" -gt 1 ] && [ $((batch % ranks)) -ne 0 ]; do ranks=$((ranks - 1)); done
launch=()
if [ "$ranks" -gt 1 ] && command -v mpirun >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    launch=(mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
    echo "data parallel: $ranks ranks x batch $((batch / ranks)) (mpirun, 1 thread per rank)"
else
    ranks=1
fi
# Auto steps (decision, issue #13): the cosine schedule must end inside the
# budget, and a fixed step count either stops short of it on a slow machine
# (the schedule cut before its decay) or leaves budget unused on a fast one
# (16,000 steps took 420-540 s on the same kind of machine). A 300-step run
# with the same launch measures samples/s here; the real run gets what fits in
# 97% of the budget (the run's own startup and checkpoints take the rest).
# The hard stop sits 10% past the budget: a 300-step calibration has
# overestimated the sustained rate by up to 16% (1,519 vs 1,277 samples/s),
# and a stop at the budget itself then cut the cosine schedule at 87%, its
# learning rate still high; 10% more time brings such a run to ~96% of it.
train_args=( --dataset.root="$data" --policy.type="$type" --policy.config="$policy" \
    --dataset.state_keys="$state_keys" --dataset.image_keys="$image_keys" \
    --dataset.n_obs_steps="$n_obs" --dataset.relative_actions="$relative" \
    --dataset.action_stats_per_step="$per_step" --ema_decay="$ema" --policy.n_action_steps="$n_act" \
    --batch_size=$((batch / ranks)) --optimizer.lr="$lr" \
    --seed="$seed" --num_workers=1
)
if [ "$steps" = auto ]; then
    rm -rf "$out/calibrate"
    "${launch[@]}" "$vla" train "${train_args[@]}" --steps=300 --output_dir="$out/calibrate" --save_freq=100000 \
        --log_freq=100 --json >"$out/calibrate.json" 2>"$out/calibrate.log" \
        || { cat "$out/calibrate.log" >&2; echo "demo: the calibration run failed (log above)" >&2; exit 1; }
    cal_sps=$(json_field "$out/calibrate.json" samples_per_s)
    steps=$(awk -v b="$budget" -v r="$cal_sps" -v n="$batch" 'BEGIN { s = int(b * 0.97 * r / n / 100) * 100; print (s < 1000 ? 1000 : s) }')
    echo "calibration: $cal_sps samples/s over 300 steps -> $steps steps fit in ${budget} s"
    rm -rf "$out/calibrate"
fi
echo
echo "-- 2. train $policy on state [$state_keys] x $n_obs frames, images [${image_keys:-none}], relative actions $relative: $steps steps x batch $batch, lr $lr, EMA $ema (progress: step, loss, grad norm, lr, samples/s, data-wait %, ETA) --"
rm -rf "$run"
"${launch[@]}" "$vla" train "${train_args[@]}" --steps="$steps" --output_dir="$run" --save_freq=$((steps / 4)) \
    --log_freq=50 --max_time_s=$((budget * 11 / 10)) --json | tee "$out/train.json"
t2=$(date +%s)

echo
echo "-- 3. closed-loop eval on PushT: $eval_eps episodes, baselines (the checkpoint says how it runs: $n_act actions per chunk, $n_obs frames, EMA weights) --"
rm -rf "$evald"
# no execution flags: what training decided (actions per chunk, frames of
# history, flow steps, EMA weights) is in the checkpoint's config, so the
# README's `vla eval --policy.path=…` reproduces this result
"$vla" eval --policy.path="$run" --env.type=pusht --eval.n_episodes="$eval_eps" --seed=100000 \
    --eval.n_videos=2 --eval.baselines=true --output_dir="$evald" --json | tee "$out/eval.json"
t3=$(date +%s)

# 4. DAgger (issue #13): the scripted expert relabels the states this policy
# visits; each round fine-tunes from the current weights and evaluates on the
# same seeds as step 3. Off by default: at the demo's budget the rounds have
# not paid for their minutes yet (docs/train.md, "DAgger").
if [ "$dagger_rounds" -gt 0 ]; then
    echo
    echo "-- 4. DAgger: $dagger_rounds round(s) of $dagger_steps steps (vla dagger; round 0 = the policy above) --"
    rm -rf "$out/dagger"
    "$vla" dagger --policy.path="$run" --output_dir="$out/dagger" --dagger.rounds="$dagger_rounds" \
        --dagger.expert_episodes="$episodes" --steps="$dagger_steps" --batch_size="$batch" --optimizer.lr=5e-4 \
        --ema_decay="$ema" --eval.n_episodes="$eval_eps" --seed=100000 --policy.n_action_steps="$n_act"
fi
t4=$(date +%s)

frames=$(json_field "$out/train.json" frames)
sps=$(json_field "$out/train.json" samples_per_s)
wait=$(json_field "$out/train.json" data_wait_frac)
first=$(json_field "$out/train.json" first_loss)
last=$(json_field "$out/train.json" last_loss)
ckpt=$(json_field "$out/train.json" checkpoint)
succ=$(json_field "$out/eval.json" success_rate)
cov=$(json_field "$out/eval.json" mean_max_coverage)
rew=$(json_field "$out/eval.json" mean_max_reward)
zs=$(sed -n 's/.*"zero_action":{"success_rate":\([^,]*\),"mean_max_coverage":\([^,]*\).*/\1 \2/p' "$out/eval.json")
rs=$(sed -n 's/.*"random":{"success_rate":\([^,]*\),"mean_max_coverage":\([^,]*\).*/\1 \2/p' "$out/eval.json")
echo
echo "== summary =="
echo "dataset        $data: $episodes episodes, $frames frames (recorded in $((t1 - t0)) s)"
done_steps=$(json_field "$out/train.json" steps)
echo "inputs         state [$state_keys] x $n_obs frames, images [${image_keys:-none}], relative actions $relative (statistics per step: $per_step)"
echo "training       $policy, $done_steps of $steps steps x $batch ($ranks rank(s) x $((batch / ranks))) in $((t2 - t1)) s, $sps samples/s, data wait $wait of step time"
echo "loss           $first (first 10 steps) -> $last (last 10 steps)"
echo "eval ($eval_eps ep.) success $succ, mean max coverage $cov, LeRobot avg_max_reward $rew (clip(coverage/0.95))  (eval took $((t3 - t2)) s)"
echo "zero-action    success/coverage $zs"
echo "random         success/coverage $rs"
echo "plots          $run/loss.png $run/lr.png"
echo "metrics        $run/metrics.jsonl $run/metrics.csv"
echo "videos         $evald/videos/"
echo "checkpoint     $ckpt"
if [ "$dagger_rounds" -gt 0 ]; then
    echo "DAgger         $dagger_rounds round(s) in $((t4 - t3)) s ($out/dagger/dagger.jsonl, $out/dagger/dagger.png):"
    sed -n 's/.*"round":\([0-9]*\),.*"corrections":\([0-9]*\),"frames":\([0-9]*\),"success":\([^,]*\),"mean_max_coverage":\([^,]*\),"avg_max_reward":\([^,]*\),.*"train_s":\([^,]*\),.*/               round \1: success \4, coverage \5, avg_max_reward \6 (corrections \2, \3 frames, trained \7 s)/p' \
        "$out/dagger/dagger.jsonl"
else
    echo "DAgger         no rounds (DEMO_DAGGER_ROUNDS=K runs K rounds of vla dagger after step 3)"
fi
echo "eval_info      $evald/eval_info.json"
echo "reproduce      $vla eval --policy.path=$run/checkpoints/last/pretrained_model --env.type=pusht --eval.n_episodes=$eval_eps"
echo "note           the demo trains for a fixed time (DEMO_TRAIN_BUDGET_S=$budget s): a slower machine trains fewer"
echo "               steps and scores lower; README.md gives the longer command that reaches more"
echo "stages         record $((t1 - t0)) s, train $((t2 - t1)) s, eval $((t3 - t2)) s, DAgger $((t4 - t3)) s"
echo "total          $((t4 - t0)) s"
