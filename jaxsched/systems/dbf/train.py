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
import yaml

from jaxsched.agents.ppo import PPO, PPOConfig
from jaxsched.experiments.config import dump_config
from jaxsched.experiments.train import (
    CHECKPOINT_DIR,
    CONFIG_FILE,
    CURVE_FILE,
    METRICS_FILE,
    abstract_state,
    check_no_run,
    resume_diffs,
    train_chunks,
    weighted_episode_mean,
)
from jaxsched.systems.dbf.config import DBFConfig, build_run, dbf_config_from_dict

_PROGRAMS: dict = {}


def programs(ppo_config: PPOConfig, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis (the
    chunk is `vmap`ped over seeds)."""
    cache_key = (ppo_config, env.config)
    if cache_key not in _PROGRAMS:

        def init(keys, env_params):
            # lax.map rather than vmap: jaxlib 0.10.x wedges on the vmapped orthogonal init (batched QR)
            # on the CPU; the pinned 0.9.2 does not, but a loop keeps runs bit-identical to those in
            # docs/results and costs nothing (init is cheap).
            return jax.lax.map(PPO(ppo_config, env, env_params).init, keys)

        def chunk(runner, env_params):
            return jax.vmap(PPO(ppo_config, env, env_params).train_chunk)(runner)

        _PROGRAMS[cache_key] = (jax.jit(init), jax.jit(chunk))
    return _PROGRAMS[cache_key]


def seed_keys(cfg: DBFConfig) -> jax.Array:
    return jax.random.split(jax.random.key(cfg.seed), cfg.num_seeds)


def abstract_runner(cfg: DBFConfig, env, env_params):
    """Shapes, dtypes and shardings of the vmapped `RunnerState` (a restore template; nothing runs)."""
    init, _ = programs(cfg.ppo, env)
    return abstract_state(init, seed_keys(cfg), env_params)


def _summary(records: list[dict]) -> str:
    ret = weighted_episode_mean(records, "episode_return")
    if not np.isfinite(ret):
        return "no episode finished yet"
    return f"return {ret:.2f}  avg wait {weighted_episode_mean(records, 'avg_wait'):,.0f} s"


def _check_resumable(cfg: DBFConfig, run_dir) -> None:
    saved_path = run_dir / CONFIG_FILE
    if not saved_path.exists():
        return
    saved = dbf_config_from_dict(yaml.safe_load(saved_path.read_text())).to_dict()
    diffs = resume_diffs(cfg, saved)
    if diffs == ["ppo.total_updates"] and not cfg.ppo.anneal_lr:
        return  # training longer (or stopping earlier) is a legitimate resume
    if diffs:
        raise ValueError(
            f"cannot resume {run_dir}: the config differs from the one it was started with in "
            f"{', '.join(diffs)} (see {saved_path})"
        )


def train_run(
    cfg: DBFConfig, resume: bool = False, progress: bool = True, stop_after_chunks: int | None = None,
    devices: int | None = None,
) -> Path:  # fmt: skip
    """Train `cfg` (see the module docstring); returns the run directory. `stop_after_chunks` stops as
    if killed after that many chunks (metrics and checkpoint written, no plot)."""
    run_dir = cfg.run_dir
    t_build = time.perf_counter()
    env, train_params, _, ppo_cfg = build_run(cfg)
    init, chunk = programs(ppo_cfg, env)
    if check_no_run(run_dir, resume) is not None:
        _check_resumable(cfg, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    dump_config(cfg, run_dir / CONFIG_FILE, header="# resolved config written by `jaxsched train`\n")
    records = train_chunks(
        run_dir, cfg.name, init, chunk, seed_keys(cfg), train_params, total=ppo_cfg.total_updates,
        per_chunk=ppo_cfg.updates_per_chunk, steps_per_update=ppo_cfg.steps_per_update,
        summary=_summary, resume=resume, progress=progress, stop_after_chunks=stop_after_chunks,
        t_build=t_build, devices=devices,
    )  # fmt: skip
    if records is None:
        return run_dir
    from jaxsched.experiments.plots import plot_learning_curves

    say = print if progress else (lambda *a, **k: None)
    curve = run_dir / CURVE_FILE
    plot_learning_curves(records, curve, title=f"{cfg.name}: {cfg.num_seeds} seeds (mean ± std)")
    say(f"metrics:        {run_dir / METRICS_FILE}")
    say(f"checkpoint:     {run_dir / CHECKPOINT_DIR / str(records[-1]['update'])} (final parameters, "
        f"update {records[-1]['update']})")  # fmt: skip
    say(f"learning curve: {curve}")
    return run_dir
