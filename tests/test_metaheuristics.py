"""The meta-heuristic planners (MOSA, MALO) on a tiny GPU cloud: jittable, vmappable over episodes, never
worse on their own objective than the heuristic they start from, deterministic for a fixed key, and timed.

Compile time is CI time: each test compiles one program (searches in several episodes, or whole episodes
vmapped over keys) and runs it twice; searches are a few iterations of tiny populations; the bank is
made in numpy.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.envs.gpu_cloud.env import GPUCloudAction, GPUCloudConfig, GPUCloudEnv
from jaxsched.policies.gpu_cloud import make_heuristic
from jaxsched.policies.metaheuristics import (
    DEFAULT_POLICY,
    alo_shrink,
    as_planner,
    make_malo,
    make_mosa,
    rank_encode,
    run_planner_episode,
    time_per_decision,
)
from jaxsched.workloads.ddl import make_ddl_workload

EPISODE_JOBS = 20
BANK_JOBS = 60
MACHINE = dict(gpu=800, cpu=9600, mem=384 * 1024)
N_EPISODES = 4  # episodes a search test plans in
BUSY_STEPS = 8  # FIFO-LoadBalance decisions before the searched one: jobs wait, machines are partly used


@functools.cache
def setup():
    """`(env, params)`: 2 heterogeneous V100 machines, 4 visible slots, episodes of 20 jobs of a
    hand-made bank (numpy: no compile): bursty arrivals, 1–2 instances of ½–8 GPUs, all model types."""
    rng = np.random.default_rng(0)
    gpu = rng.choice([50, 100, 200, 400, 800], BANK_JOBS, p=[0.2, 0.3, 0.2, 0.2, 0.1])
    bank = make_ddl_workload(
        submit=np.cumsum(rng.choice([0, 0, 30, 120, 600, 1800], BANK_JOBS)),
        n_inst=rng.choice([1, 2], BANK_JOBS, p=[0.7, 0.3]),
        gpu=gpu,
        cpu=np.floor(gpu * rng.uniform(4.0, 12.0, BANK_JOBS)).astype(int),
        mem=np.floor(gpu / 100 * rng.uniform(16.0, 48.0, BANK_JOBS) * 1024).astype(int),
        work=rng.lognormal(7.5, 1.0, BANK_JOBS),
        model=rng.integers(0, 9, BANK_JOBS),
    )
    env = GPUCloudEnv(GPUCloudConfig(n_machines=2, n_slots=4, queue_capacity=8, max_running=6))
    params = env.make_params(bank, episode_jobs=EPISODE_JOBS, machine=MACHINE, perf=[1.2, 0.8])
    return env, params


PLANNERS = {
    "mosa": lambda env, p: make_mosa(env, p, iterations=6, chains=3, horizon=2),
    "malo": lambda env, p: make_malo(env, p, iterations=4, population=6, n_elite=2, horizon=2),
}


@pytest.mark.parametrize("name", list(PLANNERS))
def test_episode_under_vmap_finishes_every_job(name):
    """A whole episode per key, `vmap`ped over 2 keys in one jitted program: every job finishes, the
    metrics are finite, and the same keys give the same metrics."""
    env, params = setup()
    planner = PLANNERS[name](env, params)
    fn = jax.jit(jax.vmap(lambda k: run_planner_episode(env, params, planner, k)))
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    out = jax.device_get(fn(keys))
    assert (out["finished"] == EPISODE_JOBS).all(), out["finished"]
    assert (out["steps"] < int(params.max_steps)).all()
    for k, v in out.items():
        assert np.isfinite(v).all(), k
    assert (out["avg_jct_min"] >= out["avg_duration_min"] * (1 - 1e-5)).all()
    again = jax.device_get(fn(keys))
    for k in out:
        np.testing.assert_array_equal(out[k], again[k], err_msg=k)


@pytest.mark.parametrize("name", list(PLANNERS))
def test_search_never_worse_than_its_start_and_deterministic(name):
    """Under jit, after `BUSY_STEPS` heuristic decisions of several episodes: the chosen action scores at
    least its heuristic start on the planner's own objective (both re-scored independently, with the
    planner's lookahead key, and equal to the search's own scores); the rank encoding of the start makes
    the heuristic's decisions; a fixed key gives the same action."""
    env, params = setup()
    planner = PLANNERS[name](env, params)
    heuristic = make_heuristic(DEFAULT_POLICY)

    def one(key):
        k_reset, k_steps, k_plan = jax.random.split(key, 3)
        obs, state = env.reset(k_reset, params)

        def step(carry, k):  # the busy state: a few heuristic rounds in (one program with the search)
            obs, state = carry
            return env.step_env(k, state, heuristic(None, obs, k), params)[:2], None

        (obs, state), _ = jax.lax.scan(step, (obs, state), jax.random.split(k_steps, BUSY_STEPS))
        action, info = planner.search(obs, state, k_plan)
        raw = heuristic(None, obs, k_plan)
        cands = jax.tree.map(lambda *a: jnp.stack(a), raw, rank_encode(raw), action)
        rescored = jax.vmap(planner.objective, in_axes=(None, 0, None))(state, cands, info.eval_key)
        return action, info.init_score, info.best_score, rescored, obs.job_mask.sum()

    # lax.map, not vmap, over the episodes: a cheaper compile (vmap over envs: the episode test).
    fn = jax.jit(lambda keys: jax.lax.map(one, keys))
    keys = jax.random.split(jax.random.PRNGKey(7), N_EPISODES)
    action, init_score, best_score, rescored, visible = out = jax.device_get(fn(keys))
    assert visible.max() >= 2, visible  # some searched round has an order to choose
    assert isinstance(action, GPUCloudAction)
    assert action.priority.shape == (N_EPISODES, 4) and action.affinity.shape == (N_EPISODES, 4, 2)
    raw, start, chosen = rescored.T
    assert np.isfinite(rescored).all()
    np.testing.assert_allclose(start, raw, rtol=1e-5, atol=1e-6)  # same decisions as the heuristic
    np.testing.assert_allclose(init_score, start, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(best_score, chosen, rtol=1e-5, atol=1e-6)
    assert (chosen >= start - 1e-6).all(), (chosen, start)
    # Determinism: the same keys give the same actions and scores.
    jax.tree.map(np.testing.assert_array_equal, out, jax.device_get(fn(keys)))


def test_time_per_decision_is_positive():
    """`time_per_decision` (a heuristic as a planner: the meta-heuristics' searches compile in the other
    tests) is a positive float."""
    env, params = setup()
    policy = as_planner(make_heuristic("fifo_firstfit"))
    t = time_per_decision(env, params, policy, jax.random.PRNGKey(3), decisions=2, batch=2, repeats=2, skip=3)
    assert isinstance(t, float) and t > 0


def test_alo_shrink_schedule():
    """ALO's ratio: 1 in the first 10 % of the run, then 1 + 10^w·t/T with w = 2, 3, 4, 5, 6."""
    t = jnp.array([0.0, 10.0, 11.0, 50.0, 51.0, 76.0, 91.0, 96.0])
    want = [
        1.0,
        1.0,
        1 + 100 * 0.11,
        1 + 100 * 0.5,
        1 + 1e3 * 0.51,
        1 + 1e4 * 0.76,
        1 + 1e5 * 0.91,
        1 + 1e6 * 0.96,
    ]
    np.testing.assert_allclose(alo_shrink(t, 100), want, rtol=1e-6)
