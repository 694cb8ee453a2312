"""Static config, params, state and observation of the idle-slot DAG cluster (`envs/dag/env.py`).

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
from flax import struct

from jaxsched.core.checks import at_least
from jaxsched.envs.dag.waves import DECIMA_DATA_POINTS, TaskWaves, make_task_waves
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


@dataclass(frozen=True)
class StageCounts:
    """How a stage's counters share one `i32` word (`DAGState.counts`), from the static executor count:
    bits [0, T) tasks not started (`left`), then K bits each executors running its tasks and executors
    moving to it (K = bit length of k, both <= k), then three flags — touched (a dispatch or a move ever
    went to it), delayed (it had its idle slot), selected (chosen in this scheduling round). T = 28 − 2K
    (16 bits, 65,535 tasks a stage, at k = 50): `make_params` refuses a bank with wider stages.

    One word instead of five arrays: an event's count updates are one scatter-add of packed increments
    (the fields never borrow: each stays >= 0), a read is one gather, and the state carries, selects and
    resets one `[J, S]` array where it carried five."""

    n_executors: int

    @property
    def k_bits(self) -> int:
        return max(1, self.n_executors.bit_length())

    @property
    def task_bits(self) -> int:
        return 28 - 2 * self.k_bits

    @property
    def max_tasks(self) -> int:
        return (1 << self.task_bits) - 1

    def _shift(self, field: str) -> int:
        t, k = self.task_bits, self.k_bits
        return {"running": t, "moving": t + k, "touched": t + 2 * k, "delayed": t + 2 * k + 1,
                "selected": t + 2 * k + 2}[field]  # fmt: skip

    def flag(self, field: str) -> int:
        """The bit of flag `field` (touched, delayed, selected)."""
        return 1 << self._shift(field)

    def left(self, c):
        return c & self.max_tasks

    def running(self, c):
        return jnp.right_shift(c, self._shift("running")) & ((1 << self.k_bits) - 1)

    def moving(self, c):
        return jnp.right_shift(c, self._shift("moving")) & ((1 << self.k_bits) - 1)

    def has(self, c, field: str):
        """`bool`: flag `field` set in `c`."""
        return (c & self.flag(field)) != 0

    def pack(self, left=0, running=0, moving=0):
        """A packed increment (each part may be negative where the field stays >= 0)."""
        return left + running * (1 << self._shift("running")) + moving * (1 << self._shift("moving"))


@struct.dataclass
class DAGParams:
    """The bank and every numeric knob (ms unless named): `moving_delay`, `warmup_delay` i32,
    `reward_scale` f32 seconds, `max_time` i32 (truncation), `waves` (`task_waves` only, else None)."""

    bank: DAGBank
    moving_delay: jnp.ndarray
    warmup_delay: jnp.ndarray
    reward_scale: jnp.ndarray
    max_time: jnp.ndarray
    waves: TaskWaves | None = None


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
            "envs.dag.params.StageCounts)"
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


@struct.dataclass
class DAGState:
    t: jnp.ndarray  # i32 ms
    ep: jnp.ndarray  # i32 episode index in the bank
    seed: jnp.ndarray  # u32 the episode's task-duration draws (`task_waves`; envs.dag_waves)
    n_jobs: jnp.ndarray  # i32 jobs in the episode
    next_arr: jnp.ndarray  # i32 jobs [0, next_arr) have arrived
    next_admit: jnp.ndarray  # i32 jobs [0, next_admit) have had a slot
    n_finished: jnp.ndarray  # i32
    slot_job: jnp.ndarray  # i32[J] episode job index, -1 empty
    slot_tmpl: jnp.ndarray  # i32[J] template index (0 when empty)
    slot_arrival: jnp.ndarray  # i32[J] ms
    # i32[J, S] packed (`StageCounts`): tasks not started, executors running / moving to it, flags touched,
    # delayed (had its one idle slot), selected (chosen in this scheduling round; cleared by a trigger)
    counts: jnp.ndarray
    hold_until: jnp.ndarray  # i32[J, S] end of the idle timer (0: never delayed)
    # The slot's template, cached at admission; like the counts above, stale once the slot's job left
    # (every reader masks by `stage_bits`) until the next admission overwrites it.
    duration: jnp.ndarray  # i32[J, S] task duration, ms
    parents: jnp.ndarray  # i32[J, S] parent bitmask
    stage_bits: jnp.ndarray  # i32[J] bit s set: stage s exists (0 in empty slots; S <= 31)
    fin_bits: jnp.ndarray  # i32[J] bit s set: stage s finished (kept per event: no reduction over S per use)
    forwarding: jnp.ndarray  # bool the last step stopped at `max_events` before a decision was due
    ex_state: jnp.ndarray  # i32[k] 0 idle, 1 running, 2 moving
    ex_until: jnp.ndarray  # i32[k] end of the task or the move, INF_MS when idle
    ex_job: jnp.ndarray  # i32[k] episode job last run for / moving to, -1 none
    ex_slot: jnp.ndarray  # i32[k] that job's slot (valid while the job is in the system)
    ex_stage: jnp.ndarray  # i32[k] stage of the last task / move target, -1 none
    ex_warm: jnp.ndarray  # bool[k] has run a task of ex_job
    jct: jnp.ndarray  # i32[N] ms per episode job, -1 unfinished
    # running tallies for the metrics
    last_finish: jnp.ndarray  # i32 ms
    sum_jct: jnp.ndarray  # f32 s
    n_selections: jnp.ndarray  # i32 valid actions
    n_delayed: jnp.ndarray  # i32 valid actions with r > 0
    idle_total: jnp.ndarray  # f32 s of inserted idle
    invalid: jnp.ndarray  # i32
    n_waited: jnp.ndarray  # i32 jobs that waited for a slot
    events: jnp.ndarray  # i32 event times processed
    ret: jnp.ndarray  # f32 Σ rewards


@struct.dataclass
class DAGObs:
    """What a policy sees (J slots × S stages; k executors): raw counts, times (ms unless named) and masks.
    The network's float inputs are derived from these (`nn.idle_dag.network_inputs`).

    Per stage, [J, S] (0 in padding and in empty slots), read as properties: remaining (tasks neither started
      nor covered by a moving executor), not_started (tasks not started), duration (task duration),
      on_stage (executors running it), parents (bitmask), height i32; delayed (had its idle slot), held (its
      timer runs), stage_valid bool; bottom f32 (s, the longest path to a sink).
    Per job slot, [J]: job_valid bool, job_order i32 (episode index, -1 empty), arrival i32, bound i32
      (executors running or moving for it), work, crit f32 (s: total work, critical path), width f32 (the
      paper's average width).
    Action masks: stage_mask bool[J·S] (runnable stages while an executor is idle), idle_ok bool[J·S]
      (r > 0 allowed), limit_min i32[J] (the smallest valid limit p = bound + 1; a_limit = p − 1).
    Cluster: n_idle i32 (idle executors), n_waiting i32 (arrived jobs waiting for a slot), t i32.

    The per-stage fields are stored as the env holds them — the packed `counts` (`StageCounts`), the timer
    ends, the slots' template arrays, unmasked, and `stage_bits` i32[J] — and unpacked where read (the
    properties work under any leading batch axes): a step writes four `[J, S]` arrays for them, not ten.
    """

    counts: jnp.ndarray  # i32[J, S] packed per-stage counters (StageCounts), stale where not stage_valid
    hold_until: jnp.ndarray  # i32[J, S] idle-timer ends
    stage_duration: jnp.ndarray  # i32[J, S] as the slot's template has it (stale in an empty slot)
    stage_parents: jnp.ndarray  # i32[J, S]
    stage_height: jnp.ndarray  # i32[J, S]
    stage_bottom: jnp.ndarray  # f32[J, S]
    stage_bits: jnp.ndarray  # i32[J] bit s: stage s exists (0 in an empty slot)
    job_valid: jnp.ndarray
    job_order: jnp.ndarray
    arrival: jnp.ndarray
    bound: jnp.ndarray
    work: jnp.ndarray
    crit: jnp.ndarray
    width: jnp.ndarray
    stage_mask: jnp.ndarray
    idle_ok: jnp.ndarray
    limit_min: jnp.ndarray
    n_idle: jnp.ndarray
    n_waiting: jnp.ndarray
    t: jnp.ndarray
    n_executors: int = struct.field(pytree_node=False)  # the counts' layout

    @property
    def stage_valid(self):
        s = jnp.arange(self.counts.shape[-1], dtype=jnp.int32)
        return (jnp.right_shift(jnp.asarray(self.stage_bits)[..., None], s) & 1) == 1

    def _masked(self, x):
        return x * self.stage_valid

    @property
    def _layout(self) -> StageCounts:
        return StageCounts(self.n_executors)

    @property
    def remaining(self):
        # movers en route can outnumber the tasks left (executors that continued took them first): 0 then
        lay = self._layout
        return self._masked(jnp.maximum(lay.left(self.counts) - lay.moving(self.counts), 0))

    @property
    def not_started(self):
        return self._masked(self._layout.left(self.counts))

    @property
    def on_stage(self):
        return self._masked(self._layout.running(self.counts))

    @property
    def delayed(self):
        return self._layout.has(self.counts, "delayed") & self.stage_valid

    @property
    def held(self):
        return (self.hold_until > jnp.asarray(self.t)[..., None, None]) & self.stage_valid

    @property
    def duration(self):
        return self._masked(self.stage_duration)

    @property
    def parents(self):
        return self._masked(self.stage_parents)

    @property
    def height(self):
        return self._masked(self.stage_height)

    @property
    def bottom(self):
        return self._masked(self.stage_bottom)
