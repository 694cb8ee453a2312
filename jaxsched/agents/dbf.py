"""The Deep Back-Filling agent (Wang, Harwood, Rodriguez, HPCC'22, §III–IV): PPO over the HPC env.

The paper's settings (§IV-A): separate actor and critic MLPs [1024, 512, 256], learning rate 3e-4,
clip 0.2, γ = 0.99, reward weights w1 = w2 = w3 = 1/3, episodes of 1,000 placed jobs from a random start
in the Lublin workload, windows of 8/10/16/20/32/64 jobs with any head/tail split, minibatches of 128.

The paper updates after each episode; here PPO collects a fixed number of decisions per update from many
envs in parallel (the batched form of the same algorithm). Held-out evaluation uses workload windows that
training never sees: a trace is split in time (`trace_split`), a generated workload uses a separate key.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from jaxsched.agents.ppo import PPOConfig
from jaxsched.envs.hpc import HPCConfig, HPCEnv, HPCParams
from jaxsched.workloads.base import Workload

DBF_HIDDEN = (1024, 512, 256)
WINDOW_SIZES = (8, 10, 16, 20, 32, 64)
EPISODE_JOBS = 1000
REWARD_WEIGHTS = (1 / 3, 1 / 3, 1 / 3)


def dbf_ppo_config(**overrides) -> PPOConfig:
    """PPO with the paper's network and hyper-parameters; `overrides` replace any field."""
    base = dict(hidden=DBF_HIDDEN, lr=3e-4, clip_eps=0.2, gamma=0.99, activation="tanh", shared_network=False)
    base.update(overrides)
    return PPOConfig(**base)


def dbf_env(
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


def dbf_params(
    env: HPCEnv, bank: Workload, starts, ends, episode_jobs: int = EPISODE_JOBS, **kw
) -> HPCParams:
    """Env params with the paper's reward weights (override with `w=`)."""
    kw.setdefault("w", REWARD_WEIGHTS)
    return env.make_params(bank, starts=starts, ends=ends, episode_jobs=episode_jobs, **kw)
