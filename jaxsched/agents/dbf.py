"""The Deep Back-Filling agent (Wang, Harwood, Rodriguez, HPCC'22, §III–IV): PPO over the HPC env.

The paper's settings (§IV-A): separate actor and critic MLPs [1024, 512, 256], learning rate 3e-4,
clip 0.2, γ = 0.99, reward weights w1 = w2 = w3 = 1/3, episodes of 1,000 placed jobs from a random start
in the Lublin workload, windows of 8/10/16/20/32/64 jobs with any head/tail split, minibatches of 128.

The paper updates after each episode; here PPO collects a fixed number of decisions per update from many
envs in parallel (the batched form of the same algorithm). Held-out evaluation uses workload windows that
training never sees (`envs.hpc.setup`): a trace is split in time, a generated workload uses its own key.
"""

from __future__ import annotations

from jaxsched.agents.ppo import PPOConfig

DBF_HIDDEN = (1024, 512, 256)
WINDOW_SIZES = (8, 10, 16, 20, 32, 64)


def dbf_ppo_config(**overrides) -> PPOConfig:
    """PPO with the paper's network and hyper-parameters; `overrides` replace any field."""
    base = dict(hidden=DBF_HIDDEN, lr=3e-4, clip_eps=0.2, gamma=0.99, activation="tanh", shared_network=False)
    base.update(overrides)
    return PPOConfig(**base)
