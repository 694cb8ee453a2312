"""The public-cloud GPU cluster of the Dual-Agent Scheduler (Xing et al., KDD'23, §3, §5.1).

M machines (GPU, CPU, memory, NIC bandwidth, a performance factor) run distributed deep-learning jobs
of C identical instances. One decision is a scheduling round (the paper's Dec-MDP step): the ordering
agent gives each of the N visible pending jobs a priority, the placement agent each (job, machine) pair
an affinity; jobs are taken in priority order and placed instance by instance on machines in affinity
order, or stay pending as a failed scheduling. Time then forwards, event by event, until a pending job
could start. Speeds follow a fluid contention model and are recomputed at every start and finish, so
durations (and fees) emerge from placement and co-location. The full semantics, the contention model and
every choice the paper leaves open are specified in `docs/gpu_cloud.md`; `tests/reference_gpu_cloud.py`
is an independent event loop written from that page.

Choices the paper leaves open (details in docs/gpu_cloud.md):
  * resources are exact integers (1/100 GPU, 1/100 core, MiB); time is float32 seconds from the
    episode's first arrival;
  * the pending list is a queue of `queue_capacity`; a job arriving while it is full waits outside
    (its JCT still counts from its arrival); when more than N jobs wait, N are sampled uniformly
    (App. D) and shown in submission order;
  * every visible job that is not placed in a round counts as a failed scheduling (Eq. 3's penalty);
  * a round that starts nothing forwards at least one event, so every step makes progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core import queue
from jaxsched.core.env import Environment
from jaxsched.core.placement import can_place, descending_rank, fit_counts
from jaxsched.core.spaces import Box
from jaxsched.envs.gpu_cloud_obs import (
    GPUCloudObs,
    global_state,
    global_state_size,
    job_features,
    load_features,
    machine_features,
)
from jaxsched.envs.gpu_contention import contention_shares, fluctuation, job_speeds
from jaxsched.workloads.ddl import MODEL_COMM, MODEL_NAMES, DDLWorkload, validate_ddl_workload

N_RES = 3  # gpu, cpu, mem
INF = jnp.float32(jnp.inf)
ARRIVAL_BLOCK = 8  # arrivals one forward-loop iteration may admit
OUTSIDE_WINDOW = 256  # arrived jobs waiting outside a full pending list that the JCT reward counts
REWARDS = ("eq3", "jct")  # the paper's Eq. 3, or minus the job-minutes accrued (docs/gpu_cloud.md)


@dataclass(frozen=True)
class GPUCloudConfig:
    """Static shapes: machines M, visible pending jobs N, pending-list capacity Q, running set R."""

    n_machines: int = 8
    n_slots: int = 16
    queue_capacity: int = 64
    max_running: int | None = None  # default 4 per machine (a Small cluster runs ~10-20 jobs at once)
    # Forward-loop iterations per call. None: a call always forwards to the next decision point. A number:
    # a longer forward stops there and the next call continues it without a decision (the action is
    # ignored; `obs.decision` says which calls decide). The decisions are the same either way; a cap only
    # stops the slowest env of a vmapped batch from setting the cost of every step.
    max_forward_events: int | None = None

    def __post_init__(self):
        if self.max_running is None:
            object.__setattr__(self, "max_running", 4 * self.n_machines)
        if self.max_forward_events is not None and self.max_forward_events < 1:
            raise ValueError(
                f"GPUCloudConfig.max_forward_events must be >= 1 or None, got {self.max_forward_events}"
            )
        for name in ("n_machines", "n_slots", "queue_capacity", "max_running"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPUCloudConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_slots > self.queue_capacity:
            raise ValueError(
                f"GPUCloudConfig.queue_capacity ({self.queue_capacity}) must be >= n_slots ({self.n_slots})"
            )


@struct.dataclass
class GPUCloudParams:
    """Workload bank, cluster and every numeric knob (vmappable). Defaults: `GPUCloudEnv.make_params`."""

    bank: DDLWorkload
    rows: jnp.ndarray  # i32[J + K, 5] the bank's (submit, n_inst, gpu, cpu, mem) packed, padded by K rows:
    #                    the forward loop reads K consecutive arrivals as one contiguous slice
    starts: jnp.ndarray  # i32[S] episode start indices into the bank
    episode_jobs: jnp.ndarray  # i32 E: jobs per episode (paper App. D: 1,000)
    max_steps: jnp.ndarray  # i32 truncation guard
    gpu_cap: jnp.ndarray  # i32[M] 1/100 GPU (V100 machine: 800)
    cpu_cap: jnp.ndarray  # i32[M] 1/100 core (9600)
    mem_cap: jnp.ndarray  # i32[M] MiB (384 GiB)
    bw_cap: jnp.ndarray  # f32[M] NIC bandwidth, 1.0 = one machine's NIC
    perf: jnp.ndarray  # f32[M] performance factor (heterogeneity)
    fluct_std: jnp.ndarray  # f32 std of the per-update fluctuation φ
    model_comm: jnp.ndarray  # f32[K] communication intensity per model type
    kappa_net: jnp.ndarray  # f32 slowdown per unit of co-located network demand
    kappa_cpu: jnp.ndarray  # f32 slowdown per unit of co-located CPU share
    kappa_spread: jnp.ndarray  # f32 slowdown per extra machine, per unit of comm intensity
    price: jnp.ndarray  # f32 $ per GPU-hour (paper §5.1.3: 2.84)
    alpha: jnp.ndarray  # f32 failed-scheduling weight of Eq. 3 (App. D: 0.1)
    jct_unit: jnp.ndarray  # f32 seconds per JCT unit in Eq. 3 (60: minutes, Table 1's unit)
    load_scale: jnp.ndarray  # f32 arrival-rate multiplier (App. E: 0.5 / 1 / 2)
    c_norm: jnp.ndarray  # f32 instance-count normaliser of the job features
    wait_norm: jnp.ndarray  # f32 waiting-time normaliser (s)
    reward_jct: jnp.ndarray  # f32 1: reward = −job-minutes accrued / E (sums to −avg JCT); 0: Eq. 3


@struct.dataclass
class GPUCloudState:
    t: jnp.ndarray  # f32 time (s) since the episode's first arrival
    first: jnp.ndarray  # i32 bank index of the episode's first job
    first_submit: jnp.ndarray  # i32 its submit time (arrival times are relative to it)
    next_job: jnp.ndarray  # i32 bank index of the next arrival
    end_job: jnp.ndarray  # i32 arrivals stop here (first + E)
    q_rows: jnp.ndarray  # i32[Q, 5] pending jobs in submission order: (bank index (-1 empty), n_inst, gpu,
    #                      cpu, mem) — one packed array, so admitting and removing jobs is one scatter each
    q_len: jnp.ndarray  # i32
    view: jnp.ndarray  # i32[N] queue position shown in each slot, -1 = empty slot
    run_job: jnp.ndarray  # i32[R] bank index of each running job, -1 = free slot
    run_dem: jnp.ndarray  # i32[R, 3] its per-instance demand
    run_comm_dist: jnp.ndarray  # f32[R] its communication intensity if spread over machines, else 0
    run_net_unit: jnp.ndarray  # f32[R] comm_dist · gpu: net[r, m] = n[r, m] · this / (gpu_cap_m · bw_m)
    run_cpu_unit: jnp.ndarray  # f32[R] cpu per instance: cpu[r, m] = n[r, m] · this / cpu_cap_m
    run_spread: jnp.ndarray  # f32[R] its spreading slowdown 1 + κ_spread·comm·(k − 1)
    run_gpus: jnp.ndarray  # f32[R] its GPUs (C · gpu / 100)
    run_arrival: jnp.ndarray  # f32[R] its arrival time
    run_start: jnp.ndarray  # f32[R] start time
    run_work: jnp.ndarray  # f32[R] work left (nominal seconds) at time t
    run_speed: jnp.ndarray  # f32[R] current speed
    run_alloc: jnp.ndarray  # i32[R, M] instances on each machine (stale in free slots: mask by run_job)
    free: jnp.ndarray  # i32[M, 3] free gpu, cpu, mem
    net_load: jnp.ndarray  # f32[M] NET_m: network demand on each NIC
    noise_seed: jnp.ndarray  # u32 seeds the fluctuation draws of this episode
    n_updates: jnp.ndarray  # i32 speed updates so far
    steps: jnp.ndarray  # i32 decisions this episode
    finished: jnp.ndarray  # i32 jobs finished
    failed: jnp.ndarray  # i32 failed schedulings
    sum_jct: jnp.ndarray  # f32 Σ JCT (s) of finished jobs
    sum_fee: jnp.ndarray  # f32 Σ fee ($)
    sum_wait: jnp.ndarray  # f32 Σ (start − arrival)
    sum_duration: jnp.ndarray  # f32 Σ (finish − start)
    gpu_seconds: jnp.ndarray  # f32 Σ GPUs · duration
    last_finish: jnp.ndarray  # f32 time of the latest completion
    forwarding: jnp.ndarray  # bool: the last call's forward stopped at `max_forward_events`; the next
    #                          call continues it instead of deciding
    acc_term: jnp.ndarray  # f32 Eq. 3's numerator so far of a forward split over calls
    acc_events: jnp.ndarray  # i32 its denominator so far


@struct.dataclass
class GPUCloudAction:
    priority: jnp.ndarray  # f32[N] ordering agent: higher goes first
    affinity: jnp.ndarray  # f32[N, M] placement agent: higher machine goes first


class GPUCloudEnv(Environment[GPUCloudState, GPUCloudParams]):
    """The DAS Dec-MDP as a functional env; see the module docstring and docs/gpu_cloud.md."""

    name = "gpu_cloud"

    def __init__(self, config: GPUCloudConfig = GPUCloudConfig()):
        self.config = config

    # ---- params ------------------------------------------------------------------------------------
    def make_params(
        self,
        bank: DDLWorkload,
        starts=None,
        *,
        episode_jobs: int = 1000,
        max_steps: int | None = None,
        machine: dict | None = None,
        perf=None,
        bw_cap=None,
        fluct_std: float | None = None,
        model_comm=None,
        kappa_net: float = 1.0,
        kappa_cpu: float = 0.5,
        kappa_spread: float = 0.1,
        price: float = 2.84,
        alpha: float = 0.1,
        jct_unit: float = 60.0,
        load_scale: float = 1.0,
        c_norm: float = 8.0,
        wait_norm: float = 3600.0,
        reward: str = "eq3",
    ) -> GPUCloudParams:
        """Validate `bank` against the cluster (errors name the job and field) and build params.

        `machine`: capacities of each (identical) machine, default the V100 spec; `perf`: `[M]`
        performance factors (default all 1.0; `heterogeneous_perf` draws calibrated ones); `starts`:
        episode start indices (default every admissible start); `reward`: one of `REWARDS`."""
        from jaxsched.workloads.ddl import FLUCT_STD, V100_MACHINE

        m = self.config.n_machines
        spec = dict(V100_MACHINE if machine is None else machine)
        gpu_cap = np.full(m, spec["gpu"], np.int32)
        cpu_cap = np.full(m, spec["cpu"], np.int32)
        mem_cap = np.full(m, spec["mem"], np.int32)
        validate_ddl_workload(bank, gpu_cap=gpu_cap, cpu_cap=cpu_cap, mem_cap=mem_cap)
        n_jobs = bank.num_jobs
        if not 1 <= episode_jobs <= n_jobs:
            raise ValueError(f"episode_jobs must be in [1, {n_jobs}] (the bank's jobs), got {episode_jobs}")
        if starts is None:
            starts = np.arange(n_jobs - episode_jobs + 1, dtype=np.int32)
        starts = np.asarray(starts, np.int32).reshape(-1)
        if starts.size == 0 or starts.min() < 0 or starts.max() + episode_jobs > n_jobs:
            raise ValueError(f"starts must lie in [0, {n_jobs - episode_jobs}] so episodes fit in the bank")
        perf = np.ones(m, np.float32) if perf is None else np.asarray(perf, np.float32)
        bw_cap = np.ones(m, np.float32) if bw_cap is None else np.asarray(bw_cap, np.float32)
        for name, arr in (("perf", perf), ("bw_cap", bw_cap)):
            if arr.shape != (m,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                raise ValueError(f"{name} must be {m} finite positive values, got {arr}")
        comm = np.asarray(MODEL_COMM if model_comm is None else model_comm, np.float32)
        if comm.shape != (len(MODEL_NAMES),) or np.any(comm < 0) or not np.all(np.isfinite(comm)):
            raise ValueError(f"model_comm must be {len(MODEL_NAMES)} finite values >= 0, got {comm}")
        knobs = dict(
            kappa_net=kappa_net,
            kappa_cpu=kappa_cpu,
            kappa_spread=kappa_spread,
            price=price,
            alpha=alpha,
            jct_unit=jct_unit,
            load_scale=load_scale,
            c_norm=c_norm,
            wait_norm=wait_norm,
        )
        fluct_std = FLUCT_STD if fluct_std is None else fluct_std
        knobs["fluct_std"] = fluct_std
        for name, v in knobs.items():
            positive = name in ("jct_unit", "load_scale", "c_norm", "wait_norm", "price")
            if not np.isfinite(v) or v < 0 or (positive and v == 0):
                raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {v}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        knobs["reward_jct"] = float(reward == "jct")
        if max_steps is None:
            max_steps = 50 * episode_jobs
        f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
        rows = np.stack([np.asarray(getattr(bank, f)) for f in ("submit", "n_inst", "gpu", "cpu", "mem")], 1)
        rows = np.concatenate([rows, np.repeat(rows[-1:], ARRIVAL_BLOCK, axis=0)]).astype(np.int32)
        return GPUCloudParams(
            bank=bank,
            rows=jnp.asarray(rows),
            starts=jnp.asarray(starts),
            episode_jobs=jnp.int32(episode_jobs),
            max_steps=jnp.int32(max_steps),
            gpu_cap=jnp.asarray(gpu_cap),
            cpu_cap=jnp.asarray(cpu_cap),
            mem_cap=jnp.asarray(mem_cap),
            bw_cap=jnp.asarray(bw_cap),
            perf=jnp.asarray(perf),
            model_comm=jnp.asarray(comm),
            **{k: f32(v) for k, v in knobs.items()},
        )

    # ---- helpers -----------------------------------------------------------------------------------
    def _cap(self, params: GPUCloudParams) -> jax.Array:
        return jnp.stack([params.gpu_cap, params.cpu_cap, params.mem_cap], axis=1)  # i32[M, 3]

    @staticmethod
    def _demand(params: GPUCloudParams, job: jax.Array) -> jax.Array:
        """`i32[..., 3]` per-instance demand of bank jobs `job` (any shape; -1 reads job 0)."""
        j = jnp.maximum(job, 0)
        b = params.bank
        return jnp.stack([b.gpu[j], b.cpu[j], b.mem[j]], axis=-1)

    @staticmethod
    def _arrival(params: GPUCloudParams, first: jax.Array, job: jax.Array) -> jax.Array:
        """Arrival time (s, from the episode's first arrival) of bank job `job`."""
        sub = params.bank.submit
        return (sub[jnp.maximum(job, 0)] - sub[first]).astype(jnp.float32) / params.load_scale

    def _waiting(self, state: GPUCloudState, params: GPUCloudParams):
        """`(n_outside i32, age f32)`: the episode jobs that have arrived but wait outside a full pending
        list (the first `OUTSIDE_WINDOW` of them), and Σ (t − arrival) (s) over every waiting job —
        pending or outside."""
        idx = state.next_job + jnp.arange(OUTSIDE_WINDOW)
        arrival = self._arrival(params, state.first, jnp.minimum(idx, params.bank.submit.shape[0] - 1))
        out = (idx < state.end_job) & (arrival <= state.t)
        q_job = state.q_rows[:, 0]
        pending = jnp.where(q_job >= 0, state.t - self._arrival(params, state.first, q_job), 0.0).sum()
        return out.sum(), pending + jnp.where(out, state.t - arrival, 0.0).sum()

    @staticmethod
    def _age(state: GPUCloudState, waiting_age: jax.Array) -> jax.Array:
        """Σ (t − arrival) (s) over the episode's jobs in the system at `state.t`: the running ones plus
        `waiting_age` (`_waiting`'s)."""
        return jnp.where(state.run_job >= 0, state.t - state.run_arrival, 0.0).sum() + waiting_age

    def _update_speeds(self, state: GPUCloudState, params: GPUCloudParams, enabled=True) -> GPUCloudState:
        """A speed update when `enabled`: new φ draw, speeds of every running job, NIC loads."""
        phi = fluctuation(state.noise_seed, state.n_updates, self.config.n_machines, params.fluct_std)
        speed, net = job_speeds(
            state.run_alloc,
            state.run_job >= 0,
            state.run_net_unit,
            state.run_cpu_unit,
            state.run_comm_dist,
            state.run_spread,
            params.perf,
            phi,
            params.gpu_cap,
            params.cpu_cap,
            params.bw_cap,
            params.kappa_net,
            params.kappa_cpu,
        )
        return state.replace(
            run_speed=jnp.where(enabled, speed, state.run_speed),
            net_load=jnp.where(enabled, net, state.net_load),
            n_updates=state.n_updates + jnp.asarray(enabled, jnp.int32),
        )

    def _any_feasible(self, state: GPUCloudState) -> jax.Array:
        """Could any pending job start now (fits the free resources and a running slot is free)?"""
        live = queue.live_mask(self.config.queue_capacity, state.q_len)
        fits = can_place(state.free, state.q_rows[:, 2:5], state.q_rows[:, 1])
        return jnp.any(live & fits) & jnp.any(state.run_job < 0)

    def _admit(self, state: GPUCloudState, block, count: jax.Array) -> GPUCloudState:
        """The first `count` jobs of `block` (`(job i32[K], dem i32[K, 3], inst i32[K])`, the next K
        arrivals) join the queue tail, in submission order."""
        q_cap = self.config.queue_capacity
        job, dem, inst = block
        # Block entry k goes to queue position q_len + k (entries past `count` to a dropped index).
        dest = jnp.where(jnp.arange(ARRIVAL_BLOCK) < count, state.q_len + jnp.arange(ARRIVAL_BLOCK), q_cap)
        return state.replace(
            q_rows=state.q_rows.at[dest].set(
                jnp.concatenate([job[:, None], inst[:, None], dem], axis=1), mode="drop"
            ),
            q_len=state.q_len + count,
            next_job=state.next_job + count,
        )

    def _complete(self, state: GPUCloudState, params: GPUCloudParams, t_new, end, records, enabled):
        """When `enabled`, every running job whose end is <= `t_new` finishes at `t_new`
        (docs/gpu_cloud.md, step 5), then a speed update if any did."""
        fin_job, fin_jct, fin_fee = records
        s = state
        done = (s.run_job >= 0) & (end <= t_new) & enabled
        duration = t_new - s.run_start
        jct = t_new - s.run_arrival
        fee = params.price * s.run_gpus * duration / 3600.0
        # Freed resources: Σ_r done_r · alloc[r, m] · dem[r, :].
        used = jnp.where(done[:, None], s.run_alloc, 0)
        freed = (used[:, :, None] * s.run_dem[:, None, :]).sum(axis=0)
        n_done = done.sum()
        s = s.replace(
            free=s.free + freed,
            run_job=jnp.where(done, -1, s.run_job),
            finished=s.finished + n_done,
            sum_jct=s.sum_jct + jnp.where(done, jct, 0.0).sum(),
            sum_fee=s.sum_fee + jnp.where(done, fee, 0.0).sum(),
            sum_wait=s.sum_wait + jnp.where(done, s.run_start - s.run_arrival, 0.0).sum(),
            sum_duration=s.sum_duration + jnp.where(done, duration, 0.0).sum(),
            gpu_seconds=s.gpu_seconds + jnp.where(done, s.run_gpus * duration, 0.0).sum(),
            last_finish=jnp.where(n_done > 0, t_new, s.last_finish),
        )
        records = (
            jnp.where(done, state.run_job, fin_job),
            jnp.where(done, jct, fin_jct),
            jnp.where(done, fee, fin_fee),
        )
        return self._update_speeds(s, params, n_done > 0), records

    def _forward(self, state: GPUCloudState, params: GPUCloudParams, force: jax.Array):
        """Step 5 of docs/gpu_cloud.md: process events until a pending job could start (at least one
        event when `force`), or `max_forward_events` iterations. Returns the state, per-running-slot
        completion records `(job i32[R], jct f32[R], fee f32[R])` and whether the forward is unfinished.

        The spec admits one arrival per iteration; here an iteration admits a block of up to
        ARRIVAL_BLOCK arrivals before the next completion at once, stopping at the first one that could
        start. That is the same schedule — arrivals free no resources, so a queued job that could not
        start before an arrival cannot start after it — in far fewer iterations of a vmapped loop,
        whose cost is set by the slowest env of the batch."""
        r, q_cap = self.config.max_running, self.config.queue_capacity
        rec0 = (jnp.full((r,), -1, jnp.int32), jnp.zeros((r,), jnp.float32), jnp.zeros((r,), jnp.float32))

        def has_event(s):
            return jnp.any(s.run_job >= 0) | ((s.next_job < s.end_job) & (s.q_len < q_cap))

        def wants_more(carry):
            s, _, first_iter, feasible, _ = carry
            over = s.finished >= params.episode_jobs
            return ~over & has_event(s) & ((first_iter & force) | ~feasible)

        cap = self.config.max_forward_events

        def cond(carry):
            return wants_more(carry) if cap is None else wants_more(carry) & (carry[4] < cap)

        def body(carry):
            s, rec, _, feasible_before, iters = carry
            live = s.run_job >= 0
            end = jnp.where(live, s.t + s.run_work / s.run_speed, INF)
            t_c = end.min()
            # The next block of arrivals, those before the next completion and with queue room.
            k = jnp.arange(ARRIVAL_BLOCK)
            job = s.next_job + k
            blk = jax.lax.dynamic_slice(params.rows, (s.next_job, 0), (ARRIVAL_BLOCK, 5))
            arr = jnp.maximum(s.t, (blk[:, 0] - s.first_submit).astype(jnp.float32) / params.load_scale)
            # Strictly before: on a tie the completion comes first (docs/gpu_cloud.md, step 5).
            eligible = (job < s.end_job) & (arr < t_c) & (k < q_cap - s.q_len)
            inst, dem = blk[:, 1], blk[:, 2:5]
            fits = can_place(s.free, dem, inst) & jnp.any(~live)
            # Stop at the first arrival after which some job could start (an older one, if one already
            # could: only a forced iteration gets here with one).
            stop_here = eligible & (fits | feasible_before)
            stop = jnp.any(stop_here)
            first_stop = jnp.argmax(stop_here)
            n_eligible = eligible.sum()
            block_full = n_eligible == ARRIVAL_BLOCK  # more arrivals may follow before t_c
            count = jnp.where(stop, first_stop + 1, n_eligible)
            last = jnp.clip(count - 1, 0, ARRIVAL_BLOCK - 1)
            arrivals_only = stop | block_full
            t_new = jnp.where(arrivals_only, jnp.where(count > 0, arr[last], s.t), t_c)
            work = jnp.where(live, s.run_work - s.run_speed * (t_new - s.t), s.run_work)
            s = self._admit(s.replace(t=t_new, run_work=work), (job, dem, inst), count)
            s, rec = self._complete(s, params, t_new, end, rec, ~arrivals_only)
            return s, rec, jnp.bool_(False), self._any_feasible(s), iters + 1

        init = (state, rec0, jnp.bool_(True), self._any_feasible(state), jnp.int32(0))
        final = jax.lax.while_loop(cond, body, init)
        return final[0], final[1], wants_more(final)  # the last: stopped at the cap, to be continued

    def _view(self, key: jax.Array, q_len: jax.Array) -> jax.Array:
        """`i32[N]` queue positions shown: all of them when they fit, else N sampled uniformly without
        replacement (paper App. D), in queue (submission) order; -1 marks empty slots."""
        n, q_cap = self.config.n_slots, self.config.queue_capacity
        live = queue.live_mask(q_cap, q_len)
        scores = jnp.where(live, jax.random.uniform(key, (q_cap,)), -1.0)
        _, picked = jax.lax.top_k(scores, n)
        picked = jnp.sort(picked)
        everything = jnp.arange(n)
        return jnp.where(q_len <= n, jnp.where(everything < q_len, everything, -1), picked).astype(jnp.int32)

    # ---- contract ----------------------------------------------------------------------------------
    def default_params(self) -> GPUCloudParams:
        """The embedded default: 2,000 generated PAI-like jobs (seed 0), episodes of 1,000, calibrated
        heterogeneity (built once per env object)."""
        if getattr(self, "_default_params", None) is None:
            from jaxsched.workloads.ddl import generate_pai_like

            bank = generate_pai_like(jax.random.key(0), 2000)
            perf = heterogeneous_perf(jax.random.key(0), self.config.n_machines)
            self._default_params = self.make_params(bank, episode_jobs=1000, perf=perf)
        return self._default_params

    def reset_env(self, key: jax.Array, params: GPUCloudParams):
        """Empty cluster; the episode's first job has arrived at t = 0 (the forward loop of the spec
        stops right there: a job on an empty cluster is always feasible)."""
        cfg = self.config
        k_start, k_noise = jax.random.split(key)
        first = jax.random.choice(k_start, params.starts)
        m, q_cap, r = cfg.n_machines, cfg.queue_capacity, cfg.max_running
        z32, zf = jnp.int32(0), jnp.float32(0.0)
        zeros_r = jnp.zeros((r,), jnp.float32)
        state = GPUCloudState(
            t=zf,
            first=first,
            first_submit=params.bank.submit[first],
            next_job=first + 1,
            end_job=first + params.episode_jobs,
            q_rows=jnp.zeros((q_cap, 5), jnp.int32)
            .at[:, 0]
            .set(-1)
            .at[0]
            .set(jnp.concatenate([first[None], params.rows[first, 1:5]])),
            q_len=jnp.int32(1),
            # One job waits: the view is just it (no sampling; resets run on every vmapped step).
            view=jnp.full((cfg.n_slots,), -1, jnp.int32).at[0].set(0),
            run_job=jnp.full((r,), -1, jnp.int32),
            run_dem=jnp.zeros((r, N_RES), jnp.int32),
            run_comm_dist=zeros_r,
            run_spread=jnp.ones((r,), jnp.float32),
            run_net_unit=zeros_r,
            run_cpu_unit=zeros_r,
            run_gpus=zeros_r,
            run_arrival=zeros_r,
            run_start=zeros_r,
            run_work=zeros_r,
            run_speed=jnp.ones((r,), jnp.float32),
            run_alloc=jnp.zeros((r, m), jnp.int32),
            free=self._cap(params),
            net_load=jnp.zeros((m,), jnp.float32),
            noise_seed=jax.random.bits(k_noise, (), jnp.uint32),
            n_updates=z32,
            steps=z32,
            finished=z32,
            failed=z32,
            sum_jct=zf,
            sum_fee=zf,
            sum_wait=zf,
            sum_duration=zf,
            gpu_seconds=zf,
            last_finish=zf,
            forwarding=jnp.bool_(False),
            acc_term=zf,
            acc_events=z32,
        )
        return self.observe(state, params), state

    def _place(self, state: GPUCloudState, action: GPUCloudAction, params: GPUCloudParams):
        """Steps 2–3: one scheduling round. Returns the state with the started jobs running (still
        queued), `placed bool[N]`, `failed bool[N]`, the allocation of each slot `i32[N, M]` and the bank
        index of each slot's job `i32[N]` (-1 empty)."""
        cfg = self.config
        visible = state.view >= 0
        pos = jnp.maximum(state.view, 0)
        slot_rows = state.q_rows[pos]
        slot_job = jnp.where(visible, slot_rows[:, 0], -1)
        slot_dem = slot_rows[:, 2:5]
        slot_inst = jnp.where(visible, slot_rows[:, 1], 0)
        # order[k]: the slot placed k-th (padded slots last; ties: lower slot first).
        prio_rank = descending_rank(jnp.where(visible, action.priority, -INF))
        order = jnp.argmax(prio_rank[None, :] == jnp.arange(cfg.n_slots)[:, None], axis=1)
        # before[i][m', m]: machine m' comes before m in slot i's affinity order (ties: lower index).
        rank = descending_rank(action.affinity)  # [N, M]
        before = rank[:, :, None] < rank[:, None, :]  # [N, M, M]
        n_free_slots = (state.run_job < 0).sum()

        def place_one(carry, x):
            free, n_started = carry
            vis, c, dem, before_k = x
            fit = jnp.minimum(fit_counts(free, dem), c)  # [M]
            ok = vis & (fit.sum() >= c) & (n_started < n_free_slots)
            # Instances already on the machines ranked above each machine. (A broadcast sum, not a
            # matmul: vmapped tiny matmuls become one library call per env on the CPU.)
            placed_before = jnp.where(before_k, fit[:, None], 0).sum(axis=0)
            take = jnp.clip(c - placed_before, 0, fit) * ok
            return (free - take[:, None] * dem[None, :], n_started + ok), (ok, take)

        # Inputs pre-permuted into priority order: no dynamic indexing inside the scan.
        xs = (visible[order], slot_inst[order], slot_dem[order], before[order])
        (free, _), (ok_k, take_k) = jax.lax.scan(place_one, (state.free, jnp.int32(0)), xs)
        # Back from priority order to slot order.
        placed = jnp.zeros((cfg.n_slots,), bool).at[order].set(ok_k)
        alloc = jnp.zeros((cfg.n_slots, cfg.n_machines), jnp.int32).at[order].set(take_k)

        # The q-th started job (in slot order) takes the q-th free running slot.
        started_rank = jnp.cumsum(placed) - 1
        free_run = state.run_job < 0
        free_rank = jnp.cumsum(free_run) - 1
        match = free_run[:, None] & placed[None, :] & (free_rank[:, None] == started_rank[None, :])  # [R, N]
        gets = match.any(axis=1)
        src = jnp.argmax(match, axis=1)
        job = slot_job[src]
        j = jnp.maximum(job, 0)
        b = params.bank
        net, cpu, comm_dist, spread = contention_shares(
            alloc[src],
            slot_dem[src],
            params.model_comm[b.model[j]],
            params.kappa_spread,
        )
        pick = lambda new, old: jnp.where(gets.reshape((-1,) + (1,) * (old.ndim - 1)), new, old)  # noqa: E731
        state = state.replace(
            free=free,
            run_job=pick(job, state.run_job),
            run_dem=pick(slot_dem[src], state.run_dem),
            run_comm_dist=pick(comm_dist, state.run_comm_dist),
            run_net_unit=pick(net, state.run_net_unit),
            run_cpu_unit=pick(cpu, state.run_cpu_unit),
            run_spread=pick(spread, state.run_spread),
            run_gpus=pick((b.n_inst[j] * b.gpu[j]).astype(jnp.float32) / 100.0, state.run_gpus),
            run_arrival=pick(self._arrival(params, state.first, job), state.run_arrival),
            run_start=pick(jnp.full_like(state.run_start, state.t), state.run_start),
            run_work=pick(b.work[j], state.run_work),
            run_alloc=pick(alloc[src], state.run_alloc),
        )
        return state, placed, visible & ~placed, alloc, slot_job

    def step_env(self, key: jax.Array, state: GPUCloudState, action: GPUCloudAction, params: GPUCloudParams):
        cfg = self.config
        age_before = self._age(state, self._waiting(state, params)[1])
        # A call that continues an unfinished forward decides nothing: no job is visible to the round.
        decision = ~state.forwarding
        state = state.replace(view=jnp.where(decision, state.view, -1))
        state, placed, failed, alloc, slot_job = self._place(state, action, params)
        n_placed = placed.sum()
        # Placed jobs leave the pending list.
        placed_pos = jnp.zeros((cfg.queue_capacity,), bool).at[jnp.maximum(state.view, 0)].max(placed)
        q_rows, q_len = queue.compact(state.q_rows, state.q_len, ~placed_pos, 0)
        q_rows = q_rows.at[:, 0].set(jnp.where(queue.live_mask(cfg.queue_capacity, q_len), q_rows[:, 0], -1))
        state = state.replace(q_rows=q_rows, q_len=q_len, steps=state.steps + decision.astype(jnp.int32))
        state = self._update_speeds(state, params, n_placed > 0)

        state, (fin_job, fin_jct, fin_fee), pending = self._forward(state, params, decision & (n_placed == 0))

        # Eq. 3: finished jobs give 1/(fee·JCT), failed schedulings −α·C·GPUs, averaged over both. A
        # forward split over several calls pays the decision's whole reward when it ends (0 before).
        done = fin_job >= 0
        fin_term = jnp.where(done, 1.0 / (fin_fee * fin_jct / params.jct_unit), 0.0).sum()
        sj = jnp.maximum(slot_job, 0)
        fail_gpus = jnp.where(
            failed, (params.bank.n_inst[sj] * params.bank.gpu[sj]).astype(jnp.float32) / 100.0, 0.0
        )
        eq3_term = fin_term - params.alpha * fail_gpus.sum()
        # The JCT reward: job-seconds accrued in this call (ages of the jobs in the system, plus whole
        # JCTs of the jobs that finished), so an episode's rewards sum to −(Σ JCT) / (jct_unit · E).
        waiting = self._waiting(state, params)  # also the next observation's load features
        accrued = self._age(state, waiting[1]) - age_before + jnp.where(done, fin_jct, 0.0).sum()
        jct_term = -accrued / (params.jct_unit * params.episode_jobs.astype(jnp.float32))
        use_jct = params.reward_jct > 0
        acc_term = state.acc_term + jnp.where(use_jct, jct_term, eq3_term)
        acc_events = state.acc_events + done.sum() + failed.sum()
        eq3 = acc_term / jnp.maximum(acc_events, 1).astype(jnp.float32)
        reward = jnp.where(pending, 0.0, jnp.where(use_jct, acc_term, eq3))
        state = state.replace(
            failed=state.failed + failed.sum(),
            view=self._view(key, state.q_len),
            forwarding=pending,
            acc_term=jnp.where(pending, acc_term, 0.0),
            acc_events=jnp.where(pending, acc_events, 0),
        )

        terminated = state.finished >= params.episode_jobs
        truncated = ~terminated & (state.steps >= params.max_steps)
        info = {
            "decision": decision,  # was the action used (False: this call continued a forward)
            "placed": n_placed,
            "failed": failed.sum(),
            "finished": done.sum(),
            "placed_job": jnp.where(placed, slot_job, -1),  # i32[N]
            "placed_alloc": alloc,  # i32[N, M]
            "finished_job": fin_job,  # i32[R]
            "finished_jct": fin_jct,
            "finished_fee": fin_fee,
        }
        return self.observe(state, params, waiting), state, reward, terminated, truncated, info

    def observe(self, state: GPUCloudState, params: GPUCloudParams, waiting=None) -> GPUCloudObs:
        """The agents' view of `state` (`waiting`: `_waiting(state, params)` if already computed)."""
        mask = state.view >= 0
        job = jnp.where(mask, state.q_rows[jnp.maximum(state.view, 0), 0], -1)
        dem = jnp.where(mask[:, None], self._demand(params, job), 0)
        n_inst = jnp.where(mask, params.bank.n_inst[jnp.maximum(job, 0)], 0)
        cap = self._cap(params)
        wait = state.t - self._arrival(params, state.first, job)
        jobs = job_features(n_inst, dem, wait, mask, cap[0], params.c_norm, params.wait_norm)
        machines = machine_features(state.free, cap, state.net_load, params.bw_cap)
        n_out, age_waiting = self._waiting(state, params) if waiting is None else waiting
        running = (state.run_job >= 0).mean()
        load = load_features(
            state.q_len, running, n_out, age_waiting, self.config.queue_capacity, params.wait_norm
        )
        return GPUCloudObs(
            jobs=jobs,
            job_mask=mask,
            machines=machines,
            global_state=global_state(jobs, mask, machines, load),
            n_inst=n_inst.astype(jnp.int32),
            demand=dem.astype(jnp.int32),
            arrival_rank=jnp.where(mask, job - state.first, -1),
            free=state.free,
            cap=cap,
            t=state.t,
            decision=~state.forwarding,
        )

    def action_mask(self, state: GPUCloudState, params: GPUCloudParams) -> jax.Array:
        """`bool[N]`: which priority/affinity rows act on a visible job."""
        return state.view >= 0

    def observation_space(self, params: GPUCloudParams) -> Box:
        return Box(0.0, jnp.inf, (self.global_state_size,))

    @property
    def global_state_size(self) -> int:
        return global_state_size(self.config.n_slots, self.config.n_machines)

    def action_space(self, params: GPUCloudParams):
        cfg = self.config
        return GPUCloudAction(
            priority=Box(-jnp.inf, jnp.inf, (cfg.n_slots,)),
            affinity=Box(-jnp.inf, jnp.inf, (cfg.n_slots, cfg.n_machines)),
        )

    def metrics(self, state: GPUCloudState, params: GPUCloudParams) -> dict[str, jax.Array]:
        """Table 1's metrics (avg JCT in minutes, avg fee in $) and more, over the finished jobs."""
        n = jnp.maximum(state.finished, 1).astype(jnp.float32)
        total_gpus = params.gpu_cap.sum().astype(jnp.float32) / 100.0
        return {
            "avg_jct_min": state.sum_jct / n / 60.0,
            "avg_fee": state.sum_fee / n,
            "avg_wait_min": state.sum_wait / n / 60.0,
            "avg_duration_min": state.sum_duration / n / 60.0,
            "finished": state.finished,
            "failed": state.failed,
            "gpu_util": state.gpu_seconds / jnp.maximum(total_gpus * state.last_finish, 1e-6),
            "makespan_h": state.last_finish / 3600.0,
            "steps": state.steps,
        }


def heterogeneous_perf(key: jax.Array, n_machines: int, cv: float | None = None) -> np.ndarray:
    """Per-machine performance factors `f32[M]`: log-normal with mean 1 and coefficient of variation
    `cv` (default `PERF_CV`, calibrated from PAI's per-worker mini-batch times; see
    docs/gpu_cloud_defaults.md)."""
    from jaxsched.workloads.ddl import PERF_CV

    cv = PERF_CV if cv is None else cv
    sigma = np.sqrt(np.log1p(cv**2))
    z = np.asarray(jax.random.normal(key, (n_machines,)))
    return np.exp(sigma * z - 0.5 * sigma**2).astype(np.float32)
