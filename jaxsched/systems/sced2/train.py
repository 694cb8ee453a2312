"""Chunked DQN training of a SCED² config, one run per Q-network of `agent.networks`, on the shared
trainer (`experiments.train`).

    jaxsched train configs/sced2/quick.yaml     # every network, in turn → out_dir/name/<network>/
    train_network(cfg, "shared")                # one learner

A learner's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed),
`checkpoints/` (the vmapped DQN runner after each chunk, the replay buffers included, so `--resume`
continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program; programs are cached
per (DQN config, env config, network).
"""

from __future__ import annotations

import time
from pathlib import Path

from jaxsched.agents.dqn import DQN
from jaxsched.experiments.train import (
    abstract_state,
    episode_summary,
    open_run_dir,
    report_run,
    seed_keys,
    seed_programs,
    train_chunks,
)
from jaxsched.systems.sced2.config import SCED2Config, build_sced2

CURVE_METRICS = ("avg_effectiveness", "avg_jct", "td_loss", "episode_return")


def dqn_for(cfg: SCED2Config, network: str, env, env_params) -> DQN:
    """The DQN of learner `network` (its injected Q-network) on `env`."""
    return DQN(cfg.dqn, env, env_params, cfg.agent.network(network, env.config))


def programs(cfg: SCED2Config, network: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    return seed_programs(
        ("sced2", cfg.dqn, env.config, cfg.agent, network),
        lambda key, env_params: dqn_for(cfg, network, env, env_params).init(key),
        lambda runner, env_params: dqn_for(cfg, network, env, env_params).train_chunk(runner),
    )


def run_dir_of(cfg: SCED2Config, network: str) -> Path:
    return cfg.run_dir / network


def abstract_runner(cfg: SCED2Config, network: str, env, env_params):
    """Shapes, dtypes and shardings of the vmapped `DQNRunner` (a restore template; nothing runs)."""
    init, _ = programs(cfg, network, env)
    return abstract_state(init, seed_keys(cfg), env_params)


def train_network(
    cfg: SCED2Config,
    network: str,
    resume: bool = False,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    devices: int | None = None,
) -> Path:
    """Train learner `network` of `cfg` (module docstring); returns its run directory."""
    run_dir = run_dir_of(cfg, network)
    t_build = time.perf_counter()
    env, train_params, _ = build_sced2(cfg)
    init, chunk = programs(cfg, network, env)
    resuming = open_run_dir(cfg, run_dir, resume, "# resolved config written by `jaxsched train`\n")
    del resuming  # DQN keeps no state outside the runner checkpoint
    records = train_chunks(
        run_dir,
        f"{cfg.name}/{network}",
        init,
        chunk,
        seed_keys(cfg),
        train_params,
        total=cfg.dqn.total_updates,
        per_chunk=cfg.dqn.updates_per_chunk,
        steps_per_update=cfg.dqn.steps_per_update,
        summary=episode_summary("avg_effectiveness", "avg E", "", fmt=".3f"),
        resume=resume,
        progress=progress,
        stop_after_chunks=stop_after_chunks,
        t_build=t_build,
        devices=devices,
    )
    if records is not None:
        title = f"{cfg.name}/{network}: {cfg.num_seeds} seeds (mean ± std)"
        report_run(run_dir, records, title, CURVE_METRICS, progress)
    return run_dir


def train_sced2(cfg: SCED2Config, resume: bool = False, progress: bool = True, devices: int | None = None):
    """Every learner of `agent.networks`, in turn; returns their run directories."""
    return [
        train_network(cfg, n, resume=resume, progress=progress, devices=devices) for n in cfg.agent.networks
    ]
