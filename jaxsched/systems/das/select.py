"""Checkpoint selection on validation episodes for DAS training runs (`eval.select: validation`).

The greedy JCT of a MAPPO-trained GPU-cloud scheduler moves by hundreds of minutes from one checkpoint to
the next (docs/results/das.md, round 3): on a saturated cluster one changed decision can snowball into
another episode. The last checkpoint is then a lottery ticket. With `eval.select: validation`, `jaxsched
train` evaluates every seed's policy (greedy unless `eval.greedy: false`) on `eval.validation_episodes`
episodes of the *training* bank (evenly spaced, non-overlapping windows; their own evaluation keys) after
the warm start and after every chunk, and keeps, per seed, the actor with the lowest average JCT so far.
The test episodes see only that actor, once, at the end: they play no part in the choice.

Run-directory files:
  * `validation.jsonl`: one line per checkpoint, `{"update", "avg_jct_min": [S], "best_update": [S]}`;
  * `selected/<update>/`: the selection after that checkpoint (orbax; the last two kept, like the runner's),
    `{"actor": [S, ...], "avg_jct_min": f32[S], "update": i32[S]}`. It is saved before the runner's
    checkpoint of the same update, so a resumed run finds it and continues the same selection.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from jaxsched.experiments.train import checkpoint_manager, read_jsonl
from jaxsched.systems.das.evaluate import seed_keys
from jaxsched.workloads.ddl import episode_starts

SELECTED_DIR = "selected"
VALIDATION_FILE = "validation.jsonl"
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
    better = jct < best["avg_jct_min"]

    def pick(new, old):
        return jnp.where(better.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

    return {
        "actor": jax.tree.map(pick, actor, best["actor"]),
        "avg_jct_min": np.where(better, jct, best["avg_jct_min"]).astype(np.float32),
        "update": np.where(better, update, best["update"]).astype(np.int32),
    }


def _abstract(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree)


class ValidationSelector:
    """`train_chunks`' `on_checkpoint` hook: validates each checkpoint's actor and keeps each seed's best
    (module docstring). `validate(actor [S, ...]) -> avg JCT [S, V]`; `resuming`: the runner it first
    sees was restored from a checkpoint."""

    def __init__(self, run_dir: Path, validate, resuming: bool):
        self.run_dir = Path(run_dir)
        self.validate = validate
        self.resuming = resuming
        self.best: dict | None = None
        self.last_jct: np.ndarray | None = None  # [S] of the latest validated checkpoint
        self.seen: set[int] = set()

    def __call__(self, runner, update: int) -> str:
        actor = runner.params["actor"]
        if self.best is None:
            self._start(actor, update)
        elif update not in self.seen:
            self._consider(actor, update)
        return f"val JCT {self.last_jct.mean():,.0f} (best {self.best['avg_jct_min'].mean():,.0f})"

    def _start(self, actor, update: int) -> None:
        steps = saved_steps(self.run_dir)
        for step in steps:
            if step > update:  # saved just before a kill that lost the runner's checkpoint of that update
                shutil.rmtree(self.run_dir / SELECTED_DIR / str(step))
        if self.resuming and update in steps:
            self.best = restore_selected(self.run_dir, _abstract(actor), step=update)
            lines = self._keep_lines(upto=update)
            self.last_jct = np.asarray(lines[-1]["avg_jct_min"] if lines else self.best["avg_jct_min"])
            return
        if not self.resuming:  # a fresh start: drop what a run killed before its first checkpoint left
            shutil.rmtree(self.run_dir / SELECTED_DIR, ignore_errors=True)
        # (A resume of a run trained with `select: last` starts selecting at its last checkpoint.)
        self._keep_lines(upto=update if self.resuming else -1)
        seeds = jax.tree.leaves(actor)[0].shape[0]
        inf = np.full(seeds, np.inf, np.float32)
        self.best = {"actor": actor, "avg_jct_min": inf, "update": np.full(seeds, -1)}
        self._consider(actor, update)

    def _consider(self, actor, update: int) -> None:
        jct = np.asarray(self.validate(actor), np.float64).mean(axis=1).astype(np.float32)  # [S]
        self.best = keep_better(self.best, actor, jct, update)
        self.last_jct = jct
        mngr = checkpoint_manager(self.run_dir, subdir=SELECTED_DIR)
        mngr.save(update, args=ocp.args.StandardSave(self.best))
        mngr.wait_until_finished()
        mngr.close()
        line = {"update": update, "avg_jct_min": jct.tolist(), "best_update": self.best["update"].tolist()}
        with (self.run_dir / VALIDATION_FILE).open("a") as f:
            f.write(json.dumps(line) + "\n")
        self.seen.add(update)

    def _keep_lines(self, upto: int) -> list[dict]:
        """Cut `validation.jsonl` to the lines of updates <= `upto`; return them."""
        path = self.run_dir / VALIDATION_FILE
        lines = [r for r in read_jsonl(path) if r["update"] <= upto]
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        self.seen = {r["update"] for r in lines}
        return lines


def saved_steps(run_dir: Path) -> list[int]:
    if not (Path(run_dir) / SELECTED_DIR).exists():
        return []
    mngr = checkpoint_manager(run_dir, read_only=True, subdir=SELECTED_DIR)
    steps = sorted(mngr.all_steps())
    mngr.close()
    return steps


def restore_selected(run_dir: Path, actor_template, step: int | None = None) -> dict:
    """The selection saved at `step` (default the last) in `run_dir`: `{"actor", "avg_jct_min",
    "update"}`; `actor_template`: the actor parameters' shapes `[S, ...]` (arrays or shape structs)."""
    steps = saved_steps(run_dir)
    if not steps:
        raise FileNotFoundError(
            f"no validation selection in {Path(run_dir) / SELECTED_DIR}: the run was trained with "
            "eval.select: last (set eval.select: validation and --resume it to select from then on)"
        )
    seeds = jax.tree.leaves(actor_template)[0].shape[0]
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    like = {
        "actor": actor_template,
        "avg_jct_min": jax.ShapeDtypeStruct((seeds,), jnp.float32, sharding=sharding),
        "update": jax.ShapeDtypeStruct((seeds,), jnp.int32, sharding=sharding),
    }
    mngr = checkpoint_manager(run_dir, read_only=True, subdir=SELECTED_DIR)
    out = mngr.restore(steps[-1] if step is None else step, args=ocp.args.StandardRestore(like))
    mngr.close()
    return {
        "actor": out["actor"],
        "avg_jct_min": np.asarray(out["avg_jct_min"]),
        "update": np.asarray(out["update"]),
    }
