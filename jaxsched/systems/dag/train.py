"""Chunked policy-gradient training of an idle-slot DAG config, one run per variant of `agent.variants`,
on the shared trainer (`experiments.train`).

    jaxsched train configs/dag/quick.yaml     # every variant, in turn → out_dir/name/<variant>/
    train_variant(cfg, "full")                # one learner

A variant's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed:
the REINFORCE losses, the rollout `return` and, over the rollouts that ended in the update, the env's
episode metrics — `avg_jct`, `makespan`, `idle_per_selection` ... — and `episode_return`),
`checkpoints/` (the vmapped `ReinforceRunner` after each chunk: network, Adam state, key and update count,
so `--resume` continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program; the
seeds are the same for every variant (paired). Programs are cached per (REINFORCE config, env config,
agent section, variant), so a second run of the same shapes, a resume included, does not compile again.
"""

from __future__ import annotations

import time
from pathlib import Path

from jaxsched.agents.reinforce import Reinforce
from jaxsched.experiments.train import (
    abstract_state,
    episode_summary,
    open_run_dir,
    report_run,
    seed_keys,
    seed_programs,
    train_chunks,
)
from jaxsched.systems.dag.config import DAGSystemConfig, build_dag

CURVE_METRICS = ("avg_jct", "episode_return", "idle_per_selection", "entropy")
# A variant's training does not depend on which other variants the config lists.
MAY_GROW = ("agent.variants",)


def reinforce_for(cfg: DAGSystemConfig, variant: str, env) -> Reinforce:
    """The policy-gradient learner of `variant` (its injected network) on `env`."""
    return Reinforce(cfg.reinforce, env, cfg.agent.network(variant, env.config))


def programs(cfg: DAGSystemConfig, variant: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    alg = reinforce_for(cfg, variant, env)
    cache_key = ("dag", cfg.reinforce, env.config, cfg.agent.hidden, cfg.agent.levels, variant)
    return seed_programs(cache_key, alg.init, alg.train_chunk, map_init=False)


def run_dir_of(cfg: DAGSystemConfig, variant: str) -> Path:
    return cfg.run_dir / variant


def abstract_runner(cfg: DAGSystemConfig, variant: str, env, env_params):
    """Shapes, dtypes and shardings of the vmapped `ReinforceRunner` (a restore template; nothing runs)."""
    init, _ = programs(cfg, variant, env)
    return abstract_state(init, seed_keys(cfg), env_params)


def train_variant(
    cfg: DAGSystemConfig,
    variant: str,
    resume: bool = False,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    devices: int | None = None,
    built=None,
) -> Path:
    """Train learner `variant` of `cfg` (module docstring); returns its run directory. `built`: the
    `build_dag(cfg)` triple, when the caller has it."""
    run_dir = run_dir_of(cfg, variant)
    t_build = time.perf_counter()
    env, train_params, _ = build_dag(cfg) if built is None else built
    init, chunk = programs(cfg, variant, env)
    open_run_dir(cfg, run_dir, resume, "# resolved config written by `jaxsched train`\n", may_grow=MAY_GROW)
    r = cfg.reinforce
    records = train_chunks(
        run_dir,
        f"{cfg.name}/{variant}",
        init,
        chunk,
        seed_keys(cfg),
        train_params,
        total=r.total_updates,
        per_chunk=r.updates_per_chunk,
        steps_per_update=r.steps_per_update,
        summary=episode_summary("avg_jct", "avg JCT", "s", fmt=",.1f"),
        resume=resume,
        progress=progress,
        stop_after_chunks=stop_after_chunks,
        t_build=t_build,
        devices=devices,
    )
    if records is not None:
        title = f"{cfg.name}/{variant}: {cfg.num_seeds} seeds (mean ± std)"
        report_run(run_dir, records, title, CURVE_METRICS, progress)
    return run_dir


def train_dag(cfg: DAGSystemConfig, resume: bool = False, progress: bool = True, devices: int | None = None):
    """Every learner of `agent.variants`, in turn (the banks built once); returns their run directories."""
    built = build_dag(cfg)
    return [
        train_variant(cfg, v, resume=resume, progress=progress, devices=devices, built=built)
        for v in cfg.agent.variants
    ]
