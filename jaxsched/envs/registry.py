"""The library's front door: named environments with their papers' defaults, built without downloads.

    env, params = jaxsched.make("das-small")                  # the DAS paper's Small cluster
    env, params = jaxsched.make("dbf", n_cores=128, seed=1)   # overrides: the spec's keyword arguments
    jaxsched.registered()                                     # {name: EnvSpec(paper, description, defaults)}

Each name builds its env (static shapes) and params (a device-resident workload bank generated from a
seed: the Lublin model for the HPC env, the PAI-like generator for the GPU cloud) through its env's one
builder (`envs/<env>/setup.py`), the one the `configs/` build through. Params `vmap`; the env's `step`
is pure and jittable.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import jax

from jaxsched.workloads.ddl import CLUSTER_SIZES


def hpc_setup(
    n_cores: int = 256,
    window: int = 10,
    tail: int = 1,
    queue_capacity: int = 256,
    episode_jobs: int = 1000,
    episodes: int = 16,
    load_scale: float = 1.0,
    seed: int = 0,
):
    """The Deep Back-Filling HPC env (a `window`-slot split window, `tail` slots from the queue's tail)
    over `episodes` generated Lublin–Feitelson episodes of `2 × episode_jobs` jobs each."""
    from jaxsched.envs.hpc import setup
    from jaxsched.workloads.lublin import generate_bank

    env = setup.window_env(window, tail, n_cores, queue_capacity)
    lublin = setup.lublin_config(setup.EnvSection(n_cores), setup.WorkloadSection(load_scale=load_scale))
    bank, starts, ends = generate_bank(jax.random.key(seed), lublin, episodes, 2 * episode_jobs)
    return env, env.make_params(bank, starts=starts, ends=ends, episode_jobs=episode_jobs)


def gpu_cloud_setup(
    size: str = "small",
    n_machines: int | None = None,
    n_slots: int = 16,
    queue_capacity: int = 64,
    max_forward_events: int | None = None,
    n_jobs: int = 20_000,
    episode_jobs: int = 1000,
    load_scale: float = 1.0,
    reward: str = "eq3",
    mean_interarrival_s: float | None = None,
    interarrival_shape: float = 1.0,
    work_scale: float = 1.0,
    work_gpu_exponent: float = 0.0,
    size_tilt: float = 0.0,
    kappa_net: float = 1.0,
    kappa_cpu: float = 0.5,
    kappa_spread: float = 0.1,
    seed: int = 0,
):
    """The DAS GPU cloud: `size` (or `n_machines`) V100 machines of calibrated heterogeneity, `n_slots`
    visible jobs, over `n_jobs` generated PAI-like jobs (those that fit the cluster; an error naming
    `n_machines` if more than 1 % do not), with the generator's knobs (`workloads.ddl.pai_like_config`)
    and the contention strengths (`kappa_*`). `das-small` / `-medium` / `-large` set them to the
    calibrated presets' values (`configs/das/paper_*.yaml`)."""
    from jaxsched.envs.gpu_cloud import setup

    cluster = setup.ClusterSection(size, n_machines, perf_seed=seed, kappa_net=kappa_net, kappa_cpu=kappa_cpu,
                                   kappa_spread=kappa_spread)  # fmt: skip
    section = setup.EnvSection(n_slots, queue_capacity, max_forward_events=max_forward_events,
                               episode_jobs=episode_jobs, load_scale=load_scale, reward=reward)  # fmt: skip
    workload = setup.WorkloadSection(
        n_jobs=n_jobs, bank_seed=seed, mean_interarrival_s=mean_interarrival_s, work_scale=work_scale,
        work_gpu_exponent=work_gpu_exponent, interarrival_shape=interarrival_shape, size_tilt=size_tilt,
    )  # fmt: skip
    env = setup.make_env(cluster, section)
    bank, _ = setup.job_bank(cluster, workload)  # more than 1 % of the jobs too large: an error
    return env, setup.make_params(env, bank, cluster, section)


def gpu_locality_setup(
    n_servers: int = 15,
    gpus_per_server: int = 8,
    window: int = 10,
    n_levels: int = 4,
    auto_forward: bool = True,
    single_gpu_share: float = 0.68,
    arrival_scale: float = 1.0,
    multi_gpu_weights: tuple[float, ...] = (0.2, 0.2, 0.35, 0.2, 0.05),
    max_runtime: float | None = None,
    slowdown_scale: float = 1.0,
    episode_jobs: int = 1000,
    episodes: int = 30,
    seed: int = 0,
):
    """SCED²'s GPU-locality cluster (`n_servers` × `gpus_per_server`, a `window`-job window, `n_levels`
    profile levels) over `episodes` generated Philly-like episodes of `episode_jobs` jobs: multi-GPU jobs
    of 2, 4, 8, 16, 32 GPUs weighted by `multi_gpu_weights`, run times capped at `max_runtime` s, the
    locality slowdowns' excess over 1 scaled by `slowdown_scale`. `sced2` sets them to the calibrated
    preset's values (`configs/sced2/paper_68.yaml`)."""
    from jaxsched.envs.gpu_locality import setup
    from jaxsched.workloads.philly import generate_dlt_bank

    section = setup.EnvSection(n_servers, gpus_per_server, window, n_levels, auto_forward,
                               slowdown_scale=slowdown_scale)  # fmt: skip
    jobs = setup.WorkloadSection(single_gpu_share=single_gpu_share, multi_gpu_weights=multi_gpu_weights,
                                 arrival_scale=arrival_scale, max_runtime=max_runtime)  # fmt: skip
    env = setup.make_env(section)
    episodes = generate_dlt_bank(jax.random.key(seed), jobs.philly_config(), episodes, episode_jobs)
    return env, setup.make_params(env, section, episodes)


def dag_setup(
    workload: str = "tpch_like",
    n_executors: int = 50,
    max_slots: int = 16,
    max_stages: int = 18,
    idle_levels: int = 10,
    max_events: int | None = 1,
    episodes: int = 32,
    episode_jobs: int = 200,
    load: float = 0.8,
    max_tasks: int = 10,
    moving_delay: int = 2000,
    warmup_delay: int = 1000,
    seed: int = 0,
):
    """The idle-slot DAG cluster: `workload` "tpch_like" (Decima's streaming TPC-H setting on the
    TPC-H-like generator: one job at 0, then Poisson arrivals, 25 s apart on average; `load` unused) or
    "synthetic" (the paper's long / short jobs of at most `max_tasks` tasks a stage, Poisson at `load`),
    `episodes` of `episode_jobs` jobs; `dag-synthetic` is the calibrated preset
    (`configs/dag/paper_synthetic.yaml`).
    `moving_delay` / `warmup_delay` (ms) are Decima's; the synthetic presets set them to 0. `max_events` 1:
    with a cheap policy one event time per step gives the most decisions/s under `vmap` (docs/dag.md);
    a training config with a network per step sets its own (2 in configs/dag/tpch_like.yaml)."""
    from jaxsched.envs.dag import setup
    from jaxsched.envs.dag.env import DAGEnv

    if workload not in ("tpch_like", "synthetic"):
        raise ValueError(f"dag workload must be 'tpch_like' or 'synthetic', got {workload!r}")
    section = setup.EnvSection(n_executors, max_slots, max_stages, idle_levels, max_events, moving_delay,
                               warmup_delay)  # fmt: skip
    jobs = setup.WorkloadSection(
        workload, train_episodes=episodes, jobs_per_episode=episode_jobs, max_tasks=max_tasks,
        load=load if workload == "synthetic" else None, bank_seed=seed, test_seed=seed + 1,
    )  # fmt: skip
    setup.check_sections(section, jobs)
    env = DAGEnv(section.dag_config())
    return env, setup.build_params(env, section, jobs, "train")


def deferrable_setup(
    preset: str = "default",
    realtime: bool = False,
    rate: float | None = None,
    max_window: int | None = None,
    max_lead: int | None = None,
    amplitude: float | None = None,
    noise: float | None = None,
    w_delay: float = 2.0,
    horizon: int = 48,
    pending_slots: int = 64,
    running_slots: int = 48,
    defer_negative: bool = False,
    episodes: int = 32,
    seed: int = 0,
):
    """OSDEC's deferrable-job cloud: the generator's `preset` (`workloads.deferrable.PRESETS`: default,
    core1-3, duration1-3 of Table 4), `realtime` (§5.3.4: jobs start at submission or never), `episodes`
    generated episodes of `horizon` steps; `rate` (jobs per step), the windows' `max_window` / `max_lead`
    and the capacity curve's `amplitude` / `noise` override the preset's; `w_delay` is the delay penalty's
    weight ω1. `osdec` and `osdec-realtime` are the calibrated presets (`configs/osdec/paper_table1.yaml`,
    `paper_realtime.yaml`)."""
    from jaxsched.envs.deferrable import DeferrableEnv, setup

    section = setup.EnvSection(pending_slots, running_slots, defer_negative, w_delay=w_delay)
    jobs = setup.WorkloadSection(
        preset, realtime, horizon, rate, max_lead=max_lead, max_window=max_window, amplitude=amplitude,
        noise=noise, train_episodes=episodes, bank_seed=seed, test_seed=seed + 1,
    )  # fmt: skip
    env = DeferrableEnv(section.deferrable_config())
    return env, setup.build_params(env, section, jobs, train=True)


@dataclass(frozen=True)
class EnvSpec:
    """A registered environment: `build(**overrides) -> (env, params)`."""

    name: str
    paper: str
    description: str
    build: Callable = field(repr=False)
    preset: dict = field(default_factory=dict)  # this name's values of `build`'s arguments

    @property
    def defaults(self) -> dict:
        """The overridable keyword arguments and their defaults (`size` is the name's own)."""
        sig = inspect.signature(self.build)
        d = {k: p.default for k, p in sig.parameters.items()} | self.preset
        d.pop("size", None)
        return d

    def __repr__(self) -> str:
        overrides = ", ".join(f"{k}={v!r}" for k, v in self.defaults.items())
        return f"{self.name}: {self.description} [{self.paper}]\n    overrides: {overrides}"


class Registered(dict):
    """`{name: EnvSpec}`, printed one name a block: its description, paper and the keyword overrides
    `make(name, **overrides)` takes, with this name's values."""

    def __repr__(self) -> str:
        return "\n".join(repr(spec) for spec in self.values())


# The calibrated DAS presets' workload and contention (configs/das/paper_*.yaml; a test holds them equal):
# one job population for the three clusters, Medium's arrival rate scaled (docs/results/calibration.md).
DAS_CALIBRATED = {
    "n_jobs": 288_000, "max_forward_events": 2, "mean_interarrival_s": 2400.0, "work_scale": 0.8,
    "work_gpu_exponent": -0.04, "size_tilt": 0.1, "kappa_net": 0.5, "kappa_cpu": 0.1, "kappa_spread": 0.01,
}  # fmt: skip
DAS_LOAD_SCALE = {"small": 1.0, "medium": 2.3, "large": 1.0}
# The calibrated SCED² and OSDEC presets (configs/sced2/paper_68.yaml, configs/osdec/paper_table1.yaml).
SCED2_CALIBRATED = {"multi_gpu_weights": (0.3075, 0.2575, 0.2925, 0.1, 0.0425), "max_runtime": 43200.0,
                    "slowdown_scale": 2.75}  # fmt: skip
OSDEC_CALIBRATED = {
    "preset": "core2",
    "rate": 3.0,
    "max_window": 1,
    "max_lead": 4,
    "amplitude": 0.1,
    "noise": 0.0,
}
DBF = "Deep Back-Filling (HPCC'22)"
DAS = "DAS (KDD'23)"
SCED2 = "SCED² (Luan et al.)"
IDLE_DAG = "Idle-slot DAG scheduling (Duan & Wu)"
OSDEC = "OSDEC (Dong, Zhu et al.)"
_SPECS = [
    EnvSpec("dbf", DBF, "HPC: 256 cores, 9 + 1 split window, 1,000-job Lublin episodes", hpc_setup),
    EnvSpec(
        "dbf-quick",
        DBF,
        "the CI size: 64 cores, 9 + 1 window, 128-job episodes",
        hpc_setup,
        {"n_cores": 64, "episode_jobs": 128, "queue_capacity": 128, "episodes": 8},
    ),  # fmt: skip
    *(
        EnvSpec(
            f"das-{s}",
            DAS,
            f"GPU cloud: the paper's {s} cluster ({m} × 8 V100), calibrated to Table 1 "
            f"(configs/das/paper_{s}.yaml), 1,000-job PAI-like episodes",
            gpu_cloud_setup,
            {"size": s, **DAS_CALIBRATED, "load_scale": DAS_LOAD_SCALE[s]},
        )  # fmt: skip
        for s, m in CLUSTER_SIZES.items()
    ),
    EnvSpec(
        "das-quick",
        DAS,
        "the CI size: small cluster, 2,000 PAI-like jobs, 200-job episodes",
        gpu_cloud_setup,
        {"size": "small", "n_jobs": 2000, "episode_jobs": 200},
    ),  # fmt: skip
    EnvSpec(
        "sced2",
        SCED2,
        "GPU locality: 15 × 8 GPUs, 10-job window, 1,000-job Philly-like episodes, calibrated to Fig. 10 "
        "(configs/sced2/paper_68.yaml)",
        gpu_locality_setup,
        SCED2_CALIBRATED,
    ),  # fmt: skip
    EnvSpec(
        "sced2-quick",
        SCED2,
        "the CI size: 4 × 8 GPUs (arrivals 3.75× sparser: the same load per GPU), 8 episodes of 100 jobs",
        gpu_locality_setup,
        {"n_servers": 4, "arrival_scale": 3.75, "episode_jobs": 100, "episodes": 8},
    ),  # fmt: skip
    EnvSpec(
        "dag",
        IDLE_DAG,
        "DAG cluster: 50 executors, Decima's streaming TPC-H setting on TPC-H-like DAGs",
        dag_setup,
    ),  # fmt: skip
    EnvSpec(
        "dag-synthetic",
        IDLE_DAG,
        "DAG cluster: the paper's synthetic long (50 s) / short (10 s) jobs, calibrated to the SJF JCT its "
        "text implies (configs/dag/paper_synthetic.yaml: 2 executors, one task a stage, load 0.95)",
        dag_setup,
        {
            "workload": "synthetic",
            "n_executors": 2,
            "max_stages": 5,
            "load": 0.95,
            "max_tasks": 1,
            "moving_delay": 0,
            "warmup_delay": 0,
        },
    ),  # fmt: skip
    EnvSpec(
        "dag-quick",
        IDLE_DAG,
        "the CI size: 10 executors, 8 episodes of 40 synthetic jobs",
        dag_setup,
        {
            "workload": "synthetic",
            "n_executors": 10,
            "max_slots": 8,
            "max_stages": 5,
            "episodes": 8,
            "episode_jobs": 40,
            "moving_delay": 0,
            "warmup_delay": 0,
        },
    ),  # fmt: skip
    EnvSpec(
        "osdec",
        OSDEC,
        "deferrable jobs: a daily capacity curve, 48-step episodes, Table 1's job mix, calibrated to "
        "Table 1's ratios to FIFO (configs/osdec/paper_table1.yaml)",
        deferrable_setup,
        OSDEC_CALIBRATED,
    ),  # fmt: skip
    EnvSpec(
        "osdec-realtime",
        OSDEC,
        "the same jobs in the real-time setting (start at submission or never)",
        deferrable_setup,
        {**OSDEC_CALIBRATED, "realtime": True},
    ),  # fmt: skip
    EnvSpec(
        "osdec-quick",
        OSDEC,
        "the CI size: 24-step episodes, 8 episodes, 32 pending slots",
        deferrable_setup,
        {"horizon": 24, "episodes": 8, "pending_slots": 32},
    ),  # fmt: skip
]
SPECS = {s.name: s for s in _SPECS}


def registered() -> Registered:
    """Every registered environment by name; printing it lists each name's overrides and their values."""
    return Registered(SPECS)


def make(name: str, **overrides):
    """`(env, params)` of the registered environment `name`, with keyword `overrides` of its defaults
    (`registered()[name].defaults`); an unknown name or key is a `ValueError` naming the valid ones."""
    if name not in SPECS:
        raise ValueError(f"unknown environment {name!r}; registered: {', '.join(SPECS)}")
    spec = SPECS[name]
    unknown = sorted(set(overrides) - set(spec.defaults))
    if unknown:
        raise ValueError(
            f"{name}: unknown override(s) {', '.join(unknown)}; valid: {', '.join(spec.defaults)}"
        )
    return spec.build(**{**spec.preset, **overrides})
