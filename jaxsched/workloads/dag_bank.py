"""DAG job templates and episodes: the workload bank of the idle-slot DAG env (`envs/dag/env.py`).

A *template* is one job DAG: `n_stages` stages, each with `n_tasks` tasks of `duration` ms and a parent
bitmask (bit p of `parents[s]` set iff stage p -> s). Templates are padded to `S` stages (<= 31, so a
bitmask fits an int32). An *episode* is a sequence of jobs: template index and arrival time (ms, sorted),
padded to `N` jobs. The env draws an episode at reset and gathers a template per admitted job.

`DAGTemplates.from_lists` builds and validates templates from plain Python (adjacency lists or matrices);
`template_features` computes, once per template, what the paper's features and the graph network need
(critical path, average width, bottom levels, heights); `make_bank` joins templates and episodes;
`pad_bank` pads a bank to a larger one's shapes (the same episodes, one compiled program for both).

Every check raises a one-line `ValueError` naming the source (`where`), the field and the offender.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from flax import struct

MAX_STAGES = 31  # a parent bitmask per stage must fit an int32
MAX_TIME_MS = 2**31 - 1


@dataclass(frozen=True)
class DAGTemplates:
    """Host-side templates, `[T, S]` padded (numpy). `name[t]` says where template t came from."""

    n_stages: np.ndarray  # i32[T]
    parents: np.ndarray  # i32[T, S] parent bitmask, 0 beyond n_stages
    n_tasks: np.ndarray  # i32[T, S] >= 1 inside, 0 beyond
    duration: np.ndarray  # i32[T, S] task duration, ms, >= 1 inside, 0 beyond
    name: tuple[str, ...]

    @property
    def n_templates(self) -> int:
        return int(self.n_stages.shape[0])

    @property
    def max_stages(self) -> int:
        return int(self.parents.shape[1])

    @staticmethod
    def from_lists(dags: list[dict], max_stages: int | None = None) -> DAGTemplates:
        """`dags[i]` = {"name": str, "adj": bool[n, n] (adj[p, c]: p -> c), "n_tasks": [n], "duration": [n]
        (ms)}. Validates each (cycle, sizes, positivity) and pads to `max_stages` (default: the widest)."""
        widest = max((len(d["n_tasks"]) for d in dags), default=1)
        s_max = widest if max_stages is None else max_stages
        if not 1 <= s_max <= MAX_STAGES:
            raise ValueError(f"max_stages: {s_max} is outside [1, {MAX_STAGES}]")
        t = len(dags)
        n_stages = np.zeros(t, np.int32)
        parents = np.zeros((t, s_max), np.int32)
        n_tasks = np.zeros((t, s_max), np.int32)
        duration = np.zeros((t, s_max), np.int32)
        names = []
        for i, d in enumerate(dags):
            where = d.get("name", f"dag {i}")
            adj = np.asarray(d["adj"]).astype(bool)
            tasks = np.asarray(d["n_tasks"])
            dur = np.asarray(d["duration"], dtype=np.float64)
            n = tasks.shape[0]
            check_dag(where, adj, tasks, dur, s_max)
            n_stages[i] = n
            for c in range(n):
                parents[i, c] = sum(1 << p for p in range(n) if adj[p, c])
            n_tasks[i, :n] = tasks
            duration[i, :n] = dur
            names.append(where)
        return DAGTemplates(n_stages, parents, n_tasks, duration, tuple(names))

    def concat(self, other: DAGTemplates) -> DAGTemplates:
        """Both template sets in one, padded to the wider `S` (templates of `self` first)."""
        s = max(self.parents.shape[1], other.parents.shape[1])

        def pad(a):
            return np.pad(a, ((0, 0), (0, s - a.shape[1])))

        return DAGTemplates(
            np.concatenate([self.n_stages, other.n_stages]),
            np.concatenate([pad(self.parents), pad(other.parents)]),
            np.concatenate([pad(self.n_tasks), pad(other.n_tasks)]),
            np.concatenate([pad(self.duration), pad(other.duration)]),
            self.name + other.name,
        )


def check_dag(
    where: str, adj: np.ndarray, n_tasks: np.ndarray, duration: np.ndarray, max_stages: int
) -> None:
    """One DAG's checks: square adjacency matching the stage count, no more than `max_stages` stages,
    no self-loop or cycle, every stage with >= 1 task and a finite duration >= 1 ms."""
    n = n_tasks.shape[0]
    if adj.shape != (n, n):
        raise ValueError(f"{where}: adj has shape {adj.shape}, expected ({n}, {n}) from n_tasks")
    if n < 1:
        raise ValueError(f"{where}: n_tasks is empty (a job needs >= 1 stage)")
    if n > max_stages:
        raise ValueError(f"{where}: {n} stages is wider than max_stages = {max_stages}")
    if duration.shape != (n,):
        raise ValueError(
            f"{where}: duration has {duration.shape[0] if duration.ndim else 0} entries for {n} stages"
        )
    bad = np.flatnonzero(~np.isfinite(duration) | (duration < 1))
    if bad.size:
        raise ValueError(
            f"{where}: duration[{bad[0]}] = {duration[bad[0]]} (need a finite task duration >= 1 ms)"
        )
    bad = np.flatnonzero(n_tasks < 1)
    if bad.size:
        raise ValueError(f"{where}: n_tasks[{bad[0]}] = {n_tasks[bad[0]]} (need >= 1 task)")
    if topological_order(adj) is None:
        raise ValueError(f"{where}: adj has a cycle (a job must be a DAG)")


def topological_order(adj: np.ndarray) -> list[int] | None:
    """Kahn's order of a `bool[n, n]` adjacency (`adj[p, c]`: p -> c), or None if it has a cycle."""
    n = adj.shape[0]
    indeg = adj.sum(axis=0).astype(int)
    ready = [i for i in range(n) if indeg[i] == 0]
    order = []
    while ready:
        p = ready.pop(0)
        order.append(p)
        for c in np.flatnonzero(adj[p]):
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(int(c))
    return order if len(order) == n else None


@dataclass(frozen=True)
class TemplateFeatures:
    """Per template: `work` and `crit` (f64[T], ms), `width` (f64[T]), and per stage `bottom` (f64[T, S],
    ms: the longest Σ L from the stage to a sink, itself included) and `height` (i32[T, S]: edges on the
    longest path to a sink; 0 for sinks and padding)."""

    work: np.ndarray
    crit: np.ndarray
    width: np.ndarray
    bottom: np.ndarray
    height: np.ndarray


def template_features(tm: DAGTemplates) -> TemplateFeatures:
    """The paper's job features (critical path length, average width = Σ L / critical path, Fig. 3) and
    the graph network's levels, computed once per template (one reverse topological sweep)."""
    t, s = tm.parents.shape
    length = tm.n_tasks.astype(np.float64) * tm.duration.astype(np.float64)  # L[s], ms
    bottom = np.zeros((t, s))
    height = np.zeros((t, s), np.int32)
    for i in range(t):
        n = int(tm.n_stages[i])
        adj = np.array([[(tm.parents[i, c] >> p) & 1 for c in range(n)] for p in range(n)], bool)
        for v in reversed(topological_order(adj)):
            kids = np.flatnonzero(adj[v])
            bottom[i, v] = length[i, v] + (bottom[i, kids].max() if kids.size else 0.0)
            height[i, v] = 1 + height[i, kids].max() if kids.size else 0
    work = length.sum(axis=1)
    crit = bottom.max(axis=1)
    return TemplateFeatures(work=work, crit=crit, width=work / crit, bottom=bottom, height=height)


@struct.dataclass
class DAGBank:
    """Device arrays the env reads. Templates `[T, S]`, episodes `[E, N]`.

    n_stages i32[T]; parents, n_tasks, duration (ms) i32[T, S]; height i32[T, S]; bottom f32[T, S] and
    crit, work f32[T] in seconds; width f32[T].
    template i32[E, N] (-1 padding), arrival i32[E, N] (ms, sorted, padding = MAX_TIME_MS),
    n_jobs i32[E].
    """

    n_stages: jnp.ndarray
    parents: jnp.ndarray
    n_tasks: jnp.ndarray
    duration: jnp.ndarray
    height: jnp.ndarray
    bottom: jnp.ndarray
    crit: jnp.ndarray
    work: jnp.ndarray
    width: jnp.ndarray
    template: jnp.ndarray
    arrival: jnp.ndarray
    n_jobs: jnp.ndarray

    @property
    def max_stages(self) -> int:
        return int(self.parents.shape[1])

    @property
    def max_jobs(self) -> int:
        """N: jobs per episode (padded)."""
        return int(self.template.shape[1])


def check_episodes(template: np.ndarray, arrival: np.ndarray, n_jobs: np.ndarray, n_templates: int) -> None:
    """Episodes `[E, N]`: each has >= 1 job, valid template indices, arrivals >= 0, sorted, < 2**31 ms."""
    if template.shape != arrival.shape or template.ndim != 2:
        raise ValueError(
            f"episodes: template {template.shape} and arrival {arrival.shape} must be the same [E, N]"
        )
    for e in range(template.shape[0]):
        n = int(n_jobs[e])
        if not 1 <= n <= template.shape[1]:
            raise ValueError(f"episodes: n_jobs[{e}] = {n} is outside [1, {template.shape[1]}]")
        tm, ar = template[e, :n], arrival[e, :n]
        bad = np.flatnonzero((tm < 0) | (tm >= n_templates))
        if bad.size:
            raise ValueError(f"episodes: template[{e}, {bad[0]}] = {tm[bad[0]]} is not in [0, {n_templates})")
        bad = np.flatnonzero(~np.isfinite(ar) | (ar < 0) | (ar >= MAX_TIME_MS))
        if bad.size:
            raise ValueError(f"episodes: arrival[{e}, {bad[0]}] = {ar[bad[0]]} ms is outside [0, 2**31)")
        bad = np.flatnonzero(np.diff(ar) < 0)
        if bad.size:
            raise ValueError(
                f"episodes: arrival[{e}] is not sorted (job {bad[0] + 1} arrives before job {bad[0]})"
            )


def make_bank(
    tm: DAGTemplates, template: np.ndarray, arrival: np.ndarray, n_jobs: np.ndarray | None = None
) -> DAGBank:
    """Validate and join templates with episodes (`template`, `arrival` `[E, N]`; `n_jobs[E]` defaults
    to N) into device arrays. Padding beyond `n_jobs[e]` is filled here."""
    template = np.asarray(template).astype(np.int64)
    arrival = np.asarray(arrival)
    e, n = template.shape
    n_jobs = np.full(e, n, np.int64) if n_jobs is None else np.asarray(n_jobs).astype(np.int64)
    check_episodes(template, arrival, n_jobs, tm.n_templates)
    pad = np.arange(n)[None, :] >= n_jobs[:, None]
    template = np.where(pad, -1, template)
    arrival = np.where(pad, MAX_TIME_MS, arrival)
    f = template_features(tm)
    return DAGBank(
        n_stages=jnp.asarray(tm.n_stages, jnp.int32),
        parents=jnp.asarray(tm.parents, jnp.int32),
        n_tasks=jnp.asarray(tm.n_tasks, jnp.int32),
        duration=jnp.asarray(tm.duration, jnp.int32),
        height=jnp.asarray(f.height, jnp.int32),
        bottom=jnp.asarray(f.bottom / 1000.0, jnp.float32),
        crit=jnp.asarray(f.crit / 1000.0, jnp.float32),
        work=jnp.asarray(f.work / 1000.0, jnp.float32),
        width=jnp.asarray(f.width, jnp.float32),
        template=jnp.asarray(template, jnp.int32),
        arrival=jnp.asarray(arrival, jnp.int32),
        n_jobs=jnp.asarray(n_jobs, jnp.int32),
    )


def pad_bank(bank: DAGBank, max_jobs: int, n_templates: int | None = None) -> DAGBank:
    """`bank` with its episodes padded to `max_jobs` jobs (template −1, arrival `MAX_TIME_MS`, `n_jobs`
    unchanged) and its templates to `n_templates` rows (zeros, never drawn): the same episodes in the array
    shapes of a larger bank, so one compiled program plays banks of several sizes. The env never reads past
    an episode's `n_jobs` (a per-job array such as the JCTs holds −1 there)."""
    n, t = bank.max_jobs, int(bank.n_stages.shape[0])
    n_templates = t if n_templates is None else n_templates
    if max_jobs < n or n_templates < t:
        raise ValueError(
            f"pad_bank: the bank has {n} jobs per episode and {t} templates, more than {max_jobs} and "
            f"{n_templates}"
        )

    def rows(a):
        return jnp.pad(a, ((0, n_templates - t),) + ((0, 0),) * (a.ndim - 1))

    def jobs(a, fill):
        return jnp.pad(a, ((0, 0), (0, max_jobs - n)), constant_values=fill)

    per_template = ("n_stages", "parents", "n_tasks", "duration", "height", "bottom", "crit", "work", "width")
    return bank.replace(
        **{f: rows(getattr(bank, f)) for f in per_template},
        template=jobs(bank.template, -1),
        arrival=jobs(bank.arrival, MAX_TIME_MS),
    )
