"""SchedInspector's accept/skip network (`nn.inspector`) on the HPC env: its policy puts mass only on the
base heuristic's proposal and Fwd, its features are the ones written down, an inspector that never skips
replays the base heuristic's episode exactly, and `agent.network: inspector` trains and evaluates through
the DBF system."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.agents.ppo import PPO, ObsStats
from jaxsched.envs.hpc.setup import REWARD_WEIGHTS, window_env
from jaxsched.experiments.evaluate import run_episode
from jaxsched.nn.inspector import InspectorActorCritic, inspector_features
from jaxsched.policies.hpc import make_priority_policy, random_valid_policy
from jaxsched.systems.dbf.config import AgentSection, DBFConfig, build_run
from jaxsched.workloads.lublin import LublinConfig, generate_bank


@pytest.fixture(scope="module")
def setup():
    env = window_env(window=8, tail=0, n_cores=32, queue_capacity=64)
    bank, starts, ends = generate_bank(jax.random.key(3), LublinConfig(n_nodes=32), 4, 96)
    params = env.make_params(bank, starts=starts, ends=ends, episode_jobs=64, w=REWARD_WEIGHTS)
    base = make_priority_policy(env, "sjf", backfill=True)
    net = InspectorActorCritic(base, env.fwd_action + 1, (16, 16))
    return env, params, base, net


def observations(env, params, n=64):
    """`n` observations of random valid play (a batch pytree) and their base proposals."""
    policy = random_valid_policy(env)

    def body(carry, key):
        obs, state = carry
        k1, k2 = jax.random.split(key)
        obs2, state, *_ = env.step(k2, state, policy(None, obs, k1), params)
        return (obs2, state), obs

    obs0, state = env.reset(jax.random.key(0), params)
    _, seen = jax.lax.scan(body, (obs0, state), jax.random.split(jax.random.key(1), n))
    return seen


def test_mass_only_on_the_proposal_and_fwd(setup):
    env, params, base, net = setup
    obs = observations(env, params)
    p = net.init(jax.random.key(0), jax.tree.map(lambda a: a[0], obs))
    logits, value = net.apply(p, obs)
    proposed = np.asarray(net.proposals(obs))
    probs = np.asarray(jax.nn.softmax(logits, axis=-1))
    fwd = env.fwd_action
    assert probs.shape == (obs.t.shape[0], fwd + 1) and value.shape == (obs.t.shape[0],)
    assert 0 < (proposed != fwd).sum() < len(proposed)  # both cases occur
    for i, a in enumerate(proposed):
        support = {int(a), fwd}
        np.testing.assert_allclose(probs[i, sorted(support)].sum(), 1.0, atol=1e-6)
        if a == fwd:
            assert probs[i, fwd] == pytest.approx(1.0)
        else:  # an untrained actor skips about half the time (its head starts near 0)
            assert 0.3 < probs[i, fwd] < 0.7
        want = base(None, jax.tree.map(lambda x, i=i: x[i], obs), None)
        assert int(want) == int(a)


def test_features_by_hand(setup):
    env, params, _, _ = setup
    obs = jax.tree.map(lambda a: a[5], observations(env, params, n=8))
    n, m = obs.sigma.shape[0], obs.cores.shape[0]
    slot = int(np.argmax(np.asarray(obs.cores) > 0))
    f = np.asarray(inspector_features(obs, jnp.int32(slot)))
    np.testing.assert_allclose(f[:5], np.asarray(obs.vec)[n + 5 * slot : n + 5 * slot + 5])
    assert f[5] == pytest.approx(float(np.mean(np.asarray(obs.sigma) == 0)))
    req, present = np.asarray(obs.req_time, float), np.asarray(obs.cores) > 0
    pressure = min(np.sum(np.where(present, 600.0 / np.maximum(req, 10), 0)) / (60 * m), 1.0)
    assert f[6] == pytest.approx(pressure, rel=1e-5)


def test_an_inspector_that_never_skips_is_its_base_heuristic(setup):
    """With the skip score pinned at −50 the greedy inspector takes every proposal: its episode's
    metrics equal the base heuristic's to the last bit (and pinned at +50 on one observation it skips)."""
    env, params, base, net = setup
    obs = observations(env, params, n=4)
    p = net.init(jax.random.key(0), jax.tree.map(lambda a: a[0], obs))
    head = p["params"]["actor"]["Dense_2"]

    def pinned(bias):
        h = {"kernel": jnp.zeros_like(head["kernel"]), "bias": jnp.full_like(head["bias"], bias)}
        return {"params": p["params"] | {"actor": p["params"]["actor"] | {"Dense_2": h}}}

    cfg = DBFConfig(agent=AgentSection(network="inspector"))
    greedy = PPO(cfg.ppo, env, None, net).policy(greedy=True)
    for key in jax.random.split(jax.random.key(7), 2):
        stats = ObsStats.create(obs.vec.shape[-1])
        got = jax.jit(lambda pp, k: run_episode(env, params, greedy, pp, k))((pinned(-50.0), stats), key)
        want = jax.jit(lambda k: run_episode(env, params, base, None, k))(key)
        for name in ("avg_wait", "avg_bsld", "utilization", "return"):
            assert float(got[name]) == float(want[name]), name
    logits, _ = net.apply(pinned(50.0), obs)
    proposed = np.asarray(net.proposals(obs))
    assert (np.asarray(jnp.argmax(logits, -1)) == env.fwd_action).all() and (proposed != env.fwd_action).any()


def test_dbf_system_trains_and_evaluates_an_inspector(tmp_path):
    from jaxsched.experiments.learner import train_learner
    from jaxsched.systems.dbf import SYSTEM as DBF
    from jaxsched.systems.dbf.train import AGENT, LEARNER

    cfg = DBFConfig(
        name="insp", num_seeds=1, out_dir=str(tmp_path),
        env=dataclasses.replace(
            DBFConfig().env, n_cores=32, window=8, tail=0, queue_capacity=64, episode_jobs=48
        ),
        workload=dataclasses.replace(
            DBFConfig().workload, train_episodes=4, test_episodes=2, jobs_per_episode=64
        ),
        agent=AgentSection(network="inspector", inspector_base="f1_easy"),
        ppo=dataclasses.replace(DBFConfig().ppo, hidden=(16,), num_envs=4, num_steps=16, num_minibatches=2,
                                total_updates=2, updates_per_chunk=1),
        eval=dataclasses.replace(DBFConfig().eval, episodes=2, baselines=("f1_easy",), baseline_window=8),
    )  # fmt: skip
    run_dir = train_learner(LEARNER, cfg, AGENT, progress=False)
    result = DBF.evaluate(cfg, run_dir / "checkpoints")
    assert set(result) == {"agent", "f1_easy"} and np.isfinite(result["agent"]["avg_wait"]["mean"])
    env, *_ = build_run(cfg)
    assert isinstance(cfg.agent.build(env, cfg.ppo), InspectorActorCritic)


def test_agent_section_errors_name_the_field():
    with pytest.raises(ValueError, match="agent.network must be one of mlp, inspector"):
        AgentSection(network="gnn")
    with pytest.raises(ValueError, match="agent.inspector_base: unknown heuristic 'sjf_bf'"):
        AgentSection(network="inspector", inspector_base="sjf_bf")
