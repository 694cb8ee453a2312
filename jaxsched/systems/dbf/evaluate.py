"""Held-out evaluation of a trained run against heuristic baselines.

    results = eval_run(cfg, "runs/dbf_m10_9_1")   # prints a table, writes runs/dbf_m10_9_1/eval.json

Every policy plays the same `eval.episodes` held-out workload windows, each once (`spread_windows`: all
of the test bank's windows when `eval.episodes` equals their number, as in the shipped configs): each
seed's learned policy (greedy unless `eval.greedy: false`; the last checkpoint's,
or with `eval.select: validation` the seed's best on the validation episodes) in the trained env
(`env.window` slots, `env.tail` of them from the tail), and the heuristics (`eval.baselines`: a score name,
`_easy` for EASY back-filling) in a head-only window of `eval.baseline_window` slots. All seeds run in
one compiled program, all heuristics in another. The agent's mean ± std is over seeds × episodes, a
heuristic's over episodes; `per_seed` lists the agent's per-seed means (a heuristic's single mean),
`per_episode` each episode's mean over seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxsched.agents.dbf import dbf_env
from jaxsched.experiments.config import EVAL_TAG, purpose_key
from jaxsched.experiments.evaluate import run_policies, spread_windows
from jaxsched.experiments.learner import learner_template
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.experiments.select import restore_selected
from jaxsched.experiments.sharding import seed_sharding, shard_seeds
from jaxsched.experiments.train import CHECKPOINT_DIR, EVAL_FILE, checkpoint_manager, restore_runner
from jaxsched.policies.hpc import make_priority_policy
from jaxsched.systems.dbf.config import DBFConfig, build_run
from jaxsched.systems.dbf.metrics import HPC_METRICS
from jaxsched.systems.dbf.train import AGENT, LEARNER, SELECT_METRIC, agent_program


def load_policy_params(cfg: DBFConfig, checkpoint_dir, env, env_params):
    """`(params, obs_stats)` of every seed (leading axis `num_seeds`) of a run directory (or of its
    `checkpoints/` folder), and which update they are: the latest checkpoint's (an int), or, with
    `eval.select: validation`, each seed's best on the validation episodes (a list, one per seed)."""
    path = Path(checkpoint_dir)
    run_dir = path.parent if path.name == CHECKPOINT_DIR else path
    if not (run_dir / CHECKPOINT_DIR).is_dir():
        raise FileNotFoundError(f"no checkpoints in {run_dir} (expected {run_dir / CHECKPOINT_DIR})")
    template = learner_template(LEARNER, cfg, AGENT, env, env_params)
    if cfg.eval.select == "validation":
        best = restore_selected(run_dir, (template.params, template.obs_stats), SELECT_METRIC)
        return best["policy"], best["update"].tolist()
    mngr = checkpoint_manager(run_dir, read_only=True)
    step = mngr.latest_step()
    if step is None:
        raise FileNotFoundError(f"no finished checkpoint in {run_dir / CHECKPOINT_DIR}")
    runner = restore_runner(mngr, step, template)
    mngr.close()
    return (runner.params, runner.obs_stats), step


def _stats(values: np.ndarray) -> dict:
    """`values` `[seeds, episodes]` → mean/std over all, per-seed means, per-episode means over seeds
    (every policy sees the same episodes: `per_episode` pairs them for the report's tests)."""
    v = np.asarray(values, np.float64)
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "per_seed": [float(x) for x in v.mean(axis=1)],
        "per_episode": [float(x) for x in v.mean(axis=0)],
    }


def eval_run(cfg: DBFConfig, checkpoint_dir=None, episodes: int | None = None, json_path=None) -> dict:
    """Evaluate a run's checkpoint (unless `checkpoint_dir` is None: the baselines alone) and the
    baselines on the held-out test workload (module docstring). Returns `{policy: {metric: {"mean",
    "std", "per_seed"}}}`, also written to `json_path` (default `<run dir>/eval.json`)."""
    episodes = cfg.eval.episodes if episodes is None else int(episodes)
    env, train_params, test_params, _ = build_run(cfg)
    windows = spread_windows(int(test_params.starts.shape[0]), episodes)
    keys = jax.random.split(purpose_key(cfg.eval.seed, EVAL_TAG), episodes)
    results: dict[str, dict] = {}
    step = None
    if checkpoint_dir is not None:
        policy_params, step = load_policy_params(cfg, checkpoint_dir, env, train_params)
        policy_params = shard_seeds(policy_params, seed_sharding(cfg.num_seeds))  # seeds over the devices
        per_seed = agent_program(cfg, env)(policy_params, test_params, windows, keys)  # [seeds, episodes]
        results[AGENT] = {k: _stats(v) for k, v in jax.device_get(per_seed).items()}
    elif not cfg.eval.baselines:
        raise ValueError("nothing to evaluate: no --checkpoint and eval.baselines is empty")

    if cfg.eval.baselines:
        e = cfg.env
        base_env = dbf_env(cfg.eval.baseline_window, 0, e.n_cores, e.queue_capacity, e.reward)
        policies = {
            b: make_priority_policy(base_env, b.removesuffix("_easy"), b.endswith("_easy"))
            for b in cfg.eval.baselines
        }
        for name, metrics in run_policies(base_env, test_params, policies, windows, keys).items():
            results[name] = {k: _stats(np.asarray(v)[None]) for k, v in metrics.items()}

    e = cfg.env
    if step is None:
        trained = "baselines"
    elif isinstance(step, list):
        trained = f"updates {step} chosen on {cfg.eval.validation_episodes} validation episodes"
    else:
        trained = f"update {step}"
    title = (
        f"{cfg.name} ({trained}): {e.window}-slot window ({e.window - e.tail} head + {e.tail} tail), "
        f"{cfg.num_seeds} seeds × {episodes} held-out episodes × {e.episode_jobs} jobs; "
        f"heuristics in a {cfg.eval.baseline_window}-slot head window"
    )
    if json_path == "-":  # JSON alone on stdout
        print(json.dumps(results, indent=2))
    else:
        rows = {n: {k: (r[k]["mean"], r[k]["std"]) for k, *_ in HPC_METRICS} for n, r in results.items()}
        print_metric_table(rows, HPC_METRICS, title=title)
        if checkpoint_dir is None:
            run_dir = cfg.run_dir
        else:
            path = Path(checkpoint_dir)
            run_dir = path.parent if path.name == CHECKPOINT_DIR else path
        json_path = Path(json_path) if json_path else run_dir / EVAL_FILE
        json_path.parent.mkdir(parents=True, exist_ok=True)
        write_json(str(json_path), results)
        print(f"results: {json_path}")
    return results
