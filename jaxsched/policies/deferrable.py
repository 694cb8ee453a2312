"""Baselines for the deferrable-job cloud (OSDEC's FIFO, SJF and Tetris, and random), with the learned-policy
signature `policy(params, obs, key) -> f32[P]` scores.

The three heuristics are list schedulers: walk the candidates in the heuristic's order and start each job
that still fits C_t − running cores, skipping the ones that do not (first fit). Their scores put the chosen
jobs first (+1) and the rest after (−1); the env's prefix rule then starts exactly the chosen ones — every
skipped job was too wide for the capacity left when it was reached, and that only shrinks, so it stops the
prefix; with `defer_negative` the −1 jobs are not in the list at all.

  fifo    submit order (the episode's job index: jobs are numbered in submit order)
  sjf     shortest duration first, ties by submit order
  tetris  Tetris's alignment score (Grandl et al.) on one resource, cores · free capacity, which ranks
          the widest job first; ties by submit order
  random  i.i.d. uniform scores in [−1, 1] (under `defer_negative` half the candidates wait)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.envs.deferrable import DeferrableEnv, DeferrableObs

HEURISTICS = ("fifo", "sjf", "tetris")
BIG = 2**30


def first_fit(obs: DeferrableObs, order_key: jax.Array) -> jax.Array:
    """`bool[P]`: the candidates first fit starts, walking them by ascending (`order_key`, job index)."""
    free0 = obs.capacity - obs.load
    order = jnp.lexsort((obs.p_id, jnp.where(obs.candidate, order_key, BIG)))

    def visit(free, slot):
        fits = obs.candidate[slot] & (obs.p_cores[slot] <= free)
        return free - jnp.where(fits, obs.p_cores[slot], 0), fits

    _, chosen_in_order = jax.lax.scan(visit, free0, order)
    return jnp.zeros_like(obs.candidate).at[order].set(chosen_in_order)


ORDER_KEYS = {
    "fifo": lambda obs: obs.p_id,
    "sjf": lambda obs: obs.p_duration,
    "tetris": lambda obs: -obs.p_cores,
}


def make_heuristic(env: DeferrableEnv, name: str):
    """The jittable baseline `name` (module docstring) for `env`."""
    if name == "random":

        def random_scores(params, obs: DeferrableObs, key):
            return jax.random.uniform(key, obs.p_id.shape, jnp.float32, -1.0, 1.0)

        return random_scores
    order_key = ORDER_KEYS[name]

    def heuristic(params, obs: DeferrableObs, key):
        return jnp.where(first_fit(obs, order_key(obs)), 1.0, -1.0).astype(jnp.float32)

    return heuristic
