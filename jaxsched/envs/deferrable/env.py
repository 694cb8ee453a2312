"""OSDEC's cloud of deferrable jobs under a time-varying available capacity (Dong, Zhu et al., §3–4).

Time advances one step per decision. At step t the agent sees the running jobs (B_his), the startable
jobs e <= t <= l (B_cur, the *candidates*), the submitted jobs not yet startable (B_fut) and the available
capacity C_t (Eq. 2). Its action is one real confidence score per pending slot (Eq. 4); only candidates'
scores matter. The env then applies the paper's rule (§4.1.2): candidates sorted by score, the longest
prefix whose cores fit is started. It pays Eq. 6,
    R_t = Σ_started (c·d − ω1·(t − e)) − ω2·v_t,   v_t = max(0, running cores at t − C_t),
moves to t + 1 (jobs ending by then leave, new submissions arrive, jobs with l < t + 1 expire) and the
episode terminates at t = horizon.

Choices the paper leaves open (docs/osdec.md has the why):
  * Sort direction: the *highest* score first. The paper's text sorts ascending and takes from the start;
    under a Gaussian policy with a tanh mean the two are one sign flip apart, and "confidence" reads as
    high-first. Ties: the earlier submitted job (smaller job index) first.
  * "Fits": the prefix's cores <= C_t − running cores (so nothing starts while the cluster is over C_t).
    A prefix, literally "the maximum number of jobs from the beginning of the list": the first job that
    does not fit stops the take; no job after it starts even if it would fit.
  * `defer_negative` (off by default): a score < 0 means "wait", the job is not in the list. Without it a
    job that fits can be held back only by ranking a job that does not fit before it.
  * v_t counts the jobs running during [t, t + 1): a job started at s with duration d runs during steps
    s .. s + d − 1 (the paper's sum over t' = t − d_i .. t covers d + 1 steps, which we read as a slip).
    A job started at t always fits, so v_t is the consequence of earlier starts and the capacity's drop.
  * Expiry: a job not started by step l leaves at l + 1 (counted in `expired`).
  * At most `pending_slots` submitted jobs are visible; a submission past them waits in the bank, in
    order, and is counted per step in `backlog` (never dropped; the presets are calibrated to keep it 0).
  * Revenue c·d is counted whole at the start, also for a job that runs past the horizon.
Real time (§5.3.4) is a workload switch (`DeferrableWorkloadConfig.realtime`: e = l = g), not an env one.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core.checks import at_least
from jaxsched.core.env import Environment
from jaxsched.core.spaces import I32_MAX, Box
from jaxsched.workloads.deferrable import DeferrableBank

N_PENDING_FEATURES = 6  # present, candidate, cores, duration, e − t, l − t
HISTORY_FIELDS = ("capacity", "load", "candidates", "mean_cores", "mean_duration", "violation", "started",
                  "started_cores")  # fmt: skip


@dataclass(frozen=True)
class DeferrableConfig:
    """Static shapes. `running_slots` must be >= the bank's largest capacity (checked in `make_params`):
    every job has >= 1 core and starts only within C_t, so running jobs never outnumber it."""

    pending_slots: int = 64
    running_slots: int = 64
    defer_negative: bool = False
    history: int = 8  # past steps in `obs.history` (the auxiliary module's input sequence)

    def __post_init__(self):
        at_least(self, "DeferrableConfig", ("pending_slots", "running_slots", "history"))


@struct.dataclass
class DeferrableParams:
    """The episode bank and the reward weights (vmappable)."""

    bank: DeferrableBank
    arrived_by: jnp.ndarray  # i32[E, horizon + 1]: jobs with submit <= t
    horizon: jnp.ndarray  # i32: steps per episode
    day: jnp.ndarray  # i32: steps per capacity period (the observation's time of day)
    w_delay: jnp.ndarray  # f32: ω1 (Table 3: 2)
    w_violation: jnp.ndarray  # f32: ω2 (Table 3: 10)


@struct.dataclass
class DeferrableState:
    t: jnp.ndarray  # i32 current step
    episode: jnp.ndarray  # i32 bank episode
    next_job: jnp.ndarray  # i32 the next submission to admit (episode job index)
    p_id: jnp.ndarray  # i32[P] episode job index of each pending slot, -1 empty (its fields then 0)
    p_cores: jnp.ndarray  # i32[P]
    p_duration: jnp.ndarray  # i32[P]
    p_earliest: jnp.ndarray  # i32[P]
    p_latest: jnp.ndarray  # i32[P]
    p_submit: jnp.ndarray  # i32[P]
    r_id: jnp.ndarray  # i32[R] running jobs, -1 empty (fields then 0)
    r_cores: jnp.ndarray  # i32[R]
    r_end: jnp.ndarray  # i32[R] the step the job leaves (start + duration)
    utilization: jnp.ndarray  # i32 Σ c·d of started jobs (the paper's utilisation / revenue)
    delay: jnp.ndarray  # i32 Σ (start − e) of started jobs
    violation: jnp.ndarray  # i32 Σ_t v_t
    violation_steps: jnp.ndarray  # i32 steps with v_t > 0
    started: jnp.ndarray  # i32 jobs started
    expired: jnp.ndarray  # i32 jobs that passed l unstarted
    backlog: jnp.ndarray  # i32 Σ_t submitted jobs not visible for want of a pending slot
    busy: jnp.ndarray  # i32 Σ_t running cores after the step's starts (core-steps)
    offered: jnp.ndarray  # i32 Σ_t C_t
    total_reward: jnp.ndarray  # f32 Σ R_t
    history: jnp.ndarray  # f32[K, 8] the last K steps' `HISTORY_FIELDS`, oldest first (zeros before t = 0)


@struct.dataclass
class DeferrableObs:
    """What a policy sees (raw; networks derive their inputs, e.g. `pending_features`).

    t, horizon, capacity (C_t), load (running cores): i32;  day_phase: f32 (t mod day) / day
    p_id, p_cores, p_duration, p_earliest, p_latest, p_submit: i32[P] (id -1 and fields 0 when empty)
    candidate: bool[P] startable now (e <= t; l >= t holds for every pending job); the action's mask
    r_id, r_cores, r_end: i32[R] running jobs (B_his)
    history: f32[K, 8] the last K steps, oldest first, each `HISTORY_FIELDS`: C, running cores before the
             starts, candidates, their mean cores and duration, v, jobs and cores started (zeros before 0)
    """

    t: jnp.ndarray
    horizon: jnp.ndarray
    capacity: jnp.ndarray
    load: jnp.ndarray
    day_phase: jnp.ndarray
    p_id: jnp.ndarray
    p_cores: jnp.ndarray
    p_duration: jnp.ndarray
    p_earliest: jnp.ndarray
    p_latest: jnp.ndarray
    p_submit: jnp.ndarray
    candidate: jnp.ndarray
    r_id: jnp.ndarray
    r_cores: jnp.ndarray
    r_end: jnp.ndarray
    history: jnp.ndarray

    @property
    def mask(self) -> jnp.ndarray:
        """The action's mask (`candidate`), under the name the agents read."""
        return self.candidate

    @property
    def pending_features(self) -> jnp.ndarray:
        """`f32[..., P, 6]`: present, candidate, cores, duration, e − t, l − t (zeros for an empty slot);
        leading batch axes broadcast."""
        present = self.p_id >= 0
        rel = lambda x: jnp.where(present, x - self.t[..., None], 0)  # noqa: E731
        cols = (present, self.candidate, self.p_cores, self.p_duration, rel(self.p_earliest),
                rel(self.p_latest))  # fmt: skip
        return jnp.stack([c.astype(jnp.float32) for c in cols], axis=-1)


def history_row(capacity, load, candidate, cores, duration, started=0, started_cores=0) -> jax.Array:
    """`f32[8]`, one step's `HISTORY_FIELDS`: C_t, running cores before the starts, the candidates
    (`candidate: bool[P]` over `cores`, `duration: i32[P]`), their mean cores and duration, v_t, and the
    jobs and cores started (0 for a step not yet taken). The env records it; networks build the current
    step's row with it."""
    n = jnp.maximum(candidate.sum(), 1)
    return jnp.stack([capacity, load, candidate.sum(), jnp.sum(jnp.where(candidate, cores, 0)) / n,
                      jnp.sum(jnp.where(candidate, duration, 0)) / n, jnp.maximum(load - capacity, 0),
                      started, started_cores]).astype(jnp.float32)  # fmt: skip


PENDING = ("p_cores", "p_duration", "p_earliest", "p_latest", "p_submit")
BANK_FIELD = {"p_cores": "cores", "p_duration": "duration", "p_earliest": "earliest",
              "p_latest": "latest", "p_submit": "submit"}  # fmt: skip


class DeferrableEnv(Environment[DeferrableState, DeferrableParams]):
    """The deferrable-job cloud (module docstring). The action is `f32[P]` scores."""

    name = "deferrable"
    observe_from_state = True

    def __init__(self, config: DeferrableConfig = DeferrableConfig()):
        self.config = config

    # ---- params -----------------------------------------------------------------------------------
    def episode(self, params: DeferrableParams, i) -> DeferrableParams:
        """`params` restricted to test episode `i`: `reset` then always plays it."""
        one = lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=True)  # noqa: E731
        return params.replace(bank=jax.tree.map(one, params.bank), arrived_by=one(params.arrived_by))

    def embedded_params(self) -> DeferrableParams:
        """The embedded default: 8 generated episodes (seed 0) of the generator's default preset, 48 steps
        each (`jaxsched.make("osdec")` has the calibrated preset)."""
        from jaxsched.workloads.deferrable import generate_bank
        from jaxsched.workloads.deferrable import preset as workload_preset

        wl = workload_preset("default", horizon=48)
        return self.make_params(generate_bank(wl, 8, 0), day=wl.day)

    def make_params(
        self,
        bank: DeferrableBank,
        horizon: int | None = None,
        day: int = 24,
        w_delay: float = 2.0,
        w_violation: float = 10.0,
    ) -> DeferrableParams:
        """Params over `bank`; `horizon` defaults to the capacity curves' length. Errors name the field:
        a horizon longer than the capacity curve, running slots below the largest capacity, a job wider
        than its episode's largest capacity (it could never start)."""
        cap = np.asarray(bank.capacity)
        horizon = cap.shape[1] if horizon is None else int(horizon)
        if not 1 <= horizon <= cap.shape[1]:
            raise ValueError(
                f"deferrable horizon must be in 1..{cap.shape[1]} (the capacity curve's length), "
                f"got {horizon}"
            )
        if day < 1:
            raise ValueError(f"deferrable day must be >= 1, got {day}")
        for name, w in (("w_delay", w_delay), ("w_violation", w_violation)):
            if not np.isfinite(w):
                raise ValueError(f"deferrable {name} must be finite, got {w}")
        peak = cap[:, :horizon].max(axis=1)
        if peak.max() > self.config.running_slots:
            raise ValueError(
                f"DeferrableConfig.running_slots ({self.config.running_slots}) must be >= the largest "
                f"capacity in the bank ({peak.max()})"
            )
        cores, n_jobs = np.asarray(bank.cores), np.asarray(bank.n_jobs)
        for e in range(cap.shape[0]):
            wide = np.flatnonzero(cores[e, : n_jobs[e]] > peak[e])
            if wide.size:
                j = wide[0]
                raise ValueError(
                    f"bank episode {e}: job {j} cores ({cores[e, j]}) exceed the episode's largest "
                    f"capacity ({peak[e]}): it could never start"
                )
        submit = np.asarray(bank.submit)
        arrived = np.stack([np.searchsorted(s, np.arange(horizon + 1), side="right") for s in submit])
        return DeferrableParams(
            bank=bank,
            arrived_by=jnp.asarray(arrived, jnp.int32),
            horizon=jnp.int32(horizon),
            day=jnp.int32(day),
            w_delay=jnp.float32(w_delay),
            w_violation=jnp.float32(w_violation),
        )

    # ---- the contract -----------------------------------------------------------------------------
    def reset_env(self, key, params: DeferrableParams):
        """A uniformly drawn bank episode."""
        episode = jax.random.randint(key, (), 0, params.bank.n_episodes, jnp.int32)
        state = self.start_episode(episode, params)
        return self.observe(state, params), state

    def start_episode(self, episode: jax.Array, params: DeferrableParams) -> DeferrableState:
        """The state at t = 0 of bank episode `episode` (paired evaluations pick episodes by index)."""
        cfg = self.config
        zp, zr = jnp.zeros(cfg.pending_slots, jnp.int32), jnp.zeros(cfg.running_slots, jnp.int32)
        z = jnp.int32(0)
        state = DeferrableState(
            t=z, episode=jnp.asarray(episode, jnp.int32), next_job=z,
            p_id=zp - 1, p_cores=zp, p_duration=zp, p_earliest=zp, p_latest=zp, p_submit=zp,
            r_id=zr - 1, r_cores=zr, r_end=zr,
            utilization=z, delay=z, violation=z, violation_steps=z, started=z, expired=z, backlog=z,
            busy=z, offered=z, total_reward=jnp.float32(0),
            history=jnp.zeros((cfg.history, len(HISTORY_FIELDS)), jnp.float32),
        )  # fmt: skip
        return self._arrive(state, params)

    def step_env(self, key, state: DeferrableState, action, params: DeferrableParams):
        t = state.t
        cap = params.bank.capacity[state.episode, t]
        load = state.r_cores.sum()
        take = self.take(state, action, cap - load)
        util = jnp.sum(jnp.where(take, state.p_cores * state.p_duration, 0))
        delay = jnp.sum(jnp.where(take, t - state.p_earliest, 0))
        viol = jnp.maximum(load - cap, 0)
        reward = (
            util.astype(jnp.float32)
            - params.w_delay * delay.astype(jnp.float32)
            - params.w_violation * viol.astype(jnp.float32)
        )
        n_take = take.sum()
        taken_ids = jnp.where(take, state.p_id, -1)
        started_cores = jnp.sum(jnp.where(take, state.p_cores, 0))
        row = history_row(cap, load, self.candidates(state), state.p_cores, state.p_duration, n_take,
                          started_cores)  # fmt: skip
        history = jnp.concatenate([state.history[1:], row[None]], axis=0)
        state = self._start(state, take)
        state = state.replace(
            t=t + 1,
            utilization=state.utilization + util,
            delay=state.delay + delay,
            violation=state.violation + viol,
            violation_steps=state.violation_steps + (viol > 0),
            started=state.started + n_take,
            busy=state.busy + load + started_cores,
            offered=state.offered + cap,
            total_reward=state.total_reward + reward,
            history=history,
        )
        state = self._arrive(state, params)
        terminated = state.t >= params.horizon
        info = {
            "started": n_take,
            "utilization": util,
            "delay": delay,
            "violation": viol,
            "started_ids": taken_ids,  # i32[P]: the job indices started this step, -1 elsewhere
            "capacity": cap,
            "busy": load + started_cores,
        }  # C_t and the cores running in step t
        return self.observe(state, params), state, reward, terminated, jnp.bool_(False), info

    def take(self, state: DeferrableState, scores: jax.Array, free: jax.Array) -> jax.Array:
        """`bool[P]`: the candidates the rule starts — sorted by (score desc, job index asc), the longest
        prefix whose cores sum to <= `free` (cores >= 1 make the running sum increase, so "every job whose
        running sum fits" is that prefix). Pairwise ranks instead of a sort: P² compares, no gather."""
        cand = self.candidates(state)
        if self.config.defer_negative:
            cand = cand & (scores >= 0)

        def add_cores_of(j, before):  # `before[i]` += job j's cores where j ranks ahead of job i
            sj, ij = scores[j], state.p_id[j]
            ahead = cand[j] & ((sj > scores) | ((sj == scores) & (ij < state.p_id)))
            return before + jnp.where(ahead, state.p_cores[j], 0)

        # A loop over j that accumulates into `i32[P]`, not a `[P, P]` mask summed: XLA's CPU backend
        # materialised the mask and split its sum into a reduce-window, a third of a batched step
        # (docs/results/osdec.md "Env throughput").
        before = jax.lax.fori_loop(0, scores.shape[0], add_cores_of, jnp.zeros_like(state.p_cores), unroll=8)
        return cand & (before + state.p_cores <= free)

    def _start(self, state: DeferrableState, take: jax.Array) -> DeferrableState:
        """Move the taken pending jobs into free running slots (in pending-slot order) and clear them."""
        r = self.config.running_slots
        free_slots = jnp.nonzero(state.r_id < 0, size=r, fill_value=r)[0]
        rank = jnp.cumsum(take) - 1
        dest = jnp.where(take, free_slots[jnp.clip(rank, 0, r - 1)], r)  # r: dropped (not taken)
        put = lambda a, v: a.at[dest].set(v, mode="drop")  # noqa: E731
        gone = lambda a, fill=0: jnp.where(take, fill, a)  # noqa: E731
        return state.replace(
            r_id=put(state.r_id, state.p_id),
            r_cores=put(state.r_cores, state.p_cores),
            r_end=put(state.r_end, state.t + state.p_duration),
            p_id=gone(state.p_id, -1),
            **{f: gone(getattr(state, f)) for f in PENDING},
        )

    def _arrive(self, state: DeferrableState, params: DeferrableParams) -> DeferrableState:
        """At `state.t`: jobs ending by now leave, submissions up to now enter free pending slots (in
        submit order, lowest slot first; the rest wait, counted in `backlog`), pending jobs with l < t
        expire."""
        t, ep = state.t, state.episode
        ended = state.r_end <= t  # empty slots have r_end 0 and stay empty
        r_id = jnp.where(ended, -1, state.r_id)
        r_cores, r_end = jnp.where(ended, 0, state.r_cores), jnp.where(ended, 0, state.r_end)

        free = state.p_id < 0
        want = params.arrived_by[ep, t] - state.next_job
        m = jnp.minimum(want, free.sum())
        rank = jnp.cumsum(free) - 1
        admit = free & (rank < m)
        job = jnp.clip(state.next_job + rank, 0, params.bank.submit.shape[1] - 1)
        fields = {f: jnp.where(admit, getattr(params.bank, BANK_FIELD[f])[ep][job], getattr(state, f))
                  for f in PENDING}  # fmt: skip
        p_id = jnp.where(admit, job, state.p_id)

        expire = (p_id >= 0) & (fields["p_latest"] < t)
        fields = {f: jnp.where(expire, 0, v) for f, v in fields.items()}
        return state.replace(
            r_id=r_id, r_cores=r_cores, r_end=r_end,
            p_id=jnp.where(expire, -1, p_id), **fields,
            next_job=state.next_job + m, backlog=state.backlog + want - m,
            expired=state.expired + expire.sum(),
        )  # fmt: skip

    def candidates(self, state: DeferrableState) -> jax.Array:
        """`bool[P]`: pending jobs startable now (e <= t; pending jobs all have l >= t)."""
        return (state.p_id >= 0) & (state.p_earliest <= state.t)

    def observe(self, state: DeferrableState, params: DeferrableParams) -> DeferrableObs:
        t = jnp.minimum(state.t, params.horizon - 1)  # a terminal state's capacity: the last step's
        return DeferrableObs(
            t=state.t,
            horizon=params.horizon,
            capacity=params.bank.capacity[state.episode, t],
            load=state.r_cores.sum(),
            day_phase=(state.t % params.day).astype(jnp.float32) / params.day.astype(jnp.float32),
            candidate=self.candidates(state),
            **{f: getattr(state, f) for f in ("p_id", *PENDING, "r_id", "r_cores", "r_end", "history")},
        )

    def action_mask(self, state: DeferrableState, params: DeferrableParams) -> jax.Array:
        return self.candidates(state)

    def observation_space(self, params: DeferrableParams) -> DeferrableObs:
        """A `DeferrableObs` of spaces: each field's shape, dtype and bounds (`docs/envs/deferrable.md`)."""
        p, r, k = self.config.pending_slots, self.config.running_slots, self.config.history
        count = lambda *shape, low=0: Box(low, I32_MAX, shape, jnp.int32)
        return DeferrableObs(
            t=count(), horizon=count(), capacity=count(), load=count(), day_phase=Box(0.0, 1.0, ()),
            p_id=count(p, low=-1), p_cores=count(p), p_duration=count(p), p_earliest=count(p),
            p_latest=count(p), p_submit=count(p), candidate=Box(0, 1, (p,), jnp.bool_),
            r_id=count(r, low=-1), r_cores=count(r), r_end=count(r),
            history=Box(0.0, np.inf, (k, len(HISTORY_FIELDS))),
        )  # fmt: skip

    def action_space(self, params: DeferrableParams) -> Box:
        return Box(-np.inf, np.inf, (self.config.pending_slots,))

    def metrics(self, state: DeferrableState, params: DeferrableParams) -> dict[str, jax.Array]:
        """The paper's episode metrics (§5.3.3) and ours: utilization Σ c·d, delay Σ (start − e), total
        reward, violation (sum and share of steps), expired and started jobs, the busy share of the
        offered capacity Σ_t running / Σ_t C_t, the visibility backlog."""
        f = lambda x: x.astype(jnp.float32)  # noqa: E731
        steps = jnp.maximum(state.t, 1)
        return {
            "utilization": f(state.utilization),
            "delay": f(state.delay),
            "delay_penalty": params.w_delay * f(state.delay),
            "total_reward": state.total_reward,
            "violation": f(state.violation),
            "violation_share": f(state.violation_steps) / f(steps),
            "expired": f(state.expired),
            "started": f(state.started),
            "capacity_share": f(state.busy) / jnp.maximum(f(state.offered), 1.0),
            "backlog": f(state.backlog),
        }
