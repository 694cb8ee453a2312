"""Env steps/s of the HPC (Deep Back-Filling), GPU-cloud (DAS) and GPU-locality (SCED²) envs: random
(valid) actions, auto-reset on.

    python benchmarks/env_throughput.py --batches 1,64,1024,4096 --json results.json
    python benchmarks/env_throughput.py --env gpu_cloud --cluster small --batches 1024 --json das.json
    python benchmarks/env_throughput.py --env gpu_locality,gpu_locality_auto,hpc --batches 1024 --json F

`--env gpu_locality` is SCED²'s cluster at the paper's size (`jaxsched.make("sced2")`: 15 × 8 GPUs, a
10-job window) with `auto_forward` off: every forward is a step, as every Fwd is in the HPC env, so the two
count decisions alike. `gpu_locality_auto` turns it on (the training default): a step then also runs every
forward that offers no choice, so it does more work per decision. Several envs in one call also print
each one's decisions/s as a ratio of the HPC env's, measured in the same run.

A GPU-cloud step is one scheduling round (the DAS paper's decision) with its event-driven forward; with
`--max-forward-events K` a long forward continues in non-decision steps, and `decisions_per_s` counts
only the steps that decided. Timing starts after `--warmup` steps from reset.

Records: {"env", "batch", "steps_per_s" (median of --repeats runs), "compile_s", "reset_s", "device", ...}.
"""

from __future__ import annotations

import argparse
import functools
import json

import jaxsched
from jaxsched.experiments.throughput import default_gpu_cloud_setup, env_throughput, random_gpu_cloud_action

ENVS = ("hpc", "gpu_cloud", "gpu_locality", "gpu_locality_auto")


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
            act = random_gpu_cloud_action
            records += env_throughput(batches, a.steps, a.repeats, None, setup, act, warmup)
        else:
            auto = name == "gpu_locality_auto"
            setup = functools.partial(jaxsched.make, "sced2", episodes=16, auto_forward=auto)
            warmup = 1024 if a.warmup is None else a.warmup
            new = env_throughput(batches, a.steps, a.repeats, None, setup, warmup_steps=warmup)
            records += [r | {"env": name, "auto_forward": auto} for r in new]
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
