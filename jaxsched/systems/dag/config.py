"""The idle-slot DAG config (`kind: dag`): its sections and how a run is built from them.

    kind: dag
    name: dag_synthetic   # run name; each variant writes out_dir/name/<variant>
    seed: 0               # root of the training seeds (the same seeds for every variant)
    num_seeds: 3
    env:       {n_executors, max_slots, max_stages, idle_levels, max_events, moving_delay, warmup_delay,
                reward_scale}
    workload:  {source: synthetic | tpch_like | mixed | tpch, train_episodes, test_episodes,
                jobs_per_episode, load, mean_gap_s, n_init, long_len_s, short_len_s, long_fraction,
                long_std_frac, synth_max_stages, max_tasks, alpha, tpch_npz, bank_seed, test_seed}
    agent:     {variants: [full, no_features, no_idle, replace], hidden, levels}
    reinforce: {any ReinforceConfig field}   (defaults: `dag_reinforce_config()`)
    eval:      {episodes, baselines, seed}

`build_dag(cfg)` makes the env and the training and held-out test params. The two banks come from the
same generator with different seeds (`workload.bank_seed`, `workload.test_seed`, which must differ), so
the test episodes are new arrivals of new jobs: for `synthetic` and `mixed` new DAGs; for `tpch_like` a new
draw of the TPC-H-like template pool as well (the generator's seed draws both); for `tpch` the same real
templates in new sequences.

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
from jaxsched.core.checks import at_least, in_unit_interval, positive
from jaxsched.envs.dag.env import DAGEnv
from jaxsched.experiments.config import ExperimentConfig, SampledEval
from jaxsched.policies.dag import HEURISTICS

KIND = "dag"
SOURCES = ("synthetic", "tpch_like", "mixed", "tpch")
# variant -> (IdleDAGNetwork features, idle slots allowed)
VARIANTS = {
    "full": ("add", True),
    "no_features": ("none", True),
    "no_idle": ("add", False),
    "replace": ("replace", True),
}
BASELINES = (*HEURISTICS, "random")
# mixed_bank draws its synthetic jobs with the generator's fixed shape (synthetic_templates' defaults)
MIXED_SYNTH_SHAPE = {"synth_max_stages": 5, "max_tasks": 10}


def dag_reinforce_config(**overrides) -> ReinforceConfig:
    """Decima's policy gradient as the paper trains it (it gives no hyper-parameters; these are Decima's
    Adam rate, 4 × 4 rollouts per update and an entropy bonus annealed to near 0)."""
    base = dict(num_sequences=4, rollouts=4, num_steps=256, total_updates=500, updates_per_chunk=25,
                lr=1e-3, max_grad_norm=10.0, ent_start=0.05, ent_end=0.001, curriculum_start_s=0.0,
                curriculum_end_s=0.0)  # fmt: skip
    return ReinforceConfig(**(base | overrides))


@dataclass(frozen=True)
class EnvSection:
    """The idle-slot DAG cluster (`envs.dag`, docs/dag.md): `n_executors` k, `max_slots` J jobs visible at
    once, `max_stages` S (>= the widest job of the workload), `idle_levels` g, `max_events` (a cap on the
    event times one step processes; null: none), delays in ms, `reward_scale` in s, `task_waves` (each
    task's duration drawn from decima-sim's measured waves: the `decima` preset; needs `workload.source:
    tpch`)."""

    n_executors: int = 10
    max_slots: int = 16
    max_stages: int = 5
    idle_levels: int = 10
    max_events: int | None = None
    moving_delay: int = 0
    warmup_delay: int = 0
    reward_scale: float = 100.0
    task_waves: bool = False

    def __post_init__(self):
        try:
            self.dag_config()
        except ValueError as e:
            raise ValueError(str(e).replace("dag.", "env.")) from None
        for name in ("moving_delay", "warmup_delay"):
            value = getattr(self, name)
            if not 0 <= value < 10**8:
                raise ValueError(f"env.{name} must be in [0, 1e8) ms, got {value}")
        positive(self, "env", ("reward_scale",))

    def dag_config(self):
        from jaxsched.envs.dag.params import DAGConfig

        return DAGConfig(
            self.n_executors, self.max_slots, self.max_stages, self.idle_levels, self.max_events,
            self.task_waves,
        )  # fmt: skip


@dataclass(frozen=True)
class WorkloadSection:
    """The episodes (`workloads.dag_gen`): `synthetic` (the paper's long / short jobs, Poisson arrivals at
    `load`), `tpch_like` or `tpch` (Decima's streaming: `n_init` jobs at 0, then Poisson arrivals
    `mean_gap_s` apart, or at `load` when it is set; `tpch` reads the real templates from `tpch_npz`),
    `mixed` (each job synthetic with probability `alpha`, else TPC-H-like, or real with `tpch_npz`;
    Poisson at `load`). `synth_max_stages` and `max_tasks` shape the synthetic DAGs of `synthetic`;
    `mixed` draws its synthetic jobs with the generator's fixed 5 stages × 10 tasks."""

    source: str = "synthetic"
    train_episodes: int = 32
    test_episodes: int = 16
    jobs_per_episode: int = 100
    load: float | None = 0.8
    mean_gap_s: float = 25.0
    n_init: int = 1
    long_len_s: float = 50.0
    short_len_s: float = 10.0
    long_fraction: float = 0.5
    long_std_frac: float = 0.0
    synth_max_stages: int = 5
    max_tasks: int = 10
    alpha: float = 0.5
    tpch_npz: str | None = None
    bank_seed: int = 0
    test_seed: int = 1

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        at_least(self, "workload", ("train_episodes", "test_episodes", "jobs_per_episode", "synth_max_stages",
                                    "max_tasks"))  # fmt: skip
        at_least(self, "workload", ("n_init",), low=0)
        positive(self, "workload", ("mean_gap_s", "long_len_s", "short_len_s"))
        in_unit_interval(self, "workload", ("long_fraction", "alpha"))
        if not self.long_std_frac >= 0:
            raise ValueError(f"workload.long_std_frac must be >= 0, got {self.long_std_frac}")
        if self.load is not None and not self.load > 0:
            raise ValueError(f"workload.load must be > 0 or null, got {self.load}")
        if self.load is None and self.source in ("synthetic", "mixed"):
            raise ValueError(f"workload.load is required (> 0) for workload.source {self.source!r}")
        if self.source == "tpch" and not self.tpch_npz:
            raise ValueError("workload.tpch_npz is required when workload.source is 'tpch'")
        if self.tpch_npz and self.source not in ("tpch", "mixed"):
            raise ValueError(
                f"workload.tpch_npz is only read by the sources tpch and mixed, not {self.source!r}"
            )
        if self.source == "mixed":
            for name, fixed in MIXED_SYNTH_SHAPE.items():
                if getattr(self, name) != fixed:
                    raise ValueError(
                        f"workload.{name}: the mixed source draws its synthetic jobs with {fixed} "
                        f"(workloads.dag_gen.mixed_bank), got {getattr(self, name)}"
                    )
        if self.test_seed == self.bank_seed:
            raise ValueError(
                f"workload.test_seed must differ from workload.bank_seed ({self.bank_seed}): the test bank "
                "is held out"
            )


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
        if not self.variants or any(v not in VARIANTS for v in self.variants):
            raise ValueError(
                f"agent.variants must be a non-empty list of {', '.join(VARIANTS)}, got {list(self.variants)}"
            )
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"agent.variants has duplicates: {list(self.variants)}")
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
class DAGSystemConfig(ExperimentConfig):
    """An idle-slot DAG experiment (`kind: dag`)."""

    KIND: ClassVar[str] = KIND
    PATH_KEYS: ClassVar[tuple[str, ...]] = ("workload.tpch_npz",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    agent: AgentSection = field(default_factory=AgentSection)
    reinforce: ReinforceConfig = field(default_factory=dag_reinforce_config)
    eval: EvalSection = field(default_factory=EvalSection)

    def __post_init__(self):
        super().__post_init__()
        w, e = self.workload, self.env
        if w.source == "synthetic" and w.synth_max_stages > e.max_stages:
            raise ValueError(
                f"workload.synth_max_stages ({w.synth_max_stages}) exceeds env.max_stages ({e.max_stages})"
            )
        if w.source == "mixed" and MIXED_SYNTH_SHAPE["synth_max_stages"] > e.max_stages:
            raise ValueError(
                f"env.max_stages ({e.max_stages}) is below the "
                f"{MIXED_SYNTH_SHAPE['synth_max_stages']} stages of the mixed source's synthetic jobs"
            )
        if e.task_waves and w.source != "tpch":
            raise ValueError(
                f"env.task_waves samples decima-sim's measured task durations: it needs workload.source tpch "
                f"(with workload.tpch_npz), got {w.source!r}"
            )
        if w.source in ("tpch_like", "mixed") and e.max_stages < 2:
            raise ValueError(f"env.max_stages ({e.max_stages}) is below every TPC-H profile (>= 2 stages)")


def _bank(cfg: DAGSystemConfig, n_episodes: int, seed: int):
    from jaxsched.workloads import dag_gen

    w, e = cfg.workload, cfg.env
    synth = dict(long_len_s=w.long_len_s, short_len_s=w.short_len_s, long_fraction=w.long_fraction,
                 long_std_frac=w.long_std_frac)  # fmt: skip
    stream = dict(n_init=w.n_init, mean_gap_ms=1000.0 * w.mean_gap_s, max_stages=e.max_stages,
                  n_executors=e.n_executors, load=w.load)  # fmt: skip
    n = w.jobs_per_episode
    if w.source == "synthetic":
        shape = dict(max_stages=w.synth_max_stages, max_tasks=w.max_tasks)
        return dag_gen.synthetic_bank(
            n_episodes, n, seed=seed, n_executors=e.n_executors, load=w.load, **shape, **synth
        )
    if w.source == "tpch_like":
        return dag_gen.tpch_like_bank(n_episodes, n, seed=seed, **stream)
    if w.source == "tpch":
        return dag_gen.tpch_bank(w.tpch_npz, n_episodes, n, seed=seed, **stream)
    return dag_gen.mixed_bank(
        n_episodes, n, seed=seed, alpha=w.alpha, n_executors=e.n_executors, load=w.load,
        tpch_npz=w.tpch_npz, max_stages=e.max_stages, **synth,
    )  # fmt: skip


def make_env(cfg: DAGSystemConfig, jct: bool = False):
    """`cfg`'s env (`SystemDAGEnv`: the DAG env whose episode metrics also carry the return, and with
    `jct` each job's completion time)."""
    return SystemDAGEnv(cfg.env.dag_config(), jct=jct)


BANKS = {"train": ("bank_seed", "train_episodes"), "test": ("test_seed", "test_episodes")}


def build_params(cfg: DAGSystemConfig, env, bank: str = "test"):
    """The env params of `cfg`'s training (`bank="train"`) or held-out (`"test"`) bank on `env` (`make_env
    (cfg)`); errors of the generator or the bank name the field. A config changed in its workload section
    (`dataclasses.replace`: another load, job count, long-job law) gives that bank regenerated."""
    w, e = cfg.workload, cfg.env
    seed_field, episodes_field = BANKS[bank]
    seed = getattr(w, seed_field)
    try:
        b = _bank(cfg, getattr(w, episodes_field), seed)
    except ValueError as err:
        raise ValueError(f"workload ({w.source}, {seed_field} {seed}): {err}") from None
    kw = dict(moving_delay=e.moving_delay, warmup_delay=e.warmup_delay, reward_scale=e.reward_scale)
    if e.task_waves:
        from jaxsched.workloads.tpch import tpch_wave_table

        kw["waves"] = tpch_wave_table(w.tpch_npz, max_stages=e.max_stages)  # load_tpch's order, as the bank
    try:
        params = env.make_params(b, **kw)
    except ValueError as err:
        raise ValueError(str(err).replace("dag.", "env.")) from None
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
