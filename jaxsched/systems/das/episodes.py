"""DAS's held-out episodes: the test windows (`build_for_eval`), their keys per evaluation seed
(`seed_keys`) and the heuristics on them (`evaluate_on_episodes`, `evaluate_knob_candidates`: the
calibration's and the paper tables' baselines), as `{metric: {mean, std, per_seed, values}}` records
(`per_episode_results`).

Every policy plays every test episode (consecutive, non-overlapping windows of the test split) once per
seed; a seed fixes the environment's randomness (machine fluctuation draws, and the pending-job sample
when more than N wait), the same for every policy: a paired comparison.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.experiments.evaluate import run_policies
from jaxsched.systems.das.config import DASConfig, build_das


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
