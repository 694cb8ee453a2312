"""DAS's calibration (`jaxsched calibrate configs/das/paper_*.yaml`): Table 1's heuristic rows against
the GPU-cloud simulator's (`experiments.calibration`).

The calibration episodes are the test split of another draw of the same generated workload
(`workload.bank_seed` + `experiments.calibration.CALIBRATION_SEED_OFFSET`): the same law, none of
the test episodes' jobs. The baselines are `eval.policies` on the held-out episodes × `num_seeds`
evaluation seeds (`[S, E]`).
MOSA and MALO are planners (minutes to hours a cluster): `jaxsched table das --planners` evaluates them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxsched.experiments.calibration import Calibration, read_paper_numbers, shifted_held_out
from jaxsched.systems.das.config import DASConfig
from jaxsched.systems.das.rows import heuristic_rows, label

PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.csv")


def held_out(cfg: DASConfig, purpose: str) -> DASConfig:
    """`cfg` itself for the test episodes; for the calibration episodes, another bank seed."""
    if purpose == "calibration" and cfg.workload.source != "pai_like":
        raise ValueError("calibration episodes need a generated workload (workload.source: pai_like)")
    return shifted_held_out(cfg, purpose, field="bank_seed")


def baselines(cfg: DASConfig) -> dict:
    """`{policy: {metric: [S, E]}}` of `eval.policies` on the held-out episodes."""
    return heuristic_rows(cfg)


# The knobs that are fields of the env params (`GPUCloudParams`): a fit's candidates that differ only in
# them run as one vmapped program (`baselines_batch`).
PARAM_KNOBS = {
    "env.load_scale": "load_scale",
    "env.price": "price",
    "cluster.kappa_net": "kappa_net",
    "cluster.kappa_cpu": "kappa_cpu",
    "cluster.kappa_spread": "kappa_spread",
    "cluster.fluct_std": "fluct_std",
}


def baselines_batch(cfg: DASConfig, varying: dict) -> list[dict]:
    """`baselines` of `cfg` with each candidate's values of `varying` (`{config key: [values]}`, keys of
    `PARAM_KNOBS`), as one program vmapped over the candidates."""
    from jaxsched.policies.gpu_cloud import make_heuristic
    from jaxsched.systems.das.episodes import build_for_eval, evaluate_knob_candidates, seed_keys

    env, _, params, starts = build_for_eval(cfg)
    keys = seed_keys(cfg.eval.seed, cfg.num_seeds, len(starts))
    policies = {p: make_heuristic(p) for p in cfg.eval.policies}
    fields = {PARAM_KNOBS[k]: v for k, v in varying.items()}
    return evaluate_knob_candidates(env, params, fields, policies, starts, keys)


def fingerprint(cfg: DASConfig) -> np.ndarray:
    """`[E, jobs, 4]`: each held-out episode's jobs (submit, instances, GPUs, work)."""
    from jaxsched.systems.das.episodes import build_for_eval

    _, _, params, starts = build_for_eval(cfg)
    b = params.bank
    cols = np.stack([np.asarray(x, np.float64) for x in (b.submit, b.n_inst, b.gpu, b.work)], axis=-1)
    n = cfg.env.episode_jobs
    return np.stack([cols[s : s + n] for s in np.asarray(starts)])


CALIBRATION = Calibration(
    numbers=read_paper_numbers(PAPER_NUMBERS),
    held_out=held_out,
    baselines=baselines,
    fingerprint=fingerprint,
    label=label,
    param_knobs=PARAM_KNOBS,
    baselines_batch=baselines_batch,
)
