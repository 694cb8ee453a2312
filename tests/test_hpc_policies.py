"""Heuristic policies on the HPC env against schedules computed by hand.

Five jobs on a 4-core machine (submit s, run r = requested time, cores c):

    job   s    r   c
    J0    0   10   2
    J1    1   30   4   wide: needs the whole machine
    J2    2   20   2   long and narrow: fits at t=2, but would end (22) after J1's reservation (10)
    J3    3    2   2   short and narrow: 3 + 2 = 5 < 10, back-fillable
    J4    4    4   2   short and narrow: back-fillable once J3 has ended (5 + 4 = 9 < 10)

The env (Schedule Cycling): a valid pick starts a job at the current time, Fwd moves time to the next
arrival or completion (arrivals serialised). A priority policy starts its best window job when it fits,
otherwise Fwd; EASY additionally starts the earliest-submitted window job that fits now and whose
requested end is strictly before the best job's reservation ("shadow") time.

The expected start times below are worked out by hand in the comments of each case.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.hpc import RefHPC

from jaxsched.envs.hpc import HPCConfig, HPCEnv, HPCObs
from jaxsched.policies.hpc import make_priority_policy
from jaxsched.workloads.base import make_workload

KEY0 = jax.random.PRNGKey(0)
JOBS = {
    "submit": np.array([0, 1, 2, 3, 4]),
    "run": np.array([10, 30, 20, 2, 4]),
    "req_time": np.array([10, 30, 20, 2, 4]),
    "cores": np.array([2, 4, 2, 2, 2]),
}
CONFIG = HPCConfig(n_cores=4, window_head=5, window_tail=0, queue_capacity=8)

# ---- hand-computed schedules ------------------------------------------------------------------------
# Each timeline lists the decisions; "Fwd → t" means time moves to the next event (and admits the
# arrival due then). J0 always starts at 0 on cores 0-1 (ends 10); J1 arrives at 1 and waits for all 4.
#
# FCFS (no back-filling): J1 heads the queue and blocks everything behind it.
#   t=0  start J0.  Fwd → 1 (+J1).  J1 needs 4, 2 free: Fwd → 2 (+J2), → 3 (+J3), → 4 (+J4), → 10 (J0 ends)
#   t=10 start J1 (ends 40).  J2 does not fit: Fwd → 40
#   t=40 start J2 (cores 0-1, ends 60), start J3 (cores 2-3, ends 42); J4 does not fit: Fwd → 42
#   t=42 start J4.  5 placed: episode ends at t=42.
#   waits 0, 9, 38, 37, 38 → Σ 122, avg 24.4
#   busy core·s in [0, 42]: J0 2·10 + J1 4·30 + J2 2·2 + J3 2·2 = 148
#
# FCFS + EASY: J1's reservation (shadow) is t=10, when J0's 2 cores free.
#   t=0  start J0.  Fwd → 1 (+J1): J1 does not fit, nothing to back-fill: Fwd → 2 (+J2)
#   t=2  J2 fits but 2 + 20 = 22 is not < 10: NOT back-filled.  Fwd → 3 (+J3)
#   t=3  J3 fits and 3 + 2 = 5 < 10: back-fill J3 (cores 2-3, ends 5).  0 free: Fwd → 4 (+J4), → 5 (J3 ends)
#   t=5  J4 fits and 5 + 4 = 9 < 10: back-fill J4 (cores 2-3, ends 9).  Fwd → 9; J2: 29 not < 10: Fwd → 10
#   t=10 start J1 (ends 40) on time.  J2 does not fit: Fwd → 40
#   t=40 start J2.  Episode ends at t=40.
#   waits 0, 9, 38, 0, 1 → Σ 48, avg 9.6
#   busy core·s in [0, 40]: J0 20 + J1 120 + J3 2·2 + J4 2·4 = 152
#
# SJF (requested time, no back-filling):
#   t=0  start J0.  Fwd → 1 (+J1): J1 (30) does not fit: Fwd → 2 (+J2)
#   t=2  shortest is J2 (20 < 30) and it fits: start J2 (cores 2-3, ends 22).  Fwd → 3 (+J3)
#   t=3  shortest J3 (2), 0 free: Fwd → 4 (+J4); shortest still J3: Fwd → 10 (J0 ends)
#   t=10 start J3 (cores 0-1, ends 12); next shortest J4 (4), 0 free: Fwd → 12
#   t=12 start J4 (cores 0-1, ends 16); J1 needs 4: Fwd → 16, → 22 (J2 ends)
#   t=22 start J1.  Episode ends at t=22.
#   waits 0, 21, 0, 7, 8 → Σ 36, avg 7.2
#   busy core·s in [0, 22]: J0 20 + J2 2·20 + J3 2·2 + J4 2·4 = 72
#
# LCFS (latest submit first, no back-filling):
#   t=0  start J0.  Fwd → 1 (+J1): does not fit: Fwd → 2 (+J2)
#   t=2  latest is J2 and it fits: start J2 (cores 2-3, ends 22).  Fwd → 3 (+J3)
#   t=3  latest J3, 0 free: Fwd → 4 (+J4); latest J4, 0 free: Fwd → 10 (J0 ends)
#   t=10 start J4 (cores 0-1, ends 14) before J3; next latest J3, 0 free: Fwd → 14
#   t=14 start J3 (cores 0-1, ends 16); J1: Fwd → 16, → 22
#   t=22 start J1.  Episode ends at t=22.
#   waits 0, 21, 0, 11, 6 → Σ 38, avg 7.6
#   busy core·s in [0, 22]: J0 20 + J2 40 + J4 2·4 + J3 2·2 = 72
EXPECTED = {
    # name: (policy, backfill, starts of J0..J4, Σ wait, elapsed, busy core·s)
    "fcfs": ("fcfs", False, [0, 10, 40, 40, 42], 122, 42, 148),
    "fcfs_easy": ("fcfs", True, [0, 10, 40, 3, 5], 48, 40, 152),
    "sjf": ("sjf", False, [0, 22, 2, 10, 12], 36, 22, 72),
    "lcfs": ("lcfs", False, [0, 22, 2, 14, 10], 38, 22, 72),
}


@functools.cache
def compiled(config: HPCConfig):
    env = HPCEnv(config)
    return env, jax.jit(env.reset), jax.jit(env.step_env), jax.jit(env.metrics)


def run_env(config: HPCConfig, jobs: dict, policy_name: str, backfill: bool, max_decisions: int = 100):
    """Drive `step_env` with the heuristic; returns (start time per job, actions, final metrics)."""
    env, reset, step, metrics = compiled(config)
    bank = make_workload(jobs["submit"], jobs["run"], jobs["cores"], req_time=jobs["req_time"])
    n = len(jobs["submit"])
    params = env.make_params(bank, starts=[0], episode_jobs=n)
    policy = jax.jit(make_priority_policy(env, policy_name, backfill))
    obs, state = reset(KEY0, params)
    starts, actions = {}, []
    for _ in range(max_decisions):
        action = policy(params, obs, KEY0)
        actions.append(int(action))
        job = int(state.q_job[min(int(action), config.window_head - 1)])  # head-only window: slot = position
        t = int(state.t)
        obs, state, _, term, trunc, info = step(KEY0, state, action, params)
        if bool(info["placed"]):
            assert job not in starts
            starts[job] = t
        if bool(term) or bool(trunc):
            break
    assert bool(term), "the episode did not end"
    return starts, actions, {k: float(v) for k, v in metrics(state, params).items()}


def ref_sim(config: HPCConfig, jobs: dict) -> RefHPC:
    n = len(jobs["submit"])
    return RefHPC(
        config.n_cores, config.window_head, config.window_tail, config.queue_capacity, jobs, n, 10**6
    )


def ref_obs(ref: RefHPC) -> HPCObs:
    """The reference's state as the `HPCObs` a heuristic reads (its own σ, window and mask)."""
    vec, mask = ref.observe()
    slots = ref.window_jobs()
    field = lambda k: jnp.asarray([0 if j is None else ref.jobs[j][k] for j in slots], jnp.int32)
    return HPCObs(
        vec=jnp.asarray(vec, jnp.float32),
        mask=jnp.asarray(mask),
        submit=field("submit"),
        cores=field("cores"),
        req_time=field("req_time"),
        sigma=jnp.asarray(ref.sigma(), jnp.int32),
        t=jnp.int32(ref.t),
    )


def run_ref_closed_loop(config: HPCConfig, jobs: dict, policy_name: str, backfill: bool):
    """The same heuristic function, but reading the reference simulator's observations."""
    env = compiled(config)[0]
    policy = jax.jit(make_priority_policy(env, policy_name, backfill))
    ref = ref_sim(config, jobs)
    ref.reset(0)
    for _ in range(100):
        *_, term, trunc = ref.step(int(policy(None, ref_obs(ref), KEY0)))
        if term or trunc:
            break
    assert term
    return ref


@pytest.mark.parametrize("name", list(EXPECTED))
def test_heuristic_schedule_matches_hand_computation(name):
    policy_name, backfill, want_starts, sum_wait, elapsed, busy = EXPECTED[name]
    starts, actions, m = run_env(CONFIG, JOBS, policy_name, backfill)
    assert [starts[j] for j in range(5)] == want_starts
    assert m["placed"] == 5 and m["queued"] == 0 and m["invalid"] == 0
    assert m["elapsed"] == elapsed
    np.testing.assert_allclose(m["avg_wait"], sum_wait / 5, rtol=1e-6)
    np.testing.assert_allclose(m["avg_queue_len"], sum_wait / elapsed, rtol=1e-6)  # all waited in the queue
    np.testing.assert_allclose(m["utilization"], busy / (4 * elapsed), rtol=1e-6)

    # the reference simulator, replaying the same actions, produces the same schedule and metrics
    ref = ref_sim(CONFIG, JOBS)
    ref.reset(0)
    for a in actions:
        ref.step(a)
    assert ref.starts == starts
    for k, v in ref.metrics().items():
        np.testing.assert_allclose(m[k], v, rtol=1e-5, err_msg=k)
    # ... and so does the heuristic when it reads the reference's observations
    assert run_ref_closed_loop(CONFIG, JOBS, policy_name, backfill).starts == starts


def test_schedule_features():
    """The named behaviours, spelled out on the hand-computed schedules."""
    fcfs, easy, sjf, lcfs = (EXPECTED[k][2] for k in ("fcfs", "fcfs_easy", "sjf", "lcfs"))
    # FCFS: J2..J4 fit long before t=40 but wait behind the wide J1
    assert min(fcfs[2:]) >= fcfs[1] + 30
    # EASY: the short narrow jobs are back-filled, the long narrow J2 is not, and J1 keeps its start
    assert easy[3] == 3 and easy[4] == 5 and easy[2] == 40 and easy[1] == fcfs[1]
    # SJF: J2 (20 s) before J1 (30 s); J3 (2 s) before J4 (4 s).  LCFS: J4 before J3
    assert sjf[2] < sjf[1] and sjf[3] < sjf[4]
    assert lcfs[4] < lcfs[3]
    assert len({tuple(s) for s in (fcfs, easy, sjf, lcfs)}) == 4


# ---- EASY with a job that ends before its requested time ------------------------------------------
# 2 cores.  J0 runs 1 s but requested 50 s; J1 runs 20 s on the other core; the wide J2 (2 cores)
# arrives at 2; the long narrow J3 (25 s) at 3.
#   t=0  start J0 (core 0, really ends 1), Fwd → 0 (+J1), start J1 (core 1, ends 20), Fwd → 1 (J0 ends)
#   t=1  Fwd → 2 (+J2): J2 needs 2, 1 free. Its reservation is when core 1 frees: 20 (core 0 is free now)
#   t=3  (+J3) J3 fits, but 3 + 25 = 28 is not < 20: no back-fill.  Fwd → 20
#   t=20 start J2 (ends 25).  Fwd → 25: start J3.
# With a stale σ on the freed core 0 (50 - t, see test_hpc_env.test_sigma_is_zero_on_a_free_core) the
# reservation looks like t=50, and J3 is back-filled at 3, delaying J2 to 28.
EARLY_JOBS = {
    "submit": np.array([0, 0, 2, 3]),
    "run": np.array([1, 20, 5, 25]),
    "req_time": np.array([50, 20, 5, 25]),
    "cores": np.array([1, 1, 2, 1]),
}
EARLY_CONFIG = HPCConfig(n_cores=2, window_head=4, window_tail=0, queue_capacity=4)
EARLY_STARTS = {0: 0, 1: 0, 2: 20, 3: 25}


def test_easy_early_finish_on_reference():
    assert run_ref_closed_loop(EARLY_CONFIG, EARLY_JOBS, "fcfs", True).starts == EARLY_STARTS


def test_easy_early_finish_on_env():
    starts, _, _ = run_env(EARLY_CONFIG, EARLY_JOBS, "fcfs", True)
    assert starts == EARLY_STARTS


def test_held_out_evaluation_plays_each_window_once():
    """`spread_windows` picks distinct windows (all of them, in order, when there are as many episodes),
    refuses more episodes than windows, and `evaluate_policies(..., windows)` plays window `w` whatever the
    key: the FCFS episode of each window equals the env restricted to that window alone."""
    from jaxsched.experiments.evaluate import evaluate_policies, run_episode, spread_windows

    np.testing.assert_array_equal(spread_windows(5, 5), np.arange(5))
    assert len(set(spread_windows(100, 7).tolist())) == 7 and spread_windows(100, 7)[-1] == 99
    with pytest.raises(ValueError, match=r"eval.episodes must be in 1..3 .* got 4"):
        spread_windows(3, 4)
    env = HPCEnv(CONFIG)
    params = env.make_params(
        make_workload(JOBS["submit"], JOBS["run"], JOBS["cores"], req_time=JOBS["req_time"]),
        starts=[0, 1, 2],
        episode_jobs=3,
    )
    fcfs = make_priority_policy(env, "fcfs")
    windows = np.array([2, 0, 2, 1])
    keys = jax.random.split(KEY0, len(windows))  # different keys: the window must not depend on them
    got = evaluate_policies(env, params, {"fcfs": fcfs}, keys, windows)["fcfs"]["avg_wait"]
    alone = [float(run_episode(env, env.episode(params, w), fcfs, None, KEY0)["avg_wait"]) for w in range(3)]
    np.testing.assert_array_equal(got, np.array(alone, np.float32)[windows])
    assert len(set(alone)) == 3  # the three windows differ, so a wrong window would show


def test_an_episode_trace_sums_to_the_episode_and_holds_after_its_end():
    """`core.episode.trace_episode` past the end of an episode: its rewards sum to `run_episode`'s return
    (a deterministic env and policy), and from the end on the recorded state no longer moves."""
    import jaxsched
    from jaxsched.core.episode import run_episode, stateless, trace_episode

    env, params = jaxsched.make("dbf-quick")
    fifo = make_priority_policy(env, "fcfs")
    key = jax.random.key(3)
    episode = run_episode(env, params, stateless(fifo), key)
    decisions = jax.jit(lambda k: trace_episode(env, params, fifo, None, k, 1, lambda s, i, r: s.steps))(key)
    assert int(decisions[0]) == 1
    steps = 600  # past the end: an episode of dbf-quick's 128 jobs takes fewer decisions
    rewards, clock, n = jax.jit(
        lambda k: trace_episode(env, params, fifo, None, k, steps, lambda s, info, r: (r, s.t, s.steps))
    )(key)
    assert int(n[-1]) < steps  # the episode ended inside the trace
    np.testing.assert_allclose(float(rewards.sum()), float(episode["return"]), rtol=1e-5)
    clock = np.asarray(clock)
    assert np.all(np.diff(clock) >= 0)  # time never goes back
    assert clock[-1] == clock[-2] and float(rewards[-1]) == 0.0  # held after the end
