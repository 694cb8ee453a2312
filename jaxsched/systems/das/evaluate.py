"""Table-1-style evaluation on the GPU-cloud env: average JCT (minutes) and fee ($) per job over the
held-out test episodes, for several seeds.

    jaxsched eval configs/das/heuristics_small.yaml

Every policy plays every test episode (consecutive, non-overlapping windows of the test split) once per
seed; a seed fixes the environment's randomness (machine fluctuation draws, and the pending-job sample
when more than N wait). All (policy, episode, seed) triples run as one compiled, vmapped program. A row's
mean ± std is over its seeds × episodes (each episode's metric is its per-job average, as in Table 1).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.experiments.evaluate import run_policies
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.experiments.system import Metric
from jaxsched.experiments.train import EVAL_FILE
from jaxsched.policies.gpu_cloud import LABELS, make_heuristic
from jaxsched.systems.das.config import DASConfig, build_das

DAS_METRICS = (
    Metric("avg_jct_min", "JCT (min)", ",.1f"),
    Metric("avg_fee", "Fee ($)", ".2f"),
    Metric("avg_wait_min", "wait (min)", ",.1f"),
    Metric("avg_duration_min", "duration (min)", ",.1f"),
    Metric("gpu_util", "GPU util", ".3f", lower_is_better=False),
)


def seed_keys(seed: int, num_seeds: int, n_episodes: int) -> jax.Array:
    """`[num_seeds, n_episodes]` episode keys: `fold_in(fold_in(key(seed), i), e)`."""
    root = jax.random.key(seed)
    return jax.vmap(
        lambda i: jax.vmap(lambda e: jax.random.fold_in(jax.random.fold_in(root, i), e))(
            jnp.arange(n_episodes)
        )
    )(jnp.arange(num_seeds))


def evaluate_on_episodes(env, params, policies: dict, starts, keys) -> dict[str, dict[str, np.ndarray]]:
    """Parameter-free policies (`{name: policy}`) on the test episodes starting at `starts` (`[E]`), each
    with the keys `keys[:, e]` (`[S, E]`), as one program (`experiments.evaluate.run_policies`: the episode
    `e` is `env.episode(params with starts, e)`). Returns `{name: {metric: [S, E]}}`."""
    params = params.replace(starts=jnp.asarray(starts, jnp.int32))
    return run_policies(env, params, policies, np.arange(len(starts)), keys, seeds=True)


def evaluate_knob_candidates(env, params, candidates: dict, policies: dict, starts, keys) -> list[dict]:
    """`evaluate_on_episodes` for several values of scalar env params at once (`candidates`: `{params
    field: [C values]}`), one vmapped program over the candidates. Returns, per candidate, `{name: {metric:
    [S, E]}}`."""
    fields = tuple(sorted(candidates))
    stacked = params.replace(
        starts=jnp.asarray(starts, jnp.int32),
        **{f: jnp.asarray(candidates[f], getattr(params, f).dtype) for f in fields},
    )
    per = run_policies(env, stacked, policies, np.arange(len(starts)), keys, seeds=True, batched=fields)
    n = len(candidates[fields[0]])
    return [{nm: {k: v[c] for k, v in m.items()} for nm, m in per.items()} for c in range(n)]


def _stats(v: np.ndarray) -> dict:
    v = np.asarray(v, np.float64)  # [S, E]
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "per_seed": [float(x) for x in v.mean(axis=1)],
        "values": v.tolist(),  # [seed][episode], for paired tests
    }


def per_episode_results(per: dict[str, np.ndarray]) -> dict:
    """`{metric: [S, E]}` → `{metric: {mean, std, per_seed, values}}` (one policy's JSON record)."""
    return {k: _stats(v) for k, v in per.items()}


def build_for_eval(cfg: DASConfig, episodes: int | None = None):
    """`build_das(cfg)` with the test episodes cut to `episodes` (default `cfg.eval.episodes`; None =
    every held-out episode): `(env, train_params, test_params, starts)`."""
    env, train_params, test_params, starts = build_das(cfg)
    n = cfg.eval.episodes if episodes is None else episodes
    if n is not None:
        if n < 1:
            raise ValueError(f"episodes must be >= 1, got {n}")
        starts = starts[: min(n, len(starts))]
    return env, train_params, test_params, starts


def eval_heuristics(cfg: DASConfig, episodes: int | None = None, json_path=None) -> dict:
    """Run `cfg.eval.policies` on the held-out episodes (module docstring); print the table and write
    `{policy: {metric: {mean, std, per_seed}}}` to `json_path` (default `<run dir>/eval.json`)."""
    t0 = time.perf_counter()
    env, _, test_params, starts = build_for_eval(cfg, episodes)
    keys = seed_keys(cfg.eval.seed, cfg.num_seeds, len(starts))
    policies = {p: make_heuristic(p) for p in cfg.eval.policies}
    per = evaluate_on_episodes(env, test_params, policies, starts, keys)
    results = {name: per_episode_results(m) for name, m in per.items()}
    wall = time.perf_counter() - t0

    c, e = cfg.cluster, cfg.env
    title = (
        f"{cfg.name}: {c.size} cluster ({c.machines} machines × 8 GPUs), {len(starts)} test episodes × "
        f"{e.episode_jobs} jobs × {cfg.num_seeds} seeds, load ×{e.load_scale:g}"
    )
    if json_path == "-":
        print(json.dumps(results, indent=2))
        return results
    rows = {LABELS[n]: {k: (r[k]["mean"], r[k]["std"]) for k, *_ in DAS_METRICS} for n, r in results.items()}
    print_metric_table(rows, DAS_METRICS, title=title)
    path = Path(json_path) if json_path else cfg.run_dir / EVAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(
        str(path),
        {
            "config": cfg.name,
            "episodes": len(starts),
            "seeds": cfg.num_seeds,
            "wall_s": wall,
            "results": results,
        },
    )
    print(f"results: {path}  ({wall:.1f} s)")
    return results
