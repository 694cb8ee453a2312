"""Wrappers over the environment contract.

`LogWrapper` accumulates, per environment, the running episode return and length, and on episode end
publishes them with the env's own end-of-episode metrics in `info` (`returned_episode`,
`returned_episode_returns`, `returned_episode_lengths`, `returned_episode_metrics`), all masked by
`returned_episode` so a batched mean is `sum(x * mask) / sum(mask)` (no boolean indexing under jit).
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from jaxsched.core.env import Environment
from jaxsched.core.metrics import episode_mean, masked_mean  # noqa: F401  (re-exported)


@struct.dataclass
class LogState:
    env_state: object
    episode_return: jnp.ndarray  # f32
    episode_length: jnp.ndarray  # i32
    returned_episode_return: jnp.ndarray  # f32, last finished episode
    returned_episode_length: jnp.ndarray  # i32


class LogWrapper:
    """Adds episode return/length bookkeeping; forwards everything else to the wrapped env."""

    def __init__(self, env: Environment):
        self.env = env

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, key, params=None):
        obs, env_state = self.env.reset(key, params)
        z = jnp.float32(0.0)
        return obs, LogState(env_state, z, jnp.int32(0), z, jnp.int32(0))

    def step(self, key, state: LogState, action, params=None):
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, params
        )
        done = jnp.logical_or(terminated, truncated)
        ret = state.episode_return + reward
        length = state.episode_length + 1
        new = LogState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
            returned_episode_return=jnp.where(done, ret, state.returned_episode_return),
            returned_episode_length=jnp.where(done, length, state.returned_episode_length),
        )
        info = dict(info)
        info["returned_episode"] = done
        info["returned_episode_returns"] = new.returned_episode_return
        info["returned_episode_lengths"] = new.returned_episode_length
        info["returned_episode_metrics"] = info["episode_metrics"]
        return obs, new, reward, terminated, truncated, info
