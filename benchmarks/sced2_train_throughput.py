"""DQN training throughput of SCED² (the GPU-locality env at the paper's size, prioritized replay): env
steps/s *during training*, seeds vmapped in one program, per Q-network.

    python benchmarks/sced2_train_throughput.py --seeds 1,3 --networks shared,mlp --json results.json

A config (default `configs/sced2/paper_68.yaml`: 16 envs × 8 decisions and 2 SGD steps of 128 per update)
gives the env, the workload and the DQN settings; each record times chunks of --updates updates with the
system's own jitted programs (`systems.sced2.train.programs`): one warm-up chunk (compile, and the replay
buffer filled past `learning_starts`, so the timed chunks learn), then the median of --repeats chunks.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import jax

from jaxsched.experiments.throughput import measure_chunks
from jaxsched.systems import load_run_config
from jaxsched.systems.sced2.config import build_sced2
from jaxsched.systems.sced2.train import programs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/sced2/paper_68.yaml")
    p.add_argument("--networks", default="shared,mlp")
    p.add_argument("--seeds", default="1,3", help="seed counts (vmapped)")
    p.add_argument("--updates", type=int, default=200, help="updates per timed chunk")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    _, cfg = load_run_config(a.config)
    warm = -(-cfg.dqn.learning_starts // cfg.dqn.steps_per_update) + 1  # updates before SGD starts
    dqn = dataclasses.replace(
        cfg.dqn, updates_per_chunk=max(a.updates, warm), total_updates=10 * max(a.updates, warm)
    )
    cfg = cfg.replace(dqn=dqn)
    env, params, _ = build_sced2(cfg)
    records = []
    for network in a.networks.split(","):
        for seeds in (int(s) for s in a.seeds.split(",")):
            init, chunk = programs(cfg, network, env)
            keys = jax.random.split(jax.random.key(0), seeds)
            rec = measure_chunks(
                init, chunk, keys, params, dqn.updates_per_chunk * dqn.steps_per_update, a.repeats
            )
            rec |= {
                "agent": "dqn",
                "network": network,
                "config": a.config,
                "updates_per_chunk": dqn.updates_per_chunk,
                "num_envs": dqn.num_envs,
                "rollout_steps": dqn.rollout_steps,
                "grad_steps": dqn.grad_steps,
                "batch_size": dqn.batch_size,
            }
            records.append(rec)
            print(
                f"dqn {network:>6} seeds {seeds}: {rec['env_steps_per_s']:>9,.0f} env steps/s "
                f"({rec['chunk_s']:.2f} s per {dqn.updates_per_chunk} updates)  ({rec['device']})",
                flush=True,
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=2)


if __name__ == "__main__":
    main()
