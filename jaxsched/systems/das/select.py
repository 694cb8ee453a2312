"""DAS's validation episodes for checkpoint selection (`eval.select: validation`; the selection itself is
the shared `experiments.select`).

The greedy JCT of a MAPPO-trained GPU-cloud scheduler moves by hundreds of minutes from one checkpoint to
the next (docs/results/das.md, round 3): on a saturated cluster one changed decision can snowball into
another episode. The last checkpoint is then a lottery ticket. With `eval.select: validation`, `jaxsched
train` evaluates every seed's policy (greedy unless `eval.greedy: false`) on `eval.validation_episodes`
episodes of the *training* bank (evenly spaced, non-overlapping windows; their own evaluation keys) after
the warm start and after every chunk, and keeps, per seed, the actor with the lowest average JCT so far
(`validation.jsonl`, `selected/`: see `experiments.select`).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxsched.experiments import select
from jaxsched.experiments.select import SELECTED_DIR, VALIDATION_FILE  # noqa: F401  (re-exported)
from jaxsched.systems.das.episodes import seed_keys
from jaxsched.workloads.ddl import episode_starts

METRIC = "avg_jct_min"  # lower is better
PARAMS_KEY = "actor"
VALIDATION_SALT = 0x7A11D  # folded into the test keys: validation episodes draw their own fluctuations


def validation_starts(train_params, episode_jobs: int, n: int) -> np.ndarray:
    """`i32[n]`: starts of `n` evenly spaced, non-overlapping episodes in the training bank of
    `train_params` (whose `starts` are every admissible start)."""
    n_jobs = int(np.asarray(train_params.starts).max()) + episode_jobs
    windows = episode_starts(n_jobs, episode_jobs, stride=episode_jobs)
    if n > len(windows):
        raise ValueError(
            f"eval.validation_episodes: the training split holds {len(windows)} episodes of "
            f"{episode_jobs} jobs, fewer than {n}"
        )
    return windows[np.round(np.linspace(0, len(windows) - 1, n)).astype(int)]


def validation_keys(eval_seed: int, num_seeds: int, n: int) -> jax.Array:
    """`[num_seeds, n]` keys, disjoint from the test episodes' `seed_keys`."""
    keys = seed_keys(eval_seed, num_seeds, n)
    return jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, VALIDATION_SALT)))(keys)


def keep_better(best: dict, actor, jct: np.ndarray, update: int) -> dict:
    """Per seed, the better (strictly lower validation JCT; ties keep the earlier) of `best` and the
    candidate `actor` (`[S, ...]`) with validation JCT `jct` (`[S]`) at `update`."""
    return select.keep_better(best, actor, jct, update, METRIC, PARAMS_KEY)


class ValidationSelector(select.ValidationSelector):
    """The shared selector on the actor parameters and the validation JCT. `validate(actor [S, ...]) ->
    avg JCT [S, V]`."""

    def __init__(self, run_dir: Path, validate, resuming: bool):
        super().__init__(run_dir, validate, resuming, actor_of, METRIC, PARAMS_KEY, "val JCT")


def actor_of(runner):
    return runner.params["actor"]
