"""Held-out evaluation of SCED² learners against the paper's six baselines (§IV-A).

    results = evaluate_sced2(cfg)                        # the baselines alone
    results = evaluate_sced2(cfg, "runs/sced2_68")       # every trained learner under that run, and them
    results = evaluate_sced2(cfg, "runs/sced2_68/mlp")   # one learner

Every policy plays every test episode once (`eval.episodes` of them; the env and the policies are
deterministic, so one run is the episode's result): each seed's greedy Q-policy (the last checkpoint), and
each baseline of `eval.baselines` over the agent's J-window (`sif`) and over the whole waiting queue
(`sif@queue`: the env with a window as long as an episode), as `eval.baseline_windows` asks. An agent's
mean ± std is over seeds × episodes, a baseline's over episodes. Each learner's metric also carries a paired
two-sided Wilcoxon signed-rank test over the episodes (the agent's per-episode mean over seeds) against the
best baseline of the headline window by average effectiveness (`vs_best`).

A learner's results and the baselines' go to `<run dir>/<network>/eval.json`; without `checkpoint`, the
baselines alone to `<run dir>/eval.json`.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.experiments.evaluate import episodes_program, fixed_keys, run_policies
from jaxsched.experiments.learner import restore_learner, run_dir_of
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.experiments.stats import best_of, run_stats, wilcoxon_signed_rank
from jaxsched.experiments.system import Metric
from jaxsched.experiments.train import EVAL_FILE, trained_learners
from jaxsched.policies.gpu_locality import make_heuristic
from jaxsched.systems.sced2.config import SCED2Config, build_sced2, window_env
from jaxsched.systems.sced2.train import LEARNER, dqn_for

SCED2_METRICS = (
    Metric("avg_effectiveness", "avg E", ".3f", lower_is_better=False),
    Metric("avg_jct", "avg JCT (s)", ",.0f"),
    Metric("makespan", "makespan (s)", ",.0f"),
    Metric("avg_wait", "avg wait (s)", ",.0f"),
    Metric("avg_actual", "avg run (s)", ",.0f"),
    Metric("fragmentation", "frag", ".3f"),
    Metric("utilization", "GPU util", ".3f", lower_is_better=False),
)
PAIRED_METRICS = ("avg_effectiveness", "avg_jct", "makespan")
LEARNER_LABELS = {"shared": "sced2", "mlp": "sced2_mlp"}


def baseline_label(name: str, window: str) -> str:
    return name if window == "window" else f"{name}@queue"


def run_heuristics(env, params, names, episodes: int) -> dict[str, dict[str, np.ndarray]]:
    """The heuristics `names` on test episodes `0 .. episodes-1`, one program (`run_policies`: a
    `lax.switch` branch per heuristic; the env is deterministic, so every episode's key is `key(0)`).
    Returns `{name: {metric: [episodes]}}`."""
    policies = {n: make_heuristic(env, n) for n in names}
    return run_policies(env, params, policies, np.arange(episodes), fixed_keys(episodes))


def run_agent(cfg: SCED2Config, network: str, env, params, q_params, episodes: int) -> dict[str, np.ndarray]:
    """Each seed's greedy policy (`q_params` with a leading seed axis) on test episodes `0 .. episodes-1`:
    `{metric: [seeds, episodes]}`."""
    policy = dqn_for(cfg, network, env, params).policy()
    fn = episodes_program(("agent", cfg.dqn, cfg.agent, network), env, policy)
    out = fn(q_params, params, jnp.arange(episodes), fixed_keys(episodes))
    return {k: np.asarray(v) for k, v in jax.device_get(out).items()}


def load_q_params(cfg: SCED2Config, network: str, env, train_params):
    """`(q_params [seeds], update)` of learner `network`'s latest checkpoint."""
    runner, step = restore_learner(LEARNER, cfg, network, env, train_params)
    return runner.params, step


def paired(agent: dict, baseline: dict, name: str) -> dict:
    """Per paired metric: the Wilcoxon test of the agent's per-episode means against `baseline`'s, and the
    ratio of the means in the paper's direction (> 1: the agent is better)."""
    out = {}
    for key in PAIRED_METRICS:
        a, b = agent[key], baseline[key]
        ratio = a["mean"] / b["mean"] if key == "avg_effectiveness" else b["mean"] / max(a["mean"], 1e-9)
        out[key] = {
            "baseline": name,
            "ratio": ratio,
            **wilcoxon_signed_rank(a["per_episode"], b["per_episode"]),
        }
    return out


def evaluate_sced2(cfg: SCED2Config, checkpoint=None, episodes: int | None = None, json_path=None) -> dict:
    """Evaluate the baselines and, with `checkpoint` (a run directory holding learner folders, or one
    learner's folder), the trained learners there (module docstring). Returns `{policy: {metric: {mean,
    std, per_seed, per_episode[, vs_best]}}}`."""
    env, train_params, test_params = build_sced2(cfg)
    n_test = int(test_params.starts.shape[0])
    episodes = min(n_test, cfg.eval.episodes or n_test) if episodes is None else int(episodes)
    if not 1 <= episodes <= n_test:
        raise ValueError(f"episodes must be in 1..{n_test} (the test episodes), got {episodes}")
    results: dict[str, dict] = {}
    for window in cfg.eval.baseline_windows:
        # The params do not depend on the window: the same test episodes, seen through another window.
        size = cfg.env.window if window == "window" else cfg.workload.jobs_per_episode
        base_env = window_env(cfg, size)
        for name, metrics in run_heuristics(base_env, test_params, cfg.eval.baselines, episodes).items():
            results[baseline_label(name, window)] = {k: run_stats(v) for k, v in metrics.items()}
    headline = [baseline_label(b, cfg.eval.headline) for b in cfg.eval.baselines]
    best = best_of(results, headline, "avg_effectiveness", lower_is_better=False) if headline else None
    networks = []
    if checkpoint is not None:
        networks, path = trained_learners(
            checkpoint, cfg.agent.networks, LEARNER_LABELS, "network", "agent.networks"
        )
        cfg = cfg.replace(out_dir=str(path.parent), name=path.name)
    trained = {}
    for network in networks:
        q_params, step = load_q_params(cfg, network, env, train_params)
        label = LEARNER_LABELS[network]
        per = run_agent(cfg, network, env, test_params, q_params, episodes)
        res = {k: run_stats(v) for k, v in per.items()}
        if best is not None:
            for key, test in paired(res, results[best], best).items():
                res[key]["vs_best"] = test
        trained[network] = (label, res, step)
    _print(cfg, results, trained, episodes, best)
    if json_path == "-":
        print(json.dumps({label: res for label, res, _ in trained.values()} | results, indent=2))
    else:
        for network, (label, res, _) in trained.items():
            path = Path(json_path) if json_path else run_dir_of(cfg, network) / EVAL_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(str(path), {label: res} | results)
            print(f"results: {path}")
        if not trained:  # the baselines alone
            path = Path(json_path) if json_path else cfg.run_dir / EVAL_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(str(path), results)
            print(f"results: {path}")
    return {label: res for label, res, _ in trained.values()} | results


def _print(cfg: SCED2Config, results: dict, trained: dict, episodes: int, best: str | None) -> None:
    rows = {
        label: {m.key: (r[m.key]["mean"], r[m.key]["std"]) for m in SCED2_METRICS}
        for label, r, _ in trained.values()
    }
    rows |= {
        n: {m.key: (r[m.key]["mean"], r[m.key]["std"]) for m in SCED2_METRICS} for n, r in results.items()
    }
    e = cfg.env
    steps = ", ".join(f"{label} update {step}" for label, _, step in trained.values()) or "baselines only"
    print_metric_table(
        rows,
        SCED2_METRICS,
        title=(
            f"{cfg.name} ({steps}): {e.n_servers} × {e.gpus_per_server} GPUs, {e.window}-job window, "
            f"{episodes} held-out episodes × {cfg.workload.jobs_per_episode} jobs; "
            "name@queue: over the whole queue"
        ),
    )
    for label, res, _ in trained.values() if best is not None else ():
        for key in PAIRED_METRICS:
            t = res[key]["vs_best"]
            print(
                f"{label} vs {best} ({key}): ×{t['ratio']:.2f} (> 1: {label} better), "
                f"Wilcoxon p = {t['p']:.3g} over {t['n']} episodes"
            )
