"""`jaxsched.adapters.gymnax`: gymnax's `Environment` contract over every registered env, its steps equal
to the env's own, and a PureJaxRL-shaped PPO loop (written here, against gymnax's API only: flat
observations, `env.action_space(params).n`, `step -> (obs, state, reward, done, info)`) training on two
systems through it unchanged."""

from __future__ import annotations

from typing import NamedTuple

import chex
import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from test_env_contract import SMALL_BANKS  # cheap params for every registered name

import jaxsched
from jaxsched.adapters.gymnax import GymnaxEnv
from jaxsched.core.spaces import Box, contains, shape_structs


@pytest.mark.parametrize("name", sorted(jaxsched.registered()))
def test_every_registered_env_speaks_gymnax(name):
    """`reset` / `step` have gymnax's signatures and shapes (`jax.eval_shape`: nothing compiled): a flat
    `f32[D]` observation matching `observation_space`, an f32 reward, a bool `done`, gymnax's `discount`."""
    spec = jaxsched.registered()[name]
    env = GymnaxEnv.make(name, **{k: v for k, v in SMALL_BANKS.items() if k in spec.defaults})
    params, key = env.default_params, jax.random.key(0)
    space = env.observation_space(params)
    assert isinstance(space, Box) and len(space.shape) == 1 and space.dtype == jnp.float32
    obs, state = jax.eval_shape(env.reset, key, params)
    chex.assert_shape(obs, space.shape)
    action = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shape_structs(env.action_space(params)))
    obs2, _, reward, done, info = jax.eval_shape(env.step, key, state, action, params)
    chex.assert_shape(obs2, space.shape)
    chex.assert_shape(info["final_observation"], space.shape)
    assert reward.shape == done.shape == info["discount"].shape == ()
    assert (reward.dtype, done.dtype, obs2.dtype) == (jnp.float32, jnp.bool_, jnp.float32)


def _flat(obs) -> np.ndarray:
    """The flat observation built independently: numpy, every field raveled in pytree order, as f32."""
    return np.concatenate([np.ravel(np.asarray(x, np.float32)) for x in jax.tree.leaves(obs)])


def test_the_adapters_steps_are_the_envs_own():
    """Same keys, same actions: the adapter's observations are the env's, flattened; its reward is the env's;
    `done` is terminated or truncated (16-job episodes end; with `max_steps` 12 they are cut short); the
    flat observation stays inside `observation_space`."""
    native, params = jaxsched.make("dbf-quick", episode_jobs=16)
    env = GymnaxEnv(native, params)
    assert env.num_actions == native.action_space(params).n and env.default_params is params
    step, nstep = jax.jit(env.step), jax.jit(native.step)
    space = env.observation_space(params)
    ends = {"terminated": 0, "truncated": 0}
    for p in (params, params.replace(max_steps=jnp.int32(12))):
        key = jax.random.key(1)
        obs, state = jax.jit(env.reset)(key, p)
        nobs, nstate = native.reset(key, p)
        np.testing.assert_array_equal(obs, _flat(nobs))
        for i in range(150):
            k = jax.random.key(100 + i)
            action = jnp.argmax(nobs.mask).astype(jnp.int32)  # the first valid slot
            obs, state, reward, done, info = step(k, state, action, p)
            nobs, nstate, nreward, term, trunc, _ = nstep(k, nstate, action, p)
            np.testing.assert_array_equal(obs, _flat(nobs))
            assert float(reward) == float(nreward) and bool(done) == bool(term | trunc)
            assert float(info["discount"]) == (0.0 if bool(term) else 1.0)
            assert bool(contains(space, obs))
            ends["terminated"] += int(term)
            ends["truncated"] += int(trunc)
    assert min(ends.values()) >= 1, ends  # both kinds of end seen, and the adapter auto-reset with the env
    with pytest.raises(AttributeError, match="num_actions needs a Discrete"):
        _ = GymnaxEnv.make("osdec-quick").num_actions


# ---- a PureJaxRL-shaped PPO, written against gymnax's API only --------------------------------------------
class ActorCritic(nn.Module):
    n_actions: int

    @nn.compact
    def __call__(self, x):
        h = nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x))))
        v = nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x))))
        return distrax.Categorical(logits=nn.Dense(self.n_actions)(h)), jnp.squeeze(nn.Dense(1)(v), -1)


class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array


NUM_ENVS, NUM_STEPS, UPDATES, EPOCHS, MINIBATCHES = 8, 32, 6, 2, 2


def make_train(env, env_params):
    """PureJaxRL's `make_train`, shrunk: `train(key) -> (params, [UPDATES] mean reward, [UPDATES] loss)`."""
    network = ActorCritic(env.action_space(env_params).n)
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(3e-4))

    def train(key):
        key, k_init, k_reset = jax.random.split(key, 3)
        params = network.init(k_init, jnp.zeros(env.observation_space(env_params).shape))
        opt = tx.init(params)
        obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, NUM_ENVS), env_params)

        def update(carry, _):
            params, opt, state, obs, key = carry

            def env_step(c, _):
                state, obs, key = c
                key, k_act, k_step = jax.random.split(key, 3)
                pi, value = network.apply(params, obs)
                action = pi.sample(seed=k_act)
                keys = jax.random.split(k_step, NUM_ENVS)
                obs2, state2, reward, done, _ = jax.vmap(env.step, (0, 0, 0, None))(
                    keys, state, action, env_params
                )
                return (state2, obs2, key), Transition(done, action, value, reward, pi.log_prob(action), obs)

            (state, obs, key), traj = jax.lax.scan(env_step, (state, obs, key), None, NUM_STEPS)
            _, last_value = network.apply(params, obs)

            def gae(c, t):
                adv, next_value = c
                delta = t.reward + 0.99 * next_value * (1 - t.done) - t.value
                adv = delta + 0.99 * 0.95 * (1 - t.done) * adv
                return (adv, t.value), adv

            _, advantages = jax.lax.scan(gae, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
            targets = advantages + traj.value

            def loss_fn(p, batch):
                t, adv, target = batch
                pi, value = network.apply(p, t.obs)
                ratio = jnp.exp(pi.log_prob(t.action) - t.log_prob)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                actor = -jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv).mean()
                return actor + 0.5 * ((value - target) ** 2).mean() - 0.01 * pi.entropy().mean()

            def epoch(c, _):
                params, opt, key = c
                key, k_perm = jax.random.split(key)
                batch = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), (traj, advantages, targets))
                perm = jax.random.permutation(k_perm, NUM_ENVS * NUM_STEPS)
                minis = jax.tree.map(lambda x: x[perm].reshape((MINIBATCHES, -1) + x.shape[1:]), batch)

                def sgd(c, mb):
                    params, opt = c
                    loss, grads = jax.value_and_grad(loss_fn)(params, mb)
                    updates, opt = tx.update(grads, opt)
                    return (optax.apply_updates(params, updates), opt), loss

                (params, opt), losses = jax.lax.scan(sgd, (params, opt), minis)
                return (params, opt, key), losses.mean()

            (params, opt, key), losses = jax.lax.scan(epoch, (params, opt, key), None, EPOCHS)
            return (params, opt, state, obs, key), (traj.reward.mean(), losses.mean())

        (params, *_), (rewards, losses) = jax.lax.scan(update, (params, opt, state, obs, key), None, UPDATES)
        return params, rewards, losses

    return train


@pytest.mark.parametrize("name", ["dbf-quick", "sced2-quick"])
def test_a_purejaxrl_shaped_ppo_trains_through_the_adapter(name):
    """The loop above, unchanged, on two systems: it compiles and runs, its losses and rewards are finite,
    every parameter moves, and two runs with one key are identical (the adapter adds no hidden state)."""
    env = GymnaxEnv.make(name)
    train = jax.jit(make_train(env, env.default_params))
    params, rewards, losses = train(jax.random.key(0))
    chex.assert_shape((rewards, losses), (UPDATES,))
    assert np.isfinite(np.asarray(rewards)).all() and np.isfinite(np.asarray(losses)).all()
    init = ActorCritic(env.num_actions).init(
        jax.random.split(jax.random.key(0), 3)[1], jnp.zeros(env.observation_space().shape)
    )
    moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), params, init)
    assert all(jax.tree.leaves(moved))
    chex.assert_trees_all_equal(params, train(jax.random.key(0))[0])
