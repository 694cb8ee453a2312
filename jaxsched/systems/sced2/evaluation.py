"""SCED²'s held-out evaluation (§IV-A), declared for the shared path (`experiments.evaluate.evaluate`).

    jaxsched eval configs/sced2/quick.yaml                                  # the baselines alone
    jaxsched eval configs/sced2/quick.yaml --checkpoint runs/sced2_quick    # every trained learner too

Every policy plays every test episode once (`eval.episodes` of them; the env and the policies are
deterministic, so one run is the episode's result): each seed's greedy Q-policy (the last checkpoint),
and each baseline of `eval.baselines` over the agent's J-window (`sif`) and over the whole waiting queue
(`sif@queue`: the env with a window as long as an episode), as `eval.baseline_windows` asks. Paired tests
on E, JCT and makespan: `vs_best` against the best baseline of the headline window by average
effectiveness.
"""

from __future__ import annotations

import numpy as np

from jaxsched.experiments.evaluate import Evaluation, fixed_keys, run_policies
from jaxsched.experiments.system import Metric
from jaxsched.policies.gpu_locality import make_heuristic
from jaxsched.systems.sced2.config import SCED2Config, window_env
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
LEARNER_LABELS = {"shared": "sced2", "mlp": "sced2_mlp"}


def baseline_label(name: str, window: str) -> str:
    return name if window == "window" else f"{name}@queue"


def baselines(cfg: SCED2Config, env=None) -> list:
    """One group per window of `eval.baseline_windows`: the params do not depend on the window, so the
    same test episodes are seen through another window."""
    groups = []
    for window in cfg.eval.baseline_windows:
        size = cfg.env.window if window == "window" else cfg.workload.jobs_per_episode
        base_env = window_env(cfg, size)
        policies = {baseline_label(n, window): make_heuristic(base_env, n) for n in cfg.eval.baselines}
        groups.append((base_env, policies, ()))
    return groups


def _title(cfg: SCED2Config, trained: str, episodes: int) -> str:
    e = cfg.env
    return (f"{cfg.name} ({trained}): {e.n_servers} × {e.gpus_per_server} GPUs, {e.window}-job window, "
            f"{episodes} held-out episodes × {cfg.workload.jobs_per_episode} jobs; name@queue: over the "
            "whole queue")  # fmt: skip


EVALUATION = Evaluation(
    learner=LEARNER,
    labels=LEARNER_LABELS,
    listed_in="agent.networks",
    n_test=lambda cfg, test_params: int(test_params.starts.shape[0]),
    baselines=baselines,
    policy=lambda cfg, net, env: (("agent", cfg.dqn, cfg.agent, net), dqn_for(cfg, net, env, None).policy()),
    metrics=SCED2_METRICS,
    title=_title,
    paired=("avg_effectiveness", "avg_jct", "makespan"),
    best_metric="avg_effectiveness",
    keys=lambda cfg, n: fixed_keys(n),  # the env and the policies are deterministic
    best_among=lambda cfg, results: [baseline_label(b, cfg.eval.headline) for b in cfg.eval.baselines],
)


def run_heuristics(env, params, names, episodes: int) -> dict[str, dict[str, np.ndarray]]:
    """The heuristics `names` in `env`'s window on test episodes `0 .. episodes-1`, one program:
    `{name: {metric: [episodes]}}` (the calibration's and Fig. 8's baselines)."""
    policies = {n: make_heuristic(env, n) for n in names}
    return run_policies(env, params, policies, np.arange(episodes), fixed_keys(episodes))
