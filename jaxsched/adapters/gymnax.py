"""gymnax's `Environment` contract over any jaxsched env, so a gymnax-style (PureJaxRL) loop runs unchanged.

gymnax's contract, which this follows without importing gymnax:

    env = GymnaxEnv(jaxsched.make("dbf-quick")[0])     # or GymnaxEnv.make("dbf-quick")
    params = env.default_params                         # a property, as in gymnax
    obs, state = env.reset(key, params)                 # obs: f32[D], every field flattened
    obs, state, reward, done, info = env.step(key, state, action, params)   # auto-resets on done
    env.observation_space(params).shape, env.action_space(params).n, env.num_actions

What differs from jaxsched's own contract, and where it went:
- `step` returns one `done` (terminated or truncated); `info` keeps `terminated`, `truncated`, gymnax's
  `discount` (0 where terminated), `final_observation` (flattened too) and the env's episode metrics.
- The observation is one `f32[D]` vector by default: every field of the env's observation pytree
  (`observation_space` describes each), raveled and concatenated in pytree order, booleans as 0/1 — the
  action mask (`obs.mask`, where the env has one) included, so an unmasked network can learn it. Its
  `Box` bounds are the loosest of the fields'. `flatten_obs=False` passes the pytree through instead.
- An action is what the env's `action_space` says (`Discrete` for DBF and SCED², `MultiDiscrete` for the
  DAG env, a pytree of `Box`es for DAS, `Box[P]` scores for OSDEC); `num_actions` exists for `Discrete`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core.spaces import Box, Discrete, is_space


def flatten_observation(obs) -> jax.Array:
    """`f32[D]`: every leaf of the observation pytree `obs`, raveled and concatenated in pytree order."""
    return jnp.concatenate([jnp.ravel(x).astype(jnp.float32) for x in jax.tree.leaves(obs)])


def flat_observation_space(space, name: str = "env") -> Box:
    """`Box(low, high, (D,), f32)`: the space of `flatten_observation` of an observation of `space` (a pytree
    of `Box`es), its bounds the loosest of the fields'."""
    leaves = jax.tree.leaves(space, is_leaf=is_space)
    if not all(isinstance(s, Box) for s in leaves):
        raise TypeError(f"{name}: cannot flatten an observation space with {leaves}")
    size = sum(int(np.prod(s.shape)) for s in leaves)
    return Box(min(float(s.low) for s in leaves), max(float(s.high) for s in leaves), (size,), jnp.float32)


class GymnaxEnv:
    """A jaxsched env (`core.env.Environment`) behind gymnax's `Environment` API (module docstring).

    `params`: the env params that `default_params` returns (default: the env's own embedded workload)."""

    def __init__(self, env, params: Any = None, flatten_obs: bool = True):
        self.env = env
        self._params = params
        self.flatten_obs = flatten_obs

    @classmethod
    def make(cls, name: str, flatten_obs: bool = True, **overrides) -> GymnaxEnv:
        """`GymnaxEnv` of the registered env `name` (`jaxsched.make(name, **overrides)`)."""
        from jaxsched.envs.registry import make

        env, params = make(name, **overrides)
        return cls(env, params, flatten_obs)

    # ---- gymnax's properties ---------------------------------------------------------------------------
    @property
    def default_params(self):
        return self.env.default_params() if self._params is None else self._params

    @property
    def name(self) -> str:
        return self.env.name

    @property
    def num_actions(self) -> int:
        space = self.action_space()
        if not isinstance(space, Discrete):
            raise AttributeError(f"{self.name}: num_actions needs a Discrete action space, not {space}")
        return space.n

    # ---- the contract ----------------------------------------------------------------------------------
    def reset(self, key: jax.Array, params: Any = None):
        """`(obs, state)` of a fresh episode."""
        obs, state = self.env.reset(key, self._or_default(params))
        return self._observe(obs), state

    def step(self, key: jax.Array, state, action, params: Any = None):
        """`(obs, state, reward f32, done bool, info)`; the env auto-resets where `done`."""
        obs, state, reward, terminated, truncated, info = self.env.step(
            key, state, action, self._or_default(params)
        )
        info = dict(info)
        info["terminated"], info["truncated"] = terminated, truncated
        info["discount"] = 1.0 - terminated.astype(jnp.float32)
        info["final_observation"] = self._observe(info["final_observation"])
        done = jnp.logical_or(terminated, truncated)
        return self._observe(obs), state, jnp.asarray(reward, jnp.float32), done, info

    def observation_space(self, params: Any = None):
        """`Box(low, high, (D,), f32)` of the flattened observation (or the env's own pytree of spaces)."""
        space = self.env.observation_space(self._or_default(params))
        return flat_observation_space(space, self.name) if self.flatten_obs else space

    def action_space(self, params: Any = None):
        return self.env.action_space(self._or_default(params))

    # ---- helpers ---------------------------------------------------------------------------------------
    def _or_default(self, params):
        return self.default_params if params is None else params

    def _observe(self, obs):
        return flatten_observation(obs) if self.flatten_obs else obs
