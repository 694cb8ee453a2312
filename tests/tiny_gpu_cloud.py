"""The tiny GPU-cloud testbed shared by the MAPPO and warm-start tests: 4 machines of speeds 1.6, 1.2,
0.8 and 0.4, 4 visible slots, episodes of 30 PAI-like jobs at load ×1.5, the JCT reward."""

from __future__ import annotations

import functools

import jax
import numpy as np

from jaxsched.envs.gpu_cloud import GPUCloudConfig, GPUCloudEnv
from jaxsched.workloads.ddl import V100_MACHINE, drop_too_large, generate_pai_like, train_test_split


@functools.cache
def tiny_cluster():
    """`(env, train_params, test_params)`: the first 80% of 3,000 jobs for training, the rest held out."""
    m = 4
    env = GPUCloudEnv(
        GPUCloudConfig(n_machines=m, n_slots=4, queue_capacity=8, max_running=8, max_forward_events=2)
    )
    bank = generate_pai_like(jax.random.key(0), 3000)
    caps = [np.full(m, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")]
    train, test = train_test_split(drop_too_large(bank, *caps)[0], 0.8)
    kw = dict(episode_jobs=30, load_scale=1.5, perf=np.array([1.6, 1.2, 0.8, 0.4], np.float32), reward="jct")
    return env, env.make_params(train, **kw), env.make_params(test, **kw)


@functools.cache
def two_speed_cluster():
    """`(env, train_params, test_params)` for the learning tests: a slow machine 0 (speed 0.4) and a fast
    machine 1 (1.6), 4 visible slots, 30-job episodes at load ×0.4, the JCT reward.

    Every heuristic of the paper is blind to machine speed by definition, and FirstFit (like the all-zero
    constant action) fills the slow machine first; an agent that sees machine identities can learn which
    machine is fast. This is the heterogeneity DAS is built for, at a size that trains in a minute."""
    m = 2
    env = GPUCloudEnv(
        GPUCloudConfig(n_machines=m, n_slots=4, queue_capacity=8, max_running=8, max_forward_events=2)
    )
    bank = generate_pai_like(jax.random.key(0), 3000)
    caps = [np.full(m, V100_MACHINE[k], np.int32) for k in ("gpu", "cpu", "mem")]
    train, test = train_test_split(drop_too_large(bank, *caps)[0], 0.8)
    kw = dict(episode_jobs=30, load_scale=0.4, perf=np.array([0.4, 1.6], np.float32), reward="jct")
    return env, env.make_params(train, **kw), env.make_params(test, **kw)
