"""Hand-checked schedules for the idle-slot DAG reference simulator (`tests/reference/dag.py`, the
semantics of `docs/dag.md`): each expected number is derived by hand in the comment beside it, and a
random-action sweep checks the invariants of the contract at every step."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.dag import INF, RefDAGEnv, random_valid_action

SNAP_KEYS = {
    "t",
    "slot_job",
    "dispatched",
    "done",
    "moving",
    "delayed",
    "selected",
    "hold_until",
    "stage_mask",
    "idle_ok",
    "bound",
    "ex_state",
    "ex_until",
    "ex_job",
    "ex_stage",
    "ex_warm",
    "n_arrived",
    "n_admitted",
    "n_finished",
    "invalid",
    "jct",
}
METRIC_KEYS = {
    "avg_jct",
    "makespan",
    "n_finished",
    "unfinished",
    "n_selections",
    "n_delayed",
    "idle_total",
    "idle_per_selection",
    "idle_per_delayed",
    "invalid",
    "waited_for_slot",
    "return",
}


def make(dags, jobs, k=1, J=4, g=10, **kw):
    """`dags`: list of (parents list of lists, n_tasks list, duration list); `jobs`: (template, arrival)."""
    S = max(len(d[1]) for d in dags)
    parents = [[sum(1 << p for p in ps) for ps in d[0]] + [0] * (S - len(d[1])) for d in dags]

    def pad(xs):
        return list(xs) + [0] * (S - len(xs))

    env = RefDAGEnv(
        n_executors=k,
        max_slots=J,
        max_stages=S,
        idle_levels=g,
        n_stages=[len(d[1]) for d in dags],
        parents=parents,
        n_tasks=[pad(d[1]) for d in dags],
        duration=[pad(d[2]) for d in dags],
        template=[x[0] for x in jobs],
        arrival=[x[1] for x in jobs],
        **kw,
    )
    return env, env.reset()


def ONE(n, d):  # noqa: N802
    """A one-stage DAG of n tasks × d ms."""
    return ([[]], [n], [d])


# ---- Fig. 1 of the paper ----
@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_fig1_without_idle(scale):
    env, snap = make([ONE(1, 20_000), ONE(1, 4_000)], [(0, 0), (1, 2_000)], reward_scale=scale)
    assert set(snap) == SNAP_KEYS and snap["t"] == 0 and list(snap["slot_job"]) == [0, -1, -1, -1]
    assert snap["idle_ok"][0] and snap["stage_mask"].sum() == 1
    total = 0.0
    snap, rew, term, trunc = env.step(
        0, 0, 0
    )  # job 1 runs 0–20 000; job 2 arrives at 2 000 (no idle executor)
    total += rew
    # 2 s with 1 job, 18 s with 2 jobs
    assert snap["t"] == 20_000 and math.isclose(rew, -(2 + 36) / scale) and not term
    assert list(snap["slot_job"]) == [-1, 1, -1, -1]  # job 1 left slot 0; job 2 took slot 1 at 2 000
    assert snap["stage_mask"].tolist() == [False, True, False, False]
    snap, rew, term, trunc = env.step(1, 0, 0)  # job 2 runs 20 000–24 000
    total += rew
    assert term and not trunc and snap["t"] == 24_000 and snap["jct"].tolist() == [20_000, 22_000]
    m = env.metrics()
    assert set(m) == METRIC_KEYS
    assert m["avg_jct"] == 21.0 and m["makespan"] == 24.0 and m["n_delayed"] == 0 and m["n_selections"] == 2
    assert m["waited_for_slot"] == 0  # job 2 found a free slot at its arrival
    assert math.isclose(total, -(20 + 22) / scale) and math.isclose(m["return"], total)
    with pytest.raises(RuntimeError):
        env.step(1, 0, 0)


def test_a_job_waits_for_a_slot():
    """Fig. 1's jobs with one job slot: job 2 (arriving at 2 s) waits outside until job 1 leaves at 20 s,
    is admitted then (into slot 0) and counts in `waited_for_slot`; its JCT still runs from 2 s."""
    env, snap = make([ONE(1, 20_000), ONE(1, 4_000)], [(0, 0), (1, 2_000)], J=1)
    snap, *_ = env.step(0, 0, 0)
    assert snap["t"] == 20_000 and list(snap["slot_job"]) == [1] and env.metrics()["waited_for_slot"] == 1
    snap, _, term, _ = env.step(0, 0, 0)
    assert term and snap["jct"].tolist() == [20_000, 22_000]


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_fig1_with_idle_slot(scale):
    env, snap = make([ONE(1, 20_000), ONE(1, 4_000)], [(0, 0), (1, 2_000)], reward_scale=scale)
    total = 0.0
    snap, rew, term, _ = env.step(0, 0, 1)  # delay job 1: hold 20 000·1//10 = 2 000 ms
    total += rew
    assert snap["t"] == 2_000 and math.isclose(rew, -2 / scale)  # timer and arrival together at 2 000
    assert snap["delayed"][0, 0] and snap["hold_until"][0, 0] == 2_000
    assert snap["stage_mask"][0] and snap["stage_mask"][1] and not snap["idle_ok"][0] and snap["idle_ok"][1]
    assert env.step(0, 0, 1)[0]["invalid"] == 1  # delayed once: r > 0 no longer valid
    snap, rew, term, _ = env.step(1, 0, 0)  # job 2 runs 2 000–6 000
    total += rew
    assert snap["t"] == 6_000 and math.isclose(rew, -8 / scale) and snap["jct"][1] == 4_000
    snap, rew, term, _ = env.step(0, 0, 0)  # job 1 runs 6 000–26 000
    total += rew
    assert term and snap["t"] == 26_000 and snap["jct"].tolist() == [26_000, 4_000]
    m = env.metrics()
    assert m["avg_jct"] == 15.0 and m["invalid"] == 1 and m["n_selections"] == 3 and m["n_delayed"] == 1
    assert (
        m["idle_total"] == 2.0
        and math.isclose(m["idle_per_selection"], 2 / 3)
        and m["idle_per_delayed"] == 2.0
    )
    assert math.isclose(total, -(26 + 4) / scale) and math.isclose(m["return"], total)


# ---- parallelism limit ----
def test_parallelism_limit_4():
    env, snap = make([ONE(6, 1_000)], [(0, 0)], k=4)
    snap, rew, term, _ = env.step(0, 3, 0)  # p = 4: executors 0–3 run 0–1 000
    # at 1 000: executors 0 and 1 continue (6 − 4 = 2 left), 2 and 3 idle, nothing runnable: no decision
    assert term and snap["t"] == 2_000 and snap["jct"][0] == 2_000 and math.isclose(rew, -2.0)


def test_parallelism_limit_2():
    # job 0: 6 × 1 000 with p = 2; job 1 (2 × 5 000) takes the other two executors
    env, snap = make([ONE(6, 1_000), ONE(2, 5_000)], [(0, 0), (1, 0)], k=4)
    snap, _, _, _ = env.step(0, 1, 0)  # p = 2: executors 0, 1
    assert snap["t"] == 0 and snap["bound"][0] == 2 and snap["dispatched"][0, 0] == 2
    assert env.step(0, 1, 0)[0]["invalid"] == 1  # p = 2 is no longer > bound = 2
    snap, _, _, _ = env.step(1, 1, 0)  # job 1 on executors 2, 3 (0–5 000)
    # executors 0, 1 continue at 1 000 and 2 000 (limit not re-checked); job 0 done at 3 000
    assert snap["t"] == 5_000 and snap["jct"].tolist() == [3_000, 5_000] and env.terminated
    assert snap["ex_job"].tolist() == [0, 0, 1, 1] and snap["ex_warm"].all()


def test_single_job_limit_holds_executors_back():
    # a stage is selected once per scheduling round: with p = 2 the other two executors stay idle, and the
    # continuations at 1 000 and 2 000 ms are not triggers (nobody went idle), so nobody asks again
    env, snap = make([ONE(6, 1_000)], [(0, 0)], k=4)
    snap, _, term, _ = env.step(0, 1, 0)
    assert term and snap["t"] == 3_000 and snap["jct"].tolist() == [3_000]
    assert snap["ex_job"].tolist() == [0, 0, -1, -1]


def test_selection_cleared_by_a_trigger():
    # job 0: one stage of 3 × 1 000 with p = 1; job 1 arrives at 500 (a trigger): job 0's stage is
    # selectable again at 500 and the agent may raise its limit
    env, snap = make([ONE(3, 1_000), ONE(1, 100)], [(0, 0), (1, 500)], k=3)
    snap, _, _, _ = env.step(0, 0, 0)  # p = 1
    assert snap["t"] == 500 and snap["stage_mask"][0] and snap["stage_mask"][1]
    snap, _, _, _ = env.step(0, 2, 0)  # p = 3: two more executors join at 500, 500–1 500
    # at 1 000 executor 0 finds no task left and idles (a trigger): job 1 runs next
    assert (
        snap["t"] == 1_000
        and snap["dispatched"][0, 0] == 3
        and snap["stage_mask"].tolist()[:2] == [False, True]
    )


# ---- precedence ----
def test_chain_precedence():
    env, snap = make([([[], [0]], [1, 1], [1_000, 500])], [(0, 0)], k=2)  # a -> b
    assert snap["stage_mask"].tolist()[:2] == [True, False]
    assert env.step(1, 1, 0)[0]["invalid"] == 1  # b is not runnable
    snap, _, _, _ = env.step(0, 0, 0)  # a on executor 0; executor 1 idle but nothing runnable
    assert (
        snap["t"] == 1_000
        and snap["done"][0].tolist() == [1, 0]
        and snap["stage_mask"].tolist()[:2] == [False, True]
    )
    assert snap["idle_ok"][1]  # b never delayed, nothing dispatched
    snap, _, term, _ = env.step(1, 0, 0)  # b: class 0/1 executor 0 (same job) first, index order
    assert term and snap["t"] == 1_500 and snap["ex_stage"].tolist() == [1, -1]


# ---- moving delay and warm-up ----
def test_moving_and_warmup():
    env, snap = make(
        [ONE(2, 1_000), ONE(1, 1_000)], [(0, 0), (1, 0)], k=1, moving_delay=500, warmup_delay=300
    )
    snap, rew, _, _ = env.step(0, 0, 0)  # executor 0 (job -1, class 2) moves to job 0 until 500
    # nothing else happens until 500: the move arrives, the task starts fresh: 500 + 1 000 + 300 = 1 800;
    # at 1 800 the executor continues (not fresh): 2 800; job 0 done then
    assert snap["t"] == 2_800 and snap["jct"][0] == 2_800 and math.isclose(rew, -2 * 2.8)
    assert snap["dispatched"][0, 0] == 0 and snap["slot_job"][0] == -1  # slot freed and reset
    assert snap["ex_state"][0] == 0 and snap["ex_job"][0] == 0 and snap["ex_warm"][0]
    snap, _, _, _ = env.step(1, 0, 0)  # job 1: class 2 again -> moves until 3 300
    assert snap["t"] == 3_300 + 1_000 + 300 and snap["jct"][1] == 4_600 and env.terminated


def test_moving_snapshot_midway():
    # two executors, one stage of 3 tasks: dispatch 2, both move; then watch at 500
    env, snap = make(
        [ONE(3, 1_000), ONE(1, 10_000)], [(0, 0), (1, 0)], k=3, moving_delay=500, warmup_delay=300
    )
    snap, _, _, _ = env.step(0, 1, 0)  # executors 0, 1 move to job 0
    assert snap["t"] == 0 and snap["moving"][0, 0] == 2 and snap["ex_state"].tolist() == [2, 2, 0]
    assert snap["ex_until"].tolist() == [500, 500, INF] and snap["bound"][0] == 2
    assert not snap["idle_ok"][0]  # executors move to it: r > 0 invalid
    snap, _, _, _ = env.step(1, 0, 0)  # executor 2 moves to job 1
    # at 500: 0, 1 start 1 300 ms tasks (until 1 800); executor 2 starts 10 300 (until 10 800)
    # stage 0 has 1 task left and no idle executor -> at 1 800 executor 0 continues, 1 idles: decision?
    # nothing runnable (3 − 3 − 0 = 0) -> next event 2 800 finishes job 0; no runnable stage then either
    assert snap["t"] == 10_800 and snap["jct"].tolist() == [2_800, 10_800]


CHAIN_AB = ([[], [0]], [1, 2], [1_000, 1_000])  # A (1 × 1 000) -> B (2 × 1 000)


def test_continuing_task_beats_mover():
    env, snap = make([CHAIN_AB, ONE(1, 5_000)], [(0, 0), (1, 4_000)], k=2, moving_delay=1_500)
    snap, _, _, _ = env.step(0, 0, 0)  # A: executor 0 moves 0–1 500, runs 1 500–2 500
    assert snap["t"] == 2_500 and snap["stage_mask"].tolist()[:2] == [False, True]
    assert snap["ex_state"].tolist() == [0, 0] and snap["ex_job"].tolist() == [0, -1]
    snap, _, _, _ = env.step(1, 1, 0)  # B, p = 2: executor 0 (class 1) runs 2 500–3 500, executor 1 moves
    # at 3 500 executor 0 continues (2 − 1 = 1 left; the mover does not count): until 4 500
    # at 4 000 the mover arrives: 2 − 2 = 0 left -> idles (job 0, warm False); job 1 arrives -> decision
    assert (
        snap["t"] == 4_000
        and snap["ex_state"].tolist() == [1, 0]
        and snap["ex_until"].tolist() == [4_500, INF]
    )
    assert snap["ex_job"].tolist() == [0, 0] and snap["ex_warm"].tolist() == [True, False]
    assert (
        snap["moving"][0, 1] == 0
        and snap["dispatched"][0, 1] == 2
        and snap["slot_job"].tolist()[:2] == [0, 1]
    )
    snap, _, term, _ = env.step(env.S, 0, 0)  # job 1 (slot 1): executor 1 is class 2 -> moves until 5 500
    assert term and snap["t"] == 5_500 + 5_000 and snap["jct"].tolist() == [4_500, 6_500]


def test_mover_to_finished_job_idles():
    env, snap = make([CHAIN_AB, ONE(1, 5_000)], [(0, 0), (1, 7_000)], k=2, moving_delay=3_000)
    snap, _, _, _ = env.step(0, 0, 0)  # A: executor 0 moves 0–3 000, runs 3 000–4 000
    assert snap["t"] == 4_000
    snap, _, _, _ = env.step(1, 1, 0)  # B: executor 0 runs 4 000–5 000 then 5 000–6 000; executor 1 moves
    # job 0 finishes at 6 000 and leaves slot 0; at 7 000 the mover arrives at a finished job: idles;
    # job 1 arrives at 7 000 into slot 0
    assert snap["t"] == 7_000 and snap["jct"][0] == 6_000 and snap["slot_job"].tolist()[:2] == [1, -1]
    assert snap["ex_state"].tolist() == [0, 0] and snap["ex_job"].tolist() == [0, 0]
    assert snap["ex_warm"].tolist() == [True, False] and snap["moving"][0].tolist() == [0, 0]
    snap, _, term, _ = env.step(0, 0, 0)  # p = 1: both class 2 for job 1 -> executor 0 moves until 10 000
    assert term and snap["t"] == 15_000 and snap["jct"].tolist() == [6_000, 8_000]


def test_dispatch_prefers_executor_of_same_job():
    # job 0: X (1 × 2 000) -> B (1 × 1 000); job 1: 1 × 1 000; warm-up 300, no moving delay
    env, snap = make(
        [([[], [0]], [1, 1], [2_000, 1_000]), ONE(1, 1_000)], [(0, 0), (1, 0)], k=2, warmup_delay=300
    )
    snap, _, _, _ = env.step(env.S, 0, 0)  # job 1 on executor 0: 0–1 300 (fresh)
    snap, _, _, _ = env.step(0, 0, 0)  # X on executor 1: 0–2 300
    # 1 300: job 1 done, executor 0 idle (nothing runnable); 2 300: X done -> decision for B
    assert snap["t"] == 2_300 and snap["ex_job"].tolist() == [1, 0] and snap["stage_mask"][1]
    snap, _, term, _ = env.step(1, 0, 0)  # class 1 executor 1 (job 0, warm) before class 2 executor 0
    assert term and snap["ex_stage"].tolist() == [0, 1] and snap["t"] == 3_300  # not fresh: no warm-up


# ---- idle slots ----
def test_delay_once_and_timer_event():
    env, snap = make([ONE(1, 1_000)], [(0, 0)], k=1, g=4)
    assert env.step(0, 0, 5)[0]["invalid"] == 1  # r > g
    snap, rew, _, _ = env.step(0, 0, 2)  # hold 2·1 000//4 = 500
    assert snap["t"] == 500 and math.isclose(rew, -0.5)  # the timer's end is the only event
    assert snap["stage_mask"][0] and not snap["idle_ok"][0] and snap["delayed"][0, 0]
    assert env.step(0, 0, 1)[0]["invalid"] == 2
    snap, _, term, _ = env.step(0, 0, 0)
    assert term and snap["t"] == 1_500 and env.metrics()["idle_total"] == 0.5


def test_short_delay_lasts_one_ms():
    # (1 · 3) // 4 = 0 ms rounds up to 1 ms, so the timer is an event (a selected stage could otherwise
    # wait for nothing); at its end the stage is runnable again with r masked
    env, snap = make([ONE(1, 3)], [(0, 0)], k=1, g=4)
    snap, rew, _, _ = env.step(0, 0, 1)
    assert snap["t"] == 1 and rew == -0.001 and snap["delayed"][0, 0] and snap["hold_until"][0, 0] == 1
    assert snap["stage_mask"][0] and not snap["idle_ok"][0] and env.metrics()["idle_total"] == 0.001


def test_other_stage_takes_executor_during_hold():
    env, snap = make([([[], []], [1, 1], [2_000, 1_000])], [(0, 0)], k=1, g=2)
    snap, _, _, _ = env.step(0, 0, 1)  # stage 0 held until 1 000; executor not reserved
    assert snap["t"] == 0 and snap["stage_mask"][:2].tolist() == [False, True]
    snap, _, _, _ = env.step(1, 0, 0)  # stage 1 runs 0–1 000; then stage 0 runnable at 1 000
    assert snap["t"] == 1_000 and snap["stage_mask"][0]
    snap, _, term, _ = env.step(0, 0, 0)
    assert term and snap["t"] == 3_000


# ---- truncation and admission ----
def test_truncation():
    env, snap = make([ONE(1, 2_000)], [(0, 0), (0, 1_000)], k=1, max_time=1_500)
    snap, rew, term, trunc = env.step(0, 0, 0)
    # 0–1 000: one job (−1); arrival at 1 000; next event 2 000 >= 1 500: stop at 1 500 with 2 jobs (−1)
    assert trunc and not term and snap["t"] == 1_500 and math.isclose(rew, -2.0)
    assert snap["n_finished"] == 0 and snap["n_arrived"] == 2 and not snap["stage_mask"].any()
    m = env.metrics()
    assert m["unfinished"] == 2 and m["avg_jct"] == 0.0 and m["makespan"] == 0.0
    with pytest.raises(RuntimeError):
        env.step(0, 0, 0)


def test_admission_overflow():
    env, snap = make([ONE(1, 1_000)], [(0, 0), (0, 0)], k=1, J=1)
    assert snap["slot_job"].tolist() == [0] and snap["n_arrived"] == 2 and snap["n_admitted"] == 1
    snap, rew, _, _ = env.step(0, 0, 0)  # n_sys = 2 for 1 s; then job 1 takes slot 0
    assert snap["t"] == 1_000 and math.isclose(rew, -2.0) and snap["slot_job"].tolist() == [1]
    assert snap["n_admitted"] == 2 and snap["done"][0, 0] == 0 and snap["ex_job"][0] == 0
    snap, rew, term, _ = env.step(0, 0, 0)
    assert term and math.isclose(rew, -1.0) and snap["jct"].tolist() == [1_000, 2_000]
    assert math.isclose(env.metrics()["return"], -3.0)


# ---- random valid actions: invariants ----
def random_case(rng):
    dags = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(1, 6))
        parents = [[p for p in range(c) if rng.random() < 0.4] for c in range(n)]
        dags.append((parents, rng.integers(1, 5, n).tolist(), (rng.integers(1, 30, n) * 100).tolist()))
    n_jobs = int(rng.integers(1, 7))
    arrival = np.sort(rng.integers(0, 8_000, n_jobs)).tolist()
    jobs = [(int(rng.integers(len(dags))), a) for a in arrival]
    move = int(rng.choice([0, 0, 400]))
    warm = int(rng.choice([0, 300]))
    return (
        dags,
        jobs,
        dict(
            k=int(rng.integers(1, 4)),
            J=int(rng.integers(1, 4)),
            g=int(rng.integers(1, 5)),
            moving_delay=move,
            warmup_delay=warm,
            reward_scale=float(rng.choice([1.0, 50.0])),
        ),
    )


def check_invariants(env):
    for j in range(env.N):
        for s in env.stages(j):
            nt = env.n_tasks(j, s)
            assert 0 <= env.done[j][s] <= env.dispatched[j][s] <= nt
            running = [
                e for e in range(env.k) if env.ex_state[e] == 1 and (env.ex_job[e], env.ex_stage[e]) == (j, s)
            ]
            movers = [
                e for e in range(env.k) if env.ex_state[e] == 2 and (env.ex_job[e], env.ex_stage[e]) == (j, s)
            ]
            # each dispatched, unfinished task is on exactly one executor: none double-booked, none lost
            assert len(running) == env.dispatched[j][s] - env.done[j][s]
            if not env.finished[j]:
                assert len(movers) == env.moving[j][s]
            if running:
                mask = env.t_parents[env.template[j]][s]
                assert all(env.stage_finished(j, p) for p in env.stages(j) if (mask >> p) & 1)
    for e in range(env.k):
        assert (env.ex_until[e] == INF) == (env.ex_state[e] == 0)
        assert env.ex_state[e] == 0 or env.ex_until[e] > env.t


@pytest.mark.parametrize("seed", range(40))
def test_random_valid_actions(seed):
    rng = np.random.default_rng(seed)
    dags, jobs, kw = random_case(rng)
    env, snap = make(dags, jobs, **kw)
    k, S = env.k, env.S
    t, total, delays, jct_seen = snap["t"], 0.0, {}, {}
    term = trunc = False
    for _ in range(10_000):
        a_stage, a_limit, r = random_valid_action(snap, env, rng)
        j = int(snap["slot_job"][a_stage // S])
        assert 0 <= a_limit < k and a_limit + 1 > snap["bound"][a_stage // S]
        if r > 0:
            delays[(j, a_stage % S)] = delays.get((j, a_stage % S), 0) + 1
            assert delays[(j, a_stage % S)] == 1  # idle_ok never offers a second delay
        before = env.bound(j)
        snap, rew, term, trunc = env.step(a_stage, a_limit, r)
        total += rew
        assert snap["invalid"] == 0 and snap["t"] >= t and rew <= 0.0
        if r == 0 and snap["t"] == t:
            assert before < env.bound(j) <= a_limit + 1  # dispatched >= 1, within the limit
        t = snap["t"]
        check_invariants(env)
        for i, x in enumerate(snap["jct"].tolist()):
            if x >= 0:
                assert jct_seen.setdefault(i, x) == x  # recorded once, never changed
        assert snap["n_finished"] == len(jct_seen)
        assert (snap["stage_mask"] >= snap["idle_ok"]).all()
        admitted = {i for i in range(snap["n_admitted"]) if i not in jct_seen}
        assert sorted(x for x in snap["slot_job"].tolist() if x >= 0) == sorted(admitted)
        assert snap["n_admitted"] == min(
            snap["n_arrived"], len(jct_seen) + env.J
        )  # no free slot while waiting
        assert all(env.delayed[i][s] == ((i, s) in delays) for i in range(env.N) for s in range(S))
        if term or trunc:
            break
    assert term and not trunc
    scale = kw["reward_scale"]
    assert math.isclose(total, -sum(jct_seen.values()) / 1000.0 / scale, rel_tol=1e-12)
    m = env.metrics()
    assert (
        m["n_finished"] == env.N and m["unfinished"] == 0 and math.isclose(m["return"], total, rel_tol=1e-12)
    )
    assert math.isclose(m["avg_jct"], sum(jct_seen.values()) / 1000.0 / env.N)
