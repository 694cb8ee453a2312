"""Heuristic schedulers of the DAS paper (§5.1.5) for the GPU-cloud env, as jittable policies.

Every policy has the learned-policy signature `policy(params, obs, key) -> GPUCloudAction`: it writes its
rule as priorities (ordering) and affinities (placement), and the env does the rest (jobs in descending
priority, instances on machines in descending affinity where they fit). Ties go to the lower slot /
machine index. The env's interface fixes a round's affinities before the round, so LoadBalance ranks
machines by the load at the start of the round (the same for every job of that round).

  FIFO         earliest submission first
  DRF          smallest dominant share first: max over GPU/CPU/memory of C·demand / cluster capacity
  FirstFit     the first machine (lowest index) where an instance fits
  LoadBalance  the least-loaded machine first (lowest mean used fraction of GPU, CPU and memory)
  Tetris       (job, machine) alignment: Σ_r demand_r/cap_r · free_r/cap_r; a job's priority is its
               best alignment over machines that fit one of its instances
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxsched.core.placement import fit_counts
from jaxsched.envs.gpu_cloud.env import GPUCloudAction, GPUCloudEnv, GPUCloudObs

HEURISTICS = ("fifo_firstfit", "fifo_loadbalance", "drf_firstfit", "drf_loadbalance", "tetris")
LABELS = {
    "fifo_firstfit": "FIFO-FirstFit",
    "fifo_loadbalance": "FIFO-LoadBalance",
    "drf_firstfit": "DRF-FirstFit",
    "drf_loadbalance": "DRF-LoadBalance",
    "tetris": "Tetris",
    "random": "Random",
}


def fifo_priority(obs: GPUCloudObs) -> jax.Array:
    """`f32[N]`: earlier submission = higher priority."""
    return -obs.arrival_rank.astype(jnp.float32)


def drf_priority(obs: GPUCloudObs) -> jax.Array:
    """`f32[N]`: minus the job's dominant share of the cluster (Ghodsi et al.'s DRF)."""
    total = obs.cap.sum(axis=0).astype(jnp.float32)  # [3]
    share = obs.n_inst[:, None].astype(jnp.float32) * obs.demand.astype(jnp.float32) / total
    return -share.max(axis=1)


def firstfit_affinity(obs: GPUCloudObs) -> jax.Array:
    """`f32[N, M]`: machine 0 first, then 1, ..."""
    n, m = obs.jobs.shape[0], obs.free.shape[0]
    return jnp.broadcast_to(-jnp.arange(m, dtype=jnp.float32), (n, m))


def loadbalance_affinity(obs: GPUCloudObs) -> jax.Array:
    """`f32[N, M]`: the least-loaded machine (mean used fraction of its resources) first."""
    used = 1.0 - obs.free.astype(jnp.float32) / obs.cap.astype(jnp.float32)
    return jnp.broadcast_to(-used.mean(axis=1), (obs.jobs.shape[0], obs.free.shape[0]))


def tetris_scores(obs: GPUCloudObs) -> jax.Array:
    """`f32[N, M]` alignment Σ_r (demand_r / cap_r)·(free_r / cap_r)."""
    cap = obs.cap.astype(jnp.float32)
    dem = obs.demand.astype(jnp.float32)[:, None, :] / cap[None]
    free = obs.free.astype(jnp.float32)[None] / cap[None]
    return (dem * free).sum(axis=-1)


@functools.cache
def make_heuristic(name: str):
    """The heuristic policy `name` (one of `HEURISTICS`, or `random`); one function per name, so compiled
    programs cached by their policies are found again."""
    if name == "random":
        return random_policy
    if name == "tetris":

        def tetris(params, obs: GPUCloudObs, key) -> GPUCloudAction:
            score = tetris_scores(obs)
            fits = fit_counts(obs.free, obs.demand) > 0  # [N, M]
            best = jnp.where(fits, score, -1.0).max(axis=1)
            return GPUCloudAction(priority=best, affinity=score)

        return tetris
    orders = {"fifo": fifo_priority, "drf": drf_priority}
    places = {"firstfit": firstfit_affinity, "loadbalance": loadbalance_affinity}
    order, _, place = name.partition("_")
    if order not in orders or place not in places:
        raise ValueError(f"unknown heuristic {name!r}; choose from {', '.join(HEURISTICS + ('random',))}")

    def policy(params, obs: GPUCloudObs, key) -> GPUCloudAction:
        return GPUCloudAction(priority=orders[order](obs), affinity=places[place](obs))

    return policy


def random_policy(params, obs: GPUCloudObs, key) -> GPUCloudAction:
    """Standard-normal priorities and affinities: a uniformly random order and machine ranking."""
    k1, k2 = jax.random.split(key)
    n, m = obs.jobs.shape[0], obs.free.shape[0]
    return GPUCloudAction(priority=jax.random.normal(k1, (n,)), affinity=jax.random.normal(k2, (n, m)))


def heuristic_policies(env: GPUCloudEnv, names=HEURISTICS) -> dict:
    """`{name: policy}` for `evaluate_policies`."""
    del env
    return {n: make_heuristic(n) for n in names}
