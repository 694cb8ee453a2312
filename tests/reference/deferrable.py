"""A plain-Python reference of OSDEC's deferrable-job cloud (shared/papers/003_*.txt §3–4).

Written from the paper and the semantics in `jaxsched/envs/deferrable/env.py`'s docstring, not from the JAX
code: a list of job dicts, a sort, a loop. The differential tests drive it and `DeferrableEnv` with the
same scores (one per job, looked up by job index) and compare rewards, the visible job sets and metrics.

The model, step by step, at time t (0 <= t < horizon):
  * visible pending jobs: submitted (g <= t) and admitted in submit order while fewer than `pending_slots`
    are pending (the rest wait, each counted once per step in `backlog`), not started, not expired;
  * candidates: pending jobs with e <= t (and, with `defer_negative`, score >= 0);
  * sorted by (score descending, job index ascending); the longest prefix whose cores sum to at most
    C_t − running cores starts at t;
  * reward: Σ_started (c·d − ω1 (t − e)) − ω2 max(0, running cores before the starts − C_t);
  * t + 1: jobs with start + d <= t + 1 leave; new submissions are admitted; pending jobs with l < t + 1
    expire. The episode ends at t = horizon.
Heuristics: `first_fit_choice` walks the candidates in a heuristic order and takes each that fits.
"""

from __future__ import annotations

import numpy as np


class RefDeferrable:
    """`jobs`: dict of int arrays (cores, duration, earliest, latest, submit), sorted by submit;
    `capacity`: ints, at least `horizon` long."""

    def __init__(self, jobs, capacity, horizon, pending_slots, w_delay=2.0, w_violation=10.0,
                 defer_negative=False):  # fmt: skip
        n = len(jobs["submit"])
        self.jobs = [{k: int(jobs[k][i]) for k in ("cores", "duration", "earliest", "latest", "submit")}
                     for i in range(n)]  # fmt: skip
        self.capacity = [int(c) for c in capacity]
        self.horizon, self.slots = horizon, pending_slots
        self.w_delay, self.w_violation = np.float32(w_delay), np.float32(w_violation)
        self.defer_negative = defer_negative
        self.t = 0
        self.next = 0  # the next submission not yet visible
        self.pending: list[int] = []  # visible job indices
        self.running: dict[int, int] = {}  # job -> end
        self.start: dict[int, int] = {}  # job -> start step
        self.m = dict(utilization=0, delay=0, violation=0, violation_steps=0, started=0, expired=0,
                      backlog=0, busy=0, offered=0)  # fmt: skip
        self.total_reward = np.float32(0)
        self.history: list[list[float]] = []  # per step: C, load, candidates, their mean cores and
        # duration, violation, jobs and cores started
        self._arrive()

    # ---- what the agent sees ------------------------------------------------------------------------
    def load(self) -> int:
        return sum(self.jobs[j]["cores"] for j in self.running)

    def candidates(self) -> list[int]:
        return [j for j in self.pending if self.jobs[j]["earliest"] <= self.t]

    def last_rows(self, k: int) -> np.ndarray:
        """The last `k` history rows, oldest first, zeros before step 0."""
        rows = [[0.0] * 8] * max(0, k - len(self.history)) + self.history[-k:] if k else []
        return np.asarray(rows, np.float64)[-k:]

    @property
    def done(self) -> bool:
        return self.t >= self.horizon

    # ---- one step -----------------------------------------------------------------------------------
    def step(self, score: dict[int, float]) -> float:
        """`score[job]` for (at least) every candidate; returns the reward."""
        t, cap, load = self.t, self.capacity[self.t], self.load()
        cand = self.candidates()
        n = max(len(cand), 1)
        row = [cap, load, len(cand), sum(self.jobs[j]["cores"] for j in cand) / n,
               sum(self.jobs[j]["duration"] for j in cand) / n]  # fmt: skip
        if self.defer_negative:
            cand = [j for j in cand if score[j] >= 0]
        cand.sort(key=lambda j: (-score[j], j))
        taken, used = [], 0
        for j in cand:  # the longest fitting prefix
            if used + self.jobs[j]["cores"] > cap - load:
                break
            taken.append(j)
            used += self.jobs[j]["cores"]
        util = sum(self.jobs[j]["cores"] * self.jobs[j]["duration"] for j in taken)
        delay = sum(t - self.jobs[j]["earliest"] for j in taken)
        viol = max(0, load - cap)
        reward = np.float32(util) - self.w_delay * np.float32(delay) - self.w_violation * np.float32(viol)
        self.history.append(row + [viol, len(taken), used])
        for j in taken:
            self.pending.remove(j)
            self.running[j] = t + self.jobs[j]["duration"]
            self.start[j] = t
        m = self.m
        m["utilization"] += util
        m["delay"] += delay
        m["violation"] += viol
        m["violation_steps"] += viol > 0
        m["started"] += len(taken)
        m["busy"] += load + used
        m["offered"] += cap
        self.total_reward = np.float32(self.total_reward + reward)
        self.t += 1
        self._arrive()
        return float(reward)

    def _arrive(self) -> None:
        t = self.t
        self.running = {j: end for j, end in self.running.items() if end > t}
        due = lambda: self.next < len(self.jobs) and self.jobs[self.next]["submit"] <= t  # noqa: E731
        while due() and len(self.pending) < self.slots:
            self.pending.append(self.next)
            self.next += 1
        self.m["backlog"] += sum(1 for j in range(self.next, len(self.jobs)) if self.jobs[j]["submit"] <= t)
        gone = [j for j in self.pending if self.jobs[j]["latest"] < t]
        self.m["expired"] += len(gone)
        self.pending = [j for j in self.pending if j not in gone]

    def metrics(self) -> dict[str, float]:
        m = self.m
        return {
            "utilization": m["utilization"],
            "delay": m["delay"],
            "delay_penalty": float(self.w_delay) * m["delay"],
            "total_reward": float(self.total_reward),
            "violation": m["violation"],
            "violation_share": m["violation_steps"] / max(self.t, 1),
            "expired": m["expired"],
            "started": m["started"],
            "capacity_share": m["busy"] / max(m["offered"], 1),
            "backlog": m["backlog"],
        }


# ---- heuristics -------------------------------------------------------------------------------------
def first_fit_choice(ref: RefDeferrable, order: str) -> set[int]:
    """The candidates that FIFO / SJF / Tetris start: walk them in the heuristic's order, take each that
    still fits C_t − running cores."""
    keys = {
        "fifo": lambda j: (j,),
        "sjf": lambda j: (ref.jobs[j]["duration"], j),
        "tetris": lambda j: (-ref.jobs[j]["cores"], j),
    }[order]
    free = ref.capacity[ref.t] - ref.load()
    chosen = set()
    for j in sorted(ref.candidates(), key=keys):
        if ref.jobs[j]["cores"] <= free:
            chosen.add(j)
            free -= ref.jobs[j]["cores"]
    return chosen


def heuristic_scores(ref: RefDeferrable, order: str) -> dict[int, float]:
    chosen = first_fit_choice(ref, order)
    return {j: (1.0 if j in chosen else -1.0) for j in ref.pending}
