"""DAS (GPU-cloud scheduling: dual-agent ordering + Random-Walk-GP placement, MAPPO): the system declaration.

What DAS defines, and where: its config (`config.DASConfig`: cluster / env / workload / eval / agent / mappo
sections and `build_das`), its learners (the variants of `agents.das.PRESETS`, MAPPO with the DAS networks,
trained by `experiments.learner.train_all` (`train.LEARNER`) on the shared chunked trainer, with an optional
imitation warm start and validation-based checkpoint selection, `select`), its baselines
(`policies.gpu_cloud.HEURISTICS`, and the MOSA / MALO planners), its metrics (`evaluation.DAS_METRICS`), its
evaluation (`evaluation.EVALUATION`, on the shared `experiments.evaluate.evaluate`) and its paper tables
(`table`: Table 1, Table 3, App. E and F).
"""

from jaxsched.experiments.system import System
from jaxsched.policies.gpu_cloud import HEURISTICS
from jaxsched.systems.das import table
from jaxsched.systems.das.calibration import CALIBRATION
from jaxsched.systems.das.claims import claims
from jaxsched.systems.das.config import DASConfig
from jaxsched.systems.das.evaluation import DAS_METRICS, EVALUATION
from jaxsched.systems.das.train import LEARNER

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
    learner=LEARNER,
    evaluation=EVALUATION,
    commands={"table": table},
    calibration=CALIBRATION,
    claims=claims,
    preset="configs/das/paper_small.yaml",
)
