"""The public-cloud GPU cluster of the Dual-Agent Scheduler (Xing et al., KDD'23, §3, §5.1).

M machines (GPU, CPU, memory, NIC bandwidth, a performance factor) run distributed deep-learning jobs
of C identical instances. One decision is a scheduling round (the paper's Dec-MDP step): the ordering
agent gives each of the N visible pending jobs a priority, the placement agent each (job, machine) pair
an affinity; jobs are taken in priority order and placed instance by instance on machines in affinity
order, or stay pending as a failed scheduling. Time then forwards, event by event, until a pending job
could start. Speeds follow a fluid contention model and are recomputed at every start and finish, so
durations (and fees) emerge from placement and co-location. The full semantics, the contention model and
every choice the paper leaves open are specified in `docs/gpu_cloud.md`; `tests/reference/gpu_cloud.py`
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

import jax
import jax.numpy as jnp

from jaxsched.core import queue
from jaxsched.core.env import Environment
from jaxsched.core.placement import can_place, descending_rank, fit_counts
from jaxsched.core.spaces import I32_MAX, Box
from jaxsched.envs.gpu_cloud.contention import contention_shares, fluctuation, job_speeds
from jaxsched.envs.gpu_cloud.obs import (
    N_JOB_FEATURES,
    N_MACHINE_FEATURES,
    GPUCloudObs,
    global_state,
    global_state_size,
    job_features,
    load_features,
    machine_features,
)
from jaxsched.envs.gpu_cloud.params import (  # noqa: F401  (heterogeneous_perf, REWARDS re-exported)
    ARRIVAL_BLOCK,
    REWARDS,
    heterogeneous_perf,
    make_gpu_cloud_params,
)
from jaxsched.envs.gpu_cloud.types import GPUCloudAction, GPUCloudConfig, GPUCloudParams, GPUCloudState
from jaxsched.workloads.ddl import DDLWorkload

N_RES = 3  # gpu, cpu, mem
INF = jnp.float32(jnp.inf)
OUTSIDE_WINDOW = 256  # arrived jobs waiting outside a full pending list that the JCT reward counts


class GPUCloudEnv(Environment[GPUCloudState, GPUCloudParams]):
    """The DAS Dec-MDP as a functional env; see the module docstring and docs/gpu_cloud.md."""

    name = "gpu_cloud"

    def __init__(self, config: GPUCloudConfig | None = None):
        self.config = GPUCloudConfig() if config is None else config

    # ---- params ------------------------------------------------------------------------------------
    def make_params(self, bank: DDLWorkload, starts=None, **knobs) -> GPUCloudParams:
        """Validate `bank` against the cluster (errors name the job and field) and build params.

        `machine`: capacities of each (identical) machine, default the V100 spec; `perf`: `[M]`
        performance factors (default all 1.0; `heterogeneous_perf` draws calibrated ones); `starts`:
        episode start indices (default every admissible start); `reward`: one of `REWARDS`. The knobs
        and their defaults: `gpu_cloud.params.make_gpu_cloud_params` (episode_jobs, max_steps, machine,
        perf, bw_cap, fluct_std, model_comm, kappa_net, kappa_cpu, kappa_spread, price, alpha, jct_unit,
        load_scale, c_norm, wait_norm, reward)."""
        return make_gpu_cloud_params(self.config.n_machines, bank, starts, **knobs)

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
    def episode(self, params: GPUCloudParams, i) -> GPUCloudParams:
        """`params` pinned to the episode that starts at job `starts[i]`: `reset` then always plays it."""
        return params.replace(starts=params.starts[i][None])

    def embedded_params(self) -> GPUCloudParams:
        """The embedded default: 2,000 generated PAI-like jobs (seed 0), episodes of 1,000, calibrated
        heterogeneity."""
        from jaxsched.workloads.ddl import generate_pai_like

        bank = generate_pai_like(jax.random.key(0), 2000)
        perf = heterogeneous_perf(jax.random.key(0), self.config.n_machines)
        return self.make_params(bank, episode_jobs=1000, perf=perf)

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

    def observation_space(self, params: GPUCloudParams) -> GPUCloudObs:
        """A `GPUCloudObs` of spaces: every field's shape, dtype and bounds (`docs/envs/gpu_cloud.md`)."""
        n, m = self.config.n_slots, self.config.n_machines
        real = lambda *shape: Box(0.0, jnp.inf, shape)
        count = lambda *shape, low=0: Box(low, I32_MAX, shape, jnp.int32)
        flag = lambda *shape: Box(0, 1, shape, jnp.bool_)
        return GPUCloudObs(
            jobs=real(n, N_JOB_FEATURES), job_mask=flag(n), machines=real(m, N_MACHINE_FEATURES),
            global_state=real(self.global_state_size), n_inst=count(n), demand=count(n, N_RES),
            arrival_rank=count(n, low=-1), free=count(m, N_RES), cap=count(m, N_RES), t=real(),
            decision=flag(),
        )  # fmt: skip

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
