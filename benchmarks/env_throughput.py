"""Env steps/s of the HPC (Deep Back-Filling) env and the GPU-cloud (DAS) env: random (valid) actions,
auto-reset on.

    python benchmarks/env_throughput.py --batches 1,64,1024,4096 --json results.json
    python benchmarks/env_throughput.py --env gpu_cloud --cluster small --batches 1024 --json das.json

A GPU-cloud step is one scheduling round (the DAS paper's decision) with its event-driven forward; with
`--max-forward-events K` a long forward continues in non-decision steps, and `decisions_per_s` counts
only the steps that decided. Timing starts after `--warmup` steps from reset.

Records: {"env", "batch", "steps_per_s" (median of --repeats runs), "compile_s", "reset_s", "device", ...}.
"""

from __future__ import annotations

import argparse
import functools

from jaxsched.experiments.throughput import default_gpu_cloud_setup, env_throughput, random_gpu_cloud_action


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=256, help="scan length per timed run")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per batch (median reported)")
    p.add_argument("--json", default=None, help="write records here")
    p.add_argument("--env", choices=("hpc", "gpu_cloud"), default="hpc")
    p.add_argument("--cluster", choices=("small", "medium", "large"), default="small", help="gpu_cloud size")
    p.add_argument("--max-forward-events", type=int, default=None, help="gpu_cloud: forward events per call")
    p.add_argument(
        "--warmup", type=int, default=None, help="steps before timing (default: 0 hpc, 1024 gpu_cloud)"
    )
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    if a.env == "hpc":
        env_throughput(batches, a.steps, a.repeats, a.json, warmup_steps=a.warmup or 0)
    else:
        setup = functools.partial(default_gpu_cloud_setup, a.cluster, max_forward_events=a.max_forward_events)
        warmup = 1024 if a.warmup is None else a.warmup
        env_throughput(batches, a.steps, a.repeats, a.json, setup, random_gpu_cloud_action, warmup)


if __name__ == "__main__":
    main()
