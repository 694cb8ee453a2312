"""Checkpoint selection on validation episodes, for any system (`eval.select: validation`).

The last checkpoint of an RL run is often not its best: a greedy scheduling policy can move by a lot from
one checkpoint to the next. With selection on, the trainer validates every seed's policy on validation
episodes of the *training* bank (the system chooses them and the score, lower is better) after the start
and after every chunk, and keeps, per seed, the policy with the best score so far. The test episodes see
only that policy, once, at the end: they play no part in the choice.

    selector = ValidationSelector(run_dir, validate, resuming, extract, metric="avg_wait")
    train_chunks(..., on_checkpoint=selector)              # validates and keeps the best per seed
    best = restore_selected(run_dir, template, metric="avg_wait")   # {"policy", "avg_wait", "update"}

`validate(policy [S, ...]) -> score [S, V]` (V validation episodes), `extract(runner) -> policy [S, ...]`
(what of the runner acts: DAS's actor parameters, DBF's network and observation statistics).

Run-directory files:
  * `validation.jsonl`: one line per checkpoint, `{"update", <metric>: [S], "best_update": [S]}`;
  * `selected/<update>/`: the selection after that checkpoint (orbax; the last two kept, like the
    runner's), `{<params_key>: [S, ...], <metric>: f32[S], "update": i32[S]}`. It is saved before the
    runner's checkpoint of the same update, so a resumed run finds it and continues the same selection.
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

SELECTED_DIR = "selected"
VALIDATION_FILE = "validation.jsonl"
SELECT = ("last", "validation")  # the values of a config's `eval.select`


def keep_better(best: dict, policy, score: np.ndarray, update: int, metric: str, params_key: str) -> dict:
    """Per seed, the better (strictly lower `score` `[S]`; ties keep the earlier) of `best` and the
    candidate `policy` (`[S, ...]`) at `update`."""
    better = score < best[metric]

    def pick(new, old):
        return jnp.where(better.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

    return {
        params_key: jax.tree.map(pick, policy, best[params_key]),
        metric: np.where(better, score, best[metric]).astype(np.float32),
        "update": np.where(better, update, best["update"]).astype(np.int32),
    }


def _abstract(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree)


class ValidationSelector:
    """`train_chunks`' `on_checkpoint` hook: validates each checkpoint's policy and keeps each seed's best
    (module docstring). `resuming`: the runner it first sees was restored from a checkpoint."""

    def __init__(self, run_dir: Path, validate, resuming: bool, extract, metric: str,
                 params_key: str = "policy", label: str | None = None):  # fmt: skip
        self.run_dir = Path(run_dir)
        self.validate, self.extract = validate, extract
        self.resuming = resuming
        self.metric, self.params_key = metric, params_key
        self.label = label or f"val {metric}"
        self.best: dict | None = None
        self.last: np.ndarray | None = None  # [S] scores of the latest validated checkpoint
        self.seen: set[int] = set()

    def __call__(self, runner, update: int) -> str:
        policy = self.extract(runner)
        if self.best is None:
            self._start(policy, update)
        elif update not in self.seen:
            self._consider(policy, update)
        return f"{self.label} {self.last.mean():,.4g} (best {self.best[self.metric].mean():,.4g})"

    def _start(self, policy, update: int) -> None:
        steps = saved_steps(self.run_dir)
        for step in steps:
            if step > update:  # saved just before a kill that lost the runner's checkpoint of that update
                shutil.rmtree(self.run_dir / SELECTED_DIR / str(step))
        if self.resuming and update in steps:
            template = _abstract(policy)
            self.best = restore_selected(self.run_dir, template, self.metric, self.params_key, update)
            lines = self._keep_lines(upto=update)
            self.last = np.asarray(lines[-1][self.metric] if lines else self.best[self.metric])
            return
        if not self.resuming:  # a fresh start: drop what a run killed before its first checkpoint left
            shutil.rmtree(self.run_dir / SELECTED_DIR, ignore_errors=True)
        # (A resume of a run trained with `select: last` starts selecting at its last checkpoint.)
        self._keep_lines(upto=update if self.resuming else -1)
        seeds = jax.tree.leaves(policy)[0].shape[0]
        self.best = {self.params_key: policy, self.metric: np.full(seeds, np.inf, np.float32),
                     "update": np.full(seeds, -1)}  # fmt: skip
        self._consider(policy, update)

    def _consider(self, policy, update: int) -> None:
        score = np.asarray(self.validate(policy), np.float64).mean(axis=1).astype(np.float32)  # [S]
        self.best = keep_better(self.best, policy, score, update, self.metric, self.params_key)
        self.last = score
        mngr = checkpoint_manager(self.run_dir, subdir=SELECTED_DIR)
        mngr.save(update, args=ocp.args.StandardSave(self.best))
        mngr.wait_until_finished()
        mngr.close()
        line = {"update": update, self.metric: score.tolist(), "best_update": self.best["update"].tolist()}
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


def restore_selected(run_dir: Path, template, metric: str, params_key: str = "policy",
                     step: int | None = None) -> dict:  # fmt: skip
    """The selection saved at `step` (default the last) in `run_dir`: `{params_key, metric, "update"}`;
    `template`: the policy's shapes `[S, ...]` (arrays or shape structs)."""
    steps = saved_steps(run_dir)
    if not steps:
        raise FileNotFoundError(
            f"no validation selection in {Path(run_dir) / SELECTED_DIR}: the run was trained with "
            "eval.select: last (set eval.select: validation and --resume it to select from then on)"
        )
    seeds = jax.tree.leaves(template)[0].shape[0]
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    like = {
        params_key: template,
        metric: jax.ShapeDtypeStruct((seeds,), jnp.float32, sharding=sharding),
        "update": jax.ShapeDtypeStruct((seeds,), jnp.int32, sharding=sharding),
    }
    mngr = checkpoint_manager(run_dir, read_only=True, subdir=SELECTED_DIR)
    out = mngr.restore(steps[-1] if step is None else step, args=ocp.args.StandardRestore(like))
    mngr.close()
    return {params_key: out[params_key], metric: np.asarray(out[metric]), "update": np.asarray(out["update"])}
