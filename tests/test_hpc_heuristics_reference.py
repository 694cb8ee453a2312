"""Every HPC heuristic equals a plain-Python version of it, job for job, in a closed loop.

The JAX side: `policies.hpc.make_priority_policy` drives `HPCEnv.step_env` — one compiled program for
every (workload, heuristic) pair (`vmap` over both, `lax.switch` over the heuristics, `lax.scan` over the
decisions). The reference side: `ref_action` below, written from the definitions (the score table of
`policies/scores.py`'s docstring and EASY as in `policies/hpc.py`'s), reads `RefHPC`'s queue and running
jobs — not the JAX observation — and drives the float64 reference simulator. Both must start every job at
the same time.

EASY, as these policies define it (RLScheduler's, Zhang et al. SC'20):
  * the best window job by score (ties: earlier submit, then lower slot) starts if it fits;
  * otherwise its *reservation* ("shadow") is the first time enough cores are free if every running job
    frees its cores at its requested end (a job that has overrun its request: one second from now);
  * a window job that fits now and whose `now + requested time` is strictly before the shadow is started
    instead, earliest submit first (then lower slot); else time moves on.

The random workloads are small integers on purpose: many jobs end exactly at a reservation
(`now + req == shadow`, the `<` boundary), blocked jobs need part of the machine (the reservation counts
only their cores), some jobs overrun their request and some end early. The test asserts that each of these
cases occurs often enough to matter.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.hpc import RefHPC

from jaxsched.envs.hpc import HPCConfig, HPCEnv
from jaxsched.policies.hpc import make_priority_policy
from jaxsched.policies.scores import SCORES
from jaxsched.workloads.base import make_workload

N_CORES = 8
JOBS = 16  # per workload
WORKLOADS = 120
MAX_DECISIONS = 160  # > JOBS placements + JOBS arrivals + JOBS releases
SHIFT = 10_000  # s between workloads in the stacked bank (> any workload's span)
CONFIG = HPCConfig(n_cores=N_CORES, window_head=JOBS, window_tail=0, queue_capacity=JOBS)
HEURISTICS = [(name, backfill) for name in SCORES for backfill in (False, True)]


# ---- the plain-Python heuristics ---------------------------------------------------------------------
def ref_score(name: str, job: dict, t: int) -> float:
    """The score table of `policies/scores.py` (lower runs first), in float64 from the job's fields."""
    s, r, n, w = job["submit"], job["req_time"], job["cores"], t - job["submit"]
    if name == "fcfs":
        return s
    if name == "lcfs":
        return -s
    if name == "sjf":
        return r
    if name == "smallest":
        return n
    if name == "f1":  # Carastan-Santos & de Camargo; r, s <= 0 read as 0.1
        return math.log10(r if r > 0 else 0.1) * n + 870.0 * math.log10(s if s > 0 else 0.1)
    if name == "wfp3":
        return -((w / r) ** 3) * n
    if name == "uni":  # UNICEP: -w / (log2(n)·r), log2(1) = 0 guarded
        # RLScheduler adds 1e-15 to w; the float32 policies keep it only where w = 0, so an exact tie
        # of w / (log2(n)·r) between waiting jobs goes to the earlier submit, as every other tie does.
        return -(w if w > 0 else 1e-15) / max(math.log2(n) * r, 1e-15)
    raise ValueError(name)


def reservation(ref: RefHPC, need: int) -> int:
    """EASY's shadow time for a job of `need` cores: walk the running jobs by requested end."""
    t = ref.t
    free = len(ref.free_cores())
    ends = sorted((max(r["req_end"], t + 1), len(r["cores"])) for r in ref.running if r["end"] > t)
    for end, n in ends:
        free += n
        if free >= need:
            return end
    raise AssertionError("a job that fits the machine always gets a reservation")


def ref_action(ref: RefHPC, name: str, backfill: bool, seen: dict) -> int:
    """The heuristic's decision on the reference's state; `seen` flags the EASY cases met."""
    t, fwd = ref.t, ref.m
    free = len(ref.free_cores())
    window = [(slot, ref.jobs[ref.queue[p]]) for slot, p in enumerate(ref.window()) if p is not None]
    if not window:
        return fwd
    slot, best = min(window, key=lambda sj: (ref_score(name, sj[1], t), sj[1]["submit"], sj[0]))
    if best["cores"] <= free:
        return slot
    if not backfill:
        return fwd
    shadow = reservation(ref, best["cores"])
    fits = [(job["submit"], s, job["req_time"]) for s, job in window if job["cores"] <= free]
    fill = [(sub, s) for sub, s, req in fits if t + req < shadow]
    seen["partial"] |= best["cores"] < N_CORES
    seen["at_shadow"] |= any(t + req == shadow for *_, req in fits)
    seen["filled"] |= bool(fill)
    return min(fill)[1] if fill else fwd


def run_reference(jobs: dict, name: str, backfill: bool, seen: dict) -> dict[int, int]:
    """Start time per job (index within the workload) of the reference under the plain-Python heuristic."""
    ref = RefHPC(N_CORES, JOBS, 0, JOBS, jobs, JOBS, 10**6)
    ref.reset(0)
    for _ in range(MAX_DECISIONS):
        *_, terminated, truncated = ref.step(ref_action(ref, name, backfill, seen))
        if terminated or truncated:
            break
    assert terminated, "the reference episode did not end"
    return ref.starts


# ---- the JAX side: one program for every workload and heuristic ------------------------------------------
def random_workload(rng: np.random.Generator) -> dict:
    """Small integers with many ties; requests sometimes shorter than the run (overrun), often longer."""
    submit = np.cumsum(rng.choice([0, 0, 1, 1, 2, 3, 5], JOBS))
    run = rng.choice([1, 2, 3, 4, 5, 6, 8, 10], JOBS)
    req = np.maximum(run + rng.choice([-2, -1, 0, 0, 0, 1, 2, 4], JOBS), 1)
    cores = rng.choice(np.arange(1, N_CORES + 1), JOBS, p=np.array([6, 5, 4, 3, 3, 2, 2, 3]) / 28)
    return {"submit": submit, "run": run, "req_time": req, "cores": cores}


@functools.cache
def workloads() -> list[dict]:
    """The random workloads, workload `w` shifted by `w·SHIFT` s so that they stack into one bank
    sorted by submit time (f1's score reads the absolute submit time, so both sides see the shift)."""
    rng = np.random.default_rng(20261124)
    out = [random_workload(rng) for _ in range(WORKLOADS)]
    return [{**jobs, "submit": jobs["submit"] + w * SHIFT} for w, jobs in enumerate(out)]


@functools.cache
def jax_start_times() -> np.ndarray:
    """`i32[H, W, JOBS]`: start time of each job under each heuristic (-1 never started, -2 the
    episode did not end)."""
    env = HPCEnv(CONFIG)
    jobs = workloads()
    cat = {k: np.concatenate([w[k] for w in jobs]) for k in jobs[0]}
    # One bank of W consecutive episodes: workload w is the window [w·JOBS, (w+1)·JOBS).
    bank = make_workload(cat["submit"], cat["run"], cat["cores"], req_time=cat["req_time"])
    starts = np.arange(WORKLOADS) * JOBS
    params = env.make_params(bank, starts=starts, ends=starts + JOBS, episode_jobs=JOBS)
    policies = [make_priority_policy(env, n, b) for n, b in HEURISTICS]

    def episode(h, w):
        p = params.replace(starts=params.starts[w][None], ends=params.ends[w][None])
        obs, state = env.reset(jax.random.key(0), p)

        def decide(carry, _):
            obs, state, done, start_at = carry
            action = jax.lax.switch(h, policies, None, obs, jax.random.key(0))
            _, _, job, *_ = env._window(state, p)
            placed_job = job[jnp.clip(action, 0, CONFIG.window_size - 1)] - w * JOBS
            obs2, state2, _, term, trunc, info = env.step_env(jax.random.key(0), state, action, p)
            record = ~done & info["placed"]
            start_at = jnp.where(record & (jnp.arange(JOBS) == placed_job), state.t, start_at)
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(done, b, a), new, old)
            return (keep(obs2, obs), keep(state2, state), done | term | trunc, start_at), None

        init = (obs, state, jnp.bool_(False), jnp.full((JOBS,), -1, jnp.int32))
        (_, _, done, start_at), _ = jax.lax.scan(decide, init, None, length=MAX_DECISIONS)
        return jnp.where(done, start_at, -2)

    hs = jnp.arange(len(HEURISTICS))
    ws = jnp.arange(WORKLOADS)
    run_all = jax.jit(jax.vmap(jax.vmap(episode, (None, 0)), (0, None)))
    return np.asarray(run_all(hs, ws))


@pytest.mark.parametrize("name, backfill", HEURISTICS, ids=[f"{n}{'_easy' * b}" for n, b in HEURISTICS])
def test_heuristic_equals_plain_python_job_for_job(name, backfill):
    starts = jax_start_times()[HEURISTICS.index((name, backfill))]
    assert (starts != -2).all(), "an env episode did not end within MAX_DECISIONS"
    cases = {"partial": 0, "at_shadow": 0, "filled": 0}  # workloads on which each case occurs
    mismatched = []
    for w, jobs in enumerate(workloads()):
        seen = dict.fromkeys(cases, False)
        want = run_reference(jobs, name, backfill, seen)
        cases = {k: n + seen[k] for k, n in cases.items()}
        got = {j: int(t) for j, t in enumerate(starts[w]) if t >= 0}
        if got != want:
            mismatched.append(w)
    assert not mismatched, f"{len(mismatched)}/{WORKLOADS} workloads differ, first {mismatched[:5]}"
    if backfill and name == "smallest":
        # The blocked job is the narrowest in the window, so nothing else fits: EASY never fills.
        assert cases["filled"] == 0, cases
    elif backfill:
        # The cases that separate a correct EASY from near misses occur on many workloads: a partial-
        # machine reservation (not the whole machine's), a candidate ending exactly at the shadow, a fill.
        assert cases["partial"] >= 100 and cases["at_shadow"] >= 10 and cases["filled"] >= 20, cases


def test_easy_changes_schedules():
    """Back-filling is not a no-op on these workloads: it moves start times under every score but
    `smallest` (whose blocked job is the narrowest, so nothing can be back-filled)."""
    times = jax_start_times()
    for name in SCORES:
        plain, easy = (times[HEURISTICS.index((name, b))] for b in (False, True))
        changed = sum(not np.array_equal(easy[w], plain[w]) for w in range(WORKLOADS))
        assert changed == 0 if name == "smallest" else changed >= 15, (name, changed)
