"""Deep Back-Filling's learner: one PPO run per config, declared for the shared training path
(`experiments.learner`).

    run_dir = train_learner(LEARNER, cfg, AGENT)     # out_dir/name: config.yaml, metrics.jsonl,
                                                     # checkpoints/, learning_curve.png
    train_learner(LEARNER, cfg, AGENT, resume=True)  # continue a killed run from its last checkpoint
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxsched.agents.ppo import PPO, PPOConfig
from jaxsched.core.keys import VALIDATION_TAG, purpose_key
from jaxsched.experiments.evaluate import episodes_program
from jaxsched.experiments.learner import Learner
from jaxsched.experiments.select import ValidationSelector
from jaxsched.experiments.train import algorithm_programs, episode_summary
from jaxsched.systems.dbf.config import AgentSection, DBFConfig, build_run

CURVE_METRICS = ("avg_wait", "avg_queue_len", "utilization", "episode_return")
SELECT_METRIC = "avg_wait"  # what `eval.select: validation` minimises: the paper's headline metric


def programs(ppo_config: PPOConfig, env, agent: AgentSection | None = None):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis (the
    chunk is `vmap`ped over seeds), for the network of `agent` (default: DBF's MLP)."""
    agent = AgentSection() if agent is None else agent
    network = agent.build(env, ppo_config)
    # lax.map for the inits rather than vmap: jaxlib 0.10.x wedges on the vmapped orthogonal init (batched
    # QR) on the CPU; the pinned 0.9.2 does not, but a loop keeps runs bit-identical to those in
    # docs/results and costs nothing (init is cheap).
    cache_key = ("dbf", ppo_config, env.config, agent)
    return algorithm_programs(cache_key, lambda env_params: PPO(ppo_config, env, env_params, network))


def agent_policy(cfg: DBFConfig, env) -> tuple:
    """`(cache key, policy)`: the learned policy (greedy unless `eval.greedy: false`) the validation and
    the held-out evaluation play (one compiled program for both)."""
    policy = PPO(cfg.ppo, env, None, cfg.agent.build(env, cfg.ppo)).policy(greedy=cfg.eval.greedy)
    return ("dbf", cfg.ppo, cfg.eval.greedy, cfg.agent), policy


def agent_program(cfg: DBFConfig, env):
    """Jitted `run(policy_params [S], env_params, windows, keys [E]) -> {metric: [S, E]}`: each seed's
    policy on the episode of every key; with `windows` (`i32[E]`), episode `e` plays window `windows[e]`
    (`env.episode`) instead of the one its key draws (`experiments.evaluate.episodes_program`)."""
    cache_key, policy = agent_policy(cfg, env)
    return episodes_program(cache_key, env, policy)


def validator(cfg: DBFConfig, env, train_params):
    """`policy_params [S] -> avg wait [S, V]` on `eval.validation_episodes` episodes of the training bank,
    with their own keys (`VALIDATION_TAG`: never those of training or of the test episodes)."""
    keys = jax.random.split(purpose_key(cfg.eval.seed, VALIDATION_TAG), cfg.eval.validation_episodes)
    run = agent_program(cfg, env)
    return lambda policy_params: np.asarray(run(policy_params, train_params, None, keys)[SELECT_METRIC])


def selection(cfg: DBFConfig, run_dir: Path, env, train_params, resuming: bool):
    """The `train_chunks` hook that keeps each seed's best checkpoint, with `eval.select: validation`."""
    if cfg.eval.select != "validation":
        return None
    return ValidationSelector(
        run_dir, validator(cfg, env, train_params), resuming, lambda r: (r.params, r.obs_stats),
        SELECT_METRIC, label="val wait",
    )  # fmt: skip


def _may_grow(cfg: DBFConfig) -> tuple[str, ...]:
    # Training longer is a legitimate resume, except with a learning rate annealed over total_updates.
    return () if cfg.ppo.anneal_lr else ("ppo.total_updates",)


AGENT = "agent"  # the config's one learner: its run directory is the config's own
LEARNER = Learner(
    programs=lambda cfg, name, env: programs(cfg.ppo, env, cfg.agent),
    names=lambda cfg: (AGENT,),
    budget=lambda cfg, name: cfg.ppo,
    build=build_run,
    summary=episode_summary("avg_wait", "avg wait", "s"),
    curves=lambda cfg, name: CURVE_METRICS,
    may_grow=_may_grow,
    run_dir=lambda cfg, name: cfg.run_dir,
    select=lambda cfg, name, run_dir, env, train_params, resuming: selection(
        cfg, run_dir, env, train_params, resuming
    ),
)
