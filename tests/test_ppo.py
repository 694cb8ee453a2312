"""PPO: GAE by hand, masking, observation statistics, network wiring and injection, vmap over seeds, and
a tiny run that must beat every simple rule of its problem on held-out episodes."""

import chex
import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.agents.ppo import (
    MASKED_LOGIT,
    PPO,
    ObsStats,
    PPOConfig,
    Transition,
    gae,
    make_train,
    masked_logits,
)
from jaxsched.envs.hpc import HPCConfig, HPCEnv
from jaxsched.experiments.evaluate import evaluate_policies, run_episode
from jaxsched.nn.mlp import ActorCritic
from jaxsched.policies.hpc import heuristic_policies, random_valid_policy
from jaxsched.policies.scores import SCORES
from jaxsched.workloads.base import make_workload
from jaxsched.workloads.lublin import LublinConfig, generate_bank


def _traj(reward, value, next_value, terminated, truncated):
    col = lambda x, dt=jnp.float32: jnp.asarray(x, dt)[:, None]  # [T, B=1]
    term, trunc = col(terminated, bool), col(truncated, bool)
    zeros = col(np.zeros(len(reward)))
    return Transition(
        obs=zeros,
        mask=term,
        action=zeros.astype(jnp.int32),
        log_prob=zeros,
        value=col(value),
        reward=col(reward),
        terminated=term,
        done=term | trunc,
        next_value=jnp.where(term, 0.0, col(next_value)),
    )


@pytest.mark.parametrize(
    "terminated,truncated,expected",
    [
        # no episode end: δ_t = 1 + 0.5·0.5 − 0.5 = 0.75 each; A2 = 0.75, A1 = 0.75 + 0.25·0.75, A0 = ...
        ([0, 0, 0], [0, 0, 0], [0.75 + 0.25 * (0.75 + 0.25 * 0.75), 0.75 + 0.25 * 0.75, 0.75]),
        # terminal at t=1: no bootstrap there (δ1 = 1 − 0.5 = 0.5) and the trace stops
        ([0, 1, 0], [0, 0, 0], [0.75 + 0.25 * 0.5, 0.5, 0.75]),
        # truncated at t=1: bootstrap from the pre-reset state's value (2.0): δ1 = 1 + 0.5·2 − 0.5 = 1.5
        ([0, 0, 0], [0, 1, 0], [0.75 + 0.25 * 1.5, 1.5, 0.75]),
    ],
)
def test_gae_bootstraps_on_truncation_not_termination(terminated, truncated, expected):
    next_value = [0.5, 2.0 if truncated[1] else 0.5, 0.5]
    traj = _traj([1.0, 1.0, 1.0], [0.5, 0.5, 0.5], next_value, terminated, truncated)
    adv, ret = gae(traj, jnp.float32(0.5), jnp.float32(0.5))
    np.testing.assert_allclose(adv[:, 0], expected, rtol=1e-6)
    np.testing.assert_allclose(ret[:, 0], np.asarray(expected) + 0.5, rtol=1e-6)


def test_masked_logits_only_touch_invalid_actions():
    logits = jnp.array([0.3, -1.0, 2.0, 0.0])
    mask = jnp.array([True, False, True, False])
    out = masked_logits(logits, mask)
    np.testing.assert_allclose(out, np.float32([0.3, MASKED_LOGIT, 2.0, MASKED_LOGIT]))
    pi = distrax.Categorical(logits=out)
    draws = jax.vmap(lambda k: pi.sample(seed=k))(jax.random.split(jax.random.key(0), 500))
    assert set(np.unique(draws).tolist()) <= {0, 2}
    assert np.isfinite(float(pi.entropy())) and np.isfinite(float(pi.log_prob(0)))
    all_valid = masked_logits(logits, jnp.ones(4, bool))
    np.testing.assert_array_equal(all_valid, logits)


def test_obs_stats_merge_equals_numpy_over_all_batches():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (5, 7, 4)).astype(np.float32) for _ in range(3)]
    stats = ObsStats(jnp.zeros(4), jnp.ones(4), jnp.float32(0.0))
    for b in batches:
        stats = stats.update(jnp.asarray(b))
    allx = np.concatenate([b.reshape(-1, 4) for b in batches])
    np.testing.assert_allclose(stats.mean, allx.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, allx.var(0), rtol=1e-4)
    assert float(stats.count) == allx.shape[0]


@pytest.mark.parametrize("shared", [False, True])
def test_value_method_uses_the_critic(shared):
    net = ActorCritic(5, (16, 8), "tanh", shared)
    x = jax.random.normal(jax.random.key(0), (3, 10))
    params = net.init(jax.random.key(1), x)
    logits, value = net.apply(params, x)
    chex.assert_shape(logits, (3, 5))
    np.testing.assert_allclose(net.apply(params, x, method=ActorCritic.value), value, rtol=1e-6)
    if not shared:  # separate networks: the actor's parameters do not move the value
        bumped = jax.tree_util.tree_map_with_path(
            lambda p, a: a + 1.0 if "actor" in jax.tree_util.keystr(p) else a, params
        )
        np.testing.assert_allclose(net.apply(bumped, x)[1], value, rtol=1e-6)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="ppo.num_minibatches"):
        PPOConfig(num_envs=3, num_steps=3, num_minibatches=2)
    with pytest.raises(ValueError, match="ppo.updates_per_chunk"):
        PPOConfig(total_updates=10, updates_per_chunk=3)
    with pytest.raises(ValueError, match="ppo.gamma"):
        PPOConfig(gamma=1.5)


# ---- a tiny HPC problem ---------------------------------------------------------------------------
ENV = HPCEnv(HPCConfig(n_cores=16, window_head=3, window_tail=1, queue_capacity=32))
LUBLIN = LublinConfig(
    n_nodes=16, whole_sample=True, load_scale=3.0
)  # 16 nodes: scale arrivals for contention


@pytest.fixture(scope="module")
def problem():
    bank, s, e = generate_bank(jax.random.key(0), LUBLIN, 256, 100)
    train_params = ENV.make_params(bank, starts=s, ends=e, episode_jobs=32)
    tb, ts, te = generate_bank(jax.random.key(1), LUBLIN, 32, 100)  # held out: another key
    test_params = ENV.make_params(
        tb, starts=ts, ends=te, episode_jobs=32, runtime_norm=float(train_params.runtime_norm)
    )
    return train_params, test_params


def _seed(tree, i):
    """Seed `i` of a pytree with a leading seed axis."""
    return jax.tree.map(lambda a: a[i], tree)


TINY = PPOConfig(
    num_envs=4, num_steps=8, total_updates=2, updates_per_chunk=2, hidden=(8,), num_minibatches=2
)


@pytest.fixture(scope="module")
def tiny_single_run(problem):
    """`train(key, hparams)` of `TINY`, jitted once for the tests that compare batched runs with it."""
    return jax.jit(make_train(TINY, ENV, problem[0]))


def test_vmap_over_seeds_equals_separate_runs(problem, tiny_single_run):
    train = make_train(TINY, ENV, problem[0])
    keys = jax.random.split(jax.random.key(5), 2)
    batched, m = jax.jit(jax.vmap(train))(keys)
    for i in range(2):
        one, m1 = tiny_single_run(keys[i], TINY.hparams())
        chex.assert_trees_all_close(_seed(batched.params, i), one.params, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m["episode_return"][i], m1["episode_return"], rtol=1e-5)


def _two_class_bank(seed: int, episodes: int, jobs: int = 64):
    """`episodes` windows of `jobs` jobs for the 16-core `ENV`: half are 5-core jobs that run 200 s, half
    8-core jobs that run 20 s, and every job requests 200 s (the queue's limit), so `req_time` says nothing
    and only the width tells the classes apart. Poisson arrivals, mean gap 30 s (offered load ~1.9:
    the queue grows and the order matters); windows are 10⁵ s apart so no episode sees another's jobs.

    The simple rules are wrong here by construction: SJF sees equal requests (= FCFS), `smallest` and UNICEP
    prefer the long 5-core jobs, which leave a core idle (3 × 5 = 15), and EASY sees no hole a request of
    200 s fits in. Running the 8-core jobs first packs the machine exactly (2 × 8) and turns it over every
    20 s; that needs the width → run time relation, which only learning can find."""
    rng = np.random.default_rng(seed)
    n = episodes * jobs
    short = rng.random(n) < 0.5
    cores = np.where(short, 8, 5)
    run = np.where(short, 20, 200)
    gaps = rng.exponential(30.0, n).astype(np.int64)
    submit = np.cumsum(gaps) + np.repeat(np.arange(episodes), jobs) * 100_000
    starts = np.arange(episodes) * jobs
    return make_workload(submit, run, cores, req_time=np.full(n, 200)), starts, starts + jobs


@pytest.fixture(scope="module")
def two_class_problem():
    bank, s, e = _two_class_bank(0, 256)
    train_params = ENV.make_params(bank, starts=s, ends=e, episode_jobs=32)
    tb, ts, te = _two_class_bank(1, 64)  # held out: another generator seed
    test_params = ENV.make_params(
        tb, starts=ts, ends=te, episode_jobs=32, runtime_norm=float(train_params.runtime_norm)
    )
    return train_params, test_params


@pytest.mark.slow
def test_tiny_ppo_beats_every_heuristic_over_three_seeds(two_class_problem):
    """PPO, 200 updates of 32 envs × 64 decisions, γ = 0.95, 3 seeds under vmap (40–57 s on 2 CPU cores,
    evaluation included), greedy on 64 held-out episodes of the two-class problem (`_two_class_bank`).
    Measured returns: trained −35.9 / −35.9 / −33.8 (8.7 / 8.7 / 14.1 % above the bar); the best simple
    rule, WFP3 (± EASY: the same here), −39.4; first valid slot −40.1; FCFS = SJF (± EASY) = always slot 0
    −41.3; UNICEP −42.2; LCFS −45.7; last valid slot −47.1; random −47.7; `smallest` = F1 −47.8; always
    Fwd −2,600; untrained −2,385 / −45.5 / −42.6. Other seed triples (keys 7, 11) train to 8.9–15.8 %
    above the bar. Asserted: every seed at least 5 % above the best of all 14 heuristics (7 scores ± EASY),
    first and last valid slot and random; the untrained network and the constant actions below it.

    γ = 0.95, not 0.99: the reward divides the queue length and the total wait by their running maxima over
    the episode, and at γ = 0.99 the discounted objective and the episode's return part ways (training
    returns got worse after ~50 updates; seeds ended 24 % below to 1 % above the bar). On the Lublin
    problem the agent does not beat LCFS + EASY (−22.4) at γ 0.9–0.99 (−22.8 to −24.1): the rules there
    leave nothing to learn that they cannot see, so this test uses a problem that has something."""
    train_params, test_params = two_class_problem
    cfg = PPOConfig(
        num_envs=32, num_steps=64, total_updates=200, updates_per_chunk=200, hidden=(64, 64), lr=1e-3,
        anneal_lr=True, num_minibatches=4, gamma=0.95,
    )  # fmt: skip
    train = make_train(cfg, ENV, train_params)
    seeds = jax.random.split(jax.random.key(2), 3)
    runner, metrics = jax.jit(jax.vmap(train))(seeds)
    assert np.all(np.isfinite(np.asarray(metrics["actor_loss"])))
    keys = jax.random.split(jax.random.key(3), 64)
    fwd = ENV.fwd_action
    baselines = heuristic_policies(ENV, names=SCORES)
    baselines["first valid"] = lambda p, o, k: jnp.argmax(o.mask).astype(jnp.int32)
    baselines["last valid"] = lambda p, o, k: jnp.where(
        o.mask[:fwd].any(), fwd - 1 - jnp.argmax(o.mask[:fwd][::-1]), fwd
    ).astype(jnp.int32)
    baselines["random"] = random_valid_policy(ENV)
    controls = {f"always {a}": (lambda p, o, k, a=a: jnp.int32(a)) for a in (0, fwd)}
    out = evaluate_policies(ENV, test_params, {**baselines, **controls}, keys)
    ret = {k: float(v["return"].mean()) for k, v in out.items()}
    best = max(baselines, key=ret.get)
    bar = ret[best]
    ppo = PPO(cfg, ENV, train_params)

    def returns(runners):
        """`f32[seeds]`: mean greedy return over the held-out episodes."""
        episodes = jax.vmap(lambda pp, k: run_episode(ENV, test_params, ppo.policy(True), pp, k), (None, 0))
        per_seed = jax.vmap(lambda r: episodes((r.params, r.obs_stats), keys)["return"].mean())
        return np.asarray(jax.jit(per_seed)(runners))

    trained = returns(runner)
    untrained = returns(jax.vmap(ppo.init)(seeds))
    summary = (best, bar, ret, trained, untrained)
    assert (trained > bar + 0.05 * abs(bar)).all(), summary
    assert (untrained < bar).all() and all(ret[k] < bar for k in controls), summary


class SlotScorer:
    """A network defined here, not in the package: one shared linear score per window slot from that
    slot's five features (a permutation-equivariant policy), plus a linear value of the whole vector.
    It reaches PPO by injection (`make_train(..., network=)`) with the interface PPO documents."""

    def __init__(self, env):
        self.m = env.config.window_size  # window slots; the last action is Fwd

    def init(self, key, obs):
        d = obs.vec.shape[-1]
        k1, k2 = jax.random.split(key)
        w, v = 0.01 * jax.random.normal(k1, (5,)), 0.01 * jax.random.normal(k2, (d,))
        return {"w": w, "fwd": jnp.zeros(()), "v": v, "b": jnp.zeros(())}

    def apply(self, params, obs):
        slots = obs.vec[..., -5 * self.m :].reshape(obs.vec.shape[:-1] + (self.m, 5))
        scores = slots @ params["w"]
        fwd = jnp.broadcast_to(params["fwd"], scores.shape[:-1] + (1,))
        return jnp.concatenate([scores, fwd], axis=-1), self.value(params, obs)

    def value(self, params, obs):
        return obs.vec @ params["v"] + params["b"]


def test_a_network_defined_outside_the_package_trains_by_injection(problem):
    """PPO trains `SlotScorer` (6 + obs_dim parameters) with no change to the algorithm: its parameters
    are the injected network's, they move, and the trained greedy policy beats its own initialisation on
    held-out episodes (mean return over 2 seeds × 32 episodes)."""
    train_params, test_params = problem
    net = SlotScorer(ENV)
    cfg = PPOConfig(num_envs=16, num_steps=32, total_updates=60, updates_per_chunk=60, lr=3e-3,
                    num_minibatches=2)  # fmt: skip
    seeds = jax.random.split(jax.random.key(4), 2)
    runner, metrics = jax.jit(jax.vmap(make_train(cfg, ENV, train_params, network=net)))(seeds)
    assert set(runner.params) == {"w", "fwd", "v", "b"}
    ppo = PPO(cfg, ENV, train_params, network=net)
    init = jax.vmap(ppo.init)(seeds)
    assert not np.allclose(runner.params["w"], init.params["w"])
    keys = jax.random.split(jax.random.key(3), 32)

    def returns(r):
        episodes = jax.vmap(lambda pp, k: run_episode(ENV, test_params, ppo.policy(True), pp, k), (None, 0))
        return np.asarray(
            jax.jit(jax.vmap(lambda r: episodes((r.params, r.obs_stats), keys)["return"].mean()))(r)
        )

    trained, untrained = returns(runner), returns(init)
    assert (trained > untrained).all(), (trained, untrained)


def test_normalize_obs_needs_a_flat_observation():
    class StructuredSpace:  # e.g. a graph observation: no flat `vec`
        pass

    class GraphEnv:
        def action_space(self, params):
            return type("S", (), {"n": 3})()

        def observation_space(self, params):
            return StructuredSpace()

    with pytest.raises(ValueError, match="ppo.normalize_obs needs a flat observation vector"):
        PPO(PPOConfig(), GraphEnv(), None, network=SlotScorer(ENV))
    PPO(PPOConfig(normalize_obs=False), GraphEnv(), None, network=SlotScorer(ENV))  # fine without


def test_hyperparameter_grid_and_seeds_in_one_program(problem, tiny_single_run):
    """`vmap` over a learning-rate grid and, inside, over seeds: one compiled program, and each grid point
    trains exactly as a run with that config would."""
    train = make_train(TINY, ENV, problem[0])
    lrs = jnp.array([1e-4, 1e-2], jnp.float32)
    grid = jax.tree.map(lambda x: jnp.full((2,), x), TINY.hparams()).replace(lr=lrs)
    keys = jax.random.split(jax.random.key(5), 3)
    runners, _ = jax.jit(jax.vmap(jax.vmap(train, in_axes=(0, None)), in_axes=(None, 0)))(keys, grid)
    chex.assert_tree_shape_prefix(runners.params, (2, 3))
    for g, lr in enumerate([1e-4, 1e-2]):
        # the run a config with that learning rate makes (its hparams), in the one compiled single run
        one, _ = tiny_single_run(keys[1], PPOConfig(**{**TINY.to_dict(), "lr": lr}).hparams())
        chex.assert_trees_all_close(_seed(_seed(runners.params, g), 1), one.params, rtol=1e-5, atol=1e-6)
    small, large = (jax.tree.leaves(_seed(runners.params, g))[0] for g in range(2))
    assert not np.allclose(small, large)  # the grid points really differ
