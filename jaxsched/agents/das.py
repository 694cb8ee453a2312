"""The Dual-Agent Scheduler's actor (Xing et al., KDD'23, §4): ordering agent + placement agent.

    actor = DASActor(DASAgentConfig.preset("das"))
    (prio_mu [N], prio_std [N], aff_mu [N, M], aff_std [N]) = actor.apply(params, obs, history)

The ordering agent is `nn.das.OrderingEncoder` (Eq. 4–6) with the Gaussian priority head (Eq. 7–8). The
placement agent is the Random Walk GP (`nn.rwgp.RWGPHead`, RWGP.md) over the last τ decisions, or, for the
DA / DA+MC ablations, an MLP Gaussian head on `[Ŝʲ_i, Sᶜ_k]`. The job embeddings Ŝʲ of the current
observation and of the τ history observations come from one encoder call on the stacked observations, so
they share parameters and the history's graphs are recomputed with the current parameters (RWGP.md §5).

Ablations (Table 1): `da` (no message, MLP placement), `da_mc` (message, MLP), `da_rwgp` (no message,
RWGP), `das` (message + RWGP).

Deviation: the RWGP head encodes machines with its own `W₂` (RWGP.md step 1) rather than sharing the
ordering encoder's machine FFN; both are trained by the same optimiser.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax.numpy as jnp

from jaxsched.envs.gpu_cloud import N_JOB_FEATURES, N_MACHINE_FEATURES, GPUCloudObs
from jaxsched.nn.das import GaussianPriorityHead, MLPPlacementHead, OrderingEncoder
from jaxsched.nn.rwgp import RWGPHead, RWGPHistory

PRESETS = {
    "da": dict(message=False, placement="mlp"),
    "da_mc": dict(message=True, placement="mlp"),
    "da_rwgp": dict(message=False, placement="rwgp"),
    "das": dict(message=True, placement="rwgp"),
}
PLACEMENTS = ("mlp", "rwgp")


@dataclass(frozen=True)
class DASAgentConfig:
    """Static network settings (paper §5.1.3: e = 64, h = 4, τ = 8)."""

    hidden: int = 64
    heads: int = 4
    tau: int = 8
    message: bool = True
    position: bool = True
    placement: str = "rwgp"
    prior_mean: str = "learned"  # RWGP prior mean: "learned" or "zero" (the paper)

    def __post_init__(self):
        if self.placement not in PLACEMENTS:
            raise ValueError(
                f"agent.placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}"
            )
        if self.prior_mean not in ("learned", "zero"):
            raise ValueError(f"agent.prior_mean must be 'learned' or 'zero', got {self.prior_mean!r}")
        for name in ("hidden", "heads", "tau"):
            if getattr(self, name) < 1:
                raise ValueError(f"agent.{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ValueError(f"agent.hidden ({self.hidden}) must be a multiple of agent.heads ({self.heads})")

    @classmethod
    def preset(cls, name: str, **overrides) -> DASAgentConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown DAS variant {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def empty_history(cfg: DASAgentConfig, n_slots: int, n_machines: int) -> RWGPHistory:
    """The RWGP's ring buffer of the last τ decisions, empty (also carried by the MLP variants, unused)."""
    return RWGPHistory.empty(cfg.tau, n_slots, n_machines, N_JOB_FEATURES, N_MACHINE_FEATURES)


class DASActor(nn.Module):
    """`(obs: GPUCloudObs, history: RWGPHistory) -> (prio_mu [N], prio_std [N], aff_mu [N, M], aff_std [N])`
    for one environment (vmap for batches)."""

    config: DASAgentConfig

    @nn.compact
    def __call__(self, obs: GPUCloudObs, history: RWGPHistory):
        cfg = self.config
        encoder = nn.vmap(
            OrderingEncoder,
            variable_axes={"params": None},
            split_rngs={"params": False},
            in_axes=0,
        )(cfg.hidden, cfg.heads, cfg.message, cfg.position, name="ordering")
        rwgp = cfg.placement == "rwgp"
        # The current observation first, then (RWGP only) the history's, through one shared encoder.
        jobs, mask, machines = obs.jobs[None], obs.job_mask[None], obs.machines[None]
        if rwgp:
            jobs = jnp.concatenate([jobs, history.job_obs])
            mask = jnp.concatenate([mask, history.job_mask])
            machines = jnp.concatenate([machines, history.mach_obs])
        job_emb, mach_emb = encoder(jobs, mask, machines)
        prio_mu, prio_std = GaussianPriorityHead(name="priority")(job_emb[0])
        if rwgp:
            head = RWGPHead(hidden=cfg.hidden, tau=cfg.tau, prior_mean=cfg.prior_mean, name="rwgp")
            aff_mu, aff_var = head(
                job_emb[0], obs.machines, obs.job_mask, job_emb[1:], history.mach_obs, history.job_mask,
                history.affinity, history.valid,
            )  # fmt: skip
            aff_std = jnp.sqrt(aff_var)
        else:
            aff_mu, aff_std = MLPPlacementHead(cfg.hidden, name="placement")(job_emb[0], mach_emb[0])
        return prio_mu, prio_std, aff_mu, aff_std
