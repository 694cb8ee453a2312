"""The idle-slot DAG cluster's params, state and observation (`envs/dag/env.py`), each field with its
shape and dtype (J job slots, S stages, k executors, N jobs of an episode), and `StageCounts`, the layout
of a stage's packed counters. The static config and `make_params` are `params.py`."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
from flax import struct

from jaxsched.envs.dag.waves import TaskWaves
from jaxsched.workloads.dag_bank import DAGBank


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

    bank: DAGBank  # the episodes' jobs and templates (`workloads.dag_bank`)
    moving_delay: jnp.ndarray  # i32 ms: an executor moving to another job
    warmup_delay: jnp.ndarray  # i32 ms: an executor's first task of a job lasts that much longer
    reward_scale: jnp.ndarray  # f32 s: a step's reward is −(Σ jobs in the system × Δt) / reward_scale
    max_time: jnp.ndarray  # i32 ms: the episode is truncated there
    waves: TaskWaves | None = None  # decima-sim's measured task waves (`task_waves` only)


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
    job_valid: jnp.ndarray  # bool[J] a job holds the slot
    job_order: jnp.ndarray  # i32[J] its episode index, -1 empty
    arrival: jnp.ndarray  # i32[J] ms
    bound: jnp.ndarray  # i32[J] executors running or moving for it
    work: jnp.ndarray  # f32[J] s: its total work
    crit: jnp.ndarray  # f32[J] s: its critical path
    width: jnp.ndarray  # f32[J] the paper's average width
    stage_mask: jnp.ndarray  # bool[J·S] runnable stages while an executor is idle
    idle_ok: jnp.ndarray  # bool[J·S] an idle slot r > 0 allowed
    limit_min: jnp.ndarray  # i32[J] the smallest valid parallelism limit (bound + 1)
    n_idle: jnp.ndarray  # i32 idle executors
    n_waiting: jnp.ndarray  # i32 arrived jobs waiting for a slot
    t: jnp.ndarray  # i32 ms
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
