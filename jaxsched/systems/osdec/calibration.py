"""OSDEC's calibration (`jaxsched calibrate configs/osdec/paper_*.yaml`; `experiments.calibration`).

The paper's absolute scale (utilisation ≈ 3,600 of "core × duration" per episode) comes from the Azure
packing trace's episodes, which we do not have: the presets compare each heuristic row as its ratio to
FIFO's (`calibration.relative_to: fifo`), within ±3 %. Tables 1 and 2 (deferrable) are the setting
`table1` and `table1_t2`, Table 2's real-time column `realtime`, Table 4's cases `core1` ... `duration3`.

A seed is another held-out bank (`workload.test_seed` + i, i < `num_seeds`); the calibration banks are
`test_seed` + `experiments.calibration.CALIBRATION_SEED_OFFSET` + i.
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
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec
from jaxsched.systems.osdec.evaluation import EVALUATION

PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.csv")
METRICS = ("utilization", "delay_penalty", "total_reward")


def held_out(cfg, purpose: str):
    """The test episodes, or another draw of the same generator (`experiments.calibration`)."""
    if purpose == "calibration" and cfg.workload.trace is not None:
        raise ValueError("calibration episodes need a generated workload (workload.trace: null)")
    return shifted_held_out(cfg, purpose)


def _bank(cfg: OSDECConfig):
    env, _, params = build_osdec(cfg)
    return env, params, min(cfg.workload.test_episodes, cfg.eval.episodes or cfg.workload.test_episodes)


def baselines(cfg: OSDECConfig) -> dict:
    """`{name: {metric: [S, E]}}` of `eval.baselines` over `num_seeds` held-out banks. The delay penalty
    is signed as the paper prints its "time delay" column (negative)."""
    out = held_out_baselines(EVALUATION, cfg, _bank, METRICS)
    for r in out.values():
        r["delay_penalty"] = -np.abs(r["delay_penalty"])
    return out


def fingerprint(cfg: OSDECConfig) -> np.ndarray:
    """`[E, N, 5]` of the first held-out bank: each job's cores, duration, earliest, latest, submit."""
    _, params, episodes = _bank(with_workload(cfg, test_seed=held_out_bank_seeds(cfg)[0]))
    b = params.bank
    cols = [
        np.asarray(getattr(b, f), np.float64)[:episodes]
        for f in ("cores", "duration", "earliest", "latest", "submit")
    ]
    return np.stack(cols, axis=-1)


CALIBRATION = Calibration(
    numbers=read_paper_numbers(PAPER_NUMBERS),
    held_out=held_out,
    baselines=baselines,
    fingerprint=fingerprint,
)
