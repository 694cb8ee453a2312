"""The idle-slot DAG paper's calibration (`jaxsched calibrate configs/dag/paper_*.yaml`;
`experiments.calibration`).

The paper prints no heuristic's number: Table 1 gives its agents' average JCT (the full agent, without the
features, without idle slots) and the text of Fig. 5 says the RL schedulers are "around 30 percent" below
shortest-job-first. The baseline number it implies, SJF's average JCT ≈ Table 1's agents ÷ 0.7, is a
`derived` row of `paper_numbers.csv` (its note says how). FIFO, the critical path and the dynamic
partition are evaluated and listed, with no published number to meet.

A seed is another held-out bank (`workload.test_seed` + i, i < `num_seeds`; the heuristics act on one fixed
key per episode); the calibration banks are `test_seed` + i + `CALIBRATION_SEED_OFFSET`
(`experiments.calibration`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxsched.experiments.calibration import (
    Calibration,
    held_out_bank_seeds,
    held_out_baselines,
    read_paper_numbers,
    shifted_held_out,
    with_workload,
)
from jaxsched.experiments.evaluate import first_episodes
from jaxsched.systems.dag.config import DAGSystemConfig, build_params, make_env
from jaxsched.systems.dag.evaluation import EVALUATION

PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.csv")
METRICS = ("avg_jct", "makespan")


def _bank(cfg: DAGSystemConfig):
    env = make_env(cfg)
    params = build_params(cfg, env, "test")
    return env, params, len(first_episodes(cfg, int(params.bank.n_jobs.shape[0]), None))


def baselines(cfg: DAGSystemConfig) -> dict:
    """`{name: {metric: [S, E]}}` of `eval.baselines` over `num_seeds` held-out banks."""
    return held_out_baselines(EVALUATION, cfg, _bank, METRICS)


def fingerprint(cfg: DAGSystemConfig) -> np.ndarray:
    """`[E, N, 3]` of the first held-out bank: each job's arrival (ms), total work and critical path (s)."""
    _, params, episodes = _bank(with_workload(cfg, test_seed=held_out_bank_seeds(cfg)[0]))
    b = params.bank
    tmpl = np.asarray(b.template)[:episodes]
    arrival = np.asarray(b.arrival, np.float64)[:episodes]
    safe = np.maximum(tmpl, 0)
    work = np.where(tmpl >= 0, np.asarray(b.work, np.float64)[safe], -1.0)
    crit = np.where(tmpl >= 0, np.asarray(b.crit, np.float64)[safe], -1.0)
    return np.stack([arrival, work, crit], axis=-1)


CALIBRATION = Calibration(
    numbers=read_paper_numbers(PAPER_NUMBERS),
    held_out=shifted_held_out,
    baselines=baselines,
    fingerprint=fingerprint,
)
