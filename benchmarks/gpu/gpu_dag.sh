#!/usr/bin/env bash
# What one call on a lent GPU runs for the idle-slot DAG system (issue 17): Table 1's rows trained at the
# config's full budget (600 updates) across as many calls as it takes, then evaluated.
#
#   OUT=gpu_out CONFIG=configs/dag/synthetic.yaml BUDGET_S=560 bash benchmarks/gpu/gpu_dag.sh   # carry: runs/gpu_dag
#
# One process trains the config's variants in turn (`jaxsched train --resume`: a variant already at its
# last update is skipped, one stopped by the deadline continues from its last 25-update checkpoint the next
# call), under the BUDGET_S deadline less EVAL_S; once every variant is done, `jaxsched eval` scores them
# beside the heuristics on the held-out sequences. RUNS (default runs/gpu_dag, an ignored folder) is where
# the runs live: name it in the call's `carry` so that the next call resumes them, and unpack the returned
# archive there afterwards.
# Measured on an H200 (JAX 0.11.2): an update of 3 vmapped seeds takes 0.46 s (synthetic) and 1.10 s
# (mixed) late in the curriculum, so 600 updates of one variant take ≈ 5 and ≈ 11 min. Processes do not
# share the GPU well here: seven at once (every variant of both configs) ran 14× slower each than one
# alone, slower in all than one after the other.
# Writes under OUT: log.txt, runs.tgz (RUNS with its checkpoints: the network is small).
set -u
OUT=${OUT:-gpu_out}
CONFIG=${CONFIG:-configs/dag/synthetic.yaml}
BUDGET_S=${BUDGET_S:-560}
EVAL_S=${EVAL_S:-90}
RUNS=${RUNS:-runs/gpu_dag}
SET=${SET:-}  # extra `--set KEY=VALUE` words (a dry run at a tiny size on a CPU)
mkdir -p "$OUT" "$RUNS"
LOG="$OUT/log.txt"
source "$(dirname "$0")/gpu_python.sh"  # PYTHONPATH, and the wheels of .whl/ if there
step() { echo "== [$SECONDS s] $*" | tee -a "$LOG"; }
NAME=$(python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['name'])" "$CONFIG")

step "device"
nvidia-smi -L >>"$LOG" 2>&1
python3 -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())" >>"$LOG" 2>&1

step "training $CONFIG's variants in turn for at most $((BUDGET_S - EVAL_S - SECONDS)) s"
timeout $((BUDGET_S - EVAL_S - SECONDS)) python3 -m jaxsched.cli train "$CONFIG" --out-dir "$RUNS" --resume --quiet $SET \
  >>"$RUNS/train_$NAME.log" 2>&1
STATUS=$?
for f in "$RUNS/$NAME"/*/metrics.jsonl; do echo "$f: $(wc -l <"$f") updates" | tee -a "$LOG"; done
if [ "$STATUS" -eq 0 ]; then
  step "evaluation on the held-out sequences"
  timeout $((BUDGET_S - SECONDS)) python3 -m jaxsched.cli eval "$CONFIG" --checkpoint "$RUNS/$NAME" $SET \
    >"$RUNS/eval_$NAME.log" 2>&1
  tail -30 "$RUNS/eval_$NAME.log" >>"$LOG"
else
  step "training stopped by the deadline (status $STATUS): the next call resumes it"
fi
tar -czf "$OUT/runs.tgz" -C "$RUNS" .
step "done"
