"""The HPC cluster's settings and its one builder: `jaxsched.make("dbf*")` and DBF configs both build here.

Two sections, as a DBF config spells them:

    env:      {n_cores, window, tail, queue_capacity, episode_jobs, reward, reward_weights, max_steps}
    workload: {source: lublin | swf, path, whole_sample, interactive, load_scale, train_episodes,
               test_episodes, jobs_per_episode, bank_seed, test_seed, test_fraction}

`build(env, workload)`: Lublin, a training bank of `train_episodes` generated episodes (from `bank_seed`)
and a held-out one of `test_episodes` (from `test_seed`; the two never share a key, `core.keys`); SWF,
one trace, training windows before a split in time and test windows after it (`trace_split`). Both params
share `runtime_norm` (the training jobs' largest requested time), so observations are normalised alike.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from jaxsched.core.checks import EnvSections, at_least
from jaxsched.core.keys import TEST_BANK_TAG, TRAIN_BANK_TAG, purpose_key
from jaxsched.envs.hpc.env import REWARDS, HPCConfig, HPCEnv

SOURCES = ("lublin", "swf")
REWARD_WEIGHTS = (1 / 3, 1 / 3, 1 / 3)  # the paper's w1 = w2 = w3


@dataclass(frozen=True)
class EnvSection:
    """The HPC env (`window_env`): `window` slots of which `tail` come from the queue's tail; `reward` the
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
    trace split in time (`trace_split`; `train_episodes`/`test_episodes`/`jobs_per_episode` and the
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


def check_sections(env: EnvSection, workload: WorkloadSection) -> None:
    """A generated episode holds `env.episode_jobs` placements; the Lublin model takes the cluster size."""
    w = workload
    if w.source == "lublin":
        if w.jobs_per_episode < env.episode_jobs:
            raise ValueError(
                f"workload.jobs_per_episode ({w.jobs_per_episode}) must be >= env.episode_jobs "
                f"({env.episode_jobs}): an episode places episode_jobs jobs from one bank episode"
            )
        try:
            lublin_config(env, workload)
        except ValueError as e:
            raise ValueError(f"workload: {e}") from None


def lublin_config(env: EnvSection, workload: WorkloadSection):
    from jaxsched.workloads.lublin import LublinConfig

    w = workload
    return LublinConfig(n_nodes=env.n_cores, whole_sample=w.whole_sample, interactive=w.interactive,
                        load_scale=float(w.load_scale))  # fmt: skip


def window_env(
    window: int = 10, tail: int = 1, n_cores: int = 256, queue_capacity: int = 256, reward: str = "dbf"
) -> HPCEnv:
    """The HPC env with a window of `window` jobs, `tail` of them from the queue's tail, and `reward`
    ("dbf", the paper's, or "bsld": `envs.hpc.HPCConfig`)."""
    if not 0 <= tail <= window:
        raise ValueError(f"window tail must be in 0..{window} (the window size), got {tail}")
    return HPCEnv(HPCConfig(n_cores, window - tail, tail, max(queue_capacity, window), reward))


def trace_split(
    num_jobs: int, episode_jobs: int, test_fraction: float = 0.3, arrivals_factor: float = 1.2
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Train and test episode windows `(starts, ends)` over one trace, split in time.

    Training episodes start in the first `⌊num_jobs × (1 − test_fraction)⌋` jobs of the trace (the
    fraction taken as the decimal it prints as, so 0.9 of 1,000 jobs leaves 100, not 99) and never see a
    job past the split; test episodes start after it. A start leaves room for `arrivals_factor ×
    episode_jobs` arrivals (an episode needs more arrivals than placements while its queue is non-empty).
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if episode_jobs < 1:
        raise ValueError(f"episode_jobs must be >= 1, got {episode_jobs}")
    if not arrivals_factor >= 1:
        raise ValueError(f"arrivals_factor must be >= 1 (arrivals per placed job), got {arrivals_factor}")
    split = math.floor(num_jobs * (1 - Fraction(str(float(test_fraction)))))  # exact: no float round-off
    need = int(np.ceil(arrivals_factor * episode_jobs))
    for part, size in (("training", split), ("test", num_jobs - split)):
        if size <= need:
            raise ValueError(
                f"num_jobs={num_jobs} is too few for episode_jobs={episode_jobs} with test_fraction="
                f"{test_fraction}: the {part} part has {size} jobs, an episode needs > {need} "
                f"(arrivals_factor {arrivals_factor} x episode_jobs)"
            )
    train_starts = np.arange(0, split - need + 1)
    test_starts = np.arange(split, num_jobs - need + 1)
    return (train_starts, np.full_like(train_starts, split)), (
        test_starts,
        np.full_like(test_starts, num_jobs),
    )


def build(env: EnvSection, workload: WorkloadSection):
    """`(env, train_params, test_params)` (module docstring)."""
    from jaxsched.workloads.lublin import generate_bank
    from jaxsched.workloads.swf import load_swf_with_report

    e, w = env, workload
    try:
        hpc = window_env(e.window, e.tail, e.n_cores, e.queue_capacity, e.reward)
    except ValueError as err:
        raise ValueError(f"env: {err}") from None
    if w.source == "lublin":
        lub = lublin_config(e, w)
        train_bank, *train = generate_bank(
            purpose_key(w.bank_seed, TRAIN_BANK_TAG), lub, w.train_episodes, w.jobs_per_episode
        )
        test_bank, *test = generate_bank(
            purpose_key(w.test_seed, TEST_BANK_TAG), lub, w.test_episodes, w.jobs_per_episode
        )
        norm = float(np.max(np.asarray(train_bank.req_time)))
    else:
        train_bank, report = load_swf_with_report(w.path, n_cores=e.n_cores)
        test_bank = train_bank
        if report.changes():  # RLScheduler's repairs, said once (the file is read as it is, otherwise)
            print(report.changes(), file=sys.stderr)
        train, test = trace_split(train_bank.num_jobs, e.episode_jobs, w.test_fraction)
        norm = float(np.max(np.asarray(train_bank.req_time)[: int(train[1][0])]))

    def params(bank, starts, ends):
        return hpc.make_params(bank, starts=starts, ends=ends, episode_jobs=e.episode_jobs,
                               max_steps=e.max_steps, w=e.reward_weights, runtime_norm=norm)  # fmt: skip

    return hpc, params(train_bank, *train), params(test_bank, *test)


@dataclass(frozen=True)
class HPCSetup(EnvSections):
    """The env and workload sections of an experiment on this cluster (its config derives from it)."""

    PATH_KEYS = ("workload.path",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)

    def check(self) -> None:
        check_sections(self.env, self.workload)
