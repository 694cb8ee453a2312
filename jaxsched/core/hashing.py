"""Counter-based random draws for env steps: a 32-bit integer mixer, so that a draw is a pure function of
what it is for (a seed and some indices) rather than a key threaded through the state, and a plain-Python
reference can reproduce it exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def lowbias32(x: jax.Array) -> jax.Array:
    """A 32-bit integer finaliser (lowbias32): uint32 → well-scrambled uint32 (elementwise)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)
