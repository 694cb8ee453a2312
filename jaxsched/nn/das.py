"""The Dual-Agent Scheduler's networks other than the RWGP placement head (Xing et al., KDD'23, §4.1, §4.3).

Every module works on one observation (jobs `[N, u]`, machines `[M, v]`); batch with `jax.vmap`.

  * `OrderingEncoder`: Eq. 4 FFNs, the squeeze-and-communicate gate (Eq. 5), the sinusoidal position
    embedding and multi-head self-attention over the N job slots (Eq. 6) → `(Ŝʲ [N, e], Sᶜ [M, e])`;
  * `GaussianPriorityHead`: the ordering agent's Gaussian (Eq. 8) → `(μ [N], σ [N])`;
  * `MLPPlacementHead`: the DA ablation's MLP Gaussian placement head → `(μ [N, M], σ [N])`;
  * `CentralCritic`: MAPPO's centralized critic, V(global state) (see its docstring for the deviation);
  * `masked_normal_log_prob` / `masked_normal_entropy`: diagonal Gaussians over valid job slots only, and
    `MaskedNormal`, the same as a distribution object (PPO's form; OSDEC's scores use it too).

Choices the paper leaves open:
  * Eq. 5's gate δ is per feature (W₃: 2e → e), like a highway/GRU gate, rather than one scalar per job;
  * Eq. 6 is read as standard multi-head attention, `Concat(head₁..head_h) Wᴼ`, with a key-padding mask
    and no residual / layer norm (the paper has none); padded slots are zeroed at the input and output;
  * σ gets a floor of 1e-3 (Eq. 8's sigmoid can underflow to 0 and the log-prob to -inf);
  * the μ heads' last layer starts small (orthogonal gain 0.01, as in `mlp.py`'s policy heads), so the
    initial priorities/affinities are near 0 and exploration is driven by σ ≈ 0.5.
"""

from __future__ import annotations

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.nn.mlp import ValueMLP

STD_FLOOR = 1e-3


def sinusoidal_embedding(positions, dim: int):
    """`positions: i32[N] -> f32[N, dim]`, interleaved as in the paper (and Vaswani et al.):
    `PE(i)_{2k} = sin(i / 10000^{2k/dim})`, `PE(i)_{2k+1} = cos(i / 10000^{2k/dim})`."""
    k2 = np.arange(0, dim, 2, dtype=np.float32)  # the even indices 2k
    angle = jnp.asarray(positions, jnp.float32)[..., None] / jnp.asarray(10000.0 ** (k2 / dim))  # [N, ⌈d/2⌉]
    pe = jnp.stack([jnp.sin(angle), jnp.cos(angle)], axis=-1)  # [N, ⌈d/2⌉, 2]
    return pe.reshape(*pe.shape[:-2], -1)[..., :dim]  # sin, cos, sin, cos, ... (odd dim: drop the last cos)


class OrderingEncoder(nn.Module):
    """`(jobs f32[N, u], job_mask bool[N], machines f32[M, v]) -> (job_emb f32[N, e], mach_emb f32[M, e])`.

    `message=False` is the DA+MC ablation switch (no cluster message: `S̃ʲ = Sʲ`); `position=False` drops
    the position embedding, which makes the encoder permutation-equivariant over job slots. Padded slots
    never influence valid ones (key-padding mask) and their rows of `job_emb` are zero.
    """

    hidden: int = 64  # e
    heads: int = 4  # h
    message: bool = True
    position: bool = True

    @nn.compact
    def __call__(self, jobs, job_mask, machines):
        e = self.hidden
        relu_init = nn.initializers.orthogonal(np.sqrt(2))
        # Zero padded rows first: their (arbitrary) inputs then cannot leak even as NaN/inf through 0 · x.
        jobs = jnp.where(job_mask[:, None], jobs, 0.0)
        s_j = nn.relu(nn.Dense(e, kernel_init=relu_init, name="job_ffn")(jobs))  # Eq. 4, [N, e]
        s_c = nn.relu(nn.Dense(e, kernel_init=relu_init, name="machine_ffn")(machines))  # Eq. 4, [M, e]

        if self.message:  # Eq. 5: squeeze (average-pool machines), expand (f: tile over slots), gate
            msg = jnp.broadcast_to(jnp.mean(s_c, axis=0), s_j.shape)  # f(s̃ᶜ), [N, e]
            delta = nn.sigmoid(nn.Dense(e, name="gate")(jnp.concatenate([s_j, msg], axis=-1)))
            z = delta * msg + (1.0 - delta) * s_j
        else:
            z = s_j
        if self.position:  # slots are in submission order, so the slot index is the position i
            z = z + sinusoidal_embedding(jnp.arange(z.shape[0]), e)

        # Eq. 6: scaled dot-product attention with √(e/h) (flax scales by √(qkv_features / num_heads)).
        # Mask [heads=1, queries=1, keys=N]: every query ignores padded keys; padded queries are zeroed below.
        attn = nn.MultiHeadDotProductAttention(self.heads, qkv_features=e, out_features=e, name="mha")
        s_hat = attn(z, mask=job_mask[None, None, :])
        return jnp.where(job_mask[:, None], s_hat, 0.0), s_c


class GaussianPriorityHead(nn.Module):
    """`job_emb f32[N, e] -> (mu f32[N], std f32[N])`: Eq. 8, `μ = tanh(W₄Ŝʲ + b₄)`,
    `σ = sigmoid(W₅Ŝʲ + b₅) + std_floor` (the floor keeps the log-prob finite)."""

    std_floor: float = STD_FLOOR

    @nn.compact
    def __call__(self, job_emb):
        mu = jnp.tanh(nn.Dense(1, kernel_init=nn.initializers.orthogonal(0.01), name="mu")(job_emb))
        std = nn.sigmoid(nn.Dense(1, name="std")(job_emb)) + self.std_floor
        return mu[..., 0], std[..., 0]


class MLPPlacementHead(nn.Module):
    """`(job_emb f32[N, e], mach_emb f32[M, e]) -> (mu f32[N, M], std f32[N])`: the DA ablation's MLP
    Gaussian placement head. One MLP scores each (job i, machine k) pair from `[Ŝʲ_i, Sᶜ_k]`,
    `μ_ik = tanh(·)`; the spread is per job, `σ_i = sigmoid(w·Ŝʲ_i + b) + std_floor`, the same output form as
    the GP head (one variance per job, shared over its machines)."""

    hidden: int = 64
    std_floor: float = STD_FLOOR

    @nn.compact
    def __call__(self, job_emb, mach_emb):
        n, m = job_emb.shape[0], mach_emb.shape[0]
        pairs = jnp.concatenate(
            [
                jnp.broadcast_to(job_emb[:, None, :], (n, m, job_emb.shape[-1])),
                jnp.broadcast_to(mach_emb[None, :, :], (n, m, mach_emb.shape[-1])),
            ],
            axis=-1,
        )  # [N, M, 2e]
        h = nn.relu(nn.Dense(self.hidden, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(pairs))
        mu = jnp.tanh(nn.Dense(1, kernel_init=nn.initializers.orthogonal(0.01), name="mu")(h))[..., 0]
        std = nn.sigmoid(nn.Dense(1, name="std")(job_emb))[..., 0] + self.std_floor
        return mu, std


class CentralCritic(ValueMLP):
    """`global_state f32[..., G] -> value f32[...]`: MAPPO's centralized critic as an MLP (`ValueMLP`,
    which MAPPO uses by default).

    Deviation: the paper's Eq. 15 also feeds both agents' actions, which makes it a Q-function trained by
    TD with target networks (Eq. 16). We use MAPPO's standard state-value critic V(s) on the environment's
    global state, which GAE (the paper's B_t) needs anyway and which has no action input to differentiate.
    """


def _expand_trailing(a, ndim: int):
    """Append singleton axes to `a` until it has `ndim` axes (left-aligned broadcasting: `[N] → [N, 1]`)."""
    a = jnp.asarray(a)
    return a.reshape(a.shape + (1,) * (ndim - a.ndim))


def _masked_normal(mu, std, mask):
    """Broadcast std and mask to mu's shape; padded entries become N(0, 1) so their terms (and gradients)
    stay finite whatever they held — they are dropped afterwards with `where`, never multiplied by 0."""
    mu = jnp.asarray(mu)
    mask = jnp.broadcast_to(_expand_trailing(mask, mu.ndim), mu.shape)
    std = jnp.broadcast_to(_expand_trailing(std, mu.ndim), mu.shape)
    dist = distrax.Normal(jnp.where(mask, mu, 0.0), jnp.where(mask, std, 1.0))
    return dist, mask


def _sum_event(x, mask_ndim: int):
    """Sum over the mask's last axis (job slots) and every axis after it; leading axes are batch axes."""
    return jnp.sum(x, axis=tuple(range(mask_ndim - 1, x.ndim)))


def masked_normal_log_prob(mu, std, x, mask):
    """Log-density of `x` under independent Normals, summed over valid entries only.

    `mu, x: f32[..., N, *E]`, `std: f32[..., N, *E']` with `E'` a prefix of `E` (e.g. one σ per job for
    `[N, M]` affinities), `mask: bool[..., N]`, broadcast over trailing axes. Returns `f32[...]` (a scalar
    for one observation). Padded entries contribute exactly 0.
    """
    dist, full = _masked_normal(mu, std, mask)
    lp = dist.log_prob(jnp.where(full, x, 0.0))
    return _sum_event(jnp.where(full, lp, 0.0), jnp.ndim(mask))


def masked_normal_entropy(mu, std, mask):
    """Entropy of the same masked diagonal Gaussian (shapes as `masked_normal_log_prob`) → `f32[...]`."""
    dist, full = _masked_normal(mu, std, mask)
    return _sum_event(jnp.where(full, dist.entropy(), 0.0), jnp.ndim(mask))


class MaskedNormal:
    """The masked diagonal Gaussian as a distribution object (distrax's `sample` / `log_prob` /
    `entropy` / `mode`), the form `agents.ppo.PPO` takes from a network's `distribution`: DAS's pieces,
    reused for OSDEC's per-job confidence scores. `mu, std: f32[..., N]`, `mask: bool[..., N]`; samples
    and the mode are 0 on padded entries; `log_prob` / `entropy` sum the valid entries → `f32[...]`."""

    def __init__(self, mu, std, mask):
        self.mu, self.std, self.mask = mu, std, mask

    def sample(self, seed):
        x = self.mu + self.std * jax.random.normal(seed, jnp.shape(self.mu), jnp.result_type(self.mu))
        return jnp.where(self.mask, x, 0.0)

    def log_prob(self, x):
        return masked_normal_log_prob(self.mu, self.std, x, self.mask)

    def entropy(self):
        return masked_normal_entropy(self.mu, self.std, self.mask)

    def mode(self):
        return jnp.where(self.mask, self.mu, 0.0)
