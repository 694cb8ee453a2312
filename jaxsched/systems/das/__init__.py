"""DAS (GPU-cloud scheduling: dual-agent ordering + Random-Walk-GP placement, MAPPO): the system declaration.

What DAS defines, and where: its config (`config.DASConfig`: cluster / env / workload / eval / agent / mappo
sections and `build_das`), its learners (the variants of `agents.das.PRESETS`, MAPPO with the DAS networks,
trained by `experiments.learner.train_all` (`train.LEARNER`) on the shared chunked trainer, with an optional
imitation warm start and validation-based checkpoint selection, `select`), its baselines
(`policies.gpu_cloud.HEURISTICS`, and the MOSA / MALO planners), its metrics (`evaluate.DAS_METRICS`), its
evaluation (`train.evaluate_das`) and its paper tables (`table`: Table 1, Table 3, App. E and F).
"""

from functools import partial

from jaxsched.experiments.learner import run_dir_of, train_all
from jaxsched.experiments.system import PaperTable, System
from jaxsched.policies.gpu_cloud import HEURISTICS
from jaxsched.systems.das import table
from jaxsched.systems.das.calibration import CALIBRATION
from jaxsched.systems.das.claims import claims
from jaxsched.systems.das.config import DASConfig, build_das
from jaxsched.systems.das.evaluate import DAS_METRICS
from jaxsched.systems.das.train import LEARNER, evaluate_das

SYSTEM = System(
    kind="das",
    title="DAS: GPU-cloud scheduling, dual-agent ordering + Random-Walk-GP placement, MAPPO",
    paper=(
        "A Dual-Agent Scheduler for Distributed Deep Learning Jobs on Public Cloud via Reinforcement "
        "Learning (KDD'23)"
    ),
    config=DASConfig,
    baselines=HEURISTICS,
    metrics=DAS_METRICS,
    train=partial(train_all, LEARNER),
    evaluate=evaluate_das,
    build=lambda cfg: build_das(cfg)[:2],
    run_dirs=lambda cfg: {v: run_dir_of(cfg, v) for v in cfg.agent.variants},
    paper_tables={"table1": PaperTable("Table 1 (JCT min, fee $) per cluster", table.PAPER_TABLE1)},
    commands={"table": table},
    calibration=CALIBRATION,
    claims=claims,
)
