"""The GPU-cloud heuristics (DAS paper §5.1.5) on hand-made observations, through the env's placement on
a tiny cluster, under jit and vmap, and end to end with `evaluate_policies`.

Three V100-like machines (8 GPUs = 800, 96 cores = 9600, 64 GiB = 65536 MiB) unless said otherwise; the
expected orders and scores are worked out by hand in each test.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.envs.gpu_cloud.env import GPUCloudAction, GPUCloudConfig, GPUCloudEnv, GPUCloudObs
from jaxsched.experiments.evaluate import evaluate_policies
from jaxsched.policies.gpu_cloud import (
    HEURISTICS,
    drf_priority,
    fifo_priority,
    firstfit_affinity,
    heuristic_policies,
    loadbalance_affinity,
    make_heuristic,
    random_policy,
    tetris_scores,
)
from jaxsched.workloads.ddl import PAILikeConfig, drop_too_large, generate_pai_like, make_ddl_workload

KEY0 = jax.random.PRNGKey(0)
CAP = (800, 9600, 65536)


def make_obs(n_inst, demand, arrival_rank=None, free=None, n_machines=3) -> GPUCloudObs:
    """A hand-made observation: the raw fields the heuristics read; the learned features are zeros."""
    n_inst = np.asarray(n_inst, np.int32)
    n = n_inst.shape[0]
    cap = np.tile(np.asarray(CAP, np.int32), (n_machines, 1))
    free = cap if free is None else np.asarray(free, np.int32)
    return GPUCloudObs(
        jobs=jnp.zeros((n, 5), jnp.float32),
        job_mask=jnp.asarray(n_inst > 0),
        machines=jnp.zeros((n_machines, 5), jnp.float32),
        global_state=jnp.zeros((n * 6 + n_machines * 5 + 4,), jnp.float32),
        n_inst=jnp.asarray(n_inst),
        demand=jnp.asarray(np.asarray(demand, np.int32).reshape(n, 3)),
        arrival_rank=jnp.asarray(np.arange(n) if arrival_rank is None else arrival_rank, jnp.int32),
        free=jnp.asarray(free),
        cap=jnp.asarray(cap),
        t=jnp.float32(0.0),
        decision=jnp.bool_(True),
    )


def order(x) -> list[int]:
    """Indices in descending order of `x`, ties to the lower index (the env's rule)."""
    return np.argsort(-np.asarray(x), kind="stable").tolist()


# ---- the rules on hand-made observations ----------------------------------------------------------------
def test_fifo_orders_by_arrival():
    obs = make_obs([1, 1, 1, 1], [[100, 0, 0]] * 4, arrival_rank=[5, 2, 9, 0])
    assert order(fifo_priority(obs)) == [3, 1, 0, 2]  # ranks 0, 2, 5, 9
    policy = make_heuristic("fifo_firstfit")
    assert order(policy(None, obs, KEY0).priority) == [3, 1, 0, 2]


def test_drf_orders_by_dominant_share():
    # cluster totals: 2400 GPU, 28800 CPU, 196608 MiB
    #   job 0: 1 x (800, 100, 0):      GPU 800/2400 = 1/3 (dominant)
    #   job 1: 4 x (100, 4800, 0):     CPU 19200/28800 = 2/3 (dominant; GPU 1/6)
    #   job 2: 2 x (100, 100, 16384):  memory 32768/196608 = 1/6 (dominant; GPU 1/12)
    #   job 3: 1 x (50, 0, 0):         GPU 50/2400 = 1/48
    # smallest dominant share first: 3, 2, 0, 1
    obs = make_obs([1, 4, 2, 1], [[800, 100, 0], [100, 4800, 0], [100, 100, 16384], [50, 0, 0]])
    np.testing.assert_allclose(drf_priority(obs), [-1 / 3, -2 / 3, -1 / 6, -1 / 48], rtol=1e-6)
    assert order(drf_priority(obs)) == [3, 2, 0, 1]
    assert order(make_heuristic("drf_loadbalance")(None, obs, KEY0).priority) == [3, 2, 0, 1]


def test_firstfit_ranks_machine_zero_first():
    obs = make_obs([1, 3], [[100, 0, 0], [400, 0, 0]], free=[[0, 9600, 65536], [800] + list(CAP[1:]), CAP])
    aff = np.asarray(firstfit_affinity(obs))
    assert aff.shape == (2, 3) and all(order(row) == [0, 1, 2] for row in aff)  # whatever is free


def test_loadbalance_prefers_the_least_used_machine():
    # used fractions (GPU, CPU, memory): machine 0 (.5, .5, .5) -> mean .5; machine 1 (.1, .1, .1) -> .1;
    # machine 2 (.25, .25, .4) -> .3. Least used first: 1, 2, 0.
    free = [[400, 4800, 32768], [720, 8640, 58982], [600, 7200, 39322]]
    obs = make_obs([1, 2], [[100, 0, 0], [400, 100, 0]], free=free)
    aff = np.asarray(loadbalance_affinity(obs))
    used = 1 - np.asarray(free) / np.asarray(CAP)
    np.testing.assert_allclose(aff, np.tile(-used.mean(1), (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(aff[0], [-0.5, -0.1, -0.3], atol=1e-4)
    assert all(order(row) == [1, 2, 0] for row in aff)


def test_tetris_picks_the_best_aligned_machine():
    # free fractions (GPU, CPU, memory): m0 (1, .1, 1), m1 (.5, 1, .5), m2 (.125, 1, 1)
    free = [[800, 960, 65536], [400, 9600, 32768], [100, 9600, 65536]]
    # score(job, m) = Σ_r demand_r / cap_r * free_r / cap_r
    #   A (400, 4800, 0) = (.5, .5, 0):       m0 .55, m1 .75, m2 .5625   -> m1; fits m1: priority .75
    #   B (100, 0, 32768) = (.125, 0, .5):    m0 .625, m1 .3125, m2 .515625 -> m0; priority .625
    #   C (800, 100, 0) = (1, 1/96, 0):       m0 1 + .1/96 = 1.0010417, m1 .5104, m2 .1354; fits only m0
    #   D (800, 9600, 0):                     fits nowhere (m0 has 960 CPU): priority -1
    #   E (200, 1000, 0) = (.25, .1041667, 0): m0 .2604 but m0's 960 CPU < 1000: no fit; m1 .2291667
    #                                          fits; m2 has 100 GPU < 200: no fit -> priority .2291667
    demand = [[400, 4800, 0], [100, 0, 32768], [800, 100, 0], [800, 9600, 0], [200, 1000, 0]]
    obs = make_obs([1] * 5, demand, free=free)
    scores = np.asarray(tetris_scores(obs))
    expected = [
        [0.55, 0.75, 0.5625],
        [0.625, 0.3125, 0.515625],
        [1 + 0.1 / 96, 0.5 + 1 / 96, 0.125 + 1 / 96],
        [1 + 0.1, 0.5 + 1, 0.125 + 1],
        [0.25 + 0.1 / 9.6, 0.125 + 1 / 9.6, 0.03125 + 1 / 9.6],
    ]
    np.testing.assert_allclose(scores, expected, rtol=1e-5)
    action = make_heuristic("tetris")(None, obs, KEY0)
    np.testing.assert_allclose(action.priority, [0.75, 0.625, 1 + 0.1 / 96, -1.0, 0.125 + 1 / 9.6], rtol=1e-5)
    assert order(action.priority) == [2, 0, 1, 4, 3]
    np.testing.assert_allclose(action.affinity, scores)
    # each job's machines in score order (the env skips those where no instance fits: E's m0)
    assert [order(row)[0] for row in np.asarray(action.affinity)] == [1, 0, 0, 1, 0]


def test_unknown_heuristic_is_rejected():
    with pytest.raises(ValueError, match="unknown heuristic"):
        make_heuristic("sjf_firstfit")
    assert set(heuristic_policies(None)) == set(HEURISTICS)
    assert make_heuristic("random") is random_policy


@pytest.mark.parametrize("name", [*HEURISTICS, "random"])
def test_jit_and_vmap(name):
    policy = make_heuristic(name)
    a = make_obs([1, 4, 2, 0], [[800, 100, 0], [100, 4800, 0], [100, 100, 16384], [0, 0, 0]], [3, 1, 2, -1])
    b = make_obs([2, 1, 1, 1], [[400, 0, 0], [50, 9600, 0], [800, 0, 1], [100, 0, 0]], [0, 1, 2, 3],
                 free=[[400, 4800, 32768], [720, 8640, 58982], [0, 0, 0]])  # fmt: skip
    keys = jax.random.split(KEY0, 2)
    eager = [policy(None, o, k) for o, k in zip((a, b), keys, strict=True)]
    jitted = jax.jit(policy)
    for o, k, e in zip((a, b), keys, eager, strict=True):
        got = jitted(None, o, k)
        np.testing.assert_allclose(got.priority, e.priority, rtol=1e-6)
        np.testing.assert_allclose(got.affinity, e.affinity, rtol=1e-6)
    batch = jax.tree.map(lambda *x: jnp.stack(x), a, b)
    got = jax.jit(jax.vmap(policy, in_axes=(None, 0, 0)))(None, batch, keys)
    assert got.priority.shape == (2, 4) and got.affinity.shape == (2, 4, 3)
    for i, e in enumerate(eager):
        np.testing.assert_allclose(got.priority[i], e.priority, rtol=1e-6)
        np.testing.assert_allclose(got.affinity[i], e.affinity, rtol=1e-6)


# ---- through the env's placement ------------------------------------------------------------------------
TINY = GPUCloudConfig(n_machines=3, n_slots=4, queue_capacity=4, max_running=6)


@functools.cache
def tiny_env():
    env = GPUCloudEnv(TINY)
    return env, jax.jit(env.reset), jax.jit(env.step_env)


def placements(name: str) -> list[list[int]]:
    """Three jobs submitted at t = 0, no CPU or memory: A (1 x 4 GPUs, long), B (1 x 2 GPUs, long),
    C (3 x 4 GPUs). The env admits one arrival per round here (each is feasible on arrival), so the rounds
    place A, then B, then C. Returns each job's instances per machine."""
    env, reset, step = tiny_env()
    bank = make_ddl_workload(
        submit=[0, 0, 0], n_inst=[1, 1, 3], gpu=[400, 200, 400], cpu=[0, 0, 0], mem=[0, 0, 0],
        work=[1e5, 1e5, 100.0],
    )  # fmt: skip
    params = env.make_params(bank, episode_jobs=3, machine=dict(gpu=800, cpu=9600, mem=65536), fluct_std=0.0)
    policy = make_heuristic(name)
    obs, state = reset(KEY0, params)
    allocs = []
    for _ in range(3):
        obs, state, _, _, _, info = step(KEY0, state, policy(None, obs, KEY0), params)
        (slot,) = np.flatnonzero(np.asarray(info["placed_job"]) >= 0)
        allocs.append(np.asarray(info["placed_alloc"])[slot].tolist())
    return allocs


def test_firstfit_fills_machine_zero_first():
    # A -> machine 0 (4 GPUs left); B -> machine 0 (2 left); C: machine 0 fits no 4-GPU instance,
    # machine 1 takes 2, machine 2 the third.
    assert placements("fifo_firstfit") == [[1, 0, 0], [1, 0, 0], [0, 2, 1]]


def test_loadbalance_spreads_over_the_least_used_machines():
    # A: all machines idle, tie -> machine 0. B: machine 0 is 1/6 used (mean of GPU 1/2, CPU 0, memory 0),
    # 1 and 2 idle -> machine 1. C: machine 2 (idle) first takes 2 instances, then machine 1 (1/12 used:
    # GPU 1/4) before machine 0 (1/6) takes the third.
    assert placements("fifo_loadbalance") == [[1, 0, 0], [0, 1, 0], [0, 1, 2]]


# ---- end to end -------------------------------------------------------------------------------------------
def test_evaluate_policies_finishes_every_episode():
    """All five heuristics and the random policy, 3 episodes of 12 PAI-like jobs on 2 machines: every
    episode ends with every job finished and finite metrics."""
    env = GPUCloudEnv(GPUCloudConfig(n_machines=2, n_slots=4, queue_capacity=8, max_running=6))
    machine = dict(gpu=800, cpu=9600, mem=384 * 1024)
    bank = generate_pai_like(jax.random.PRNGKey(1), 120, PAILikeConfig(mean_interarrival_s=3000.0))
    bank, _ = drop_too_large(bank, *(np.full(2, machine[r]) for r in ("gpu", "cpu", "mem")))
    params = env.make_params(bank, episode_jobs=12, machine=machine)
    policies = dict(heuristic_policies(env), random=random_policy)
    out = evaluate_policies(env, params, policies, jax.random.split(jax.random.PRNGKey(2), 3))
    assert set(out) == {*HEURISTICS, "random"}
    for name, m in out.items():
        assert (m["finished"] == 12).all(), (name, m["finished"])
        assert (m["steps"] < int(params.max_steps)).all(), name
        for k, v in m.items():
            assert np.isfinite(v).all(), (name, k)
        assert (m["avg_jct_min"] >= m["avg_duration_min"] * (1 - 1e-5)).all(), name
        assert (m["avg_fee"] > 0).all() and ((m["gpu_util"] > 0) & (m["gpu_util"] <= 1 + 1e-5)).all(), name
    assert len({tuple(m["avg_jct_min"].tolist()) for m in out.values()}) > 1  # the policies matter


def test_actions_are_gpu_cloud_actions():
    obs = make_obs([1], [[100, 0, 0]])
    for name in [*HEURISTICS, "random"]:
        a = make_heuristic(name)(None, obs, KEY0)
        assert isinstance(a, GPUCloudAction) and a.priority.shape == (1,) and a.affinity.shape == (1, 3)
