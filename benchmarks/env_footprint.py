"""Compile time and memory of every registered env's first `reset` and `step` under `jit(vmap)`.

    python benchmarks/env_footprint.py --batches 256,1024 --json docs/results/envs/footprint_cpu.json
    python benchmarks/env_footprint.py --env dag,dbf --batches 1024,4096

For each env (`jaxsched.make(name)`, its embedded default workload) and each batch: `reset` over the batch
and one `step` with the env's `random` heuristic's actions, each traced, lowered and compiled once
(`experiments.footprint.compile_cost`: seconds per stage, the compiled program's bytes), with the params
an argument (shared by the batch, `in_axes=None`), as a user's program passes them. Then the step's
working set as `fixed + per_env × batch` through the two largest batches, and the largest batch that fits
in 24 GiB of CPU memory and in one H200's 141 GB by that line (the CPU program's figure: a GPU's own
buffers differ; run the same command there).

Records: one per env and batch {"env", "batch", "reset": {...}, "step": {...}, "state_bytes_per_env",
"obs_bytes_per_env", ...platform}, then one per env {"env", "fit": {"fixed_bytes", "per_env_bytes",
"largest_batch": {capacity: batch}}}. Nothing is read from a persistent compilation cache (JAX's is off
unless the environment sets `JAX_COMPILATION_CACHE_DIR`: unset it for this benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import jax

import jaxsched
from jaxsched.experiments.footprint import CAPACITIES, compile_cost, largest_batch, memory_line, tree_bytes
from jaxsched.experiments.live import live
from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import platform_info, random_action


def measure(name: str, env, params, batch: int, seed: int = 0) -> dict:
    """One record: `env`'s (registered as `name`) reset and step compiled for `batch` envs."""
    keys = jax.random.split(jax.random.key(seed), batch)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    with live(f"{name} batch {batch}: compiling reset"):
        reset_c, reset_rec = compile_cost(reset, keys, params)
        obs, state = reset_c(keys, params)
    actions = jax.jit(jax.vmap(random_action(env)))(keys, obs)
    with live(f"{name} batch {batch}: compiling step"):
        step_c, step_rec = compile_cost(step, keys, state, actions, params)
        jax.block_until_ready(step_c(keys, state, actions, params))  # it runs
    return {
        "env": name,
        "batch": batch,
        "reset": reset_rec,
        "step": step_rec,
        "state_bytes_per_env": tree_bytes(state) / batch,
        "obs_bytes_per_env": tree_bytes(obs) / batch,
        "params_bytes": tree_bytes(params),
        **platform_info(),
    }


def stage_seconds(rec: dict) -> float:
    """Trace + lower + compile seconds of one `compile_cost` record."""
    return rec["trace_s"] + rec["lower_s"] + rec["compile_s"]


def fit(records: list[dict]) -> dict:
    """The step's working-set line through the two largest batches of one env, and what fits."""
    small, large = sorted(records, key=lambda r: r["batch"])[-2:]
    fixed, per_env = memory_line(
        (small["batch"], small["step"]["working_bytes"]), (large["batch"], large["step"]["working_bytes"])
    )
    return {
        "env": large["env"],
        "fit": {
            "batches": [small["batch"], large["batch"]],
            "fixed_bytes": fixed,
            "per_env_bytes": per_env,
            "largest_batch": {k: largest_batch(fixed, per_env, c) for k, c in CAPACITIES.items()},
        },
    }


def table(records: list[dict]) -> str:
    """The markdown table of a records file: one row per env, at its largest measured batch."""
    rows = [
        "| env | batch | reset compile (s) | step trace + lower + compile (s) | state (KiB/env) "
        "| step working set (KiB/env + MiB) | fits in 24 GiB | fits in an H200 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fits = {r["env"]: r["fit"] for r in records if "fit" in r}
    for r in records:
        if "fit" in r or r["batch"] != fits[r["env"]]["batches"][0]:
            continue  # one row per env, at the line's first batch (the 1,024)
        st, line = r["step"], fits[r["env"]]
        rows.append(
            f"| {r['env']} | {r['batch']:,} | {stage_seconds(r['reset']):.1f} | {st['trace_s']:.1f} + "
            f"{st['lower_s']:.1f} + {st['compile_s']:.1f} | {r['state_bytes_per_env'] / 1024:,.1f} | "
            f"{line['per_env_bytes'] / 1024:,.1f} + {line['fixed_bytes'] / 2**20:,.1f} | "
            f"{line['largest_batch']['cpu_24GiB']:,} | {line['largest_batch']['h200_141GB']:,} |"
        )
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default=None, help="comma-separated registered names (default: all)")
    p.add_argument("--batches", default="256,1024", help="batch sizes, comma-separated (two or more)")
    p.add_argument("--json", default=None, help="write the records here")
    p.add_argument("--table", default=None, metavar="JSON", help="print a records file as markdown, and stop")
    a = p.parse_args()
    if a.table:
        print(table(json.loads(Path(a.table).read_text())))
        return
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        sys.exit(
            "env_footprint: JAX_COMPILATION_CACHE_DIR is set; unset it, or compile times are cache loads"
        )
    names = a.env.split(",") if a.env else list(jaxsched.registered())
    batches = [int(b) for b in a.batches.split(",")]
    if len(batches) < 2:
        sys.exit("env_footprint: --batches needs two or more sizes (the memory line's two points)")
    records = []
    for name in names:
        env, params = jaxsched.make(name)  # built once: every batch size shares the workload
        per_env = [measure(name, env, params, b) for b in batches]
        records += [*per_env, fit(per_env)]
        for r in per_env:
            st = r["step"]
            print(
                f"{name:>14} batch {r['batch']:>6}: reset {stage_seconds(r['reset']):5.1f} s, step "
                f"{st['trace_s']:4.1f} trace + {st['lower_s']:4.1f} lower + "
                f"{st['compile_s']:5.1f} compile s; "
                f"state {r['state_bytes_per_env'] / 1024:,.1f} KiB/env",
                flush=True,
            )
        line = records[-1]["fit"]
        print(
            f"{name:>14} step working set {line['per_env_bytes'] / 1024:,.1f} KiB/env + "
            f"{line['fixed_bytes'] / 2**20:,.1f} MiB: fits {line['largest_batch']['cpu_24GiB']:,} envs in "
            f"24 GiB, {line['largest_batch']['h200_141GB']:,} in an H200",
            flush=True,
        )
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()
