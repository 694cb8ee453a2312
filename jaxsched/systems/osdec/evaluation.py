"""OSDEC's held-out evaluation, declared for the shared path (`experiments.evaluate.evaluate`).

    jaxsched eval configs/osdec/table1.yaml                                  # the baselines alone
    jaxsched eval configs/osdec/table1.yaml --checkpoint runs/osdec_table1   # every trained learner too

Every policy plays the first `eval.episodes` test episodes (`env.episode`: the bank cut to one episode, so
every policy sees the same jobs and capacity) with the same keys. A learner plays greedily (`eval.greedy`:
the Gaussian's mean, the paper's "without exploration noise") from each seed's last checkpoint. Paired
tests on `total_reward` and `utilization`: `vs_best` against the baseline with the highest mean total
reward, and for `osdec` `vs_<learner>` against each other learner.
"""

from __future__ import annotations

from jaxsched.experiments.evaluate import Evaluation
from jaxsched.experiments.system import Metric
from jaxsched.policies.deferrable import make_heuristic
from jaxsched.systems.osdec.config import LEARNERS, OSDECConfig
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
LEARNER_LABELS = {n: n for n in LEARNERS}
HEADLINE = "osdec"


def _policy(cfg: OSDECConfig, learner: str, env):
    greedy = cfg.eval.greedy
    policy = ppo_for(cfg, learner, env, None).policy(greedy=greedy)
    return ("learner", cfg.ppo, cfg.agent, learner, greedy), policy


def _title(cfg: OSDECConfig, trained: str, episodes: int) -> str:
    w = cfg.workload
    setting = "real time" if w.realtime else "deferrable"
    return (f"{cfg.name} ({trained}): {w.preset} preset, {setting}, {episodes} held-out episodes of "
            f"{w.horizon} steps (± over seeds × episodes)")  # fmt: skip


EVALUATION = Evaluation(
    learner=LEARNER,
    labels=LEARNER_LABELS,
    listed_in="agent.learners",
    n_test=lambda cfg, test_params: cfg.workload.test_episodes,
    baselines=lambda cfg, env: [(env, {b: make_heuristic(env, b) for b in cfg.eval.baselines}, ())],
    policy=_policy,
    policy_params=lambda runner: (runner.params, runner.obs_stats),
    metrics=EVAL_METRICS,
    title=_title,
    paired=("total_reward", "utilization"),
    best_metric="total_reward",
    headline=HEADLINE,
)
