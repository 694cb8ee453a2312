"""Printing result tables (rich) and writing them as JSON."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

# The HPC env's paper metrics as table columns: (metric key, header, number format).
HPC_METRICS = [
    ("avg_wait", "avg wait (s)", ",.0f"),
    ("avg_queue_len", "avg queue len", ".1f"),
    ("utilization", "utilization", ".3f"),
    ("avg_job_load", "avg job load", ",.0f"),
    ("avg_bsld", "avg bsld", ".1f"),
]


def print_metric_table(
    rows: dict[str, dict[str, tuple[float, float]]], metrics: list[tuple[str, str, str]], title: str = ""
) -> None:
    """`rows`: policy → metric → (mean, std); `metrics`: (key, column header, format) in column order."""
    table = Table(title=title)
    table.add_column("policy", style="bold")
    for _, header, _ in metrics:
        table.add_column(header, justify="right")
    for name, row in rows.items():
        cells = []
        for key, _, fmt in metrics:
            mean, std = row[key]
            cells.append(f"{mean:{fmt}} ± {std:{fmt}}")
        table.add_row(name, *cells)
    Console(width=160).print(table)


def write_json(path: str, payload) -> None:
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)
