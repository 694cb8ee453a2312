"""The pieces PPO and MAPPO share (`agents.pg`) and PPO's loss, by hand: the clipped surrogate, the clipped
value loss, advantage normalisation (plain and weighted), the ratio metrics, minibatch epochs, the
per-update episode metrics — each against numbers worked out here or a float64 numpy version."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxsched
from jaxsched.agents.pg import (
    clipped_surrogate,
    clipped_value_loss,
    normalize_advantages,
    ratio_metrics,
    sgd_epochs,
    update_metrics,
)
from jaxsched.agents.ppo import PPO, PPOConfig, Transition


def test_clipped_surrogate_by_hand():
    """min(r·A, clip(r, 0.8, 1.2)·A): a ratio inside the band is kept; outside it, the pessimistic one of
    the two (for A > 0 the clipped ratio above the band, for A < 0 the raw one above it)."""
    ratio = jnp.array([0.5, 1.0, 1.5, 0.5, 1.5])
    adv = jnp.array([1.0, 2.0, 1.0, -1.0, -1.0])
    np.testing.assert_allclose(clipped_surrogate(ratio, adv, 0.2), [0.5, 2.0, 1.2, -0.8, -1.5], rtol=1e-6)


def test_clipped_value_loss_by_hand():
    """V = 1 from V_old = 2 clipped to 1.5 (ε = 0.5): max((1 − 0)², (1.5 − 0)²) = 2.25; V = 3 clipped to 2.5,
    target 2.5: max(0.25, 0) = 0.25; ½ of their mean = 0.625."""
    loss = clipped_value_loss(jnp.array([1.0, 3.0]), jnp.array([2.0, 2.0]), jnp.array([0.0, 2.5]), 0.5)
    assert float(loss) == pytest.approx(0.625, rel=1e-6)


def test_normalize_advantages_equals_numpy():
    """Plain: the moments over every sample. Weighted: over the samples of weight 1 only (the others keep a
    finite value); no weight at all leaves the advantages finite."""
    adv = np.array([3.0, -1.0, 10.0, 0.5, -7.0, 2.0])
    want = (adv - adv.mean()) / (adv.std() + 1e-8)
    np.testing.assert_allclose(normalize_advantages(jnp.asarray(adv, jnp.float32)), want, rtol=1e-5)
    w = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    sub = adv[w == 1]
    want_w = (adv - sub.mean()) / (sub.std() + 1e-8)
    got = np.asarray(normalize_advantages(jnp.asarray(adv, jnp.float32), jnp.asarray(w, jnp.float32)))
    np.testing.assert_allclose(got, want_w, rtol=1e-5)
    assert got[w == 1].mean() == pytest.approx(0.0, abs=1e-6)
    none = normalize_advantages(jnp.asarray(adv, jnp.float32), jnp.zeros(6))
    assert np.isfinite(np.asarray(none)).all()


def test_ratio_metrics_by_hand():
    """approx_kl = (r − 1) − log r (0 at r = 1, ≥ 0 elsewhere); clipped = |r − 1| > ε."""
    ratio = jnp.array([1.0, np.e, 0.9, 1.3])
    kl, clipped = ratio_metrics(ratio, 0.2)
    np.testing.assert_allclose(kl, [0.0, np.e - 2.0, -0.1 - np.log(0.9), 0.3 - np.log(1.3)], atol=1e-6)
    np.testing.assert_array_equal(clipped, [0.0, 1.0, 0.0, 1.0])


def test_sgd_epochs_visit_every_sample_once_an_epoch_in_a_new_order():
    """A loss of Σ params[minibatch indices] under SGD(1): after E epochs every parameter is −E exactly
    (each sample in one minibatch an epoch), each epoch's minibatches partition the samples, and the
    order is shuffled (differs between epochs, and is not the identity)."""
    n, epochs, minibatches = 12, 3, 4

    def loss(params, batch):
        return params[batch["idx"]].sum(), batch["idx"]

    params = jnp.zeros(n)
    opt = optax.sgd(1.0)
    (params, _), order = sgd_epochs(
        loss, opt, params, opt.init(params), {"idx": jnp.arange(n)}, jax.random.key(0), epochs, minibatches
    )
    np.testing.assert_array_equal(params, -float(epochs) * np.ones(n))
    order = np.asarray(order).reshape(epochs, n)  # [epochs, minibatches, n / minibatches]
    for e in range(epochs):
        assert sorted(order[e].tolist()) == list(range(n))
    assert not (order == np.arange(n)).all(axis=1).any()
    assert len({tuple(o) for o in order}) == epochs


def test_update_metrics_average_over_the_episodes_that_ended():
    """An episode's return and env metrics count only at the step it ended (`returned_episode`); the loss
    terms are averaged over epochs and minibatches; NaN when no episode ended."""
    done = jnp.array([[False, True], [False, True]])
    log = {
        "returned_episode": done,
        "episode_return": jnp.array([[9.0, 1.0], [9.0, 3.0]]),
        "episode_length": jnp.array([[7, 4], [7, 6]]),
        "episode_metrics": {"jct": jnp.array([[100.0, 10.0], [100.0, 20.0]])},
    }
    aux = {"actor_loss": jnp.array([[1.0, 2.0], [3.0, 6.0]])}
    m = update_metrics(aux, log, jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.int32(5))
    assert float(m["episode_return"]) == 2.0 and float(m["episode_length"]) == 5.0
    assert float(m["jct"]) == 15.0 and int(m["episodes"]) == 2 and float(m["actor_loss"]) == 3.0
    assert float(m["reward_per_step"]) == 2.5 and int(m["update"]) == 5
    none = update_metrics(aux, {**log, "returned_episode": jnp.zeros_like(done)}, jnp.zeros((2, 2)), 0)
    assert np.isnan(float(none["episode_return"]))


# ---- PPO's loss -----------------------------------------------------------------------------------------
class FixedNet:
    """A network whose logits `[A]` and value are its parameters, the same for every observation."""

    def __init__(self, n_actions: int = 3):
        self.n_actions = n_actions

    def init(self, key, obs):
        return {"logits": jnp.zeros(self.n_actions), "value": jnp.float32(1.0)}

    def apply(self, params, obs):
        b = jax.tree.leaves(obs)[0].shape[0]
        return jnp.broadcast_to(params["logits"], (b, self.n_actions)), jnp.full((b,), params["value"])

    def value(self, params, obs):
        return self.apply(params, obs)[1]


def test_ppo_loss_by_hand():
    """PPO's loss over four samples, against float64 numpy: ratio = π(a)/π_old(a) with invalid actions masked
    out of π, advantages normalised, −mean(min(rA, clip(r)A)) + c_v·½·mean(max(clipped squares))
    − c_e·mean entropy of the masked policy."""
    env, env_params = jaxsched.make("dbf-quick")
    cfg = PPOConfig(num_envs=2, num_steps=2, num_minibatches=1, normalize_obs=False, ent_coef=0.01,
                    vf_coef=0.5, clip_eps=0.2)  # fmt: skip
    ppo = PPO(cfg, env, env_params, network=FixedNet())
    logits = np.array([0.3, -0.2, 1.0])
    params = {"logits": jnp.asarray(logits, jnp.float32), "value": jnp.float32(1.0)}
    mask = np.array([[True, True, True], [True, False, True], [True, True, False], [True, True, True]])
    action = np.array([0, 2, 1, 2])
    old_log_prob = np.array([-1.5, -0.2, -0.6, -1.0])
    old_value = np.array([0.5, 1.1, 2.0, 1.0])
    adv = np.array([1.0, -0.5, 2.0, 0.25])
    targets = np.array([1.5, 0.0, 3.0, 1.2])
    batch = Transition(
        obs=jnp.zeros((4, 1)), mask=jnp.asarray(mask), action=jnp.asarray(action, jnp.int32),
        log_prob=jnp.asarray(old_log_prob, jnp.float32), value=jnp.asarray(old_value, jnp.float32),
        reward=jnp.zeros(4), terminated=jnp.zeros(4, bool), done=jnp.zeros(4, bool), next_value=jnp.zeros(4),
    )  # fmt: skip
    adv32, targets32 = jnp.asarray(adv, jnp.float32), jnp.asarray(targets, jnp.float32)
    total, aux = ppo.loss(params, ppo.config.hparams(), batch, adv32, targets32)

    # float64 by hand
    z = np.where(mask, logits, -np.inf)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ratio = p[np.arange(4), action] / np.exp(old_log_prob)
    a = (adv - adv.mean()) / (adv.std() + 1e-8)
    actor = -np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a).mean()
    v_clip = old_value + np.clip(1.0 - old_value, -0.2, 0.2)
    critic = 0.5 * np.maximum((1.0 - targets) ** 2, (v_clip - targets) ** 2).mean()
    entropy = -np.where(mask, p * np.log(np.where(mask, p, 1.0)), 0.0).sum(1).mean()
    np.testing.assert_allclose(aux["actor_loss"], actor, rtol=1e-5)
    np.testing.assert_allclose(aux["critic_loss"], critic, rtol=1e-5)
    np.testing.assert_allclose(aux["entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(total, actor + 0.5 * critic - 0.01 * entropy, rtol=1e-5)
    np.testing.assert_allclose(aux["clip_frac"], (np.abs(ratio - 1) > 0.2).mean(), rtol=1e-6)
    # the entropy bonus lowers the loss: a larger coefficient, a smaller total
    hp = ppo.config.hparams().replace(ent_coef=jnp.float32(0.1))
    bigger_bonus, _ = ppo.loss(params, hp, batch, adv32, targets32)
    np.testing.assert_allclose(bigger_bonus, total - 0.09 * entropy, rtol=1e-5)


def test_ppo_rollout_bootstraps_truncated_steps_and_not_terminated_ones():
    """A rollout's `next_value` is 0 after a termination and the pre-reset state's value (here the
    network's constant 1) after a truncation and elsewhere (4-job DBF episodes truncated after 8 decisions:
    some end first, some are cut)."""
    env, params = jaxsched.make("dbf-quick", episode_jobs=4)
    params = params.replace(max_steps=jnp.int32(8))
    cfg = PPOConfig(num_envs=4, num_steps=64, num_minibatches=1, normalize_obs=False)
    ppo = PPO(cfg, env, params, network=FixedNet(env.action_space(params).n))
    runner = ppo.init(jax.random.key(0))
    _, traj, _ = ppo.rollout(runner, jax.random.key(1))
    terminated, done = np.asarray(traj.terminated), np.asarray(traj.done)
    assert terminated.sum() >= 4 and (done & ~terminated).sum() >= 4  # both kinds of episode end
    np.testing.assert_array_equal(traj.next_value, np.where(terminated, 0.0, 1.0))


class FixedAuxNet(FixedNet):
    """`FixedNet` with an auxiliary task whose target is the first two features of `obs.vec`."""

    def aux_targets(self, obs):
        return obs.vec[..., :2]

    def aux_loss(self, params, obs, targets, valid):
        return jnp.float32(0.0), {}


def test_ppo_rollout_pairs_each_step_with_the_next_steps_auxiliary_target():
    """Step t's auxiliary target is what step t + 1 shows (the last step's: the observation the rollout
    ends on), valid only where the episode goes on."""
    env, params = jaxsched.make("dbf-quick", episode_jobs=4)
    cfg = PPOConfig(num_envs=4, num_steps=32, num_minibatches=1, normalize_obs=False)
    ppo = PPO(cfg, env, params, network=FixedAuxNet(env.action_space(params).n))
    runner, traj, _ = ppo.rollout(ppo.init(jax.random.key(0)), jax.random.key(1))
    vec, done = np.asarray(traj.obs.vec), np.asarray(traj.done)
    assert done.any() and (~done).any()
    nxt = np.concatenate([vec[1:, :, :2], np.asarray(runner.obs.vec)[None, :, :2]])
    np.testing.assert_array_equal(traj.aux_target, nxt)
    np.testing.assert_array_equal(traj.aux_valid, ~done)


def test_ppo_normalises_what_the_network_sees_and_updates_the_statistics_from_raw_observations():
    """With `normalize_obs`, the stored observation is `obs.vec` normalised by the statistics frozen for
    the rollout, and the statistics merge the raw vectors (the network's own inputs would drift)."""
    env, params = jaxsched.make("dbf-quick")
    cfg = PPOConfig(num_envs=4, num_steps=16, num_minibatches=1, normalize_obs=True)
    ppo = PPO(cfg, env, params, network=FixedNet(env.action_space(params).n))
    runner = ppo.init(jax.random.key(0))
    stats = runner.obs_stats.update(jnp.full((8, ppo.obs_dim), 3.0) + jnp.arange(8.0)[:, None])
    runner = runner.replace(obs_stats=stats)
    _, traj, log = ppo.rollout(runner, jax.random.key(1))
    raw = np.asarray(log["raw_vec"])
    assert raw.min() >= 0.0  # the env's features are non-negative; their normalised values are not
    np.testing.assert_allclose(traj.obs.vec, stats.normalize(jnp.asarray(raw)), rtol=1e-6)
    assert (np.asarray(traj.obs.vec) < 0).any()
