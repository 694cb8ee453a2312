"""Reduce a DBF `eval.json` written before the evaluator pinned its windows to the distinct windows it played.

    python scripts/dbf_distinct_windows.py RUN_DIR [RUN_DIR ...] --out DIR

Until commit 0f413b0 `jaxsched eval` gave each of its `eval.episodes` keys to the env's reset, which drew a
held-out window at random, with replacement: the 32 keys of the shipped configs play 18 distinct windows of
the 32, some up to four times. Every policy saw the same draws, so the per-draw values pair correctly, but a
paired test over the draws counts a window as several pairs. This recomputes, from the run's config, the
window each draw played (the evaluator's own keys and the reset's draw), checks that equal windows gave
equal values (the env and the greedy policies are deterministic), and writes `DIR/<run>/` with the run's
`config.yaml`, `learning_curve.png` and an `eval.json` in which:

  * `per_episode` holds one value per distinct window, in window order, and `windows` lists them;
  * a heuristic's `mean` and `std` are over those windows; the agent's `mean` is the mean of its
    per-window values (its seeds' mean), while `std` and `per_seed` stay as recorded (over the draws:
    the per-seed values of each draw were not stored).

`jaxsched table dbf DIR/<run> ...` then pairs the claims by distinct window. Runs evaluated since 0f413b0
need none of this: each window is played once.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import jax
import numpy as np

from jaxsched.core.keys import EVAL_TAG, purpose_key
from jaxsched.systems import load_run_config


def drawn_windows(cfg) -> list[int]:
    """The test window each of the old evaluator's keys played: `run_episode` splits the key and the
    reset draws `randint(k_reset, (), 0, S)` over the S test windows."""
    keys = jax.random.split(purpose_key(cfg.eval.seed, EVAL_TAG), cfg.eval.episodes)
    n = cfg.workload.test_episodes
    return [int(jax.random.randint(jax.random.split(k)[0], (), 0, n)) for k in keys]


def distinct(entry: dict, windows: list[int], is_agent: bool) -> dict:
    values = np.asarray(entry["per_episode"], np.float64)
    by_window: dict[int, float] = {}
    for w, v in zip(windows, values, strict=True):
        if w in by_window and not np.isclose(by_window[w], v, rtol=1e-6):
            raise ValueError(f"window {w} gave {by_window[w]} and {v}: not the old evaluator's draws")
        by_window.setdefault(w, float(v))
    order = sorted(by_window)
    per = np.array([by_window[w] for w in order])
    out = dict(entry, per_episode=per.tolist(), windows=order, mean=float(per.mean()))
    if not is_agent:
        out.update(std=float(per.std()), per_seed=[float(per.mean())])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="run directories with config.yaml and eval.json")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    for run in map(Path, a.runs):
        _, cfg = load_run_config(str(run / "config.yaml"), [])
        windows = drawn_windows(cfg)
        results = json.loads((run / "eval.json").read_text())
        reduced = {
            policy: {m: distinct(e, windows, policy == "agent") for m, e in metrics.items()}
            for policy, metrics in results.items()
        }
        dst = Path(a.out) / run.name
        dst.mkdir(parents=True, exist_ok=True)
        for name in ("config.yaml", "learning_curve.png"):
            if (run / name).exists():
                shutil.copy(run / name, dst / name)
        (dst / "eval.json").write_text(json.dumps(reduced, indent=2))
        print(f"{run.name}: {len(windows)} draws, {len(set(windows))} distinct windows -> {dst}")


if __name__ == "__main__":
    main()
