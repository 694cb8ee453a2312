"""The environment contract every jaxsched simulator keeps (`tests/test_env_contract.py` checks it on
every env).

gymnax-1.0-style and functional:

    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

Subclasses implement `reset_env` and `step_env` (one decision, no auto-reset), `action_mask`,
`observation_space`, `action_space` and `metrics`. `step` adds auto-reset: when the episode ends the
returned state and observation are those of a fresh episode, and the pre-reset observation is in
`info["final_observation"]`, so a `lax.scan` over steps never branches in Python. An env whose observation
is a pure function `observe(state, params)` may set `observe_from_state = True`: `step` then selects the
state and observes it once, instead of observing the reset state too and selecting both observations
(under `vmap` the reset runs at every step, so this is work saved at every step; the result is the same).

The static config (sizes, window, capacities) lives on the env object and is hashable; everything a
sweep may vary, the workload bank included, is the `params` pytree, which `vmap`s.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp

State = TypeVar("State")
Params = TypeVar("Params")


class Environment(Generic[State, Params]):
    """Base class: auto-reset on top of `reset_env` / `step_env`."""

    name: str = "env"
    observe_from_state: bool = False  # obs == self.observe(state, params) after reset and every step

    # ---- what a simulator implements -------------------------------------------------------------
    def default_params(self) -> Params:
        """Params over the env's small embedded workload (gymnax's `default_params`): `embedded_params`,
        built once per env object, generated, never downloaded."""
        if self.__dict__.get("_default_params") is None:
            self.__dict__["_default_params"] = self.embedded_params()
        return self.__dict__["_default_params"]

    def episode(self, params: Params, i) -> Params:
        """`params` pinned to held-out episode `i` (an int or a traced i32): `reset` then always plays it.
        The one way every system addresses a test episode."""
        raise NotImplementedError

    def embedded_params(self) -> Params:
        """Build the default params (what `default_params` caches)."""
        raise NotImplementedError(f"{type(self).__name__} has no embedded workload: pass params")

    def reset_env(self, key: jax.Array, params: Params) -> tuple[Any, State]:
        raise NotImplementedError

    def step_env(
        self, key: jax.Array, state: State, action: jax.Array, params: Params
    ) -> tuple[Any, State, jax.Array, jax.Array, jax.Array, dict]:
        """One decision without auto-reset: `(obs, state, reward, terminated, truncated, info)`."""
        raise NotImplementedError

    def action_mask(self, state: State, params: Params) -> jax.Array:
        raise NotImplementedError

    def observation_space(self, params: Params):
        raise NotImplementedError

    def action_space(self, params: Params):
        raise NotImplementedError

    def metrics(self, state: State, params: Params) -> dict[str, jax.Array]:
        """The paper's end-of-episode metrics, computed from the state's job records."""
        raise NotImplementedError

    # ---- what the base class adds ----------------------------------------------------------------
    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[Any, State]:
        params = self.default_params() if params is None else params
        return self.reset_env(key, params)

    def step(
        self, key: jax.Array, state: State, action: jax.Array, params: Params | None = None
    ) -> tuple[Any, State, jax.Array, jax.Array, jax.Array, dict]:
        """One decision with auto-reset. `info` holds the step's metrics, `final_observation`, `done`
        and `episode_metrics`: `metrics` of the pre-reset state at every step, i.e. the episode so far
        (its jobs finished or placed until now), and at `done` the finished episode's. Consumers average
        them over `done` steps only (`core.wrappers.episode_mean`)."""
        params = self.default_params() if params is None else params
        key_step, key_reset = jax.random.split(key)
        obs, state_st, reward, terminated, truncated, info = self.step_env(key_step, state, action, params)
        done = jnp.logical_or(terminated, truncated)
        obs_re, state_re = self.reset_env(key_reset, params)
        info = dict(info)
        info["final_observation"] = obs
        info["episode_metrics"] = self.metrics(state_st, params)
        info["done"] = done
        state_out = jax.tree.map(lambda a, b: jax.lax.select(done, a, b), state_re, state_st)
        if self.observe_from_state:  # the reset's own observation is then unused (XLA drops it)
            obs_out = self.observe(state_out, params)
        else:
            obs_out = jax.tree.map(lambda a, b: jax.lax.select(done, a, b), obs_re, obs)
        return obs_out, state_out, reward, terminated, truncated, info
