"""Collect trained Deep Back-Filling runs into the paper's comparison: a markdown table of the agents
(per window split) against the heuristic baselines on the same held-out episodes, the Fig. 5-style plot
(average wait and queue length against tail size per window size) and each run's learning curve.

    jaxsched report runs/dbf_cpu_m10_9_1 runs/dbf_cpu_m10_10_0 --out docs/results/dbf

Agents are reported as mean ± std over seeds of each seed's mean over the held-out episodes (the spread a
new training run would show); heuristics, which have no seed, as mean ± std over episodes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from jaxsched.experiments.config import load_yaml
from jaxsched.experiments.paper import Column, methods_table
from jaxsched.experiments.plots import plot_split_sweep
from jaxsched.experiments.report import claim_table_lines
from jaxsched.experiments.stats import claim_verdict
from jaxsched.systems.dbf.config import dbf_config_from_dict
from jaxsched.systems.dbf.metrics import HPC_METRICS

HELP = "DBF runs vs baselines: markdown table, Fig. 5-style plot, learning curves"


def _run(run_dir: Path) -> tuple[object, dict]:
    cfg_path, eval_path = run_dir / "config.yaml", run_dir / "eval.json"
    for p in (cfg_path, eval_path):
        if not p.is_file():
            raise ValueError(
                f"{run_dir}: no {p.name}; train and evaluate the run first (jaxsched train / eval)"
            )
    return dbf_config_from_dict(load_yaml(cfg_path), cfg_path), json.loads(eval_path.read_text())


def _seed_stats(entry: dict) -> dict:
    """`{mean, std}` over a learner's per-seed means."""
    per_seed = np.asarray(entry.get("per_seed") or [entry["mean"]], np.float64)
    return {"mean": float(per_seed.mean()), "std": float(per_seed.std())}


def split_report(run_dirs, out_dir) -> str:
    """Write `table.md`, `split.png` and `<run>_learning_curve.png` under `out_dir`; return the table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [_run(Path(d)) for d in run_dirs]
    if not runs:
        raise ValueError("report: give at least one run directory")
    stats, sweep = {}, {}
    for (cfg, result), run_dir in zip(runs, run_dirs, strict=True):
        m, tail = cfg.env.window, cfg.env.tail
        label = f"DBF M={m} ({m - tail} head + {tail} tail), {cfg.num_seeds} seeds"
        stats[label] = {k: _seed_stats(v) for k, v in result["agent"].items()}
        sweep[(m, tail)] = {k: tuple(stats[label][k].values()) for k in ("avg_wait", "avg_queue_len")}
        curve = Path(run_dir) / "learning_curve.png"
        if curve.is_file():
            shutil.copy(curve, out / f"{cfg.name}_learning_curve.png")
    stats |= {_baseline_label(n): e for n, e in runs[0][1].items() if n != "agent"}
    columns = [Column(m.header, m.key, fmt=m.fmt) for m in HPC_METRICS]
    lines, _ = methods_table({"": stats}, columns, first="policy")
    lines += ["", *claim_lines(split_claims(runs))]
    table = "\n".join(lines) + "\n"
    (out / "table.md").write_text(table)
    plot_split_sweep(sweep, out / "split.png")
    return table


NO_PAIRS = "no per-episode values: re-run eval"
CLAIM_METRICS = ("avg_wait", "avg_queue_len")  # the paper's Fig. 4 and 5 claims are on waits and queues


def _baseline_label(name: str) -> str:
    return name.replace("_easy", " + easy").upper()  # fcfs_easy -> FCFS + EASY


def _run_label(cfg) -> str:
    return f"DBF {cfg.env.window - cfg.env.tail} + {cfg.env.tail}"


def split_claims(runs) -> list[dict]:
    """The paper's claims on these runs, per metric of `CLAIM_METRICS`, paired by held-out episode
    (`per_episode`, each agent's mean over its seeds): a split window beats the head-only window of the
    same size (§IV-D), and DBF with a split window beats each back-filling heuristic (§IV-C). A pair
    whose results have no `per_episode` (evaluated before it was stored) gets the verdict `NO_PAIRS`."""
    split = [(cfg, r) for cfg, r in runs if cfg.env.tail > 0]
    head = {cfg.env.window: (cfg, r) for cfg, r in runs if cfg.env.tail == 0}
    pairs = []
    for cfg, r in split:
        if cfg.env.window in head:
            hcfg, hr = head[cfg.env.window]
            pairs.append((_run_label(cfg), r["agent"], _run_label(hcfg), hr["agent"]))
        for name, entry in r.items():
            if name.endswith("_easy"):
                pairs.append((_run_label(cfg), r["agent"], _baseline_label(name), entry))
    out = []
    for lower, a, higher, b in pairs:
        for metric in CLAIM_METRICS:
            rec = {"lower": lower, "higher": higher, "metric": metric}
            ea, eb = a[metric].get("per_episode"), b[metric].get("per_episode")
            if ea is None or eb is None or len(ea) != len(eb):
                out.append({**rec, "verdict": NO_PAIRS})
            else:
                out.append({**rec, **claim_verdict(ea, eb)})
    return out


def claim_lines(claims: list[dict]) -> list[str]:
    title = "The paper's claims, paired by held-out episode (agents: mean over seeds; exact Wilcoxon, α 0.05)"
    rows = claim_table_lines(
        claims, lambda c: f"{c['lower']} < {c['higher']}", before=(("metric", lambda c: c["metric"]),)
    )
    return [title, "", *rows]


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", help="trained and evaluated run directories (out_dir/name)")
    parser.add_argument("--out", required=True, help="folder for table.md, split.png and learning curves")


def run_from_args(args) -> int:
    print(split_report(args.runs, args.out))
    print(f"written to {args.out}/")
    return 0
