"""The Dual-Agent Scheduler's actor (Xing et al., KDD'23, §4): ordering agent + placement agent.

    actor = DASActor(DASAgentConfig.preset("das"))
    policy = actor.apply(params, obs, history)   # DASPolicy: Gaussians over priorities [N], affinities [N, M]
    agent = DASAgent.for_env(DASAgentConfig.preset("das"), env)
    mappo = MAPPO(MAPPOConfig(), env, env_params, agent)   # agents.mappo: the algorithm, injected with it

`DASAgent` is what MAPPO trains (its multi-agent actor interface): the two agents' Gaussians, their
per-agent log-probabilities, the RWGP history as the per-env carry, the centralized critic's input (the
env's global state) and, for the imitation warm start, the heuristic teachers and the fit to them.

The ordering agent is `nn.das.OrderingEncoder` (Eq. 4–6) with the Gaussian priority head (Eq. 7–8). The
placement agent is the Random Walk GP (`nn.rwgp.RWGPHead`, RWGP.md) over the last τ decisions, or, for the
DA / DA+MC ablations, an MLP Gaussian head on `[Ŝʲ_i, Sᶜ_k]`. The job embeddings Ŝʲ of the current
observation and of the τ history observations come from one encoder call on the stacked observations, so
they share parameters and the history's graphs are recomputed with the current parameters (RWGP.md §5).

Ablations (Table 1): `da` (no message, MLP placement), `da_mc` (message, MLP), `da_rwgp` (no message,
RWGP), `das` (message + RWGP).

Learned baselines (§5.1.5, as the paper adapts them), trained by the same MAPPO code with the fixed half
contributing nothing to the log-probability:
  * `dl2`: DL² — a learned ordering agent (no cluster message) and FirstFit placement;
  * `rifling`: RIFLING — FIFO ordering and a learned placement agent that decides per job group: k-means
    on the visible jobs' resource features with k = √(N/2) (`nn.grouping`), one Gaussian affinity row per
    group from the MLP head on the group's mean job embedding, shared by its members.

Deviation: the RWGP head encodes machines with its own `W₂` (RWGP.md step 1) rather than sharing the
ordering encoder's machine FFN; both are trained by the same optimiser.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from jaxsched.core.checks import at_least
from jaxsched.core.metrics import masked_mean
from jaxsched.core.placement import descending_rank
from jaxsched.envs.gpu_cloud.obs import N_JOB_FEATURES, N_MACHINE_FEATURES, GPUCloudObs
from jaxsched.envs.gpu_cloud.types import GPUCloudAction
from jaxsched.nn.das import (
    GaussianPriorityHead,
    MLPPlacementHead,
    OrderingEncoder,
    masked_normal_entropy,
    masked_normal_log_prob,
)
from jaxsched.nn.grouping import kmeans_groups, rifling_k
from jaxsched.nn.rwgp import RWGPHead, RWGPHistory, RWGPStats, decision_stats, history_rows
from jaxsched.policies.gpu_cloud import HEURISTICS, fifo_priority, firstfit_affinity, make_heuristic

PRESETS = {
    "da": dict(message=False, placement="mlp"),
    "da_mc": dict(message=True, placement="mlp"),
    "da_rwgp": dict(message=False, placement="rwgp"),
    "das": dict(message=True, placement="rwgp"),
    "dl2": dict(message=False, placement="firstfit"),
    "rifling": dict(message=False, ordering="fifo", placement="grouped"),
}
LABELS = {
    "da": "DA",
    "da_mc": "DA+MC",
    "da_rwgp": "DA+RWGP",
    "das": "DAS",
    "dl2": "DL²",
    "rifling": "RIFLING",
}
PLACEMENTS = ("mlp", "rwgp", "firstfit", "grouped")
ORDERINGS = ("learned", "fifo")
GROUP_FEATURES = slice(0, 4)  # k-means on C, cpu, gpu, mem (not the wait)


@struct.dataclass
class DASPolicy:
    """One observation's action distribution: independent Gaussians. A fixed half (FIFO ordering,
    FirstFit placement) has σ = 0 and is not part of the log-probability. Affinity noise is drawn per
    placement group (`groups`; every job is its own group except for RIFLING) and a group's density is
    counted once, at its first member (`place_mask`)."""

    prio_mu: jnp.ndarray  # f32[N]
    prio_std: jnp.ndarray  # f32[N]
    aff_mu: jnp.ndarray  # f32[N, M]
    aff_std: jnp.ndarray  # f32[N]
    groups: jnp.ndarray  # i32[N] placement group of each slot
    place_mask: jnp.ndarray  # bool[N] slots whose affinity row is a (group's) random variable


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
    ordering: str = "learned"  # or "fifo" (RIFLING)
    # Exploration floor: σ ← √(σ² + std_min²) for every learned Gaussian (0 = the paper's heads). The GP
    # posterior's σ shrinks towards 0 as the history explains the affinities, which makes PPO's ratio
    # over M affinities per job explode; a floor keeps it finite.
    std_min: float = 0.0
    # Machine identity features: [k / (M − 1), one-hot(k)] appended to every machine's observation. The
    # paper's machine state (free resources, utilisation) cannot tell two machines in the same state
    # apart, so no learned placement head can express FirstFit or a fixed per-machine preference (the
    # machines' hidden speeds); the scheduler of a fixed cluster knows its machine ids. Off = the paper.
    machine_index: bool = False
    # RWGP: the initial GP noise variance σ² (trained from there; the kernel's own scale is 1). The
    # posterior mean is prior + kᵀ(K + σ²I)⁻¹(Y − prior(X)); with a small σ² and τ·N history points whose
    # graphs are alike (few machines) the history's weights sum to ~1, so a shift of the prior mean that
    # is common to all jobs cancels out of the sampled policy and PPO cannot move it (the greedy policy
    # is the prior mean). A large σ² keeps the prior in charge of the sampled policy too.
    gp_noise: float = 0.1

    def __post_init__(self):
        if self.ordering not in ORDERINGS:
            raise ValueError(f"agent.ordering must be one of {', '.join(ORDERINGS)}, got {self.ordering!r}")
        if self.ordering == "fifo" and self.placement == "firstfit":
            raise ValueError("agent.ordering 'fifo' with agent.placement 'firstfit' leaves nothing to learn")
        if self.placement not in PLACEMENTS:
            raise ValueError(
                f"agent.placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}"
            )
        if self.prior_mean not in ("learned", "zero"):
            raise ValueError(f"agent.prior_mean must be 'learned' or 'zero', got {self.prior_mean!r}")
        if not self.gp_noise > 0:
            raise ValueError(f"agent.gp_noise must be > 0, got {self.gp_noise}")
        if not 0.0 <= self.std_min < 1.0:
            raise ValueError(f"agent.std_min must be in [0, 1), got {self.std_min}")
        at_least(self, "agent", ("hidden", "heads", "tau"))
        if self.hidden % self.heads:
            raise ValueError(f"agent.hidden ({self.hidden}) must be a multiple of agent.heads ({self.heads})")

    @property
    def learns_ordering(self) -> bool:
        return self.ordering == "learned"

    @property
    def learns_placement(self) -> bool:
        return self.placement != "firstfit"

    @classmethod
    def preset(cls, name: str, **overrides) -> DASAgentConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown DAS variant {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def with_machine_index(machines: jnp.ndarray) -> jnp.ndarray:
    """`f32[..., M, v] -> f32[..., M, v + 1 + M]`: each machine's row gets `k / (M − 1)` and `one-hot(k)`."""
    m = machines.shape[-2]
    k = jnp.arange(m)
    ident = jnp.concatenate([(k / max(m - 1, 1))[:, None], jnp.eye(m)], axis=-1).astype(machines.dtype)
    ident = jnp.broadcast_to(ident, machines.shape[:-1] + ident.shape[-1:])
    return jnp.concatenate([machines, ident], axis=-1)


def empty_history(cfg: DASAgentConfig, n_slots: int, n_machines: int) -> RWGPHistory:
    """The RWGP's ring buffer of the last τ decisions, empty (also carried by the MLP variants, unused)."""
    return RWGPHistory.empty(cfg.tau, n_slots, n_machines, N_JOB_FEATURES, N_MACHINE_FEATURES)


class DASActor(nn.Module):
    """`(obs: GPUCloudObs, history: RWGPHistory) -> DASPolicy` for one environment (vmap for batches);
    `sequence` is the same for consecutive calls of one env, encoding each observation once."""

    config: DASAgentConfig

    def setup(self):
        cfg = self.config
        self.ordering = nn.vmap(
            OrderingEncoder,
            variable_axes={"params": None},
            split_rngs={"params": False},
            in_axes=0,
        )(cfg.hidden, cfg.heads, cfg.message, cfg.position)
        if cfg.learns_ordering:
            self.priority = GaussianPriorityHead()
        if cfg.placement == "rwgp":
            self.rwgp = RWGPHead(cfg.hidden, cfg.tau, cfg.prior_mean, noise_init=cfg.gp_noise)
        elif cfg.placement in ("mlp", "grouped"):
            self.placement = MLPPlacementHead(cfg.hidden)

    def __call__(self, obs: GPUCloudObs, history: RWGPHistory) -> DASPolicy:
        cfg = self.config
        rwgp = cfg.placement == "rwgp"
        if cfg.machine_index:
            obs = obs.replace(machines=with_machine_index(obs.machines))
            history = history.replace(mach_obs=with_machine_index(history.mach_obs))
        mask = obs.job_mask
        n = mask.shape[0]
        # The current observation first, then (RWGP only) the history's, through one shared encoder.
        jobs, masks, machines = obs.jobs[None], mask[None], obs.machines[None]
        if rwgp:
            jobs = jnp.concatenate([jobs, history.job_obs])
            masks = jnp.concatenate([masks, history.job_mask])
            machines = jnp.concatenate([machines, history.mach_obs])
        job_emb, mach_emb = self.ordering(jobs, masks, machines)

        prio_mu, prio_std = self._priority(obs, job_emb[0])
        groups, place_mask = jnp.arange(n, dtype=jnp.int32), mask
        if rwgp:
            aff_mu, aff_var = self.rwgp(
                job_emb[0], obs.machines, mask, job_emb[1:], history.mach_obs, history.job_mask,
                history.affinity, history.valid,
            )  # fmt: skip
            aff_std = jnp.sqrt(aff_var)
        elif cfg.placement == "mlp":
            aff_mu, aff_std = self.placement(job_emb[0], mach_emb[0])
        elif cfg.placement == "grouped":
            k = rifling_k(n)
            groups, place_mask = kmeans_groups(obs.jobs[:, GROUP_FEATURES], mask, k)
            member = (groups[None, :] == jnp.arange(k)[:, None]) & mask[None, :]  # [k, N]
            group_emb = (member @ job_emb[0]) / jnp.maximum(member.sum(axis=1), 1)[:, None]  # [k, e]
            g_mu, g_std = self.placement(group_emb, mach_emb[0])
            aff_mu, aff_std = g_mu[groups], g_std[groups]
        else:  # firstfit
            aff_mu, aff_std = firstfit_affinity(obs), jnp.zeros((n,), jnp.float32)
            place_mask = jnp.zeros_like(mask)
        return self._policy(prio_mu, prio_std, aff_mu, aff_std, groups, place_mask)

    def sequence(
        self, obs: GPUCloudObs, history: RWGPHistory, start: RWGPHistory, affinity: jax.Array,
        with_prior: bool = False,
    ) -> DASPolicy:  # fmt: skip
        """The policies `[T]` of T consecutive calls of one env (`obs`, `history` `[T]`: what each call saw;
        `affinity f32[T, N, M]` the rows each call sampled, which its decision pushed), `start` the history
        before the first: equal to `__call__` on each (RWGP placement only), up to rounding.

        `__call__` re-encodes τ + 1 observations per call and forms ΨᵀΨ over τN training points per
        decision. Here the table of `start`'s τ observations and the T calls' is encoded once, each
        observation's GP stats (`decision_stats`: ΨᵀΨ, Ψᵀr over its N jobs) computed once, and each
        decision's history stats are a sum of τ of them — one `[T, τ + T] × [τ + T, L·L]` matmul by the
        slots' selection (`history_rows`). `with_prior`: also the calls' prior means `f32[T, N, M]` (the
        posterior mean with the history cleared), as `(policy, prior)`."""
        cfg = self.config
        if cfg.placement != "rwgp":
            raise ValueError(f"DASActor.sequence is for the RWGP placement, not {cfg.placement!r}")
        tau = start.tau
        jobs = jnp.concatenate([start.job_obs, obs.jobs])  # [τ + T, N, u]
        masks = jnp.concatenate([start.job_mask, obs.job_mask])
        machines = jnp.concatenate([start.mach_obs, obs.machines])
        job_emb, psi, prior = self._encode(jobs, masks, machines)  # [τ + T, N, ...]
        # Row τ + c holds call c's observation; its slot (if call c decided) holds call c's sampled rows.
        gram, cross = decision_stats(psi, prior, masks, jnp.concatenate([start.affinity, affinity]))
        rows = history_rows(history, start)  # [T, τ]
        select = jnp.sum(jax.nn.one_hot(rows, jobs.shape[0]) * history.valid[..., None], axis=1)  # [T, τ + T]
        n_rows, n_feat = gram.shape[0], gram.shape[-1]
        hist_gram = (select @ gram.reshape(n_rows, -1)).reshape(-1, n_feat, n_feat)  # [T, L, L]
        hist_cross = (select @ cross.reshape(n_rows, -1)).reshape(-1, n_feat, cross.shape[-1])  # [T, L, M]
        aff_mu, aff_var = self.rwgp.posterior_from_stats(
            psi[tau:], prior[tau:], obs.job_mask, hist_gram, hist_cross
        )
        prio_mu, prio_std = self._priority(obs, job_emb[tau:])
        groups = jnp.broadcast_to(jnp.arange(obs.job_mask.shape[-1], dtype=jnp.int32), obs.job_mask.shape)
        policy = self._policy(prio_mu, prio_std, aff_mu, jnp.sqrt(aff_var), groups, obs.job_mask)
        return (policy, prior[tau:]) if with_prior else policy

    def _encode(self, jobs, masks, machines):
        """Observations `[U]` through the ordering encoder and the RWGP's per-observation features (machine
        ids appended first when configured) → `(job_emb f32[U, N, e], psi f32[U, N, L], prior
        f32[U, N, M])`."""
        if self.config.machine_index:
            machines = with_machine_index(machines)
        job_emb, _ = self.ordering(jobs, masks, machines)
        psi, prior = self.rwgp.features(job_emb, machines)
        return job_emb, psi, prior

    def history_stats(self, history: RWGPHistory) -> RWGPStats:
        """The GP stats of each slot of one env's history (`RWGPStats`), its τ observations encoded with
        these parameters (RWGP placement only): what `cached` needs in place of the history."""
        _, psi, prior = self._encode(history.job_obs, history.job_mask, history.mach_obs)  # [τ, N, ...]
        return RWGPStats(*decision_stats(psi, prior, history.job_mask, history.affinity))

    def cached(self, obs: GPUCloudObs, history: RWGPHistory, stats: RWGPStats):
        """`__call__` for one env with its history's slots already encoded (`stats`, from `history_stats`
        and kept up to date by the caller; `history` gives only which slots are valid): encodes the one
        current observation. Returns the policy and the observation's series features `f32[N, L]` and prior
        means `f32[N, M]`, from which the caller adds this decision's stats (`decision_stats`)."""
        cfg = self.config
        if cfg.placement != "rwgp":
            raise ValueError(f"DASActor.cached is for the RWGP placement, not {cfg.placement!r}")
        job_emb, psi, prior = self._encode(obs.jobs[None], obs.job_mask[None], obs.machines[None])
        psi, prior = psi[0], prior[0]
        hist_gram, hist_cross = stats.total(history.valid)
        aff_mu, aff_var = self.rwgp.posterior_from_stats(psi, prior, obs.job_mask, hist_gram, hist_cross)
        prio_mu, prio_std = self._priority(obs, job_emb[0])
        groups = jnp.arange(obs.job_mask.shape[0], dtype=jnp.int32)
        return self._policy(prio_mu, prio_std, aff_mu, jnp.sqrt(aff_var), groups, obs.job_mask), psi, prior

    def _priority(self, obs: GPUCloudObs, job_emb):
        """The ordering agent's Gaussians over the slots (`[..., N]`), or FIFO's priorities with σ = 0."""
        if self.config.learns_ordering:
            return self.priority(job_emb)
        fifo = fifo_priority if obs.job_mask.ndim == 1 else jax.vmap(fifo_priority)
        prio = fifo(obs)
        return prio, jnp.zeros(prio.shape, jnp.float32)

    def _policy(self, prio_mu, prio_std, aff_mu, aff_std, groups, place_mask) -> DASPolicy:
        cfg = self.config
        if cfg.std_min > 0:
            floor = lambda std: jnp.sqrt(jnp.square(std) + cfg.std_min**2)  # noqa: E731
            prio_std = floor(prio_std) if cfg.learns_ordering else prio_std
            aff_std = floor(aff_std) if cfg.learns_placement else aff_std
        return DASPolicy(prio_mu, prio_std, aff_mu, aff_std, groups, place_mask)


# ---- the imitation teacher (DL²'s supervised stage; agents.imitation runs it) -------------------------
def rank_targets(scores: jax.Array, mask: jax.Array) -> jax.Array:
    """`f32[..., K]`: the valid entries' scores replaced by `1 − 2 (r + ½) / K_valid` (r = descending
    rank, ties to the lower index as in the env); padded entries are 0. `mask: bool[..., K]`.

    The env only uses the order of the priorities and, per job, of the affinities (`GPUCloudEnv` ranks
    them), so a teacher's scores become evenly spaced values in (−1, 1) in the same order, which the tanh
    heads can reach and which act exactly like the teacher."""
    rank = descending_rank(jnp.where(mask, scores, -jnp.inf))
    k = jnp.maximum(mask.sum(axis=-1, keepdims=True), 1)
    return jnp.where(mask, 1.0 - 2.0 * (rank + 0.5) / k, 0.0)


def teacher_action(teacher: str):
    """`act(obs) -> GPUCloudAction`: the heuristic `teacher`'s action as rank targets (one env)."""
    if teacher not in HEURISTICS:
        raise ValueError(f"mappo.imitation_teacher must be one of {', '.join(HEURISTICS)}, got {teacher!r}")
    policy = make_heuristic(teacher)

    def act(obs: GPUCloudObs) -> GPUCloudAction:
        a = policy(None, obs, None)
        every_machine = jnp.ones(a.affinity.shape, bool)
        return GPUCloudAction(
            priority=rank_targets(a.priority, obs.job_mask), affinity=rank_targets(a.affinity, every_machine)
        )

    return act


# ---- what MAPPO trains --------------------------------------------------------------------------------
class DASAgent:
    """The DAS actor as MAPPO's multi-agent actor (`agents.mappo.MultiAgentActor`), for one env: agent 0
    orders (priorities of the N slots), agent 1 places (affinity rows); the carry is the RWGP history of
    the last τ decisions (carried by the MLP variants too, unused)."""

    def __init__(self, config: DASAgentConfig, n_slots: int, n_machines: int):
        self.config = config
        self.n_slots, self.n_machines = n_slots, n_machines
        self.actor = DASActor(config)
        self.learns = (config.learns_ordering, config.learns_placement)

    @classmethod
    def for_env(cls, config: DASAgentConfig, env) -> DASAgent:
        """The agent for a `GPUCloudEnv`'s slot and machine counts."""
        return cls(config, env.config.n_slots, env.config.n_machines)

    def init(self, key: jax.Array, obs: GPUCloudObs, history: RWGPHistory):
        return self.actor.init(key, obs, history)

    def initial_carry(self) -> RWGPHistory:
        return empty_history(self.config, self.n_slots, self.n_machines)

    def distribution(self, params, obs: GPUCloudObs, history: RWGPHistory) -> DASPolicy:
        """Both agents' Gaussians for one env."""
        return self.actor.apply(params, obs, history)

    def _log_prob(self, pol: DASPolicy, obs: GPUCloudObs, action: GPUCloudAction):
        """`f32[2]`: the log-densities of the two agents' actions — the ordering agent's priorities of
        the valid slots, the placement agent's affinity rows of the placement groups (each once); 0 for
        a fixed (heuristic) half. Kept apart so that each agent has its own PPO ratio (MAPPO)."""
        lp_order, lp_place = jnp.float32(0.0), jnp.float32(0.0)
        if self.config.learns_ordering:
            lp_order = masked_normal_log_prob(pol.prio_mu, pol.prio_std, action.priority, obs.job_mask)
        if self.config.learns_placement:
            lp_place = masked_normal_log_prob(pol.aff_mu, pol.aff_std, action.affinity, pol.place_mask)
        return jnp.stack([lp_order, lp_place])

    def act(self, params, obs: GPUCloudObs, history: RWGPHistory, key: jax.Array, greedy: bool = False):
        """Sample (or take the means of) both actions: `(GPUCloudAction, log_prob f32[2])`. A fixed half
        (σ = 0) is its heuristic's action; affinity noise is shared within a placement group."""
        return self._sample(self.distribution(params, obs, history), obs, key, greedy)

    def _sample(self, pol: DASPolicy, obs: GPUCloudObs, key: jax.Array, greedy: bool):
        prio, aff = pol.prio_mu, pol.aff_mu
        if not greedy:
            k1, k2 = jax.random.split(key)
            prio = prio + pol.prio_std * jax.random.normal(k1, prio.shape)
            aff = aff + pol.aff_std[:, None] * jax.random.normal(k2, aff.shape)[pol.groups]
        action = GPUCloudAction(priority=prio, affinity=aff)
        return action, self._log_prob(pol, obs, action)

    # ---- the rollout's cache of the encoded history (agents.mappo: `carry_cache`, `act_cached`) -------
    @property
    def caches_carry(self) -> bool:
        """The RWGP's history is encoded once per rollout (`carry_cache`), not τ + 1 observations a call."""
        return self.config.placement == "rwgp"

    def carry_cache(self, params, history: RWGPHistory) -> RWGPStats:
        """One env's history encoded with `params` (the acting ones, at a rollout's start)."""
        return self.actor.apply(params, history, method=DASActor.history_stats)

    def act_cached(self, params, obs: GPUCloudObs, history: RWGPHistory, stats: RWGPStats, key: jax.Array,
                   greedy: bool = False):  # fmt: skip
        """`act` from the encoded history (`carry_cache`) → `(action, log_prob f32[2], stats)`, the stats
        with this call's decision written where `advance` will push it (the slot `history.head`), so they
        stay in step with the history; the same draws as `act`, the same policy up to rounding."""
        pol, psi, prior = self.actor.apply(params, obs, history, stats, method=DASActor.cached)
        action, log_prob = self._sample(pol, obs, key, greedy)
        pushed = stats.write(history.head, *decision_stats(psi, prior, obs.job_mask, action.affinity))
        stats = jax.tree.map(lambda a, b: jnp.where(self.decision(obs), a, b), pushed, stats)
        return action, log_prob, stats

    @property
    def sequence_carry(self) -> bool:
        """The RWGP's carry is a window of past observations: MAPPO then trains on whole envs through
        `log_prob_entropy_sequence` (agents.mappo)."""
        return self.config.placement == "rwgp"

    def log_prob_entropy_sequence(
        self, params, obs: GPUCloudObs, history: RWGPHistory, action: GPUCloudAction, start: RWGPHistory
    ):
        """`log_prob_entropy` of T consecutive calls of one env (`[T]` inputs; `start` the history before
        the first) → `(f32[T, 2], f32[T])`, each observation encoded once (`DASActor.sequence`)."""
        pol = self.actor.apply(params, obs, history, start, action.affinity, method=DASActor.sequence)
        return jax.vmap(self._log_prob_entropy)(pol, obs, action)

    def log_prob_entropy(self, params, obs: GPUCloudObs, history: RWGPHistory, action: GPUCloudAction):
        """Per-agent log-probs `f32[2]` of `action`, and the entropy *per action dimension* (mean over the
        learned Gaussians: 1 per valid slot for the ordering, M per placement group). Per dimension, so
        that the entropy weight does not scale with the number of visible jobs and machines."""
        return self._log_prob_entropy(self.distribution(params, obs, history), obs, action)

    def _log_prob_entropy(self, pol: DASPolicy, obs: GPUCloudObs, action: GPUCloudAction):
        cfg = self.config
        ent, dims = jnp.float32(0.0), jnp.float32(0.0)
        if cfg.learns_ordering:
            ent += masked_normal_entropy(pol.prio_mu, pol.prio_std, obs.job_mask)
            dims += obs.job_mask.sum()
        if cfg.learns_placement:
            ent += masked_normal_entropy(pol.aff_mu, pol.aff_std, pol.place_mask)
            dims += pol.place_mask.sum() * pol.aff_mu.shape[-1]
        return self._log_prob(pol, obs, action), ent / jnp.maximum(dims, 1)

    @staticmethod
    def advance(history: RWGPHistory, obs: GPUCloudObs, action: GPUCloudAction, decision, done):
        """Push a decision into one env's history; clear it when the episode ended."""
        pushed = history.push(obs.jobs, obs.job_mask, obs.machines, action.affinity)
        history = jax.tree.map(lambda a, b: jnp.where(decision, a, b), pushed, history)
        history = jax.tree.map(lambda a, b: jnp.where(done, a, b), history.clear(), history)
        return history.count_call()

    @staticmethod
    def critic_input(obs: GPUCloudObs) -> jnp.ndarray:
        return obs.global_state

    @staticmethod
    def decision(obs: GPUCloudObs) -> jnp.ndarray:
        return obs.decision

    # ---- imitation (agents.imitation) ----------------------------------------------------------------
    @staticmethod
    def teacher(name: str):
        """`label(obs) -> GPUCloudAction`: the heuristic `name` as rank targets (`teacher_action`)."""
        return teacher_action(name)

    def imitation_error(self, params, obs: GPUCloudObs, history: RWGPHistory, label: GPUCloudAction,
                        log_std_target: float):  # fmt: skip
        """`(fit, mean_err)` for one call: the mean squared error of the learned (greedy) means to the
        teacher's `label`, and `fit` = that plus `(log σ − log_std_target)²` of every learned Gaussian."""
        pol = self.distribution(params, obs, history)
        prior = None
        if self.config.placement == "rwgp":
            # The greedy RWGP's history holds its own means, so its posterior mean is its prior mean
            # (tests/test_imitation.py::test_greedy_rwgp_posterior_mean_is_its_prior_mean): fit the
            # prior, the mean with the history cleared. The σ stays the posterior's (with no history
            # it is the kernel's constant 1), hence the second pass.
            prior = self.distribution(params, obs, history.clear()).aff_mu
        return self._imitation_terms(pol, prior, obs, label, log_std_target)

    def imitation_error_sequence(
        self, params, obs: GPUCloudObs, history: RWGPHistory, action: GPUCloudAction, start: RWGPHistory,
        label: GPUCloudAction, log_std_target: float,
    ):  # fmt: skip
        """`imitation_error` of T consecutive calls of one env (`[T]` inputs, `action` what each call
        did, `start` the history before the first) → `(f32[T], f32[T])`, through `DASActor.sequence`:
        each observation encoded once, the prior means from the same pass (RWGP placement only)."""
        pol, prior = self.actor.apply(
            params, obs, history, start, action.affinity, True, method=DASActor.sequence
        )
        prior = jnp.where(obs.job_mask[..., None], prior, 0.0)  # as the posterior with no history
        terms = lambda p, pr, o, lab: self._imitation_terms(p, pr, o, lab, log_std_target)  # noqa: E731
        return jax.vmap(terms)(pol, prior, obs, label)

    def _imitation_terms(self, pol: DASPolicy, aff_prior, obs: GPUCloudObs, label: GPUCloudAction,
                         log_std_target: float):  # fmt: skip
        """`(fit, mean_err)` of one call's policy; `aff_prior f32[N, M]` the RWGP's fitted mean."""
        cfg = self.config
        mean_err, std_err = jnp.float32(0.0), jnp.float32(0.0)
        if cfg.learns_ordering:
            mask = obs.job_mask
            mean_err += masked_mean(jnp.square(pol.prio_mu - label.priority), mask)
            std_err += masked_mean(jnp.square(jnp.log(pol.prio_std) - log_std_target), mask)
        if cfg.learns_placement:
            rows = pol.place_mask
            every = jnp.broadcast_to(rows[:, None], label.affinity.shape)
            aff_mu = pol.aff_mu if aff_prior is None else aff_prior
            mean_err += masked_mean(jnp.square(aff_mu - label.affinity), every)
            std_err += masked_mean(jnp.square(jnp.log(pol.aff_std) - log_std_target), rows)
        return mean_err + std_err, mean_err
