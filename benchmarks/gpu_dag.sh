#!/usr/bin/env bash
# What one call on a lent GPU runs for the idle-slot DAG system (issue 17): Table 1's synthetic and mixed
# rows trained at the largest update count that fits the call, then evaluated on the held-out sequences.
#
#   OUT=gpu_out BUDGET_S=560 bash benchmarks/gpu_dag.sh
#
# 1. Probe: `benchmarks/dag_train_throughput.py` times two updates of each config (3 seeds vmapped) late in
#    the curriculum (--at-update PROBE_AT, where episodes are longest), both configs at once.
# 2. Train every variant of both configs at once, one process each (a REINFORCE update of this tiny
#    network is launch-bound on a GPU, so processes share it), each with
#    `reinforce.total_updates = min(MAX_UPDATES, (time left − EVAL_S − COMPILE_S) / (probe's s per update × SHARE))`
#    rounded down to a chunk (25 updates): the curriculum and entropy annealing then end where training
#    ends. A run the deadline stops keeps its last chunk's checkpoint.
# 3. `jaxsched eval` of both configs (the heuristics beside the variants, 16 held-out sequences).
# Writes under OUT: log.txt, dag_train_{synthetic,mixed}_gpu.json, dag_{synthetic,mixed}_runs.tgz (run dirs with their
# checkpoints: the network is small, and `jaxsched table dag` re-evaluates them for Figs. 4–6 anywhere).
# SET_SYN / SET_MIX: extra `--set KEY=VALUE` words for each config; CONFIGS: the folder of the two configs.
set -u
OUT=${OUT:-gpu_out}
BUDGET_S=${BUDGET_S:-560}
EVAL_S=${EVAL_S:-100}
COMPILE_S=${COMPILE_S:-60}  # a training process's start: banks, compile
SHARE=${SHARE:-1.5}
MAX_UPDATES=${MAX_UPDATES:-600}
PROBE_AT=${PROBE_AT:-500}
RUNS=${RUNS:-/tmp/jaxsched_dag_runs}
SET_SYN=${SET_SYN:-}
SET_MIX=${SET_MIX:-}
CONFIGS=${CONFIGS:-configs/dag}  # where synthetic.yaml and mixed.yaml are (a dry run: tiny copies)
mkdir -p "$OUT" "$RUNS"
LOG="$OUT/log.txt"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
WHEELS=${WHEELS:-.whl}
if [ -d "$WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
    || exit 1
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
step() { echo "== [$SECONDS s] $*" | tee -a "$LOG"; }
variants() { python3 -c "import yaml,sys; print(' '.join(yaml.safe_load(open(sys.argv[1]))['agent']['variants']))" "$1"; }

step "device"
nvidia-smi -L >>"$LOG" 2>&1
python3 -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())" >>"$LOG" 2>&1

step "probe: 2 updates of each config at update $PROBE_AT, 3 seeds"
for C in synthetic mixed; do
  python3 benchmarks/dag_train_throughput.py --config "$CONFIGS/$C.yaml" --seeds 3 --updates 2 --repeats 2 \
    --at-update "$PROBE_AT" --no-gradient --json "$OUT/dag_train_${C}_gpu.json" >"$RUNS/probe_$C.log" 2>&1 &
done
wait
cat "$RUNS"/probe_*.log >>"$LOG"

TRAIN_S=$((BUDGET_S - SECONDS - EVAL_S))
updates_for() {  # the largest chunk multiple of updates that fits TRAIN_S at the probe's rate
  python3 - "$OUT/dag_train_$1_gpu.json" "$((TRAIN_S - COMPILE_S))" "$SHARE" "$MAX_UPDATES" <<'EOF'
import json, sys
path, train_s, share, most = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
try:
    rec = next(r for r in json.load(open(path)) if "chunk_s" in r)
    per_update = rec["chunk_s"] / rec["updates_per_chunk"]
except Exception as e:  # no probe: the smallest run, so that something is trained
    print(f"probe unreadable ({e})", file=sys.stderr); print(25); sys.exit()
print(max(25, min(most, int(train_s / (per_update * share)) // 25 * 25)))
EOF
}
U_SYN=$(updates_for synthetic)
U_MIX=$(updates_for mixed)
step "training for at most $TRAIN_S s: synthetic $U_SYN updates, mixed $U_MIX updates, every variant at once"
for C in synthetic mixed; do
  if [ "$C" = synthetic ]; then U=$U_SYN; EXTRA=$SET_SYN; else U=$U_MIX; EXTRA=$SET_MIX; fi
  for V in $(variants "$CONFIGS/$C.yaml"); do
    timeout "$TRAIN_S" python3 -m jaxsched.cli train "$CONFIGS/$C.yaml" --out-dir "$RUNS" --quiet \
      --set "reinforce.total_updates=$U" --set "agent.variants=[$V]" $EXTRA >"$RUNS/train_${C}_$V.log" 2>&1 &
  done
done
wait
for f in "$RUNS"/train_*.log; do echo "$f: $(tail -2 "$f")" >>"$LOG"; done

step "evaluation of both configs on the held-out sequences"
python3 -m jaxsched.cli eval "$CONFIGS/synthetic.yaml" --checkpoint "$RUNS/dag_synthetic" \
  --set "reinforce.total_updates=$U_SYN" $SET_SYN >"$RUNS/eval_synthetic.log" 2>&1 &
python3 -m jaxsched.cli eval "$CONFIGS/mixed.yaml" --checkpoint "$RUNS/dag_mixed" \
  --set "reinforce.total_updates=$U_MIX" $SET_MIX >"$RUNS/eval_mixed.log" 2>&1 &
wait
cat "$RUNS"/eval_*.log >>"$LOG"
for C in synthetic mixed; do  # one archive each: a file that comes back is at most 16 MB
  tar -czf "$OUT/dag_${C}_runs.tgz" -C "$RUNS" "dag_$C" probe_$C.log train_${C}_*.log eval_$C.log
done
step "done"
