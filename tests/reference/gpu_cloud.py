"""A plain-Python event-loop reference of the GPU-cloud (DAS, KDD'23 §3) environment.

Written from `docs/gpu_cloud.md` only (not from the JAX code): Python lists and dicts, explicit running
jobs, float64 arithmetic, one event at a time. The differential tests drive it and the JAX environment
with the same actions and compare rewards, observations, per-job times and metrics.

Scope: only ``n_slots == queue_capacity`` (N == Q) is supported, so the view is the whole queue in
order (slot i shows queue position i); the uniform sampling of N of L > N positions is tested
separately against the JAX env alone (``step(..., view=positions)`` is a test hook that shows only
some queue positions for one round, e.g. to replay a sampled view). The fluctuation φ of the k-th speed
update of the episode (k = 0, 1, 2, ...) is drawn here by ``fluctuation`` (the spec's counter-based draw,
float64) from ``noise_seed`` and ``fluct_std``; ``phi(k)`` overrides it (hand-checked schedules), and
with neither φ = 1 everywhere.

The model, step by step (the numbers refer to the spec's "A decision step"):
  * Job j of the episode ``[start, start + episode_jobs)`` arrives at ``(submit[j] - submit[start]) /
    load_scale``. Arrivals join the queue one per forward iteration, in bank order, only while the
    queue has room; a job that finds it full waits outside (the pointer does not move).
  * ``reset()``: t = 0, empty cluster, then the forward loop of step 5 without the forced first
    iteration: iterate while no queued job is feasible and the episode is not over.
  * ``step(priority, affinity)``: 2. visible jobs in descending priority (ties: lower slot);
    3. each is placed on machines in descending affinity (ties: lower machine index), machine m taking
    min(fit_m, C - placed so far) instances; the job starts iff Σ fit ≥ C and fewer than R jobs run,
    otherwise it is a failed scheduling (penalty C·gpu/100) and stays queued; 4. a speed update if
    anything started; 5. the forward loop; 6. the reward (Eq. 3); 7. terminated when all E jobs
    finished.
  * Speeds (spec "Contention model") are recomputed for every running job at each speed update, which
    happens after a round that started ≥ 1 job and after each forward event at which ≥ 1 job
    finished (even if nothing is left running: the counter k still advances). Between updates work
    decreases linearly.

Choices where the spec leaves room (the most literal reading):
  * Step 5's loop condition is read as ``not over and ((first iteration and nothing started) or no
    queued job is feasible)``. If an iteration has neither a completion nor an admissible arrival
    (t' = ∞: nothing runs and no arrival can join), the loop stops and time stays; with N == Q and
    jobs that fit the empty cluster this cannot happen.
  * With the whole queue visible the forced first iteration only matters after a stuck forward (a
    feasible queued job always starts); the ``view`` hook exercises it.
  * Every visible job that does not start in step 3 is a failed scheduling, including one that fits
    but finds the running set full.
  * On a completion/arrival tie (t_c == t_a) the completion comes first; the arrival follows in a
    zero-length iteration if the loop goes on.
  * The speed update after a finish event uses φ of the next k even when no job is left running.
  * ``finished`` lists the jobs finished by a step in ascending bank index (within one event the spec
    gives no order); ``placed`` and ``failed`` are in placement order.
  * Observation rows of unused slots, and all means in ``metrics()`` with no finished job, are 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

INF = math.inf
MASK32 = 0xFFFFFFFF  # uint32 arithmetic is mod 2^32: every product and sum below is masked


def lowbias32(x: np.ndarray) -> np.ndarray:
    """The spec's 32-bit mixer on integers < 2^32 held in uint64 (so that products cannot overflow)."""
    x = np.asarray(x, np.uint64)
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & np.uint64(MASK32)
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & np.uint64(MASK32)
    return x ^ (x >> np.uint64(16))


def fluctuation_z(noise_seed: int, update: int, n_machines: int) -> np.ndarray:
    """z `f64[M]` of speed update `update` (spec "Contention model"): for machine m and draw j < 4 the
    counter c = ((update·M + m)·4 + j) mod 2^32, h = H(c XOR H(noise_seed)), u_j = ⌊h / 2^8⌋ · 2^-24, and
    z = (Σ_j u_j − 2)·√3 (Irwin–Hall of 4 uniforms, centred, unit variance)."""
    m = np.arange(n_machines, dtype=np.uint64)[:, None]
    j = np.arange(4, dtype=np.uint64)[None, :]
    base = (int(update) * int(n_machines)) & MASK32
    counter = (((np.uint64(base) + m) & np.uint64(MASK32)) * np.uint64(4) + j) & np.uint64(MASK32)
    h = lowbias32(counter ^ lowbias32(np.uint64(int(noise_seed) & MASK32)))
    u = (h >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return (u.sum(axis=1) - 2.0) * math.sqrt(3.0)


def fluctuation(noise_seed: int, update: int, n_machines: int, std: float) -> np.ndarray:
    """φ `f64[M]` of speed update `update`: clip(1 + std·z, 0.5, 1.5) (``fluctuation_z``)."""
    return np.clip(1.0 + float(std) * fluctuation_z(noise_seed, update, n_machines), 0.5, 1.5)


@dataclass
class RefJob:
    """One episode job: the static fields (spec units: GPU and CPU in 1/100, memory in MiB, times in s)
    and its per-episode record."""

    bank: int
    arrival: float
    n_inst: int
    gpu: int
    cpu: int
    mem: int
    work: float
    comm: float
    # record
    queued_at: float | None = None  # time it joined the queue
    start: float | None = None
    finish: float | None = None
    alloc: dict[int, int] = field(default_factory=dict)  # machine -> instances (only > 0)
    work_left: float = 0.0
    speed: float = 0.0
    n_failed: int = 0  # failed schedulings of this job
    jct: float | None = None
    duration: float | None = None
    fee: float | None = None


class ReferenceGPUCloud:
    """Reference GPU-cloud simulator (see the module docstring for the model and the choices made).

    Workload arrays are the whole bank (``submit, n_inst, gpu, cpu, mem: int[J]``, ``work: float[J]``,
    ``model: int[J]``); the episode is jobs ``[start, start + episode_jobs)``. Cluster arrays are
    ``gpu_cap, cpu_cap, mem_cap: int[M]``, ``bw_cap, perf: float[M]``; ``model_comm: float[K]``.
    Requires ``n_slots == queue_capacity``.
    """

    def __init__(
        self,
        submit,
        n_inst,
        gpu,
        cpu,
        mem,
        work,
        model,
        *,
        start: int,
        episode_jobs: int,
        gpu_cap,
        cpu_cap,
        mem_cap,
        bw_cap,
        perf,
        model_comm,
        kappa_net: float,
        kappa_cpu: float,
        kappa_spread: float,
        price: float = 2.84,
        alpha: float = 0.1,
        jct_unit: float = 60.0,
        load_scale: float = 1.0,
        n_slots: int,
        queue_capacity: int,
        max_running: int,
        phi: Callable[[int], np.ndarray] | None = None,
        noise_seed: int | None = None,
        fluct_std: float = 0.0,
        c_norm: float = 8.0,
        wait_norm: float = 3600.0,
        max_steps: int | None = None,
    ):
        if int(n_slots) != int(queue_capacity):
            raise ValueError(
                "the reference supports only n_slots == queue_capacity (the whole queue visible)"
            )
        self.submit = [int(x) for x in np.asarray(submit)]
        self.n_inst = [int(x) for x in np.asarray(n_inst)]
        self.gpu = [int(x) for x in np.asarray(gpu)]
        self.cpu = [int(x) for x in np.asarray(cpu)]
        self.mem = [int(x) for x in np.asarray(mem)]
        self.work = [float(x) for x in np.asarray(work, np.float64)]
        self.model = [int(x) for x in np.asarray(model)]
        self.start_index = int(start)
        self.E = int(episode_jobs)
        if self.start_index + self.E > len(self.submit):
            raise ValueError("episode runs past the end of the bank")
        self.gpu_cap = [int(x) for x in np.asarray(gpu_cap)]
        self.cpu_cap = [int(x) for x in np.asarray(cpu_cap)]
        self.mem_cap = [int(x) for x in np.asarray(mem_cap)]
        self.bw_cap = [float(x) for x in np.asarray(bw_cap, np.float64)]
        self.perf = [float(x) for x in np.asarray(perf, np.float64)]
        self.M = len(self.gpu_cap)
        assert all(len(a) == self.M for a in (self.cpu_cap, self.mem_cap, self.bw_cap, self.perf))
        self.model_comm = [float(x) for x in np.asarray(model_comm, np.float64)]
        self.kappa_net = float(kappa_net)
        self.kappa_cpu = float(kappa_cpu)
        self.kappa_spread = float(kappa_spread)
        self.price = float(price)
        self.alpha = float(alpha)
        self.jct_unit = float(jct_unit)
        self.load_scale = float(load_scale)
        self.N = int(n_slots)
        self.Q = int(queue_capacity)
        self.R = int(max_running)
        if phi is not None and noise_seed is not None:
            raise ValueError("give phi or noise_seed, not both")
        if noise_seed is not None:
            seed, std = int(noise_seed), float(fluct_std)
            phi = lambda k: fluctuation(seed, k, self.M, std)  # noqa: E731
        self.phi = phi
        self.c_norm = float(c_norm)
        self.wait_norm = float(wait_norm)
        self.max_steps = max_steps

    # ---- episode --------------------------------------------------------------------------------
    def reset(self):
        """Empty cluster at t = 0 (the first job's arrival), then forward without the forced first
        iteration: the first job has joined the queue when this returns. Returns the observation."""
        s = self.start_index
        t0 = self.submit[s]
        self.jobs: dict[int, RefJob] = {}
        for b in range(s, s + self.E):
            self.jobs[b] = RefJob(
                bank=b,
                arrival=(self.submit[b] - t0) / self.load_scale,
                n_inst=self.n_inst[b],
                gpu=self.gpu[b],
                cpu=self.cpu[b],
                mem=self.mem[b],
                work=self.work[b],
                comm=self.model_comm[self.model[b]],
            )
        self.t = 0.0
        self.ptr = s  # next job to join the queue
        self.end = s + self.E
        self.queue: list[int] = []  # bank indices, queue order
        self.running: list[int] = []  # bank indices, start order
        self.finished_order: list[int] = []
        self.free = [[self.gpu_cap[m], self.cpu_cap[m], self.mem_cap[m]] for m in range(self.M)]
        self.n_speed_updates = 0
        self.n_failed = 0
        self.steps = 0
        self.log: list[tuple[float, str, int, object]] = []  # (t, kind, bank index or -1, details)
        self.free_history: list[tuple[float, list[list[int]]]] = [(self.t, [list(f) for f in self.free])]
        self._forward(forced=False)
        return self.observation()

    def over(self) -> bool:
        """All E episode jobs have finished."""
        return len(self.finished_order) == self.E

    # ---- resources ------------------------------------------------------------------------------
    def fit(self, job: RefJob, m: int) -> int:
        """Instances of `job` machine m can take now; a zero demand does not constrain."""
        counts = [self.free[m][k] // d for k, d in enumerate((job.gpu, job.cpu, job.mem)) if d > 0]
        return min(counts)  # gpu > 0, so never empty

    def feasible(self, job: RefJob) -> bool:
        return len(self.running) < self.R and sum(self.fit(job, m) for m in range(self.M)) >= job.n_inst

    def any_feasible(self) -> bool:
        return any(self.feasible(self.jobs[b]) for b in self.queue)

    def _record_free(self):
        self.free_history.append((self.t, [list(f) for f in self.free]))

    # ---- speeds ---------------------------------------------------------------------------------
    def net_cpu(self):
        """Per running job r and machine m: net[r][m], cpu[r][m]; and the totals NET_m, CPU_m."""
        net, cpu = {}, {}
        NET = [0.0] * self.M
        CPU = [0.0] * self.M
        for b in self.running:
            job = self.jobs[b]
            dist = 1.0 if len(job.alloc) > 1 else 0.0
            net[b] = [0.0] * self.M
            cpu[b] = [0.0] * self.M
            for m, n in job.alloc.items():
                g = n * job.gpu / self.gpu_cap[m]
                net[b][m] = job.comm * dist * g / self.bw_cap[m]
                cpu[b][m] = n * job.cpu / self.cpu_cap[m]
                NET[m] += net[b][m]
                CPU[m] += cpu[b][m]
        return net, cpu, NET, CPU

    def _speed_update(self):
        k = self.n_speed_updates
        phi = np.ones(self.M) if self.phi is None else np.asarray(self.phi(k), np.float64)
        assert phi.shape == (self.M,)
        net, cpu, NET, CPU = self.net_cpu()
        speeds = {}
        for b in self.running:
            job = self.jobs[b]
            n_machines = len(job.alloc)
            dist = 1.0 if n_machines > 1 else 0.0
            per_machine = []
            for m in job.alloc:
                slow = (
                    1.0
                    + self.kappa_net * job.comm * dist * (NET[m] - net[b][m])
                    + self.kappa_cpu * (CPU[m] - cpu[b][m])
                )
                per_machine.append(self.perf[m] * float(phi[m]) / slow)
            job.speed = min(per_machine) / (1.0 + self.kappa_spread * job.comm * (n_machines - 1))
            speeds[b] = job.speed
        self.n_speed_updates += 1
        self.log.append((self.t, "speed", -1, {"k": k, "speeds": speeds}))

    # ---- one decision ---------------------------------------------------------------------------
    def step(self, priority, affinity, view: list[int] | None = None):
        """Steps 2-7 of the spec. `priority: [N]`, `affinity: [N, M]` (rows are view slots).

        `view` (a test hook, default: the whole queue) lists the ascending queue positions that slots
        0, 1, ... show this round; only those jobs are ordered and placed."""
        priority = np.asarray(priority, np.float64)
        affinity = np.asarray(affinity, np.float64)
        assert priority.shape == (self.N,) and affinity.shape == (self.N, self.M)
        positions = list(range(len(self.queue))) if view is None else list(view)
        assert positions == sorted(set(positions)) and all(0 <= p < len(self.queue) for p in positions)
        view = [self.queue[p] for p in positions]  # bank index per slot
        order = sorted(range(len(view)), key=lambda i: (-priority[i], i))
        placed, failed = [], []
        for i in order:
            job = self.jobs[view[i]]
            machines = sorted(range(self.M), key=lambda m: (-affinity[i, m], m))
            take = {}
            n_placed = 0
            for m in machines:
                n = min(self.fit(job, m), job.n_inst - n_placed)
                if n > 0:
                    take[m] = n
                    n_placed += n
            if n_placed == job.n_inst and len(self.running) < self.R:
                self._start(job, take)
                placed.append((job.bank, dict(take)))
            else:
                job.n_failed += 1
                self.n_failed += 1
                failed.append(job.bank)
                self.log.append((self.t, "fail", job.bank, {}))
        if placed:
            self._speed_update()
        finished = sorted(self._forward(forced=not placed))
        self.steps += 1

        total = 0.0
        for b in finished:
            job = self.jobs[b]
            total += 1.0 / (job.fee * job.jct / self.jct_unit)
        for b in failed:
            job = self.jobs[b]
            total -= self.alpha * job.n_inst * job.gpu / 100.0
        reward = total / max(len(finished) + len(failed), 1)
        terminated = self.over()
        truncated = (not terminated) and self.max_steps is not None and self.steps >= self.max_steps
        return {
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "placed": placed,
            "failed": failed,
            "finished": [self.finished_record(b) for b in finished],
            "t": self.t,
            "obs": self.observation(),
        }

    def _start(self, job: RefJob, take: dict[int, int]):
        assert job.start is None, f"job {job.bank} placed twice"
        for m, n in take.items():
            self.free[m][0] -= n * job.gpu
            self.free[m][1] -= n * job.cpu
            self.free[m][2] -= n * job.mem
        job.alloc = dict(take)
        job.start = self.t
        job.work_left = job.work
        self.queue.remove(job.bank)
        self.running.append(job.bank)
        self._record_free()
        self.log.append((self.t, "start", job.bank, dict(take)))

    def _finish(self, job: RefJob):
        assert job.finish is None, f"job {job.bank} finished twice"
        for m, n in job.alloc.items():
            self.free[m][0] += n * job.gpu
            self.free[m][1] += n * job.cpu
            self.free[m][2] += n * job.mem
        job.finish = self.t
        job.jct = self.t - job.arrival
        job.duration = self.t - job.start
        job.fee = self.price * job.n_inst * job.gpu / 100.0 * job.duration / 3600.0
        self.running.remove(job.bank)
        self.finished_order.append(job.bank)
        self._record_free()
        self.log.append((self.t, "finish", job.bank, {"jct": job.jct, "fee": job.fee}))

    def _forward(self, forced: bool) -> list[int]:
        """Step 5; returns the bank indices of the jobs that finished."""
        finished = []
        first = True
        while not self.over() and ((first and forced) or not self.any_feasible()):
            first = False
            t = self.t
            # next completion
            t_c = INF
            for b in self.running:
                job = self.jobs[b]
                t_c = min(t_c, t + job.work_left / job.speed)
            # next arrival
            if self.ptr < self.end and len(self.queue) < self.Q:
                t_a = max(t, self.jobs[self.ptr].arrival)
            else:
                t_a = INF
            t_new = min(t_c, t_a)
            if t_new == INF:
                self.log.append((t, "stuck", -1, {}))
                break
            due = [b for b in self.running if t + self.jobs[b].work_left / self.jobs[b].speed <= t_new]
            for b in self.running:
                job = self.jobs[b]
                job.work_left -= job.speed * (t_new - t)
            self.t = t_new
            if t_c <= t_a:
                for b in due:
                    self._finish(self.jobs[b])
                    finished.append(b)
                self._speed_update()
            else:
                job = self.jobs[self.ptr]
                job.queued_at = self.t
                self.queue.append(job.bank)
                self.ptr += 1
                self.log.append((self.t, "arrive", job.bank, {"arrival": job.arrival}))
        return finished

    # ---- views ----------------------------------------------------------------------------------
    def finished_record(self, b: int) -> dict:
        job = self.jobs[b]
        return {
            "bank": b,
            "arrival": job.arrival,
            "start": job.start,
            "finish": job.finish,
            "jct": job.jct,
            "duration": job.duration,
            "fee": job.fee,
        }

    def observation(self) -> dict:
        jobs = np.zeros((self.N, 5))
        mask = np.zeros(self.N, bool)
        n_inst = np.zeros(self.N, np.int64)
        demand = np.zeros((self.N, 3), np.int64)
        arrival_rank = np.zeros(self.N, np.int64)
        for i, b in enumerate(self.queue):
            job = self.jobs[b]
            mask[i] = True
            jobs[i] = [
                job.n_inst / self.c_norm,
                job.cpu / self.cpu_cap[0],
                job.gpu / self.gpu_cap[0],
                job.mem / self.mem_cap[0],
                (self.t - job.arrival) / self.wait_norm,
            ]
            n_inst[i] = job.n_inst
            demand[i] = [job.gpu, job.cpu, job.mem]
            arrival_rank[i] = b - self.start_index
        _, _, NET, _ = self.net_cpu()
        machines = np.zeros((self.M, 5))
        for m in range(self.M):
            free_gpu, free_cpu, free_mem = self.free[m]
            machines[m] = [
                free_cpu / self.cpu_cap[m],
                free_gpu / self.gpu_cap[m],
                free_mem / self.mem_cap[m],
                max(0.0, self.bw_cap[m] - NET[m]) / self.bw_cap[m],
                (self.gpu_cap[m] - free_gpu) / self.gpu_cap[m],
            ]
        # The critic's load features: every job that has arrived but waits — pending, or outside a full
        # pending list (the episode's jobs from the pointer on whose arrival is not after now).
        outside = [b for b in range(self.ptr, self.end) if self.jobs[b].arrival <= self.t]
        waiting = [*self.queue, *outside]
        age = sum(self.t - self.jobs[b].arrival for b in waiting)
        load = np.array(
            [
                len(self.queue) / self.Q,
                len(self.running) / self.R,
                len(outside) / self.Q,
                age / max(len(waiting), 1) / self.wait_norm,
            ]
        )
        return {
            "jobs": jobs,
            "job_mask": mask,
            "machines": machines,
            "load": load,
            "queue": list(self.queue),
            "free": np.asarray(self.free, np.int64).reshape(self.M, 3),
            "cap": np.asarray([[self.gpu_cap[m], self.cpu_cap[m], self.mem_cap[m]] for m in range(self.M)]),
            "n_inst": n_inst,
            "demand": demand,
            "arrival_rank": arrival_rank,
            "t": self.t,
        }

    def metrics(self) -> dict:
        done = [self.jobs[b] for b in self.finished_order]
        n = len(done)

        def mean(xs):
            return float(sum(xs) / n) if n else 0.0

        makespan = max((j.finish for j in done), default=0.0)  # episode time starts at 0
        gpu_seconds = sum(j.gpu / 100.0 * j.n_inst * j.duration for j in done)
        total_gpus = sum(c / 100.0 for c in self.gpu_cap)
        return {
            "avg_jct_min": mean([j.jct / 60.0 for j in done]),
            "avg_fee": mean([j.fee for j in done]),
            "avg_wait_min": mean([(j.start - j.arrival) / 60.0 for j in done]),
            "avg_duration_min": mean([j.duration / 60.0 for j in done]),
            "finished": n,
            "failed": self.n_failed,
            "gpu_util": gpu_seconds / (total_gpus * makespan) if makespan > 0 else 0.0,
            "makespan_h": makespan / 3600.0,
            "steps": self.steps,
        }

    # ---- checks ---------------------------------------------------------------------------------
    def check_invariants(self):
        """Assert the bookkeeping is consistent (call at any point of an episode)."""
        caps = [(self.gpu_cap[m], self.cpu_cap[m], self.mem_cap[m]) for m in range(self.M)]
        for t, free in self.free_history:
            for m in range(self.M):
                for k in range(3):
                    assert 0 <= free[m][k] <= caps[m][k], f"machine {m} resource {k} = {free[m][k]} at t={t}"
        # allocations of the running jobs account for exactly the used resources
        used = [[0, 0, 0] for _ in range(self.M)]
        for b in self.running:
            job = self.jobs[b]
            assert job.start is not None and job.finish is None
            assert sum(job.alloc.values()) == job.n_inst and all(n > 0 for n in job.alloc.values())
            for m, n in job.alloc.items():
                used[m][0] += n * job.gpu
                used[m][1] += n * job.cpu
                used[m][2] += n * job.mem
        for m in range(self.M):
            for k in range(3):
                assert used[m][k] + self.free[m][k] == caps[m][k], f"machine {m} resource {k} leaks"
        # every job in exactly one state
        assert len(self.running) <= self.R and len(self.queue) <= self.Q
        assert len(set(self.queue)) == len(self.queue) and len(set(self.running)) == len(self.running)
        for b, job in self.jobs.items():
            states = [b >= self.ptr, b in self.queue, b in self.running, job.finish is not None]
            assert sum(states) == 1, f"job {b} in states {states}"
        # event log: time never goes backwards; at most one start and one finish per job
        times = [e[0] for e in self.log]
        assert all(a <= b for a, b in zip(times, times[1:], strict=False)), "time went backwards"
        starts = [e[2] for e in self.log if e[1] == "start"]
        finishes = [e[2] for e in self.log if e[1] == "finish"]
        arrivals = [e[2] for e in self.log if e[1] == "arrive"]
        assert len(set(starts)) == len(starts), "a job was placed twice"
        assert len(set(finishes)) == len(finishes), "a job finished twice"
        assert len(set(arrivals)) == len(arrivals), "a job joined the queue twice"
        assert set(finishes) <= set(starts) <= set(arrivals)
        assert finishes == self.finished_order
        # per-job records
        for b in finishes:
            job = self.jobs[b]
            assert job.arrival <= job.queued_at <= job.start <= job.finish
            assert math.isclose(job.jct, job.finish - job.arrival, rel_tol=1e-12, abs_tol=1e-9)
            assert math.isclose(job.duration, job.finish - job.start, rel_tol=1e-12, abs_tol=1e-9)
            fee = self.price * job.n_inst * job.gpu / 100.0 * job.duration / 3600.0
            assert math.isclose(job.fee, fee, rel_tol=1e-12, abs_tol=1e-12)
        assert self.n_failed == sum(j.n_failed for j in self.jobs.values())
        assert self.n_failed == sum(1 for e in self.log if e[1] == "fail")
