"""The imitation warm start (agents.imitation), MAPPO's value normalisation and the machine-id features:
rank targets by hand, rank targets act exactly like their teacher, and a warm-started agent with machine
ids reproduces FIFO-FirstFit's schedules on held-out episodes."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_gpu_cloud import tiny_cluster

from jaxsched.agents.das import (
    DASActor,
    DASAgent,
    DASAgentConfig,
    empty_history,
    rank_targets,
    teacher_action,
    with_machine_index,
)
from jaxsched.agents.imitation import pretrain
from jaxsched.agents.mappo import MAPPO, MAPPOConfig
from jaxsched.agents.pg import update_value_stats, value_moments
from jaxsched.envs.gpu_cloud.env import GPUCloudAction
from jaxsched.experiments.evaluate import run_episode
from jaxsched.policies.gpu_cloud import make_heuristic
from jaxsched.systems.das.episodes import evaluate_on_episodes, seed_keys


def test_rank_targets_by_hand():
    got = rank_targets(jnp.array([3.0, 1.0, 2.0, 5.0]), jnp.array([True, True, True, False]))
    np.testing.assert_allclose(got, [2 / 3, -2 / 3, 0.0, 0.0], atol=1e-6)  # the padded 5 is ignored
    ties = rank_targets(jnp.array([1.0, 1.0, 0.0]), jnp.ones(3, bool))  # tie → the lower index first
    np.testing.assert_allclose(ties, [2 / 3, 0.0, -2 / 3], atol=1e-6)


def _episodes(env, params, policy, n=16):
    keys = jax.random.split(jax.random.key(7), n)
    return jax.jit(jax.vmap(lambda k: run_episode(env, params, policy, None, k)))(keys)


def test_rank_targets_act_like_their_teachers():
    """Three heuristics and their rank targets, 16 held-out episodes each, in one compiled program."""
    env, _, params = tiny_cluster()
    teachers = ("fifo_firstfit", "drf_loadbalance", "tetris")
    policies = {}
    for t in teachers:
        as_targets = teacher_action(t)
        policies[t] = make_heuristic(t)
        policies[f"{t} targets"] = lambda p, obs, k, f=as_targets: f(obs)
    starts = np.asarray(params.starts)[::60][:8]
    out = evaluate_on_episodes(env, params, policies, starts, seed_keys(7, 2, len(starts)))
    for t in teachers:
        assert out[t]["finished"].min() == 30
        chex.assert_trees_all_equal(out[t], out[f"{t} targets"])


def test_value_stats_are_a_debiased_ema():
    stats = jnp.zeros(3)
    mean, std = value_moments(stats)
    assert (float(mean), float(std)) == (0.0, 1.0)  # before the first update: identity
    t = jnp.array([-10.0, -30.0])
    mean, std = value_moments(update_value_stats(stats, t))
    np.testing.assert_allclose([mean, std], [-20.0, 10.0], rtol=1e-5)  # debiased: exact after one batch
    for _ in range(2000):
        stats = update_value_stats(stats, jnp.array([5.0, 5.0]))
    mean, std = value_moments(stats)
    np.testing.assert_allclose(mean, 5.0, rtol=1e-5)
    assert float(std) == pytest.approx(1e-2, rel=1e-3)  # the variance floor, never 0


def test_machine_ids_break_the_tie_between_identical_machines():
    ids = with_machine_index(jnp.zeros((2, 3, 5)))  # [batch, M, v]
    assert ids.shape == (2, 3, 5 + 1 + 3)
    np.testing.assert_allclose(ids[0, :, 5], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(ids[1, :, 6:], np.eye(3))
    env, params, _ = tiny_cluster()
    obs, _ = env.reset(jax.random.key(0), params)
    obs = obs.replace(machines=jnp.zeros_like(obs.machines))  # four machines in the same state
    history = empty_history(DASAgentConfig(), env.config.n_slots, env.config.n_machines)
    for machine_index in (False, True):
        actor = DASActor(DASAgentConfig.preset("da", hidden=16, heads=2, tau=2, machine_index=machine_index))
        pol = actor.apply(actor.init(jax.random.key(1), obs, history), obs, history)
        row = np.asarray(pol.aff_mu[0])
        assert (len(np.unique(row)) > 1) == machine_index, row


def _random_rwgp_actor(env, obs):
    """A DAS actor whose prior mean and GP are far from trivial (perturbed initial parameters)."""
    agent = DASAgentConfig.preset("das", hidden=16, heads=2, tau=4, machine_index=True)
    actor = DASActor(agent)
    history = empty_history(agent, env.config.n_slots, env.config.n_machines)
    params = jax.jit(actor.init)(jax.random.key(1), obs, history)  # eager, the RWGP init takes 30 s
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(2), len(leaves))
    noisy = [x + 0.3 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys, strict=True)]
    params = tree.unflatten(noisy)
    return actor, params, history


def test_greedy_rwgp_posterior_mean_is_its_prior_mean():
    """The history holds the affinities the policy acted with. Acting greedily (the means), every
    residual `Y − m(X)` is 0, so the GP posterior mean stays the prior mean; a sampled affinity moves it."""
    env, params, _ = tiny_cluster()
    obs, state = jax.jit(env.reset)(jax.random.key(0), params)
    actor, actor_params, history = _random_rwgp_actor(env, obs)
    mean = jax.jit(lambda o, h: actor.apply(actor_params, o, h).aff_mu)  # one compile for every call
    prior = lambda o, h: mean(o, h.clear())  # noqa: E731
    mu0 = mean(obs, history)  # no history yet: the prior
    noise = 0.3 * jax.random.normal(jax.random.key(3), mu0.shape)
    greedy = history.push(obs.jobs, obs.job_mask, obs.machines, mu0)
    sampled = history.push(obs.jobs, obs.job_mask, obs.machines, mu0 + noise)
    obs2, _, *_ = jax.jit(env.step)(jax.random.key(4), state, GPUCloudAction(jnp.zeros(4), mu0), params)
    rows = np.asarray(obs2.job_mask)
    assert rows.any()
    np.testing.assert_allclose(mean(obs2, greedy)[rows], prior(obs2, greedy)[rows], atol=1e-5)
    assert np.abs(mean(obs2, sampled) - prior(obs2, sampled))[rows].max() > 1e-2


def test_warm_start_reproduces_fifo_firstfit():
    """DA with machine ids after 30 imitation updates (half of them DAgger) schedules 32 held-out
    episodes exactly as FIFO-FirstFit does (its greedy action ranks jobs and machines the same way)."""
    env, train_params, test_params = tiny_cluster()
    agent = DASAgentConfig.preset("da", hidden=32, heads=2, tau=4, machine_index=True, std_min=0.1)
    cfg = MAPPOConfig(
        num_envs=16, num_steps=32, update_epochs=4, num_minibatches=4, critic_hidden=(64, 64),
        imitation_updates=30, imitation_dagger=0.5,
    )  # fmt: skip
    m = MAPPO(cfg, env, train_params, DASAgent.for_env(agent, env))
    runner, metrics = jax.jit(lambda k: pretrain(m, m.init(k)))(jax.random.key(0))
    loss = np.asarray(metrics["imitation_loss"])
    assert loss.shape == (30,) and loss[-1] < 0.2 * loss[0]
    chex.assert_trees_all_equal(runner.target, runner.params)  # rollouts start from the fitted policy
    keys = jax.random.split(jax.random.key(7), 32)
    agent = jax.jit(jax.vmap(lambda k: m.run_episode(runner.params["actor"], test_params, k)))(keys)
    teacher = _episodes(env, test_params, make_heuristic("fifo_firstfit"), n=32)
    same = np.isclose(np.asarray(agent["avg_jct_min"]), np.asarray(teacher["avg_jct_min"]), rtol=1e-5)
    assert same.mean() >= 0.9, same.mean()
