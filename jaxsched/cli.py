"""Command line: `jaxsched train | eval | report | bench CONFIG`, `table SYSTEM`, `demo`, `hpc-table`.

Every command on a CONFIG works for every system, picked by the YAML's `kind:`. `train CONFIG` trains
the learner(s) (`dbf`: PPO; `das`: each MAPPO variant) in chunks with checkpoints and `--resume`; `eval
CONFIG [--checkpoint RUN_DIR]` evaluates the system's heuristic baselines and a trained run on the
held-out episodes; `report CONFIG` shows where the config's runs stand (training and evaluation tables,
learning curves); `bench [CONFIG]` measures the env's throughput with one of its heuristics. `table
SYSTEM` prints a paper's tables (DBF: the split sweep over trained runs); `hpc-table` is DBF's
RLScheduler-compatible heuristic table; `tpch-convert SRC DST --allow-pickle` turns Decima's pickled TPC-H
folder into the safe `.npz` the DAG configs read (`workload.tpch_npz`). The CLI is the only module that
knows the registry of systems (`jaxsched.systems`).

`demo` (the README's main job) builds a Lublin-model workload on the device, runs the HPC env with the
classic heuristics over held-out episodes and prints their metrics as a table.
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxsched.core.compile import compile_cache, fast_compile
from jaxsched.core.threads import single_threaded_blas
from jaxsched.experiments.config import add_run_location, add_set_argument


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train the learner(s) of a YAML config (its `kind:` picks the system)")
    p.add_argument("config", help="YAML run config (configs/<kind>/*.yaml)")
    p.add_argument("--resume", action="store_true", help="continue the run from its last checkpoint")
    add_run_location(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--logger", action="append", default=None, choices=("jsonl", "tensorboard", "wandb"),
        help="also log to TensorBoard (RUN_DIR/tensorboard) or W&B (offline unless WANDB_MODE); repeatable; "
        "metrics.jsonl is always written",
    )  # fmt: skip
    p.add_argument(
        "--devices", type=int, default=None,
        help="spread the seeds over this many devices (default: the most local devices dividing num_seeds)",
    )  # fmt: skip
    p.set_defaults(func=_run_train)


def _system_and_config(args):
    """`(system, config)` of `args.config` with `--set`, `--out-dir` and `--name` applied."""
    from jaxsched.systems import load_run_config

    system, cfg = load_run_config(args.config, args.set)
    given = (("out_dir", getattr(args, "out_dir", None)), ("name", getattr(args, "name", None)))
    changes = {k: v for k, v in given if v}
    if getattr(args, "logger", None):
        changes["loggers"] = tuple(dict.fromkeys(cfg.loggers + tuple(args.logger)))
    return system, (cfg.replace(**changes) if changes else cfg)


def _run_train(args) -> int:
    system, cfg = _system_and_config(args)
    system.train(cfg, resume=args.resume, progress=not args.quiet, devices=args.devices)
    return 0


def _add_eval(sub) -> None:
    p = sub.add_parser(
        "eval", help="evaluate the baselines and, with --checkpoint, a trained run on held-out episodes"
    )
    p.add_argument("config", help="YAML run config (the one the run was trained with)")
    p.add_argument(
        "--checkpoint", nargs="?", const="", default=None, metavar="RUN_DIR",
        help="also the trained run in RUN_DIR (out_dir/name); alone: the config's own run (after --out-dir, "
        "--name); without it: the baselines alone",
    )  # fmt: skip
    p.add_argument("--episodes", type=int, default=None, help="override eval.episodes")
    p.add_argument("--json", default=None, help="write results here (default RUN_DIR/eval.json; - = stdout)")
    add_run_location(p)
    p.set_defaults(func=_run_eval)


def _run_eval(args) -> int:
    system, cfg = _system_and_config(args)
    checkpoint = cfg.run_dir if args.checkpoint == "" else args.checkpoint
    system.evaluate(cfg, checkpoint, episodes=args.episodes, json_path=args.json)
    return 0


def _add_calibrate(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="the config's baselines beside every baseline number its paper publishes (--fit: search knobs)",
    )
    p.add_argument(
        "config", nargs="+",
        help="YAML config(s) with a `calibration:` section (configs/<kind>/paper_*.yaml); several configs of "
        "one system share one workload and are fitted jointly",
    )  # fmt: skip
    p.add_argument("--fit", action="store_true", help="search calibration.knobs on the calibration episodes")
    p.add_argument("--out", default=None, help="write calibration.md, .json (and fit_surface.png) here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_set_argument(p)
    p.set_defaults(func=_run_calibrate)


def _run_calibrate(args) -> int:
    from jaxsched.experiments.calibration import run_calibration
    from jaxsched.systems import load_run_config

    loaded = [load_run_config(path, args.set) for path in args.config]
    system = loaded[0][0]
    if any(s.kind != system.kind for s, _ in loaded):
        raise ValueError(f"calibrate: the configs must be of one system, got {[s.kind for s, _ in loaded]}")
    if system.calibration is None:
        raise ValueError(f"{args.config[0]}: the {system.kind} system declares no calibration")
    cfgs = [c for _, c in loaded]
    run_calibration(system.calibration, cfgs, do_fit=args.fit, out_dir=args.out, progress=not args.quiet)
    return 0


def _add_claims(sub) -> None:
    p = sub.add_parser("claims", help="the papers' headline claims judged from the stored records")
    p.add_argument("--results", default="docs/results", help="where the stored evaluation records are")
    p.add_argument("--out", default="docs/results/claims.md", help="the page to write")
    p.add_argument(
        "--pages", default="docs/results", help="where each system's results page (<kind>.md) is: its "
        "claims block is rewritten ('' for none)"
    )  # fmt: skip
    p.set_defaults(func=_run_claims)


def _run_claims(args) -> int:
    from jaxsched.experiments.claims import write_claims
    from jaxsched.systems import systems

    declared = {k: (s.title, s.claims) for k, s in systems().items() if s.claims is not None}
    path = write_claims(declared, args.results, args.out, pages_dir=args.pages or None)
    print(f"written: {path}")
    return 0


def _add_leaderboard(sub) -> None:
    p = sub.add_parser("leaderboard", help="policies scored on every system's paper preset, one table")
    p.add_argument("--systems", default=None, help="comma-separated kinds (default: every system)")
    p.add_argument(
        "--policy", action="append", default=[],
        help="also score: a heuristic NAME, a trained RUN_DIR, or module:function / file.py:function giving "
        "policy(params, obs, key) -> action; repeatable",
    )  # fmt: skip
    p.add_argument("--episodes", type=int, default=None, help="test episodes (default: the preset's eval)")
    p.add_argument("--out", default="runs/leaderboard", help="where leaderboard.json and .png go")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_run_leaderboard)


def _run_leaderboard(args) -> int:
    from pathlib import Path

    from jaxsched.experiments.leaderboard import (
        leaderboard_lines,
        load_policy,
        preset_path,
        run_config,
        score_system,
        write_leaderboard,
    )
    from jaxsched.systems import load_run_config, systems

    known = {k: s for k, s in systems().items() if s.preset is not None}
    kinds = args.systems.split(",") if args.systems else list(known)
    for k in kinds:
        if k not in known:
            raise ValueError(f"--systems: unknown system {k!r} (one of {', '.join(known)})")
    heuristics, runs, user = [], {}, {}
    for spec in args.policy:
        if Path(spec).is_dir():
            run_system, run_cfg = load_run_config(run_config(Path(spec)))
            runs.setdefault(run_system.kind, []).append((Path(spec), run_cfg))
        elif ":" in spec:
            label, policy = load_policy(spec)
            user[label] = policy
        else:
            heuristics.append(spec)
    unknown = [h for h in heuristics if not any(h in known[k].baselines for k in kinds)]
    if unknown:
        raise ValueError(
            f"--policy {unknown[0]!r}: not a heuristic of {', '.join(kinds)}, a run directory or "
            "module:function"
        )
    blocks = []
    for k in kinds:
        system = known[k]
        cfg = load_run_config(preset_path(system))[1]
        names = [h for h in heuristics if h in system.baselines]
        blocks.append(score_system(system, cfg, names, runs.get(k, ()), user, args.episodes, not args.quiet))
    print("\n".join(leaderboard_lines(blocks)))
    js, png = write_leaderboard(blocks, Path(args.out))
    print(f"written: {js}, {png}")
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
    from jaxsched.systems.dbf.demo import run_demo

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


def _add_system_commands(sub) -> None:
    """Each system's own subcommands (`System.commands`): `table SYSTEM ...` for the paper tables, and
    the others (`hpc-table`) by their names."""
    from jaxsched.systems import systems

    tables = {k: s.commands["table"] for k, s in systems().items() if "table" in s.commands}
    p = sub.add_parser("table", help=f"a paper's result tables ({', '.join(tables)})")
    per_system = p.add_subparsers(dest="system", required=True)
    for kind, module in tables.items():
        _add_module_command(per_system, kind, module, help=module.HELP)
    seen: dict[str, str] = {}
    for kind, system in systems().items():
        for name, module in system.commands.items():
            if name == "table":
                continue
            if name in seen:
                raise RuntimeError(f"systems {seen[name]} and {kind} both declare the command {name!r}")
            seen[name] = kind
            _add_module_command(sub, name, module, help=module.HELP)


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="where a config's runs stand: training and evaluation tables, curves")
    p.add_argument("config", help="YAML run config (the one the runs were trained with)")
    add_run_location(p)
    p.set_defaults(func=_run_report)


def _run_report(args) -> int:
    from jaxsched.experiments.run_report import report

    report(*_system_and_config(args))
    return 0


def _add_bench(sub) -> None:
    p = sub.add_parser(
        "bench", help="env steps/s under vmap with a heuristic (see benchmarks/env_throughput.py)"
    )
    p.add_argument(
        "config", nargs="?", default=None,
        help="YAML run config whose env and training workload to measure (default: the DBF HPC env)",
    )  # fmt: skip
    p.add_argument("--policy", default=None, help="the heuristic acting (default: the system's first)")
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    add_set_argument(p)
    p.set_defaults(func=_run_bench)


def _run_bench(args) -> int:
    from jaxsched.experiments.throughput import env_throughput

    chosen = {}  # the env and the acting policy, when a config names them
    if args.config is not None:
        from jaxsched.experiments.live import live
        from jaxsched.policies import make_heuristic

        system, cfg = _system_and_config(args)
        with live(f"building the env and workload of {args.config}"):
            env, params = system.build(cfg)
        name = args.policy or system.baselines[0]
        policy = make_heuristic(env, name)
        chosen = {"env_setup": lambda: (env, params), "action_fn": lambda key, obs: policy(None, obs, key)}
        print(f"{system.kind} env of {args.config}, acting with {name}")
    elif args.policy is not None:
        raise ValueError("--policy needs a CONFIG (the default bench acts with random valid actions)")
    env_throughput(
        batches=[int(b) for b in args.batches.split(",")],
        steps=args.steps,
        repeats=args.repeats,
        json_path=args.json,
        **chosen,
    )
    return 0


def _add_tpch_convert(sub) -> None:
    p = sub.add_parser(
        "tpch-convert", help="Decima's TPC-H folder (pickled task durations) -> a safe .npz (workloads.tpch)"
    )
    p.add_argument("src", help="the folder holding 2g/ 5g/ ... 100g/ (adj_mat_q.npy, task_duration_q.npy)")
    p.add_argument("dst", help="the .npz to write")
    p.add_argument(
        "--allow-pickle", action="store_true",
        help="read the pickled duration files (through a restricted unpickler; a trusted source only)",
    )  # fmt: skip
    p.set_defaults(func=_run_tpch_convert)


def _run_tpch_convert(args) -> int:
    from jaxsched.workloads.tpch import convert_tpch

    print(convert_tpch(args.src, args.dst, allow_pickle=args.allow_pickle))
    return 0


# The built-in systems' own commands as the top-level help lists them, without importing the systems (and
# jax with them): `jaxsched --help` and the shared verbs then start in a fraction of a second. The full
# parser, which imports every system, is built for these commands only; `tests/test_cli.py` holds the two
# listings equal.
SYSTEM_COMMANDS = {
    "table": "a paper's result tables (dbf, das, sced2, dag, osdec)",
    "hpc-table": "RLScheduler-compatible heuristic table (bsld or util) over sequences of an SWF trace",
}


def _add_system_command_stubs(sub) -> None:
    for name, help in SYSTEM_COMMANDS.items():
        sub.add_parser(name, help=help)


def build_parser(systems: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; `systems=False` lists the systems' own commands without importing them (a
    parser for the shared verbs and the top-level help)."""
    parser = argparse.ArgumentParser(prog="jaxsched", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fast-compile", action="store_true", default=bool(os.environ.get("JAXSCHED_FAST_COMPILE")),
        help="compile XLA programs ~35 %% faster, some then run slower (core/compile.py; "
        "env JAXSCHED_FAST_COMPILE=1)",
    )  # fmt: skip
    parser.add_argument(
        "--compile-cache", metavar="DIR", default=os.environ.get("JAXSCHED_COMPILE_CACHE"),
        help="keep compiled programs in DIR for the next run of the same programs "
        "(env JAXSCHED_COMPILE_CACHE)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train(sub)
    _add_eval(sub)
    _add_calibrate(sub)
    _add_claims(sub)
    _add_leaderboard(sub)
    _add_demo(sub)
    _add_report(sub)
    (_add_system_commands if systems else _add_system_command_stubs)(sub)
    _add_bench(sub)
    _add_tpch_convert(sub)
    return parser


def _needs_systems(argv: list[str]) -> bool:
    """Whether the command names a system's own command (or one from a registered plugin system)."""
    values = {i + 1 for i, a in enumerate(argv) if a == "--compile-cache"}  # the option's DIR is no command
    command = next((a for i, a in enumerate(argv) if not a.startswith("-") and i not in values), None)
    shared = ("train", "eval", "calibrate", "claims", "demo", "report", "bench", "tpch-convert")
    return command is not None and command not in shared


def _interrupted(args, argv: list[str]) -> str:
    """After Ctrl-C: for `train`, where each run's last checkpoint is and the command that continues."""
    if args.command != "train":
        return ""
    import shlex

    from jaxsched.experiments.train import check_no_run

    system, cfg = _system_and_config(args)
    saved = [(d, s) for d in system.run_dirs(cfg).values() if (s := check_no_run(d, True)) is not None]
    where = "; ".join(f"{d} at update {s}" for d, s in saved) or "none yet"
    again = shlex.join(["jaxsched", *argv, *([] if args.resume else ["--resume"])])
    return f"; last checkpoint: {where}; continue with: {again}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # XLA's C++ "Very slow compile? If you want to file a bug ..." banner reads like an error on a small CPU,
    # where minutes of compile are normal: its log level is kept out of view (the live lines say what is
    # compiling). A user's own TF_CPP_MIN_LOG_LEVEL wins; it is read at XLA's first log line, so this holds.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    args = build_parser(systems=_needs_systems(argv)).parse_args(argv)
    single_threaded_blas()  # before any LAPACK kernel runs (core/threads.py)
    if args.fast_compile:
        fast_compile()  # before XLA's backend starts, which reads the flags (core/compile.py)
    try:
        if args.compile_cache:
            compile_cache(args.compile_cache)
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        # Bad input is reported in one line naming the problem, not as a traceback from deep in JAX.
        print(f"jaxsched {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # one line, not a traceback: what was kept and how to go on
        print(f"\njaxsched {args.command}: interrupted{_interrupted(args, argv)}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
