"""SCED² (locality-aware DLT job selection on a GPU cluster, DQN): the system declaration.

What SCED² defines, and where: its config (`config.SCED2Config`: env / workload / agent / dqn / eval
sections and `build_sced2`), its learners (DQN, `agents.dqn`, with the shared-weight Q-network of Eq. 3–5,
`nn.sced2`, or the flat-MLP ablation, trained by `experiments.learner.train_all` (`train.LEARNER`) on the
shared chunked trainer), its baselines (`policies.gpu_locality.HEURISTICS`), its metrics
(`evaluation.SCED2_METRICS`), its evaluation (`evaluation.EVALUATION`) and its paper tables (`table`: Fig.
7–10 and Table III).
"""

from jaxsched.experiments.system import System
from jaxsched.policies.gpu_locality import HEURISTICS
from jaxsched.systems.sced2 import table
from jaxsched.systems.sced2.calibration import CALIBRATION
from jaxsched.systems.sced2.claims import claims
from jaxsched.systems.sced2.config import SCED2Config
from jaxsched.systems.sced2.evaluation import EVALUATION, SCED2_METRICS
from jaxsched.systems.sced2.train import LEARNER

SYSTEM = System(
    kind="sced2",
    title="SCED²: locality-aware DLT job selection on a GPU cluster, shared-weight Q-network, DQN",
    paper="SCED²: Scheduling Deep Learning Training via Deep Reinforcement Learning",
    config=SCED2Config,
    baselines=HEURISTICS,
    metrics=SCED2_METRICS,
    learner=LEARNER,
    evaluation=EVALUATION,
    commands={"table": table},
    calibration=CALIBRATION,
    claims=claims,
    preset="configs/sced2/paper_68.yaml",
)
