"""OSDEC's networks (Dong, Zhu et al., §4.2, Figs. 2–3): a Transformer encoder over the jobs, shared by a
per-job Gaussian score head and a value head, and the GRU auxiliary module whose features enrich every
job's input. `OSDECAgent` wraps them for `agents.ppo.PPO` (its `distribution`, `aux_targets`,
`aux_loss` and `param_labels` hooks).

Inputs, from one `DeferrableObs` (fixed scales, no running statistics):
  * a token per pending slot (B_cur ∪ B_fut): present, candidate, c/8, d/16, (e − t)/8, (l − t)/8,
    (t − g)/8;
  * one global token (always present): C_t, running cores, free cores (all / `capacity_norm`), the time
    of day as sin/cos, t / horizon, the share of candidates, and B_his as the committed-load profile,
    running cores still busy k = 1..8 steps ahead / `capacity_norm` (the running jobs summarised as the
    load they commit, instead of one token each);
  * both carry the global features and the auxiliary features (below), concatenated to every token's
    input as §4.2.2 says.

Auxiliary module (§4.2.2, Fig. 3): a GRU over `obs.history` (the last K steps: capacity, load, candidate
count, their mean cores and duration, violation, jobs and cores started) plus the current step, then a
shared layer (`aux_dim` units: the *low-level* features), a task-specific layer (`aux_dim` units: the
*high-level* features) and four outputs predicting the next step's capacity, candidates' mean cores, mean
duration and violation (each / its scale), trained by MSE. Its features enter the policy as
`stop_gradient(coef · features)` (Table 3: coefficient 10, dimension 5 each): the module learns from its
own loss only, with its own learning rate (`param_labels` → "aux"). Ablations: `aux_high`, `aux_low`
(PPO+Att+Aux_L / Aux_H / PPO+Att), `encoder="mlp"` (the fixed-length PPO baseline: one MLP over the
flattened tokens), `encoder="pointer"` (the PointerNet baseline, below).

Encoder (§4.2.3): `layers` × [self-attention (Table 3: 1 head) over the present tokens, residual, layer
norm; position-wise feed-forward, residual, layer norm] (post-norm, as Vaswani et al.). Heads: μ = tanh of
a position-wise two-layer FF, σ = softplus of another (+ 1e-3), per pending token; V = the mean over the
present tokens of a Dense(1) after the encoder.

PointerNet (§5.2's third learned baseline, after Vinyals et al.): an LSTM reads the present jobs as a
sequence in submit order (the slots sorted by job index; the paper's point is that this order is arbitrary
for a job set), its final state is the decoder's state d, and one pointer step scores every job,
u_i = vᵀ tanh(W₁ e_i + W₂ d); μ = tanh(u_i), σ from a feed-forward over [e_i, d], V from d.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsched.envs.deferrable import history_row
from jaxsched.nn.das import STD_FLOOR, MaskedNormal

CORE_NORM, DURATION_NORM, TIME_NORM = 8.0, 16.0, 8.0
PROFILE = 8  # steps of committed load in the global token
N_AUX_TASKS = 4  # next capacity, mean cores, mean duration, violation
ENCODERS = ("attention", "mlp", "pointer")


@dataclass(frozen=True)
class OSDECNetConfig:
    """Sizes and switches (module docstring)."""

    embed: int = 64
    layers: int = 2
    heads: int = 1
    ff: int = 128
    encoder: str = "attention"  # "mlp": the fixed-length PPO baseline; "pointer": the PointerNet baseline
    aux_high: bool = True
    aux_low: bool = True
    aux_hidden: int = 32
    aux_dim: int = 5
    aux_coef: float = 10.0  # Table 3's "prior information coefficient"
    capacity_norm: float = 32.0

    def __post_init__(self):
        if self.encoder not in ENCODERS:
            raise ValueError(f"osdec.encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}")
        for name in ("embed", "layers", "heads", "ff", "aux_hidden", "aux_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"osdec.{name} must be >= 1, got {getattr(self, name)}")
        if self.embed % self.heads:
            raise ValueError(f"osdec.embed ({self.embed}) must be a multiple of osdec.heads ({self.heads})")
        if not self.capacity_norm > 0:
            raise ValueError(f"osdec.capacity_norm must be > 0, got {self.capacity_norm}")

    @property
    def uses_aux(self) -> bool:
        return self.aux_high or self.aux_low


# ---- inputs -------------------------------------------------------------------------------------------
def pending_tokens(obs) -> jnp.ndarray:
    """`f32[P, 7]` per pending slot (module docstring); zeros for an empty slot."""
    present = obs.p_id >= 0
    rel = lambda x: jnp.where(present, (x - obs.t) / TIME_NORM, 0.0)  # noqa: E731
    cols = (present.astype(jnp.float32), obs.candidate.astype(jnp.float32), obs.p_cores / CORE_NORM,
            obs.p_duration / DURATION_NORM, rel(obs.p_earliest), rel(obs.p_latest),
            jnp.where(present, (obs.t - obs.p_submit) / TIME_NORM, 0.0))  # fmt: skip
    return jnp.stack([jnp.asarray(c, jnp.float32) for c in cols], axis=-1)


def global_features(obs, capacity_norm: float) -> jnp.ndarray:
    """`f32[7 + PROFILE]`: C_t, load, free, sin/cos of the day, t / horizon, candidate share, and the
    committed-load profile (running cores busy 1..PROFILE steps ahead), capacities / `capacity_norm`."""
    cap, load = obs.capacity.astype(jnp.float32), obs.load.astype(jnp.float32)
    ahead = jnp.arange(1, PROFILE + 1)
    profile = jnp.sum(jnp.where(obs.r_end[None, :] > obs.t + ahead[:, None], obs.r_cores[None, :], 0), axis=1)
    angle = 2 * jnp.pi * obs.day_phase
    head = jnp.stack([cap / capacity_norm, load / capacity_norm, (cap - load) / capacity_norm,
                      jnp.sin(angle), jnp.cos(angle), obs.t / obs.horizon,
                      obs.candidate.mean()]).astype(jnp.float32)  # fmt: skip
    return jnp.concatenate([head, profile.astype(jnp.float32) / capacity_norm])


def current_row(obs) -> jnp.ndarray:
    """`f32[8]`: this step's history row as far as it is known (nothing started yet)."""
    return history_row(obs.capacity, obs.load, obs.candidate, obs.p_cores, obs.p_duration)


def aux_targets_of(obs, capacity_norm: float) -> jnp.ndarray:
    """`f32[4]`: what the auxiliary tasks predict, read off an observation — its capacity, candidates' mean
    cores and duration, violation (scaled). PPO pairs each step with the next step's."""
    row = current_row(obs)
    scale = jnp.array([capacity_norm, CORE_NORM, DURATION_NORM, capacity_norm], jnp.float32)
    return row[jnp.array([0, 3, 4, 5])] / scale


def history_inputs(obs, capacity_norm: float) -> jnp.ndarray:
    """`f32[K + 1, 8]`: the past K rows and the current one, scaled."""
    rows = jnp.concatenate([obs.history, current_row(obs)[None]], axis=0)
    scale = jnp.array([capacity_norm, capacity_norm, 16.0, CORE_NORM, DURATION_NORM, capacity_norm, 8.0,
                       capacity_norm], jnp.float32)  # fmt: skip
    return rows / scale


# ---- modules ------------------------------------------------------------------------------------------
class AuxModule(nn.Module):
    """GRU → shared layer (low-level) → task-specific layer (high-level) → 4 predictions."""

    hidden: int
    dim: int

    @nn.compact
    def __call__(self, seq):
        cell = nn.GRUCell(self.hidden, name="gru")
        carry = jnp.zeros((self.hidden,), seq.dtype)
        carry, _ = nn.scan(lambda c, carry, x: c(carry, x), variable_broadcast="params",
                           split_rngs={"params": False})(cell, carry, seq)  # fmt: skip
        low = jnp.tanh(nn.Dense(self.dim, name="shared")(carry))
        high = jnp.tanh(nn.Dense(self.dim, name="task")(low))
        return nn.Dense(N_AUX_TASKS, name="out")(high), high, low


class EncoderLayer(nn.Module):
    embed: int
    heads: int
    ff: int

    @nn.compact
    def __call__(self, x, valid):
        attn = nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.embed)
        x = nn.LayerNorm()(x + attn(x, x, mask=nn.make_attention_mask(valid, valid)))
        h = nn.Dense(self.embed)(nn.relu(nn.Dense(self.ff)(x)))
        return nn.LayerNorm()(x + h)


class OSDECNet(nn.Module):
    """One observation → (μ [P], σ [P], V, aux predictions [4])."""

    cfg: OSDECNetConfig

    @nn.compact
    def __call__(self, obs):
        cfg = self.cfg
        tokens = pending_tokens(obs)  # [P, 7]
        g = global_features(obs, cfg.capacity_norm)
        pred = jnp.zeros((N_AUX_TASKS,), jnp.float32)
        extra = [g]
        if cfg.uses_aux:
            pred, high, low = AuxModule(cfg.aux_hidden, cfg.aux_dim, name="aux")(
                history_inputs(obs, cfg.capacity_norm)
            )
            if cfg.aux_high:
                extra.append(jax.lax.stop_gradient(cfg.aux_coef * high))
            if cfg.aux_low:
                extra.append(jax.lax.stop_gradient(cfg.aux_coef * low))
        shared = jnp.concatenate(extra)
        p = tokens.shape[0]
        glob_token = jnp.zeros((1, tokens.shape[1]), jnp.float32)
        kind = jnp.concatenate([jnp.zeros((p, 1)), jnp.ones((1, 1))])  # the global token's flag
        x = jnp.concatenate([jnp.concatenate([tokens, glob_token]), kind,
                             jnp.broadcast_to(shared, (p + 1, shared.shape[0]))], axis=1)  # fmt: skip
        valid = jnp.concatenate([obs.p_id >= 0, jnp.ones((1,), bool)])
        if cfg.encoder == "attention":
            x = nn.Dense(cfg.embed, name="embed")(x)
            for i in range(cfg.layers):
                x = EncoderLayer(cfg.embed, cfg.heads, cfg.ff, name=f"encoder_{i}")(x, valid)
            job = x[:p]
            mu = jnp.tanh(_ff(job, cfg.ff, "mu")[:, 0])
            std = nn.softplus(_ff(job, cfg.ff, "std")[:, 0]) + STD_FLOOR
            v = nn.Dense(1, name="value_out")(x)[:, 0]
            value = jnp.sum(jnp.where(valid, v, 0.0)) / valid.sum()
        elif cfg.encoder == "pointer":
            mu, std, value = PointerHead(cfg.embed, cfg.ff, name="pointer")(x[:p], x[p], obs.p_id)
        else:  # the fixed-length baseline: one MLP over all tokens
            flat = jnp.where(valid[:, None], x, 0.0).reshape(-1)
            h = nn.relu(nn.Dense(cfg.ff, name="mlp_0")(flat))
            h = nn.relu(nn.Dense(cfg.ff, name="mlp_1")(h))
            out = nn.Dense(2 * p, name="mlp_out")(h)
            mu, std = jnp.tanh(out[:p]), nn.softplus(out[p:]) + STD_FLOOR
            hv = nn.relu(nn.Dense(cfg.ff, name="value_mlp_0")(flat))
            value = nn.Dense(1, name="value_out")(nn.relu(nn.Dense(cfg.ff, name="value_mlp_1")(hv)))[0]
        return mu, std, value, pred


class PointerHead(nn.Module):
    """The PointerNet baseline (module docstring): jobs `[P, F]` (present where `p_id >= 0`) and the global
    token `[F]` → (μ [P], σ [P], V)."""

    embed: int
    ff: int

    @nn.compact
    def __call__(self, jobs, glob, p_id):
        present = p_id >= 0
        p = jobs.shape[0]
        order = jnp.argsort(jnp.where(present, p_id, jnp.iinfo(jnp.int32).max))  # submit order, empty last
        x = nn.Dense(self.embed, name="embed")(jobs)[order]
        cell = nn.OptimizedLSTMCell(self.embed, name="lstm")
        # carry (c, h): an empty cell, and the global token's embedding as the hidden state to read from
        carry0 = (jnp.zeros((self.embed,), x.dtype), nn.Dense(self.embed, name="glob")(glob))

        def read(c, carry, inp):
            xi, here = inp
            new, out = c(carry, xi)
            kept = jax.tree.map(lambda a, b: jnp.where(here, a, b), new, carry)  # empty slots: no step
            return kept, out

        scan = nn.scan(read, variable_broadcast="params", split_rngs={"params": False})
        (_, d), enc = scan(cell, carry0, (x, present[order]))
        enc = jnp.zeros_like(enc).at[order].set(enc)  # back to slot order
        u = nn.Dense(1, use_bias=False, name="v")(
            jnp.tanh(nn.Dense(self.embed, name="w_enc")(enc) + nn.Dense(self.embed, name="w_dec")(d))
        )[:, 0]
        mu = jnp.tanh(u)
        both = jnp.concatenate([enc, jnp.broadcast_to(d, (p, d.shape[0]))], axis=1)
        std = nn.softplus(_ff(both, self.ff, "std")[:, 0]) + STD_FLOOR
        value = nn.Dense(1, name="value_out")(nn.relu(nn.Dense(self.ff, name="value_0")(d)))[0]
        return mu, std, value


def _ff(x, width: int, name: str):
    h = nn.relu(nn.Dense(width, name=f"{name}_0")(x))
    return nn.Dense(1, name=f"{name}_1", kernel_init=nn.initializers.orthogonal(0.01))(h)


class OSDECAgent:
    """`OSDECNet` in `agents.ppo.PPO`'s network form: `init`, `apply` (a batch: `((μ, σ), V)`), `value`,
    and the hooks `distribution` (the masked Gaussian over candidates), `aux_targets` / `aux_loss` (when
    the auxiliary module is on) and `param_labels` ("aux", "value", the rest "policy")."""

    def __init__(self, cfg: OSDECNetConfig = OSDECNetConfig()):
        self.cfg = cfg
        self.module = OSDECNet(cfg)
        if not cfg.uses_aux:  # no auxiliary tasks: PPO sees no hook
            self.aux_targets = None

    def init(self, key, obs):
        return self.module.init(key, obs)

    def _forward(self, params, obs):
        """One observation, or a batch of them (a leading axis on every leaf)."""
        if obs.p_id.ndim == 1:
            return self.module.apply(params, obs)
        return jax.vmap(lambda o: self.module.apply(params, o))(obs)

    def apply(self, params, obs):
        mu, std, value, _ = self._forward(params, obs)
        return (mu, std), value

    def value(self, params, obs):
        return self._forward(params, obs)[2]

    def distribution(self, head, mask):
        mu, std = head
        return MaskedNormal(mu, std, mask)

    def aux_targets(self, obs):
        return jax.vmap(lambda o: aux_targets_of(o, self.cfg.capacity_norm))(obs)

    def aux_loss(self, params, obs, targets, valid):
        pred = self._forward(params, obs)[3]
        err = jnp.where(valid[:, None], (pred - targets) ** 2, 0.0)
        per_task = err.sum(0) / jnp.maximum(valid.sum(), 1)
        names = ("aux_capacity", "aux_cores", "aux_duration", "aux_violation")
        return per_task.sum(), dict(zip(names, per_task, strict=True))

    def param_labels(self, params):
        def label(path, _):
            names = [str(getattr(k, "key", k)) for k in path[1:]]  # path: ("params", submodule, ...)
            # the value layers are `value_*` (attention's own "value" projection is the policy's)
            value = any(n.startswith("value_") for n in names)
            return "aux" if names[0] == "aux" else ("value" if value else "policy")

        return jax.tree_util.tree_map_with_path(label, params)
