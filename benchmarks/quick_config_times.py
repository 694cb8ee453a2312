"""What a new user waits for: the wall time of `jaxsched train` on every quick config and of `jaxsched demo`,
each in a fresh process with no compilation cache (compilation included), as the configs' comments and the
README state them. Run it on an idle machine; the stated times must hold within 25 %.

    python benchmarks/quick_config_times.py --repeats 1 --json docs/results/quick_config_times.json

Records: {"command", "wall_s" (median), "runs_s", "cpu", "cpu_count", "jax", "date"}.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import tempfile
import time

from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import cpu_model

COMMANDS = [
    *(["jaxsched", "train", f"configs/{k}/quick.yaml"] for k in ("dbf", "sced2", "osdec", "dag", "das")),
    ["jaxsched", "demo"],
]


def wall(command: list[str], out_dir: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    extra = ["--out-dir", out_dir] if command[1] == "train" else []
    t0 = time.perf_counter()
    subprocess.run([*command, *extra], check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import jax

    records = []
    for command in COMMANDS:
        runs = []
        for _ in range(a.repeats):
            with tempfile.TemporaryDirectory() as out_dir:
                runs.append(wall(command, out_dir))
        records.append({"command": " ".join(command), "wall_s": statistics.median(runs), "runs_s": runs,
                        "cpu": cpu_model(), "cpu_count": os.cpu_count(), "jax": jax.__version__,
                        "date": datetime.date.today().isoformat()})  # fmt: skip
        print(f"{records[-1]['command']:45s} {records[-1]['wall_s']:6.1f} s", flush=True)
    if a.json:
        write_json(a.json, records)


if __name__ == "__main__":
    main()
