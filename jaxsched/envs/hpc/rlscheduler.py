"""The jitted event loop of the RLScheduler-compatible heuristic table: one sequence of one policy as a
`lax.while_loop`, to be `vmap`-ed over (start, policy) lanes (`policies.rlscheduler.simulate_lanes`). The
model it reproduces, job for job, is described in `policies.rlscheduler`'s docstring."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_I32 = jnp.int32
NEVER = int(np.iinfo(np.int32).max)


class _Seq(NamedTuple):
    """One sequence's job fields `i32[L]` and the constants the loop body compares against."""

    submit: jax.Array
    run: jax.Array
    req: jax.Array
    nodes: jax.Array
    idx: jax.Array  # i32[L]: job indices
    slots: jax.Array  # i32[R]: running-table positions
    big: jax.Array  # the key of a job that is not queued (the key's dtype)
    never: jax.Array  # i32 NEVER
    zero: jax.Array  # i32 0


def _initial_state(q: _Seq, total_nodes, L: int, R: int) -> dict:
    """The loop state at the first arrival: job 0 arrived, nothing started, an empty table of `R` slots."""
    zero, one = q.zero, jnp.asarray(1, _I32)
    return dict(
        now=q.submit[0],
        nxt=one,  # jobs [0, nxt) have arrived
        n_started=zero,
        c=jnp.asarray(-1, _I32),  # committed choice
        nxt_c=zero,  # arrivals at the time of the choice (the last score sort)
        ckey=jnp.full((L,), q.big),  # scores at the time of the choice
        est=zero,
        est_ok=jnp.asarray(False),
        free=jnp.asarray(total_nodes, _I32),
        start=jnp.full((L,), -1, _I32),
        order=jnp.full((L,), -1, _I32),
        t_req=jnp.full((R,), q.never),
        t_act=jnp.full((R,), q.never),
        t_rank=jnp.full((R,), q.never),
        t_nodes=jnp.zeros((R,), _I32),
        t_len=zero,
        it=zero,
        bad=jnp.asarray(False),
    )


def _commit_choice(s: dict, q: _Seq, queued, key_fn):
    """`(c, ckey [L], nxt_c, est_ok)`: the committed choice, its scores and arrivals, and whether its
    earliest start is known, after choosing the best queued job when nothing is committed."""
    # Choose when nothing is committed and the queue is not empty.
    choose = (s["c"] < 0) & jnp.any(queued)
    key = key_fn(s["now"])
    best = jnp.argmin(jnp.where(queued, key, q.big)).astype(_I32)  # first minimum: lower index on ties
    c = jnp.where(choose, best, s["c"])
    ckey = jnp.where(choose, key, s["ckey"])
    nxt_c = jnp.where(choose, s["nxt"], s["nxt_c"])
    est_ok = s["est_ok"] & ~choose
    return c, ckey, nxt_c, est_ok


def _earliest_start(s: dict, q: _Seq, free, cc, live, do_est, now):
    """`(est, t_rank [R])`: where `do_est`, the earliest start of the blocked choice `cc` and the table's
    ranks re-set to its positions; elsewhere the state's."""
    # RLScheduler sorts running_jobs by requested end (which also re-orders its list: ranks become table
    # positions) and walks it adding nodes.
    cum = free + jnp.cumsum(jnp.where(live, s["t_nodes"], 0), dtype=_I32)
    hit = live & (cum >= q.nodes[cc])
    last = jnp.maximum(s["t_len"] - 1, 0)
    est_new = jnp.where(
        jnp.any(hit), s["t_req"][jnp.argmax(hit)], jnp.where(s["t_len"] > 0, s["t_req"][last], now)
    )
    est = jnp.where(do_est, est_new, s["est"])
    t_rank = jnp.where(do_est & live, q.slots, s["t_rank"])
    return est, t_rank


def _backfill_job(q: _Seq, eligible, nxt_c, ckey):
    """`(any back-fill start, its job index)`: among the `eligible` jobs `bool[L]`, the first in FCFS list
    order."""
    s_min = jnp.min(jnp.where(eligible, q.submit, q.never))
    group = eligible & (q.submit == s_min)
    # Equal submit times keep the order of the last score sort; later arrivals come after.
    k2 = jnp.where(group & (q.idx < nxt_c), ckey, q.big)
    group = group & (k2 == jnp.min(k2))
    return jnp.any(eligible), jnp.argmax(group).astype(_I32)


def _insert(x, v, ins, pos, slots):
    """`x` `[R]` with `v` inserted at `pos` (later entries shifted one down) where `ins`."""
    shifted = jnp.concatenate([x[:1], x[:-1]])
    x = jnp.where(ins & (slots > pos), shifted, x)
    return jnp.where(ins & (slots == pos), jnp.asarray(v, x.dtype), x)


def _remove(x, fill, release, slot, slots):
    """`x` `[R]` with entry `slot` removed (later entries shifted one up, `fill` at the end) where
    `release`."""
    shifted = jnp.concatenate([x[1:], jnp.full((1,), fill, x.dtype)])
    return jnp.where(release & (slots >= slot), shifted, x)


def _start_job(s: dict, q: _Seq, j, do_start, now, t_rank, live):
    """`(start [L], order [L], (t_req, t_act, t_rank, t_nodes) [R])`: job `j` started at `now` and put in
    the table after the equal requested ends, where `do_start`."""
    start = s["start"].at[j].set(jnp.where(do_start, now, s["start"][j]))
    order = s["order"].at[j].set(jnp.where(do_start, s["n_started"], s["order"][j]))
    new_req = now + q.req[j]
    pos = jnp.sum(live & (s["t_req"] <= new_req), dtype=_I32)  # after equal requested ends (rank is max)
    ins = do_start
    t_req = _insert(s["t_req"], new_req, ins, pos, q.slots)
    t_act = _insert(s["t_act"], now + q.run[j], ins, pos, q.slots)
    t_rank = _insert(t_rank, s["n_started"], ins, pos, q.slots)
    t_nodes = _insert(s["t_nodes"], q.nodes[j], ins, pos, q.slots)
    return start, order, (t_req, t_act, t_rank, t_nodes)


def _next_event(s: dict, q: _Seq, do_event, live, t_act, t_rank, L: int):
    """`(arrive, release, stuck, slot, min_act, nx)` where `do_event`: the event is the arrival of job `nx`
    (due by the next completion `min_act`), else the release of table entry `slot` (the earliest actual
    end, lowest rank), else none is left (`stuck`)."""
    min_act = jnp.min(jnp.where(live, t_act, q.never))
    tie = live & (t_act == min_act)
    slot = jnp.argmin(jnp.where(tie, t_rank, q.never)).astype(_I32)
    nx = jnp.minimum(s["nxt"], L - 1)
    arrival_due = (s["nxt"] < L) & (q.submit[nx] <= min_act)
    arrive = do_event & arrival_due
    release = do_event & ~arrival_due & (s["t_len"] > 0)
    stuck = do_event & ~arrival_due & (s["t_len"] == 0)
    return arrive, release, stuck, slot, min_act, nx


def _step(s: dict, q: _Seq, key_fn, *, backfill: bool, L: int, R: int) -> dict:
    """The loop state after one iteration: one job started (the choice or a back-fill) or one event run."""
    now, free = s["now"], s["free"]
    queued = (q.idx < s["nxt"]) & (s["start"] < 0)
    c, ckey, nxt_c, est_ok = _commit_choice(s, q, queued, key_fn)
    has_c = c >= 0
    cc = jnp.maximum(c, 0)
    fit_c = has_c & (q.nodes[cc] <= free)
    blocked = has_c & ~fit_c
    live = q.slots < s["t_len"]
    t_rank, est = s["t_rank"], s["est"]

    if backfill:
        # Earliest start, once per committed choice.
        do_est = blocked & ~est_ok
        est, t_rank = _earliest_start(s, q, free, cc, live, do_est, now)
        est_ok = est_ok | do_est
        # One back-fill start per iteration: the first in FCFS list order that fits and ends in time.
        elig = blocked & queued & (q.nodes <= free) & (now + q.req < est)
        bf, j_bf = _backfill_job(q, elig, nxt_c, ckey)
    else:
        bf = jnp.asarray(False)
        j_bf = q.zero

    # --- start c (fits) or a back-fill job -----------------------------------------------------------
    do_start = fit_c | bf
    j = jnp.where(fit_c, cc, j_bf)
    start, order, (t_req, t_act, t_rank, t_nodes) = _start_job(s, q, j, do_start, now, t_rank, live)
    overflow = do_start & (s["t_len"] >= R)
    t_len = s["t_len"] + do_start.astype(_I32)
    free = free - jnp.where(do_start, q.nodes[j], 0)
    n_started = s["n_started"] + do_start.astype(_I32)
    c = jnp.where(fit_c, -1, c)

    # --- otherwise one event: the next arrival if due by the next completion, else one release -------
    arrive, release, stuck, slot, min_act, nx = _next_event(s, q, ~do_start, live, t_act, t_rank, L)
    now = jnp.where(
        arrive, jnp.maximum(now, q.submit[nx]), jnp.where(release, jnp.maximum(now, min_act), now)
    )
    nxt = s["nxt"] + arrive.astype(_I32)
    free = free + jnp.where(release, t_nodes[slot], 0)
    t_req = _remove(t_req, NEVER, release, slot, q.slots)
    t_act = _remove(t_act, NEVER, release, slot, q.slots)
    t_rank = _remove(t_rank, NEVER, release, slot, q.slots)
    t_nodes = _remove(t_nodes, 0, release, slot, q.slots)
    t_len = t_len - release.astype(_I32)

    return dict(
        now=now,
        nxt=nxt,
        n_started=n_started,
        c=c,
        nxt_c=nxt_c,
        ckey=ckey,
        est=est,
        est_ok=est_ok,
        free=free,
        start=start,
        order=order,
        t_req=t_req,
        t_act=t_act,
        t_rank=t_rank,
        t_nodes=t_nodes,
        t_len=t_len,
        it=s["it"] + 1,
        bad=s["bad"] | overflow | stuck,
    )


def _simulate_one(submit, run, req, nodes, total_nodes, key_fn, key_big, *, backfill: bool, capacity: int):
    """One sequence: `i32[L]` job fields, `total_nodes` scalar, `key_fn(now) -> key[L]` (lower first).

    Running jobs live in a table of `capacity` slots kept sorted by (requested end, list rank) -- the order
    the back-filling earliest-start scan reads -- with each job's actual end and `rank`, its place in
    RLScheduler's `running_jobs` list (start order, re-ranked by requested end when an earliest start is
    computed), which breaks ties among equal actual ends. A job holds >= 1 node, so `capacity = min(nodes,
    L)` never overflows (checked anyway). Each iteration either starts one job or runs one event.
    Returns `(start i32[L], order i32[L], now, ok)`.
    """
    L = submit.shape[0]
    R = capacity
    idx = jnp.arange(L, dtype=_I32)
    slots = jnp.arange(R, dtype=_I32)
    key0 = key_fn(submit[0])
    big = jnp.asarray(key_big, key0.dtype)
    q = _Seq(submit, run, req, nodes, idx, slots, big, jnp.asarray(NEVER, _I32), jnp.asarray(0, _I32))
    init = _initial_state(q, total_nodes, L, R)
    max_iters = 4 * L + 16  # L starts + (L - 1) arrivals + <= L releases

    def cond(s):
        return (s["n_started"] < L) & (s["it"] < max_iters) & ~s["bad"]

    body = partial(_step, q=q, key_fn=key_fn, backfill=backfill, L=L, R=R)
    out = lax.while_loop(cond, body, init)
    ok = (out["n_started"] == L) & ~out["bad"]
    return out["start"], out["order"], out["now"], ok


@partial(jax.jit, static_argnames=("backfill", "capacity"))
def run_static(submit, run, req, nodes, rank, total_nodes, *, backfill: bool, capacity: int):
    """Lanes `[B, L]` with static integer ranks (all policies but the `_real` ones)."""

    def one(submit, run, req, nodes, rank, total):
        return _simulate_one(
            submit, run, req, nodes, total, lambda now: rank, NEVER, backfill=backfill, capacity=capacity
        )

    return jax.vmap(one)(submit, run, req, nodes, rank, total_nodes)


@partial(jax.jit, static_argnames=("backfill", "capacity"))
def run_dynamic(submit, run, req, nodes, req_f, procs_f, uni_denom, kind, total_nodes, *, backfill, capacity):
    """Lanes `[B, L]` with clock-dependent float64 scores (`kind` 0: wfp3_real, 1: uni_real). Call under
    `jax.enable_x64(True)`."""

    def one(submit, run, req, nodes, req_f, procs_f, uni_denom, kind, total):
        submit_f = submit.astype(jnp.float64)

        def key_fn(now):
            w = now.astype(jnp.float64) - submit_f
            x = w / req_f
            wfp3 = -(x * x * x) * procs_f  # RLScheduler: -np.power(w / r, 3) * n
            uni = -(w + 1e-15) / uni_denom  # denominator log2(n + 1e-15) * r from the host (numpy)
            return jnp.where(kind == 0, wfp3, uni)

        return _simulate_one(
            submit, run, req, nodes, total, key_fn, np.inf, backfill=backfill, capacity=capacity
        )

    return jax.vmap(one)(submit, run, req, nodes, req_f, procs_f, uni_denom, kind, total_nodes)
