"""The tiny GPU-cloud testbeds shared by the MAPPO and warm-start tests (30-job PAI-like episodes, 4
visible slots, the JCT reward): `tiny_cluster` (4 machines of speeds 1.6, 1.2, 0.8, 0.4 at load ×1.5) and
`two_speed_cluster` (the learning tests' slow and fast machine)."""

from __future__ import annotations

import functools

import jax
import numpy as np

from jaxsched.envs.gpu_cloud.env import GPUCloudConfig, GPUCloudEnv
from jaxsched.workloads.ddl import V100_MACHINE, drop_too_large, generate_pai_like, train_test_split


def _cluster(perf: list[float], load_scale: float):
    """`(env, train_params, test_params)` on V100 machines of speeds `perf`: the first 80% of 3,000 jobs
    (those that fit the cluster) for training, the rest held out."""
    m = len(perf)
    env = GPUCloudEnv(
        GPUCloudConfig(n_machines=m, n_slots=4, queue_capacity=8, max_running=8, max_forward_events=2)
    )
    bank = generate_pai_like(jax.random.key(0), 3000)
    caps = [np.full(m, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")]
    train, test = train_test_split(drop_too_large(bank, *caps)[0], 0.8)
    kw = dict(episode_jobs=30, load_scale=load_scale, perf=np.array(perf, np.float32), reward="jct")
    return env, env.make_params(train, **kw), env.make_params(test, **kw)


@functools.cache
def tiny_cluster():
    """Four machines of speeds 1.6, 1.2, 0.8 and 0.4 at load ×1.5."""
    return _cluster([1.6, 1.2, 0.8, 0.4], 1.5)


@functools.cache
def two_speed_cluster():
    """A slow machine 0 (speed 0.4) and a fast machine 1 (1.6) at load ×0.4, for the learning tests.

    Every heuristic of the paper is blind to machine speed by definition, and FirstFit (like the all-zero
    constant action) fills the slow machine first; an agent that sees machine identities can learn which
    machine is fast. This is the heterogeneity DAS is built for, at a size that trains in a minute."""
    return _cluster([0.4, 1.6], 0.4)
