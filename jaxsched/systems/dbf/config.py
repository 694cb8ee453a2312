"""The Deep Back-Filling config (`kind: dbf`): its sections and how a run is built from them.

    kind: dbf
    name: dbf_m10_9_1     # run name; the run directory is out_dir/name (default: the file's stem)
    seed: 0               # root of the training seeds: jax.random.split(key(seed), num_seeds)
    num_seeds: 3          # seeds trained together (jax.vmap) in one program
    out_dir: runs
    env:, workload:   the cluster and its episodes (`envs.hpc.setup`: fields, banks, the trace split)
    agent:    {network: mlp | inspector, inspector_base}
    ppo:      {any PPOConfig field}   (defaults: `agents.dbf.dbf_ppo_config()`, the paper's)
    eval:     {episodes, greedy, baselines, baseline_window, seed}

Parsing is the shared strict loader's (`experiments.config`). `build_run(cfg)` makes the env, the training
and held-out test params (`envs.hpc.setup`) and the PPO config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxsched.agents.dbf import dbf_ppo_config
from jaxsched.agents.ppo import PPOConfig
from jaxsched.core.checks import at_least, choices, one_of
from jaxsched.envs.hpc.setup import HPCSetup, build
from jaxsched.experiments.config import ExperimentConfig, config_from_dict

NETWORKS = ("mlp", "inspector")


@dataclass(frozen=True)
class AgentSection:
    """The network PPO trains: `mlp`, DBF's actor and critic on the observation vector (`ppo.hidden`
    layers), or `inspector`, SchedInspector's accept/skip actor over the heuristic `inspector_base` (a score
    of `policies.scores`, `_easy` for EASY back-filling; `nn.inspector`, the same `ppo.hidden`). Give an
    inspector the baselines' window (`env.window` = `eval.baseline_window`, `env.tail` = 0) so that its
    base heuristic sees what the baseline does."""

    network: str = "mlp"
    inspector_base: str = "sjf_easy"

    def __post_init__(self):
        from jaxsched.policies.scores import SCORES

        one_of(self.network, "agent.network", NETWORKS)
        if self.inspector_base.removesuffix("_easy") not in SCORES:
            raise ValueError(
                f"agent.inspector_base: unknown heuristic {self.inspector_base!r}; choose from "
                f"{', '.join(SCORES)} (append _easy for EASY back-filling)"
            )

    def build(self, env, ppo: PPOConfig):
        """The network to inject into `PPO` (None: PPO's default MLP)."""
        if self.network == "mlp":
            return None
        from jaxsched.nn.inspector import InspectorActorCritic
        from jaxsched.policies.hpc import make_priority_policy

        b = self.inspector_base
        base = make_priority_policy(env, b.removesuffix("_easy"), b.endswith("_easy"))
        return InspectorActorCritic(base, env.fwd_action + 1, ppo.hidden, ppo.activation)


@dataclass(frozen=True)
class EvalSection:
    """Held-out evaluation: the learned policy (greedy or sampled) and heuristic baselines (score name,
    `_easy` for EASY back-filling) in a head-only window of `baseline_window` slots."""

    episodes: int = 16
    greedy: bool = True
    baselines: tuple[str, ...] = ("fcfs", "lcfs", "sjf", "fcfs_easy", "sjf_easy")
    baseline_window: int = 64
    seed: int = 2  # root of the evaluation episode keys (the same episodes for every policy)
    # Which checkpoint the test episodes see: the last, or per seed the one with the lowest average wait on
    # `validation_episodes` episodes of the training bank (`experiments.select`, `train.validator`).
    select: str = "last"
    validation_episodes: int = 8

    def __post_init__(self):
        from jaxsched.experiments.select import SELECT
        from jaxsched.policies.scores import SCORES

        one_of(self.select, "eval.select", SELECT)
        at_least(self, "eval", ("episodes", "baseline_window", "validation_episodes"))
        for b in self.baselines:
            if b.removesuffix("_easy") not in SCORES:
                raise ValueError(
                    f"eval.baselines: unknown heuristic '{b}'; choose from {', '.join(SCORES)} "
                    "(append _easy for EASY back-filling)"
                )
        choices(self.baselines, "eval.baselines", self.baselines, "heuristic")  # none twice


@dataclass(frozen=True)
class DBFConfig(HPCSetup, ExperimentConfig):
    """A Deep Back-Filling experiment (`kind: dbf`): the cluster's env and workload sections and these."""

    KIND: ClassVar[str] = "dbf"

    agent: AgentSection = field(default_factory=AgentSection)
    ppo: PPOConfig = field(default_factory=dbf_ppo_config)
    eval: EvalSection = field(default_factory=EvalSection)

    def __post_init__(self):
        super().__post_init__()
        if self.workload.source == "lublin" and self.eval.episodes > self.workload.test_episodes:
            raise ValueError(
                f"eval.episodes ({self.eval.episodes}) must be <= workload.test_episodes "
                f"({self.workload.test_episodes}): each held-out episode is played once"
            )


def build_run(cfg: DBFConfig):
    """`(env, train_params, test_params, ppo_config)` for `cfg` (`envs.hpc.setup.build`)."""
    return *build(cfg.env, cfg.workload), cfg.ppo


def dbf_config_from_dict(d: dict, source=None) -> DBFConfig:
    """A `DBFConfig` from a mapping (`kind` may be left out); see `experiments.config.config_from_dict`."""
    return config_from_dict(DBFConfig, d, source)


def load_dbf_config(path, overrides: list[str] | tuple[str, ...] = ()) -> DBFConfig:
    """Read and validate a `kind: dbf` YAML config with optional `KEY=VALUE` overrides."""
    from jaxsched.experiments.config import load_config

    return load_config(path, {DBFConfig.KIND: DBFConfig}, overrides)
