"""A fixed-capacity, order-preserving job queue held as padded arrays.

The queue is a pytree of `[Q]` arrays (job ids, submit times, ...) plus a length `L`: entries
`0 .. L-1` are live, in arrival order (index 0 = head); the rest hold their fill value. Every
operation is O(Q) vectorised work with static shapes, so it `jit`s and `vmap`s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def live_mask(capacity: int, length: jax.Array) -> jax.Array:
    """`bool[Q]`: True for the `length` live entries."""
    return jnp.arange(capacity) < length


def push(queue, length: jax.Array, item, enabled: jax.Array = True):
    """Append `item` (a pytree of scalars matching `queue`'s `[Q]` leaves) at the tail.

    Returns `(queue, length, overflowed)`. When the queue is full the item is not stored and
    `overflowed` is True (the caller counts it; nothing is dropped silently). `enabled=False` is a no-op.
    """
    leaves = jax.tree.leaves(queue)
    capacity = leaves[0].shape[0]
    fits = length < capacity
    write = jnp.logical_and(enabled, fits)
    at = (jnp.arange(capacity) == length) & write
    queue = jax.tree.map(lambda q, x: jnp.where(at, jnp.asarray(x, q.dtype), q), queue, item)
    return queue, length + write.astype(length.dtype), jnp.logical_and(enabled, ~fits)


def remove_at(queue, length: jax.Array, pos: jax.Array, fill, enabled: jax.Array = True):
    """Remove entry `pos` (shifting later entries one place towards the head).

    `fill` is a pytree of scalars written into the freed last slot. `enabled=False` is a no-op.
    """
    leaves = jax.tree.leaves(queue)
    capacity = leaves[0].shape[0]
    idx = jnp.arange(capacity)
    shift = (idx >= pos) & enabled

    def one(q, f):
        nxt = jnp.concatenate([q[1:], jnp.full((1,), f, q.dtype)])
        return jnp.where(shift, nxt, q)

    return jax.tree.map(one, queue, fill), length - jnp.asarray(enabled, length.dtype)


def split_window(length: jax.Array, head: int, tail: int) -> tuple[jax.Array, jax.Array]:
    """Queue positions seen by a split window of `head` + `tail` slots (Deep Back-Filling §II-B).

    Head slot `i` shows position `i`; tail slot `k` shows position `L-1-k` (the newest job first).
    Tail slots never repeat a job the head already shows: they cover positions `>= head` only, so a
    queue shorter than the window shows every job exactly once.
    Returns `(positions: i32[head+tail], present: bool[head+tail])`; absent slots point at 0.
    """
    head_pos = jnp.arange(head, dtype=jnp.int32)
    tail_pos = length.astype(jnp.int32) - 1 - jnp.arange(tail, dtype=jnp.int32)
    pos = jnp.concatenate([head_pos, tail_pos])
    present = jnp.concatenate([head_pos < length, tail_pos >= head])
    return jnp.where(present, pos, 0), present


def compact(queue, length: jax.Array, keep: jax.Array, fill):
    """Remove every live entry whose `keep` is False, keeping the order of the rest.

    Leaves are `[Q, ...]`; `keep: bool[Q]` (ignored past `length`); `fill` is a pytree of scalars for
    the freed tail slots. One O(Q) scatter instead of one `remove_at` per removed entry.
    Returns `(queue, length)`.
    """
    leaves = jax.tree.leaves(queue)
    capacity = leaves[0].shape[0]
    keep = keep & live_mask(capacity, length)
    new_length = keep.sum().astype(length.dtype)
    # Each kept entry's new position; removed ones go to a scratch slot past the end. (A scatter: a
    # stable argsort here costs ten times more on the CPU.)
    dest = jnp.where(keep, jnp.cumsum(keep) - 1, capacity)

    def one(q, f):
        out = jnp.full((capacity + 1,) + q.shape[1:], f, q.dtype)
        return out.at[dest].set(q)[:capacity]

    return jax.tree.map(one, queue, fill), new_length


ARRIVAL_CHUNK = 8  # arrivals admitted per gallop step of `first_after`


def first_after(submit: jax.Array, lo: jax.Array, hi: jax.Array, t: jax.Array) -> jax.Array:
    """The first index in `[lo, hi)` whose submit is > t (`hi` if none). `submit` is sorted inside an
    episode: gallop over it `ARRIVAL_CHUNK` jobs at a time (one chunk almost always: simultaneous arrivals
    are few)."""
    n = submit.shape[0]
    offsets = jnp.arange(ARRIVAL_CHUNK)

    def more(carry):
        return carry[1]

    def chunk(carry):
        i, _ = carry
        idx = i + offsets
        due = (idx < hi) & (submit[jnp.minimum(idx, n - 1)] <= t)
        count = due.sum(dtype=i.dtype)  # due jobs are a prefix of the chunk (sorted submits)
        return i + count, count == ARRIVAL_CHUNK

    return jax.lax.while_loop(more, chunk, (lo, jnp.bool_(True)))[0]
