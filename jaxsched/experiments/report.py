"""Printing result tables (rich) and writing them as JSON."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from jaxsched.experiments.system import Metric

DASH = "—"  # a cell with no number (not run, not trained)


def print_metric_table(rows: dict[str, dict[str, tuple[float, float]]], metrics, title: str = "") -> None:
    """`rows`: policy → metric → (mean, std); `metrics`: `Metric`s, or plain `(key, column header,
    format)` tuples, in column order."""
    metrics = [Metric(*m) for m in metrics]
    table = Table(title=title)
    table.add_column("policy", style="bold")
    for m in metrics:
        table.add_column(m.header, justify="right")
    for name, row in rows.items():
        cells = []
        for m in metrics:
            mean, std = row[m.key]
            cells.append(f"{mean:{m.fmt}} ± {std:{m.fmt}}")
        table.add_row(name, *cells)
    Console(width=160).print(table)


def write_json(path: str, payload) -> None:
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)


def mean_std(entry: dict | None, fmt: str = ",.1f") -> str:
    """An evaluation entry (`{mean, std, ...}`) as "mean ± std"; `DASH` for none."""
    return DASH if entry is None else f"{entry['mean']:{fmt}} ± {entry['std']:{fmt}}"


def machine_line() -> tuple[str, dict]:
    """A sentence naming the CPU, core count, JAX version and device, and the `platform_info` behind it:
    every results file carries one (numbers differ between machines)."""
    from jaxsched.experiments.throughput import platform_info

    info = platform_info()
    line = (
        f"Measured on {info['cpu']} ({info['cpu_count']} cores), JAX {info['jax']} on "
        f"{info['platform']} ({info['device']})."
    )
    return line, info


def claim_table_lines(
    claims: list[dict], describe, before=(), after=(), diff_header="mean difference"
) -> list[str]:
    """Markdown rows for claims of `stats.claim_verdict` (`{diff, relative, pairs, p, verdict}` plus the
    caller's keys): `describe(claim)` names it; `before` / `after` are `(header, claim -> cell)` columns
    around the test's. A claim without a test (e.g. "not run") gets empty test cells."""
    heads = [h for h, _ in before] + [diff_header, "relative", "pairs", "p"] + [h for h, _ in after]
    out = ["| claim | " + " | ".join(heads) + " | verdict |", "|---|" + "---:|" * len(heads) + "---|"]
    for c in claims:
        cells = [fn(c) for _, fn in before]
        if "p" in c:
            cells += [f"{c['diff']:+,.1f}", f"{100 * c['relative']:+.1f} %", str(c["pairs"]), f"{c['p']:.2g}"]
            cells += [fn(c) for _, fn in after]
        else:
            cells += [""] * (4 + len(after))
        out.append(f"| {describe(c)} | " + " | ".join(cells) + f" | {c['verdict']} |")
    return out
