"""DAS's learners: one MAPPO run per learned variant, declared for the shared training path
(`experiments.learner`: an imitation warm start, validation-based selection and, when a run finishes, an
evaluation on the held-out test episodes are its hooks).

    jaxsched train configs/das/small.yaml            # every variant of agent.variants, in turn
    train_learner(LEARNER, cfg, "das")               # one variant → out_dir/name/das/

A variant's run directory holds `config.yaml` (the resolved config), `metrics.jsonl` (one line per update,
one value per seed), `checkpoints/` (the vmapped MAPPO runner after each chunk; `--resume` continues
from the last, as for DBF runs), `imitation.jsonl` (the warm start's per-update losses, when
`mappo.imitation_updates` > 0; it runs once, before the first chunk), with `eval.select: validation`
`validation.jsonl` and `selected/` (each seed's best checkpoint on validation episodes of the training
bank: `select`), `learning_curve.png` and `eval.json`: the policy (greedy, the Gaussians' means,
unless `eval.greedy: false`) of the evaluated actor (each seed's last or selected checkpoint) on every
test episode, with the evaluation keys of the heuristics (`evaluate.seed_keys`), so seed i of a learned
scheduler and seed i of a heuristic see the same fluctuation draws — a paired comparison (`jaxsched
table das`).

Seeds are `vmap`ped in one program; programs are cached per (MAPPO config, agent config, env config) in
the shared caches.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.agents.das import LABELS as VARIANT_LABELS
from jaxsched.agents.das import DASAgent, DASAgentConfig
from jaxsched.agents.imitation import pretrain
from jaxsched.agents.mappo import MAPPO, MAPPOConfig
from jaxsched.experiments.evaluate import episodes_program
from jaxsched.experiments.learner import Learner, restore_evaluated
from jaxsched.experiments.sharding import seed_sharding, shard_seeds
from jaxsched.experiments.train import (
    CURVE_FILE,
    EVAL_FILE,
    METRICS_FILE,
    algorithm_programs,
    cached_program,
    episode_summary,
)
from jaxsched.systems.das.config import DASConfig
from jaxsched.systems.das.episodes import build_for_eval, seed_keys
from jaxsched.systems.das.select import (
    METRIC,
    PARAMS_KEY,
    VALIDATION_FILE,
    ValidationSelector,
    actor_of,
    validation_keys,
    validation_starts,
)

IMITATION_FILE = "imitation.jsonl"
CURVE_METRICS = ("episode_return", "avg_jct_min", "avg_fee", "entropy")


def make_mappo(mappo_config: MAPPOConfig, agent_config: DASAgentConfig, env, env_params) -> MAPPO:
    """MAPPO on the GPU-cloud env with the DAS agent of `agent_config` injected."""
    return MAPPO(mappo_config, env, env_params, DASAgent.for_env(agent_config, env))


def programs(mappo_config: MAPPOConfig, agent_config: DASAgentConfig, env):
    """Jitted `init(keys, env_params)`, `chunk(runner, env_params)` (vmapped over seeds),
    `evaluate(actor_params [S], env_params, episodes [E], keys [S, E], greedy) -> {metric: [S, E]}` (episode
    `i` is `env.episode(env_params, i)`, seed s with its own keys) and
    `warm_start(runner, env_params) -> (runner, imitation metrics [S, imitation_updates])`, in the shared
    caches (`experiments.train.cached_program`, `experiments.evaluate.episodes_program`)."""
    cache_key = ("das", mappo_config, agent_config, env.config)

    def mappo(env_params):
        return make_mappo(mappo_config, agent_config, env, env_params)

    init, chunk = algorithm_programs(cache_key, mappo, map_init=False)

    def evaluate(actor_params, env_params, episodes, keys, greedy=True):
        def episode(actor, params, key):
            return mappo(params).run_episode(actor, params, key, greedy=greedy)

        fn = episodes_program((*cache_key, greedy), env, None, episode=episode, keys_per_lead=True)
        return fn(actor_params, env_params, episodes, keys)

    def make_warm_start():
        return jax.jit(lambda runner, env_params: jax.vmap(lambda r: pretrain(mappo(env_params), r))(runner))

    return init, chunk, evaluate, cached_program((*cache_key, "imitation"), make_warm_start)


def _select(cfg: DASConfig, variant: str, run_dir: Path, env, train_params, resuming: bool):
    """With `eval.select: validation`, the hook keeping each seed's best actor on the validation episodes."""
    if cfg.eval.select != "validation":
        return None
    return ValidationSelector(run_dir, validator(cfg, variant, env, train_params), resuming)


def _warm_start(cfg: DASConfig, variant: str, run_dir: Path, env, init, progress: bool):
    """With `mappo.imitation_updates`, a fresh run starts fitted to the imitation teacher."""
    mcfg = cfg.mappo
    if not mcfg.imitation_updates:
        return init
    warm_start = programs(mcfg, cfg.agent.agent_config(variant), env)[3]
    return lambda keys, params: _imitation_start(init, warm_start, mcfg, run_dir, keys, params, progress)


def _finish(cfg: DASConfig, variant: str, run_dir: Path, records, built, selector, progress: bool) -> None:
    """After a finished run: the learning curve, then the variant on the test episodes (`evaluate_run`)."""
    from jaxsched.experiments.plots import plot_learning_curves
    from jaxsched.systems.das.evaluation import evaluate_run  # the evaluation declares this module's learner

    say = print if progress else (lambda *a, **k: None)
    plot_learning_curves(
        records, run_dir / CURVE_FILE, CURVE_METRICS,
        title=f"{cfg.name}: {VARIANT_LABELS[variant]}, {cfg.num_seeds} seeds (mean ± std)",
    )  # fmt: skip
    results = evaluate_run(cfg, variant, built)
    jct = np.asarray(results["avg_jct_min"]["values"])
    say(f"metrics: {run_dir / METRICS_FILE}  curve: {run_dir / CURVE_FILE}")
    if selector is not None:
        say(
            f"selected on {cfg.eval.validation_episodes} validation episodes: the checkpoints of updates "
            f"{selector.best['update'].tolist()} (one per seed; {run_dir / VALIDATION_FILE})"
        )
    say(
        f"{VARIANT_LABELS[variant]} on {jct.shape[1]} test episodes × {jct.shape[0]} seeds: "
        f"JCT {jct.mean():,.1f} ± {jct.std():,.1f} min  →  {run_dir / EVAL_FILE}"
    )


LEARNER = Learner(
    programs=lambda cfg, variant, env: programs(cfg.mappo, cfg.agent.agent_config(variant), env)[:2],
    names=lambda cfg: cfg.agent.variants,
    budget=lambda cfg, variant: cfg.mappo,
    build=build_for_eval,
    summary=episode_summary("avg_jct_min", "avg JCT", "min", ".3f"),
    curves=lambda cfg, variant: CURVE_METRICS,
    may_grow=("mappo.total_updates",),  # training longer is a legitimate resume
    select=_select,
    warm_start=_warm_start,
    finish=_finish,
)


def _imitation_start(init, warm_start, mcfg: MAPPOConfig, run_dir: Path, keys, params, progress: bool):
    """A fresh runner fitted to the imitation teacher (`agents.imitation`); its per-update metrics (one
    value per seed) go to `imitation.jsonl`."""
    say = print if progress else (lambda *a, **k: None)
    t0 = time.perf_counter()
    runner, metrics = warm_start(init(keys, params), params)
    metrics = {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}  # [S, U]
    lines = [
        json.dumps({"update": u + 1, **{k: v[:, u].tolist() for k, v in metrics.items()}}) + "\n"
        for u in range(mcfg.imitation_updates)
    ]
    (run_dir / IMITATION_FILE).write_text("".join(lines))
    loss = metrics["imitation_loss"].mean(axis=0)
    say(
        f"imitation warm start ({mcfg.imitation_teacher}, {mcfg.imitation_updates} updates) in "
        f"{time.perf_counter() - t0:.1f} s: loss {loss[0]:.3f} → {loss[-1]:.3f}, "
        f"mean error {metrics['imitation_mean_mse'].mean(axis=0)[-1]:.4f}"
    )
    return runner


def evaluated_actor_params(cfg: DASConfig, variant: str, env, train_params):
    """`(actor [S, ...], selection)`: the parameters the test episodes see under `cfg.eval.select` and how
    they were chosen (`experiments.learner.restore_evaluated`)."""
    return restore_evaluated(LEARNER, cfg, variant, env, train_params, actor_of, METRIC, PARAMS_KEY)


def validator(cfg: DASConfig, variant: str, env, train_params):
    """`actor [S, ...] -> avg JCT [S, V]` of the policies (as `eval.greedy` says) on the validation episodes
    (`select.validation_starts`, `validation_keys`)."""
    _, _, evaluate, _ = programs(cfg.mappo, cfg.agent.agent_config(variant), env)
    n = cfg.eval.validation_episodes
    starts = jnp.asarray(validation_starts(train_params, cfg.env.episode_jobs, n), jnp.int32)
    params, episodes = train_params.replace(starts=starts), jnp.arange(n)
    keys = validation_keys(cfg.eval.seed, cfg.num_seeds, n)
    greedy = cfg.eval.greedy
    return lambda actor: np.asarray(evaluate(actor, params, episodes, keys, greedy=greedy)["avg_jct_min"])


def evaluate_learned(cfg: DASConfig, variant: str, actor_params, env, test_params, starts):
    """Episodes of every seed's actor (greedy unless `eval.greedy: false`) on every test episode →
    `{metric: [S, E]}` (numpy)."""
    _, _, evaluate, _ = programs(cfg.mappo, cfg.agent.agent_config(variant), env)
    sharding = seed_sharding(cfg.num_seeds)  # the seeds over the local devices
    keys = shard_seeds(seed_keys(cfg.eval.seed, cfg.num_seeds, len(starts)), sharding)
    actor_params = shard_seeds(actor_params, sharding)
    params = test_params.replace(starts=jnp.asarray(starts, jnp.int32))
    out = evaluate(actor_params, params, jnp.arange(len(starts)), keys, greedy=cfg.eval.greedy)
    return {k: np.asarray(v) for k, v in jax.device_get(out).items()}
