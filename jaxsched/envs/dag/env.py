"""The idle-slot DAG cluster (Duan & Wu, "Inserting Deliberate Idle Slots", on Decima's task model).

k identical executors run jobs that are DAGs of stages, each stage `n_tasks` tasks of a duration; an
executor runs one task at a time. Whenever an event leaves an idle executor and a runnable stage, the
agent picks (stage, the job's parallelism limit p, idle slot r): r > 0 delays the stage by r·l/g (l its
one-executor length; once per stage) without reserving executors, r = 0 dispatches
min(idle, stage's remaining tasks, p − the job's executors) executors to it. Time then runs to the next
decision (arrivals, task ends, executor moves, idle-timer ends, in a `lax.while_loop`); the reward is
−Δt · (jobs in the system) / scale, so a finished episode returns −Σ JCT / scale.

The full contract — executor choice, continuation of a stage's tasks, moves and warm-up, the order of
simultaneous events, admission into the J slots — is `docs/dag.md`; `tests/reference/dag.py` is a plain
event loop of the same text, and the differential test holds this module to it.

Choices the paper leaves open (with Decima's simulator as the reference where it speaks):
  * Integer milliseconds, as Decima's durations; l = n_tasks · task duration; the slot is max(1, ⌊r·l/g⌋)
    ms (at least 1 ms, so its end is an event).
  * The timer's end is a decision point (the paper's trigger iii) at which the stage is runnable again,
    not an automatic dispatch: the agent re-decides with r masked to 0 for that stage.
  * r > 0 is allowed only for a stage nothing of which has started ("inserted before it").
  * p is non-decreasing in effect (the paper): a limit must exceed the job's current executors, so each
    r = 0 decision dispatches at least one executor.
  * A stage is chosen at most once per scheduling round (Decima's `node_selected`): every choice selects
    it until the next trigger event (an executor idling, a stage finishing, an admission, a timer's end),
    so a limit below the idle executors holds the rest back, and a timestamp holds finitely many
    decisions.
  * An executor finishing a task continues with the next task of its stage without a decision (Decima);
    a freed executor keeps its job (a later dispatch elsewhere costs `moving_delay` when that is > 0).
  * Decisions are offered for every idle executor after a trigger, not per Decima "source job" pool:
    see docs/dag.md for the differences.
  * Jobs beyond J wait invisibly in arrival order and count in the reward from their arrival.
Per event time the work is O(J·S + k) (executors that finish together are ranked by bitsets,
`_rank_within`); completions that only continue a stage, and move arrivals that start a task, are
fast-forwarded in closed form (`_advance`), so a decision costs a few event times, not one per task.
A stage's counters (tasks left, executors running it and moving to it, its flags) are one packed word
(`dag.params.StageCounts`): an event's count updates are one scatter-add.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.core.env import Environment
from jaxsched.core.queue import first_after
from jaxsched.core.spaces import Box, MultiDiscrete
from jaxsched.envs.dag.params import INF_MS, DAGConfig, make_params
from jaxsched.envs.dag.types import DAGObs, DAGParams, DAGState, StageCounts
from jaxsched.envs.dag.waves import sample_durations
from jaxsched.workloads.dag_bank import DAGBank

_MAX_UNROLLED_EVENTS = 4  # `max_events` up to this runs as unrolled copies of an event time (`_advance`)


def _floor_mul_div(r, length, g):
    """⌊r · length / g⌋ in int32 without overflowing r · length (length < 2**31, r <= g)."""
    q, m = length // g, length % g
    return r * q + (r * m) // g


def _rank_within(
    flags: jax.Array, slot: jax.Array, stage: jax.Array, second: jax.Array, shape: tuple[int, int]
) -> jax.Array:
    """`i32[k]`: for each flagged executor, how many flagged executors of the same (`slot`, `stage`) (i32[k]
    each, inside `shape` = (J, S)) come before it, in the order (`second`, index): those with `second` False
    first. Each group's members are bitsets over executors (32 per word; distinct bits, so a scatter-add
    is an OR), and a rank is a population count of the members below it: O(J·S + k) per env, where the
    pairwise count it replaces was O(k²) and a tenth of a batched step at k = 50."""
    k = flags.shape[0]
    n_words = -(-k // 32)
    idx = jnp.arange(k, dtype=jnp.int32)
    word = idx // 32
    bit = jnp.left_shift(jnp.uint32(1), (idx % 32).astype(jnp.uint32))
    plane = second.astype(jnp.int32) * n_words + word  # the `second` members in the upper words
    members = jnp.zeros((*shape, 2 * n_words), jnp.uint32)
    members = members.at[jnp.where(flags, slot, shape[0]), stage, plane].add(bit, mode="drop")
    mine = members[slot, stage]  # [k, 2W]
    w = jnp.arange(n_words, dtype=jnp.int32)[None, :]
    in_word = jnp.where(w == word[:, None], bit[:, None] - 1, 0)  # the bits below it in its own word
    below = jnp.where(w < word[:, None], jnp.uint32(0xFFFFFFFF), in_word)

    def count(x):
        return jax.lax.population_count(x).astype(jnp.int32).sum(axis=1)

    first, late = mine[:, :n_words], mine[:, n_words:]
    return jnp.where(second, count(first) + count(late & below), count(first & below))


class DAGEnv(Environment[DAGState, DAGParams]):
    """The idle-slot DAG cluster (module docstring, docs/dag.md). Actions are `i32[3]`:
    (slot·S + stage, limit − 1, r)."""

    name = "dag"
    observe_from_state = True  # `step` observes the selected state once (core.env)

    def __init__(self, config: DAGConfig | None = None):
        self.config = DAGConfig() if config is None else config
        self.layout = StageCounts(self.config.n_executors)  # the layout of `state.counts`

    def make_params(self, bank: DAGBank, **kwargs) -> DAGParams:
        """`dag.params.make_params` for this env's config."""
        return make_params(self.config, bank, **kwargs)

    def episode(self, params: DAGParams, i) -> DAGParams:
        """`params` restricted to its bank's episode `i`: `reset` then always plays it."""
        b = params.bank
        one = lambda x: jax.lax.dynamic_index_in_dim(x, i, keepdims=True)  # noqa: E731
        return params.replace(
            bank=b.replace(template=one(b.template), arrival=one(b.arrival), n_jobs=one(b.n_jobs))
        )

    def embedded_params(self) -> DAGParams:
        """The embedded default: 8 generated TPC-H-like episodes (seed 0) of 50 streaming jobs, Decima's
        moving and warm-up delays."""
        from jaxsched.workloads.dag_gen import tpch_like_bank

        bank = tpch_like_bank(8, 50, seed=0, max_stages=self.config.max_stages)
        return self.make_params(bank, moving_delay=2000, warmup_delay=1000)

    # ---- template gathers ------------------------------------------------------------------------
    def _stage_arrays(self, state: DAGState, params: DAGParams):
        """Per slot: duration (i32[J, S]), parents (i32[J, S]), valid stages (bool[J, S]), cached in the
        state at admission (stale in a slot whose job left: every reader masks by the valid stages). The
        valid mask is unpacked from `stage_bits` (elementwise, fused into its consumers: one `[J, S]` array
        fewer to carry and select)."""
        return state.duration, state.parents, self._bits(state.stage_bits)

    def stage_counts(self, state: DAGState) -> dict[str, jax.Array]:
        """`state.counts` unpacked, each `[..., J, S]`: left (tasks not started), running, moving (executors),
        touched, delayed, selected (bool). For traces and tests; the env reads the fields where it needs
        them."""
        c, lay = state.counts, self.layout
        flags = {f: lay.has(c, f) for f in ("touched", "delayed", "selected")}
        return {"left": lay.left(c), "running": lay.running(c), "moving": lay.moving(c), **flags}

    def _bits(self, bits: jax.Array) -> jax.Array:
        """`bool[J, S]`: the bitmasks `i32[J]` unpacked."""
        s = jnp.arange(self.config.max_stages, dtype=jnp.int32)
        return (jnp.right_shift(bits[:, None], s[None, :]) & 1) == 1

    def _stage_bits(self, flags: jax.Array) -> jax.Array:
        """`i32[J]`: `bool[J, S]` packed, bit s for stage s."""
        s = jnp.arange(self.config.max_stages, dtype=jnp.int32)
        return jnp.sum(jnp.where(flags, jnp.left_shift(1, s)[None, :], 0), axis=1, dtype=jnp.int32)

    def _open(self, state: DAGState, params: DAGParams) -> jax.Array:
        """`bool[J, S]`: stages whose parents are finished, with tasks not yet covered and no timer running
        (runnable but for the round's selections)."""
        _, parents, valid = self._stage_arrays(state, params)
        parents_done = (parents & ~state.fin_bits[:, None]) == 0
        c, lay = state.counts, self.layout
        spare = lay.left(c) - lay.moving(c) > 0
        return valid & parents_done & spare & (state.hold_until <= state.t)

    def _runnable(self, state: DAGState, params: DAGParams) -> jax.Array:
        """`bool[J, S]`: open stages (`_open`) not selected in this scheduling round."""
        return self._open(state, params) & ~self.layout.has(state.counts, "selected")

    def _runnable_at(self, state: DAGState, j, s) -> jax.Array:
        """`bool`: `_runnable(state)[j, s]`, from that cell alone (an action reads one stage)."""
        c, lay = state.counts[j, s], self.layout
        exists = (jnp.right_shift(state.stage_bits[j], s) & 1) == 1
        parents_done = (state.parents[j, s] & ~state.fin_bits[j]) == 0
        spare = lay.left(c) - lay.moving(c) > 0
        return exists & parents_done & spare & (state.hold_until[j, s] <= state.t) & ~lay.has(c, "selected")

    def _bound(self, state: DAGState) -> jax.Array:
        """`i32[J]`: executors running or moving for each slot's job: Σ over its stages of running + moving.
        A moving executor whose job left is in no live slot's count (admission zeroes the slot's counters),
        as `_per_slot` would exclude it."""
        valid = self._bits(state.stage_bits)
        c, lay = state.counts, self.layout
        per_stage = jnp.where(valid, lay.running(c) + lay.moving(c), 0)
        return per_stage.sum(axis=1, dtype=jnp.int32)

    def _bound_of(self, state: DAGState, j) -> jax.Array:
        """`i32`: `_bound(state)[j]` for one slot (a row, not all of them)."""
        valid = self._bits(state.stage_bits[j][None])[0]
        row, lay = state.counts[j], self.layout
        return jnp.sum(jnp.where(valid, lay.running(row) + lay.moving(row), 0), dtype=jnp.int32)

    def _per_slot(self, state: DAGState, flags, ex_job, ex_slot) -> jax.Array:
        """`i32[J]`: the `flags` executors (bool[k]) bound to each slot's job, given their `ex_job` and
        `ex_slot` (i32[k]). An executor bound to a job in the system holds that job's slot in `ex_slot`
        (both are set at a dispatch, and a job keeps its slot until it leaves), so this scatters the k
        executors by `ex_slot` where the slot's job is theirs: not a [J, k] comparison. (The task-wave draw
        counts the idle and running ones this way; `_bound`, the running and moving ones, reads the
        per-stage counters instead.)"""
        j = self.config.max_slots
        mine = flags & (ex_job >= 0) & (state.slot_job[ex_slot] == ex_job)
        return jnp.zeros((j,), jnp.int32).at[jnp.where(mine, ex_slot, j)].add(1, mode="drop")

    def _decision_needed(self, state: DAGState, params: DAGParams) -> jax.Array:
        return jnp.any(state.ex_state == 0) & jnp.any(self._runnable(state, params))

    def _task_durations(
        self, state, params, slot, stage, left, rank, fresh, same_stage, ex_job, ex_slot, ex_state
    ):
        """`i32[k]`: the duration of a task of (`slot`, `stage`) started on each executor (i32[k] each), the
        `rank`-th of the `left` its stage had not started, `fresh` to the job or continuing its `same_stage`
        (bool[k]). Without `task_waves`, the template's duration (+ `warmup_delay` when fresh); with it, a
        draw from decima-sim's waves (`envs.dag_waves`) for that task index, keyed by the executors bound to
        the job (`ex_job`, `ex_slot`, `ex_state` after the update: idle or running, not moving)."""
        if not self.config.task_waves:
            return state.duration[slot, stage] + jnp.where(fresh, params.warmup_delay, 0)
        task = params.bank.n_tasks[state.slot_tmpl[slot], stage] - left + rank  # tasks go out in rank order
        job = state.slot_job[slot]
        per_job = self._per_slot(state, ex_state != 2, ex_job, ex_slot)  # [J]
        return sample_durations(
            params.waves, state.seed, state.slot_tmpl[slot], job, stage, task, per_job[slot], fresh,
            same_stage, params.warmup_delay,
        )  # fmt: skip

    # ---- reset / step ----------------------------------------------------------------------------
    def reset_env(self, key, params: DAGParams):
        cfg = self.config
        j, s, k = cfg.max_slots, cfg.max_stages, cfg.n_executors
        b = params.bank
        ep = jax.random.randint(key, (), 0, b.template.shape[0])
        seed = jax.random.bits(jax.random.fold_in(key, 1), (), jnp.uint32)  # `ep` keeps its draw from `key`
        zi, zf = jnp.int32(0), jnp.float32(0.0)
        zjs = jnp.zeros((j, s), jnp.int32)
        state = DAGState(
            t=b.arrival[ep, 0], ep=ep, seed=seed, n_jobs=b.n_jobs[ep], next_arr=zi, next_admit=zi,
            n_finished=zi,
            slot_job=jnp.full((j,), -1, jnp.int32), slot_tmpl=jnp.zeros((j,), jnp.int32),
            slot_arrival=jnp.zeros((j,), jnp.int32),
            counts=zjs, hold_until=zjs, duration=zjs, parents=zjs,
            stage_bits=jnp.zeros((j,), jnp.int32), fin_bits=jnp.zeros((j,), jnp.int32),
            forwarding=jnp.bool_(False),
            ex_state=jnp.zeros((k,), jnp.int32), ex_until=jnp.full((k,), INF_MS, jnp.int32),
            ex_job=jnp.full((k,), -1, jnp.int32), ex_slot=jnp.zeros((k,), jnp.int32),
            ex_stage=jnp.full((k,), -1, jnp.int32), ex_warm=jnp.zeros((k,), bool),
            jct=jnp.full((b.max_jobs,), -1, jnp.int32),
            last_finish=zi, sum_jct=zf, n_selections=zi, n_delayed=zi, idle_total=zf, invalid=zi,
            n_waited=zi, events=zi, ret=zf,
        )  # fmt: skip
        # All executors are idle and the first job's roots are runnable: a decision is due right away.
        state = self._arrive(state, params)
        return self.observe(state, params), state

    def step_env(self, key, state: DAGState, action, params: DAGParams):
        action = jnp.asarray(action, jnp.int32)
        decision = ~state.forwarding  # a capped forward continues first; the action is then not used
        valid = self.action_valid(state, params, action) & decision
        state = self._apply(state, params, action, valid)
        state = state.replace(invalid=state.invalid + (decision & ~valid))
        events_before = state.events
        state, truncated, reward = self._advance(state, params)
        terminated = state.n_finished >= state.n_jobs
        info = {"invalid": decision & ~valid, "events": state.events - events_before, "decision": decision}
        return self.observe(state, params), state, reward, terminated, truncated & ~terminated, info

    def action_valid(self, state: DAGState, params: DAGParams, action) -> jax.Array:
        """`bool`: the stage is runnable while an executor is idle, `p = a_limit + 1` exceeds the job's
        executors, and `r > 0` only for a stage never delayed and not started."""
        cfg = self.config
        a_stage, a_limit, r = action[0], action[1], action[2]
        in_range = (a_stage >= 0) & (a_stage < cfg.max_slots * cfg.max_stages)
        a = jnp.clip(a_stage, 0, cfg.max_slots * cfg.max_stages - 1)
        j, s = a // cfg.max_stages, a % cfg.max_stages
        runnable = self._runnable_at(state, j, s) & jnp.any(state.ex_state == 0)
        bound = self._bound_of(state, j)
        limit_ok = (a_limit >= bound) & (a_limit < cfg.n_executors)
        idle_ok = self._idle_ok(state.counts[j, s])
        r_ok = (r == 0) | ((r > 0) & (r <= cfg.idle_levels) & idle_ok)
        return in_range & runnable & limit_ok & r_ok

    def _idle_ok(self, counts: jax.Array) -> jax.Array:
        """`bool[...]` of packed `counts` (any shape): never delayed, nothing dispatched or sent to the stage
        (touched iff either ever was), so an idle slot may be inserted before it."""
        return (counts & (self.layout.flag("delayed") | self.layout.flag("touched"))) == 0

    def _apply(self, state: DAGState, params: DAGParams, action, valid) -> DAGState:
        """The action, where `valid` (else nothing): delay the stage (r > 0) or dispatch executors to it
        (r = 0). Masked updates of the one `(j, s)` cell, not `lax.cond`: under `vmap` a cond computes both
        branches and selects over the whole state, which cost more than the action itself."""
        cfg = self.config
        a = jnp.clip(action[0], 0, cfg.max_slots * cfg.max_stages - 1)  # out of range only when not valid
        j, s = a // cfg.max_stages, a % cfg.max_stages
        p, r = action[1] + 1, action[2]
        delay, go = valid & (r > 0), valid & (r == 0)
        length = params.bank.n_tasks[state.slot_tmpl[j], s] * state.duration[j, s]
        idle = jnp.where(delay, jnp.maximum(_floor_mul_div(r, length, cfg.idle_levels), 1), 0)
        state, counted = self._dispatch(state, params, j, s, p, go)
        lay = self.layout
        flags = jnp.where(valid, lay.flag("selected"), 0) | jnp.where(delay, lay.flag("delayed"), 0)
        return state.replace(
            counts=state.counts.at[j, s].set(counted | flags),
            hold_until=state.hold_until.at[j, s].set(
                jnp.where(delay, state.t + idle, state.hold_until[j, s])
            ),
            n_selections=state.n_selections + valid,
            n_delayed=state.n_delayed + delay,
            idle_total=state.idle_total + idle.astype(jnp.float32) / 1000.0,
        )

    def _dispatch(self, state: DAGState, params: DAGParams, j, s, p, go) -> tuple[DAGState, jax.Array]:
        """Where `go`, send `min(idle, remaining, p − bound)` idle executors to stage (j, s): the job's own
        first, then the rest, each by index; the rest move when `moving_delay > 0`, the others start a
        task now. Returns the state with the executors updated and the cell's new counts word (`i32`, for
        the caller's one write of the cell)."""
        lay = self.layout
        cell = state.counts[j, s]
        left = lay.left(cell)
        jid = state.slot_job[j]
        idle = state.ex_state == 0
        own = idle & (state.ex_job == jid)
        cls2 = idle & ~own
        rank = jnp.where(own, jnp.cumsum(own) - 1, own.sum(dtype=jnp.int32) + jnp.cumsum(cls2) - 1)
        remaining = left - lay.moving(cell)
        n = jnp.minimum(jnp.minimum(idle.sum(dtype=jnp.int32), remaining), p - self._bound_of(state, j))
        chosen = idle & (rank < n) & go
        moves = chosen & cls2 & (params.moving_delay > 0)
        starts = chosen & ~moves
        fresh = ~((state.ex_job == jid) & state.ex_warm)
        ex_state = jnp.where(starts, 1, jnp.where(moves, 2, state.ex_state))
        ex_job = jnp.where(chosen, jid, state.ex_job)
        ex_slot = jnp.where(chosen, j, state.ex_slot)
        run_for = self._task_durations(
            state, params, j, s, left, rank, fresh, state.ex_stage == s, ex_job, ex_slot, ex_state
        )
        task_end = state.t + run_for
        n_starts, n_moves = starts.sum(dtype=jnp.int32), moves.sum(dtype=jnp.int32)
        counted = cell + lay.pack(left=-n_starts, running=n_starts, moving=n_moves)
        counted = counted | jnp.where(go, lay.flag("touched"), 0)
        return state.replace(
            ex_state=ex_state,
            ex_until=jnp.where(
                starts, task_end, jnp.where(moves, state.t + params.moving_delay, state.ex_until)
            ),
            ex_job=ex_job,
            ex_slot=ex_slot,
            ex_stage=jnp.where(chosen, s, state.ex_stage),
            ex_warm=jnp.where(starts, True, jnp.where(moves, False, state.ex_warm)),
        ), counted

    # ---- events ----------------------------------------------------------------------------------
    def _advance(self, state: DAGState, params: DAGParams):
        """Run events until a decision is due, every job is done, or `max_time` (truncated). Returns
        `(state, truncated, reward)`; the reward accrues −Δt · (jobs in the system) / scale per interval.

        Each iteration jumps to the next *event time that can matter* — an arrival, a move arrival, a timer
        end, an executor becoming idle, or a safe lower bound of the time a stage runs out of tasks — and
        first fast-forwards, in closed form, the task completions before it on stages that still have
        tasks to hand out: those completions only continue the stage (no trigger, no reward change), so
        the result equals processing them one by one (docs/dag.md), in O(k + J·S) instead of one
        iteration per task."""

        cap = self.config.max_events

        def waiting(st, trunc):
            return ~trunc & (st.n_finished < st.n_jobs) & ~self._decision_needed(st, params)

        def one_event_time(st, trunc, reward, go=True):
            """The next event time, where `go` (else nothing changes: every update is gated by it)."""
            t_next, cont, first_timer = self._next_event(st, params)
            hit_max = t_next >= params.max_time
            t_new = jnp.where(go, jnp.minimum(t_next, params.max_time), st.t)
            n_sys = (st.next_arr - st.n_finished).astype(jnp.float32)
            dt = (t_new - st.t).astype(jnp.float32) / 1000.0
            reward = reward - dt * n_sys / params.reward_scale
            st = self._fast_forward(st, params, cont & go, t_new)
            st = st.replace(t=t_new, events=st.events + go)
            # Not a `lax.cond`: under `vmap` it would compute both sides and select over the whole state.
            st = self._process(st, params, first_timer <= t_new, active=go & ~hit_max)
            return st, trunc | (go & hit_max), reward

        trunc, reward = jnp.bool_(False), jnp.float32(0.0)
        if cap is not None and cap <= _MAX_UNROLLED_EVENTS:
            # A small fixed count of gated event times, unrolled: under `vmap` a `while_loop` selects its
            # whole carry (the state) after every iteration, which cost more than the gating.
            for _ in range(cap):
                state, trunc, reward = one_event_time(state, trunc, reward, go=waiting(state, trunc))
        else:

            def pending(carry):
                st, trunc, _, i = carry
                return waiting(st, trunc) & (True if cap is None else i < cap)

            def body(carry):
                return (*one_event_time(*carry[:3]), carry[3] + 1)

            state, trunc, reward, _ = jax.lax.while_loop(pending, body, (state, trunc, reward, jnp.int32(0)))
        return state.replace(ret=state.ret + reward, forwarding=waiting(state, trunc)), trunc, reward

    def _stage_bounds(self, state: DAGState, duration, k_slot, k_stage, ck, left, run, live, cont):
        """`(stage_next, per_stage_min i32[J, S], ending bool[k])`: the earliest safe bound over the stages
        with tasks left (the bounds of `_next_event`'s docstring); the scatter-min cells (a stage's first
        move arrival M >= 0, an exhausted stage's finish negated, INF_MS for neither); the running executors
        whose stage has no task left."""
        cfg = self.config
        lay = self.layout
        # A stage's bounds are minima over its executors with R, e and d the stage's: no per-stage min but
        # for its first move arrival. e = running + moving: read back, not counted by a scatter. k integer
        # divisions, not J·S (a division does not vectorise on a CPU). (Bisecting the instant count instead
        # saved events but cost more than it saved: 34k against 44k decisions/s at batch 1,024 on the EPYC.)
        n_run = lay.running(ck)
        n_on = n_run + lay.moving(ck)
        d = jnp.maximum(duration[k_slot, k_stage], 1)

        def after_rounds(u, n):  # u + (R // n)·d, saturating; R // n >= 0 (truncation floors)
            jump = jax.lax.div(left, jnp.maximum(n, 1)) * d  # <= left · duration = this stage's work
            return u + jnp.minimum(jump, INF_MS - u)

        # Two safe bounds per stage, the later one holds: min over its executors of until + (R // e)·d,
        # and — movers take a first task only at their arrival, so before the stage's first arrival M only
        # its running ones do — min(min over the running of until + (R // running)·d, M). Both are
        # non-decreasing in a running executor's `until` once M is known, so the larger of the two per
        # running executor, minimised over them, is the stage's bound: one scatter (M), not one per bound.
        # A mover bounds by the first only where its stage has no running executor.
        #   One scatter-min serves M and, below, each exhausted stage's finish (the max `until` of its
        # executors, stored negated): a stage has tasks left (`cont` executors) or none (`ending` ones),
        # never both, so the two never share a cell. Cells: M >= 0, −finish < 0, INF_MS for neither.
        u = state.ex_until
        ending = run & ~cont
        per_stage = jnp.full(duration.shape, INF_MS, jnp.int32)
        if cfg.task_waves:  # no closed form, no `cont` executor: only the finishes (unused with waves)
            per_stage_min = per_stage
        else:
            c_slot = jnp.where((live & cont) | ending, k_slot, cfg.max_slots)  # others dropped
            per_stage_min = per_stage.at[c_slot, k_stage].min(jnp.where(ending, -u, u), mode="drop")
        m = per_stage_min[k_slot, k_stage]  # >= 0 for a `cont` executor's stage
        over_all, before_moves = after_rounds(jnp.minimum(u, m), n_on), jnp.minimum(after_rounds(u, n_run), m)
        by_running = jnp.maximum(over_all, before_moves)
        bound = jnp.where(run, by_running, jnp.where(n_run > 0, INF_MS, after_rounds(u, n_on)))
        stage_next = jnp.min(jnp.where(cont, bound, INF_MS))
        return stage_next, per_stage_min, ending

    def _next_event(self, state: DAGState, params: DAGParams):
        """`(t_next, cont, first_timer)`: the next event time that can matter; `bool[k]` the executors whose
        stage still has tasks to hand out — running ones and live moving ones — whose task starts before
        `t_next` only continue the stage (a move's arrival that starts a task is not a trigger either); and
        the first running timer's end (INF_MS if none), an event time or not.

        An executor's instants (when it takes a task) are `until_i + m·d` when running; when moving,
        its arrival `until_i`, then `until_i + w + m·d` (m >= 1; its first task carries the warm-up w).
        Consecutive instants are at least d apart, so for a stage with `R` tasks left and `e` executors
        running or moving to it, fewer than R + 1 instants fall before `min until + (R // e)·d`: the first
        executor to find no task (at the (R+1)-th instant) does not come earlier, a safe bound to jump to;
        and before the stage's first move arrival M only its running executors take tasks, so with R and
        the running ones' count the same holds up to M: the later of the two bounds is safe."""
        cfg = self.config
        b = params.bank
        n = b.arrival.shape[1]
        duration, _, _ = self._stage_arrays(state, params)
        k_slot, k_stage = state.ex_slot, jnp.maximum(state.ex_stage, 0)
        lay = self.layout
        ck = state.counts[k_slot, k_stage]  # [k] its stage's counts
        left = lay.left(ck)  # tasks of its stage not started
        run = state.ex_state == 1
        in_move = state.ex_state == 2
        live = in_move & (state.slot_job[k_slot] == state.ex_job)  # moving to a job still in the system
        # with task waves a continuation's duration is drawn at its start: no closed form, every completion
        # and arrival is an event time
        cont = (run | live) & (left > 0) & (not cfg.task_waves)
        stage_next, per_stage_min, ending = self._stage_bounds(
            state, duration, k_slot, k_stage, ck, left, run, live, cont
        )
        # An executor on a stage with no task left idles at its `until` (a trigger). If no stage is open,
        # that cannot lead to a decision, so only the stage's finish (its last executor) matters and the
        # earlier idlings are applied in bulk at the next event time (`_process` takes `until <= t`).
        each = jnp.min(jnp.where(ending, state.ex_until, INF_MS))
        if cfg.task_waves:
            idling = each
        else:
            last = jnp.min(jnp.where(per_stage_min < 0, -per_stage_min, INF_MS))  # earliest stage finish
            any_open = jnp.any(self._open(state, params))
            idling = jnp.where(any_open, each, last)
        # arrivals that find no task (or no job): they go idle, a trigger; with no stage open, like the
        # idlings above, in bulk at the next event time (a mover's fate is fixed: its stage has no task left,
        # or its job left)
        moves = jnp.min(jnp.where(in_move & ~cont, state.ex_until, INF_MS))
        bulk_moves = moves
        if not cfg.task_waves:
            moves = jnp.where(any_open, moves, INF_MS)
        arrival = jnp.where(
            state.next_arr < state.n_jobs, b.arrival[state.ep, jnp.minimum(state.next_arr, n - 1)], INF_MS
        )
        first_timer = timer = jnp.min(jnp.where(state.hold_until > state.t, state.hold_until, INF_MS))
        if not cfg.task_waves:
            # A timer's end is a trigger (selections clear) and opens its stage, but no decision can follow
            # while every executor is busy: the next executor to idle is an event (its trigger clears the
            # selections the same), and the stage is open by then. It must stay an event only where some
            # executor idles now, or where the idlings are bulked to `last` because no stage is open yet:
            # with the timer's stage open, the first of them (`each`) is a decision.
            # (At truncation the state is final: the timer's trigger stays an event if nothing comes before.)
            others = jnp.minimum(arrival, jnp.minimum(stage_next, jnp.minimum(idling, moves)))
            bulked = jnp.minimum(each, bulk_moves)  # idlings held for the next event while none is open
            busy_through = ~jnp.any(state.ex_state == 0) & (any_open | (bulked == INF_MS))
            timer = jnp.where(busy_through & (others < params.max_time), INF_MS, timer)
        t_next = jnp.minimum(jnp.minimum(arrival, timer), jnp.minimum(stage_next, jnp.minimum(idling, moves)))
        return t_next, cont, first_timer

    def _fast_forward(self, state: DAGState, params: DAGParams, cont, t_next) -> DAGState:
        """Apply every instant strictly before `t_next` of the `cont` executors (`_next_event`): each starts
        a task of its stage there. A running executor completes c_i = ⌈(t_next − until_i) / d⌉ tasks; a
        moving one arrives (its first task fresh: d + warm-up w) and then completes c_i − 1, with
        c_i = max(1, ⌈(t_next − until_i − w) / d⌉), ending up running, warm."""
        cfg = self.config
        duration, _, _ = self._stage_arrays(state, params)
        k_stage = jnp.maximum(state.ex_stage, 0)
        d = jnp.maximum(duration[state.ex_slot, k_stage], 1)
        mover = state.ex_state == 2  # within `cont`: a live one
        w = jnp.where(mover, params.warmup_delay, 0)
        ahead = cont & (state.ex_until < t_next)
        c = jnp.where(ahead, jnp.maximum(-((state.ex_until + w - t_next) // d), 1), 0)
        started = ahead & mover
        c_slot = jnp.where(ahead, state.ex_slot, cfg.max_slots)
        # c tasks started, of which the arrivals' first: left −c, running +arrived, moving −arrived
        arrived = started.astype(jnp.int32)
        step = self.layout.pack(left=-c, running=arrived, moving=-arrived)
        return state.replace(
            ex_state=jnp.where(started, 1, state.ex_state),
            ex_until=state.ex_until + c * d + jnp.where(started, w, 0),
            ex_warm=state.ex_warm | started,
            counts=state.counts.at[c_slot, k_stage].add(step, mode="drop"),
        )

    def _process(self, state: DAGState, params: DAGParams, timers_ended, active=True) -> DAGState:
        """Every event at `state.t`, in docs/dag.md's order: completions (with continuation), move
        arrivals, stage/job completion, arrivals and admission, then the trigger that clears selections —
        also where `timers_ended` (bool: some timer ended since the last event time; `_next_event` skips a
        timer's end while every executor is busy, its trigger due by the next event, before any decision).
        Where `active` is False (the episode was truncated at `state.t`) nothing happens: every event mask
        is gated by it, which is cheaper under `vmap` than a `lax.cond`."""
        cfg = self.config
        t = state.t
        _, _, valid = self._stage_arrays(state, params)
        k_slot, k_stage = state.ex_slot, jnp.maximum(state.ex_stage, 0)
        oob = cfg.max_slots  # out-of-range slot: scatters drop it
        lay = self.layout

        # 1. task completions (those before t only on stages with no task left: see `_next_event`) and
        # 2. move arrivals (to a job still in the system). A stage's tasks not started go to its completing
        # executors (they continue), then to its arriving ones (they start, fresh), each by index.
        comp = (state.ex_state == 1) & (state.ex_until <= t) & active
        arr = (state.ex_state == 2) & (state.ex_until <= t) & active  # earlier ones: bulked (`_next_event`)
        alive = arr & (state.slot_job[k_slot] == state.ex_job)
        left = lay.left(state.counts[k_slot, k_stage])
        rank = _rank_within(comp | alive, k_slot, k_stage, alive, (cfg.max_slots, cfg.max_stages))
        gets = (comp | alive) & (rank < left)
        cont, start = gets & comp, gets & alive
        # one scatter of packed increments: a task taken (left −1, running +1), a completion (running −1), an
        # arrival (moving −1)
        g, c_, a_ = (x.astype(jnp.int32) for x in (gets, comp, alive))
        step = lay.pack(left=-g, running=g - c_, moving=-a_)
        counts = state.counts.at[jnp.where(comp | alive, k_slot, oob), k_stage].add(step, mode="drop")
        ex_state = jnp.where(start, 1, jnp.where(arr | comp & ~cont, 0, state.ex_state))
        run_for = self._task_durations(
            state, params, k_slot, k_stage, left, rank, start, cont, state.ex_job, k_slot, ex_state
        )
        task_end = t + run_for
        ex_until = jnp.where(gets, task_end, jnp.where(arr | comp, INF_MS, state.ex_until))
        went_idle = (comp & ~cont) | (arr & ~start)
        # a stage is done when all its tasks started and none runs; `fin_bits` has those done before
        all_done = (lay.left(counts) == 0) & (lay.running(counts) == 0)
        newly_done = valid & all_done & ~self._bits(state.fin_bits)
        fin_bits = state.fin_bits | self._stage_bits(newly_done)

        # 3. finished jobs leave their slots
        finished_job = (state.slot_job >= 0) & (fin_bits == state.stage_bits) & active
        jct = t - state.slot_arrival
        n_out = finished_job.sum(dtype=jnp.int32)
        state = state.replace(
            ex_state=ex_state,
            ex_until=ex_until,
            ex_warm=jnp.where(start, True, state.ex_warm),
            jct=state.jct.at[jnp.where(finished_job, state.slot_job, state.jct.shape[0])].set(
                jct, mode="drop"
            ),
            n_finished=state.n_finished + n_out,
            sum_jct=state.sum_jct + jnp.sum(jnp.where(finished_job, jct, 0).astype(jnp.float32)) / 1000.0,
            last_finish=jnp.where(n_out > 0, t, state.last_finish),
            slot_job=jnp.where(finished_job, -1, state.slot_job),
            # a freed slot's per-stage arrays keep their stale values, masked by `stage_bits` = 0 wherever
            # read, until an admission overwrites them (`_arrive`): one pass per array, not two
            counts=counts,
            stage_bits=jnp.where(finished_job, 0, state.stage_bits),
            fin_bits=jnp.where(finished_job, 0, fin_bits),
        )
        # 4. arrivals and admission; 6. a trigger clears every selection
        admitted_before = state.next_admit
        state = self._arrive(state, params, active)
        admitted = state.next_admit > admitted_before
        trigger = went_idle.any() | newly_done.any() | (timers_ended & active) | admitted
        return state.replace(counts=jnp.where(trigger, state.counts & ~lay.flag("selected"), state.counts))

    def _arrive(self, state: DAGState, params: DAGParams, active=True) -> DAGState:
        """Jobs due by `state.t` arrive; waiting jobs take free slots in arrival order, lowest slot first
        (nothing where `active` is False)."""
        b = params.bank
        n = b.arrival.shape[1]
        next_arr = first_after(b.arrival[state.ep], state.next_arr, state.n_jobs, state.t)
        next_arr = jnp.where(active, next_arr, state.next_arr)
        free = state.slot_job < 0
        order = jnp.cumsum(free) - 1  # rank of each free slot
        admit = jnp.minimum(next_arr - state.next_admit, free.sum(dtype=jnp.int32))
        take = free & (order < admit)
        job = state.next_admit + order
        jobc = jnp.minimum(job, n - 1)
        waited = take & (b.arrival[state.ep, jobc] < state.t)
        tmpl = jnp.where(take, b.template[state.ep, jobc], state.slot_tmpl)
        put = take[:, None]
        all_bits = jnp.left_shift(1, b.n_stages[tmpl]) - 1
        return state.replace(
            counts=jnp.where(put, b.n_tasks[tmpl], state.counts),  # every task left, nothing else
            hold_until=jnp.where(put, 0, state.hold_until),
            duration=jnp.where(put, b.duration[tmpl], state.duration),
            parents=jnp.where(put, b.parents[tmpl], state.parents),
            stage_bits=jnp.where(take, all_bits, state.stage_bits),
            fin_bits=jnp.where(take, 0, state.fin_bits),
            next_arr=next_arr,
            next_admit=state.next_admit + admit,
            slot_job=jnp.where(take, job, state.slot_job),
            slot_tmpl=tmpl,
            slot_arrival=jnp.where(take, b.arrival[state.ep, jobc], state.slot_arrival),
            n_waited=state.n_waited + waited.sum(dtype=jnp.int32),
        )

    # ---- what a policy sees ----------------------------------------------------------------------
    def observe(self, state: DAGState, params: DAGParams) -> DAGObs:
        """Raw counts, times and masks (`DAGObs`): no float transforms here — the network derives its
        inputs from these (`nn.idle_dag.network_inputs`), so heuristics and auto-reset do not pay for
        them (the logs were a third of a batched step)."""
        b = params.bank
        n_idle = (state.ex_state == 0).sum(dtype=jnp.int32)
        runnable = self._runnable(state, params) & (n_idle > 0)
        bound = self._bound(state)
        job_valid = state.slot_job >= 0
        tm = state.slot_tmpl
        return DAGObs(
            counts=state.counts,
            hold_until=state.hold_until,
            stage_duration=state.duration,
            stage_parents=state.parents,
            stage_height=b.height[tm],
            stage_bottom=b.bottom[tm],
            stage_bits=state.stage_bits,
            job_valid=job_valid,
            job_order=state.slot_job,
            arrival=state.slot_arrival,
            bound=bound,
            work=b.work[tm] * job_valid,
            crit=b.crit[tm] * job_valid,
            width=b.width[tm] * job_valid,
            stage_mask=runnable.reshape(-1),
            idle_ok=(runnable & self._idle_ok(state.counts)).reshape(-1),
            limit_min=bound + 1,
            n_idle=n_idle,
            n_waiting=state.next_arr - state.next_admit,
            t=state.t,
            n_executors=self.config.n_executors,
        )

    def action_mask(self, state: DAGState, params: DAGParams) -> jax.Array:
        """`bool[J·S]`: the runnable stages (the limit and idle masks are `limit_min`, `idle_ok`)."""
        return self._runnable(state, params).reshape(-1) & jnp.any(state.ex_state == 0)

    def observation_space(self, params: DAGParams) -> DAGObs:
        """A `DAGObs` of spaces, one per field with its shape, dtype and bounds (a pytree of spaces, as the
        GPU cloud's action space): `jax.tree.map(lambda sp, x: sp.contains(x), space, obs)` checks one."""
        cfg = self.config
        j, s, k = cfg.max_slots, cfg.max_stages, cfg.n_executors
        big, i32, f32, b = 2**31 - 1, jnp.int32, jnp.float32, jnp.bool_

        def box(low, shape, dtype=i32, high=big):
            return Box(low, high, shape, dtype)

        return DAGObs(
            counts=box(0, (j, s)),  # packed counters: 31 bits, never negative (StageCounts)
            hold_until=box(0, (j, s)),
            stage_duration=box(0, (j, s)),
            stage_parents=box(0, (j, s)),  # bitmask over < 31 stages
            stage_height=box(0, (j, s)),
            stage_bottom=box(0.0, (j, s), f32, jnp.inf),
            stage_bits=box(0, (j,)),
            job_valid=box(0, (j,), b, 1),
            job_order=box(-1, (j,)),
            arrival=box(0, (j,)),
            bound=box(0, (j,), high=k),
            work=box(0.0, (j,), f32, jnp.inf),
            crit=box(0.0, (j,), f32, jnp.inf),
            width=box(0.0, (j,), f32, jnp.inf),
            stage_mask=box(0, (j * s,), b, 1),
            idle_ok=box(0, (j * s,), b, 1),
            limit_min=box(1, (j,), high=k + 1),
            n_idle=box(0, (), high=k),
            n_waiting=box(0, ()),
            t=box(0, ()),
            n_executors=k,
        )

    def action_space(self, params: DAGParams) -> MultiDiscrete:
        cfg = self.config
        return MultiDiscrete((cfg.max_slots * cfg.max_stages, cfg.n_executors, cfg.idle_levels + 1))

    def metrics(self, state: DAGState, params: DAGParams) -> dict[str, jax.Array]:
        """The paper's metrics over the episode so far (seconds)."""
        f = state.n_finished.astype(jnp.float32)
        sel = state.n_selections.astype(jnp.float32)
        dly = state.n_delayed.astype(jnp.float32)
        first = params.bank.arrival[state.ep, 0]
        return {
            "avg_jct": jnp.where(f > 0, state.sum_jct / jnp.maximum(f, 1.0), 0.0),
            "makespan": jnp.where(f > 0, (state.last_finish - first).astype(jnp.float32) / 1000.0, 0.0),
            "n_finished": state.n_finished,
            "unfinished": state.next_arr - state.n_finished,
            "n_selections": state.n_selections,
            "n_delayed": state.n_delayed,
            "idle_total": state.idle_total,
            "idle_per_selection": jnp.where(sel > 0, state.idle_total / jnp.maximum(sel, 1.0), 0.0),
            "idle_per_delayed": jnp.where(dly > 0, state.idle_total / jnp.maximum(dly, 1.0), 0.0),
            "invalid": state.invalid,
            "waited_for_slot": state.n_waited,
            "events": state.events,
        }
