"""The registry of systems: `kind:` → the system's declaration (`experiments.system.System`).

Only the CLI (and tests) import this: the experiment layer never knows which systems exist. A new system
adds its subpackage here and one line to `SYSTEMS`.
"""

from __future__ import annotations

from pathlib import Path


def systems() -> dict:
    """`{kind: System}` of every system (imports each system module on first use)."""
    from jaxsched.systems import dag, das, dbf, osdec, sced2

    return {s.kind: s for s in (dbf.SYSTEM, das.SYSTEM, sced2.SYSTEM, dag.SYSTEM, osdec.SYSTEM)}


def get_system(kind: str):
    """The `System` of `kind`, or a `ValueError` naming the kinds there are."""
    known = systems()
    if kind not in known:
        raise ValueError(f"unknown system {kind!r}; choose from {', '.join(known)}")
    return known[kind]


def load_run_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()):
    """`(system, config)` of the YAML config at `path`: its `kind:` picks the system (strict loading,
    `experiments.config.load_config`)."""
    from jaxsched.experiments.config import load_config

    known = systems()
    cfg = load_config(path, {k: s.config for k, s in known.items()}, overrides)
    return known[cfg.kind], cfg


def load_evaluated(path: str | Path, kind: str):
    """`(config, {policy: {metric: {...}}})` of a trained and evaluated config of system `kind` (what a
    `jaxsched table KIND` reads): the run's eval.json (`jaxsched eval CONFIG --checkpoint RUN`), completed
    by each learner's own `<run dir>/<learner>/eval.json` for a policy missing there."""
    import json

    from jaxsched.experiments.train import EVAL_FILE

    system, cfg = load_run_config(path)
    if system.kind != kind:
        raise ValueError(f"{path}: kind {system.kind!r}; `table {kind}` reads {kind} configs")
    results: dict = {}
    for eval_path in [cfg.run_dir / EVAL_FILE] + [d / EVAL_FILE for d in system.run_dirs(cfg).values()]:
        if eval_path.is_file():
            for policy, entry in json.loads(eval_path.read_text()).items():
                results.setdefault(policy, entry)
    if not results:
        raise FileNotFoundError(
            f"{path}: no {cfg.run_dir / EVAL_FILE}; run `jaxsched train {path}` then "
            f"`jaxsched eval {path} --checkpoint {cfg.run_dir}` first"
        )
    return cfg, results
