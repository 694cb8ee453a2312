"""The SCED² config (`kind: sced2`): its sections and how a run is built from them.

    kind: sced2
    name: sced2_68        # run name; each learner writes out_dir/name/<network>
    seed: 0               # root of the training seeds
    num_seeds: 3
    env:, workload:   the cluster and its episodes (`envs.gpu_locality.setup`: fields, banks, a CSV trace)
    agent:    {networks: [shared, mlp], server_hidden, job_hidden, head_hidden, mlp_hidden}
    dqn:      {any DQNConfig field}   (defaults: `sced2_dqn_config()`)
    eval:     {episodes, baselines, baseline_windows, headline}

`build_sced2(cfg)` makes the env and the training and held-out test params (`envs.gpu_locality.setup`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxsched.agents.dqn import DQNConfig
from jaxsched.core.checks import at_least, choices, one_of
from jaxsched.envs.gpu_locality.setup import GPULocalitySetup, build, make_env
from jaxsched.experiments.config import ExperimentConfig, HeldOutEval
from jaxsched.policies.gpu_locality import HEURISTICS

KIND = "sced2"
NETWORKS = ("shared", "mlp")  # Eq. 3–5's shared-weight Q-network, and the flat-MLP ablation
BASELINE_WINDOWS = ("window", "queue")  # the agent's J-window, or the whole waiting queue


def sced2_dqn_config(**overrides) -> DQNConfig:
    """The DQN settings of the paper's budget (2,400 episodes of 1,000 jobs; an episode of the 68 % trace
    takes about 1,600 decisions, so ≈ 3.8 M decisions: 30,000 updates of 16 envs × 8 decisions). The paper
    gives no hyper-parameters; these are DQN's usual ones."""
    base = dict(num_envs=16, rollout_steps=8, grad_steps=2, total_updates=30_000, updates_per_chunk=500,
                buffer_size=100_000, batch_size=128, learning_starts=5_000, lr=2.5e-4, gamma=0.99,
                target_every=500, eps_start=1.0, eps_end=0.05, eps_decay_frac=0.3)  # fmt: skip
    return DQNConfig(**(base | overrides))


@dataclass(frozen=True)
class AgentSection:
    """The Q-networks trained, one learner each: `shared` (Eq. 3–5: a server encoder of `server_hidden`
    shared by every server, a job/statistics encoder of `job_hidden`, a `head_hidden` layer) and `mlp`
    (the flat ablation, `mlp_hidden`)."""

    networks: tuple[str, ...] = ("shared",)
    server_hidden: tuple[int, ...] = (32, 16)
    job_hidden: tuple[int, ...] = (128,)
    head_hidden: int = 128
    mlp_hidden: tuple[int, ...] = (256, 256)

    def __post_init__(self):
        choices(self.networks, "agent.networks", NETWORKS, "network", nonempty=True)
        for name in ("server_hidden", "job_hidden", "mlp_hidden"):
            widths = getattr(self, name)
            if not widths or min(widths) < 1:
                raise ValueError(
                    f"agent.{name} must be a non-empty list of positive widths, got {list(widths)}"
                )
        at_least(self, "agent", ("head_hidden",))

    def network(self, name: str, env_config):
        """The injected Q-network of learner `name`."""
        from jaxsched.nn.mlp import QMLP
        from jaxsched.nn.sced2 import SCED2QNetwork

        if name == "shared":
            return SCED2QNetwork(env_config, self.server_hidden, self.job_hidden, self.head_hidden)
        return QMLP(env_config.window + 1, self.mlp_hidden)


@dataclass(frozen=True)
class EvalSection(HeldOutEval):
    """Held-out evaluation: every learner's greedy policy and the baselines on `episodes` test episodes
    (null: all of them, each once). A baseline runs over the agent's J-window (`window`) and over the
    whole waiting queue (`queue`); `headline` says which the paper tables compare against."""

    BASELINES: ClassVar[tuple[str, ...]] = HEURISTICS

    baselines: tuple[str, ...] = HEURISTICS
    baseline_windows: tuple[str, ...] = BASELINE_WINDOWS
    headline: str = "window"

    def __post_init__(self):
        super().__post_init__()
        choices(self.baseline_windows, "eval.baseline_windows", BASELINE_WINDOWS, "window", nonempty=True)
        one_of(self.headline, "eval.headline", self.baseline_windows)


@dataclass(frozen=True)
class SCED2Config(GPULocalitySetup, ExperimentConfig):
    """A SCED² experiment (`kind: sced2`): the cluster's env and workload sections and these."""

    KIND: ClassVar[str] = KIND

    agent: AgentSection = field(default_factory=AgentSection)
    dqn: DQNConfig = field(default_factory=sced2_dqn_config)
    eval: EvalSection = field(default_factory=EvalSection)


def window_env(cfg: SCED2Config, window: int):
    """`cfg`'s env with a window of `window` jobs (`envs.gpu_locality.setup.make_env`)."""
    return make_env(cfg.env, window)


def build_sced2(cfg: SCED2Config):
    """`(env, train_params, test_params)` for `cfg` (`envs.gpu_locality.setup.build`)."""
    return build(cfg.env, cfg.workload)
