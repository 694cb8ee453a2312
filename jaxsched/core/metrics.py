"""Scheduling metrics every env reports, written once (float32, jittable; NumPy arrays work too).

`wait = start − submit`, `jct = finish − submit` (job completion time, wait + run); `slowdown = jct / run`
and the bounded slowdown `max(1, jct / max(run, BSLD_BOUND))` of Feitelson et al., with the field's
10 s bound, so very short jobs do not dominate; `fragmentation`, SCED²'s Jain-style Eq. 1 per server.
Averages over a set of jobs are masked means: the metric of an empty set is 0 (`masked_mean`) or, for
an episode metric of an update in which no episode finished, NaN (`episode_mean`: the trainer logs it as
null).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BSLD_BOUND = 10.0  # s: the bounded slowdown's run-time floor (Feitelson, Rudolph et al. 1997)


def bounded_slowdown(wait, run, bound: float = BSLD_BOUND):
    """`max(1, (wait + run) / max(run, bound))`, elementwise."""
    return jnp.maximum(1.0, (wait + run) / jnp.maximum(run, bound))


def slowdown(wait, run):
    """`(wait + run) / run`, elementwise (`run` > 0)."""
    return (wait + run) / run


def per_job(total, count):
    """`total / count`, 0 where `count` is 0 (an average over no jobs)."""
    return jnp.where(count > 0, total / jnp.maximum(count, 1).astype(jnp.float32), 0.0)


def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `x` over entries where `mask` is True (0 when none); shapes broadcast."""
    mask = mask.astype(jnp.float32)
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def episode_mean(x: jax.Array, done: jax.Array) -> jax.Array:
    """Mean of an episode metric `x` over the episodes that finished (`done`), NaN when none did: an
    update without a finished episode has no episode metric (the trainer logs `null`), not a 0."""
    n = jnp.sum(done.astype(jnp.float32))
    return jnp.where(n > 0, masked_mean(x, done), jnp.nan)


def fragmentation(remaining: jax.Array) -> jax.Array:
    """SCED²'s Eq. 1, Jain-style, per server: `1 − (Σ x)² / (n · Σ x²)` over the remaining times `x` of
    a server's n GPUs (`f32[..., n]` → `f32[...]`): 0 when every GPU frees at the same moment, higher the
    more diverse they are (1 busy GPU of 8: 0.875). An idle server (every x = 0) is 0, not 0 / 0."""
    s, sq = remaining.sum(axis=-1), jnp.square(remaining).sum(axis=-1)
    n = remaining.shape[-1]
    return jnp.where(sq > 0, 1.0 - jnp.square(s) / (n * jnp.maximum(sq, 1e-30)), 0.0)
