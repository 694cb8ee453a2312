"""Printing result tables (rich) and writing them as JSON."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from jaxsched.experiments.system import Metric


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
