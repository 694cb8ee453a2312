"""The GPU cloud's settings and its one builder: `jaxsched.make("das-*")` and DAS configs both build here.

Three sections, as a DAS config spells them (every field optional; defaults are the paper's):

    cluster:  {size: small | medium | large, n_machines, perf_cv, fluct_std, perf_seed,
               kappa_net, kappa_cpu, kappa_spread}
    env:      {n_slots, queue_capacity, max_running, max_forward_events, episode_jobs, load_scale, max_steps,
               alpha, price, reward, wait_norm}
    workload: {source: pai_like | pai | helios, n_jobs, train_frac, bank_seed, mean_interarrival_s,
               work_scale, work_gpu_exponent, interarrival_shape, size_tilt, job_csv, task_csv,
               group_tag_csv, helios_csv, max_dropped_frac}

`job_bank` draws (or reads) the jobs and prunes those too large for the empty cluster, as the paper does
(§5.1.2); more than `workload.max_dropped_frac` of them is an error naming the cluster. `build` splits the
first `n_jobs` jobs by submission 8:2 (`train_frac`): training episodes start anywhere, the test episodes are
consecutive and do not overlap (App. D: 1,000 jobs each).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import numpy as np

from jaxsched.core.checks import EnvSections
from jaxsched.envs.gpu_cloud.params import REWARDS, heterogeneous_perf
from jaxsched.envs.gpu_cloud.types import GPUCloudConfig
from jaxsched.workloads.ddl import CLUSTER_SIZES, V100_MACHINE  # paper §5.1.3: 8 GPUs per machine

SOURCES = ("pai_like", "pai", "helios")


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
    helios_csv: str | None = None  # helios: a cluster's cluster_log.csv (workloads.dl_traces.load_helios)
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
        if self.source == "helios" and self.helios_csv is None:
            raise ValueError("workload.source 'helios' needs workload.helios_csv")
        if not 0.0 < self.train_frac < 1.0:
            raise ValueError(f"workload.train_frac must be in (0, 1), got {self.train_frac}")
        if not self.work_scale > 0.0:
            raise ValueError(f"workload.work_scale must be > 0, got {self.work_scale}")
        if self.mean_interarrival_s is not None and not self.mean_interarrival_s > 0.0:
            raise ValueError(f"workload.mean_interarrival_s must be > 0, got {self.mean_interarrival_s}")


def make_env(cluster: ClusterSection, env: EnvSection):
    """The `GPUCloudEnv` of `cluster.machines` machines with `env`'s static shapes."""
    from jaxsched.envs.gpu_cloud.env import GPUCloudEnv

    e = env
    try:
        return GPUCloudEnv(
            GPUCloudConfig(cluster.machines, e.n_slots, e.queue_capacity, e.max_running, e.max_forward_events)
        )
    except ValueError as err:
        raise ValueError(f"env: {err}") from None


def job_bank(cluster: ClusterSection, workload: WorkloadSection):
    """`(jobs, dropped note)`: the workload's jobs that fit the empty cluster (`DDLWorkload`) and a line
    saying how many did not ("" when none); more than `workload.max_dropped_frac` of them is an error."""
    from jaxsched.workloads.ddl import drop_too_large, generate_pai_like, pai_like_config
    from jaxsched.workloads.dl_traces import load_helios
    from jaxsched.workloads.pai import load_pai

    w, m = workload, cluster.machines
    if w.source == "pai_like":
        gen = pai_like_config(
            w.mean_interarrival_s, w.interarrival_shape, w.work_scale, w.work_gpu_exponent, w.size_tilt
        )
        bank = generate_pai_like(jax.random.key(w.bank_seed), w.n_jobs, gen)
        total = bank.num_jobs
        caps = {k: np.full(m, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")}
        bank, dropped = drop_too_large(bank, caps["gpu"], caps["cpu"], caps["mem"])
    else:
        if w.source == "helios":
            bank, report = load_helios(w.helios_csv, n_machines=m, drop_too_large=True)
        else:
            bank, report = load_pai(w.job_csv, w.task_csv, w.group_tag_csv, n_machines=m)
        dropped = report["dropped"].get("too_large", 0)
        total = bank.num_jobs + dropped
        bank = bank.slice(0, min(w.n_jobs, bank.num_jobs))
    return bank, _dropped_note(dropped, total, cluster, workload)


def _dropped_note(dropped: int, total: int, cluster: ClusterSection, workload: WorkloadSection) -> str:
    if not dropped:
        return ""
    frac = dropped / max(total, 1)
    what = (
        f"{dropped:,} of {total:,} jobs ({frac:.1%}) need more than the whole cluster "
        f"(cluster.n_machines = {cluster.machines} machines of 8 V100s; cluster.size {cluster.size!r})"
    )
    if frac > workload.max_dropped_frac:
        raise ValueError(
            f"{what}: more than workload.max_dropped_frac ({workload.max_dropped_frac:g}) would be "
            "dropped; choose a larger cluster or raise workload.max_dropped_frac"
        )
    return f"{what}; pruned, as the paper does (§5.1.2)"


def make_params(env, bank, cluster: ClusterSection, section: EnvSection, starts=None):
    """`env`'s params over `bank` (episodes at `starts`, default anywhere) with the cluster's machines
    (performance factors drawn from `perf_seed`; all 1 when `perf_cv` is 0) and contention."""
    c, e, m = cluster, section, cluster.machines
    perf = (
        np.ones(m, np.float32)
        if c.perf_cv == 0
        else heterogeneous_perf(jax.random.key(c.perf_seed), m, c.perf_cv)
    )
    return env.make_params(
        bank, starts=starts, episode_jobs=e.episode_jobs, max_steps=e.max_steps, perf=perf,
        fluct_std=c.fluct_std, kappa_net=c.kappa_net, kappa_cpu=c.kappa_cpu, kappa_spread=c.kappa_spread,
        price=e.price, alpha=e.alpha, load_scale=e.load_scale, reward=e.reward, wait_norm=e.wait_norm,
    )  # fmt: skip


def build(cluster: ClusterSection, env: EnvSection, workload: WorkloadSection):
    """`(env, train_params, test_params, test_starts, dropped note)` (module docstring)."""
    from jaxsched.workloads.ddl import episode_starts, train_test_split

    gpu_cloud = make_env(cluster, env)
    bank, note = job_bank(cluster, workload)
    train, test = train_test_split(bank, workload.train_frac)
    for part, label in ((train, "training"), (test, "test")):
        if part.num_jobs < env.episode_jobs:
            raise ValueError(
                f"workload: the {label} split has {part.num_jobs} jobs, fewer than env.episode_jobs "
                f"({env.episode_jobs}); raise workload.n_jobs or lower env.episode_jobs"
            )
    test_starts = episode_starts(test.num_jobs, env.episode_jobs, stride=env.episode_jobs)
    train_params = make_params(gpu_cloud, train, cluster, env)
    test_params = make_params(gpu_cloud, test, cluster, env, starts=test_starts)
    return gpu_cloud, train_params, test_params, test_starts, note


@dataclass(frozen=True)
class GPUCloudSetup(EnvSections):
    """The cluster, env and workload sections of an experiment on this cloud (its config derives from it)."""

    PATH_KEYS = ("workload.job_csv", "workload.task_csv", "workload.group_tag_csv", "workload.helios_csv")

    cluster: ClusterSection = field(default_factory=ClusterSection)
    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
