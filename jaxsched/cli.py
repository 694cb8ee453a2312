"""Command line: `jaxsched train | eval | demo | hpc-table | table | bench | report`.

`train CONFIG` trains the PPO agent of a YAML config (`configs/dbf/`), or each learned variant of a
`kind: das` config (`configs/das/`, MAPPO), in chunks with checkpoints and `--resume`;
`eval CONFIG --checkpoint RUN_DIR` evaluates a DBF run against heuristics on held-out episodes, and
`eval CONFIG` of a `kind: das` config its heuristics (trained DAS variants: `table das`).

`demo` (the README's main job) builds a Lublin-model workload on the device, runs the HPC env with the
classic heuristics over held-out episodes and prints their metrics as a table.
"""

from __future__ import annotations

import argparse
import sys


def _add_train(sub) -> None:
    p = sub.add_parser(
        "train",
        help="train the agent(s) of a YAML config: PPO for configs/dbf/*, MAPPO variants for configs/das/*",
    )
    p.add_argument("config", help="YAML run config")
    p.add_argument("--resume", action="store_true", help="continue the run from its last checkpoint")
    p.add_argument("--out-dir", default=None, help="override the config's out_dir")
    p.add_argument("--name", default=None, help="override the config's run name (run dir = out_dir/name)")
    _add_set(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_train)


def _add_set(p) -> None:
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value (dotted key, YAML value), e.g. --set env.tail=3; repeatable",
    )


def _config_with_overrides(args):
    from jaxsched.experiments.config import load_config

    cfg = load_config(args.config, args.set)
    changes = {
        k: v
        for k, v in (("out_dir", getattr(args, "out_dir", None)), ("name", getattr(args, "name", None)))
        if v
    }
    return cfg.replace(**changes) if changes else cfg


def _run_train(args) -> int:
    from jaxsched.experiments.das_config import is_das_config, load_das_config

    if is_das_config(args.config):
        from jaxsched.experiments.das_train import train_das_config

        cfg = load_das_config(args.config, args.set)
        changes = {k: v for k, v in (("out_dir", args.out_dir), ("name", args.name)) if v}
        train_das_config(cfg.replace(**changes), resume=args.resume, progress=not args.quiet)
        return 0
    from jaxsched.experiments.train import train_run

    train_run(_config_with_overrides(args), resume=args.resume, progress=not args.quiet)
    return 0


def _add_eval(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a trained run and heuristic baselines on held-out episodes")
    p.add_argument(
        "config",
        help="YAML run config (the one the run was trained with; `kind: das` configs "
        "evaluate their heuristics and need no checkpoint)",
    )
    p.add_argument("--checkpoint", default=None, help="run directory (out_dir/name) holding checkpoints/")
    p.add_argument("--episodes", type=int, default=None, help="override eval.episodes")
    p.add_argument("--json", default=None, help="write results here (default RUN_DIR/eval.json; - = stdout)")
    _add_set(p)
    p.set_defaults(func=_run_eval)


def _run_eval(args) -> int:
    from jaxsched.experiments.das_config import is_das_config, load_das_config

    if is_das_config(args.config):
        from jaxsched.experiments.das_eval import eval_heuristics

        cfg = load_das_config(args.config, args.set)
        eval_heuristics(cfg, episodes=args.episodes, json_path=args.json)
        return 0
    from jaxsched.experiments.eval_run import eval_run

    if args.checkpoint is None:
        raise ValueError(f"{args.config}: evaluating a trained run needs --checkpoint RUN_DIR")
    eval_run(_config_with_overrides(args), args.checkpoint, episodes=args.episodes, json_path=args.json)
    return 0


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


def _add_module_command(sub, name: str, module, help: str) -> None:
    """A subcommand whose module defines `add_arguments(parser)` and `run_from_args(args)`."""
    p = sub.add_parser(name, help=help)
    module.add_arguments(p)
    p.set_defaults(func=module.run_from_args)


def _add_hpc_table(sub) -> None:
    from jaxsched.experiments import rlscheduler_table

    help = "RLScheduler-compatible heuristic table (bsld or util) over sequences of an SWF trace"
    _add_module_command(sub, "hpc-table", rlscheduler_table, help)


def _add_table(sub) -> None:
    from jaxsched.experiments import das_table

    help = "a paper's result tables from trained runs and freshly evaluated baselines (das: Table 1, 3)"
    _add_module_command(sub, "table", das_table, help)


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


def _add_report(sub) -> None:
    from jaxsched.experiments import dbf_report

    help = "DBF runs vs baselines: markdown table, Fig. 5-style plot, learning curves"
    _add_module_command(sub, "report", dbf_report, help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxsched", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train(sub)
    _add_eval(sub)
    _add_demo(sub)
    _add_hpc_table(sub)
    _add_table(sub)
    _add_bench(sub)
    _add_report(sub)
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
