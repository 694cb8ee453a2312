"""The DAS (GPU-cloud) config (`kind: das`): its sections and how a run is built from them.

A DAS config says `kind: das` and has these sections (every field optional; defaults are the paper's):

    kind: das
    name: das_heuristics_small
    seed: 0            # evaluation seeds: fold_in(key(seed), i), i < num_seeds (fluctuation, view sampling)
    num_seeds: 3
    out_dir: runs
    cluster:, env:, workload:   the GPU cloud (`envs.gpu_cloud.setup`: its fields, the job bank, the split)
    eval:     {seed, episodes, policies, select: last | validation, validation_episodes, greedy}
    agent:    {variants: [das, da, da_mc, da_rwgp, dl2, rifling], hidden, heads, tau, prior_mean, std_min,
              machine_index}
    mappo:    {num_envs, num_steps, total_updates, updates_per_chunk, update_epochs, num_minibatches,
               critic_hidden, lr, gamma, gae_lambda, clip_eps, ent_coef, vf_coef, max_grad_norm,
               target_interval}   (MAPPOConfig's fields; `jaxsched train` trains each variant in turn)

`build_das(cfg)` makes the env and the training / held-out test params (`envs.gpu_cloud.setup.build`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from jaxsched.agents.das import PRESETS, DASAgentConfig
from jaxsched.agents.mappo import MAPPOConfig
from jaxsched.core.checks import one_of
from jaxsched.envs.gpu_cloud.setup import GPUCloudSetup, build
from jaxsched.experiments.config import ExperimentConfig, config_from_dict, load_config
from jaxsched.experiments.select import SELECT
from jaxsched.policies.gpu_cloud import HEURISTICS, LABELS

KIND = "das"


@dataclass(frozen=True)
class EvalSection:
    seed: int = 0
    episodes: int | None = None  # None = every held-out episode
    policies: tuple[str, ...] = HEURISTICS
    # Which checkpoint of a trained agent the test episodes see: the last, or per seed the one with the
    # lowest JCT on `validation_episodes` episodes of the training bank (`systems.das.select`).
    select: str = "last"
    validation_episodes: int = 4
    # The learned policies act with their Gaussians' means (greedy) or sample them, as in training. The
    # greedy RWGP head places with its prior mean alone (agents/das.py, DASAgent.imitation_error).
    greedy: bool = True

    def __post_init__(self):
        for p in self.policies:
            if p not in LABELS:
                raise ValueError(f"eval.policies: unknown policy {p!r} (choose from {', '.join(LABELS)})")
        one_of(self.select, "eval.select", SELECT)
        if isinstance(self.validation_episodes, bool) or self.validation_episodes < 1:
            raise ValueError(f"eval.validation_episodes must be >= 1, got {self.validation_episodes!r}")


@dataclass(frozen=True)
class AgentSection:
    """Which learned schedulers to train (`agents.das.PRESETS`) and their network sizes (paper §5.1.3)."""

    variants: tuple[str, ...] = ("das",)
    hidden: int = 64
    heads: int = 4
    tau: int = 8
    prior_mean: str = "learned"
    std_min: float = 0.0
    machine_index: bool = False
    gp_noise: float = 0.1  # RWGP's initial noise variance (agents.das.DASAgentConfig.gp_noise)

    def __post_init__(self):
        if not self.variants:
            raise ValueError("agent.variants must name at least one variant")
        for v in self.variants:
            if v not in PRESETS:
                raise ValueError(f"agent.variants: unknown variant {v!r} (choose from {', '.join(PRESETS)})")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"agent.variants has a repeated variant: {list(self.variants)}")
        try:
            self.agent_config(self.variants[0])
        except ValueError as e:
            raise ValueError(str(e)) from None

    def agent_config(self, variant: str) -> DASAgentConfig:
        return DASAgentConfig.preset(
            variant, hidden=self.hidden, heads=self.heads, tau=self.tau, prior_mean=self.prior_mean,
            std_min=self.std_min, machine_index=self.machine_index, gp_noise=self.gp_noise,
        )  # fmt: skip


@dataclass(frozen=True)
class DASConfig(GPUCloudSetup, ExperimentConfig):
    """A DAS experiment (`kind: das`): the cloud's cluster, env and workload sections and these."""

    KIND: ClassVar[str] = KIND
    NOT_SETTINGS: ClassVar[dict[str, str]] = {"mappo.agent": "the networks are set in the agent section"}
    # `agent.variants` may grow on resume: each variant is its own run directory.
    RESUME_MAY_DIFFER: ClassVar[tuple[str, ...]] = (*ExperimentConfig.RESUME_MAY_DIFFER, "agent.variants")

    name: str = "das"
    eval: EvalSection = field(default_factory=EvalSection)
    agent: AgentSection = field(default_factory=AgentSection)
    mappo: MAPPOConfig = field(default_factory=MAPPOConfig)

    def __post_init__(self):
        super().__post_init__()
        one_of(self.mappo.imitation_teacher, "mappo.imitation_teacher", HEURISTICS)


def das_config_from_dict(d: dict, source: str | Path | None = None) -> DASConfig:
    """A `DASConfig` from a mapping (`kind` may be left out); errors are `ValueError`s naming the dotted
    key (and the file)."""
    return config_from_dict(DASConfig, d, source)


def load_das_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> DASConfig:
    """Read and validate a `kind: das` YAML config with optional `KEY=VALUE` overrides."""
    return load_config(path, {KIND: DASConfig}, overrides)


# ---- building the run ---------------------------------------------------------------------------------
def build_das(cfg: DASConfig):
    """`(env, train_params, test_params, test_starts)` for `cfg` (`envs.gpu_cloud.setup.build`); a
    cluster that prunes jobs says so."""
    env, train_params, test_params, test_starts, dropped = build(cfg.cluster, cfg.env, cfg.workload)
    if dropped:
        print(f"{cfg.name}: {dropped}")
    return env, train_params, test_params, test_starts
