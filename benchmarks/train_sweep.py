"""Training throughput of any system against the number of parallel envs: a config's own learner, its own
jitted programs (`Learner.programs`, the ones `jaxsched train` runs), swept over the algorithm's parallel
envs. The same command on a CPU and on a GPU.

    python benchmarks/train_sweep.py configs/dbf/quick.yaml --envs 16,64,256,1024,4096 --json F
    python benchmarks/train_sweep.py configs/das/paper_small.yaml --envs 1024 --updates 2 --repeats 3

For each count the config's algorithm section gets that many parallel envs (PPO, MAPPO, DQN: `num_envs`;
REINFORCE: `rollouts` per job sequence, so `num_sequences × rollouts` envs) and chunks of `--updates`
updates; the learner is built, initialised for the config's `num_seeds` seeds (vmapped in one program),
its chunk traced, lowered and compiled (`compile_s`, the three together; `chunk_program` has each stage
and the compiled chunk's bytes: `experiments.footprint`), run once to warm up (DQN fills its buffer
there), then timed `--repeats` times (the median). Records: {"config", "learner", "algorithm", "envs"
(parallel envs per seed), "seeds", "env_steps_per_s" and "updates_per_s" (every seed's), "compile_s",
"chunk_program", "runner_bytes" (the seeds' training state: params, optimiser, envs, buffers), "runs_s",
...platform}. An env step is one call of the env's `step`: a decision in every env but DAS's GPU cloud,
whose long forwards take several calls (`max_forward_events`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax

from jaxsched.experiments.footprint import CAPACITIES, compile_cost, largest_batch, memory_line, tree_bytes
from jaxsched.experiments.live import live
from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import platform_info
from jaxsched.experiments.train import seed_keys
from jaxsched.systems import load_run_config

# The algorithm sections a config may have, and the field that sets its parallel envs.
PARALLEL = {"ppo": "num_envs", "mappo": "num_envs", "dqn": "num_envs", "reinforce": "rollouts"}


def algorithm_of(cfg) -> str:
    found = [s for s in PARALLEL if hasattr(cfg, s)]
    if len(found) != 1:
        raise ValueError(f"{cfg.name}: expected one algorithm section of {', '.join(PARALLEL)}: {found}")
    return found[0]


def sized(path: str, envs: int, updates: int, sets: list[str]):
    """`(system, config)` with `envs` parallel envs per seed and chunks (and a total) of `updates`."""
    system, cfg = load_run_config(path, sets)
    section = algorithm_of(cfg)
    per = 1 if section != "reinforce" else getattr(cfg, section).num_sequences
    if envs % per:
        raise ValueError(f"--envs {envs}: reinforce runs num_sequences ({per}) × rollouts envs: a multiple")
    changes = [f"{section}.{PARALLEL[section]}={envs // per}", f"{section}.updates_per_chunk={updates}",
               f"{section}.total_updates={updates}"]  # fmt: skip
    return load_run_config(path, [*sets, *changes])


def measure(path: str, envs: int, updates: int, repeats: int, sets: list[str], learner_name: str | None):
    system, cfg = sized(path, envs, updates, sets)
    learner = system.learner
    name = learner_name or learner.names(cfg)[0]
    with live(f"{cfg.name}: building the env and its banks"):
        env, train_params = learner.build(cfg)[:2]
    init, chunk = learner.programs(cfg, name, env)
    budget = learner.budget(cfg, name)
    with live(f"{envs} envs: initialising {cfg.num_seeds} seeds"):
        runner = jax.block_until_ready(init(seed_keys(cfg), train_params))
    with live(f"{envs} envs: compiling the training chunk"):
        compiled, cost = compile_cost(chunk, runner, train_params)
    with live(f"{envs} envs: a warm-up chunk and {repeats} timed chunks of {updates} updates"):
        runner, _ = jax.block_until_ready(compiled(runner, train_params))
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            runner, metrics = compiled(runner, train_params)
            jax.block_until_ready((runner, metrics))
            runs.append(time.perf_counter() - t0)
    run = statistics.median(runs)
    steps = cfg.num_seeds * budget.updates_per_chunk * budget.steps_per_update
    return {
        "config": path, "learner": name, "algorithm": algorithm_of(cfg), "envs": envs, "seeds": cfg.num_seeds,
        "updates": budget.updates_per_chunk, "env_steps_per_s": steps / run,
        "updates_per_s": cfg.num_seeds * budget.updates_per_chunk / run,
        "compile_s": cost["trace_s"] + cost["lower_s"] + cost["compile_s"], "chunk_program": cost,
        "runner_bytes": tree_bytes(runner), "runs_s": runs, **platform_info(),
    }  # fmt: skip


def footprint_table(records: list[dict]) -> str:
    """Markdown: per config, the chunk's compile stages at its smallest count, and its working set as a
    line in the parallel envs per seed (through the two largest counts) with what fits in 24 GiB."""
    rows = [
        "| config (learner) | envs × seeds | chunk trace + lower + compile (s) | working set (MiB) "
        "| per env (KiB) + fixed (MiB) | envs per seed in 24 GiB |",
        "|---|---|---|---|---|---|",
    ]
    by_config: dict[str, list[dict]] = {}
    for r in records:
        by_config.setdefault(r["config"], []).append(r)
    for config, recs in by_config.items():
        recs = sorted(recs, key=lambda r: r["envs"])
        small, large = recs[-2:]
        fixed, per_env = memory_line(
            (small["envs"], small["chunk_program"]["working_bytes"]),
            (large["envs"], large["chunk_program"]["working_bytes"]),
        )
        for r in recs:
            c = r["chunk_program"]
            rows.append(
                f"| {config} ({r['learner']}) | {r['envs']:,} × {r['seeds']} | {c['trace_s']:.1f} + "
                f"{c['lower_s']:.1f} + {c['compile_s']:.1f} | {c['working_bytes'] / 2**20:,.1f} | "
                f"{per_env / 1024:,.1f} + {fixed / 2**20:,.1f} | "
                f"{largest_batch(fixed, per_env, CAPACITIES['cpu_24GiB']):,} |"
            )
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", nargs="?", help="a training config (configs/<kind>/*.yaml)")
    p.add_argument("--envs", default="16,64,256,1024", help="parallel envs per seed, comma-separated")
    p.add_argument("--updates", type=int, default=2, help="updates per timed chunk")
    p.add_argument("--repeats", type=int, default=3, help="timed chunks per count (the median is reported)")
    p.add_argument("--learner", default=None, help="which of the config's learners (default: its first)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    p.add_argument("--json", default=None, help="write the records here")
    p.add_argument("--table", default=None, metavar="JSON", help="print a records file's compile and memory "
                   "table as markdown, and stop")  # fmt: skip
    a = p.parse_args()
    if a.table:
        print(footprint_table(json.loads(Path(a.table).read_text())))
        return
    if a.config is None:
        p.error("a config is required (or --table JSON)")
    records = []
    for envs in (int(n) for n in a.envs.split(",")):
        rec = measure(a.config, envs, a.updates, a.repeats, a.set, a.learner)
        records.append(rec)
        print(
            f"{rec['config']} {rec['learner']}: {envs:>5} envs × {rec['seeds']} seeds  "
            f"{rec['env_steps_per_s']:>12,.0f} env steps/s  {rec['updates_per_s']:8.2f} updates/s  "
            f"compile {rec['compile_s']:.1f} s  ({rec['device']}, {rec['cpu']})",
            flush=True,
        )
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()
