"""A plain-Python reference of SCED²'s GPU-locality cluster (Luan et al., ../shared/papers/001_*.txt,
§II–§IV), written from the text and the semantics of `sced2_spec.md` (the contract of
`jaxsched/envs/gpu_locality/env.py`), not from the JAX code: Python lists, per-GPU end times, explicit loops,
float64 arithmetic except the float32 actual-time formula the spec fixes. The differential tests drive it
and `GPULocalityEnv.step_env` with the same actions and compare every observation field, reward, flag and
the final metrics.

The model, step by step:
  * N servers × M GPUs; a GPU holds its job until the job's end `start + actual` and is free at t iff
    end <= t (completions need no processing). Every GPU's end starts at 0.
  * `packing` (§II-B, Fig. 2) places a picked job: take `rest` from the fitting server with the fewest free
    GPUs (ties: lower index) if one fits, else all of the server with the most free GPUs (ties: lower
    index), and repeat; inside a server the lowest-index idle GPUs.
  * Locality level of g GPUs over s servers: min(s − ceil(g/M), k − 1); actual run time
    ceil(f32(ideal) · f32(slowdown[model, level])) in float32. The profile (Table I) of a job is that time
    at each level l < k, clipped to the most scattered level a job of g GPUs can reach,
    top = min(min(g, N) − ceil(g/M), k − 1).
  * The waiting jobs are kept in arrival order; the window shows the first J, "behind the window" are the
    rest. Each window job carries `passed`: the forwards during which it sat in the window and fit.
  * Action i < J picks slot i: valid iff the slot shows a job with g <= total free GPUs. The job starts
    now, reward E = ideal / (wait + actual) (Eq. 2), time stays frozen (§III-C), later slots shift up and
    the first job behind the window enters the last slot. Action J is φ, valid iff an event can still
    happen (a GPU busy or a job still to arrive).
  * φ or an invalid pick: reward 0 and a forward: time moves to the next arrival or GPU release, after
    window jobs that fit get passed += 1 and the busy / fragmentation areas grow by (Δt × value now);
    every job due by the new time arrives (simultaneous events together). No event possible: nothing moves.
  * `auto_forward`: after each action (and at reset), forward while not terminated, no pick is valid and an
    event can happen.
  * Terminated when every job has been placed; truncated when `max_steps` decisions and not terminated.

`REF_HEURISTICS` / `ref_policy(name, obs)` are the baselines of §IV over this reference's observation
(fifo, sif, dsif, saf, lrf, spf), each placing through the env (packing).
"""

from __future__ import annotations

import math

import numpy as np


def packing(free: list[int], demand: int) -> list[int]:
    """GPUs taken per server: "first tries to find the server with the fewest free GPUs that can satisfy
    the job's GPU demand if possible. If there is no such server, the algorithm chooses the server with the
    most amount of free GPUs, and then the remaining GPU requirement will be satisfied by the above logic
    again" (§II-B). Ties: the lower server index. Assumes sum(free) >= demand."""
    left, take, rest = list(free), [0] * len(free), demand
    while rest > 0:
        fitting = [i for i, f in enumerate(left) if f >= rest]
        if fitting:
            i = min(fitting, key=lambda j: (left[j], j))
            amount = rest
        else:
            i = max(range(len(left)), key=lambda j: (left[j], -j))
            amount = left[i]
        left[i] -= amount
        take[i] += amount
        rest -= amount
    return take


def fragmentation(remaining: list[float]) -> float:
    """Eq. 1 for one server: 1 − (Σx)² / (n·Σx²); an idle server is 0."""
    sq = sum(x * x for x in remaining)
    if sq == 0:
        return 0.0
    return 1.0 - sum(remaining) ** 2 / (len(remaining) * sq)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def level_of(take: list[int], demand: int, gpus_per_server: int, n_levels: int) -> int:
    """Locality level of a placement: servers used beyond the fewest possible, capped at k − 1."""
    servers = sum(1 for x in take if x > 0)
    return min(servers - ceil_div(demand, gpus_per_server), n_levels - 1)


def actual_time(ideal: int, slow) -> int:
    """ceil(f32(ideal) · f32(slow)), the product rounded to float32 before the ceiling (the spec's formula;
    in float64 e.g. 10 · f32(1.1) would round up to 12 instead of 11)."""
    return int(np.ceil(np.float32(ideal) * np.float32(slow)))


class RefGPULocality:
    """Reference simulator of one episode. `jobs`: a dict of equal-length int sequences `submit` (non-
    decreasing), `gpus`, `ideal`, `model`; `slowdown`: [6][k] (float32 values), column 0 all 1."""

    def __init__(
        self,
        n_servers,
        gpus_per_server,
        window,
        n_levels,
        auto_forward,
        jobs,
        slowdown,
        sensitive_ratio=2.0,
        time_scale=3600.0,
        max_steps=10**9,
        work_conserving=False,
    ):
        self.work_conserving = bool(work_conserving)
        self.N = int(n_servers)
        self.M = int(gpus_per_server)
        self.J = int(window)
        self.k = int(n_levels)
        self.auto_forward = bool(auto_forward)
        names = ("submit", "gpus", "ideal", "model")
        cols = {c: [int(x) for x in np.asarray(jobs[c]).tolist()] for c in names}
        self.submit, self.gpus, self.ideal, self.model = (cols[c] for c in names)
        self.n_jobs = len(self.submit)
        assert all(len(v) == self.n_jobs for v in cols.values())
        assert self.submit == sorted(self.submit), "submit must be non-decreasing"
        assert all(1 <= g <= self.N * self.M for g in self.gpus)
        table = np.asarray(slowdown, np.float32)
        assert table.shape == (6, self.k), table.shape
        self.slow32 = [[np.float32(x) for x in row] for row in table]
        self.sensitive_ratio = float(sensitive_ratio)
        self.time_scale = float(time_scale)
        self.max_steps = int(max_steps)

    # ---- per-job constants ----------------------------------------------------------------------
    def top_level(self, j: int) -> int:
        g = self.gpus[j]
        return min(min(g, self.N) - ceil_div(g, self.M), self.k - 1)

    def profile(self, j: int) -> list[int]:
        """Table I's profiling: the run time at each level l < k, clipped to the job's top level."""
        top = self.top_level(j)
        row = self.slow32[self.model[j]]
        return [actual_time(self.ideal[j], row[min(level, top)]) for level in range(self.k)]

    def sensitive(self, j: int) -> bool:
        """slowdown[model, 1] >= sensitive_ratio (no level 1 when k == 1: never sensitive)."""
        return self.k > 1 and float(self.slow32[self.model[j]][1]) >= self.sensitive_ratio

    # ---- episode --------------------------------------------------------------------------------
    def reset(self):
        self.t0 = self.t = self.submit[0]
        self.end = [[0] * self.M for _ in range(self.N)]  # per GPU: its current (last) job's end
        self.last_g = [[0] * self.M for _ in range(self.N)]  # per GPU: gpus of its last job, 0 = never used
        self.n_arrived = 0  # submits are non-decreasing: the arrived jobs are a prefix
        self.waiting = []  # arrived, unplaced jobs in arrival order; the window is waiting[:J]
        self.passed = {}  # job -> forwards it sat in the window and fit
        self.placed = []  # one dict per placed job
        self.area_busy = 0.0
        self.area_frag = 0.0
        self.steps = 0
        self.forwards = 0
        self.invalid = 0
        self._arrive()
        if self.auto_forward:
            self._auto_forward()
        return self.observe()

    def _arrive(self):
        """Every job with submit <= t arrives (simultaneous arrivals together), entering with passed 0."""
        while self.n_arrived < self.n_jobs and self.submit[self.n_arrived] <= self.t:
            self.waiting.append(self.n_arrived)
            self.passed[self.n_arrived] = 0
            self.n_arrived += 1

    # ---- derived quantities ---------------------------------------------------------------------
    def window_jobs(self) -> list[int]:
        return self.waiting[: self.J]

    def behind(self) -> list[int]:
        return self.waiting[self.J :]

    def free_per_server(self) -> list[int]:
        return [sum(1 for e in self.end[i] if e <= self.t) for i in range(self.N)]

    def total_free(self) -> int:
        return sum(self.free_per_server())

    def n_busy(self) -> int:
        return self.N * self.M - self.total_free()

    def frag_now(self) -> float:
        """Mean over servers of Eq. 1 on the remaining times max(end − t, 0)."""
        per = [fragmentation([max(e - self.t, 0) for e in self.end[i]]) for i in range(self.N)]
        return sum(per) / self.N

    def event_possible(self) -> bool:
        busy = any(e > self.t for row in self.end for e in row)
        return busy or self.n_arrived < self.n_jobs

    def terminated(self) -> bool:
        return len(self.placed) == self.n_jobs

    def mask(self) -> list[bool]:
        free = self.total_free()
        win = self.window_jobs()
        picks = [i < len(win) and self.gpus[win[i]] <= free for i in range(self.J)]
        # work_conserving: φ only when no window job fits
        return picks + [self.event_possible() and not (self.work_conserving and any(picks))]

    # ---- one decision ---------------------------------------------------------------------------
    def step(self, action):
        action = int(action)
        mask = self.mask()
        self.steps += 1
        reward = 0.0
        if 0 <= action < self.J and mask[action]:
            reward = self._place(self.waiting.pop(action))
        else:
            if action == self.J and mask[self.J]:
                self.forwards += 1
            else:
                self.invalid += 1  # an invalid pick or a masked φ
            self._forward()
        if self.auto_forward:
            self._auto_forward()
        terminated = self.terminated()
        truncated = self.steps >= self.max_steps and not terminated
        return self.observe(), reward, terminated, truncated

    def _place(self, j: int) -> float:
        """Start job j now on the packing placement; returns its E."""
        g = self.gpus[j]
        take = packing(self.free_per_server(), g)
        level = level_of(take, g, self.M, self.k)
        actual = actual_time(self.ideal[j], self.slow32[self.model[j]][level])
        wait = self.t - self.submit[j]
        gpus_taken = []
        for i, amount in enumerate(take):
            idle = [m for m in range(self.M) if self.end[i][m] <= self.t]
            gpus_taken += [(i, m) for m in idle[:amount]]
        reused = g > 1 and level == 0 and all(self.last_g[i][m] > 1 for i, m in gpus_taken)
        for i, m in gpus_taken:
            self.end[i][m] = self.t + actual
            self.last_g[i][m] = g
        E = self.ideal[j] / (wait + actual)
        self.placed.append(
            {
                "job": j,
                "start": self.t,
                "wait": wait,
                "actual": actual,
                "level": level,
                "E": E,
                "gpus": g,
                "sensitive": self.sensitive(j),
                "reused": reused,
                "take": take,
            }
        )
        del self.passed[j]
        return E

    def _forward(self):
        if not self.event_possible():
            return
        candidates = [e for row in self.end for e in row if e > self.t]
        if self.n_arrived < self.n_jobs:
            candidates.append(self.submit[self.n_arrived])
        t_next = min(candidates)
        free = self.total_free()
        for j in self.window_jobs():
            if self.gpus[j] <= free:
                self.passed[j] += 1
        dt = t_next - self.t
        self.area_busy += dt * self.n_busy()
        self.area_frag += dt * self.frag_now()
        self.t = t_next
        self._arrive()  # the window refills by itself: it is the head of `waiting`

    def _auto_forward(self):
        while not self.terminated() and not any(self.mask()[: self.J]) and self.event_possible():
            self._forward()

    # ---- observation ----------------------------------------------------------------------------
    def _log(self, x) -> float:
        return math.log1p(x / self.time_scale)

    def observe(self) -> dict:
        N, M, J, k = self.N, self.M, self.J, self.k
        gpu = [[self._log(max(e - self.t, 0)) for e in self.end[i]] for i in range(N)]
        win = self.window_jobs()
        present = [i < len(win) for i in range(J)]
        raw = {c: [0] * J for c in ("gpus", "ideal", "wait", "model", "passed")}
        profile = [[0] * k for _ in range(J)]
        jobs = [[0.0] * (k + 2) for _ in range(J)]
        for i, j in enumerate(win):
            wait = self.t - self.submit[j]
            raw["gpus"][i], raw["ideal"][i], raw["wait"][i] = self.gpus[j], self.ideal[j], wait
            raw["model"][i], raw["passed"][i] = self.model[j], self.passed[j]
            profile[i] = self.profile(j)
            jobs[i] = [self._log(p) for p in profile[i]] + [self.gpus[j] / M, self._log(wait)]
        rest = self.behind()
        n = len(rest)
        if n:
            mean_g = sum(self.gpus[j] for j in rest) / n
            mean_ideal = sum(self.ideal[j] for j in rest) / n
            mean_submit = sum(self.submit[j] for j in rest) / n
            stats = [math.log1p(n), mean_g / M, self._log(mean_ideal), self._log(self.t - mean_submit)]
        else:
            stats = [0.0, 0.0, 0.0, 0.0]
        vec = [x for row in gpu for x in row] + [x for row in jobs for x in row] + stats
        return {
            "gpu": np.asarray(gpu, np.float64).reshape(N, M),
            "jobs": np.asarray(jobs, np.float64).reshape(J, k + 2),
            "stats": np.asarray(stats, np.float64),
            "vec": np.asarray(vec, np.float64),
            "mask": np.asarray(self.mask(), bool),
            "present": np.asarray(present, bool),
            "gpus": np.asarray(raw["gpus"], np.int64),
            "ideal": np.asarray(raw["ideal"], np.int64),
            "wait": np.asarray(raw["wait"], np.int64),
            "model": np.asarray(raw["model"], np.int64),
            "passed": np.asarray(raw["passed"], np.int64),
            "profile": np.asarray(profile, np.int64).reshape(J, k),
            "free": np.asarray(self.free_per_server(), np.int64),
            "t": np.int64(self.t),
        }

    # ---- metrics --------------------------------------------------------------------------------
    def metrics(self) -> dict:
        def ratio(a, b):
            return a / b if b else 0.0

        def mean(xs):
            return ratio(sum(xs), len(xs))

        P = self.placed
        multi = [p for p in P if p["gpus"] > 1]
        sens = [p for p in multi if p["sensitive"]]
        insens = [p for p in multi if not p["sensitive"]]
        elapsed = self.t - self.t0
        return {
            "placed": float(len(P)),
            "avg_effectiveness": mean([p["E"] for p in P]),
            "avg_jct": mean([p["wait"] + p["actual"] for p in P]),
            "avg_wait": mean([p["wait"] for p in P]),
            "avg_actual": mean([p["actual"] for p in P]),
            "makespan": float(max(p["start"] + p["actual"] for p in P) - self.t0) if P else 0.0,
            "utilization": ratio(self.area_busy, self.N * self.M * elapsed),
            "fragmentation": ratio(self.area_frag, elapsed),
            "multi_share_relaxed": mean([p["level"] > 0 for p in multi]),
            "relaxed_sensitive": mean([p["level"] > 0 for p in sens]),
            "relaxed_insensitive": mean([p["level"] > 0 for p in insens]),
            "wait_sensitive": mean([p["wait"] for p in P if p["sensitive"]]),
            "wait_insensitive": mean([p["wait"] for p in P if not p["sensitive"]]),
            "reused_locality": mean([p["reused"] for p in multi]),
            "steps": float(self.steps),
            "forwards": float(self.forwards),
            "invalid": float(self.invalid),
            "elapsed": float(elapsed),
        }


METRIC_KEYS = (
    "placed",
    "avg_effectiveness",
    "avg_jct",
    "avg_wait",
    "avg_actual",
    "makespan",
    "utilization",
    "fragmentation",
    "multi_share_relaxed",
    "relaxed_sensitive",
    "relaxed_insensitive",
    "wait_sensitive",
    "wait_insensitive",
    "reused_locality",
    "steps",
    "forwards",
    "invalid",
    "elapsed",
)
OBS_KEYS = (
    "gpu",
    "jobs",
    "stats",
    "vec",
    "mask",
    "present",
    "gpus",
    "ideal",
    "wait",
    "model",
    "passed",
    "profile",
    "free",
    "t",
)


# ---- the baselines of §IV over the reference observation ---------------------------------------------
def _fitting(obs) -> list[int]:
    """Slots showing a job with g <= total free GPUs, in slot (= arrival) order."""
    total = int(np.sum(obs["free"]))
    return [i for i in range(len(obs["present"])) if obs["present"][i] and int(obs["gpus"][i]) <= total]


def level_now(obs, slot: int) -> int:
    """The level packing would give slot's job now: min(servers used − ceil(g/M), k − 1)."""
    g = int(obs["gpus"][slot])
    take = packing([int(x) for x in obs["free"]], g)
    return level_of(take, g, obs["gpu"].shape[1], obs["profile"].shape[1])


def _phi(obs) -> int:
    return len(obs["present"])


def _argmin(obs, key) -> int:
    fit = _fitting(obs)
    return min(fit, key=lambda i: (key(i), i)) if fit else _phi(obs)


def ref_fifo(obs) -> int:
    fit = _fitting(obs)
    return fit[0] if fit else _phi(obs)


def ref_sif(obs) -> int:
    return _argmin(obs, lambda i: int(obs["ideal"][i]))


def ref_lrf(obs) -> int:
    return _argmin(obs, lambda i: int(obs["gpus"][i]))


def ref_spf(obs) -> int:
    return _argmin(obs, lambda i: int(obs["gpus"][i]) * int(obs["ideal"][i]))


def ref_saf(obs) -> int:
    return _argmin(obs, lambda i: int(obs["profile"][i][level_now(obs, i)]))


def ref_dsif(obs) -> int:
    """SIF, but a job that would not get level 0 now is delayed until it has been passed over 3 times."""
    for i in sorted(_fitting(obs), key=lambda i: (int(obs["ideal"][i]), i)):
        if level_now(obs, i) == 0 or int(obs["passed"][i]) >= 3:
            return i
    return _phi(obs)


REF_HEURISTICS = {
    "fifo": ref_fifo,
    "sif": ref_sif,
    "dsif": ref_dsif,
    "saf": ref_saf,
    "lrf": ref_lrf,
    "spf": ref_spf,
}


def ref_policy(name: str, obs) -> int:
    """The action of heuristic `name` on a reference observation (0..J−1 a slot, J for φ)."""
    return REF_HEURISTICS[name](obs)
