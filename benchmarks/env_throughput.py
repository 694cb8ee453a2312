"""Env steps/s of the HPC (Deep Back-Filling), GPU-cloud (DAS) and GPU-locality (SCED²) envs: random
(valid) actions, auto-reset on.

    python benchmarks/env_throughput.py --batches 1,64,1024,4096 --json results.json
    python benchmarks/env_throughput.py --env gpu_cloud --cluster small --batches 1024 --json das.json
    python benchmarks/env_throughput.py --env gpu_locality,gpu_locality_auto,hpc --batches 1024 --json F
    python benchmarks/env_throughput.py --env dag,hpc --batches 1024 --json F
    python benchmarks/env_throughput.py --env deferrable,hpc --batches 1024 --json F

`--env gpu_locality` is SCED²'s cluster at the paper's size (`jaxsched.make("sced2")`: 15 × 8 GPUs, a
10-job window) with `auto_forward` off: every forward is a step, as every Fwd is in the HPC env, so the two
count decisions alike. `gpu_locality_auto` turns it on (the training default): a step then also runs every
forward that offers no choice, so it does more work per decision. Several envs in one call also print
each one's decisions/s as a ratio of the HPC env's, measured in the same run.

A GPU-cloud step is one scheduling round (the DAS paper's decision) with its event-driven forward; with
`--max-forward-events K` a long forward continues in non-decision steps, and `decisions_per_s` counts
only the steps that decided. Timing starts after `--warmup` steps from reset.

`--env dag` is the idle-slot DAG cluster in Decima's streaming TPC-H setting (`jaxsched.make("dag")`: 50
executors, TPC-H-like DAGs, moving and warm-up delays on) with random valid actions (stage, limit, idle
slot); a step runs at most `--dag-max-events` event times (default 1, the registered presets' cap), so some
steps only continue a forward: `decisions_per_s` counts the others, `events_per_s` the event times processed.

`--env deferrable` is OSDEC's deferrable-job cloud (`jaxsched.make("osdec")`: 64 pending slots, 48-step
episodes of the default preset) with random scores for every pending slot; one step is one time step, the
paper's decision.

`--reference` (with `--env hpc`) also times the plain-Python reference simulator of the tests
(`tests/reference/hpc.py`: Python lists, float64, the same observation) on one env of the same bank with
random valid actions, and prints the JAX env's steps/s as a multiple of it, both measured in this run.

Records: {"env", "batch", "steps_per_s" (median of --repeats runs), "compile_s", "reset_s", "device", ...}.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import jaxsched
from jaxsched.experiments.throughput import (
    default_gpu_cloud_setup,
    default_hpc_setup,
    env_throughput,
    platform_info,
    random_action,
)

ENVS = ("hpc", "gpu_cloud", "gpu_locality", "gpu_locality_auto", "dag", "deferrable")


def reference_hpc_throughput(steps: int, repeats: int, seed: int = 0) -> dict:
    """Steps/s of `tests/reference/hpc.py`'s `RefHPC` on the benchmark's bank (one env, random valid
    actions, a new random episode whenever one ends): the median of `repeats` runs of `steps` steps."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from reference.hpc import RefHPC

    env, params = default_hpc_setup()
    cfg = env.config
    ref = RefHPC(
        cfg.n_cores, cfg.window_head, cfg.window_tail, cfg.queue_capacity, params.bank,
        episode_jobs=int(params.episode_jobs), max_steps=int(params.max_steps),
        w=(float(params.w1), float(params.w2), float(params.w3)),
        runtime_norm=float(params.runtime_norm), wait_norm=float(params.wait_norm),
    )  # fmt: skip
    starts, ends = np.asarray(params.starts), np.asarray(params.ends)
    rng = np.random.default_rng(seed)

    def new_episode():
        ep = int(rng.integers(len(starts)))
        return ref.reset(int(starts[ep]), int(ends[ep]))[1]

    mask = new_episode()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            _, mask, _, terminated, truncated = ref.step(rng.choice(np.flatnonzero(mask)))
            if terminated or truncated:
                mask = new_episode()
        times.append(time.perf_counter() - t0)
    run = statistics.median(times)
    return {"env": "hpc_reference", "batch": 1, "steps": steps, "steps_per_s": steps / run,
            "runs_s": times, **platform_info()}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=256, help="scan length per timed run")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per batch (median reported)")
    p.add_argument("--json", default=None, help="write records here")
    p.add_argument(
        "--env", default="hpc", help="hpc, gpu_cloud, gpu_locality, or several comma-separated (one run)"
    )
    p.add_argument("--cluster", choices=("small", "medium", "large"), default="small", help="gpu_cloud size")
    p.add_argument("--max-forward-events", type=int, default=None, help="gpu_cloud: forward events per call")
    p.add_argument(
        "--warmup", type=int, default=None, help="steps before timing (default: 0 hpc, 1024 gpu_cloud)"
    )
    p.add_argument("--dag-max-events", default="1", help="dag: event times per step (an int or None)")
    p.add_argument(
        "--reference", action="store_true", help="hpc: also time the plain-Python reference (tests/reference)"
    )
    p.add_argument("--reference-steps", type=int, default=20_000, help="reference steps per timed run")
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    envs = a.env.split(",")
    unknown = sorted(set(envs) - set(ENVS))
    if unknown:
        p.error(f"--env: unknown {', '.join(unknown)}; choose from {', '.join(ENVS)}")
    records = []
    for name in envs:
        if name == "hpc":
            records += env_throughput(batches, a.steps, a.repeats, warmup_steps=a.warmup or 0)
        elif name == "gpu_cloud":
            mfe = a.max_forward_events
            setup = functools.partial(default_gpu_cloud_setup, a.cluster, max_forward_events=mfe)
            warmup = 1024 if a.warmup is None else a.warmup
            act = random_action(setup()[0])
            records += env_throughput(batches, a.steps, a.repeats, None, setup, act, warmup)
        elif name == "dag":
            cap = None if a.dag_max_events == "None" else int(a.dag_max_events)
            setup = functools.partial(jaxsched.make, "dag", max_events=cap)
            warmup = 256 if a.warmup is None else a.warmup
            act = random_action(setup()[0])
            new = env_throughput(batches, a.steps, a.repeats, None, setup, act, warmup)
            records += [r | {"max_events": cap} for r in new]
        elif name == "deferrable":
            from jaxsched.policies.deferrable import make_heuristic as deferrable_heuristic

            setup = functools.partial(jaxsched.make, "osdec")
            random_policy = deferrable_heuristic(setup()[0], "random")
            act = functools.partial(lambda policy, key, obs: policy(None, obs, key), random_policy)
            new = env_throughput(batches, a.steps, a.repeats, None, setup, act, a.warmup or 0)
            records += [r | {"env": "deferrable"} for r in new]
        else:
            auto = name == "gpu_locality_auto"
            setup = functools.partial(jaxsched.make, "sced2", episodes=16, auto_forward=auto)
            warmup = 1024 if a.warmup is None else a.warmup
            new = env_throughput(batches, a.steps, a.repeats, None, setup, warmup_steps=warmup)
            records += [r | {"env": name, "auto_forward": auto} for r in new]
    if a.reference:
        if "hpc" not in envs:
            p.error("--reference times the HPC env's reference: add hpc to --env")
        ref = reference_hpc_throughput(a.reference_steps, a.repeats)
        records.append(ref)
        print(f"hpc reference (plain Python, 1 env): {ref['steps_per_s']:,.0f} steps/s")
        for r in records:
            if r["env"] == "hpc":
                ratio = r["steps_per_s"] / ref["steps_per_s"]
                print(f"batch {r['batch']}: hpc / reference steps per s = {ratio:.1f}")
    if len(envs) > 1:  # ratios measured in one run, on one machine
        for batch in batches:
            rate = {r["env"]: r["decisions_per_s"] for r in records if r["batch"] == batch}
            base = rate.get("hpc")
            for env, value in rate.items():
                if base and env != "hpc":
                    print(f"batch {batch}: {env} / hpc decisions per s = {value / base:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=2)


if __name__ == "__main__":
    main()
