"""Static config of the idle-slot DAG cluster (`envs/dag/env.py`) and `make_params`, which checks a bank
against it (the params, state and observation types are `types.py`).

The semantics are `docs/dag.md`. Defaults and where they come from:
  * `moving_delay` 0 and `warmup_delay` 0 ms: the paper's model has neither (an executor switches jobs for
    free, a task lasts its duration); Decima's simulator uses 2 000 and 1 000 ms for TPC-H (its
    `param.py`), which the `decima` preset and the TPC-H configs set.
  * `reward_scale` 100 s: Decima's 1e5 ms, so a return is −Σ JCT / 100 s.
  * `max_time` 2**31 − 1 ms (none): episodes run until every job is done; a curriculum truncates by time.
  * `idle_levels` g = 10: the idle slot r·l/g in tenths of the stage's one-executor length (the paper
    names g but gives no value).
  * `task_waves` off: every task of a stage lasts the template's duration (the paper's model, and what
    lets the env fast-forward a stage's continuations in closed form). On (the `decima` preset), each task's
    duration is drawn from decima-sim's measured waves (`envs.dag_waves`), one event time per completion.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from jaxsched.core.checks import at_least
from jaxsched.envs.dag.types import DAGParams, StageCounts
from jaxsched.envs.dag.waves import DECIMA_DATA_POINTS, make_task_waves
from jaxsched.workloads.dag_bank import MAX_STAGES, MAX_TIME_MS, DAGBank

INF_MS = MAX_TIME_MS  # "never": an idle executor's `until`, a padded arrival


@dataclass(frozen=True)
class DAGConfig:
    """Static shapes: `n_executors` k (Decima's TPC-H runs: 50), `max_slots` J (jobs visible at once; more
    wait, invisible, in arrival order), `max_stages` S (the bank's padded width), `idle_levels` g.
    `max_events` caps the event times one step processes (None: run to the next decision): under `vmap`
    every env waits for the slowest, so a cap bounds a step's cost; a step that stops early returns
    `info["decision"] = False` on the next call, which only continues the forward (its action unused).
    `task_waves` draws each task's duration from decima-sim's measured waves (`envs.dag_waves`; the params
    then need `waves`)."""

    n_executors: int = 10
    max_slots: int = 16
    max_stages: int = 8
    idle_levels: int = 10
    max_events: int | None = None
    task_waves: bool = False

    def __post_init__(self):
        at_least(self, "dag", ("n_executors", "max_slots", "max_stages", "idle_levels"))
        if self.max_events is not None and self.max_events < 1:
            raise ValueError(f"dag.max_events must be >= 1 or None, got {self.max_events}")
        if self.max_stages > MAX_STAGES:
            raise ValueError(
                f"dag.max_stages must be <= {MAX_STAGES} (parent bitmasks), got {self.max_stages}"
            )


def make_params(
    config: DAGConfig,
    bank: DAGBank,
    *,
    moving_delay: int = 0,
    warmup_delay: int = 0,
    reward_scale: float = 100.0,
    max_time: int = INF_MS,
    waves=None,
    wave_points=DECIMA_DATA_POINTS,
) -> DAGParams:
    """Check the bank against the static config (padding a narrower bank to `max_stages`) and bundle the
    knobs; `waves` (a `workloads.tpch.WaveTable` of the bank's templates, in their order) is required with
    `config.task_waves` and refused without it; `wave_points` are the executor counts of decima's interval
    map (its `executor_data_point`; every one must be a key of `waves`). Errors name the field."""
    if config.task_waves and waves is None:
        raise ValueError("dag.task_waves needs the wave samples: make_params(..., waves=tpch_wave_table())")
    if waves is not None and not config.task_waves:
        raise ValueError("waves given but dag.task_waves is off (set it to sample task durations from them)")
    s_bank = bank.max_stages
    if s_bank > config.max_stages:
        widest = int(np.max(np.asarray(bank.n_stages)))
        raise ValueError(
            f"bank: templates have up to {widest} stages (padded to {s_bank}), wider than "
            f"dag.max_stages = {config.max_stages}"
        )
    widest_stage = int(np.max(np.asarray(bank.n_tasks), initial=0))
    layout = StageCounts(config.n_executors)
    if layout.task_bits < 1 or widest_stage > layout.max_tasks:
        raise ValueError(
            f"bank.n_tasks: stages of up to {widest_stage} tasks do not fit the per-stage counters at "
            f"dag.n_executors = {config.n_executors} (at most {max(layout.max_tasks, 0)} tasks a stage; "
            "envs.dag.types.StageCounts)"
        )
    if s_bank < config.max_stages:
        pad = config.max_stages - s_bank
        bank = bank.replace(
            **{
                f: jnp.pad(getattr(bank, f), ((0, 0), (0, pad)))
                for f in ("parents", "n_tasks", "duration", "height", "bottom")
            }
        )
    for name, value in (("moving_delay", moving_delay), ("warmup_delay", warmup_delay)):
        if not 0 <= value < 10**8:
            raise ValueError(f"dag.{name} must be in [0, 1e8) ms, got {value}")
    if not reward_scale > 0:
        raise ValueError(f"dag.reward_scale must be > 0 s, got {reward_scale}")
    if not 0 < max_time <= INF_MS:
        raise ValueError(f"dag.max_time must be in (0, 2**31) ms, got {max_time}")
    if waves is not None:
        waves = make_task_waves(
            waves,
            bank.n_stages,
            bank.duration,
            n_executors=config.n_executors,
            max_stages=config.max_stages,
            data_points=wave_points,
        )
    return DAGParams(
        bank=bank,
        moving_delay=jnp.int32(moving_delay),
        warmup_delay=jnp.int32(warmup_delay),
        reward_scale=jnp.float32(reward_scale),
        max_time=jnp.int32(max_time),
        waves=waves,
    )
