"""The environment contract (`core/env.py`), one suite for every env: a new env adds a `Case` to `CASES` and
passes these, besides its own differential tests against a plain-Python reference simulator.

Checked per env, on auto-reset rollouts of its `random` heuristic (`policies.make_heuristic`):
- `reset` and `step` compile once for different params of the same shapes (`chex.assert_max_traces`);
- a `vmap`ped rollout equals the same rollouts one env at a time, and the same keys give the same bits;
- observations and actions lie in the env's spaces, and every float the env returns is finite;
- auto-reset: at a step that ends an episode, the returned observation and state are exactly
  `env.reset(split(key)[1], params)`'s, and `info["final_observation"]` is not that fresh observation;
- a bad static config is a `ValueError` naming the field;
- `Env()` opens on its embedded default workload (`default_params`), as a gymnax env does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsched
from jaxsched.core.spaces import contains, shape_structs
from jaxsched.envs import (
    DAGConfig,
    DAGEnv,
    DeferrableConfig,
    DeferrableEnv,
    GPUCloudConfig,
    GPUCloudEnv,
    GPULocalityConfig,
    GPULocalityEnv,
    HPCConfig,
    HPCEnv,
)
from jaxsched.policies import make_heuristic

N_ENVS, N_STEPS = 3, 60


@dataclass(frozen=True)
class Case:
    make: Callable[[int], tuple[Any, Any]]  # seed -> (env, params) of the same shapes for every seed
    bad_config: Callable[[], Any]  # builds an invalid static config
    bad_field: str  # the field its error must name


CASES = {
    "hpc": Case(
        lambda seed: jaxsched.make(
            "dbf-quick", n_cores=16, episode_jobs=6, episodes=3, queue_capacity=32, seed=seed
        ),  # fmt: skip
        lambda: HPCConfig(n_cores=0),
        "n_cores",
    ),
    "gpu_cloud": Case(
        lambda seed: jaxsched.make("das-quick", n_jobs=400, episode_jobs=12, max_forward_events=2, seed=seed),
        lambda: GPUCloudConfig(n_machines=0),
        "n_machines",
    ),
    "gpu_locality": Case(
        lambda seed: jaxsched.make("sced2-quick", episode_jobs=12, episodes=3, seed=seed),
        lambda: GPULocalityConfig(window=0),
        "window",
    ),
    "dag": Case(
        lambda seed: jaxsched.make(
            "dag-quick", n_executors=3, max_slots=4, episodes=3, episode_jobs=4, seed=seed
        ),  # fmt: skip
        lambda: DAGConfig(max_slots=0),
        "max_slots",
    ),
    "deferrable": Case(
        lambda seed: jaxsched.make("osdec-quick", horizon=12, episodes=3, seed=seed),
        lambda: DeferrableConfig(running_slots=0),
        "running_slots",
    ),
}


@functools.cache
def programs(name: str):
    """`(env, params, batched, single)` for a case: auto-reset rollouts of the random heuristic
    (`batched(keys [B], params)`, `single(key, params)`), each returning per step the key, action and
    `env.step`'s outputs."""
    env, params = CASES[name].make(0)
    policy = make_heuristic(env, "random")

    def single(key, params):
        key, k0 = jax.random.split(key)
        obs, state = env.reset(k0, params)

        def body(carry, k):
            obs, state = carry
            ka, ks = jax.random.split(k)
            action = policy(None, obs, ka)
            obs2, state2, reward, term, trunc, info = env.step(ks, state, action, params)
            out = {"key": jax.random.key_data(ks), "action": action, "obs": obs2, "state": state2,
                   "reward": reward, "terminated": term, "truncated": trunc,
                   "final_observation": info["final_observation"], "done": info["done"]}  # fmt: skip
            return (obs2, state2), out

        return jax.lax.scan(body, (obs, state), jax.random.split(key, N_STEPS))[1]

    return env, params, jax.jit(jax.vmap(single, (0, None))), jax.jit(single)


def _at(tree, *idx):
    return jax.tree.map(lambda a: a[idx], tree)


@pytest.mark.parametrize("name", CASES)
def test_reset_and_step_compile_once(name):
    env, params = CASES[name].make(0)
    policy = make_heuristic(env, "random")
    chex.clear_trace_counter()  # chex counts traces by function name, across envs

    @jax.jit
    @chex.assert_max_traces(n=1)
    def reset(key, params):
        return env.reset(key, params)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action, params):
        return env.step(key, state, action, params)

    for seed in (0, 1):  # other params of the same shapes reuse the programs
        p = params if seed == 0 else CASES[name].make(1)[1]
        key = jax.random.key(seed)
        for _ in range(2):
            key, k0, k1 = jax.random.split(key, 3)
            obs, state = reset(k0, p)
            for _ in range(3):
                k1, ka, ks = jax.random.split(k1, 3)
                obs, state, *_ = step(ks, state, policy(None, obs, ka), p)


@pytest.mark.parametrize("name", CASES)
def test_vmap_equals_a_loop_and_keys_fix_the_bits(name):
    _, params, batched, single = programs(name)
    keys = jax.random.split(jax.random.key(7), N_ENVS)
    got = jax.device_get(batched(keys, params))
    loop = jax.tree.map(lambda *x: np.stack(x), *[jax.device_get(single(k, params)) for k in keys])
    chex.assert_trees_all_close(got, loop, rtol=1e-6, atol=1e-5)
    chex.assert_trees_all_equal(got, jax.device_get(batched(keys, params)))
    other = jax.device_get(batched(jax.random.split(jax.random.key(8), N_ENVS), params))
    pairs = zip(jax.tree.leaves(got["action"]), jax.tree.leaves(other["action"]), strict=True)
    assert not all(np.array_equal(a, b) for a, b in pairs)
    assert got["done"].sum() >= N_ENVS  # episodes ended and auto-reset inside the batch


@pytest.mark.parametrize("name", CASES)
def test_spaces_hold_and_everything_is_finite(name):
    env, params, batched, _ = programs(name)
    out = batched(jax.random.split(jax.random.key(9), N_ENVS), params)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    flat = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), (out["obs"], out["action"]))  # [B·T, ...]
    inside = jax.vmap(lambda v, a: (contains(obs_space, v), contains(act_space, a)))(*flat)
    assert np.asarray(inside[0]).all() and np.asarray(inside[1]).all()
    for leaf in jax.tree.leaves((out["obs"], out["reward"], out["state"], out["final_observation"])):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.floating):
            assert np.isfinite(leaf).all()


def _same(a, b) -> bool:
    """Two arrays or pytrees of arrays hold the same values."""
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


@pytest.mark.parametrize("name", CASES)
def test_auto_reset_returns_exactly_a_fresh_reset(name):
    env, params, batched, _ = programs(name)
    out = jax.device_get(batched(jax.random.split(jax.random.key(11), N_ENVS), params))
    ends = np.argwhere(np.asarray(out["done"]))
    assert len(ends) >= N_ENVS
    for b, t in ends[:4]:
        key_reset = jax.random.split(jax.random.wrap_key_data(out["key"][b, t]))[1]
        fresh_obs, fresh_state = env.reset(key_reset, params)
        chex.assert_trees_all_equal(_at(out["obs"], b, t), jax.device_get(fresh_obs))
        chex.assert_trees_all_equal(_at(out["state"], b, t), jax.device_get(fresh_state))
        assert not _same(_at(out["final_observation"], b, t), jax.device_get(fresh_obs))


@pytest.mark.parametrize("name", CASES)
def test_a_bad_static_config_names_the_field(name):
    with pytest.raises(ValueError, match=CASES[name].bad_field):
        CASES[name].bad_config()


ENV_CLASSES = {"hpc": HPCEnv, "gpu_cloud": GPUCloudEnv, "gpu_locality": GPULocalityEnv, "dag": DAGEnv,
               "deferrable": DeferrableEnv}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_every_env_opens_on_its_embedded_default(name):
    """gymnax's contract: `Env()` with no config and no params resets on a small generated workload
    (built once per env object), and its observation lies in `observation_space(default_params)`."""
    env = ENV_CLASSES[name]()
    params = env.default_params()
    assert env.default_params() is params
    obs, _ = env.reset(jax.random.key(0))  # params=None: the defaults
    assert bool(contains(env.observation_space(params), obs))


@pytest.mark.parametrize("name", CASES)
def test_episode_pins_the_held_out_episode_it_names(name):
    """`env.episode(params, i)`, the one way evaluators address a test episode: the same under `jit` with a
    traced `i` as eagerly, another episode for another `i` (its first observation differs for one key),
    and two calls with one `i` reset alike."""
    env, params = CASES[name].make(0)
    key = jax.random.key(3)
    pinned = jax.jit(env.episode)(params, jnp.int32(1))
    chex.assert_trees_all_equal(jax.device_get(pinned), jax.device_get(env.episode(params, 1)))
    first = [jax.device_get(env.reset(key, env.episode(params, i))[0]) for i in (0, 1, 1)]
    assert not _same(first[0], first[1])
    assert _same(first[1], first[2])


# Small banks keep the build cheap; the spaces depend on the static config (sizes, windows), which these keep.
SMALL_BANKS = {"episodes": 2, "n_jobs": 2000}


@pytest.mark.parametrize("name", sorted(jaxsched.registered()))
def test_spaces_describe_every_field_of_every_registered_env(name):
    """`observation_space` and `action_space` are pytrees of spaces with exactly the structure, shapes and
    dtypes of a real `reset` / `step` output and of an action, for every name `jaxsched.make` opens."""
    spec = jaxsched.registered()[name]
    env, params = jaxsched.make(name, **{k: v for k, v in SMALL_BANKS.items() if k in spec.defaults})
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    key = jax.random.key(0)
    obs, state = jax.eval_shape(env.reset, key, params)
    chex.assert_trees_all_equal_shapes_and_dtypes(obs, shape_structs(obs_space))
    action = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shape_structs(act_space))
    obs2, *_ = jax.eval_shape(env.step, key, state, action, params)
    chex.assert_trees_all_equal_shapes_and_dtypes(obs2, shape_structs(obs_space))
    heuristic = jax.eval_shape(make_heuristic(env, "random"), params, obs, key)
    chex.assert_trees_all_equal_shapes_and_dtypes(heuristic, shape_structs(act_space))
