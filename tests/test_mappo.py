"""MAPPO wiring for the DAS agent: history handling, decision-aware GAE, the critic's own parameters,
and a tiny training chunk of each placement head (finite metrics, parameters move)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.agents.das import DASAgentConfig
from jaxsched.agents.mappo import MAPPO, MAPPOConfig, MAPPOTransition, gae
from jaxsched.envs.gpu_cloud import GPUCloudConfig, GPUCloudEnv
from jaxsched.workloads.ddl import V100_MACHINE, drop_too_large, generate_pai_like

M = 2


@functools.cache
def setup(variant: str):
    env = GPUCloudEnv(
        GPUCloudConfig(n_machines=M, n_slots=4, queue_capacity=8, max_running=8, max_forward_events=2)
    )
    bank = generate_pai_like(jax.random.key(0), 400)
    caps = [np.full(M, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")]
    bank, _ = drop_too_large(bank, *caps)
    params = env.make_params(bank, episode_jobs=20)
    cfg = MAPPOConfig(
        agent=DASAgentConfig.preset(variant, hidden=16, heads=2, tau=3), num_envs=4, num_steps=16,
        total_updates=2, updates_per_chunk=2, update_epochs=2, num_minibatches=2, lr=1e-3,
        critic_hidden=(32,),
    )  # fmt: skip
    return MAPPO(cfg, env, params)



def assert_metrics_finite(metrics: dict) -> None:
    """Every training metric finite, except the episode metrics of an update in which no episode
    finished: those are NaN exactly there (`core.wrappers.episode_mean`)."""
    none = np.asarray(metrics["episodes"]) == 0
    assert np.isnan(np.asarray(metrics["episode_return"])[none]).all()
    for k, v in metrics.items():
        v = np.asarray(v, np.float64)
        assert np.all(np.isfinite(np.where(none & np.isnan(v), 0.0, v))), k

def test_history_pushes_decisions_and_clears_at_episode_end():
    m = setup("das")
    runner = jax.jit(m.init)(jax.random.key(0))
    obs = jax.tree.map(lambda x: x[0], runner.obs)
    hist = jax.tree.map(lambda x: x[0], runner.history)
    aff = jnp.ones((4, M))
    pushed = m.advance_history(hist, obs, aff, jnp.bool_(True), jnp.bool_(False))
    assert int(pushed.valid.sum()) == 1 and int(pushed.head) == 1
    np.testing.assert_array_equal(pushed.affinity[0], aff)
    kept = m.advance_history(pushed, obs, 2 * aff, jnp.bool_(False), jnp.bool_(False))
    assert int(kept.valid.sum()) == 1  # a non-decision call is not a decision
    cleared = m.advance_history(pushed, obs, aff, jnp.bool_(True), jnp.bool_(True))
    assert not cleared.valid.any()


def test_gae_does_not_discount_continuation_calls():
    # Two envs, three calls; env 1's middle call continues a forward (no decision).
    t, b = 3, 2
    zeros = jnp.zeros((t, b))
    traj = MAPPOTransition(
        obs=None, history=None, priority=None, affinity=None, log_prob=zeros,
        value=jnp.zeros((t, b)), reward=jnp.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]),
        decision=jnp.array([[True, True], [True, False], [True, True]]), done=jnp.zeros((t, b), bool),
        next_value=zeros,
    )  # fmt: skip
    adv, ret = gae(traj, 0.5, 1.0)
    # env 0: 1 reward two calls later, discounted twice: 0.25; env 1: one of those calls is a continuation.
    np.testing.assert_allclose(np.asarray(adv[0]), [0.25, 0.5])
    np.testing.assert_allclose(np.asarray(ret), np.asarray(adv))


@pytest.mark.parametrize("variant", ["da", "das", "dl2", "rifling"])
def test_training_chunk_runs_and_moves_parameters(variant):
    m = setup(variant)
    runner = jax.jit(m.init)(jax.random.key(1))
    runner2, metrics = jax.jit(m.train_chunk)(runner)
    assert_metrics_finite(metrics)
    moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), runner.params, runner2.params)
    assert any(jax.tree.leaves(moved["actor"])) and any(jax.tree.leaves(moved["critic"]))
    # z = 2: after two updates the target networks are the trained ones.
    same = jax.tree.map(lambda a, b: bool(jnp.all(a == b)), runner2.target, runner2.params)
    assert all(jax.tree.leaves(same))
    assert 0.0 < float(metrics["decision_frac"].mean()) <= 1.0


def test_critic_has_its_own_parameters_and_apply():
    m = setup("da")
    runner = jax.jit(m.init)(jax.random.key(2))
    obs = jax.tree.map(lambda x: x[0], runner.obs)
    v = m.critic.apply(runner.params["critic"], obs.global_state)
    assert v.shape == ()
    # The actor's parameters do not reach the value; the critic's do.
    g = jax.grad(lambda p: m.critic.apply(p["critic"], obs.global_state))(runner.params)
    assert all(float(jnp.abs(x).sum()) == 0.0 for x in jax.tree.leaves(g["actor"]))
    assert any(float(jnp.abs(x).sum()) > 0.0 for x in jax.tree.leaves(g["critic"]))


def test_greedy_episode_finishes_every_job():
    m = setup("das")
    runner = jax.jit(m.init)(jax.random.key(3))
    out = jax.jit(lambda k: m.run_episode(runner.params["actor"], m.env_params, k))(jax.random.key(4))
    assert int(out["finished"]) == 20 and np.isfinite(float(out["avg_jct_min"]))


# ---- learning: the trained agent against the best heuristic, the constant action and its own init ------
LEARN_SEEDS = 3
LEARN_EPISODES = 64


def _learning_setup():
    """The two-speed cluster, its held-out episode keys and every heuristic's mean JCT on them (plus the
    all-zero constant action: FIFO order, FirstFit placement)."""
    from tiny_gpu_cloud import two_speed_cluster

    from jaxsched.envs.gpu_cloud import GPUCloudAction
    from jaxsched.experiments.evaluate import evaluate_policies
    from jaxsched.policies.gpu_cloud import heuristic_policies

    env, train_params, test_params = two_speed_cluster()
    keys = jax.random.split(jax.random.key(99), LEARN_EPISODES)
    policies = heuristic_policies(env)
    n, m = env.config.n_slots, env.config.n_machines
    policies["constant"] = lambda p, obs, k: GPUCloudAction(jnp.zeros(n), jnp.zeros((n, m)))
    out = evaluate_policies(env, test_params, policies, keys)
    jct = {k: float(v["avg_jct_min"].mean()) for k, v in out.items()}
    return env, train_params, test_params, keys, jct


def _greedy_jct(m: MAPPO, actor_params, test_params, keys) -> np.ndarray:
    """`f32[seeds]`: mean greedy JCT (min) over the held-out episodes, per seed of `actor_params`."""
    per_seed = jax.vmap(lambda a: jax.vmap(lambda k: m.run_episode(a, test_params, k))(keys)["avg_jct_min"])
    return np.asarray(jax.jit(per_seed)(actor_params).mean(axis=1))


def train_against_heuristics(cfg: MAPPOConfig):
    """Train `cfg` from scratch on the two-speed cluster (`LEARN_SEEDS` seeds under vmap) and return
    `(best heuristic's name, its JCT, the constant action's JCT, untrained [S], trained [S])`, every JCT the
    mean greedy one over the held-out episodes (min)."""
    env, train_params, test_params, keys, jct = _learning_setup()
    best_name = min((k for k in jct if k != "constant"), key=jct.get)
    m = MAPPO(cfg, env, train_params)
    init = jax.jit(jax.vmap(m.init))(jax.random.split(jax.random.key(0), LEARN_SEEDS))
    untrained = _greedy_jct(m, init.params["actor"], test_params, keys)
    runner, metrics = jax.jit(jax.vmap(m.train_chunk))(init)
    assert_metrics_finite(metrics)
    trained = _greedy_jct(m, runner.params["actor"], test_params, keys)
    return best_name, jct[best_name], jct["constant"], untrained, trained


@pytest.mark.slow
def test_da_learns_machine_speeds_and_beats_every_heuristic():
    """DA (MLP placement, machine ids) trained from scratch by MAPPO for 100 updates (3 seeds under vmap,
    ~1 min on 2 CPU cores) on the two-speed cluster. Measured on 64 held-out episodes (mean JCT, min):
    trained 386 / 314 / 357; Tetris, the best heuristic, 399 (FIFO-LoadBalance 413, DRF-LoadBalance 421,
    FIFO-FirstFit 559 = the constant action); the untrained greedy network 507 / 573 / 559.
    Asserted: every seed below the best heuristic, their mean at least 8 % below it; every untrained seed
    and the constant action above it (the negative controls)."""
    cfg = MAPPOConfig(
        agent=DASAgentConfig.preset("da", hidden=32, heads=2, tau=4, machine_index=True), num_envs=16,
        num_steps=32, total_updates=100, updates_per_chunk=100, update_epochs=4, num_minibatches=4, lr=1e-3,
        critic_hidden=(64, 64), ent_coef=0.0,
    )  # fmt: skip
    best_name, best, constant, untrained, trained = train_against_heuristics(cfg)
    summary = (best_name, best, constant, untrained, trained)
    assert (untrained > best).all() and constant > best, summary
    assert (trained < best).all() and trained.mean() < 0.92 * best, summary
