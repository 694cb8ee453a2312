"""A system's learners as one declaration, and the one path that trains and restores them.

A system says how to build its learners' compiled programs and which config fields hold their budget;
this module does the rest, the same for every system:

    LEARNER = Learner(programs=programs, names=lambda cfg: cfg.agent.variants,
                      budget=lambda cfg, name: cfg.reinforce, build=build_dag,
                      summary=episode_summary("avg_jct", "avg JCT", "s"), curves=lambda cfg, name: CURVES)
    train_learner(LEARNER, cfg, "full")            # one learner → cfg.run_dir / "full"
    train_all(LEARNER, cfg)                        # every learner the config lists, the banks built once
    runner, update = restore_learner(LEARNER, cfg, "full", env, train_params)

Training is `experiments.train.train_chunks` (chunked, checkpointed, exact resume); each learner's run
directory is `Learner.run_dir` (by default `cfg.run_dir / <learner>`). Optional hooks carry what a system
adds: validation-based selection (`select`), a warm start (`warm_start`), and what follows a finished run
(`finish`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxsched.experiments.live import live
from jaxsched.experiments.loggers import open_loggers
from jaxsched.experiments.train import (
    CURVE_FILE,
    abstract_state,
    check_no_run,
    open_run_dir,
    report_run,
    restore_latest,
    seed_keys,
    train_chunks,
)

CONFIG_HEADER = "# resolved config written by `jaxsched train`\n"


def run_dir_of(cfg, name: str) -> Path:
    """Learner `name`'s run directory: `<out_dir>/<config name>/<name>`."""
    return cfg.run_dir / name


@dataclass(frozen=True)
class Learner:
    """What a system declares about its trained policies. Every callable takes the system's config."""

    # programs(cfg, name, env) -> jitted (init(keys, env_params), chunk(runner, env_params)) over a leading
    # seed axis (`experiments.train.seed_programs`)
    programs: Callable[[Any, str, Any], tuple[Callable, Callable]]
    names: Callable[[Any], Sequence[str]]  # the learners the config lists, trained in this order
    # budget(cfg, name) -> the algorithm config: `total_updates`, `updates_per_chunk`, `steps_per_update`
    budget: Callable[[Any, str], Any]
    build: Callable[[Any], tuple]  # build(cfg) -> (env, train_params, ...): the env and its banks
    summary: Callable[[list[dict]], str]  # the progress bar's label of a chunk's records
    curves: Callable[[Any, str], tuple[str, ...]]  # curves(cfg, name): the learning curves' metrics
    # the curves' axis labels (words and units) where this system's metric differs from `plots.LABELS`'s
    labels: Mapping[str, str] = field(default_factory=dict)
    # config fields a resumed run may extend (e.g. the list of learners: one learner's run does not
    # depend on the others), or a function of the config giving them
    may_grow: tuple[str, ...] | Callable[[Any], tuple[str, ...]] = ()
    run_dir: Callable[[Any, str], Path] = run_dir_of  # where learner `name` writes its run
    # select(cfg, name, run_dir, env, train_params, resuming) -> the `train_chunks` hook that keeps each
    # seed's best checkpoint on validation episodes (`experiments.select.ValidationSelector`), or None
    select: Callable[..., Any] | None = None
    # warm_start(cfg, name, run_dir, env, init, progress) -> the `init(keys, env_params)` a fresh run
    # starts from instead of `init` (e.g. DAS's imitation of a heuristic; `init` itself when none)
    warm_start: Callable[..., Any] | None = None
    # finish(cfg, name, run_dir, records, built, hook, progress): what follows a finished run instead of
    # the default learning curve and summary (e.g. DAS evaluates the variant on its test episodes)
    finish: Callable[..., Any] | None = None


def learner_template(learner: Learner, cfg, name: str, env, env_params):
    """Shapes, dtypes and shardings of learner `name`'s vmapped runner (a restore template; nothing runs)."""
    init, _ = learner.programs(cfg, name, env)
    return abstract_state(init, seed_keys(cfg), env_params)


def restore_learner(learner: Learner, cfg, name: str, env, train_params) -> tuple[Any, int | list]:
    """`(runner [seeds], update)` of learner `name`'s latest checkpoint (a `FileNotFoundError` naming the
    run directory when there is none)."""
    template = lambda: learner_template(learner, cfg, name, env, train_params)  # noqa: E731
    return restore_latest(learner.run_dir(cfg, name), template)


def restore_evaluated(learner: Learner, cfg, name: str, env, train_params, extract, metric: str,
                      params_key: str = "policy") -> tuple[Any, dict]:  # fmt: skip
    """`(policy [S, ...], selection)`: what the test episodes see under `cfg.eval.select` — the latest
    checkpoint's `extract(runner)`, or each seed's best on the validation episodes (`experiments.select`,
    its records under `params_key` and `metric`) — and how it was chosen: `{"by", "update": [S]}`, with
    `"episodes"` and `"validation_<metric>": [S]` by validation."""
    from jaxsched.experiments.select import restore_selected

    if cfg.eval.select == "validation":
        template = extract(learner_template(learner, cfg, name, env, train_params))
        best = restore_selected(learner.run_dir(cfg, name), template, metric, params_key)
        updates, scores = best["update"].tolist(), best[metric].tolist()
        how = {"by": "validation", "episodes": cfg.eval.validation_episodes, "update": updates}
        return best[params_key], how | {f"validation_{metric}": scores}
    runner, step = restore_learner(learner, cfg, name, env, train_params)
    return extract(runner), {"by": "last", "update": [step] * cfg.num_seeds}


def train_learner(
    learner: Learner, cfg, name: str, resume: bool = False, progress: bool = True,
    stop_after_chunks: int | None = None, devices: int | None = None, built: tuple | None = None,
) -> Path:  # fmt: skip
    """Train learner `name` of `cfg` on the shared chunked trainer; returns its run directory. `built`:
    `learner.build(cfg)`'s result, when the caller has it; `stop_after_chunks` stops as if killed after
    that many chunks (metrics and checkpoint written, no plot)."""
    run_dir = learner.run_dir(cfg, name)
    shown = cfg.name if run_dir == cfg.run_dir else f"{cfg.name}/{name}"  # a config's only learner: its name
    t_build = time.perf_counter()
    if built is None:
        with live(f"{shown}: building the env and its workload banks", progress):
            built = learner.build(cfg)
    env, train_params = built[:2]
    init, chunk = learner.programs(cfg, name, env)
    may_grow = learner.may_grow(cfg) if callable(learner.may_grow) else learner.may_grow
    resuming = open_run_dir(cfg, run_dir, resume, CONFIG_HEADER, may_grow=may_grow)
    hook = None if learner.select is None else learner.select(cfg, name, run_dir, env, train_params, resuming)
    if learner.warm_start is not None and not resuming:
        init = learner.warm_start(cfg, name, run_dir, env, init, progress)
    b = learner.budget(cfg, name)
    loggers = open_loggers(cfg.loggers, run_dir, shown, cfg.to_dict())
    try:
        records = train_chunks(
            run_dir, shown, init, chunk, seed_keys(cfg), train_params, total=b.total_updates,
            per_chunk=b.updates_per_chunk, steps_per_update=b.steps_per_update, summary=learner.summary,
            resume=resume, progress=progress, stop_after_chunks=stop_after_chunks, t_build=t_build,
            devices=devices, on_checkpoint=hook, on_records=loggers.log,
        )  # fmt: skip
        if records is not None and learner.finish is not None:
            learner.finish(cfg, name, run_dir, records, built, hook, progress)
        elif records is not None:
            # with a selection hook the evaluation may read another checkpoint than the last
            note = "" if hook is None else f" (final parameters, update {records[-1]['update']})"
            title = f"{shown}: {cfg.num_seeds} seeds (mean ± std)"
            report_run(run_dir, records, title, learner.curves(cfg, name), progress, note, learner.labels)
        if records is not None:
            loggers.figure(run_dir / CURVE_FILE)
    finally:
        loggers.close()
    return run_dir


def train_all(
    learner: Learner, cfg, resume: bool = False, progress: bool = True, devices: int | None = None
) -> list[Path]:
    """Every learner of `learner.names(cfg)`, in turn (the banks built once); returns their run
    directories. `resume` with no checkpoint of any of them is an error naming where it looked (a typo in
    a sweep must not restart a long run from scratch)."""
    names = list(learner.names(cfg))
    if resume and all(check_no_run(learner.run_dir(cfg, n), True) is None for n in names):
        raise ValueError(
            f"--resume: no run to resume in {cfg.run_dir} (no checkpoint of {', '.join(names)}); start one "
            "without --resume, or give the --out-dir and --name it was trained with"
        )
    with live(f"{cfg.name}: building the env and its workload banks", progress):
        built = learner.build(cfg)
    return [
        train_learner(learner, cfg, n, resume=resume, progress=progress, devices=devices, built=built)
        for n in names
    ]
