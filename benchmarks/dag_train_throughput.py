"""Policy-gradient training throughput of the idle-slot DAG agent: env steps/s *during training*, seeds
vmapped in one program, and the cost of the gradient over decision steps against the full-batch one.

    python benchmarks/dag_train_throughput.py --config configs/dag/synthetic.yaml --seeds 1,3 --json F

A config gives the env, the workload, the network and the REINFORCE settings. Each record times chunks of
--updates updates with the system's own jitted programs (`systems.dag.train.programs`; one warm-up chunk,
then the median of --repeats), starting at update --at-update of the curriculum (the episodes' mean
length grows over training, and with it the decision steps an update differentiates). `gradient_s` and
`full_batch_s` time, on one rollout at that point, `Reinforce.gradient` (decision steps only, in chunks)
and `jax.grad` of the loss over every step; `decisions` is that rollout's decision count out of
`num_sequences × rollouts × num_steps` steps.
"""

from __future__ import annotations

import argparse
import dataclasses

import jax

from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import measure_chunks, median_time
from jaxsched.systems import load_run_config
from jaxsched.systems.dag.config import build_dag
from jaxsched.systems.dag.train import programs, reinforce_for


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/dag/synthetic.yaml")
    p.add_argument("--variant", default="full")
    p.add_argument("--seeds", default="1,3", help="seed counts (vmapped)")
    p.add_argument("--updates", type=int, default=2, help="updates per timed chunk")
    p.add_argument("--at-update", type=int, default=0, help="the curriculum's position (update count)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    p.add_argument("--no-gradient", action="store_true", help="skip the two-ways gradient timing")
    a = p.parse_args()
    _, cfg = load_run_config(a.config)
    rl = cfg.reinforce
    total = max(rl.total_updates, a.at_update + (a.repeats + 1) * a.updates + 1)
    total = -(-total // a.updates) * a.updates
    cfg = cfg.replace(reinforce=dataclasses.replace(rl, updates_per_chunk=a.updates, total_updates=total))
    env, train_params, _ = build_dag(cfg)
    init, chunk = programs(cfg, a.variant, env)
    records = []
    for seeds in (int(s) for s in a.seeds.split(",")):
        keys = jax.random.split(jax.random.key(0), seeds)

        def at_position(keys, params, _init=init):
            runner = _init(keys, params)
            return runner.replace(update=runner.update + a.at_update)

        steps = a.updates * cfg.reinforce.steps_per_update
        rec = measure_chunks(at_position, chunk, keys, train_params, steps, a.repeats)
        rec |= {"agent": "reinforce", "variant": a.variant, "config": a.config, "at_update": a.at_update,
                "updates_per_chunk": a.updates, "steps_per_update": steps // a.updates}  # fmt: skip
        records.append(rec)
        print(
            f"reinforce {a.variant} seeds {seeds} from update {a.at_update}: {rec['env_steps_per_s']:>8,.0f} "
            f"env steps/s ({rec['chunk_s'] / a.updates:.2f} s per update)  ({rec['cpu']}, {rec['device']})",
            flush=True,
        )
    if a.no_gradient:
        if a.json:
            write_json(a.json, records)
        return
    # The gradient of one update, two ways, on the same rollout (a ratio measured in one run).
    alg = reinforce_for(cfg, a.variant, env)
    runner = alg.init(jax.random.key(0), train_params)
    traj, _, _ = jax.jit(alg.rollout)(runner.params, train_params, runner.key, a.at_update)
    adv = alg.advantages(traj)
    chunked = median_time(jax.jit(alg.gradient), runner.params, traj, adv, 0.01, repeats=a.repeats)
    full = jax.jit(jax.grad(alg.loss, has_aux=True))
    full_s = median_time(full, runner.params, traj, adv, 0.01, repeats=a.repeats)
    n_dec = int(traj["decision"].sum())
    grad = {"gradient_s": chunked, "full_batch_s": full_s, "decisions": n_dec,
            "steps": int(traj["decision"].size), "at_update": a.at_update}  # fmt: skip
    records.append({"measure": "gradient", **grad, **{k: records[0][k] for k in ("cpu", "device")}})
    print(
        f"gradient over {n_dec:,} decisions of {grad['steps']:,} steps: {chunked:.2f} s in chunks, "
        f"{full_s:.2f} s over every step (×{full_s / chunked:.1f})",
        flush=True,
    )
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()
