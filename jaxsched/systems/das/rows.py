"""The rows of `jaxsched table das`: per scheduler, one value per (seed, test episode), with the same
evaluation keys for every row — the heuristics and the learned variants from the config's evaluation
(`jaxsched eval`), the planners from the `eval.json` `--planners` wrote, several training seeds stacked
(see `table`'s docstring)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.agents.das import LABELS as VARIANT_LABELS
from jaxsched.experiments import runs
from jaxsched.experiments.evaluate import episodes_program
from jaxsched.experiments.train import EVAL_FILE
from jaxsched.policies.gpu_cloud import LABELS as HEURISTIC_LABELS
from jaxsched.policies.gpu_cloud import make_heuristic
from jaxsched.systems.das.config import DASConfig
from jaxsched.systems.das.episodes import build_for_eval, evaluate_on_episodes, seed_keys

PLANNERS = {"mosa": "MOSA", "malo": "MALO"}
LEARNED_ORDER = ("dl2", "rifling", "da", "da_mc", "da_rwgp", "das")


def label(name: str) -> str:
    return HEURISTIC_LABELS.get(name) or VARIANT_LABELS.get(name) or PLANNERS.get(name) or name


def heuristic_rows(cfg: DASConfig, built=None, load_scale: float | None = None) -> dict:
    """`{policy: {metric: [S, E]}}` of `cfg.eval.policies` on the test episodes (optionally at another
    arrival-rate multiplier)."""
    env, _, test_params, starts = built if built is not None else build_for_eval(cfg)
    if load_scale is not None:
        test_params = test_params.replace(load_scale=jnp.float32(load_scale))
    keys = seed_keys(cfg.eval.seed, cfg.num_seeds, len(starts))
    policies = {p: make_heuristic(p) for p in cfg.eval.policies}
    return evaluate_on_episodes(env, test_params, policies, starts, keys)


def _read_eval(path: Path) -> dict | None:
    if not path.exists():
        return None
    payload = json.loads(path.read_text())
    return {k: np.asarray(v["values"], np.float64) for k, v in payload["results"].items()}


def stored_rows(cfg: DASConfig, names) -> dict:
    """`{name: {metric: [S, E]} or None}` from `<run dir>/<name>/eval.json` (None: not there yet)."""
    return {n: _read_eval(cfg.run_dir / n / EVAL_FILE) for n in names}


def evaluate_planner(
    cfg: DASConfig, name: str, episodes: int | None = None, seeds: int | None = None
) -> Path:
    """Run MOSA or MALO (paper's Table 2 settings) on the first `episodes` test episodes × `seeds` seeds
    and write `<run dir>/<name>/eval.json`. Slow: MALO takes ~0.24 s per decision on a 2-core CPU."""
    from jaxsched.policies.metaheuristics import make_malo, make_mosa, run_planner_episode
    from jaxsched.systems.das.episodes import per_episode_results

    env, _, test_params, starts = build_for_eval(cfg)
    starts = starts[: episodes or len(starts)]
    n_seeds = seeds or cfg.num_seeds
    keys = seed_keys(cfg.eval.seed, cfg.num_seeds, len(starts))[:n_seeds]
    planner = {"mosa": make_mosa, "malo": make_malo}[name](env, test_params)

    params = test_params.replace(starts=jnp.asarray(starts, jnp.int32))

    def episode(_, episode_params, key):  # a planner has no learned params: one lead of nothing
        return run_planner_episode(env, episode_params, planner, key)

    t0 = time.perf_counter()
    # the planner is built on these test params: a program of its own (`id`), not one shared by name
    fn = episodes_program(("planner", name, id(planner)), env, None, seeds=True, episode=episode)
    out = jax.device_get(fn(jnp.zeros(1), params, jnp.arange(len(starts)), keys))  # [1, S, E]
    per = {k: np.asarray(v)[0] for k, v in out.items() if k != "return"}
    path = cfg.run_dir / name / EVAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "config": cfg.name,
        "planner": name,
        "episodes": len(starts),
        "seeds": n_seeds,
        "wall_s": time.perf_counter() - t0,
        "results": per_episode_results(per),
    }
    path.write_text(json.dumps(payload, indent=2))
    return path


def runs_by_seed(cfg: DASConfig, run_dirs, variant: str) -> list:
    """`experiments.runs.runs_by_seed` of `variant`'s `eval.json` (the runs may list other variants)."""
    return runs.runs_by_seed(cfg, run_dirs, variant, lambda d: _read_eval(d / EVAL_FILE), ("agent.variants",))


def stacked_learned_rows(cfg: DASConfig, run_dirs) -> dict:
    """`{variant: {metric: [K·S, E]} or None}`: each variant's `eval.json` from every run directory that
    has one, checked to be `cfg`'s recipe and stacked in order of training seed (K of them)."""
    out = {}
    for v in LEARNED_ORDER:
        blocks = [row for _, _, row in runs_by_seed(cfg, run_dirs, v)]
        out[v] = {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]} if blocks else None
    return out


def evaluated_values(results: dict) -> dict:
    """`{policy: {metric: [S, E]}}` from `jaxsched eval`'s results (their `values`)."""
    out = {}
    for name, entry in results.items():
        out[name] = {k: np.asarray(v["values"], np.float64) for k, v in entry.items() if "values" in v}
        if not out[name]:
            raise ValueError(f"{name}: no per-episode values in its eval.json; re-run jaxsched eval")
    return out


def collect_rows(cfg: DASConfig, results: dict, runs=()) -> dict:
    """Every row of the table in display order: heuristics, planners, learned schedulers (None: not
    evaluated). `results`: the config's evaluation (`experiments.paper.evaluated_configs`); `runs`: more
    run directories of `cfg`'s recipe under other training seeds (module docstring)."""
    values = evaluated_values(results)
    rows = {n: r for n, r in values.items() if n not in LEARNED_ORDER}
    rows.update(stored_rows(cfg, PLANNERS))
    if not runs:
        return rows | {v: values.get(v) for v in LEARNED_ORDER}
    learned = stacked_learned_rows(cfg, [cfg.run_dir, *map(Path, runs)])
    # As many repeats as DAS (Table 3's subject) has training seeds, else as the most-trained variant has.
    seeds = {n: r["avg_jct_min"].shape[0] // cfg.num_seeds for n, r in learned.items() if r is not None}
    repeats = seeds.get("das", max(seeds.values(), default=1))
    for name, r in rows.items():  # evaluated once on the keys that every training seed saw
        if r is not None:
            rows[name] = {k: np.tile(v, (repeats, 1)) for k, v in r.items()}
    rows.update(learned)
    return rows
