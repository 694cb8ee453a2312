"""Action and observation spaces: Discrete / Box / MultiDiscrete, with masks and `contains`.

Spaces are plain frozen descriptions (static, hashable); `sample` and `contains` are jittable.
A `mask` (bool array of the space's choices) restricts `sample` to valid choices.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class Discrete:
    """Actions `0 .. n-1`."""

    n: int
    dtype: jnp.dtype = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def sample(self, key: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        """Uniform over the valid actions (`mask: bool[n]`, at least one True)."""
        if mask is None:
            return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)
        logits = jnp.where(mask, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(self.dtype)

    def contains(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        x = jnp.asarray(x)
        ok = (x.shape == ()) & (x >= 0) & (x < self.n)
        if mask is not None:
            ok = ok & mask[jnp.clip(x, 0, self.n - 1)]
        return jnp.asarray(ok)


@dataclass(frozen=True)
class MultiDiscrete:
    """A vector of independent discrete choices; `nvec[i]` options for entry `i`."""

    nvec: tuple[int, ...]
    dtype: jnp.dtype = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)

    def sample(self, key: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        """`mask: bool[len(nvec), max(nvec)]` (row i valid choices for entry i), or None."""
        width = max(self.nvec)
        valid = jnp.arange(width)[None, :] < jnp.asarray(self.nvec)[:, None]
        if mask is not None:
            valid = valid & mask
        logits = jnp.where(valid, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits, axis=-1).astype(self.dtype)

    def contains(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        nvec = jnp.asarray(self.nvec)
        ok = jnp.all((x >= 0) & (x < nvec))
        if mask is not None:
            ok = ok & jnp.all(jnp.take_along_axis(mask, jnp.clip(x, 0, nvec - 1)[:, None], axis=1))
        return ok


@dataclass(frozen=True)
class Box:
    """Real arrays in `[low, high]` (scalars broadcast) of a fixed shape."""

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: jnp.dtype = jnp.float32

    def sample(self, key: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        low = jnp.maximum(self.low, -1e6)
        high = jnp.minimum(self.high, 1e6)
        return jax.random.uniform(key, self.shape, self.dtype, low, high)

    def contains(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all(jnp.isfinite(x) & (x >= self.low) & (x <= self.high))


# ---- pytrees of spaces ---------------------------------------------------------------------------------
# An env whose observation (or action) is a pytree describes it by the same pytree with a space at every
# leaf (`HPCObs(vec=Box(...), mask=Box(..., bool), ...)`), so every field has its shape, dtype and bounds.

I32_MAX = 2**31 - 1  # the upper bound of an i32 count or time that has no smaller one


def is_space(x) -> bool:
    return isinstance(x, Discrete | MultiDiscrete | Box)


def contains(space, x, mask: jax.Array | None = None) -> jax.Array:
    """`bool`: `x` lies in `space`, a space or a pytree of spaces of `x`'s structure (`mask` for a single
    discrete space only)."""
    if is_space(space):
        return space.contains(x, mask)
    parts = jax.tree.map(lambda s, a: s.contains(a), space, x, is_leaf=is_space)
    return jnp.all(jnp.stack([jnp.asarray(p) for p in jax.tree.leaves(parts)]))


def shape_structs(space):
    """The `jax.ShapeDtypeStruct` pytree of what `space` holds, to compare with `jax.eval_shape`'s."""
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)), space, is_leaf=is_space)


def bounds(space) -> str:
    """A leaf space's values in words: `{0..n-1}`, `[low, high]` or `bool`."""
    if isinstance(space, Discrete):
        return f"{{0..{space.n - 1}}}"
    if isinstance(space, MultiDiscrete):
        return " × ".join(f"{{0..{n - 1}}}" for n in space.nvec)
    if jnp.dtype(space.dtype) == jnp.bool_:
        return "bool"
    fmt = lambda v: (
        "∞" if v == float("inf") else "-∞" if v == float("-inf") else "I32_MAX" if v == I32_MAX else f"{v:g}"
    )
    return f"[{fmt(space.low)}, {fmt(space.high)}]"


def describe(space) -> list[tuple[str, tuple[int, ...], str, str]]:
    """`(field, shape, dtype, bounds)` per leaf of a space or pytree of spaces (field `""` for a single
    space), in the pytree's order: the rows of an env page's observation and action tables."""
    leaves = jax.tree_util.tree_leaves_with_path(space, is_leaf=is_space)
    return [
        (jax.tree_util.keystr(path, simple=True, separator="."), tuple(s.shape), jnp.dtype(s.dtype).name,
         bounds(s))
        for path, s in leaves
    ]  # fmt: skip
