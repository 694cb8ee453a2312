"""DAS's held-out evaluation (Table 1's average JCT in minutes and fee in $ per job), declared for the
shared path (`experiments.evaluate.evaluate`).

    jaxsched eval configs/das/heuristics_small.yaml                    # the heuristics
    jaxsched eval configs/das/small.yaml --checkpoint runs/das_small   # and every trained variant

Every policy plays every test episode (`episodes.build_for_eval`: consecutive, non-overlapping windows of
the test split) once per evaluation seed, with the keys of `episodes.seed_keys`: seed i of a learned
scheduler and seed i of a heuristic see the same fluctuation draws. A row's mean ± std is over its seeds ×
episodes; each metric also keeps its `values` `[seed][episode]` for the paper tables' paired tests. A
variant plays with MAPPO's own episode runner (`train.evaluate_learned`: the agent carries its history
between calls), from the checkpoint `eval.select` picks; its `eval.json` is the record `record` writes
(also at the end of training, `evaluate_run`).
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np

from jaxsched.agents.das import LABELS as VARIANT_LABELS
from jaxsched.experiments.evaluate import Evaluation, summarize_runs
from jaxsched.experiments.learner import run_dir_of
from jaxsched.experiments.system import Metric
from jaxsched.experiments.train import EVAL_FILE
from jaxsched.policies.gpu_cloud import LABELS, make_heuristic
from jaxsched.systems.das import train
from jaxsched.systems.das.config import DASConfig, build_das
from jaxsched.systems.das.episodes import build_for_eval, seed_keys

DAS_METRICS = (
    Metric("avg_jct_min", "JCT (min)", ",.1f"),
    Metric("avg_fee", "Fee ($)", ".2f"),
    Metric("avg_wait_min", "wait (min)", ",.1f"),
    Metric("avg_duration_min", "duration (min)", ",.1f"),
    Metric("gpu_util", "GPU util", ".3f", lower_is_better=False),
)


def _build(cfg: DASConfig):
    """`(env, train_params, test_params)`, the test params' `starts` the test episodes' (`env.episode`)."""
    env, train_params, test_params, starts = build_das(cfg)
    return env, train_params, test_params.replace(starts=jnp.asarray(starts, jnp.int32))


def _play(cfg: DASConfig, variant: str, env, params, actor, episodes, keys) -> dict:
    starts = np.asarray(params.starts)[np.asarray(episodes)]
    return train.evaluate_learned(cfg, variant, actor, env, params, starts)


def record(cfg: DASConfig, variant: str, stats: dict, selection: dict, episodes: int) -> dict:
    """A variant's `eval.json`: its results with how its checkpoints were chosen."""
    return {"config": cfg.name, "variant": variant, "episodes": episodes, "seeds": cfg.num_seeds,
            "greedy": cfg.eval.greedy, "selection": selection, "results": stats}  # fmt: skip


def _title(cfg: DASConfig, trained: str, episodes: int) -> str:
    c, e = cfg.cluster, cfg.env
    return (f"{cfg.name} ({trained}): {c.size} cluster ({c.machines} machines × 8 GPUs), {episodes} test "
            f"episodes × {e.episode_jobs} jobs × {cfg.num_seeds} seeds, load ×{e.load_scale:g}")  # fmt: skip


EVALUATION = Evaluation(
    learner=train.LEARNER,
    labels={v: v for v in VARIANT_LABELS},
    listed_in="agent.variants",
    n_test=lambda cfg, test_params: int(test_params.starts.shape[0]),
    baselines=lambda cfg, env: [(env, {p: make_heuristic(p) for p in cfg.eval.policies}, ())],
    policy=None,
    metrics=DAS_METRICS,
    title=_title,
    keys=lambda cfg, n: seed_keys(cfg.eval.seed, cfg.num_seeds, n),
    restore=train.evaluated_actor_params,
    build=_build,
    seeds=True,
    play=_play,
    values=True,
    record=record,
    display=LABELS | VARIANT_LABELS,
)


def evaluate_run(cfg: DASConfig, variant: str, built=None) -> dict:
    """A variant's trained actor (`train.evaluated_actor_params`) on the test episodes: writes its
    `eval.json` (`record`) and returns its results `{metric: {mean, std, per_seed, per_episode, values}}`.
    `built`: `episodes.build_for_eval(cfg)`'s result, if the caller has it."""
    env, train_params, test_params, starts = build_for_eval(cfg) if built is None else built
    actor, selection = train.evaluated_actor_params(cfg, variant, env, train_params)
    per = train.evaluate_learned(cfg, variant, actor, env, test_params, starts)
    stats, _ = summarize_runs(EVALUATION, per)
    payload = record(cfg, variant, stats, selection, len(starts))
    (run_dir_of(cfg, variant) / EVAL_FILE).write_text(json.dumps(payload, indent=2))
    return stats
