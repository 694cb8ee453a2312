"""Chunked PPO training of an OSDEC config, one run per learner of `agent.learners`, on the shared trainer
(`experiments.train`).

    jaxsched train configs/osdec/quick.yaml     # every learner, in turn → out_dir/name/<learner>/
    train_learner(cfg, "osdec")                 # one learner

A learner's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed:
PPO's losses, the approximate KL, the auxiliary tasks' errors and the env's episode metrics —
`total_reward`, `utilization`, `delay`, `violation` ...), `checkpoints/` (the vmapped PPO runner after each
chunk, so `--resume` continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program,
the same seeds for every learner (paired); programs are cached per (PPO config, env config, agent section,
learner).
"""

from __future__ import annotations

import time
from pathlib import Path

from jaxsched.agents.ppo import PPO
from jaxsched.experiments.train import (
    abstract_state,
    episode_summary,
    open_run_dir,
    report_run,
    seed_keys,
    seed_programs,
    train_chunks,
)
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec

CURVE_METRICS = ("total_reward", "utilization", "approx_kl")  # and `aux_loss` for a learner with the module
MAY_GROW = ("agent.learners",)  # a learner's training does not depend on the others listed


def ppo_for(cfg: OSDECConfig, learner: str, env, env_params) -> PPO:
    """The PPO of `learner` (its injected network and its PPO overrides, `config.LEARNER_PPO`) on `env`."""
    return PPO(cfg.agent.ppo_config(cfg.ppo, learner), env, env_params, cfg.agent.network(learner))


def programs(cfg: OSDECConfig, learner: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    return seed_programs(
        ("osdec", cfg.ppo, env.config, cfg.agent, learner),
        lambda key, env_params: ppo_for(cfg, learner, env, env_params).init(key),
        lambda runner, env_params: ppo_for(cfg, learner, env, env_params).train_chunk(runner),
    )


def run_dir_of(cfg: OSDECConfig, learner: str) -> Path:
    return cfg.run_dir / learner


def abstract_runner(cfg: OSDECConfig, learner: str, env, env_params):
    """Shapes, dtypes and shardings of the vmapped `RunnerState` (a restore template; nothing runs)."""
    init, _ = programs(cfg, learner, env)
    return abstract_state(init, seed_keys(cfg), env_params)


def train_learner(
    cfg: OSDECConfig,
    learner: str,
    resume: bool = False,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    devices: int | None = None,
    built=None,
) -> Path:
    """Train `learner` of `cfg` (module docstring); returns its run directory. `built`: the
    `build_osdec(cfg)` triple, when the caller has it."""
    run_dir = run_dir_of(cfg, learner)
    t_build = time.perf_counter()
    env, train_params, _ = build_osdec(cfg) if built is None else built
    init, chunk = programs(cfg, learner, env)
    open_run_dir(cfg, run_dir, resume, "# resolved config written by `jaxsched train`\n", may_grow=MAY_GROW)
    p = cfg.ppo
    records = train_chunks(
        run_dir, f"{cfg.name}/{learner}", init, chunk, seed_keys(cfg), train_params, total=p.total_updates,
        per_chunk=p.updates_per_chunk, steps_per_update=p.steps_per_update,
        summary=episode_summary("utilization", "utilization", "core-steps", fmt=",.1f"), resume=resume,
        progress=progress, stop_after_chunks=stop_after_chunks, t_build=t_build, devices=devices,
    )  # fmt: skip
    if records is not None:
        curves = CURVE_METRICS + (("aux_loss",) if cfg.agent.net_config(learner).uses_aux else ())
        title = f"{cfg.name}/{learner}: {cfg.num_seeds} seeds (mean ± std)"
        report_run(run_dir, records, title, curves, progress)
    return run_dir


def train_osdec(cfg: OSDECConfig, resume: bool = False, progress: bool = True, devices: int | None = None):
    """Every learner of `agent.learners`, in turn (the banks built once); returns their run directories."""
    built = build_osdec(cfg)
    return [
        train_learner(cfg, n, resume=resume, progress=progress, devices=devices, built=built)
        for n in cfg.agent.learners
    ]
