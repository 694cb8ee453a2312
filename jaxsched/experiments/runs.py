"""Runs of one recipe trained under other seeds (one process per training seed, as on a CPU), stacked as
more seeds: each run directory's evaluation of a learner, checked to be the same recipe (everything but
`seed`, `name` and `out_dir`), in order of training seed.

    blocks = runs_by_seed(cfg, [cfg.run_dir, *other_run_dirs], "das", read)   # [(seed, run dir, row)]
"""

from __future__ import annotations

from pathlib import Path

from jaxsched.experiments.train import CONFIG_FILE, EVAL_FILE, config_diffs, saved_config

# The keys in which runs stacked as seeds may differ (besides what a caller adds).
MAY_DIFFER = ("kind", "name", "seed", "out_dir", "calibration")


def training_seed(cfg, run_dir: Path, ignore=()) -> int:
    """The `seed` that `run_dir` (a learner's folder) was trained with; a `ValueError` naming the keys when
    its recipe differs from `cfg`'s (`ignore`: dotted keys that may)."""
    path = Path(run_dir) / CONFIG_FILE
    saved = saved_config(type(cfg), run_dir)
    if saved is None:
        raise FileNotFoundError(f"{run_dir} has an {EVAL_FILE} but no {CONFIG_FILE} to check it against")
    now = cfg.to_dict()
    diffs = config_diffs(saved, now, [k for k in now if k not in MAY_DIFFER], ignore=ignore)
    if diffs:
        raise ValueError(
            f"--runs: {run_dir} was trained with another recipe than {cfg.name}: {', '.join(diffs)} "
            f"differ (see {path})"
        )
    return saved["seed"]


def runs_by_seed(cfg, run_dirs, name: str, read, ignore=()) -> list[tuple[int, Path, object]]:
    """`[(training seed, run dir, read(learner folder))]` of every run directory where `read` finds learner
    `name`'s evaluation (not None), each checked to be `cfg`'s recipe, in order of training seed (a seed
    twice is an error)."""
    by_seed: dict[int, tuple[Path, object]] = {}
    for d in map(Path, run_dirs):
        row = read(d / name)
        if row is None:
            continue
        seed = training_seed(cfg, d / name, ignore)
        if seed in by_seed:
            raise ValueError(f"--runs: {name} has training seed {seed} twice: {by_seed[seed][0]} and {d}")
        by_seed[seed] = (d, row)
    return [(s, *by_seed[s]) for s in sorted(by_seed)]
