"""Command line: `jaxsched demo | hpc-table | bench`.

`demo` (the README's main job) builds a Lublin-model workload on the device, runs the HPC env with the
classic heuristics over held-out episodes and prints their metrics as a table.
"""

from __future__ import annotations

import argparse
import sys


def _add_demo(sub) -> None:
    p = sub.add_parser("demo", help="heuristics on the HPC env over a generated Lublin workload")
    p.add_argument("--episodes", type=int, default=8, help="episodes per policy (seeds)")
    p.add_argument("--episode-jobs", type=int, default=256, help="placed jobs per episode")
    p.add_argument("--cores", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the table as JSON here")
    p.set_defaults(func=_run_demo)


def _run_demo(args) -> int:
    from jaxsched.experiments.demo import run_demo

    run_demo(
        episodes=args.episodes,
        episode_jobs=args.episode_jobs,
        n_cores=args.cores,
        seed=args.seed,
        json_path=args.json,
    )
    return 0


def _add_hpc_table(sub) -> None:
    from jaxsched.experiments.rlscheduler_table import add_arguments, run_from_args

    p = sub.add_parser(
        "hpc-table",
        help="RLScheduler-compatible heuristic table (bsld or util) over sequences of an SWF trace",
    )
    add_arguments(p)
    p.set_defaults(func=run_from_args)


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="env throughput benchmark (see benchmarks/env_throughput.py)")
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    p.set_defaults(func=_run_bench)


def _run_bench(args) -> int:
    from jaxsched.experiments.throughput import env_throughput

    env_throughput(
        batches=[int(b) for b in args.batches.split(",")],
        steps=args.steps,
        repeats=args.repeats,
        json_path=args.json,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxsched", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo(sub)
    _add_hpc_table(sub)
    _add_bench(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        # Bad input is reported in one line naming the problem, not as a traceback from deep in JAX.
        print(f"jaxsched {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
