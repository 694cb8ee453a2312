"""Env steps/s of the HPC (Deep Back-Filling) env and the GPU-cloud (DAS) env: random (valid) actions,
auto-reset on.

    python benchmarks/env_throughput.py --batches 1,64,1024,4096 --json results.json
    python benchmarks/env_throughput.py --env gpu_cloud --cluster small --batches 1024 --json das.json

A GPU-cloud step is one scheduling round (the DAS paper's decision) with its event-driven forward.

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
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    if a.env == "hpc":
        env_throughput(batches, a.steps, a.repeats, a.json)
    else:
        setup = functools.partial(default_gpu_cloud_setup, a.cluster)
        env_throughput(batches, a.steps, a.repeats, a.json, setup, random_gpu_cloud_action)


if __name__ == "__main__":
    main()
