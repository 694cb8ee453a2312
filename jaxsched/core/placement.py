"""Placement primitives: how many instances of a multi-resource demand fit in each machine, ranks, and
SCED²'s packing of a gang-scheduled GPU job over servers (`packing_take`, `take_free_slots`).

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


def packing_take(free: jax.Array, demand: jax.Array) -> jax.Array:
    """`i32[N]`: GPUs a gang-scheduled job of `demand` GPUs takes from each of N servers with `free` idle
    GPUs (`i32[N]`), by the *packing* placement of SCED² (§II-B, Fig. 2): the server with the fewest free
    GPUs that can hold the whole remaining demand, if one can; otherwise the server with the most free
    GPUs gives all of them and the rest is placed the same way. Ties go to the lower server index. The
    caller checks that `free.sum() >= demand`; otherwise the take is what fits (less than `demand`).

    At most N rounds (each fills or empties a server), run as one `fori_loop`."""
    n = free.shape[-1]
    idx = jnp.arange(n)

    def round_(_, carry):
        left, rest, take = carry
        fits = left >= rest
        # The best fit: the fewest free GPUs among the servers that hold `rest` (a key sorting by free GPUs,
        # then by index); else the emptiest server, again lowest index first.
        best_fit = jnp.argmin(jnp.where(fits, left * n + idx, jnp.iinfo(jnp.int32).max))
        emptiest = jnp.argmax(left * n - idx)
        server = jnp.where(fits.any(), best_fit, emptiest)
        amount = jnp.where(rest > 0, jnp.minimum(left[server], rest), 0)
        return left.at[server].add(-amount), rest - amount, take.at[server].add(amount)

    zeros = jnp.zeros_like(free)
    _, _, take = jax.lax.fori_loop(0, n, round_, (free, jnp.asarray(demand, free.dtype), zeros))
    return take


def take_free_slots(busy: jax.Array, take: jax.Array) -> jax.Array:
    """`bool[N, M]`: which GPUs a placement occupies: in each server the `take[i]` lowest-index idle
    GPUs (`busy: bool[N, M]`)."""
    order = jnp.cumsum(~busy, axis=-1)  # 1-based rank of each idle GPU within its server
    return ~busy & (order <= take[..., None])


def packing_servers(free: jax.Array, demand: jax.Array) -> jax.Array:
    """`i32[...]`: how many servers `packing_take(free, g)` spreads each demand g of `demand` (`i32[...]`)
    over, without placing it: with the free GPUs sorted in descending order f₁ ≥ f₂ ≥ …, packing empties
    the fullest-free servers until the rest fits in one, so it uses `1 + min{i : g − (f₁ + … + fᵢ) ≤ fᵢ₊₁}`
    servers. O(N log N + |demand|·N); a demand of 0, or more than `free.sum()`, gives 0."""
    f = -jnp.sort(-free)  # [N] descending
    taken = jnp.concatenate([jnp.zeros((1,), f.dtype), jnp.cumsum(f)[:-1]])  # [N] f₁ + … + fᵢ, i = 0..N-1
    d = jnp.asarray(demand)[..., None]
    done = d - taken <= f  # [..., N]: after emptying i servers the rest fits in the next one
    first = jnp.argmax(done, axis=-1)
    feasible = done.any(axis=-1) & (jnp.asarray(demand) > 0)
    return jnp.where(feasible, first + 1, 0).astype(jnp.int32)
