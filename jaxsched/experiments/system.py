"""What a system (one paper's setting) declares to plug into the shared experiment layer.

A system module (`jaxsched/systems/<kind>/`) builds one `System` and nothing generic: the CLI dispatches
`jaxsched train | eval | bench | report CONFIG` on the config's `kind:` (and `table KIND`) to it, and the
shared pieces (the strict loader `experiments.config`, the chunked trainer `experiments.train`, the
evaluator `experiments.evaluate`, tables `experiments.report`, the run report `experiments.run_report`,
plots `experiments.plots`, statistics `experiments.stats`) serve every system alike. See
docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from jaxsched.experiments.calibration import Calibration
from jaxsched.experiments.config import ExperimentConfig


class Metric(NamedTuple):
    """One of a paper's metrics as a result column."""

    key: str  # the episode metric's key in `info` / the evaluation results
    header: str  # column header, with the unit
    fmt: str  # number format
    lower_is_better: bool = True


@dataclass(frozen=True)
class System:
    """A system's declaration: its config, its baselines, metrics and published tables, and what the CLI
    calls. Every callable takes the system's config (`config` class). `train`, `build` and `run_dirs`
    follow from `learner` and `evaluate` from `evaluation` unless given."""

    kind: str  # the YAML `kind:`
    title: str  # a line for listings
    paper: str  # the paper's title (the texts: ../shared/papers/README.md)
    config: type[ExperimentConfig]
    baselines: tuple[str, ...]  # heuristic names the system's evaluator accepts
    metrics: tuple[Metric, ...]
    learner: Any = None  # its `experiments.learner.Learner` (trained by `experiments.learner.train_all`)
    evaluation: Any = (
        None  # its `experiments.evaluate.Evaluation` (played by `experiments.evaluate.evaluate`)
    )
    # train(cfg, resume=, progress=, devices=) -> run directories written (devices: seed sharding)
    train: Callable[..., list[Path]] | None = None
    # evaluate(cfg, checkpoint=None | run dir, episodes=None | int, json_path=None | str) -> results
    evaluate: Callable[..., dict] | None = None
    # build(cfg) -> (env, params): the env and its training workload bank (`jaxsched bench CONFIG`)
    build: Callable[[Any], tuple[Any, Any]] | None = None
    # run_dirs(cfg) -> {label: run dir}: where `train` writes each learner's run (`jaxsched report CONFIG`)
    run_dirs: Callable[[Any], Mapping[str, Path]] | None = None
    # `jaxsched calibrate CONFIG`: the paper's published numbers (`paper_numbers.csv`, which its tables also
    # read: `experiments.paper.paper_rows`) and how to evaluate the baselines on
    # calibration and test episodes (None: the system has no calibration yet)
    calibration: Calibration | None = None
    # `jaxsched claims`: claims(results_dir) -> [experiments.claims.Claim], its paper's headline claims
    # judged from its stored records under docs/results/
    claims: Callable[[Path], list] | None = None
    # the paper preset (a config path from the repository root) `jaxsched leaderboard` scores policies on
    preset: str | None = None
    # CLI modules with `add_arguments(parser)` and `run_from_args(args)`, by subcommand ("table", "report")
    commands: Mapping[str, ModuleType] = field(default_factory=dict)

    def __post_init__(self):
        from jaxsched.experiments.evaluate import evaluate
        from jaxsched.experiments.learner import train_all

        learner, evaluation = self.learner, self.evaluation
        labels = {} if evaluation is None else evaluation.labels
        derived = {}
        if learner is not None:
            derived["train"] = partial(train_all, learner)
            derived["build"] = lambda cfg: learner.build(cfg)[:2]
            derived["run_dirs"] = lambda cfg: {
                labels.get(n, n): learner.run_dir(cfg, n) for n in learner.names(cfg)
            }
        if evaluation is not None:
            derived["evaluate"] = partial(evaluate, evaluation)
        for name, value in derived.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        missing = [n for n in ("train", "evaluate", "build", "run_dirs") if getattr(self, n) is None]
        if missing:
            raise ValueError(
                f"system {self.kind!r}: no {', '.join(missing)} (give them, or a learner and an evaluation)"
            )
