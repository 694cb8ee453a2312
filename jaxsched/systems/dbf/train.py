"""Chunked PPO training of a Deep Back-Filling config, on the shared trainer (`experiments.train`).

run_dir = train_run(cfg)                 # out_dir/name: config.yaml, metrics.jsonl, checkpoints/,
                                         # learning_curve.png
run_dir = train_run(cfg, resume=True)    # continue a killed run from its last checkpoint
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import numpy as np

from jaxsched.agents.ppo import PPO, PPOConfig
from jaxsched.experiments.config import VALIDATION_TAG, purpose_key
from jaxsched.experiments.evaluate import episodes_program
from jaxsched.experiments.select import ValidationSelector
from jaxsched.experiments.train import (
    abstract_state,
    algorithm_programs,
    episode_summary,
    open_run_dir,
    report_run,
    seed_keys,
    train_chunks,
)
from jaxsched.systems.dbf.config import AgentSection, DBFConfig, build_run

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


def abstract_runner(cfg: DBFConfig, env, env_params):
    """Shapes, dtypes and shardings of the vmapped `RunnerState` (a restore template; nothing runs)."""
    init, _ = programs(cfg.ppo, env, cfg.agent)
    return abstract_state(init, seed_keys(cfg), env_params)


def agent_program(cfg: DBFConfig, env):
    """Jitted `run(policy_params [S], env_params, windows, keys [E]) -> {metric: [S, E]}`: each seed's
    policy (greedy unless `eval.greedy: false`) on the episode of every key; with `windows` (`i32[E]`),
    episode `e` plays window `windows[e]` (`env.episode`) instead of the one its key draws
    (`experiments.evaluate.episodes_program`)."""
    policy = PPO(cfg.ppo, env, None, cfg.agent.build(env, cfg.ppo)).policy(greedy=cfg.eval.greedy)
    return episodes_program(("dbf", cfg.ppo, cfg.eval.greedy, cfg.agent), env, policy)


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


def train_run(
    cfg: DBFConfig, resume: bool = False, progress: bool = True, stop_after_chunks: int | None = None,
    devices: int | None = None,
) -> Path:  # fmt: skip
    """Train `cfg` (see the module docstring); returns the run directory. `stop_after_chunks` stops as
    if killed after that many chunks (metrics and checkpoint written, no plot)."""
    run_dir = cfg.run_dir
    t_build = time.perf_counter()
    env, train_params, _, ppo_cfg = build_run(cfg)
    init, chunk = programs(ppo_cfg, env, cfg.agent)
    # Training longer is a legitimate resume, except with a learning rate annealed over total_updates.
    may_grow = () if cfg.ppo.anneal_lr else ("ppo.total_updates",)
    resuming = open_run_dir(cfg, run_dir, resume, "# resolved config written by `jaxsched train`\n", may_grow)
    selector = selection(cfg, run_dir, env, train_params, resuming)
    records = train_chunks(
        run_dir, cfg.name, init, chunk, seed_keys(cfg), train_params, total=ppo_cfg.total_updates,
        per_chunk=ppo_cfg.updates_per_chunk, steps_per_update=ppo_cfg.steps_per_update,
        summary=episode_summary("avg_wait", "avg wait", "s"), resume=resume, progress=progress,
        stop_after_chunks=stop_after_chunks,
        t_build=t_build, devices=devices, on_checkpoint=selector,
    )  # fmt: skip
    if records is not None:
        note = f" (final parameters, update {records[-1]['update']})"
        report_run(run_dir, records, f"{cfg.name}: {cfg.num_seeds} seeds (mean ± std)", None, progress, note)
    return run_dir
