"""SCED²'s learners: one DQN run per Q-network of `agent.networks`, declared for the shared training path
(`experiments.learner`).

    jaxsched train configs/sced2/quick.yaml        # every network, in turn → out_dir/name/<network>/
    train_learner(LEARNER, cfg, "shared")          # one learner

A learner's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed),
`checkpoints/` (the vmapped DQN runner after each chunk, the replay buffers included, so `--resume`
continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program; programs are cached
per (DQN config, env config, network).
"""

from __future__ import annotations

from jaxsched.agents.dqn import DQN
from jaxsched.experiments.learner import Learner
from jaxsched.experiments.train import algorithm_programs, episode_summary
from jaxsched.systems.sced2.config import SCED2Config, build_sced2

CURVE_METRICS = ("avg_effectiveness", "avg_jct", "td_loss", "episode_return")


def dqn_for(cfg: SCED2Config, network: str, env, env_params) -> DQN:
    """The DQN of learner `network` (its injected Q-network) on `env`."""
    return DQN(cfg.dqn, env, env_params, cfg.agent.network(network, env.config))


def programs(cfg: SCED2Config, network: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    cache_key = ("sced2", cfg.dqn, env.config, cfg.agent, network)
    return algorithm_programs(cache_key, lambda env_params: dqn_for(cfg, network, env, env_params))


LEARNER = Learner(
    programs=programs,
    names=lambda cfg: cfg.agent.networks,
    budget=lambda cfg, network: cfg.dqn,
    build=build_sced2,
    summary=episode_summary("avg_effectiveness", "avg E", "", fmt=".3f"),
    curves=lambda cfg, network: CURVE_METRICS,
)
