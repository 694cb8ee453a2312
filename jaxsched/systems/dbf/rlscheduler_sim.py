"""The jitted event loop of the RLScheduler-compatible heuristic table: one sequence of one policy as a
`lax.while_loop`, to be `vmap`-ed over (start, policy) lanes (`rlscheduler_table.simulate_lanes`). The
model it reproduces, job for job, is described in `rlscheduler_table`'s docstring."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_I32 = jnp.int32
NEVER = int(np.iinfo(np.int32).max)


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
    never = jnp.asarray(NEVER, _I32)
    zero, one = jnp.asarray(0, _I32), jnp.asarray(1, _I32)

    init = dict(
        now=submit[0],
        nxt=one,  # jobs [0, nxt) have arrived
        n_started=zero,
        c=jnp.asarray(-1, _I32),  # committed choice
        nxt_c=zero,  # arrivals at the time of the choice (the last score sort)
        ckey=jnp.full((L,), big),  # scores at the time of the choice
        est=zero,
        est_ok=jnp.asarray(False),
        free=jnp.asarray(total_nodes, _I32),
        start=jnp.full((L,), -1, _I32),
        order=jnp.full((L,), -1, _I32),
        t_req=jnp.full((R,), never),
        t_act=jnp.full((R,), never),
        t_rank=jnp.full((R,), never),
        t_nodes=jnp.zeros((R,), _I32),
        t_len=zero,
        it=zero,
        bad=jnp.asarray(False),
    )
    max_iters = 4 * L + 16  # L starts + (L - 1) arrivals + <= L releases

    def cond(s):
        return (s["n_started"] < L) & (s["it"] < max_iters) & ~s["bad"]

    def body(s):
        now, free = s["now"], s["free"]
        queued = (idx < s["nxt"]) & (s["start"] < 0)
        # Choose when nothing is committed and the queue is not empty.
        choose = (s["c"] < 0) & jnp.any(queued)
        key = key_fn(now)
        best = jnp.argmin(jnp.where(queued, key, big)).astype(_I32)  # first minimum: lower index on ties
        c = jnp.where(choose, best, s["c"])
        ckey = jnp.where(choose, key, s["ckey"])
        nxt_c = jnp.where(choose, s["nxt"], s["nxt_c"])
        est_ok = s["est_ok"] & ~choose
        has_c = c >= 0
        cc = jnp.maximum(c, 0)
        fit_c = has_c & (nodes[cc] <= free)
        blocked = has_c & ~fit_c
        live = slots < s["t_len"]
        t_rank, est = s["t_rank"], s["est"]

        if backfill:
            # Earliest start, once per committed choice: RLScheduler sorts running_jobs by requested end
            # (which also re-orders its list: ranks become table positions) and walks it adding nodes.
            do_est = blocked & ~est_ok
            cum = free + jnp.cumsum(jnp.where(live, s["t_nodes"], 0), dtype=_I32)
            hit = live & (cum >= nodes[cc])
            last = jnp.maximum(s["t_len"] - 1, 0)
            est_new = jnp.where(
                jnp.any(hit), s["t_req"][jnp.argmax(hit)], jnp.where(s["t_len"] > 0, s["t_req"][last], now)
            )
            est = jnp.where(do_est, est_new, est)
            t_rank = jnp.where(do_est & live, slots, t_rank)
            est_ok = est_ok | do_est
            # One back-fill start per iteration: the first in FCFS list order that fits and ends in time.
            elig = blocked & queued & (nodes <= free) & (now + req < est)
            s_min = jnp.min(jnp.where(elig, submit, never))
            group = elig & (submit == s_min)
            # Equal submit times keep the order of the last score sort; later arrivals come after.
            k2 = jnp.where(group & (idx < nxt_c), ckey, big)
            group = group & (k2 == jnp.min(k2))
            bf = jnp.any(elig)
            j_bf = jnp.argmax(group).astype(_I32)
        else:
            bf = jnp.asarray(False)
            j_bf = zero

        # --- start c (fits) or a back-fill job -----------------------------------------------------------
        do_start = fit_c | bf
        j = jnp.where(fit_c, cc, j_bf)
        start = s["start"].at[j].set(jnp.where(do_start, now, s["start"][j]))
        order = s["order"].at[j].set(jnp.where(do_start, s["n_started"], s["order"][j]))
        new_req = now + req[j]
        pos = jnp.sum(live & (s["t_req"] <= new_req), dtype=_I32)  # after equal requested ends (rank is max)
        ins = do_start

        def insert(x, v):
            shifted = jnp.concatenate([x[:1], x[:-1]])
            x = jnp.where(ins & (slots > pos), shifted, x)
            return jnp.where(ins & (slots == pos), jnp.asarray(v, x.dtype), x)

        t_req = insert(s["t_req"], new_req)
        t_act = insert(s["t_act"], now + run[j])
        t_rank = insert(t_rank, s["n_started"])
        t_nodes = insert(s["t_nodes"], nodes[j])
        overflow = ins & (s["t_len"] >= R)
        t_len = s["t_len"] + ins.astype(_I32)
        free = free - jnp.where(do_start, nodes[j], 0)
        n_started = s["n_started"] + do_start.astype(_I32)
        c = jnp.where(fit_c, -1, c)

        # --- otherwise one event: the next arrival if due by the next completion, else one release -------
        do_event = ~do_start
        min_act = jnp.min(jnp.where(live, t_act, never))
        tie = live & (t_act == min_act)
        slot = jnp.argmin(jnp.where(tie, t_rank, never)).astype(_I32)
        nx = jnp.minimum(s["nxt"], L - 1)
        arrival_due = (s["nxt"] < L) & (submit[nx] <= min_act)
        arrive = do_event & arrival_due
        release = do_event & ~arrival_due & (s["t_len"] > 0)
        stuck = do_event & ~arrival_due & (s["t_len"] == 0)
        now = jnp.where(
            arrive, jnp.maximum(now, submit[nx]), jnp.where(release, jnp.maximum(now, min_act), now)
        )
        nxt = s["nxt"] + arrive.astype(_I32)
        free = free + jnp.where(release, t_nodes[slot], 0)

        def remove(x, fill):
            shifted = jnp.concatenate([x[1:], jnp.full((1,), fill, x.dtype)])
            return jnp.where(release & (slots >= slot), shifted, x)

        t_req = remove(t_req, NEVER)
        t_act = remove(t_act, NEVER)
        t_rank = remove(t_rank, NEVER)
        t_nodes = remove(t_nodes, 0)
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
def run_dynamic(
    submit, run, req, nodes, req_f, procs_f, uni_denom, kind, total_nodes, *, backfill, capacity
):
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
