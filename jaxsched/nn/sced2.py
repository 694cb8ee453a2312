"""SCED²'s shared-weight Q-network (Eq. 3–5, Fig. 6), over the GPU-locality env's flat observation.

    F_i = f(S_i; w_shared)            one encoder applied to every server's M GPU remaining times
    G   = f(J_1, …, J_J, Stat; w_1)   one encoder of the window's jobs and the statistics
    A   = f(f(Concat(F_1, …, F_N, G); w_2); w_3)   J + 1 Q-values

The server encoder's weights are shared by the N servers, so a pattern of free and soon-free GPUs means
the same on any server, and the network has far fewer weights than a flat MLP (`nn.mlp.QMLP`, the
ablation). The network reads `obs.vec` and cuts it back into its parts by the env's layout
(`gpu_locality.GPULocalityObs`), so the replay buffer stores one flat vector per state.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from jaxsched.envs.gpu_locality.env import N_STATS
from jaxsched.envs.gpu_locality.params import GPULocalityConfig


class SharedWeightQ(nn.Module):
    """`vec f32[..., N·M + (k+2)·J + 4] -> q f32[..., J+1]` (module docstring)."""

    n_servers: int
    gpus_per_server: int
    window: int
    job_features: int  # k + 2
    server_hidden: Sequence[int] = (32, 16)
    job_hidden: Sequence[int] = (128,)
    head_hidden: int = 128

    @nn.compact
    def __call__(self, vec):
        n, m, j = self.n_servers, self.gpus_per_server, self.window
        lead = vec.shape[:-1]
        servers = vec[..., : n * m].reshape(*lead, n, m)
        rest = vec[..., n * m :]  # the window's jobs then the statistics: G's input as Eq. 3 writes it
        assert rest.shape[-1] == j * self.job_features + N_STATS, "vec does not match the env's layout"
        dense = lambda w: nn.Dense(w, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))
        f = servers
        for w in self.server_hidden:  # w_shared: the same Dense over the server axis
            f = nn.relu(dense(w)(f))
        g = rest
        for w in self.job_hidden:  # w_1
            g = nn.relu(dense(w)(g))
        e = jnp.concatenate([f.reshape(*lead, -1), g], axis=-1)  # Eq. 4
        h = nn.relu(dense(self.head_hidden)(e))  # w_2
        return nn.Dense(j + 1, kernel_init=nn.initializers.orthogonal(1.0))(h)  # w_3


class SCED2QNetwork:
    """`SharedWeightQ` with the interface DQN takes by injection: `init(key, vec [D])`,
    `apply(params, vec [B, D]) -> q [B, J+1]`."""

    def __init__(self, config: GPULocalityConfig, server_hidden=(32, 16), job_hidden=(128,), head_hidden=128):
        self.module = SharedWeightQ(
            config.n_servers, config.gpus_per_server, config.window, config.n_levels + 2,
            tuple(server_hidden), tuple(job_hidden), int(head_hidden),
        )  # fmt: skip

    def init(self, key, vec):
        return self.module.init(key, jnp.zeros_like(vec, jnp.float32))

    def apply(self, params, vec):
        return self.module.apply(params, vec)
