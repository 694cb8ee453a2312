"""Multi-resource placement primitives: how many instances of a demand fit in each machine, and ranks.

Resources are exact integers (`i32[..., R]` demands against `i32[M, R]` free capacity). Everything is
vectorised and division-light, because simulators call it on every event of a vmapped event loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BIG_FIT = 1 << 20  # "unconstrained" instance count for a zero demand


def fit_counts(free: jax.Array, demand: jax.Array) -> jax.Array:
    """Instances of per-instance `demand` (`i32[..., 3]`) that fit in `free` (`i32[M, 3]`): `i32[..., M]`.
    A zero demand does not constrain.

    Exact integer floor division, computed as a float estimate corrected by one step either way: XLA's
    CPU integer division does not vectorise, and this runs on every event of the forward loop."""
    inv = (1.0 / jnp.maximum(demand, 1).astype(jnp.float32))[
        ..., None, :
    ]  # one divide per job, not per machine
    d = demand[..., None, :]
    est = jnp.floor(free.astype(jnp.float32) * inv).astype(jnp.int32)  # within ±1 of the exact quotient
    est = jnp.where((est + 1) * d <= free, est + 1, jnp.where(est * d > free, est - 1, est))
    return jnp.where(d > 0, est, BIG_FIT).min(axis=-1)


def can_place(free: jax.Array, demand: jax.Array, n_inst: jax.Array) -> jax.Array:
    """`bool[...]`: do `n_inst` instances of `demand` (`i32[..., 3]`) fit in `free` (`i32[M, 3]`)?"""
    fit = jnp.minimum(fit_counts(free, demand), n_inst[..., None])
    return fit.sum(axis=-1) >= n_inst


def descending_rank(x: jax.Array) -> jax.Array:
    """`i32[..., K]`: each entry's place when the last axis is sorted in descending order, ties to the
    lower index. O(K²) comparisons: for the small K here far cheaper than a sort on the CPU."""
    k = x.shape[-1]
    idx = jnp.arange(k)
    ahead = (x[..., None, :] > x[..., :, None]) | (
        (x[..., None, :] == x[..., :, None]) & (idx[None, :] < idx[:, None])
    )
    return ahead.sum(axis=-1).astype(jnp.int32)
