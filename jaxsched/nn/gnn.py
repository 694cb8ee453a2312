"""Message passing over padded DAGs, Decima-style (Mao et al., SIGCOMM '19, §5.1).

Each job is a DAG of at most S stages given by parent bitmasks (`parents[j, s]`: bit p set iff p -> s) and
heights (edges on the longest path to a sink). A stage's embedding aggregates its children's:

    e_v = h(x_v) + f( Σ_{c ∈ children(v)} g(e_c) )

computed level by level from the sinks (height 0) up to the roots, so information flows from leaves to
roots along every path. The `levels` steps share their weights and update every node of one height at
once, with masks (a static loop over heights, never over nodes), each one batched `[J, S, S] × [J, S, H]`
aggregation. Then per-job summaries `y_j = Σ_v ψ([x_v, e_v])` and a global one `z = Σ_j φ(y_j)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    """Dense layers with leaky-ReLU between them (Decima's activation); the last layer is linear."""

    widths: Sequence[int]

    @nn.compact
    def __call__(self, x):
        for i, w in enumerate(self.widths):
            x = nn.Dense(w)(x)
            if i < len(self.widths) - 1:
                x = nn.leaky_relu(x, 0.2)
        return x


def children_matrix(parents: jax.Array, n_stages: int) -> jax.Array:
    """`f32[..., S, S]`: entry [v, c] is 1 iff c is a child of v (bit v of `parents[..., c]`)."""
    v = jnp.arange(n_stages, dtype=jnp.int32)
    return ((parents[..., None, :] >> v[:, None]) & 1).astype(jnp.float32)


class DAGEncoder(nn.Module):
    """`(x f32[J, S, F], parents i32[J, S], height i32[J, S], valid bool[J, S], job_valid bool[J]) ->
    (stage f32[J, S, H], job f32[J, H], global f32[H])` (module docstring). `levels` bounds the heights
    (S − 1 covers any DAG of S stages)."""

    hidden: int = 16
    levels: int = 8

    @nn.compact
    def __call__(self, x, parents, height, valid, job_valid):
        h = self.hidden
        vmask = valid[..., None].astype(x.dtype)
        base = MLP((2 * h, h), name="prep")(x) * vmask  # h(x_v)
        kids = children_matrix(parents, x.shape[-2])  # [J, S, S]
        g, f = MLP((2 * h, h), name="msg_g"), MLP((2 * h, h), name="msg_f")
        emb = base
        for lv in range(1, self.levels + 1):
            msg = jnp.einsum("...vc,...ch->...vh", kids, g(emb) * vmask)
            at = (height == lv)[..., None] & valid[..., None]
            emb = jnp.where(at, base + f(msg), emb)
        job = jnp.sum(MLP((2 * h, h), name="job")(jnp.concatenate([x, emb], -1)) * vmask, axis=-2)
        job = job * job_valid[..., None].astype(x.dtype)
        glob = jnp.sum(MLP((2 * h, h), name="glob")(job) * job_valid[..., None].astype(x.dtype), axis=-2)
        return emb, job, glob
