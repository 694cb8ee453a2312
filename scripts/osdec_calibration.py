"""The deferrable cloud's calibration check: FIFO, SJF, Tetris and random on the registered `osdec` and
`osdec-realtime` envs (the same jobs and capacity in both settings), the same episode keys for each, and the
ratios the paper's Tables 1–2 give (docs/osdec.md, "Calibration").

    python scripts/osdec_calibration.py --episodes 64 --json docs/results/osdec/calibration.json
"""

from __future__ import annotations

import argparse
import json
import platform

import jax
import numpy as np

import jaxsched
from jaxsched.experiments.evaluate import evaluate_policies
from jaxsched.policies import make_heuristic

PAPER = {"sjf/fifo": 3386.66 / 3602.45, "tetris/fifo": 3689.65 / 3602.45,
         "realtime/deferrable": {"fifo": 3449.22 / 3611.01, "sjf": 3298.38 / 3398.76,
                                 "tetris": 3503.01 / 3696.79}}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    keys = jax.random.split(jax.random.key(a.seed), a.episodes)
    means = {}
    for name in ("osdec", "osdec-realtime"):
        env, params = jaxsched.make(name, episodes=a.episodes, seed=a.seed)
        policies = {n: make_heuristic(env, n) for n in ("fifo", "sjf", "tetris", "random")}
        out = evaluate_policies(env, params, policies, keys)
        means[name] = {n: {k: float(np.mean(v)) for k, v in m.items()} for n, m in out.items()}
    d, rt = means["osdec"], means["osdec-realtime"]
    util = {n: d[n]["utilization"] for n in d}
    ratios = {
        "sjf/fifo": util["sjf"] / util["fifo"],
        "tetris/fifo": util["tetris"] / util["fifo"],
        "realtime/deferrable": {n: rt[n]["utilization"] / util[n] for n in d},
        "max_backlog": max(m["backlog"] for r in means.values() for m in r.values()),
    }
    for name, r in means.items():
        for n, m in r.items():
            print(f"{name:>15} {n:>7}: " + " ".join(f"{k}={v:.3f}" for k, v in m.items() if k != "return"))
    print("ours ", json.dumps(ratios))
    print("paper", json.dumps(PAPER))
    if a.json:
        record = {"means": means, "ratios": ratios, "paper": PAPER, "episodes": a.episodes, "seed": a.seed,
                  "cpu": platform.processor() or platform.machine()}  # fmt: skip
        with open(a.json, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
