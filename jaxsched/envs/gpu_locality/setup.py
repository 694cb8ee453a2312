"""The GPU-locality cluster's settings and its one builder: `jaxsched.make("sced2*")` and SCED² configs
both build here.

Two sections, as a SCED² config spells them:

    env:      {n_servers, gpus_per_server, window, n_levels, auto_forward, work_conserving, time_scale,
               sensitive_ratio, max_steps, slowdown_scale}
    workload: {source: philly | csv | philly_log, path, log_model, drop_too_wide, model_map,
               single_gpu_share, multi_gpu_sizes, multi_gpu_weights, mean_interarrival, interarrival_shape,
               arrival_scale, runtime_scale, max_runtime, train_episodes, test_episodes, jobs_per_episode,
               bank_seed, test_seed}

`build(env, workload)` makes the env and the training and held-out test params: Philly-like episodes
from two purpose keys (`core.keys`), or a trace (`source: csv`, or Philly's `cluster_job_log` with
`source: philly_log`) cut in arrival order into `train_episodes` then `test_episodes` consecutive
episodes of `jobs_per_episode` jobs, each its own timeline (the first job of an episode arrives at its
time 0).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from jaxsched.core.checks import EnvSections, at_least, in_unit_interval, positive
from jaxsched.core.keys import TEST_BANK_TAG, TRAIN_BANK_TAG, purpose_key
from jaxsched.envs.gpu_locality.params import GPULocalityConfig, default_slowdown
from jaxsched.workloads.dlt import check_model_map
from jaxsched.workloads.philly import PhillyConfig

SOURCES = ("philly", "csv", "philly_log")


@dataclass(frozen=True)
class EnvSection:
    """The GPU-locality env (`envs.gpu_locality`): paper 15 × 8 GPUs, a 10-job window, k = 4."""

    n_servers: int = 15
    gpus_per_server: int = 8
    window: int = 10
    n_levels: int = 4
    auto_forward: bool = True
    work_conserving: bool = False  # the ablation: φ masked while a job fits (no holding GPUs back)
    time_scale: float = 3600.0
    sensitive_ratio: float = 2.0
    max_steps: int | None = None
    # The locality slowdowns' strength: slowdown = 1 + this × (the model's − 1) (`slowdown_table`); the
    # paper gives four models' level-1 ratios (Fig. 1) and nothing beyond: a calibration knob
    slowdown_scale: float = 1.0

    def __post_init__(self):
        try:
            self.gpu_locality_config(self.window)
        except ValueError as e:
            raise ValueError(str(e).replace("GPULocalityConfig.", "env.")) from None
        positive(self, "env", ("time_scale", "sensitive_ratio"))
        if not self.slowdown_scale >= 0.0:
            raise ValueError(f"env.slowdown_scale must be >= 0, got {self.slowdown_scale}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"env.max_steps must be >= 1 or null, got {self.max_steps}")

    def gpu_locality_config(self, window: int) -> GPULocalityConfig:
        sizes = (self.n_servers, self.gpus_per_server, window, self.n_levels)
        return GPULocalityConfig(*sizes, auto_forward=self.auto_forward, work_conserving=self.work_conserving)


@dataclass(frozen=True)
class WorkloadSection:
    """Generated Philly-like episodes (`workloads.philly`; train and test from separate keys), a DLT
    trace CSV (`workloads.dlt.load_dlt_csv`) or Philly's real `cluster_job_log`
    (`workloads.dl_traces.load_philly_log`, source `philly_log`)."""

    source: str = "philly"
    path: str | None = None
    log_model: str = "resnet50"  # philly_log: the model every job trains (the log records none)
    drop_too_wide: bool = False
    # a CSV's models outside the paper's six: [[name, model or drop], ...] ("*": any other name);
    # null: `workloads.dlt.DEFAULT_MODEL_MAP` (by locality class, the rest dropped and counted)
    model_map: tuple[tuple[str, str], ...] | None = None
    single_gpu_share: float = 0.68
    multi_gpu_sizes: tuple[int, ...] = (2, 4, 8, 16, 32)
    multi_gpu_weights: tuple[float, ...] = (0.2, 0.2, 0.35, 0.2, 0.05)
    mean_interarrival: float = 172.0
    interarrival_shape: float = 0.5
    arrival_scale: float = 1.0
    runtime_scale: float = 1.0  # factor on Philly's run times (PhillyConfig.runtime_scale)
    max_runtime: float | None = None  # cap on the run times, s (PhillyConfig.max_runtime)
    train_episodes: int = 30
    test_episodes: int = 30
    jobs_per_episode: int = 1000
    bank_seed: int = 0
    test_seed: int = 1

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if self.source in ("csv", "philly_log") and not self.path:
            raise ValueError(f"workload.path is required when workload.source is {self.source!r}")
        at_least(self, "workload", ("train_episodes", "test_episodes", "jobs_per_episode"))
        in_unit_interval(self, "workload", ("single_gpu_share",))
        if self.model_map is not None:
            check_model_map(self.model_map, "workload.model_map")
        if len(self.multi_gpu_sizes) != len(self.multi_gpu_weights):
            raise ValueError(
                f"workload.multi_gpu_weights must have one weight per size of workload.multi_gpu_sizes "
                f"({len(self.multi_gpu_sizes)}), got {len(self.multi_gpu_weights)}"
            )
        try:
            self.philly_config()
        except ValueError as e:
            raise ValueError(f"workload: {e}") from None

    def philly_config(self) -> PhillyConfig:
        return PhillyConfig(
            single_gpu_share=self.single_gpu_share,
            multi_gpu_mix=tuple(zip(self.multi_gpu_sizes, self.multi_gpu_weights, strict=True)),
            mean_interarrival=self.mean_interarrival,
            interarrival_shape=self.interarrival_shape,
            arrival_scale=self.arrival_scale,
            runtime_scale=self.runtime_scale,
            max_runtime=self.max_runtime,
        )


def _episodes(bank, first: int, count: int, size: int):
    """`(bank, starts, ends)` of `count` consecutive `size`-job episodes from job `first` of a trace, each
    shifted to its own timeline (submit times from 0)."""
    import jax.numpy as jnp
    import numpy as np

    idx = np.arange(first, first + count * size)
    submit = np.asarray(bank.submit, np.float64)[idx].reshape(count, size)
    submit = (submit - submit[:, :1]).reshape(-1)
    part = bank.replace(
        **{f: getattr(bank, f)[idx] for f in ("job_id", "gpus", "duration", "model")},
        submit=jnp.asarray(submit, jnp.float32),
    )
    starts = np.arange(count) * size
    return part, starts, starts + size


def slowdown_table(e: EnvSection):
    """`f32[6, k]`: the locality model's slowdowns (`envs.gpu_locality.params.default_slowdown`) with their
    excess over 1 scaled by `env.slowdown_scale` (None at 1: the env's default table)."""
    if e.slowdown_scale == 1.0:
        return None
    return 1.0 + e.slowdown_scale * (default_slowdown(e.n_levels) - 1.0)


def make_env(section: EnvSection, window: int | None = None):
    """The env of `section` with a window of `window` jobs (default `section.window`); every window's env
    takes the same params (they do not depend on it), e.g. the whole-queue baselines' env."""
    from jaxsched.envs.gpu_locality.env import GPULocalityEnv

    return GPULocalityEnv(section.gpu_locality_config(section.window if window is None else window))


def make_params(env, section: EnvSection, episodes):
    """`env`'s params over `episodes` = `(bank, starts, ends)` with `section`'s slowdowns and scales."""
    e = section
    bank, starts, ends = episodes
    return env.make_params(
        bank, starts=starts, ends=ends, sensitive_ratio=e.sensitive_ratio, time_scale=e.time_scale,
        max_steps=e.max_steps, slowdown=slowdown_table(e),
    )  # fmt: skip


def build(section: EnvSection, workload: WorkloadSection):
    """`(env, train_params, test_params)` (module docstring)."""
    from jaxsched.workloads.dl_traces import load_philly_log
    from jaxsched.workloads.dlt import load_dlt_csv
    from jaxsched.workloads.philly import generate_dlt_bank

    w = workload
    env = make_env(section)
    if w.source == "philly":
        philly = w.philly_config()
        train = generate_dlt_bank(
            purpose_key(w.bank_seed, TRAIN_BANK_TAG), philly, w.train_episodes, w.jobs_per_episode
        )
        test = generate_dlt_bank(
            purpose_key(w.test_seed, TEST_BANK_TAG), philly, w.test_episodes, w.jobs_per_episode
        )
    else:
        if w.source == "philly_log":
            bank, report = load_philly_log(w.path, env.config.n_gpus, w.drop_too_wide, w.log_model)
        else:
            bank, report = load_dlt_csv(w.path, env.config.n_gpus, w.drop_too_wide, w.model_map)
        if report.changes():  # what the model map and the cluster's width changed, said once
            print(report.changes(), file=sys.stderr)
        need = (w.train_episodes + w.test_episodes) * w.jobs_per_episode
        if bank.n_jobs < need:
            raise ValueError(
                f"workload.path: {w.path} has {bank.n_jobs} jobs, fewer than the (train_episodes + "
                f"test_episodes) × jobs_per_episode = {need} the config cuts from it"
            )
        train = _episodes(bank, 0, w.train_episodes, w.jobs_per_episode)
        test = _episodes(bank, w.train_episodes * w.jobs_per_episode, w.test_episodes, w.jobs_per_episode)
    return env, make_params(env, section, train), make_params(env, section, test)


@dataclass(frozen=True)
class GPULocalitySetup(EnvSections):
    """The env and workload sections of an experiment on this cluster (its config derives from it)."""

    PATH_KEYS = ("workload.path",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)

    def check(self) -> None:
        widest = max(self.workload.multi_gpu_sizes, default=1)
        gpus = self.env.n_servers * self.env.gpus_per_server
        if self.workload.source == "philly" and widest > gpus:
            raise ValueError(
                f"workload.multi_gpu_sizes: a {widest}-GPU job is wider than the cluster's {gpus} GPUs "
                f"(env.n_servers × env.gpus_per_server)"
            )
