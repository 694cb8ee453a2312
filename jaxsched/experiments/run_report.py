"""`jaxsched report CONFIG`: where the runs of a config stand, for every system alike.

For each trained run of the config (`System.run_dirs(cfg)`: DBF has one, DAS one per variant) it reads
what the shared trainer and the system's evaluator wrote — `metrics.jsonl` and, once evaluated,
`eval.json` — and prints

  * the training table: updates done, env steps, wall time, and the system's metrics over the last tenth
    of the updates (mean over the episodes that ended there, every seed; reaching back to the last update
    in which one ended);
  * each evaluated run's held-out results beside the baselines evaluated with it (mean ± std, with what
    the ± spans as the evaluator wrote it);

and redraws every run's learning curves (`learning_curve.png` in its run directory) from its metrics so far.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from jaxsched.experiments.plots import plot_learning_curves
from jaxsched.experiments.report import print_metric_table
from jaxsched.experiments.train import (
    CURVE_FILE,
    EVAL_FILE,
    METRICS_FILE,
    read_metrics,
    weighted_episode_mean,
)

TAIL = 0.1  # the share of the last updates the training table averages over
# What the ± of an eval.json spans: both evaluators write the std over every (seed, episode) value.
SPREAD = "± = std over every (seed, episode) pair of the held-out episodes"


def training_row(records: list[dict], metrics) -> dict:
    """`{updates, env_steps, wall_s, metric: mean}` of one run's `metrics.jsonl` records: the metrics
    over the last `TAIL` of the updates, reaching back to the last update in which an episode ended if
    none did there (weighted by the episodes each update finished; NaN if no episode ended at all)."""
    if not records:
        return {}
    start = len(records) - max(1, round(TAIL * len(records)))
    ended = [i for i, r in enumerate(records) if _episodes(r)]
    tail = records[min(start, ended[-1]) if ended else start :]
    row = {"updates": records[-1]["update"], "env_steps": records[-1]["env_steps"],
           "wall_s": records[-1]["wall_s"]}  # fmt: skip
    for m in metrics:
        if m.key in tail[-1]:
            row[m.key] = weighted_episode_mean(tail, m.key)
    return row


def _episodes(record: dict) -> int:
    """Episodes that ended in an update's record, over every seed."""
    eps = record["episodes"]
    return sum(eps) if isinstance(eps, list) else eps


def eval_rows(path: Path) -> dict:
    """`{policy: {metric: (mean, std)}}` from an `eval.json` of either layout: `{policy: {metric: {mean,
    std, ...}}}` or one learner's `{"results": {metric: {...}}, ...}` (named by its `variant`)."""
    payload = json.loads(path.read_text())
    if "results" in payload:
        payload = {payload.get("variant", path.parent.name): payload["results"]}
    return {
        name: {k: (v["mean"], v["std"]) for k, v in res.items() if isinstance(v, dict) and "mean" in v}
        for name, res in payload.items()
        if isinstance(res, dict)
    }


def report(system, cfg, console: Console | None = None) -> dict:
    """Print the training and evaluation tables of `cfg`'s runs and draw their learning curves; returns
    `{run label: {"training": row, "eval": rows}}`. A run evaluated alone (a learner's own `eval.json`)
    shows the baselines of the config's evaluation beside it; no trained run is a `FileNotFoundError`
    naming where it looked."""
    console = console or Console(width=160)
    runs = system.run_dirs(cfg)
    combined = cfg.run_dir / EVAL_FILE  # `jaxsched eval`'s: every learner and the baselines beside them
    out: dict = {}
    table = Table(title=f"{cfg.name} ({system.kind}): training, last {TAIL:.0%} of the updates")
    for col in ("run", "updates", "env steps", "wall (s)", *(m.header for m in system.metrics)):
        table.add_column(col, justify="left" if col == "run" else "right")
    curves = []
    for label, run_dir in runs.items():
        records = read_metrics(run_dir)
        row = training_row(records, system.metrics)
        out[label] = {"training": row}
        if not row:
            table.add_row(label, "not trained", *[""] * (len(system.metrics) + 2))
            continue
        cells = [f"{row[m.key]:{m.fmt}}" if m.key in row else "—" for m in system.metrics]
        table.add_row(label, str(row["updates"]), f"{row['env_steps']:,}", f"{row['wall_s']:.0f}", *cells)
        curves.append((label, run_dir, records))
        if (run_dir / EVAL_FILE).is_file():
            out[label]["eval"] = eval_rows(run_dir / EVAL_FILE)
            if len(out[label]["eval"]) == 1 and combined.is_file():  # a learner's own record (DAS's)
                out[label]["eval"] |= {p: r for p, r in eval_rows(combined).items() if p not in runs}
    if not curves:
        looked = ", ".join(str(d / METRICS_FILE) for d in runs.values())
        raise FileNotFoundError(
            f"no run of {cfg.name} has trained yet (looked for {looked}): jaxsched train CONFIG, or give "
            "the --out-dir and --name it was trained with"
        )
    console.print(table)
    for label, rows in ((k, v["eval"]) for k, v in out.items() if "eval" in v):
        metrics = [m for m in system.metrics if all(m.key in r for r in rows.values())]
        print_metric_table(rows, metrics, title=f"{label}: held-out evaluation ({SPREAD})")
    for label, run_dir, records in curves:
        keys = tuple(m.key for m in system.metrics if m.key in records[-1])[:3] + ("episode_return",)
        title = (cfg.name if label == cfg.name else f"{cfg.name}: {label}") + " (mean ± std over seeds)"
        labels = getattr(system.learner, "labels", None)
        png = plot_learning_curves(records, run_dir / CURVE_FILE, keys, title=title, labels=labels)
        console.print(f"learning curves: {png}")
    return out
