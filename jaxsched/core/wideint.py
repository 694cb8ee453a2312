"""Exact non-negative integers past int32, held as `i32[LIMBS]` little-endian limbs of 16 bits.

JAX runs with 32-bit integers (x64 off), and a float32 running sum of integer seconds drifts once it
passes 2^24. A sum that must stay exact over a long episode — the total waiting time of a queue, updated
by `+ L·dt` and `- wait` at every step — is kept here instead and read as float32 once, rounded once.

A normalised value has every limb in `[0, 2^16)`; its range is `[0, 2^(16·LIMBS))` (2^48 ≈ 2.8e14).
Arithmetic is limb-wise followed by `normalise` (carries and borrows through arithmetic shifts), so it
stays exact as long as the true value is non-negative and in range. Shapes: a value is `i32[..., LIMBS]`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BITS = 16
LIMBS = 3
MASK = (1 << BITS) - 1
MAX_FACTOR = 1 << 15  # `scale`'s factor must be below this, so that a limb product fits in int32


def zeros(shape=()) -> jax.Array:
    return jnp.zeros((*shape, LIMBS), jnp.int32)


def from_int(v: jax.Array) -> jax.Array:
    """`v` (int32 in `[0, 2^31)`) as limbs."""
    v = jnp.asarray(v, jnp.int32)
    return jnp.stack([v & MASK, v >> BITS, jnp.zeros_like(v)], axis=-1)


def normalise(a: jax.Array) -> jax.Array:
    """Carry (or borrow) each limb's overflow into the next, leaving every limb but the top in `[0,
    2^16)`. The arithmetic shift floors, so a negative limb borrows from the one above it."""
    limbs = [a[..., i] for i in range(LIMBS)]
    for i in range(LIMBS - 1):
        carry = limbs[i] >> BITS
        limbs[i] = limbs[i] & MASK
        limbs[i + 1] = limbs[i + 1] + carry
    return jnp.stack(limbs, axis=-1)


def add(a: jax.Array, b: jax.Array) -> jax.Array:
    return normalise(a + b)


def sub(a: jax.Array, b: jax.Array) -> jax.Array:
    """`a - b`, exact when `a >= b`."""
    return normalise(a - b)


def scale(v: jax.Array, k: jax.Array) -> jax.Array:
    """`v · k` as limbs, exact for `v` in `[0, 2^31)` and `k` in `[0, MAX_FACTOR)`: each 16-bit digit of `v`
    times `k` is below 2^31."""
    v = jnp.asarray(v, jnp.int32)
    k = jnp.asarray(k, jnp.int32)
    return normalise(jnp.stack([(v & MASK) * k, (v >> BITS) * k, jnp.zeros_like(v)], axis=-1))


def to_float(a: jax.Array) -> jax.Array:
    """The value as float32, within one unit in the last place (each limb's term is exact; the two
    additions round, the larger terms first)."""
    a = a.astype(jnp.float32)
    return (a[..., 2] * float(1 << (2 * BITS)) + a[..., 1] * float(1 << BITS)) + a[..., 0]
