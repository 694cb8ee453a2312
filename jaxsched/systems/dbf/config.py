"""The Deep Back-Filling config (`kind: dbf`): its sections and how a run is built from them.

    kind: dbf
    name: dbf_m10_9_1     # run name; the run directory is out_dir/name (default: the file's stem)
    seed: 0               # root of the training seeds: jax.random.split(key(seed), num_seeds)
    num_seeds: 3          # seeds trained together (jax.vmap) in one program
    out_dir: runs
    env:      {n_cores, window, tail, queue_capacity, episode_jobs, reward, reward_weights, max_steps}
    agent:    {network: mlp | inspector, inspector_base}
    workload: {source: lublin | swf, path, whole_sample, interactive, load_scale, train_episodes,
               test_episodes, jobs_per_episode, bank_seed, test_seed, test_fraction}
    ppo:      {any PPOConfig field}   (defaults: `agents.dbf.dbf_ppo_config()`, the paper's)
    eval:     {episodes, greedy, baselines, baseline_window, seed}

Parsing is the shared strict loader's (`experiments.config`). `build_run(cfg)` makes the env, the training
and held-out test params and the PPO config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from jaxsched.agents.dbf import REWARD_WEIGHTS, dbf_ppo_config
from jaxsched.agents.ppo import PPOConfig
from jaxsched.core.checks import at_least
from jaxsched.experiments.config import (
    TEST_BANK_TAG,
    TRAIN_BANK_TAG,
    ExperimentConfig,
    config_from_dict,
    purpose_key,
)

SOURCES = ("lublin", "swf")


@dataclass(frozen=True)
class EnvSection:
    """The HPC env (`dbf_env`): `window` slots of which `tail` come from the queue's tail; `reward` the
    paper's R(t) with `reward_weights` ("dbf") or the waiting part of the bounded slowdown ("bsld",
    SchedInspector's objective; `envs.hpc.HPCConfig`)."""

    n_cores: int = 256
    window: int = 10
    tail: int = 1
    queue_capacity: int = 256
    episode_jobs: int = 1000
    reward: str = "dbf"
    reward_weights: tuple[float, ...] = REWARD_WEIGHTS
    max_steps: int | None = None

    def __post_init__(self):
        from jaxsched.envs.hpc import REWARDS

        if self.reward not in REWARDS:
            raise ValueError(f"env.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        at_least(self, "env", ("n_cores", "window", "queue_capacity", "episode_jobs"))
        if not 0 <= self.tail <= self.window:
            raise ValueError(f"env.tail must be in 0..{self.window} (env.window), got {self.tail}")
        if len(self.reward_weights) != 3 or min(self.reward_weights) < 0:
            raise ValueError(
                "env.reward_weights must be 3 non-negative numbers (w1, w2, w3), "
                f"got {list(self.reward_weights)}"
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"env.max_steps must be >= 1 or null, got {self.max_steps}")


@dataclass(frozen=True)
class WorkloadSection:
    """Where the jobs come from: generated Lublin banks (train and test from separate keys) or an SWF
    trace split in time (`dbf.trace_split`; `train_episodes`/`test_episodes`/`jobs_per_episode` and the
    seeds are then unused)."""

    source: str = "lublin"
    path: str | None = None
    whole_sample: bool = True
    interactive: bool = False
    load_scale: float = 1.0
    train_episodes: int = 64
    test_episodes: int = 16
    jobs_per_episode: int = 2000
    bank_seed: int = 0
    test_seed: int = 1
    test_fraction: float = 0.3

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got '{self.source}'")
        if self.source == "swf" and not self.path:
            raise ValueError("workload.path is required when workload.source is 'swf'")
        at_least(self, "workload", ("train_episodes", "test_episodes", "jobs_per_episode"))
        if not (math.isfinite(self.load_scale) and self.load_scale > 0):
            raise ValueError(f"workload.load_scale must be a finite number > 0, got {self.load_scale}")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"workload.test_fraction must be in (0, 1), got {self.test_fraction}")
        if self.whole_sample and self.interactive:
            raise ValueError(
                "workload.whole_sample (the class-less Lublin parameter set) cannot be combined with "
                "workload.interactive: true"
            )


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

        if self.network not in NETWORKS:
            raise ValueError(f"agent.network must be one of {', '.join(NETWORKS)}, got {self.network!r}")
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

        if self.select not in SELECT:
            raise ValueError(f"eval.select must be one of {', '.join(SELECT)}, got {self.select!r}")
        at_least(self, "eval", ("episodes", "baseline_window", "validation_episodes"))
        for b in self.baselines:
            if b.removesuffix("_easy") not in SCORES:
                raise ValueError(
                    f"eval.baselines: unknown heuristic '{b}'; choose from {', '.join(SCORES)} "
                    "(append _easy for EASY back-filling)"
                )
        if len(set(self.baselines)) != len(self.baselines):
            raise ValueError(f"eval.baselines has duplicates: {list(self.baselines)}")


@dataclass(frozen=True)
class DBFConfig(ExperimentConfig):
    """A Deep Back-Filling experiment (`kind: dbf`)."""

    KIND: ClassVar[str] = "dbf"
    PATH_KEYS: ClassVar[tuple[str, ...]] = ("workload.path",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    agent: AgentSection = field(default_factory=AgentSection)
    ppo: PPOConfig = field(default_factory=dbf_ppo_config)
    eval: EvalSection = field(default_factory=EvalSection)

    def __post_init__(self):
        super().__post_init__()
        w = self.workload
        if w.source == "lublin":
            if w.jobs_per_episode < self.env.episode_jobs:
                raise ValueError(
                    f"workload.jobs_per_episode ({w.jobs_per_episode}) must be >= env.episode_jobs "
                    f"({self.env.episode_jobs}): an episode places episode_jobs jobs from one bank episode"
                )
            if self.eval.episodes > w.test_episodes:
                raise ValueError(
                    f"eval.episodes ({self.eval.episodes}) must be <= workload.test_episodes "
                    f"({w.test_episodes}): each held-out episode is played once"
                )
            try:
                self.lublin_config()
            except ValueError as e:
                raise ValueError(f"workload: {e}") from None

    def lublin_config(self):
        from jaxsched.workloads.lublin import LublinConfig

        w = self.workload
        return LublinConfig(
            n_nodes=self.env.n_cores,
            whole_sample=w.whole_sample,
            interactive=w.interactive,
            load_scale=float(w.load_scale),
        )


def build_run(cfg: DBFConfig):
    """`(env, train_params, test_params, ppo_config)` for `cfg`.

    Lublin: a training bank of `train_episodes` generated episodes (from `bank_seed`) and a held-out one
    of `test_episodes` (from `test_seed`; the two never share a key, see `purpose_key`). SWF: one trace,
    training windows before a split in time, test windows after it (`dbf.trace_split`). Both params share
    `runtime_norm` (the training jobs' largest requested time), so observations are normalised alike.
    """
    import numpy as np

    from jaxsched.agents.dbf import dbf_env, dbf_params, trace_split
    from jaxsched.workloads.lublin import generate_bank
    from jaxsched.workloads.swf import load_swf

    e, w = cfg.env, cfg.workload
    try:
        env = dbf_env(e.window, e.tail, e.n_cores, e.queue_capacity, e.reward)
    except ValueError as err:
        raise ValueError(f"env: {err}") from None
    kw = dict(episode_jobs=e.episode_jobs, max_steps=e.max_steps, w=e.reward_weights)
    if w.source == "lublin":
        lub = cfg.lublin_config()
        train_bank, tr_s, tr_e = generate_bank(
            purpose_key(w.bank_seed, TRAIN_BANK_TAG), lub, w.train_episodes, w.jobs_per_episode
        )
        test_bank, te_s, te_e = generate_bank(
            purpose_key(w.test_seed, TEST_BANK_TAG), lub, w.test_episodes, w.jobs_per_episode
        )
        norm = float(np.max(np.asarray(train_bank.req_time)))
        train = dbf_params(env, train_bank, tr_s, tr_e, runtime_norm=norm, **kw)
        test = dbf_params(env, test_bank, te_s, te_e, runtime_norm=norm, **kw)
    else:
        bank = load_swf(w.path, n_cores=e.n_cores)
        (tr_s, tr_e), (te_s, te_e) = trace_split(bank.num_jobs, e.episode_jobs, w.test_fraction)
        norm = float(np.max(np.asarray(bank.req_time)[: int(tr_e[0])]))
        train = dbf_params(env, bank, tr_s, tr_e, runtime_norm=norm, **kw)
        test = dbf_params(env, bank, te_s, te_e, runtime_norm=norm, **kw)
    return env, train, test, cfg.ppo


def dbf_config_from_dict(d: dict, source=None) -> DBFConfig:
    """A `DBFConfig` from a mapping (`kind` may be left out); see `experiments.config.config_from_dict`."""
    return config_from_dict(DBFConfig, d, source)


def load_dbf_config(path, overrides: list[str] | tuple[str, ...] = ()) -> DBFConfig:
    """Read and validate a `kind: dbf` YAML config with optional `KEY=VALUE` overrides."""
    from jaxsched.experiments.config import load_config

    return load_config(path, {DBFConfig.KIND: DBFConfig}, overrides)
