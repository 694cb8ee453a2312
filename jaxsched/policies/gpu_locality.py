"""The SCED² paper's baselines (§IV-A) for the GPU-locality env, with the learned-policy signature
`policy(params, obs, key) -> action` (`params` unused; `obs` a `GPULocalityObs`). All place by packing (the
env does); they choose *which* job:

  fifo  the earliest arrival      sif  the shortest ideal time    lrf  the fewest GPUs
  spf   the smallest GPUs × ideal time
  saf   the shortest actual time under the placement packing would give it now (the paper's oracle: the
        profiled run time at the locality level `core.placement.packing_servers` predicts)
  dsif  SIF, but a job that would not get its best locality now is delayed, at most 3 times (its
        `passed` count: forwards it sat through while it fit); the next job in SIF order is considered
  random  uniform over the valid actions, φ included

Each takes the best-keyed job among those that fit now (ties: the earliest arrival), and φ when none does
(or when DSIF delays them all). A policy sees only the window; the env with a window as long as the episode
gives the whole-queue variants.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.core.placement import packing_servers
from jaxsched.envs.gpu_locality.env import GPULocalityEnv, GPULocalityObs
from jaxsched.envs.gpu_locality.params import min_servers

HEURISTICS = ("fifo", "sif", "dsif", "saf", "lrf", "spf")
DSIF_MAX_DELAYS = 3  # §IV-A: "it will delay the job for at most 3 times"


def level_now(env: GPULocalityEnv, obs: GPULocalityObs) -> jax.Array:
    """`i32[J]`: the locality level each window job would get if placed now (0 = best)."""
    cfg = env.config
    servers = packing_servers(obs.free, obs.gpus)
    return jnp.clip(servers - min_servers(obs.gpus, cfg.gpus_per_server), 0, cfg.n_levels - 1)


def _key(env: GPULocalityEnv, name: str, obs: GPULocalityObs) -> jax.Array:
    """f32[J]: the heuristic's key (smaller first)."""
    if name == "fifo":
        return jnp.zeros(obs.gpus.shape, jnp.float32)  # ties go to the earliest arrival
    if name in ("sif", "dsif"):
        return obs.ideal.astype(jnp.float32)
    if name == "lrf":
        return obs.gpus.astype(jnp.float32)
    if name == "spf":
        return obs.gpus.astype(jnp.float32) * obs.ideal.astype(jnp.float32)
    if name == "saf":
        return jnp.take_along_axis(obs.profile, level_now(env, obs)[:, None], axis=-1)[:, 0].astype(
            jnp.float32
        )
    raise ValueError(f"unknown heuristic {name!r}; choose from {', '.join(HEURISTICS)}, random")


def make_heuristic(env: GPULocalityEnv, name: str):
    """The jittable heuristic `name` (module docstring) for `env`."""
    phi = env.phi
    if name == "random":

        def random_policy(params, obs: GPULocalityObs, key: jax.Array) -> jax.Array:
            return jax.random.categorical(key, jnp.where(obs.mask, 0.0, -jnp.inf)).astype(jnp.int32)

        return random_policy
    if name not in HEURISTICS:
        raise ValueError(f"unknown heuristic {name!r}; choose from {', '.join(HEURISTICS)}, random")

    def policy(params, obs: GPULocalityObs, key: jax.Array) -> jax.Array:
        eligible = obs.mask[:phi]
        if name == "dsif":
            eligible = eligible & ((level_now(env, obs) == 0) | (obs.passed >= DSIF_MAX_DELAYS))
        # argmin is the first minimum, and slots are in arrival order: ties go to the earliest arrival.
        best = jnp.argmin(jnp.where(eligible, _key(env, name, obs), jnp.inf))
        return jnp.where(eligible.any(), best, phi).astype(jnp.int32)

    policy.__name__ = name
    return policy
