"""`jaxsched hpc-table`: RLScheduler's heuristic table (bsld or util) over sequences of an SWF trace, by
the RLScheduler-compatible model of `policies.rlscheduler` (its docstring states the model)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from jaxsched.policies.rlscheduler import (
    DEFAULT_POLICIES,
    DEFAULT_STARTS,
    POLICIES,
    check_metric,
    check_policies,
    parse_starts,
    per_start_table,
)

HELP = "RLScheduler-compatible heuristic table (bsld or util) over sequences of an SWF trace"


def add_arguments(parser) -> None:
    parser.add_argument("--trace", required=True, help="SWF trace (.swf or .swf.gz)")
    parser.add_argument("--length", type=int, default=1024, help="jobs per sequence (default 1024)")
    parser.add_argument(
        "--starts",
        default=DEFAULT_STARTS,
        help="sequence starts: comma list (1981,2756), 'random:N:SEED' (N uniform in [0, J - length]) or "
        f"'rlscheduler:N:SEED' (RLScheduler's test starts; default {DEFAULT_STARTS})",
    )
    parser.add_argument("--backfill", action="store_true", help="RLScheduler's greedy back-filling")
    parser.add_argument("--metric", default="bsld", help="bsld (average bounded slowdown) or util")
    parser.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help=f"comma list from {', '.join(POLICIES)} (default {','.join(DEFAULT_POLICIES)})",
    )
    parser.add_argument(
        "--json", default=None,
        help="write {metric, means: {policy: mean}, starts, trace: what was dropped or repaired} here "
        "('-': print only that JSON)",
    )  # fmt: skip
    parser.add_argument("--n-cores", type=int, default=None, help="machine size when the SWF header has none")
    parser.add_argument("--drop-too-wide", action="store_true", help="drop jobs wider than the machine")
    parser.add_argument(
        "--order",
        choices=("job_id", "submit"),
        default="job_id",
        help="job order: RLScheduler's job-id order (default), or submit time for logs whose ids are not",
    )


def _load_trace(path: str, n_cores: int | None = None, drop_too_wide: bool = False, order: str = "job_id"):
    """`(workload, SWFReport)`; what RLScheduler's rules dropped or repaired goes to stderr in one line."""
    from jaxsched.workloads.swf import load_swf_with_report

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"trace file not found: {path}")
    workload, report = load_swf_with_report(p, n_cores=n_cores, drop_too_wide=drop_too_wide, sort=order)
    if report.changes():
        print(report.changes(), file=sys.stderr)
    return workload, report


def run_from_args(args) -> int:
    metric = check_metric(args.metric)
    policies = check_policies(args.policies)
    workload, report = _load_trace(args.trace, args.n_cores, args.drop_too_wide, args.order)
    starts = parse_starts(args.starts, workload.num_jobs, args.length)
    t0 = time.perf_counter()
    per_start = per_start_table(workload, starts, args.length, policies, args.backfill, metric)
    seconds = time.perf_counter() - t0
    means = {k: float(np.mean(v)) for k, v in per_start.items()}
    record = {"metric": metric, "means": means, "backfill": args.backfill, "length": args.length,
              "starts": [int(s) for s in starts], "trace": report.counts()}  # fmt: skip
    if args.json == "-":
        json.dump(record, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)
    _print_table(per_start, workload, starts, args, metric, seconds)
    return 0


def _print_table(per_start, workload, starts, args, metric, seconds) -> None:
    fmt = ".2f" if metric == "bsld" else ".3f"
    title = (
        f"{workload.name}: {metric}, {len(starts)} sequences of {args.length} jobs, "
        f"{'with' if args.backfill else 'without'} back-filling"
    )
    caption = f"starts {', '.join(map(str, starts))} ({seconds:.1f} s)"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a dependency
        print(title)
        for name, v in per_start.items():
            print(f"  {name:10s} {np.mean(v):{fmt}}  (min {np.min(v):{fmt}}, max {np.max(v):{fmt}})")
        print(caption)
        return
    table = Table(title=title, caption=caption)
    table.add_column("policy", style="bold")
    for col in ("mean", "min", "max"):
        table.add_column(f"{col} {metric}", justify="right")
    for name, v in per_start.items():
        table.add_row(name, f"{np.mean(v):{fmt}}", f"{np.min(v):{fmt}}", f"{np.max(v):{fmt}}")
    Console(width=160).print(table)
