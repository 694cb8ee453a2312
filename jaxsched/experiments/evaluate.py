"""Run any policy (heuristic or learned, `policy(params, obs, key) -> action`) on an env for whole
episodes and collect the env's end-of-episode metrics.

Episodes run through `core.episode.run_episode` (one jitted `lax.while_loop`), `vmap`ped over episode
keys: the same keys give every policy the same episodes (the reset draws the workload window from the key).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core import episode


def run_episode(env, env_params, policy, policy_params, key: jax.Array) -> dict[str, jax.Array]:
    """One episode of `policy(params, obs, key)` to its end; returns `env.metrics` plus `return`."""
    return episode.run_episode(env, env_params, episode.stateless(policy, policy_params), key)


def eval_episode_keys(seed: int, episodes: int) -> jax.Array:
    """The keys of held-out episodes `0 .. episodes-1`: `purpose_key(seed, EVAL_TAG)` folded with the
    episode number, the same for every policy and training seed (paired evaluations)."""
    from jaxsched.experiments.config import EVAL_TAG, purpose_key

    root = purpose_key(seed, EVAL_TAG)
    return jax.vmap(lambda e: jax.random.fold_in(root, e))(jnp.arange(episodes))


def evaluate_policy(env, env_params, policy, keys: jax.Array, policy_params=None) -> dict[str, np.ndarray]:
    """Metrics of one episode per key, as numpy arrays `[num_keys]`."""
    fn = jax.jit(jax.vmap(lambda k: run_episode(env, env_params, policy, policy_params, k)))
    return {k: np.asarray(v) for k, v in fn(keys).items()}


def summarize(per_episode: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """`{metric: (mean, std)}` over episodes."""
    return {k: (float(np.mean(v)), float(np.std(v))) for k, v in per_episode.items()}


def evaluate_policies(env, env_params, policies: dict, keys: jax.Array) -> dict[str, dict[str, np.ndarray]]:
    """Several parameter-free policies (heuristics) on the same episodes, compiled as one program.

    The policies become branches of one `lax.switch`, `vmap`ped over (policy, episode): one compile
    instead of one per policy. Returns `{policy name: {metric: [num_keys]}}`.
    """
    names = list(policies)
    branches = [lambda obs, k, p=policies[n]: p(None, obs, k) for n in names]

    def switched(index, obs, key):
        return jax.lax.switch(index, branches, obs, key)

    def one(index, key):
        return run_episode(env, env_params, lambda _, obs, k: switched(index, obs, k), None, key)

    fn = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))
    out = fn(jnp.arange(len(names)), keys)
    return {n: {k: np.asarray(v[i]) for k, v in out.items()} for i, n in enumerate(names)}
