"""Heuristic policies for the HPC (Deep Back-Filling) env, with the learned-policy signature
`policy(params, obs, key) -> action` (`params` is unused; `obs` is an `HPCObs`).

A priority policy looks at the jobs in the window, takes the best by its score (`scores.py`) and
starts it if it fits; otherwise it forwards time (the job keeps its priority, so the choice is in
effect committed while its score is static). With EASY back-filling, when the best job does not fit
its reservation is the earliest time enough cores free by the running jobs' *requested* ends, and a
window job that fits now and whose `t + requested time` is before that reservation is started
instead, earliest submit first. A policy sees only the window: give the env a head window as large as
the queue to evaluate a heuristic over the whole queue.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxsched.core import cluster
from jaxsched.envs.hpc import HPCEnv, HPCObs
from jaxsched.policies.scores import SCORES, best_index, score

Policy = Callable[[object, HPCObs, jax.Array], jax.Array]


def make_priority_policy(env: HPCEnv, name: str, backfill: bool = False) -> Policy:
    """A jittable heuristic for `env`: `name` in `scores.SCORES`, optionally with EASY back-filling."""
    if name not in SCORES:
        raise ValueError(f"unknown heuristic '{name}'; choose one of {', '.join(SCORES)}")
    fwd = env.fwd_action

    def policy(params, obs: HPCObs, key: jax.Array) -> jax.Array:
        present = obs.cores > 0
        fits = obs.mask[:fwd]
        wait = jnp.where(present, obs.t - obs.submit, 0)
        sc = score(name, obs.submit, obs.cores, obs.req_time, wait)
        best = best_index(sc, obs.submit, present)
        best_c = jnp.clip(best, 0, fwd - 1)
        best_fits = (best >= 0) & fits[best_c]
        action = jnp.where(best_fits, best, fwd)
        if backfill:
            shadow = cluster.earliest_start(obs.t + obs.sigma, obs.t, obs.cores[best_c])
            can_fill = fits & (obs.t + obs.req_time < shadow)
            fill = best_index(obs.submit.astype(jnp.float32), obs.submit, can_fill)
            action = jnp.where(best_fits | (best < 0) | (fill < 0), action, fill)
        return action.astype(jnp.int32)

    policy.__name__ = f"{name}{'_easy' if backfill else ''}"
    return policy


def random_valid_policy(env: HPCEnv) -> Policy:
    """Uniform over valid actions (Fwd included)."""

    def policy(params, obs: HPCObs, key: jax.Array) -> jax.Array:
        return jax.random.categorical(key, jnp.where(obs.mask, 0.0, -jnp.inf)).astype(jnp.int32)

    return policy


def heuristic_policies(
    env: HPCEnv, names=("fcfs", "lcfs", "sjf"), backfill=(False, True)
) -> dict[str, Policy]:
    """`{"fcfs": ..., "fcfs_easy": ..., ...}` for the given scores and back-filling settings."""
    return {f"{n}{'_easy' if b else ''}": make_priority_policy(env, n, b) for n in names for b in backfill}
