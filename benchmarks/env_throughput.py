"""Env steps/s of the HPC (Deep Back-Filling) env: random valid actions, auto-reset on.

    python benchmarks/env_throughput.py --batches 1,64,1024,4096 --json results.json

Records: {"env", "batch", "steps_per_s" (median of --repeats runs), "compile_s", "reset_s", "device", ...}.
"""

from __future__ import annotations

import argparse

from jaxsched.experiments.throughput import env_throughput


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=256, help="scan length per timed run")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per batch (median reported)")
    p.add_argument("--json", default=None, help="write records here")
    a = p.parse_args()
    env_throughput([int(b) for b in a.batches.split(",")], a.steps, a.repeats, a.json)


if __name__ == "__main__":
    main()
