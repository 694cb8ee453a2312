"""SCED²'s locality-aware GPU cluster (Luan et al., §II–IV): N servers × M GPUs, exclusive, gang-scheduled,
non-preemptive DLT jobs placed by *packing*, and an agent that picks which waiting job runs next.

A decision (§III-C) is one of J + 1 actions over the window of the first J waiting jobs by arrival:
  * pick slot i (valid when the slot shows a job whose GPUs fit in the idle GPUs, anywhere): the job is
    placed now by packing (`core.placement.packing_take`), runs `ceil(T_ideal · slowdown[model, level])`
    seconds (the locality model, `gpu_locality.params`), and the reward is its execution effectiveness
    E = T_ideal / (T_wait + T_actual) (Eq. 2). Time stays frozen; the next waiting job slides into the window;
  * φ (action J): reward 0, time moves to the next event — the next arrival or the next GPU release,
    simultaneous events together. φ is masked only when no event can happen (then some pick is valid).
An invalid pick, or a masked φ, acts as φ and is counted in `invalid`. With `auto_forward` (default) a
state with no valid pick forwards by itself, so the agent only sees real choices; with `work_conserving`
(an ablation, off by default) φ is masked whenever a job fits, so the agent only chooses the order. An
episode ends when every one of its jobs is placed (their completions are known then: runs never change
once started).

Choices the paper leaves open, documented where made:
  * Whole seconds: submit times are rounded, T_ideal rounded up to >= 1 s (`whole_seconds`).
  * Each window job counts in `passed` the forwards it sat through while it fit (DSIF's delay budget).
  * Observation (Table I): per-GPU remaining time, per window job its k profiled run times + GPUs + wait,
    and four statistics of the jobs behind the window. Times enter as log1p(seconds / time_scale): run
    times span seconds to days (Fig. 3b), and a linear scale would crush every short job to 0.
  * The jobs behind the window are always a contiguous arrival range — only window jobs are ever placed —
    so the window is J slots of bank indices plus two counters, the queue needs no capacity, and the
    statistics come from prefix sums in O(1).
  * Fragmentation (Eq. 1, per server, averaged over servers) and utilisation are integrated over time,
    sampled when a forward begins and held until it ends.
  * Table III's shares count multi-GPU jobs (a 1-GPU job always has its best locality); a placement
    *reuses* locality when it is at its best and every GPU it takes was last held by a multi-GPU job.

Per decision the work is O(J + N·M) (the pick's packing O(N²) with N = 15); a forward also bisects the
episode's submit times to admit every arrival due.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.core import cluster
from jaxsched.core.env import Environment
from jaxsched.core.episode import pin_window
from jaxsched.core.metrics import fragmentation, per_job
from jaxsched.core.placement import packing_take, take_free_slots
from jaxsched.core.queue import first_after
from jaxsched.core.spaces import I32_MAX, Box, Discrete
from jaxsched.envs.gpu_locality.params import (
    GPULocalityConfig,
    GPULocalityParams,
    make_params,
    min_servers,
    profile_times,
    run_time,
)
from jaxsched.envs.gpu_locality.types import GPULocalityObs, GPULocalityState
from jaxsched.workloads.dlt import DLT_MODELS

N_STATS = 4  # jobs behind the window: count, mean GPUs, mean ideal time, mean wait


class GPULocalityEnv(Environment[GPULocalityState, GPULocalityParams]):
    """SCED²'s cluster (module docstring)."""

    name = "gpu_locality"

    def __init__(self, config: GPULocalityConfig | None = None):
        self.config = GPULocalityConfig() if config is None else config

    def make_params(self, bank, **kwargs) -> GPULocalityParams:
        """`gpu_locality.params.make_params` for this env's config."""
        return make_params(self.config, bank, **kwargs)

    def episode(self, params: GPULocalityParams, i) -> GPULocalityParams:
        """`params` pinned to episode window `i` (`starts[i]`, `ends[i]`): `reset` then always plays it."""
        return pin_window(params, i)

    def embedded_params(self) -> GPULocalityParams:
        """The embedded default: 8 generated Philly-like episodes (seed 0) of 200 jobs, the default
        locality slowdowns (`jaxsched.make("sced2")` has the calibrated preset)."""
        from jaxsched.workloads.philly import PhillyConfig, generate_dlt_bank

        bank, starts, ends = generate_dlt_bank(jax.random.key(0), PhillyConfig(), 8, 200)
        return self.make_params(bank, starts=starts, ends=ends)

    @property
    def phi(self) -> int:
        """The φ action (forward), after the J picks."""
        return self.config.window

    # ---- reset / step ---------------------------------------------------------------------------
    def reset_env(self, key, params: GPULocalityParams):
        cfg = self.config
        n, m, j = cfg.n_servers, cfg.gpus_per_server, cfg.window
        s = jax.random.randint(key, (), 0, params.starts.shape[0])
        start, end = params.starts[s], params.ends[s]
        t0 = params.submit[start]
        zi, zf = jnp.int32(0), jnp.float32(0.0)
        state = GPULocalityState(
            t=t0, t0=t0,
            gpu_end=jnp.zeros((n, m), jnp.int32), gpu_multi=jnp.zeros((n, m), bool),
            win_job=jnp.full((j,), -1, jnp.int32), win_passed=jnp.zeros((j,), jnp.int32), win_len=zi,
            behind=start, next_job=first_after(params.submit, start, end, t0), end_job=end,
            n_jobs=end - start,
            steps=zi, forwards=zi, invalid=zi, placed=zi, max_end=t0,
            sum_e=zf, sum_wait=zf, sum_actual=zf, area_frag=zf, area_busy=zf,
            multi=jnp.zeros(2, jnp.int32), relaxed=jnp.zeros(2, jnp.int32), reused=zi,
            n_by_sens=jnp.zeros(2, jnp.int32), wait_by_sens=jnp.zeros(2, jnp.float32),
        )  # fmt: skip
        state = self._refill(state)
        if cfg.auto_forward:
            state = self._auto_forward(state, params)
        return self.observe(state, params), state

    def step_env(self, key, state: GPULocalityState, action, params: GPULocalityParams):
        cfg = self.config
        action = jnp.asarray(action, jnp.int32)
        mask = self._mask(state, params)
        valid = mask[jnp.clip(action, 0, cfg.window)]
        pick = valid & (action < cfg.window)
        slot = jnp.clip(action, 0, cfg.window - 1)
        placed, reward = self._place(state, slot, params)
        forwarded = self._forward(state, params)
        state = jax.tree.map(lambda a, b: jnp.where(pick, a, b), placed, forwarded)
        state = state.replace(
            steps=state.steps + 1,
            forwards=state.forwards + (valid & ~pick).astype(jnp.int32),
            invalid=state.invalid + (~valid).astype(jnp.int32),
        )
        if cfg.auto_forward:
            state = self._auto_forward(state, params)
        terminated = state.placed >= state.n_jobs
        truncated = (state.steps >= params.max_steps) & ~terminated
        reward = jnp.where(pick, reward, 0.0).astype(jnp.float32)
        return self.observe(state, params), state, reward, terminated, truncated, {}

    # ---- the two transitions --------------------------------------------------------------------
    def _free(self, state: GPULocalityState) -> jax.Array:
        """`i32[N]` idle GPUs per server."""
        return cluster.free_mask(state.gpu_end, state.t).sum(axis=-1, dtype=jnp.int32)

    def _place(self, state: GPULocalityState, slot, params: GPULocalityParams):
        """Start window slot `slot`'s job now (the caller checks it fits): `(state, E)`."""
        cfg = self.config
        job = jnp.maximum(state.win_job[slot], 0)
        g, ideal, model = params.gpus[job], params.ideal[job], params.model[job]
        idle = cluster.free_mask(state.gpu_end, state.t)
        take = packing_take(idle.sum(axis=-1, dtype=jnp.int32), g)
        servers = (take > 0).sum(dtype=jnp.int32)
        level = jnp.minimum(servers - min_servers(g, cfg.gpus_per_server), cfg.n_levels - 1)
        actual = run_time(params, ideal, model, level)
        wait = state.t - params.submit[job]
        e = ideal.astype(jnp.float32) / (wait + actual).astype(jnp.float32)
        gpus_taken = take_free_slots(~idle, take)
        end = state.t + actual
        multi = g > 1
        best = level == 0
        reused = multi & best & jnp.all(jnp.where(gpus_taken, state.gpu_multi, True))
        # Sensitive (index 0): the level-1 slowdown reaches `sensitive_ratio`; with one level, none is.
        sensitive = (params.slowdown[model, min(1, cfg.n_levels - 1)] >= params.sensitive_ratio) & (
            cfg.n_levels > 1
        )
        sens = jnp.where(sensitive, 0, 1)
        onehot = jnp.arange(2) == sens
        # Remove the slot; later slots shift towards the head, keeping their delay counters.
        idx = jnp.arange(cfg.window)
        shift = idx >= slot
        nxt = lambda a, fill: jnp.concatenate([a[1:], jnp.full((1,), fill, a.dtype)])
        state = state.replace(
            gpu_end=jnp.where(gpus_taken, end, state.gpu_end),
            gpu_multi=jnp.where(gpus_taken, multi, state.gpu_multi),
            win_job=jnp.where(shift, nxt(state.win_job, -1), state.win_job),
            win_passed=jnp.where(shift, nxt(state.win_passed, 0), state.win_passed),
            win_len=state.win_len - 1,
            placed=state.placed + 1,
            max_end=jnp.maximum(state.max_end, end),
            sum_e=state.sum_e + e,
            sum_wait=state.sum_wait + wait.astype(jnp.float32),
            sum_actual=state.sum_actual + actual.astype(jnp.float32),
            multi=state.multi + (onehot & multi).astype(jnp.int32),
            relaxed=state.relaxed + (onehot & multi & ~best).astype(jnp.int32),
            reused=state.reused + reused.astype(jnp.int32),
            n_by_sens=state.n_by_sens + onehot.astype(jnp.int32),
            wait_by_sens=state.wait_by_sens + jnp.where(onehot, wait.astype(jnp.float32), 0.0),
        )
        return self._refill(state), e

    def _next_event(self, state: GPULocalityState, params: GPULocalityParams) -> jax.Array:
        """The time of the next arrival or GPU release, `cluster.NEVER` if none can happen."""
        has_arrival = state.next_job < state.end_job
        next_submit = params.submit[jnp.minimum(state.next_job, params.submit.shape[0] - 1)]
        t_arrival = jnp.where(has_arrival, next_submit, cluster.NEVER)
        return jnp.minimum(t_arrival, cluster.next_release(state.gpu_end.reshape(-1), state.t))

    def _forward(self, state: GPULocalityState, params: GPULocalityParams) -> GPULocalityState:
        """Move to the next event (no change if none): integrate the areas, count the delays of window jobs
        that fit, admit every arrival due, refill the window."""
        t_next = self._next_event(state, params)
        moves = t_next < cluster.NEVER
        t_new = jnp.where(moves, t_next, state.t)
        dt = (t_new - state.t).astype(jnp.float32)
        remaining = jnp.maximum(state.gpu_end - state.t, 0).astype(jnp.float32)
        busy = (state.gpu_end > state.t).sum(dtype=jnp.int32)
        fits = self._window_fits(state, params)
        state = state.replace(
            t=t_new,
            next_job=first_after(params.submit, state.next_job, state.end_job, t_new),
            win_passed=state.win_passed + (fits & moves).astype(jnp.int32),
            area_frag=state.area_frag + dt * fragmentation(remaining).mean(),
            area_busy=state.area_busy + dt * busy.astype(jnp.float32),
        )
        return self._refill(state)

    def _auto_forward(self, state: GPULocalityState, params: GPULocalityParams) -> GPULocalityState:
        """Forward while nothing can be picked, the episode runs, and an event can still happen."""

        def stuck(s):
            no_pick = ~self._window_fits(s, params).any()
            return no_pick & (s.placed < s.n_jobs) & (self._next_event(s, params) < cluster.NEVER)

        return jax.lax.while_loop(stuck, lambda s: self._forward(s, params), state)

    def _refill(self, state: GPULocalityState) -> GPULocalityState:
        """Fill the window's empty tail with the waiting jobs behind it, in arrival order."""
        j = self.config.window
        idx = jnp.arange(j)
        job = state.behind + idx - state.win_len  # the candidate for each empty slot
        new = (idx >= state.win_len) & (job < state.next_job)
        n_new = new.sum(dtype=jnp.int32)
        return state.replace(
            win_job=jnp.where(new, job, state.win_job),
            win_passed=jnp.where(new, 0, state.win_passed),
            win_len=state.win_len + n_new,
            behind=state.behind + n_new,
        )

    def _window_fits(self, state: GPULocalityState, params: GPULocalityParams) -> jax.Array:
        """`bool[J]`: the slot shows a job whose GPUs fit in the idle GPUs."""
        present = jnp.arange(self.config.window) < state.win_len
        g = params.gpus[jnp.maximum(state.win_job, 0)]
        return present & (g <= cluster.num_free(state.gpu_end.reshape(-1), state.t))

    def _mask(self, state: GPULocalityState, params: GPULocalityParams) -> jax.Array:
        fits = self._window_fits(state, params)
        phi = self._next_event(state, params) < cluster.NEVER
        if self.config.work_conserving:
            phi = phi & ~fits.any()
        return jnp.concatenate([fits, phi[None]])

    # ---- observation ----------------------------------------------------------------------------
    def observe(self, state: GPULocalityState, params: GPULocalityParams) -> GPULocalityObs:
        cfg = self.config
        ts = params.time_scale
        scale = lambda x: jnp.log1p(x.astype(jnp.float32) / ts)
        present = jnp.arange(cfg.window) < state.win_len
        job = jnp.maximum(state.win_job, 0)
        zero = lambda x: jnp.where(present, x, 0)
        gpus, ideal, model = zero(params.gpus[job]), zero(params.ideal[job]), zero(params.model[job])
        wait = zero(state.t - params.submit[job])
        profile = jnp.where(present[:, None], profile_times(cfg, params, ideal, gpus, model), 0)
        jobs = jnp.concatenate(
            [scale(profile), (gpus / cfg.gpus_per_server)[:, None].astype(jnp.float32), scale(wait)[:, None]],
            axis=-1,
        )
        jobs = jnp.where(present[:, None], jobs, 0.0)
        # The jobs behind the window are bank jobs [behind, next_job): range sums of the prefix sums.
        a, b = state.behind, state.next_job
        count = b - a
        rng = lambda c: c[b] - c[a]  # exact in wrapping int32 (GPULocalityParams)
        per = lambda x: jnp.where(count > 0, x.astype(jnp.float32) / jnp.maximum(count, 1), 0.0)
        stats = jnp.stack([
            jnp.log1p(count.astype(jnp.float32)),
            per(rng(params.cum_gpus)) / cfg.gpus_per_server,
            jnp.log1p(per(rng(params.cum_ideal)) / ts),
            jnp.log1p(per(state.t * count - rng(params.cum_submit)) / ts),
        ])  # fmt: skip
        gpu = scale(jnp.maximum(state.gpu_end - state.t, 0))
        vec = jnp.concatenate([gpu.reshape(-1), jobs.reshape(-1), stats])
        return GPULocalityObs(
            gpu=gpu, jobs=jobs, stats=stats, vec=vec, mask=self._mask(state, params), present=present,
            gpus=gpus, ideal=ideal, wait=wait, model=model, passed=jnp.where(present, state.win_passed, 0),
            profile=profile, free=self._free(state), t=state.t,
        )  # fmt: skip

    def action_mask(self, state: GPULocalityState, params: GPULocalityParams) -> jax.Array:
        return self._mask(state, params)

    def observation_space(self, params: GPULocalityParams) -> GPULocalityObs:
        """A `GPULocalityObs` of spaces: each field's shape, dtype, bounds (`docs/envs/gpu_locality.md`)."""
        cfg = self.config
        n, m, j, k = cfg.n_servers, cfg.gpus_per_server, cfg.window, cfg.n_levels
        real = lambda *shape: Box(0.0, jnp.inf, shape)
        count = lambda *shape, high=I32_MAX: Box(0, high, shape, jnp.int32)
        return GPULocalityObs(
            gpu=real(n, m), jobs=real(j, k + 2), stats=real(N_STATS),
            vec=real(n * m + (k + 2) * j + N_STATS), mask=Box(0, 1, (j + 1,), jnp.bool_),
            present=Box(0, 1, (j,), jnp.bool_), gpus=count(j, high=n * m),
            ideal=count(j), wait=count(j), model=count(j, high=len(DLT_MODELS) - 1), passed=count(j),
            profile=count(j, k), free=count(n, high=m), t=count(),
        )  # fmt: skip

    def action_space(self, params: GPULocalityParams) -> Discrete:
        """Window slots `0 .. J-1`, then φ = `J`."""
        return Discrete(self.config.window + 1)

    # ---- metrics --------------------------------------------------------------------------------
    def snapshot(self, state: GPULocalityState, params: GPULocalityParams) -> dict[str, jax.Array]:
        """The cluster now (Fig. 9): time since the episode began, the mean over servers of Eq. 1's
        fragmentation, and the GPUs the waiting jobs ask for in all (window and behind it)."""
        remaining = jnp.maximum(state.gpu_end - state.t, 0).astype(jnp.float32)
        present = jnp.arange(self.config.window) < state.win_len
        window = jnp.where(present, params.gpus[jnp.maximum(state.win_job, 0)], 0).sum()
        behind = params.cum_gpus[state.next_job] - params.cum_gpus[state.behind]
        return {
            "time": (state.t - state.t0).astype(jnp.float32),
            "fragmentation": fragmentation(remaining).mean(),
            "waiting_gpus": window + behind,
        }

    def metrics(self, state: GPULocalityState, params: GPULocalityParams) -> dict[str, jax.Array]:
        """The paper's metrics over the episode so far (placed jobs): Fig. 7's average effectiveness,
        makespan and JCT, Fig. 10's wait and run times, Fig. 9's fragmentation (time-weighted), Table III."""
        elapsed = (state.t - state.t0).astype(jnp.float32)
        per_time = lambda x: jnp.where(elapsed > 0, x / jnp.maximum(elapsed, 1e-9), 0.0)
        ratio = lambda a, b: jnp.where(b > 0, a / jnp.maximum(b, 1), 0.0)
        multi = state.multi.sum()
        return {
            "avg_effectiveness": per_job(state.sum_e, state.placed),
            "avg_jct": per_job(state.sum_wait + state.sum_actual, state.placed),
            "avg_wait": per_job(state.sum_wait, state.placed),
            "avg_actual": per_job(state.sum_actual, state.placed),
            "makespan": (state.max_end - state.t0).astype(jnp.float32),
            "utilization": per_time(state.area_busy) / self.config.n_gpus,
            "fragmentation": per_time(state.area_frag),
            "multi_share_relaxed": ratio(state.relaxed.sum(), multi),
            "relaxed_sensitive": ratio(state.relaxed[0], state.multi[0]),
            "relaxed_insensitive": ratio(state.relaxed[1], state.multi[1]),
            "wait_sensitive": per_job(state.wait_by_sens[0], state.n_by_sens[0]),
            "wait_insensitive": per_job(state.wait_by_sens[1], state.n_by_sens[1]),
            "reused_locality": ratio(state.reused, multi),
            "placed": state.placed,
            "steps": state.steps,
            "forwards": state.forwards,
            "invalid": state.invalid,
            "elapsed": elapsed,
        }
