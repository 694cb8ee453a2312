"""Deep Back-Filling's held-out evaluation, declared for the shared path (`experiments.evaluate.evaluate`).

    jaxsched eval configs/dbf/quick.yaml --checkpoint runs/dbf_quick   # → runs/dbf_quick/eval.json

Every policy plays the same `eval.episodes` held-out workload windows, each once (`spread_windows`: all
of the test bank's windows when `eval.episodes` equals their number, as in the shipped configs): each
seed's learned policy (greedy unless `eval.greedy: false`; the last checkpoint's, or with `eval.select:
validation` the seed's best on the validation episodes) in the trained env (`env.window` slots, `env.tail`
of them from the tail), and the heuristics (`eval.baselines`: a score name, `_easy` for EASY
back-filling) in a head-only window of `eval.baseline_window` slots. No paired tests here: the report
(`jaxsched report`) pairs the runs it sets side by side.
"""

from __future__ import annotations

import jax

from jaxsched.core.keys import EVAL_TAG, purpose_key
from jaxsched.envs.hpc.setup import window_env
from jaxsched.experiments.evaluate import Evaluation, spread_windows
from jaxsched.experiments.learner import restore_evaluated
from jaxsched.policies.hpc import make_priority_policy
from jaxsched.systems.dbf.config import DBFConfig
from jaxsched.systems.dbf.metrics import HPC_METRICS
from jaxsched.systems.dbf.train import AGENT, LEARNER, SELECT_METRIC, agent_policy


def restore(cfg: DBFConfig, name: str, env, train_params):
    """`((params, obs_stats) [S, ...], selection)`: the latest checkpoint's, or with `eval.select:
    validation` each seed's best on the validation episodes (`experiments.learner.restore_evaluated`)."""
    return restore_evaluated(
        LEARNER, cfg, name, env, train_params, lambda r: (r.params, r.obs_stats), SELECT_METRIC
    )


def baselines(cfg: DBFConfig, env) -> list:
    """The heuristics in a head-only window of `eval.baseline_window` slots (one program)."""
    e = cfg.env
    base_env = window_env(cfg.eval.baseline_window, 0, e.n_cores, e.queue_capacity, e.reward)
    policies = {b: make_priority_policy(base_env, b.removesuffix("_easy"), b.endswith("_easy"))
                for b in cfg.eval.baselines}  # fmt: skip
    return [(base_env, policies, ())]


def _title(cfg: DBFConfig, trained: str, episodes: int) -> str:
    e = cfg.env
    return (f"{cfg.name} ({trained}): {e.window}-slot window ({e.window - e.tail} head + {e.tail} tail), "
            f"{cfg.num_seeds} seeds × {episodes} held-out episodes × {e.episode_jobs} jobs; heuristics in a "
            f"{cfg.eval.baseline_window}-slot head window")  # fmt: skip


EVALUATION = Evaluation(
    learner=LEARNER,
    labels={AGENT: AGENT},
    listed_in="ppo",
    n_test=lambda cfg, test_params: int(test_params.starts.shape[0]),
    baselines=baselines,
    policy=lambda cfg, name, env: agent_policy(cfg, env),
    metrics=HPC_METRICS,
    title=_title,
    episodes=lambda cfg, n_test, episodes: spread_windows(
        n_test, cfg.eval.episodes if episodes is None else int(episodes)
    ),  # fmt: skip
    keys=lambda cfg, n: jax.random.split(purpose_key(cfg.eval.seed, EVAL_TAG), n),
    restore=restore,
)
