"""The HPC batch cluster of Deep Back-Filling (Wang, Harwood, Rodriguez, HPCC'22, §II–III).

N identical cores and an unbounded queue (a fixed-capacity buffer here; arrivals past it are counted
as `overflow`, never dropped silently). A decision picks one of the M window slots or Fwd:
  * a valid pick (slot shows a job that fits now) starts the job: reward 0, time stays frozen;
  * Fwd, or an invalid pick, moves time to the next event (an arrival or a completion) and pays
    R(t) = −w1(1−η(t)) − w2·L(t)/Lmax(t) − w3·W(t)/Wmax(t), evaluated at the current time t,
    before time moves (on the state the ended scheduling cycle leaves).
The episode terminates once K jobs are placed (paper: 1,000), or when the workload window is
exhausted and the queue is empty; it is truncated after `max_steps` decisions.

Choices the paper leaves open (each documented where it is made):
  * Arrivals are serialised: a forward admits at most one job; simultaneous arrivals take
    successive zero-length forwards, so the agent sees every job on arrival (§II-A). On a tie the
    arrival and the completions at that instant happen in the same forward.
  * The tail window never repeats a job the head shows (`core.queue.split_window`).
  * σ(t) uses the *requested* end of each core's job (what a scheduler knows); events use run times.
    A free core has σ = 0; a busy core whose job has overrun its request shows σ = 1 s ("any moment").
  * Normalisation (§IV-A): σ and requested time by `runtime_norm` (the workload's maximum run time),
    cores by N, waiting time by `wait_norm` (default 12 h, as in RLScheduler), not clipped.
  * Lmax/Wmax are running maxima over the episode, updated after every decision; a zero maximum
    makes its term 0.
  * End-of-episode metrics count every job that arrived: queued jobs with their wait so far
    (the paper's W̃(t) is over all arrived jobs J(t)); slowdowns are over placed jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core import cluster, queue, wideint
from jaxsched.core.checks import at_least
from jaxsched.core.env import Environment
from jaxsched.core.episode import pin_window
from jaxsched.core.metrics import bounded_slowdown, per_job, slowdown
from jaxsched.core.spaces import I32_MAX, Box, Discrete
from jaxsched.workloads.base import Workload, validate_workload

N_JOB_FEATURES = 5  # present, cores/N, requested time/runtime_norm, wait/wait_norm, can run now
WAIT_NORM_DEFAULT = 12 * 3600.0  # RLScheduler's MAX_WAIT_TIME


REWARDS = ("dbf", "bsld")


@dataclass(frozen=True)
class HPCConfig:
    """Static shapes. `window_head + window_tail` = M; the paper's best small window is 9 + 1.

    `reward`: "dbf" is the paper's R(t) (module docstring). "bsld" is the waiting part of the average
    bounded slowdown (SchedInspector's objective): a Fwd over [t, t') pays −(t' − t) · Σ over the queued
    jobs of 1 / max(run, 10 s), over `episode_jobs`, so that an episode returns −Σ_j wait_j / max(run_j,
    10) / K for the jobs it placed (plus what the still-queued ones waited) — a skip is never free, which a
    reward paid at each start would make it. Picks pay 0 under both."""

    n_cores: int = 256
    window_head: int = 9
    window_tail: int = 1
    queue_capacity: int = 256
    reward: str = "dbf"

    def __post_init__(self):
        if self.reward not in REWARDS:
            raise ValueError(f"HPCConfig.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        at_least(self, "HPCConfig", ("n_cores", "queue_capacity"))
        at_least(self, "HPCConfig", ("window_head", "window_tail"), low=0)
        if self.window_size < 1:
            raise ValueError("HPCConfig.window_head + window_tail must be >= 1")
        if self.queue_capacity >= wideint.MAX_FACTOR:
            raise ValueError(
                f"HPCConfig.queue_capacity must be below {wideint.MAX_FACTOR} (the exact waiting-time sum "
                f"multiplies it by a time step), got {self.queue_capacity}"
            )
        if self.window_size > self.queue_capacity:
            raise ValueError(
                f"HPCConfig.queue_capacity ({self.queue_capacity}) must be >= the window size "
                f"({self.window_size})"
            )

    @property
    def window_size(self) -> int:
        return self.window_head + self.window_tail


@struct.dataclass
class HPCParams:
    """Workload bank and numeric knobs (vmappable).

    `starts[s]`/`ends[s]` delimit episode windows in `bank`: an episode starts at job `starts[s]` and
    no job at index >= `ends[s]` arrives. A trace gives one window per admissible start, a generated
    bank one per episode.
    """

    bank: Workload
    jobs: jnp.ndarray  # i32[J, 4]: the bank's (cores, req_time, run, submit) rows, one gather per slot
    starts: jnp.ndarray  # i32[S]
    ends: jnp.ndarray  # i32[S]
    episode_jobs: jnp.ndarray  # i32: K placed jobs end the episode (paper §IV-A: 1,000)
    max_steps: jnp.ndarray  # i32: truncation guard
    w1: jnp.ndarray  # f32: utilisation weight (paper: 1/3)
    w2: jnp.ndarray  # f32: queue-length weight (paper: 1/3)
    w3: jnp.ndarray  # f32: waiting-time weight (paper: 1/3)
    runtime_norm: jnp.ndarray  # f32: r_max of §IV-A
    wait_norm: jnp.ndarray  # f32


@struct.dataclass
class HPCState:
    t: jnp.ndarray  # i32 current time (trace seconds)
    t0: jnp.ndarray  # i32 episode start time
    core_end: jnp.ndarray  # i32[N] actual end of the job on each core (<= t: free)
    core_req_end: jnp.ndarray  # i32[N] requested end of that job (for σ)
    # The queue holds bank indices only: a job's submit time and size are the bank's, read for the window
    # slots, and the two sums over the whole queue are running totals (`w_exact`, `q_load`), so that a
    # step rewrites one `[Q]` array instead of three.
    q_job: jnp.ndarray  # i32[Q] bank index of each queued job, arrival order, -1 empty
    q_len: jnp.ndarray  # i32
    next_job: jnp.ndarray  # i32 bank index of the next arrival
    end_job: jnp.ndarray  # i32 arrivals stop here
    placed: jnp.ndarray  # i32 jobs started this episode
    steps: jnp.ndarray  # i32 decisions this episode
    l_max: jnp.ndarray  # f32 running max of L
    w_max: jnp.ndarray  # f32 running max of W
    w_now: jnp.ndarray  # f32 W(t): total waiting time of queued jobs now (`w_exact` rounded)
    w_exact: jnp.ndarray  # i32[3] W(t) exactly (core.wideint): updated by + L·dt and - wait, never re-summed
    q_load: jnp.ndarray  # f32 Σ cores·requested time of the queued jobs (0 whenever the queue is empty)
    sum_wait: jnp.ndarray  # f32 Σ wait of placed jobs
    sum_bsld: jnp.ndarray  # f32 Σ bounded slowdown (10 s) of placed jobs
    sum_sld: jnp.ndarray  # f32 Σ slowdown of placed jobs
    job_load: jnp.ndarray  # f32 Σ wait·cores·req_time over every arrived job, queued ones up to now
    area_queue: jnp.ndarray  # f32 ∫ L dt
    area_busy: jnp.ndarray  # f32 ∫ busy cores dt
    overflow: jnp.ndarray  # i32 arrivals refused by a full queue
    invalid: jnp.ndarray  # i32 invalid picks
    forwards: jnp.ndarray  # i32 Fwd actions


@struct.dataclass
class HPCObs:
    """What a policy sees. Learned policies read `vec` and `mask`; heuristics may read the raw ints.

    vec:    f32[N + 5M]  σ(t)/runtime_norm per core, then per slot
                         (present, cores/N, req_time/runtime_norm, wait/wait_norm, can_run)
    mask:   bool[M+1]    valid actions (slot shows a job that fits now; Fwd, last, always)
    submit: i32[M]       raw window fields (0 where absent)
    cores:  i32[M]
    req_time: i32[M]
    sigma:  i32[N]       requested time left per core (0 = free; >= 1 while busy)
    t:      i32          current time
    """

    vec: jnp.ndarray
    mask: jnp.ndarray
    submit: jnp.ndarray
    cores: jnp.ndarray
    req_time: jnp.ndarray
    sigma: jnp.ndarray
    t: jnp.ndarray


def _job_load(bank: Workload, j: jax.Array) -> jax.Array:
    """cores · requested time of bank job `j`, as f32 (the paper's job load c_j·r_j)."""
    return bank.cores[j].astype(jnp.float32) * bank.req_time[j].astype(jnp.float32)


class HPCEnv(Environment[HPCState, HPCParams]):
    """Deep Back-Filling's cluster (see the module docstring)."""

    name = "hpc"
    # `observe` reads only the state: `step` observes the selected state once instead of observing the
    # reset state too and selecting between the two (core.env).
    observe_from_state = True

    def __init__(self, config: HPCConfig = HPCConfig()):
        self.config = config

    # ---- params ---------------------------------------------------------------------------------
    def make_params(
        self,
        bank: Workload,
        starts=None,
        ends=None,
        episode_jobs: int = 1000,
        max_steps: int | None = None,
        w=(1 / 3, 1 / 3, 1 / 3),
        runtime_norm: float | None = None,
        wait_norm: float = WAIT_NORM_DEFAULT,
    ) -> HPCParams:
        """Params over `bank`. Without `starts`, every start that leaves `episode_jobs` jobs is allowed
        and arrivals run to the end of the trace. Validates the workload against the machine."""
        validate_workload(bank, self.config.n_cores)
        # Static (non-array) fields of the bank would make every new workload a recompile; the env
        # needs only the arrays, so canonicalise them.
        bank = bank.replace(max_procs=self.config.n_cores, max_nodes=0, name="")
        n = bank.num_jobs
        if episode_jobs < 1:
            raise ValueError(f"episode_jobs must be >= 1, got {episode_jobs}")
        if starts is None:
            if n < episode_jobs:
                raise ValueError(f"the workload has {n} jobs, fewer than episode_jobs={episode_jobs}")
            starts = np.arange(n - episode_jobs + 1)
        starts = np.asarray(starts, np.int32)
        ends = np.full_like(starts, n) if ends is None else np.asarray(ends, np.int32)
        if starts.ndim != 1 or starts.size == 0 or ends.shape != starts.shape:
            raise ValueError("starts must be a non-empty 1-d array and ends must match its shape")
        if (starts < 0).any() or (ends > n).any() or (ends <= starts).any():
            raise ValueError(f"episode windows must satisfy 0 <= start < end <= {n}")
        if runtime_norm is None:
            runtime_norm = float(np.max(np.asarray(bank.req_time)))
        if max_steps is None:
            max_steps = 50 * episode_jobs + 1000
        return HPCParams(
            bank=bank,
            jobs=jnp.stack([bank.cores, bank.req_time, bank.run, bank.submit], axis=-1).astype(jnp.int32),
            starts=jnp.asarray(starts),
            ends=jnp.asarray(ends),
            episode_jobs=jnp.int32(episode_jobs),
            max_steps=jnp.int32(max_steps),
            w1=jnp.float32(w[0]),
            w2=jnp.float32(w[1]),
            w3=jnp.float32(w[2]),
            runtime_norm=jnp.float32(runtime_norm),
            wait_norm=jnp.float32(wait_norm),
        )

    def episode(self, params: HPCParams, i) -> HPCParams:
        """`params` pinned to episode window `i` (`starts[i]`, `ends[i]`): `reset` then always plays it."""
        return pin_window(params, i)

    def embedded_params(self) -> HPCParams:
        """The embedded default: 8 generated Lublin–Feitelson episodes (seed 0) of 2 × 256 jobs for this
        machine's cores, 256-job episodes (`jaxsched.make("dbf")` has the paper's sizes)."""
        from jaxsched.workloads.lublin import LublinConfig, generate_bank

        lublin = LublinConfig(n_nodes=self.config.n_cores, whole_sample=True)
        bank, starts, ends = generate_bank(jax.random.key(0), lublin, 8, 512)
        return self.make_params(bank, starts=starts, ends=ends, episode_jobs=256)

    # ---- reset / step ---------------------------------------------------------------------------
    def reset_env(self, key: jax.Array, params: HPCParams) -> tuple[HPCObs, HPCState]:
        cfg = self.config
        s = jax.random.randint(key, (), 0, params.starts.shape[0])
        start = params.starts[s]
        t = params.bank.submit[start]
        zero_f = jnp.float32(0.0)
        q_job = jnp.full((cfg.queue_capacity,), -1, jnp.int32).at[0].set(start)
        state = HPCState(
            t=t,
            t0=t,
            core_end=jnp.zeros((cfg.n_cores,), jnp.int32),
            core_req_end=jnp.zeros((cfg.n_cores,), jnp.int32),
            q_job=q_job,
            q_len=jnp.int32(1),
            next_job=start + 1,
            end_job=params.ends[s],
            placed=jnp.int32(0),
            steps=jnp.int32(0),
            l_max=jnp.float32(1.0),
            w_max=zero_f,
            w_now=zero_f,
            w_exact=wideint.zeros(),
            q_load=_job_load(params.bank, start),
            sum_wait=zero_f,
            sum_bsld=zero_f,
            sum_sld=zero_f,
            job_load=zero_f,
            area_queue=zero_f,
            area_busy=zero_f,
            overflow=jnp.int32(0),
            invalid=jnp.int32(0),
            forwards=jnp.int32(0),
        )
        return self.observe(state, params), state

    def _window(self, state: HPCState, params: HPCParams):
        """Slots → (queue positions, present, bank job ids, cores, req_time, submit), each `[M]`.

        The head slots read the queue's first positions as a static slice and the job fields come from
        one gather of packed rows (`HPCParams.jobs`) instead of one per field."""
        cfg = self.config
        pos, present = queue.split_window(state.q_len, cfg.window_head, cfg.window_tail)
        tail_job = state.q_job[pos[cfg.window_head :]]
        job = jnp.where(present, jnp.concatenate([state.q_job[: cfg.window_head], tail_job]), 0)
        row = jnp.where(present[:, None], params.jobs[job], 0)
        submit = row[:, 3]
        return pos, present, job, row[:, 0], row[:, 1], submit

    def _start_picked(self, state: HPCState, place, slot, c, run, req, pos):
        """`(core_end [N], core_req_end [N], q_job [Q], q_len)`: the picked job started on the lowest free
        cores and taken out of the queue, where `place` (else the state's)."""
        t = state.t
        core_end, _, core_req_end = cluster.allocate(
            state.core_end, t, c, t + run, place, (state.core_req_end, t + req[slot])
        )
        q_job, q_len = queue.remove_at(state.q_job, state.q_len, pos[slot], -1, place)
        return core_end, core_req_end, q_job, q_len

    def _dbf_penalty(self, state: HPCState, params: HPCParams, eta, l_now):
        """R(t), f32: the weighted idle share, queue-length ratio and waiting-time ratio a move pays."""
        ratio_l = jnp.where(state.l_max > 0, l_now / jnp.maximum(state.l_max, 1e-9), 0.0)
        ratio_w = jnp.where(state.w_max > 0, state.w_now / jnp.maximum(state.w_max, 1e-9), 0.0)
        return params.w1 * (1.0 - eta) + params.w2 * ratio_l + params.w3 * ratio_w

    def _next_time(self, state: HPCState, params: HPCParams, forward):
        """`(has_arrival, next_idx, t_arrival, t_next)`: the next arrival (bank index, time, NEVER if none)
        and the time a move goes to: the next arrival or completion (`t` on a pick or with neither)."""
        bank = params.bank
        t = state.t
        has_arrival = state.next_job < state.end_job
        next_idx = jnp.minimum(state.next_job, bank.submit.shape[0] - 1)
        t_arrival = jnp.where(has_arrival, bank.submit[next_idx], cluster.NEVER)
        t_release = cluster.next_release(state.core_end, t)
        t_next = jnp.minimum(t_arrival, t_release)
        t_next = jnp.where(forward & (t_next < cluster.NEVER), t_next, t)
        return has_arrival, next_idx, t_arrival, t_next

    def _bsld_penalty(self, state: HPCState, params: HPCParams, t_next):
        """The "bsld" reward's penalty, f32: the jobs queued before the move, waiting over [t, t_next), each
        at 1 / max(run, 10 s), over `episode_jobs`."""
        queued = queue.live_mask(self.config.queue_capacity, state.q_len)
        run_q = params.bank.run[jnp.maximum(state.q_job, 0)].astype(jnp.float32)
        rate = jnp.sum(jnp.where(queued, 1.0 / jnp.maximum(run_q, 10.0), 0.0))
        return (t_next - state.t).astype(jnp.float32) * rate / params.episode_jobs.astype(jnp.float32)

    def _wait_sum(self, state: HPCState, t_next, forward, place, wait_s):
        """W(t') as an exact wide integer: W(t) + L·(t' − t) on a move, W(t) − wait on a pick."""
        # An arrival adds 0 (it arrives at t').
        t = state.t
        return wideint.sub(
            wideint.add(state.w_exact, wideint.scale(t_next - t, jnp.where(forward, state.q_len, 0))),
            wideint.from_int(jnp.where(place, wait_s, 0)),
        )

    def _done(self, new_state: HPCState, params: HPCParams):
        """`(terminated, truncated)`: K jobs placed or nothing left to schedule; else the step limit hit."""
        exhausted = (new_state.next_job >= new_state.end_job) & (new_state.q_len == 0)
        terminated = (new_state.placed >= params.episode_jobs) | exhausted
        truncated = (new_state.steps >= params.max_steps) & ~terminated
        return terminated, truncated

    def step_env(self, key, state: HPCState, action, params: HPCParams):
        cfg = self.config
        bank = params.bank
        t = state.t
        free = cluster.num_free(state.core_end, t)
        pos, present, job, cores, req, submit = self._window(state, params)
        fits = present & (cores <= free)

        action = jnp.asarray(action, jnp.int32)
        is_pick = action < cfg.window_size
        slot = jnp.clip(action, 0, cfg.window_size - 1)
        place = is_pick & fits[slot]
        forward = ~place

        # ---- a valid pick: start the job on the lowest free cores; time frozen, reward 0 ----------
        j = job[slot]
        run = bank.run[j]
        c = cores[slot]
        core_end, core_req_end, q_job, q_len = self._start_picked(state, place, slot, c, run, req, pos)
        wait_s = t - submit[slot]  # i32 seconds
        wait = wait_s.astype(jnp.float32)
        run_f = run.astype(jnp.float32)
        placed_f = place.astype(jnp.float32)

        # ---- Fwd or invalid pick: pay R(t) and move to the next arrival or completion ------------
        busy = cfg.n_cores - free
        l_now = state.q_len.astype(jnp.float32)
        eta = busy.astype(jnp.float32) / cfg.n_cores
        penalty = self._dbf_penalty(state, params, eta, l_now)
        has_arrival, next_idx, t_arrival, t_next = self._next_time(state, params, forward)
        if cfg.reward == "bsld":  # the queue as it waits over [t, t_next): the jobs queued before the move
            penalty = self._bsld_penalty(state, params, t_next)
        reward = jnp.where(forward, -penalty, 0.0).astype(jnp.float32)
        admit = forward & has_arrival & (t_arrival <= t_next)
        q_job, q_len, overflowed = queue.push(q_job, q_len, state.next_job, admit)
        dt = (t_next - t).astype(jnp.float32)

        # ---- bookkeeping: W(t) of the new state, running maxima, metric accumulators -------------
        w_exact = self._wait_sum(state, t_next, forward, place, wait_s)
        w_now = wideint.to_float(w_exact)
        load_in = jnp.where(admit & ~overflowed, _job_load(bank, next_idx), 0.0)
        picked_load = c.astype(jnp.float32) * req[slot].astype(jnp.float32)  # the window's fields, no gather
        q_load = jnp.where(q_len > 0, state.q_load - placed_f * picked_load + load_in, 0.0)
        l_new = q_len.astype(jnp.float32)
        new_state = state.replace(
            t=t_next,
            core_end=core_end,
            core_req_end=core_req_end,
            q_job=q_job,
            q_len=q_len,
            next_job=state.next_job + admit.astype(jnp.int32),
            placed=state.placed + place.astype(jnp.int32),
            steps=state.steps + 1,
            l_max=jnp.maximum(state.l_max, l_new),
            w_max=jnp.maximum(state.w_max, w_now),
            w_now=w_now,
            w_exact=w_exact,
            q_load=q_load,
            sum_wait=state.sum_wait + placed_f * wait,
            sum_bsld=state.sum_bsld + placed_f * bounded_slowdown(wait, run_f),
            sum_sld=state.sum_sld + placed_f * slowdown(wait, run_f),
            # a pick moves the job's wait·load from the queued part to the placed part: no change
            job_load=state.job_load + dt * state.q_load,
            area_queue=state.area_queue + dt * l_now,
            area_busy=state.area_busy + dt * busy.astype(jnp.float32),
            overflow=state.overflow + overflowed.astype(jnp.int32),
            invalid=state.invalid + (is_pick & ~place).astype(jnp.int32),
            forwards=state.forwards + (~is_pick).astype(jnp.int32),
        )
        terminated, truncated = self._done(new_state, params)
        info = {
            "placed": place,
            "invalid": is_pick & ~place,
            "queue_len": l_new,
            "utilization": eta,
            "overflow": overflowed,
        }
        return self.observe(new_state, params), new_state, reward, terminated, truncated, info

    # ---- observation, mask, spaces, metrics ------------------------------------------------------
    def observe(self, state: HPCState, params: HPCParams) -> HPCObs:
        cfg = self.config
        t = state.t
        _, present, _, cores, req, submit = self._window(state, params)
        free = cluster.num_free(state.core_end, t)
        fits = present & (cores <= free)
        sigma = cluster.time_left(state.core_end, state.core_req_end, t)
        wait = jnp.where(present, t - submit, 0).astype(jnp.float32)
        slots = jnp.stack(
            [
                present.astype(jnp.float32),
                cores.astype(jnp.float32) / cfg.n_cores,
                req.astype(jnp.float32) / params.runtime_norm,
                wait / params.wait_norm,
                fits.astype(jnp.float32),
            ],
            axis=-1,
        )
        vec = jnp.concatenate([sigma.astype(jnp.float32) / params.runtime_norm, slots.reshape(-1)])
        mask = jnp.concatenate([fits, jnp.ones((1,), bool)])
        return HPCObs(vec=vec, mask=mask, submit=submit, cores=cores, req_time=req, sigma=sigma, t=t)

    def action_mask(self, state: HPCState, params: HPCParams) -> jax.Array:
        return self.observe(state, params).mask

    def observation_space(self, params: HPCParams) -> HPCObs:
        """An `HPCObs` of spaces: every field's shape, dtype and bounds (`docs/envs/hpc.md`)."""
        n, m = self.config.n_cores, self.config.window_size
        count = lambda shape, high=I32_MAX: Box(0, high, shape, jnp.int32)
        return HPCObs(
            vec=Box(0.0, jnp.inf, (n + N_JOB_FEATURES * m,)), mask=Box(0, 1, (m + 1,), jnp.bool_),
            submit=count((m,)), cores=count((m,), n), req_time=count((m,)), sigma=count((n,)), t=count(()),
        )  # fmt: skip

    def action_space(self, params: HPCParams) -> Discrete:
        """Slots `0 .. M-1`, then Fwd = `M`."""
        return Discrete(self.config.window_size + 1)

    @property
    def fwd_action(self) -> int:
        return self.config.window_size

    def metrics(self, state: HPCState, params: HPCParams) -> dict[str, jax.Array]:
        """The paper's §II-A metrics over the episode so far.

        avg_wait over every arrived job (queued ones with their wait so far); avg_queue_len and
        utilization time-weighted; avg_job_load = Σ W·c·r / elapsed (the paper's D̃); bounded slowdown
        (10 s bound) and slowdown over placed jobs.
        """
        cfg = self.config
        arrived = state.placed + state.q_len
        elapsed = (state.t - state.t0).astype(jnp.float32)
        per_time = lambda x: jnp.where(elapsed > 0, x / jnp.maximum(elapsed, 1e-9), 0.0)
        return {
            "avg_wait": per_job(state.sum_wait + state.w_now, arrived),
            "avg_queue_len": per_time(state.area_queue),
            "utilization": per_time(state.area_busy) / cfg.n_cores,
            "avg_job_load": per_time(state.job_load),
            "avg_bsld": per_job(state.sum_bsld, state.placed),
            "avg_slowdown": per_job(state.sum_sld, state.placed),
            "placed": state.placed,
            "queued": state.q_len,
            "overflow": state.overflow,
            "invalid": state.invalid,
            "steps": state.steps,
            "elapsed": elapsed,
        }
