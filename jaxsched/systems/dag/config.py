"""The idle-slot DAG config (`kind: dag`): its sections and how a run is built from them.

    kind: dag
    name: dag_synthetic   # run name; each variant writes out_dir/name/<variant>
    seed: 0               # root of the training seeds (the same seeds for every variant)
    num_seeds: 3
    env:, workload:   the cluster and its episodes (`envs.dag.setup`: fields, banks, checks)
    agent:     {variants: [full, no_features, no_idle, replace], hidden, levels}
    reinforce: {any ReinforceConfig field}   (defaults: `dag_reinforce_config()`)
    eval:      {episodes, baselines, seed}

`build_dag(cfg)` makes the env and the training and held-out test params (`envs.dag.setup`).

The variants (the paper's Table 1 and Fig. 4 columns) are injected networks (`nn.idle_dag`):
  full          the paper's agent: Decima's inputs plus critical path and average width, idle slots
  no_features   Table 1's "w/o selected features": the two features left out
  no_idle       Table 1's "w/o idle time": r > 0 masked, so the agent never delays a stage
  replace       Fig. 4's "replacing features": the two features take the place of two of Decima's inputs
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from jaxsched.agents.reinforce import ReinforceConfig
from jaxsched.core.checks import at_least, choices
from jaxsched.envs.dag import setup
from jaxsched.envs.dag.env import DAGEnv
from jaxsched.envs.dag.setup import DAGSetup
from jaxsched.experiments.config import ExperimentConfig, SampledEval
from jaxsched.policies.dag import HEURISTICS

KIND = "dag"
# variant -> (IdleDAGNetwork features, idle slots allowed)
VARIANTS = {
    "full": ("add", True),
    "no_features": ("none", True),
    "no_idle": ("add", False),
    "replace": ("replace", True),
}
BASELINES = (*HEURISTICS, "random")


def dag_reinforce_config(**overrides) -> ReinforceConfig:
    """Decima's policy gradient as the paper trains it (it gives no hyper-parameters; these are Decima's
    Adam rate, 4 × 4 rollouts per update and an entropy bonus annealed to near 0)."""
    base = dict(num_sequences=4, rollouts=4, num_steps=256, total_updates=500, updates_per_chunk=25,
                lr=1e-3, max_grad_norm=10.0, ent_start=0.05, ent_end=0.001, curriculum_start_s=0.0,
                curriculum_end_s=0.0)  # fmt: skip
    return ReinforceConfig(**(base | overrides))


@dataclass(frozen=True)
class AgentSection:
    """The variants trained, one learner each (module docstring), with Decima's graph network of `hidden`
    units and `levels` message-passing rounds (null: max_stages − 1, enough for any DAG). A round per
    height is all a bank needs: with `levels` = its deepest DAG's height the embeddings are those of
    max_stages − 1 rounds, at a fraction of the cost (each round is two MLPs over every stage, and the
    gradient's share of an update grows with them); `build_params` refuses fewer."""

    variants: tuple[str, ...] = ("full", "no_features", "no_idle")
    hidden: int = 16
    levels: int | None = None

    def __post_init__(self):
        choices(self.variants, "agent.variants", VARIANTS, "variant", nonempty=True)
        at_least(self, "agent", ("hidden",))
        if self.levels is not None and self.levels < 1:
            raise ValueError(f"agent.levels must be >= 1 or null, got {self.levels}")

    def network(self, variant: str, env_config):
        """The injected policy network of `variant`."""
        from jaxsched.nn.idle_dag import IdleDAGNetwork

        features, idle = VARIANTS[variant]
        return IdleDAGNetwork(env_config, self.hidden, self.levels, features=features, idle=idle)


@dataclass(frozen=True)
class EvalSection(SampledEval):
    """Held-out evaluation: each variant's policy (sampled, as Decima evaluates, or with `greedy` its most
    likely action at every decision; every seed) and the baselines on `episodes` test episodes (null: all)."""

    BASELINES: ClassVar[tuple[str, ...]] = BASELINES

    baselines: tuple[str, ...] = HEURISTICS
    greedy: bool = False


@dataclass(frozen=True)
class DAGSystemConfig(DAGSetup, ExperimentConfig):
    """An idle-slot DAG experiment (`kind: dag`): the cluster's env and workload sections and these."""

    KIND: ClassVar[str] = KIND

    agent: AgentSection = field(default_factory=AgentSection)
    reinforce: ReinforceConfig = field(default_factory=dag_reinforce_config)
    eval: EvalSection = field(default_factory=EvalSection)


def make_env(cfg: DAGSystemConfig, jct: bool = False):
    """`cfg`'s env (`SystemDAGEnv`: the DAG env whose episode metrics also carry the return, and with
    `jct` each job's completion time)."""
    return SystemDAGEnv(cfg.env.dag_config(), jct=jct)


def build_params(cfg: DAGSystemConfig, env, bank: str = "test"):
    """The env params of `cfg`'s training (`bank="train"`) or held-out (`"test"`) bank on `env` (`make_env
    (cfg)`), `envs.dag.setup.build_params`; a config changed in its workload section gives that bank
    regenerated. `agent.levels` must reach the bank's deepest DAG."""
    params = setup.build_params(env, cfg.env, cfg.workload, bank)
    depth = int(np.max(np.asarray(params.bank.height)))
    if cfg.agent.levels is not None and cfg.agent.levels < depth:
        raise ValueError(
            f"agent.levels ({cfg.agent.levels}) is below the height of the {bank} bank's deepest DAG "
            f"({depth}): message passing would stop short of its roots; set agent.levels >= {depth} or null"
        )
    return params


def build_dag(cfg: DAGSystemConfig):
    """`(env, train_params, test_params)` for `cfg`; errors of the generator or the bank name the field."""
    env = make_env(cfg)
    return env, build_params(cfg, env, "train"), build_params(cfg, env, "test")


class SystemDAGEnv(DAGEnv):
    """The DAG env whose `metrics` add `episode_return` (the return so far: the shared trainer's
    episode-return curve) and, with `jct`, `jct` (i32[N] per-job completion times, ms, −1 unfinished: the
    evaluator's CDF samples; not for training, whose metrics are per-episode scalars)."""

    def __init__(self, config=None, jct: bool = False):
        super().__init__(config)
        self.jct = jct

    def metrics(self, state, params):
        out = dict(super().metrics(state, params), episode_return=state.ret)
        if self.jct:
            out["jct"] = state.jct
        return out
