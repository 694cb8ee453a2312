"""A plain-Python event-loop reference of the Deep Back-Filling cluster (HPCC'22 §II–III).

Written from the paper and the semantics documented in `jaxsched/envs/hpc/env.py` (module docstring,
`HPCObs`, `metrics`), `core/queue.split_window` and `core/cluster`, not from the JAX code: Python
lists, explicit running jobs, float64 arithmetic. The differential tests drive it and `HPCEnv.step_env`
with the same actions and compare every reward, observation, mask, flag and metric.

The model, step by step:
  * N identical cores; a running job holds a set of cores until its *actual* end `start + run`.
    A core is free at time t iff no running job holds it with end > t.
  * The queue is a list of job indices in arrival order, at most `queue_capacity` long; an arrival that
    finds it full is counted in `overflow` and never queued.
  * Window (§II-B, split): head slot i shows queue position i (if i < L); tail slot k shows position
    L-1-k if that position is >= head (the tail never repeats a head job).
  * Action a < M picks slot a: valid iff the slot shows a job whose cores <= free cores. A valid pick
    starts the job now on the lowest-indexed free cores, removes it from the queue, reward 0, time frozen.
  * Fwd (a = M) or an invalid pick: reward -(w1(1-η) + w2 L/Lmax + w3 W/Wmax) (Eq. 2) with the values
    *now* (η = busy/N, L = queue length, W = Σ_queue (t - submit); Lmax, Wmax the running maxima over the
    values after every decision, starting at 1 and 0; a zero maximum drops its term). Then time moves to
    the next event: the earliest of the next arrival (if one remains before `end`) and the next core
    release strictly after t. If the next arrival is due by the new time, exactly one job is admitted
    (serialised arrivals, §II-A). No event at all: time stays.
  * σ_i(t) (§III-A1) is the *requested* time left of the job on core i, 0 for a free core.
  * Terminated: `episode_jobs` placed, or no arrivals left and the queue empty; truncated: `max_steps`
    decisions and not terminated.
"""

from __future__ import annotations

import numpy as np

WAIT_NORM_DEFAULT = 12 * 3600.0


class RefHPC:
    """Reference simulator. `jobs`: a dict of arrays (or a list of dicts, or a `Workload`) with
    submit, run, req_time and cores per job."""

    def __init__(
        self,
        n_cores,
        head,
        tail,
        queue_capacity,
        jobs,
        episode_jobs,
        max_steps,
        w=(1 / 3, 1 / 3, 1 / 3),
        runtime_norm=None,
        wait_norm=WAIT_NORM_DEFAULT,
    ):
        if isinstance(jobs, dict) or hasattr(jobs, "submit"):
            get = (lambda k: jobs[k]) if isinstance(jobs, dict) else (lambda k: getattr(jobs, k))
            cols = {k: [int(x) for x in np.asarray(get(k))] for k in ("submit", "run", "req_time", "cores")}
            self.jobs = [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
        else:
            self.jobs = [{k: int(j[k]) for k in ("submit", "run", "req_time", "cores")} for j in jobs]
        self.n = int(n_cores)
        self.head = int(head)
        self.tail = int(tail)
        self.m = self.head + self.tail
        self.capacity = int(queue_capacity)
        self.episode_jobs = int(episode_jobs)
        self.max_steps = int(max_steps)
        self.w = tuple(float(x) for x in w)
        if runtime_norm is None:
            runtime_norm = max(j["req_time"] for j in self.jobs)
        self.runtime_norm = float(runtime_norm)
        self.wait_norm = float(wait_norm)

    # ---- episode --------------------------------------------------------------------------------
    def reset(self, start, end=None):
        """Start an episode at job `start` (queued at its submit time); jobs >= `end` never arrive."""
        self.end = len(self.jobs) if end is None else int(end)
        self.t = self.jobs[start]["submit"]
        self.t0 = self.t
        self.queue = [start]
        self.next_job = start + 1
        self.running = []  # dicts: job, cores (list of core indices), start, end, req_end
        self.finished = {}  # job -> (start, end) once it has completed
        self.starts = {}  # job -> start time
        self.core_of = {}  # job -> core indices
        self.placed = 0
        self.steps = 0
        self.l_max = 1.0
        self.w_max = 0.0
        self.sum_wait = 0.0
        self.sum_bsld = 0.0
        self.sum_sld = 0.0
        self.sum_load = 0.0
        self.area_queue = 0.0
        self.area_busy = 0.0
        self.overflow = 0
        self.invalid = 0
        self.forwards = 0
        self.history = []  # (step, action, kind, job or None, t)
        return self.observe()

    # ---- derived quantities ---------------------------------------------------------------------
    def busy_cores(self):
        """Indices of cores held by a running job at the current time."""
        return sorted(c for r in self.running if r["end"] > self.t for c in r["cores"])

    def free_cores(self):
        busy = set(self.busy_cores())
        return [c for c in range(self.n) if c not in busy]

    def queue_wait(self):
        """W(t) = Σ over queued jobs of (t - submit)."""
        return float(sum(self.t - self.jobs[j]["submit"] for j in self.queue))

    def window(self):
        """Per slot: the queue position it shows, or None."""
        L = len(self.queue)
        slots = [i if i < L else None for i in range(self.head)]
        for k in range(self.tail):
            p = L - 1 - k
            slots.append(p if p >= self.head else None)
        return slots

    def sigma(self):
        """Requested time left per core: 0 on a free core, at least 1 s on a busy one (a job that has
        overrun its request may end at any moment)."""
        s = [0] * self.n
        for r in self.running:
            if r["end"] > self.t:
                for c in r["cores"]:
                    s[c] = max(r["req_end"] - self.t, 1)
        return s

    def observe(self):
        """`(vec, mask)` laid out as `HPCObs.vec` / `HPCObs.mask`."""
        n_free = len(self.free_cores())
        vec = [x / self.runtime_norm for x in self.sigma()]
        mask = []
        for pos in self.window():
            if pos is None:
                vec += [0.0, 0.0, 0.0, 0.0, 0.0]
                mask.append(False)
                continue
            job = self.jobs[self.queue[pos]]
            fits = job["cores"] <= n_free
            vec += [
                1.0,
                job["cores"] / self.n,
                job["req_time"] / self.runtime_norm,
                (self.t - job["submit"]) / self.wait_norm,
                1.0 if fits else 0.0,
            ]
            mask.append(fits)
        mask.append(True)  # Fwd
        return np.asarray(vec, np.float64), np.asarray(mask, bool)

    def window_jobs(self):
        """Per slot: the job index it shows, or None (for tests and hand-checked schedules)."""
        return [None if p is None else self.queue[p] for p in self.window()]

    # ---- one decision ---------------------------------------------------------------------------
    def step(self, action):
        action = int(action)
        slots = self.window()
        free = self.free_cores()
        pick = None
        if action < self.m and slots[action] is not None:
            j = self.queue[slots[action]]
            if self.jobs[j]["cores"] <= len(free):
                pick = slots[action]
        if pick is not None:
            reward = 0.0
            self._start(self.queue.pop(pick), free)
        else:
            reward = -self._penalty()
            if action < self.m:
                self.invalid += 1
                kind = "invalid"
            else:
                self.forwards += 1
                kind = "fwd"
            self.history.append((self.steps, action, kind, None, self.t))
            self._forward()
        self.steps += 1
        self.l_max = max(self.l_max, float(len(self.queue)))
        self.w_max = max(self.w_max, self.queue_wait())
        terminated = self.placed >= self.episode_jobs or (self.next_job >= self.end and not self.queue)
        truncated = self.steps >= self.max_steps and not terminated
        vec, mask = self.observe()
        return vec, mask, reward, terminated, truncated

    def _penalty(self):
        w1, w2, w3 = self.w
        eta = len(self.busy_cores()) / self.n
        L = float(len(self.queue))
        W = self.queue_wait()
        term_l = L / self.l_max if self.l_max > 0 else 0.0
        term_w = W / self.w_max if self.w_max > 0 else 0.0
        return w1 * (1.0 - eta) + w2 * term_l + w3 * term_w

    def _start(self, j, free):
        job = self.jobs[j]
        assert j not in self.starts, f"job {j} placed twice"
        cores = free[: job["cores"]]  # lowest-indexed free cores
        t = self.t
        self.running.append(
            {"job": j, "cores": cores, "start": t, "end": t + job["run"], "req_end": t + job["req_time"]}
        )
        self.starts[j] = t
        self.core_of[j] = cores
        self.history.append((self.steps, None, "place", j, t))
        wait = float(t - job["submit"])
        run = float(job["run"])
        self.placed += 1
        self.sum_wait += wait
        self.sum_bsld += max(1.0, (wait + run) / max(run, 10.0))
        self.sum_sld += (wait + run) / run
        self.sum_load += wait * job["cores"] * job["req_time"]

    def _forward(self):
        t = self.t
        events = [r["end"] for r in self.running if r["end"] > t]
        if self.next_job < self.end:
            events.append(self.jobs[self.next_job]["submit"])
        t_new = min(events) if events else t
        dt = t_new - t
        self.area_queue += dt * len(self.queue)
        self.area_busy += dt * len(self.busy_cores())
        self.t = t_new
        for r in [r for r in self.running if r["end"] <= t_new]:
            self.finished[r["job"]] = (r["start"], r["end"])
            self.running.remove(r)
        if self.next_job < self.end and self.jobs[self.next_job]["submit"] <= t_new:
            if len(self.queue) < self.capacity:
                self.queue.append(self.next_job)
            else:
                self.overflow += 1
            self.next_job += 1

    # ---- metrics ----------------------------------------------------------------------------------
    def metrics(self):
        """Same keys and meaning as `HPCEnv.metrics`."""
        q_wait = [self.t - self.jobs[j]["submit"] for j in self.queue]
        q_load = sum(
            w * self.jobs[j]["cores"] * self.jobs[j]["req_time"]
            for w, j in zip(q_wait, self.queue, strict=True)
        )
        arrived = self.placed + len(self.queue)
        elapsed = float(self.t - self.t0)

        def per_time(x):
            return x / elapsed if elapsed > 0 else 0.0

        def per_job(x, n):
            return x / n if n > 0 else 0.0

        return {
            "avg_wait": per_job(self.sum_wait + sum(q_wait), arrived),
            "avg_queue_len": per_time(self.area_queue),
            "utilization": per_time(self.area_busy) / self.n,
            "avg_job_load": per_time(self.sum_load + q_load),
            "avg_bsld": per_job(self.sum_bsld, self.placed),
            "avg_slowdown": per_job(self.sum_sld, self.placed),
            "placed": self.placed,
            "queued": len(self.queue),
            "overflow": self.overflow,
            "invalid": self.invalid,
            "steps": self.steps,
            "elapsed": elapsed,
        }
