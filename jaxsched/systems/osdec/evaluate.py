"""Held-out evaluation of the OSDEC learners against the baselines (FIFO, SJF, Tetris, random;
`policies.deferrable`).

    results = evaluate_osdec(cfg)                          # the baselines alone
    results = evaluate_osdec(cfg, "runs/osdec_table1")     # every trained learner under that run, and them
    results = evaluate_osdec(cfg, "runs/osdec_table1/osdec")   # one learner

Every policy plays the first `eval.episodes` test episodes (`env.episode`: the bank cut to one episode, so
every policy sees the same jobs and capacity). A learner plays greedily (`eval.greedy`: the Gaussian's
mean, the paper's "without exploration noise") from each seed's last checkpoint; the baselines play each
episode once. A result is `{metric: {mean, std, per_seed, per_episode}}` (`experiments.stats.run_stats`)
over the env's episode metrics (`total_reward`, `utilization`, `delay`, `delay_penalty`, `violation`,
`violation_share`, `expired`, `capacity_share` ...).

Paired tests (`experiments.stats.paired_tests`, Wilcoxon over the per-episode means) on `total_reward` and
`utilization`: `vs_best` for every learner against the baseline with the highest mean total reward, and for
`osdec` `vs_<learner>` against each other learner evaluated with it. `ratio` is the other's mean over this
one's (< 1: this one is better, the metrics being higher-is-better).

Output: with `--checkpoint`, each learner's results with the baselines' to `<run dir>/<learner>/eval.json`
and all of them to `<run dir>/eval.json`; without it, the baselines alone to `<run dir>/eval.json`
(`--json PATH`: that file instead; `-`: stdout).
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
from jaxsched.experiments.train import EVAL_FILE, trained_learners
from jaxsched.policies.deferrable import make_heuristic
from jaxsched.systems.osdec.config import LEARNERS, OSDECConfig, build_osdec
from jaxsched.systems.osdec.train import LEARNER, ppo_for

OSDEC_METRICS = (
    Metric("total_reward", "total reward", ",.1f", lower_is_better=False),
    Metric("utilization", "utilization", ",.1f", lower_is_better=False),
    Metric("delay_penalty", "delay penalty", ",.1f"),
)
EVAL_METRICS = (
    *OSDEC_METRICS,
    Metric("violation", "violation", ",.2f"),
    Metric("expired", "expired", ",.1f"),
    Metric("capacity_share", "busy / capacity", ".3f", lower_is_better=False),
)
PAIRED_METRICS = ("total_reward", "utilization")
LEARNER_LABELS = {n: n for n in LEARNERS}
HEADLINE = "osdec"


def run_baseline(env, params, name: str, keys) -> dict[str, np.ndarray]:
    """Heuristic `name` on test episodes `0 .. len(keys)-1`: `{metric: [1, episodes]}`."""
    out = run_policies(env, params, {name: make_heuristic(env, name)}, np.arange(keys.shape[0]), keys)[name]
    return {k: v[None] for k, v in out.items()}


def run_learner(cfg: OSDECConfig, learner: str, env, params, policy_params, keys) -> dict[str, np.ndarray]:
    """Each seed's policy (`policy_params` with a leading seed axis): `{metric: [seeds, episodes]}`."""
    greedy = cfg.eval.greedy
    policy = ppo_for(cfg, learner, env, None).policy(greedy=greedy)
    fn = episodes_program(("learner", cfg.ppo, cfg.agent, learner, greedy), env, policy)
    out = jax.device_get(fn(policy_params, params, jnp.arange(keys.shape[0]), keys))
    return {k: np.asarray(v) for k, v in out.items()}


def load_policy_params(cfg: OSDECConfig, learner: str, env, train_params):
    """`((network params, obs stats) [seeds], update)` of `learner`'s latest checkpoint."""
    runner, step = restore_learner(LEARNER, cfg, learner, env, train_params)
    return (runner.params, runner.obs_stats), step


def evaluate_osdec(cfg: OSDECConfig, checkpoint=None, episodes: int | None = None, json_path=None) -> dict:
    """The baselines and, with `checkpoint`, the trained learners there (module docstring). Returns
    `{policy: {metric: {mean, std, per_seed, per_episode[, vs_best, vs_<learner>]}}}`."""
    env, train_params, test_params = build_osdec(cfg)
    n_test = cfg.workload.test_episodes
    episodes = min(n_test, cfg.eval.episodes or n_test) if episodes is None else int(episodes)
    if not 1 <= episodes <= n_test:
        raise ValueError(f"episodes must be in 1..{n_test} (the test episodes), got {episodes}")
    keys = eval_episode_keys(cfg.eval.seed, episodes)
    learners = []
    if checkpoint is not None:
        listed = cfg.agent.learners
        learners, path = trained_learners(checkpoint, listed, LEARNERS, "learner", "agent.learners")
        cfg = cfg.replace(out_dir=str(path.parent), name=path.name)
    results = {b: {k: run_stats(v) for k, v in run_baseline(env, test_params, b, keys).items()}
               for b in cfg.eval.baselines}  # fmt: skip
    learned, steps = {}, {}
    for learner in learners:
        pp, steps[learner] = load_policy_params(cfg, learner, env, train_params)
        out = run_learner(cfg, learner, env, test_params, pp, keys)
        learned[LEARNER_LABELS[learner]] = {k: run_stats(v) for k, v in out.items()}
    compare_learners(learned, results, "total_reward", False, PAIRED_METRICS, LEARNER_LABELS[HEADLINE])
    _print(cfg, learned, results, steps, episodes)
    everything = learned | results
    if json_path == "-":
        print(json.dumps(everything, indent=2))
    else:
        targets = [Path(json_path)] if json_path else [cfg.run_dir / EVAL_FILE]
        if not json_path:
            targets += [run_dir_of(cfg, n) / EVAL_FILE for n in learners]
        for i, path in enumerate(targets):
            payload = everything if i == 0 else {learners[i - 1]: learned[learners[i - 1]]} | results
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(str(path), payload)
        print(f"results: {targets[0]}")
    return everything


def _print(cfg: OSDECConfig, learned: dict, results: dict, steps: dict, episodes: int) -> None:
    rows = {name: {m.key: (r[m.key]["mean"], r[m.key]["std"]) for m in EVAL_METRICS}
            for name, r in (learned | results).items()}  # fmt: skip
    w = cfg.workload
    trained = ", ".join(f"{n} update {s}" for n, s in steps.items()) or "baselines only"
    setting = "real time" if w.realtime else "deferrable"
    print_metric_table(rows, EVAL_METRICS, title=(
        f"{cfg.name} ({trained}): {w.preset} preset, {setting}, {episodes} held-out episodes of "
        f"{w.horizon} steps (± over seeds × episodes)"))  # fmt: skip
    print_comparisons(learned, PAIRED_METRICS, lower_is_better=False)
