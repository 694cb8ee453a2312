"""The DAS (GPU-cloud) config (`kind: das`): its sections and how a run is built from them.

A DAS config says `kind: das` and has these sections (every field optional; defaults are the paper's):

    kind: das
    name: das_heuristics_small
    seed: 0            # evaluation seeds: fold_in(key(seed), i), i < num_seeds (fluctuation, view sampling)
    num_seeds: 3
    out_dir: runs
    cluster:  {size: small | medium | large, n_machines, perf_cv, fluct_std, perf_seed,
               kappa_net, kappa_cpu, kappa_spread}
    env:      {n_slots, queue_capacity, max_running, max_forward_events, episode_jobs, load_scale, max_steps,
               alpha, price, reward, wait_norm}
    workload: {source: pai_like | pai, n_jobs, train_frac, bank_seed, mean_interarrival_s, work_scale,
               work_gpu_exponent, interarrival_shape, job_csv, task_csv, group_tag_csv}
    eval:     {seed, episodes, policies, select: last | validation, validation_episodes, greedy}
    agent:    {variants: [das, da, da_mc, da_rwgp, dl2, rifling], hidden, heads, tau, prior_mean, std_min,
              machine_index}
    mappo:    {num_envs, num_steps, total_updates, updates_per_chunk, update_epochs, num_minibatches,
               critic_hidden, lr, gamma, gae_lambda, clip_eps, ent_coef, vf_coef, max_grad_norm,
               target_interval}   (MAPPOConfig's fields; `jaxsched train` trains each variant in turn)

`build_das(cfg)` makes the env and the training / held-out test params: the first `n_jobs` jobs by
submission (paper §5.1.2: 20,000), jobs too large for the cluster dropped, the first `train_frac` (8:2)
for training (episodes start anywhere) and the rest for testing (consecutive, non-overlapping episodes of
`episode_jobs`, App. D: 1,000).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from jaxsched.agents.das import PRESETS, DASAgentConfig
from jaxsched.agents.mappo import MAPPOConfig
from jaxsched.experiments.config import ExperimentConfig, config_from_dict, load_config
from jaxsched.experiments.select import SELECT
from jaxsched.policies.gpu_cloud import HEURISTICS, LABELS
from jaxsched.workloads.ddl import CLUSTER_SIZES  # paper §5.1.3: 8 GPUs per machine

KIND = "das"
SOURCES = ("pai_like", "pai")


@dataclass(frozen=True)
class ClusterSection:
    size: str = "small"
    n_machines: int | None = None  # overrides `size`
    perf_cv: float | None = None  # machine heterogeneity; None = PERF_CV (calibrated), 0 = identical
    fluct_std: float | None = None  # None = FLUCT_STD (calibrated)
    perf_seed: int = 0  # draws the machines' performance factors
    kappa_net: float = 1.0
    kappa_cpu: float = 0.5
    kappa_spread: float = 0.1

    def __post_init__(self):
        if self.size not in CLUSTER_SIZES:
            raise ValueError(f"cluster.size must be one of {', '.join(CLUSTER_SIZES)}, got {self.size!r}")

    @property
    def machines(self) -> int:
        return CLUSTER_SIZES[self.size] if self.n_machines is None else self.n_machines


@dataclass(frozen=True)
class EnvSection:
    n_slots: int = 16
    queue_capacity: int = 64
    max_running: int | None = None
    max_forward_events: int | None = None  # see GPUCloudConfig: a cap makes vmapped steps cheaper
    episode_jobs: int = 1000
    load_scale: float = 1.0  # App. E: 0.5 (Low), 1 (Normal), 2 (High) — arrival-rate multiplier
    max_steps: int | None = None
    alpha: float = 0.1
    price: float = 2.84
    reward: str = "eq3"  # "eq3" (the paper's) or "jct" (minus job-minutes accrued; see docs/gpu_cloud.md)
    wait_norm: float = 3600.0  # s: the job feature `wait / wait_norm` (waits on a loaded cluster are days)

    def __post_init__(self):
        from jaxsched.envs.gpu_cloud.env import REWARDS

        if self.reward not in REWARDS:
            raise ValueError(f"env.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")


@dataclass(frozen=True)
class WorkloadSection:
    source: str = "pai_like"
    n_jobs: int = 20_000
    train_frac: float = 0.8
    bank_seed: int = 0
    mean_interarrival_s: float | None = None  # pai_like; None = the calibrated default
    # pai_like: every job's work (s at nominal speed) × this (the log-normal's median; its clip bounds
    # stay): the run-time scale the paper's trace sets and does not print (a calibration knob)
    work_scale: float = 1.0
    # pai_like: β of the size–duration correlation (`PAILikeConfig.work_gpu_exponent`; App. G: "a small
    # proportion of jobs are large and long-running"); 0 = independent (the generator's default)
    work_gpu_exponent: float = 0.0
    # pai_like: Weibull shape of the arrival gaps (`PAILikeConfig.interarrival_shape`; 1 = Poisson, < 1 =
    # bursty: production traces arrive in bursts, the paper does not say how)
    interarrival_shape: float = 1.0
    # pai_like: the job-size mix tilted towards large jobs (`workloads.ddl.tilted_sizes`: each size's
    # probability × GPUs^tilt; 0 = the generator's mix; the paper's trace sets it and does not print it)
    size_tilt: float = 0.0
    job_csv: str | None = None  # pai
    task_csv: str | None = None
    group_tag_csv: str | None = None
    # Jobs that do not fit the empty cluster are pruned, as the paper does (§5.1.2), and counted; more
    # than this fraction of them is an error naming the cluster (a cluster too small for its workload).
    max_dropped_frac: float = 0.01

    def __post_init__(self):
        if not 0.0 <= self.max_dropped_frac <= 1.0:
            raise ValueError(f"workload.max_dropped_frac must be in [0, 1], got {self.max_dropped_frac}")
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if self.source == "pai" and (self.job_csv is None or self.task_csv is None):
            raise ValueError("workload.source 'pai' needs workload.job_csv and workload.task_csv")
        if not 0.0 < self.train_frac < 1.0:
            raise ValueError(f"workload.train_frac must be in (0, 1), got {self.train_frac}")
        if not self.work_scale > 0.0:
            raise ValueError(f"workload.work_scale must be > 0, got {self.work_scale}")
        if self.mean_interarrival_s is not None and not self.mean_interarrival_s > 0.0:
            raise ValueError(f"workload.mean_interarrival_s must be > 0, got {self.mean_interarrival_s}")


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
        if self.select not in SELECT:
            raise ValueError(f"eval.select must be one of {', '.join(SELECT)}, got {self.select!r}")
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
class DASConfig(ExperimentConfig):
    """A DAS experiment (`kind: das`)."""

    KIND: ClassVar[str] = KIND
    PATH_KEYS: ClassVar[tuple[str, ...]] = ("workload.job_csv", "workload.task_csv", "workload.group_tag_csv")
    NOT_SETTINGS: ClassVar[dict[str, str]] = {"mappo.agent": "the networks are set in the agent section"}
    # `agent.variants` may grow on resume: each variant is its own run directory.
    RESUME_MAY_DIFFER: ClassVar[tuple[str, ...]] = (*ExperimentConfig.RESUME_MAY_DIFFER, "agent.variants")

    name: str = "das"
    cluster: ClusterSection = field(default_factory=ClusterSection)
    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    eval: EvalSection = field(default_factory=EvalSection)
    agent: AgentSection = field(default_factory=AgentSection)
    mappo: MAPPOConfig = field(default_factory=MAPPOConfig)

    def __post_init__(self):
        super().__post_init__()
        if self.mappo.imitation_teacher not in HEURISTICS:
            raise ValueError(
                f"mappo.imitation_teacher must be one of {', '.join(HEURISTICS)}, "
                f"got {self.mappo.imitation_teacher!r}"
            )


def das_config_from_dict(d: dict, source: str | Path | None = None) -> DASConfig:
    """A `DASConfig` from a mapping (`kind` may be left out); errors are `ValueError`s naming the dotted
    key (and the file)."""
    return config_from_dict(DASConfig, d, source)


def load_das_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> DASConfig:
    """Read and validate a `kind: das` YAML config with optional `KEY=VALUE` overrides."""
    return load_config(path, {KIND: DASConfig}, overrides)


def _check_dropped(dropped: int, total: int, cfg: DASConfig) -> None:
    """Say how many jobs the cluster cannot hold; refuse more than `workload.max_dropped_frac` of them."""
    if not dropped:
        return
    c = cfg.cluster
    frac = dropped / max(total, 1)
    what = (
        f"{dropped:,} of {total:,} jobs ({frac:.1%}) need more than the whole cluster "
        f"(cluster.n_machines = {c.machines} machines of 8 V100s; cluster.size {c.size!r})"
    )
    if frac > cfg.workload.max_dropped_frac:
        raise ValueError(
            f"{what}: more than workload.max_dropped_frac ({cfg.workload.max_dropped_frac:g}) would be "
            "dropped; choose a larger cluster or raise workload.max_dropped_frac"
        )
    print(f"{cfg.name}: {what}; pruned, as the paper does (§5.1.2)")


# ---- building the run ---------------------------------------------------------------------------------
def build_das(cfg: DASConfig):
    """`(env, train_params, test_params, test_starts)` for `cfg` (module docstring)."""
    import jax
    import numpy as np

    from jaxsched.envs.gpu_cloud.env import GPUCloudConfig, GPUCloudEnv, heterogeneous_perf
    from jaxsched.workloads.ddl import (
        V100_MACHINE,
        drop_too_large,
        episode_starts,
        generate_pai_like,
        pai_like_config,
        train_test_split,
    )
    from jaxsched.workloads.pai import load_pai

    c, e, w = cfg.cluster, cfg.env, cfg.workload
    m = c.machines
    try:
        env = GPUCloudEnv(GPUCloudConfig(m, e.n_slots, e.queue_capacity, e.max_running, e.max_forward_events))
    except ValueError as err:
        raise ValueError(f"env: {err}") from None
    caps = {k: np.full(m, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")}
    if w.source == "pai_like":
        gen_cfg = pai_like_config(
            w.mean_interarrival_s, w.interarrival_shape, w.work_scale, w.work_gpu_exponent, w.size_tilt
        )
        bank = generate_pai_like(jax.random.key(w.bank_seed), w.n_jobs, gen_cfg)
        total = bank.num_jobs
        bank, dropped = drop_too_large(bank, caps["gpu"], caps["cpu"], caps["mem"])
    else:
        bank, report = load_pai(w.job_csv, w.task_csv, w.group_tag_csv, n_machines=m)
        dropped = report["dropped"]["too_large"]
        total = bank.num_jobs + dropped
        bank = bank.slice(0, min(w.n_jobs, bank.num_jobs))
    _check_dropped(dropped, total, cfg)
    train, test = train_test_split(bank, w.train_frac)
    for part, label in ((train, "training"), (test, "test")):
        if part.num_jobs < e.episode_jobs:
            raise ValueError(
                f"workload: the {label} split has {part.num_jobs} jobs, fewer than env.episode_jobs "
                f"({e.episode_jobs}); raise workload.n_jobs or lower env.episode_jobs"
            )
    perf = (
        np.ones(m, np.float32)
        if c.perf_cv == 0
        else heterogeneous_perf(jax.random.key(c.perf_seed), m, c.perf_cv)
    )
    kw = dict(
        episode_jobs=e.episode_jobs,
        max_steps=e.max_steps,
        perf=perf,
        fluct_std=c.fluct_std,
        kappa_net=c.kappa_net,
        kappa_cpu=c.kappa_cpu,
        kappa_spread=c.kappa_spread,
        price=e.price,
        alpha=e.alpha,
        load_scale=e.load_scale,
        reward=e.reward,
        wait_norm=e.wait_norm,
    )
    test_starts = episode_starts(test.num_jobs, e.episode_jobs, stride=e.episode_jobs)
    train_params = env.make_params(train, **kw)
    test_params = env.make_params(test, starts=test_starts, **kw)
    return env, train_params, test_params, test_starts
