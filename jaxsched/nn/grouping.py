"""Job grouping for the RIFLING baseline (Chen et al., 2021, as adapted by the DAS paper §5.1.5).

RIFLING clusters pending jobs with k-means on their resource features and lets its placement agent decide
per group. `kmeans_groups` runs Lloyd's algorithm on the valid rows of one observation, deterministically:
the centroids start at the first k valid jobs (submission order), and an empty cluster keeps its centroid.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def rifling_k(n_slots: int) -> int:
    """RIFLING's number of groups for N visible jobs: k = √(N/2), rounded, at least 1 (N = 16 → 3)."""
    return max(1, round(math.sqrt(n_slots / 2)))


def kmeans_groups(x, mask, k: int, iters: int = 8):
    """`(x f32[N, F], mask bool[N]) -> (groups i32[N], first bool[N])`: each valid row's cluster in
    `[0, k)` after `iters` Lloyd steps, and whether the row is its cluster's first valid member (so a
    per-group quantity is counted once). Padded rows get group 0 and `first` False."""
    n = x.shape[0]
    valid_rank = jnp.cumsum(mask) - 1  # rank of each valid row among the valid rows
    # Initial centroid c = the c-th valid row (or the first row when fewer than k are valid).
    seed_row = jnp.argmax((valid_rank[None, :] == jnp.arange(k)[:, None]) & mask[None, :], axis=1)  # [k]
    centroids = x[seed_row]

    def assign(c):
        d = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)  # [N, k]
        return jnp.argmin(d, axis=1)

    def lloyd(_, c):
        one_hot = jax.nn.one_hot(assign(c), k) * mask[:, None]  # [N, k]
        count = one_hot.sum(axis=0)
        mean = (one_hot.T @ x) / jnp.maximum(count, 1.0)[:, None]
        return jnp.where(count[:, None] > 0, mean, c)

    groups = jnp.where(mask, assign(jax.lax.fori_loop(0, iters, lloyd, centroids)), 0).astype(jnp.int32)
    same = (groups[:, None] == groups[None, :]) & mask[None, :] & mask[:, None]
    earlier = jnp.tril(jnp.ones((n, n), bool), k=-1)  # [i, j]: j < i
    first = mask & ~jnp.any(same & earlier, axis=1)
    return groups, first
