"""Interleaved A/B of `env_throughput.py` between a base revision and the working tree: the base is
checked out in a temporary git worktree, and the two sides run in turn (`--rounds` times), each a fresh
process importing its own `jaxsched` (PYTHONPATH), so machine load drifts hit both alike.

    python benchmarks/ab_env_throughput.py --base HEAD~1 --json F -- --env dag --batches 1024 --steps 128

Everything after `--` goes to `env_throughput.py` (one `--env`, one batch). Records: {"base", "rounds",
"base_decisions_per_s", "work_decisions_per_s", "base_steps_per_s", "work_steps_per_s" and, where the env
counts event times (dag), "base_events_per_s", "work_events_per_s" (a run's median per round),
"ratio_median" (work / base, decisions/s, median over rounds), platform}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from jaxsched.experiments.report import write_json
from jaxsched.experiments.throughput import platform_info

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("decisions_per_s", "steps_per_s", "events_per_s")  # events_per_s: only envs that count event times


def run_side(tree: Path, args: list[str]) -> dict:
    """One `env_throughput.py` run from `tree` (its benchmark script and its package); its one record."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = os.environ | {"PYTHONPATH": str(tree)}
        cmd = [sys.executable, str(tree / "benchmarks" / "env_throughput.py"), *args, "--json", str(out)]
        subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        data = json.loads(out.read_text())
    records = data["records"] if isinstance(data, dict) else data
    if len(records) != 1:
        raise SystemExit(f"expected one record (one --env, one batch), got {len(records)}")
    return records[0]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", required=True, help="git revision to compare the working tree against")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the record here")
    p.add_argument("bench", nargs=argparse.REMAINDER, help="-- then env_throughput.py's arguments")
    a = p.parse_args(argv)
    bench = a.bench[1:] if a.bench[:1] == ["--"] else a.bench
    rev = subprocess.run(
        ["git", "rev-parse", "--short", a.base], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    sides: dict[str, list[dict]] = {"base": [], "work": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), rev], cwd=ROOT, check=True)
        try:
            for i in range(a.rounds):
                for name, tree in (("base", base), ("work", ROOT)):
                    r = run_side(tree, bench)
                    sides[name].append(r)
                    print(f"round {i + 1} {name}: {r['decisions_per_s']:,.0f} decisions/s", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    pairs = zip(sides["base"], sides["work"], strict=True)
    ratios = [w["decisions_per_s"] / b["decisions_per_s"] for b, w in pairs]
    record = {
        "command": "python benchmarks/ab_env_throughput.py " + " ".join(argv or sys.argv[1:]),
        "base": rev,
        "rounds": a.rounds,
        **{
            f"{s}_{k}": [round(r[k]) for r in runs] for s, runs in sides.items() for k in KEYS if k in runs[0]
        },
        "ratio_median": statistics.median(ratios),
        **platform_info(),
    }
    print(f"work / base decisions/s: {record['ratio_median']:.3f} (median of {a.rounds} rounds)")
    if a.json:
        write_json(a.json, record)


if __name__ == "__main__":
    main()
