"""Hand-checked schedules for the GPU-cloud reference simulator (`tests/reference/gpu_cloud.py`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.gpu_cloud import ReferenceGPUCloud

PRICE = 2.84


def make(
    jobs,
    n_machines=1,
    gpu_cap=800,
    cpu_cap=9600,
    mem_cap=65536,
    perf=None,
    model_comm=(0.0, 0.5, 1.0),
    n_slots=4,
    max_running=16,
    kappa_net=0.0,
    kappa_cpu=0.0,
    kappa_spread=0.0,
    phi=None,
):
    """`jobs`: dicts with submit, c, gpu and work (cpu, mem default 0, model default 0)."""
    M = n_machines

    def caps(x, dtype=np.int64):
        return np.asarray(x if np.ndim(x) else [x] * M, dtype)

    env = ReferenceGPUCloud(
        submit=[j["submit"] for j in jobs],
        n_inst=[j["c"] for j in jobs],
        gpu=[j["gpu"] for j in jobs],
        cpu=[j.get("cpu", 0) for j in jobs],
        mem=[j.get("mem", 0) for j in jobs],
        work=[j["work"] for j in jobs],
        model=[j.get("model", 0) for j in jobs],
        start=0,
        episode_jobs=len(jobs),
        gpu_cap=caps(gpu_cap),
        cpu_cap=caps(cpu_cap),
        mem_cap=caps(mem_cap),
        bw_cap=np.ones(M),
        perf=np.ones(M) if perf is None else np.asarray(perf, float),
        model_comm=np.asarray(model_comm, float),
        kappa_net=kappa_net,
        kappa_cpu=kappa_cpu,
        kappa_spread=kappa_spread,
        n_slots=n_slots,
        queue_capacity=n_slots,
        max_running=max_running,
        phi=phi,
    )
    env.reset()
    return env


def act(env, priority=None, favour=None):
    """Priorities (default all equal) and an affinity favouring machines in the order `favour`."""
    N, M = env.N, env.M
    pr = np.zeros(N) if priority is None else np.asarray(priority, float)
    aff = np.zeros((N, M))
    if favour is not None:
        for rank, m in enumerate(favour):
            aff[:, m] = M - rank
    return env.step(pr, aff)


def run_to_end(env, max_steps=100, **kw):
    outs = []
    for _ in range(max_steps):
        out = act(env, **kw)
        outs.append(out)
        env.check_invariants()
        if out["terminated"]:
            return outs
    raise AssertionError("episode did not end")


def fee(gpus, duration):
    return PRICE * gpus * duration / 3600.0


def rec(env, b):
    return env.finished_record(b)


def speed_updates(env):
    """The speeds set by each speed update, in order (k = 0, 1, ...): a list of {bank: speed}."""
    return [d["speeds"] for _, kind, _, d in env.log if kind == "speed"]


def test_single_job_alone_then_waiting_job():
    # job 0 takes the whole machine (8 GPUs) for 500 s; job 1 (1 instance x 2 GPUs, work 1000) arrives at
    # t = 100 and waits until job 0 ends at 500, then runs alone at speed perf = 1.0.
    env = make([dict(submit=0, c=1, gpu=800, work=500.0), dict(submit=100, c=1, gpu=200, work=1000.0)])
    assert env.observation()["queue"] == [0] and env.t == 0.0
    out = act(env)
    assert out["placed"] == [(0, {0: 1})] and out["t"] == 500.0
    # job 1 arrived at 100 during the forward and is visible; its wait is 500 - 100 = 400 s
    assert out["obs"]["queue"] == [1]
    assert out["obs"]["jobs"][0, 4] == pytest.approx(400 / 3600)
    (r0,) = out["finished"]
    fee0 = fee(8, 500.0)  # 2.84 * 8 * 500 / 3600 = 3.1556
    assert r0["duration"] == 500.0 and r0["jct"] == 500.0 and r0["fee"] == pytest.approx(fee0)
    # reward: 1 / (fee * JCT in minutes) = 1 / (3.1556 * 8.3333)
    assert out["reward"] == pytest.approx(1.0 / (fee0 * 500.0 / 60.0))
    out = act(env)
    assert out["terminated"] and out["t"] == 1500.0
    r1 = rec(env, 1)
    # duration = work = 1000; fee = 2.84 * 2 GPUs * 1000 / 3600 = 1.5778; JCT = wait 400 + 1000 = 1400
    assert r1["start"] == 500.0 and r1["duration"] == 1000.0
    assert r1["fee"] == pytest.approx(2.84 * 2 * 1000 / 3600)
    assert r1["jct"] == 1400.0
    assert out["reward"] == pytest.approx(1.0 / (r1["fee"] * 1400.0 / 60.0))
    m = env.metrics()
    assert m["finished"] == 2 and m["failed"] == 0 and m["steps"] == 2
    assert m["avg_jct_min"] == pytest.approx((500 + 1400) / 2 / 60)
    assert m["avg_wait_min"] == pytest.approx((0 + 400) / 2 / 60)
    # GPU-seconds 8*500 + 2*1000 = 6000 over 8 GPUs * 1500 s
    assert m["gpu_util"] == pytest.approx(6000 / (8 * 1500))
    assert m["makespan_h"] == pytest.approx(1500 / 3600)
    env.check_invariants()


@pytest.mark.parametrize("spread", [False, True])
def test_packed_vs_spread(spread):
    # 3 machines x 8 GPUs. Job 0 (1 x 4 GPUs, non-distributed, very long) is placed on machine 0.
    # Job 1 (2 x 4 GPUs, model comm 0.5, work 1000) arrives at t = 10. Favouring machine 0 first it gets
    # one instance there (4 GPUs left) and one on machine 1: spread over k = 2 machines. Favouring
    # machine 1 it fits both instances there: packed.
    jobs = [dict(submit=0, c=1, gpu=400, work=1e5), dict(submit=10, c=2, gpu=400, work=1000.0, model=1)]
    env = make(jobs, n_machines=3, kappa_net=0.5, kappa_spread=0.2)
    out = act(env, favour=[0, 1, 2])
    assert out["placed"] == [(0, {0: 1})] and out["t"] == 10.0
    out = act(env, favour=[0, 1, 2] if spread else [1, 0, 2])
    r1 = rec(env, 1)
    if spread:
        assert out["placed"] == [(1, {0: 1, 1: 1})]
        # net[1, m] = comm 0.5 * dist 1 * (4/8 GPUs) / bw 1 = 0.25 = NET_m (job 0 is on one machine: no
        # network demand), so slow = 1 on both machines; speed = 1 / (1 + 0.2 * 0.5 * (2 - 1)) = 1 / 1.1
        duration = 1000.0 * 1.1
    else:
        assert out["placed"] == [(1, {1: 2})]
        duration = 1000.0  # one machine: dist = 0, speed 1
    # update k=1 (round 2) sets job 1's speed; job 0 runs alone at 1 throughout
    assert speed_updates(env)[1] == pytest.approx({0: 1.0, 1: 1000.0 / duration})
    assert r1["start"] == 10.0 and r1["duration"] == pytest.approx(duration)
    assert r1["fee"] == pytest.approx(PRICE * 8 * duration / 3600)  # 2 x 4 GPUs
    assert r1["jct"] == pytest.approx(duration)
    env.check_invariants()


def test_two_distributed_jobs_share_the_network():
    # 2 machines, memory 1000 MiB each. A (2 x 4 GPUs, mem 600, comm 1, work 1000) fits one instance per
    # machine; B (2 x 4 GPUs, mem 400, comm 1, work 2000) then fits one per machine next to A.
    # kappa_net = 0.5, kappa_spread = 0.2.
    jobs = [
        dict(submit=0, c=2, gpu=400, mem=600, work=1000.0, model=2),
        dict(submit=0, c=2, gpu=400, mem=400, work=2000.0, model=2),
    ]
    env = make(jobs, n_machines=2, mem_cap=1000, kappa_net=0.5, kappa_spread=0.2)
    out = act(env, favour=[0, 1])
    assert out["placed"] == [(0, {0: 1, 1: 1})] and out["t"] == 0.0  # B arrives at 0, zero-length step
    assert env.jobs[0].speed == pytest.approx(1 / 1.2)  # alone: 1 / (1 + 0.2 * 1 * 1)
    # observation at t = 0 with A running on both machines and B queued
    obs = out["obs"]
    assert obs["queue"] == [1] and obs["job_mask"].tolist() == [True, False, False, False]
    # B: (C / 8, cpu / 9600, gpu / 800, mem / 1000, wait / 3600)
    assert obs["jobs"][0] == pytest.approx([2 / 8, 0.0, 400 / 800, 400 / 1000, 0.0])
    assert not obs["jobs"][1:].any()
    # per machine: free cpu 1, free gpu 4/8, free mem 400/1000, free bw 1 - net 0.5, GPU util 4/8
    assert obs["machines"] == pytest.approx(np.tile([1.0, 0.5, 0.4, 0.5, 0.5], (2, 1)))
    assert obs["free"].tolist() == [[400, 9600, 400], [400, 9600, 400]]
    out = act(env, favour=[0, 1])
    assert out["placed"] == [(1, {0: 1, 1: 1})]
    # each job: g = 4/8 = 0.5, net = 1 * 1 * 0.5 / 1 = 0.5, NET_m = 1.0
    # slow = 1 + 0.5 * 1 * 1 * (1.0 - 0.5) = 1.25; speed = (1 / 1.25) / 1.2 = 2/3
    assert speed_updates(env)[1] == pytest.approx({0: 2 / 3, 1: 2 / 3})
    assert speed_updates(env)[2] == pytest.approx({1: 1 / 1.2})  # after A finishes
    # A finishes at 1000 / (2/3) = 1500 (alone it would take 1200). B has done 2/3 * 1500 = 1000 of 2000,
    # then runs alone at 1/1.2: 1000 * 1.2 = 1200 more -> finishes at 2700.
    assert out["terminated"]
    assert rec(env, 0)["finish"] == pytest.approx(1500.0)
    assert rec(env, 1)["finish"] == pytest.approx(2700.0)
    assert rec(env, 1)["fee"] == pytest.approx(PRICE * 8 * 2700 / 3600)
    # the last step finished both: reward = mean of 1 / (fee * JCT_min)
    f0, f1 = PRICE * 8 * 1500 / 3600, PRICE * 8 * 2700 / 3600
    assert out["reward"] == pytest.approx((1 / (f0 * 25.0) + 1 / (f1 * 45.0)) / 2)
    env.check_invariants()


def test_cpu_contention_slows_a_single_machine_job():
    # one machine, 96 cores (9600). H: 1 x 1 GPU, 48 cores (share 0.5), work 3000. L: 1 x 1 GPU,
    # 9.6 cores (share 0.1), work 1000. kappa_cpu = 0.4; non-distributed, so no network term.
    jobs = [
        dict(submit=0, c=1, gpu=100, cpu=4800, work=3000.0),
        dict(submit=0, c=1, gpu=100, cpu=960, work=1000.0),
    ]
    env = make(jobs, kappa_cpu=0.4, kappa_net=1.0, kappa_spread=1.0)
    act(env)
    assert env.jobs[0].speed == 1.0  # alone
    out = act(env)
    # CPU_0 = 0.6. L: slow = 1 + 0.4 * (0.6 - 0.1) = 1.2 -> speed 1/1.2; H: slow = 1 + 0.4 * 0.1 = 1.04
    assert speed_updates(env)[1] == pytest.approx({0: 1 / 1.04, 1: 1 / 1.2})
    assert speed_updates(env)[2] == pytest.approx({0: 1.0})
    assert out["terminated"]
    # L finishes at 1000 * 1.2 = 1200; H has done 1200 / 1.04 = 1153.846 by then, the remaining
    # 3000 - 1153.846 = 1846.154 alone at speed 1 -> finishes at 4200 - 1200/1.04 = 3046.154
    assert rec(env, 1)["duration"] == pytest.approx(1200.0)
    assert rec(env, 0)["duration"] == pytest.approx(4200.0 - 1200.0 / 1.04)
    assert rec(env, 0)["duration"] == pytest.approx(3046.1538461538)


def test_heterogeneous_machine():
    # the same job on machine 1 (perf 0.8) takes work / 0.8 = 1250 s; fee 2.84 * 2 * 1250 / 3600
    env = make([dict(submit=0, c=1, gpu=200, work=1000.0)], n_machines=2, perf=[1.0, 0.8])
    out = act(env, favour=[1, 0])
    assert out["placed"] == [(0, {1: 1})] and out["terminated"]
    assert rec(env, 0)["duration"] == pytest.approx(1250.0)
    assert rec(env, 0)["fee"] == pytest.approx(2.84 * 2 * 1250 / 3600)


def test_fluctuation_index_counts_speed_updates():
    # phi(k) = 1 / (k + 1). A (work 1000, machine 0) starts in round 1: update k=0, speed 1. B (work 3000)
    # arrives at 0 and starts on machine 1 in round 2: update k=1, both at 1/2. A finishes at 2000; the
    # finish is update k=2: B has 3000 - 1000 = 2000 left at 1/3 -> 6000 more, finishes at 8000.
    jobs = [dict(submit=0, c=1, gpu=800, work=1000.0), dict(submit=0, c=1, gpu=800, work=3000.0)]
    env = make(jobs, n_machines=2, phi=lambda k: np.full(2, 1.0 / (k + 1)))
    act(env, favour=[0, 1])
    out = act(env, favour=[1, 0])
    assert out["terminated"]
    assert rec(env, 0)["finish"] == pytest.approx(2000.0)
    assert rec(env, 1)["finish"] == pytest.approx(8000.0)
    assert [d["k"] for _, kind, _, d in env.log if kind == "speed"] == [0, 1, 2, 3]


def test_failed_scheduling_penalty_in_reward():
    # one 8-GPU machine. Job 0 (4 GPUs, work 1000) starts at 0. Jobs 1 (8 GPUs, work 100) and 2 (4 GPUs,
    # work 500) arrive at 0; the forward stops once job 2 is queued (it fits).
    jobs = [
        dict(submit=0, c=1, gpu=400, work=1000.0),
        dict(submit=0, c=1, gpu=800, work=100.0),
        dict(submit=0, c=1, gpu=400, work=500.0),
    ]
    env = make(jobs)
    out = act(env)
    assert out["reward"] == 0.0 and out["obs"]["queue"] == [1, 2] and out["t"] == 0.0
    # equal priorities: slot 0 (job 1) first -> fails; job 2 starts. Forward: job 2 ends at 500,
    # job 0 at 1000, then job 1 fits and the forward stops.
    out = act(env)
    assert out["failed"] == [1] and out["placed"] == [(2, {0: 1})]
    assert [r["bank"] for r in out["finished"]] == [0, 2] and out["t"] == 1000.0
    fee2 = 2.84 * 4 * 500 / 3600  # 1.5778, JCT 500 s = 8.333 min -> 1 / 13.148 = 0.07606
    fee0 = 2.84 * 4 * 1000 / 3600  # 3.1556, JCT 1000 s = 16.667 min -> 1 / 52.593 = 0.01901
    penalty = 0.1 * 1 * 8  # alpha * C * GPUs = 0.8
    expected = (1 / (fee2 * 500 / 60) + 1 / (fee0 * 1000 / 60) - penalty) / 3  # = -0.23498
    assert out["reward"] == pytest.approx(expected)
    assert out["reward"] == pytest.approx(-0.2349765, abs=1e-6)
    out = act(env)
    assert out["terminated"] and rec(env, 1)["jct"] == pytest.approx(1100.0)
    assert env.metrics()["failed"] == 1


def test_queue_full_arrivals_wait_outside():
    # Q = N = 2, one 8-GPU machine, every job takes the whole machine. Job 0 runs [0, 1000); jobs 1, 2, 3
    # (work 100) arrive at 10, 20, 30; job 3 finds the queue full.
    jobs = [dict(submit=0, c=1, gpu=800, work=1000.0)] + [
        dict(submit=10 * i, c=1, gpu=800, work=100.0) for i in (1, 2, 3)
    ]
    env = make(jobs, n_slots=2)
    out = act(env)
    assert out["obs"]["queue"] == [1, 2] and out["t"] == 1000.0 and env.ptr == 3
    # round 2: job 1 starts at 1000, job 2 fails; job 1 left a slot: job 3 joins at t = 1000
    out = act(env)
    assert out["placed"] == [(1, {0: 1})] and out["failed"] == [2]
    assert env.jobs[3].queued_at == 1000.0
    assert out["obs"]["queue"] == [2, 3] and out["t"] == 1100.0
    assert out["obs"]["jobs"][1, 4] == pytest.approx((1100 - 30) / 3600)  # wait counts from arrival
    out = act(env)
    assert out["placed"] == [(2, {0: 1})] and out["failed"] == [3] and out["t"] == 1200.0
    out = act(env)
    assert out["terminated"] and out["t"] == 1300.0
    # job 3: arrival 30, start 1200, finish 1300 -> JCT 1270, wait 1170
    r3 = rec(env, 3)
    assert r3["jct"] == 1270.0 and r3["start"] - r3["arrival"] == 1170.0
    assert env.metrics()["failed"] == 2
    env.check_invariants()


@pytest.mark.parametrize("first", [0, 1])
def test_priority_orders_placement(first):
    # job 0 blocks the machine until 1000; jobs 1 and 2 (6 GPUs each) are both queued then, only one fits
    jobs = [
        dict(submit=0, c=1, gpu=800, work=1000.0),
        dict(submit=10, c=1, gpu=600, work=100.0),
        dict(submit=20, c=1, gpu=600, work=200.0),
    ]
    env = make(jobs, n_slots=2)
    out = act(env)
    assert out["obs"]["queue"] == [1, 2]
    priority = [1.0, 0.0] if first == 0 else [0.0, 1.0]
    out = act(env, priority=priority)
    winner, loser = (1, 2) if first == 0 else (2, 1)
    assert out["placed"] == [(winner, {0: 1})] and out["failed"] == [loser]
    assert rec(env, winner)["start"] == 1000.0


def random_env(seed, n_jobs=40, M=4, n_slots=8, max_running=6):
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 400, n_jobs))
    submit -= submit[0]
    env = ReferenceGPUCloud(
        submit=submit,
        n_inst=rng.integers(1, 5, n_jobs),
        gpu=rng.choice([50, 100, 200, 400, 800], n_jobs),
        cpu=rng.integers(0, 4000, n_jobs),
        mem=rng.integers(0, 30000, n_jobs),
        work=rng.uniform(10.0, 5000.0, n_jobs),
        model=rng.integers(0, 3, n_jobs),
        start=0,
        episode_jobs=n_jobs,
        gpu_cap=np.full(M, 800),
        cpu_cap=np.full(M, 9600),
        mem_cap=np.full(M, 65536),
        bw_cap=rng.uniform(0.5, 1.5, M),
        perf=rng.uniform(0.7, 1.0, M),
        model_comm=np.array([0.1, 0.5, 1.0]),
        kappa_net=0.5,
        kappa_cpu=0.3,
        kappa_spread=0.2,
        load_scale=2.0,
        n_slots=n_slots,
        queue_capacity=n_slots,
        max_running=max_running,
        phi=lambda k: np.clip(1 + 0.1 * np.random.default_rng((seed, k)).normal(size=M), 0.5, 1.5),
    )
    return env, rng


@pytest.mark.parametrize("seed", range(6))
def test_random_episode_invariants_and_metrics(seed):
    env, rng = random_env(seed)
    env.reset()
    env.check_invariants()
    rewards, finished = [], []
    for _ in range(2000):
        out = env.step(rng.normal(size=env.N), rng.normal(size=(env.N, env.M)))
        env.check_invariants()
        rewards.append(out["reward"])
        finished += [r["bank"] for r in out["finished"]]
        obs = out["obs"]
        assert np.all((obs["machines"] >= 0) & (obs["machines"] <= 1))
        assert obs["job_mask"].sum() == len(obs["queue"])
        if out["terminated"]:
            break
    else:
        raise AssertionError("episode did not end")
    assert sorted(finished) == list(range(40))  # every job finished exactly once
    assert all(math.isfinite(r) for r in rewards)
    recs = [rec(env, b) for b in range(40)]
    m = env.metrics()
    assert m["finished"] == 40 and m["steps"] == len(rewards)
    assert m["avg_jct_min"] == pytest.approx(np.mean([r["jct"] for r in recs]) / 60)
    assert m["avg_fee"] == pytest.approx(np.mean([r["fee"] for r in recs]))
    assert m["avg_wait_min"] == pytest.approx(np.mean([r["start"] - r["arrival"] for r in recs]) / 60)
    assert m["avg_duration_min"] == pytest.approx(np.mean([r["duration"] for r in recs]) / 60)
    makespan = max(r["finish"] for r in recs)
    gpu_s = sum(env.gpu[b] / 100 * env.n_inst[b] * recs[b]["duration"] for b in range(40))
    assert m["gpu_util"] == pytest.approx(gpu_s / (4 * 8 * makespan))
    assert 0 < m["gpu_util"] <= 1
    assert m["makespan_h"] == pytest.approx(makespan / 3600)
    assert m["failed"] == sum(1 for e in env.log if e[1] == "fail")
    # arrivals are (submit - submit[0]) / load_scale
    assert [env.jobs[b].arrival for b in range(40)] == [s / 2.0 for s in env.submit]


def test_round_that_starts_nothing_forces_one_forward_iteration():
    # one 8-GPU machine; job 0 (4 GPUs) runs [0, 1000). Jobs 1 (8 GPUs) and 2 (4 GPUs) arrive at 0, job 3
    # at 50. The queue is [1, 2]; a round showing only job 1 (view hook) starts nothing, so the forward
    # takes one iteration although job 2 is feasible: job 3 joins at t = 50, then job 2 being feasible
    # stops the loop. Reward: -alpha * 1 * 8 / 1 = -0.8.
    jobs = [
        dict(submit=0, c=1, gpu=400, work=1000.0),
        dict(submit=0, c=1, gpu=800, work=100.0),
        dict(submit=0, c=1, gpu=400, work=100.0),
        dict(submit=50, c=1, gpu=400, work=100.0),
    ]
    env = make(jobs)
    out = act(env)
    assert out["obs"]["queue"] == [1, 2] and out["t"] == 0.0
    out = env.step(np.zeros(4), np.zeros((4, 1)), view=[0])
    assert out["placed"] == [] and out["failed"] == [1] and out["finished"] == []
    assert out["t"] == 50.0 and out["obs"]["queue"] == [1, 2, 3]
    assert out["reward"] == pytest.approx(-0.8)
    # without a start the speeds were not updated: only k = 0 so far
    assert len(speed_updates(env)) == 1
    env.check_invariants()
