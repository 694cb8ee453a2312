"""Held-out evaluation of the idle-slot DAG variants against the baselines (FIFO, SJF, critical path,
Decima's dynamic partition; `policies.dag`).

    results = evaluate_dag(cfg)                          # the baselines alone
    results = evaluate_dag(cfg, "runs/dag_synthetic")    # every trained variant under that run, and them
    results = evaluate_dag(cfg, "runs/dag_synthetic/full")   # one variant

Every policy plays the first `eval.episodes` test episodes (each to its end; `env.episode` pins the bank
to one episode, so every policy sees the same jobs at the same times). A variant's policy samples its actions,
as Decima's does, with the key of the episode (`purpose_key(eval.seed, EVAL_TAG)` folded with the episode
number: the same for every policy and seed), from each seed's last checkpoint; the baselines are
deterministic (but `random`) and play each episode once. A result is `{metric: {mean, std, per_seed,
per_episode}}` over every (seed, episode) value (`per_seed`: one mean per seed over the episodes;
`per_episode`: the mean over seeds per episode); the metrics are the env's (`avg_jct`, `makespan`,
`idle_per_selection`, `idle_per_delayed`, `unfinished`, `n_delayed`, ... in seconds) and `return`.

Paired tests (`experiments.stats.wilcoxon_signed_rank`, two-sided, over the per-episode means) on
`avg_jct` and `makespan`, stored in the variant's metric entry: `vs_best` against the baseline with the
lowest mean average JCT, and for `full` `vs_<variant>` against each other variant evaluated with it (Table
1: `vs_no_features`, `vs_no_idle`). `ratio` is the other's mean over this one's (> 1: this one is better).

Output: with `--checkpoint`, each variant's results with the baselines' to `<run dir>/<variant>/eval.json`
and, for a run directory (not one variant's folder), all of them to `<run dir>/eval.json`; without it, the
baselines alone to `<run dir>/eval.json` (`--json PATH`: that one file instead; `-`: stdout). Beside each
JSON file, `<stem>_jct.npz` holds the per-job completion times of its policies (Fig. 4's CDF): one
`int32[runs, episodes, jobs]` array per policy label, in ms, −1 for a job that did not finish (runs: the
seeds of a variant, 1 for a baseline; jobs: the bank's padded episode length).

`evaluate_on(cfg, test_params, keys, baselines, nets)` is the part that plays: given variants (network
parameters from `load_net_params`) and heuristics on any test bank of the config's env shapes — its own,
or one regenerated with another load or job count (`jaxsched table dag`). Its programs are jitted once per
policy and env (the bank an argument), so another bank of the same shapes does not compile again.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.experiments.evaluate import (
    compare_learners,
    episodes_program,
    eval_episode_keys,
    print_comparisons,
    run_policies,
)
from jaxsched.experiments.learner import restore_learner, run_dir_of
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.experiments.stats import run_stats
from jaxsched.experiments.system import Metric
from jaxsched.experiments.train import CHECKPOINT_DIR, EVAL_FILE, trained_learners
from jaxsched.policies.dag import make_heuristic
from jaxsched.systems.dag.config import VARIANTS, DAGSystemConfig, build_dag, make_env
from jaxsched.systems.dag.train import LEARNER, reinforce_for

# The system's metrics (the shared layer's tables and the training report).
DAG_METRICS = (
    Metric("avg_jct", "avg JCT (s)", ",.1f"),
    Metric("makespan", "makespan (s)", ",.1f"),
    Metric("idle_per_selection", "idle / selection (s)", ".3f"),
)
# The evaluation table's columns: those and the idle-slot statistics.
EVAL_METRICS = (
    *DAG_METRICS,
    Metric("idle_per_delayed", "idle / delayed (s)", ".2f"),
    Metric("n_delayed", "delayed", ",.1f"),
    Metric("unfinished", "unfinished", ".2f"),
)
PAIRED_METRICS = ("avg_jct", "makespan")
LEARNER_LABELS = {v: v for v in VARIANTS}  # a variant's label in the results is its name
HEADLINE = "full"  # the paper's agent, tested against the ablations
JCT_KEY = "jct"


def _jct(env) -> bool:
    """Whether `env` reports every job's JCT (`SystemDAGEnv(jct=True)`): part of a program's identity."""
    return getattr(env, "jct", False)


def run_heuristics(env, params, names, keys) -> dict[str, dict[str, np.ndarray]]:
    """The heuristics `names` on test episodes `0 .. len(keys)-1`, one program (`run_policies`: a
    `lax.switch` branch per heuristic). Returns `{name: {metric: [1, episodes, ...]}}`."""
    policies = {n: make_heuristic(env, n) for n in names}
    out = run_policies(env, params, policies, np.arange(keys.shape[0]), keys, cache_key=(_jct(env),))
    return {n: {k: v[None] for k, v in m.items()} for n, m in out.items()}


def run_agent(cfg: DAGSystemConfig, variant: str, env, params, net_params, keys) -> dict[str, np.ndarray]:
    """Each seed's policy (`net_params` with a leading seed axis) on test episodes `0 .. len(keys)-1`:
    `{metric: [seeds, episodes, ...]}`."""
    greedy = cfg.eval.greedy
    cache_key = ("agent", _jct(env), cfg.reinforce, cfg.agent.hidden, cfg.agent.levels, variant, greedy)
    fn = episodes_program(cache_key, env, reinforce_for(cfg, variant, env).policy(greedy=greedy))
    out = jax.device_get(fn(net_params, params, jnp.arange(keys.shape[0]), keys))
    return {k: np.asarray(v) for k, v in out.items()}


def load_net_params(cfg: DAGSystemConfig, variant: str, env, train_params):
    """`(network params [seeds], update)` of variant `variant`'s latest checkpoint."""
    runner, step = restore_learner(LEARNER, cfg, variant, env, train_params)
    return runner.params, step


def summarize(per: dict[str, np.ndarray]) -> tuple[dict, np.ndarray]:
    """`(results, jct)`: the stats of every scalar metric, and the per-job JCTs `i32[runs, episodes, N]`."""
    jct = np.asarray(per[JCT_KEY], np.int32)
    return {k: run_stats(v) for k, v in per.items() if k != JCT_KEY}, jct


def _write(path: Path, results: dict, jct: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(str(path), results)
    np.savez_compressed(path.with_name(f"{path.stem}_jct.npz"), **{k: jct[k] for k in results})
    print(f"results: {path}")


def eval_episodes(cfg: DAGSystemConfig, test_params, episodes: int | None = None) -> int:
    """How many test episodes an evaluation plays: `episodes`, else `eval.episodes`, else all of them."""
    n_test = int(test_params.bank.n_jobs.shape[0])
    episodes = min(n_test, cfg.eval.episodes or n_test) if episodes is None else int(episodes)
    if not 1 <= episodes <= n_test:
        raise ValueError(f"episodes must be in 1..{n_test} (the test episodes), got {episodes}")
    return episodes


def evaluate_on(cfg: DAGSystemConfig, test_params, keys, baselines=(), nets=None) -> tuple[dict, dict]:
    """The heuristics `baselines` and the trained variants `nets` (`{variant: network params with a leading
    seed axis}`, `load_net_params`) on episodes `0 .. len(keys)-1` of `test_params`: the config's test bank,
    or any bank of its env's shapes (regenerated at another load or job count, `dag_bank.pad_bank`ded to
    the same arrays: the programs are compiled once). Returns `(results, jct)`: `{label: {metric: {mean,
    std, per_seed, per_episode}}}` (the baselines, then the variants) and `{label: i32[runs, episodes, N]}`
    (module docstring)."""
    env = make_env(cfg, jct=True)
    results: dict[str, dict] = {}
    jct: dict[str, np.ndarray] = {}
    if baselines:
        for name, per in run_heuristics(env, test_params, baselines, keys).items():
            results[name], jct[name] = summarize(per)
    for variant, net_params in (nets or {}).items():
        label = LEARNER_LABELS[variant]
        results[label], jct[label] = summarize(run_agent(cfg, variant, env, test_params, net_params, keys))
    return results, jct


def evaluate_dag(cfg: DAGSystemConfig, checkpoint=None, episodes: int | None = None, json_path=None) -> dict:
    """Evaluate the baselines and, with `checkpoint` (a run directory holding variant folders, or one
    variant's folder), the trained variants there (module docstring). Returns `{policy: {metric: {mean,
    std, per_seed, per_episode[, vs_best, vs_<variant>]}}}`."""
    env, train_params, test_params = build_dag(cfg)
    episodes = eval_episodes(cfg, test_params, episodes)
    keys = eval_episode_keys(cfg.eval.seed, episodes)
    variants, one_variant = [], checkpoint is not None and (Path(checkpoint) / CHECKPOINT_DIR).is_dir()
    if checkpoint is not None:
        variants, path = trained_learners(
            checkpoint, cfg.agent.variants, VARIANTS, "variant", "agent.variants"
        )
        cfg = cfg.replace(out_dir=str(path.parent), name=path.name)
    loaded = {v: load_net_params(cfg, v, env, train_params) for v in variants}
    nets = {v: net_params for v, (net_params, _) in loaded.items()}
    everything, jct = evaluate_on(cfg, test_params, keys, cfg.eval.baselines, nets)
    results = {name: everything[name] for name in cfg.eval.baselines}
    trained = {v: (LEARNER_LABELS[v], everything[LEARNER_LABELS[v]], step) for v, (_, step) in loaded.items()}
    learned = {label: res for label, res, _ in trained.values()}
    compare_learners(learned, results, "avg_jct", True, PAIRED_METRICS, LEARNER_LABELS[HEADLINE])
    _print(cfg, learned, results, trained, episodes)
    everything = learned | results
    if json_path == "-":
        print(json.dumps(everything, indent=2))
    elif json_path:
        _write(Path(json_path), everything, jct)
    else:
        for variant, (label, res, _) in trained.items():
            _write(run_dir_of(cfg, variant) / EVAL_FILE, {label: res} | results, jct)
        if not one_variant:  # one variant's evaluation leaves the run's combined file as it was
            _write(cfg.run_dir / EVAL_FILE, everything, jct)
    return everything


def _print(cfg: DAGSystemConfig, learned: dict, results: dict, trained: dict, episodes: int) -> None:
    rows = {
        name: {m.key: (r[m.key]["mean"], r[m.key]["std"]) for m in EVAL_METRICS}
        for name, r in (learned | results).items()
    }
    e, w = cfg.env, cfg.workload
    steps = ", ".join(f"{label} update {step}" for label, _, step in trained.values()) or "baselines only"
    print_metric_table(
        rows,
        EVAL_METRICS,
        title=(
            f"{cfg.name} ({steps}): {e.n_executors} executors, {w.source} workload, {episodes} held-out "
            f"episodes × {w.jobs_per_episode} jobs (± over seeds × episodes)"
        ),
    )
    print_comparisons(learned, PAIRED_METRICS, lower_is_better=True)
