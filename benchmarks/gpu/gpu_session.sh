#!/usr/bin/env bash
# What one call on a lent GPU runs (issue 19): the DBF paper-size runs, then the GPU throughput figures.
#
#   OUT=gpu_out TRAIN_S=240 BUDGET_S=540 bash benchmarks/gpu/gpu_session.sh
#
# 1. DBF at the paper's size (configs/dbf/m10_9_1.yaml and m10_10_0.yaml: [1024, 512, 256] actor and critic,
#    64 envs × 256 decisions an update, 3 seeds vmapped), both trained at once for at most TRAIN_S seconds
#    each (a PPO update at minibatches of 128 is launch-bound on a GPU, so two processes share it well);
#    a run stopped by the limit keeps its last chunk's checkpoint, and `jaxsched eval` scores that one
#    (the update it reached is in eval.json) on the 32 held-out episodes, the heuristics beside 9 + 1.
# 2. Env and training throughput on the GPU: the HPC env at batch 65,536, DAS and DA MAPPO training, the
#    DAG env beside the HPC env; each stops at the session's BUDGET_S deadline.
# Writes under OUT: log.txt, dbf_runs.tgz (each run dir without its checkpoints), *_gpu.json.
# On a machine whose Python lacks distrax (with tfp-nightly, dm-tree, gast, decorator) or flashbax (the CLI
# loads every system), put their wheels in .whl/ first (`pip download --no-deps --only-binary=:all:` with
# that machine's `--python-version` and `--platform`).
set -u
OUT=${OUT:-gpu_out}
TRAIN_S=${TRAIN_S:-240}
BUDGET_S=${BUDGET_S:-540}
RUNS=${RUNS:-/tmp/jaxsched_gpu_runs}
SET=${SET:-}  # extra `--set KEY=VALUE` words for the DBF runs (a dry run at a tiny size on a CPU)
mkdir -p "$OUT" "$RUNS"
LOG="$OUT/log.txt"
source "$(dirname "$0")/gpu_python.sh"  # PYTHONPATH, and the wheels of .whl/ if there
# Run "$@" until the BUDGET_S deadline; skip it when under 15 s are left (`timeout 0` would never stop).
until_deadline() {
  local left=$((BUDGET_S - SECONDS))
  if [ "$left" -lt 15 ]; then echo "skipped: ${left} s of the budget left" | tee -a "$LOG"; return; fi
  timeout "$left" "$@" >>"$LOG" 2>&1
}
step() { echo "== [$SECONDS s] $*" | tee -a "$LOG"; }

step "device"
nvidia-smi -L >>"$LOG" 2>&1
python3 -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, jax.devices())" >>"$LOG" 2>&1

step "DBF training, 9 + 1 and 10 + 0 at once, at most $TRAIN_S s each"
for S in 9_1 10_0; do
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.4 timeout "$TRAIN_S" \
    python3 -m jaxsched.cli train "configs/dbf/m10_$S.yaml" --out-dir "$RUNS" --quiet $SET >"$RUNS/train_$S.log" 2>&1 &
done
wait
for S in 9_1 10_0; do
  echo "m10_$S: $(wc -l <"$RUNS/dbf_m10_$S/metrics.jsonl") updates logged" | tee -a "$LOG"
  tail -5 "$RUNS/train_$S.log" >>"$LOG"
done

step "DBF evaluation (heuristics beside 9 + 1 only: the same 32 episodes)"
XLA_PYTHON_CLIENT_MEM_FRACTION=0.4 python3 -m jaxsched.cli eval configs/dbf/m10_9_1.yaml \
  --checkpoint "$RUNS/dbf_m10_9_1" $SET >"$RUNS/eval_9_1.log" 2>&1 &
XLA_PYTHON_CLIENT_MEM_FRACTION=0.4 python3 -m jaxsched.cli eval configs/dbf/m10_10_0.yaml \
  --checkpoint "$RUNS/dbf_m10_10_0" --set 'eval.baselines=[]' $SET >"$RUNS/eval_10_0.log" 2>&1 &
wait
cat "$RUNS/eval_9_1.log" "$RUNS/eval_10_0.log" >>"$LOG"
tar -czf "$OUT/dbf_runs.tgz" -C "$RUNS" --exclude=checkpoints dbf_m10_9_1 dbf_m10_10_0 train_9_1.log train_10_0.log

step "HPC env at batch 4,096 and 65,536"
until_deadline python3 benchmarks/env_throughput.py --env hpc --batches 4096,65536 --repeats 5 \
  --json "$OUT/hpc_env_gpu.json"
step "DAS and DA MAPPO training throughput"
until_deadline python3 benchmarks/das_train_throughput.py --variants da,das --seeds 1 \
  --json "$OUT/das_train_gpu.json"
step "DAG env beside the HPC env"
until_deadline python3 benchmarks/env_throughput.py --env dag,hpc --batches 1024,16384 --repeats 3 \
  --json "$OUT/dag_env_gpu.json"
step "done"
