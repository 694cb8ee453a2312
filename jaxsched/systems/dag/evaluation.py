"""The idle-slot DAG system's held-out evaluation, declared for the shared path (`experiments.evaluate.
evaluate`; `Replay` plays it on other banks of the same shapes for `jaxsched table dag`).

    jaxsched eval configs/dag/synthetic.yaml                                    # the baselines alone
    jaxsched eval configs/dag/synthetic.yaml --checkpoint runs/dag_synthetic    # every trained variant too

Every policy plays the first `eval.episodes` test episodes to their end (`env.episode` pins the bank to
one episode). A variant samples its actions, as Decima's does (or, with `eval.greedy`, takes the most
likely), with the key of the episode, from each seed's last checkpoint; the baselines are deterministic
(but `random`). Paired tests on `avg_jct` and `makespan`: `vs_best` against the baseline with the lowest
mean average JCT, and for `full` `vs_<variant>` (Table 1: `vs_no_features`, `vs_no_idle`). Beside each
JSON file, `<stem>_jct.npz` holds every job's completion time (Fig. 4's CDF): `int32[runs, episodes, jobs]`
per policy label, in ms, −1 for a job that did not finish.
"""

from __future__ import annotations

from jaxsched.experiments.evaluate import Evaluation
from jaxsched.experiments.system import Metric
from jaxsched.policies.dag import make_heuristic
from jaxsched.systems.dag.config import VARIANTS, DAGSystemConfig, make_env
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
LEARNER_LABELS = {v: v for v in VARIANTS}  # a variant's label in the results is its name


def _jct(env) -> bool:
    """Whether `env` reports every job's JCT (`SystemDAGEnv(jct=True)`): part of a program's identity."""
    return getattr(env, "jct", False)


def _baselines(cfg: DAGSystemConfig, env) -> list:
    return [(env, {n: make_heuristic(env, n) for n in cfg.eval.baselines}, (_jct(env),))]


def _policy(cfg: DAGSystemConfig, variant: str, env):
    greedy, a = cfg.eval.greedy, cfg.agent
    cache_key = ("agent", _jct(env), cfg.reinforce, a.hidden, a.levels, variant, greedy)
    return cache_key, reinforce_for(cfg, variant, env).policy(greedy=greedy)


def _title(cfg: DAGSystemConfig, trained: str, episodes: int) -> str:
    e, w = cfg.env, cfg.workload
    return (f"{cfg.name} ({trained}): {e.n_executors} executors, {w.source} workload, {episodes} held-out "
            f"episodes × {w.jobs_per_episode} jobs (± over seeds × episodes)")  # fmt: skip


EVALUATION = Evaluation(
    learner=LEARNER,
    labels=LEARNER_LABELS,
    listed_in="agent.variants",
    n_test=lambda cfg, test_params: int(test_params.bank.n_jobs.shape[0]),
    baselines=_baselines,
    policy=_policy,
    metrics=EVAL_METRICS,
    title=_title,
    paired=("avg_jct", "makespan"),
    best_metric="avg_jct",
    headline="full",
    env=lambda cfg, env: make_env(cfg, jct=True),
    arrays=("jct",),
)
