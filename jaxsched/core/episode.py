"""One episode to its end, with any decision maker: the one episode runner of the package.

Heuristics, learned actors (with or without a recurrent carry such as the RWGP's history) and planners
(which read the env state) all run through `run_episode` (`trace_episode`: one episode's figures over
time):

    act(obs, state, carry, key) -> (action, carry)

The loop is one `lax.while_loop` on `env.step_env` (no auto-reset), so it `vmap`s over episode keys; the
same key gives every decision maker the same episode (the reset draws the workload window from it), and
the per-step key split is the same for all of them.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def run_episode(env, env_params, act, key: jax.Array, carry: Any = None) -> dict[str, jax.Array]:
    """One episode from `env.reset(key)` until it terminates or is truncated. `act(obs, state, carry,
    key) -> (action, carry)` decides every call; `carry` starts at the given value. Returns the env's
    end-of-episode `metrics` plus `return` (the summed reward)."""
    k_reset, k_loop = jax.random.split(key)
    obs, state = env.reset(k_reset, env_params)

    def body(loop):
        obs, state, carry, _, total, k = loop
        k, k_act, k_step = jax.random.split(k, 3)
        action, carry = act(obs, state, carry, k_act)
        obs, state, reward, terminated, truncated, _ = env.step_env(k_step, state, action, env_params)
        return obs, state, carry, terminated | truncated, total + reward, k

    init = (obs, state, carry, jnp.bool_(False), jnp.float32(0.0), k_loop)
    _, state, _, _, total, _ = jax.lax.while_loop(lambda loop: ~loop[3], body, init)
    out = dict(env.metrics(state, env_params))
    out["return"] = total
    return out


def trace_episode(env, env_params, policy, policy_params, key: jax.Array, steps: int, record):
    """What `record(state, info, reward)` (any pytree) says at each of `steps` decisions of one episode of
    `policy(policy_params, obs, key)` from `env.reset(key)`, stacked `[steps, ...]` (the figures of one
    episode over time). Once the episode ends its last state is held and its reward is 0, so the records
    of the state repeat; `info` past the end is that of a step not taken (read the state there)."""
    k_reset, k_loop = jax.random.split(key)
    obs, state = env.reset(k_reset, env_params)

    def body(carry, k):
        obs, state, done = carry
        k_act, k_step = jax.random.split(k)
        action = policy(policy_params, obs, k_act)
        stepped = env.step_env(k_step, state, action, env_params)
        reward, terminated, truncated, info = stepped[2:]
        obs, state = jax.tree.map(lambda n, o: jnp.where(done, o, n), stepped[:2], (obs, state))
        reward = jnp.where(done, 0.0, reward)
        return (obs, state, done | terminated | truncated), record(state, info, reward)

    return jax.lax.scan(body, (obs, state, jnp.bool_(False)), jax.random.split(k_loop, steps))[1]


def stateless(policy, params=None):
    """A `policy(params, obs, key) -> action` (heuristic or trained) as an `act` for `run_episode`."""
    return lambda obs, state, carry, key: (policy(params, obs, key), carry)


def pin_window(params, i):
    """Params whose episode windows (`starts`, `ends`: `[S]`) are cut to window `i` (an int or a traced
    i32), so that `reset` always plays it: `env.episode` of the envs that draw a window."""
    return params.replace(starts=params.starts[i][None], ends=params.ends[i][None])
