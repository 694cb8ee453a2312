"""OSDEC (online scheduling of deferrable jobs in a cloud; Transformer + auxiliary tasks, PPO): the system
declaration.

What the system defines, and where: its config (`config.OSDECConfig`: env / workload / agent / ppo / eval
sections and `build_osdec`), its learners (`config.LEARNERS`: the paper's agent and Table 1's learned rows,
`nn.osdec.OSDECAgent` trained by the project's PPO, `agents.ppo`, through `experiments.learner.train_all`
(`train.LEARNER`) on the shared chunked trainer), its baselines (`policies.deferrable.HEURISTICS`), its
metrics (`evaluation.OSDEC_METRICS`), its evaluation (`evaluation.EVALUATION`, on the shared
`experiments.evaluate.evaluate`), the paper's published numbers (`paper_numbers.csv`) and the command
that sets ours beside its Tables 1, 2 and 4 (`table`: `jaxsched table osdec`).
"""

from jaxsched.experiments.system import System
from jaxsched.policies.deferrable import HEURISTICS
from jaxsched.systems.osdec import table
from jaxsched.systems.osdec.calibration import CALIBRATION
from jaxsched.systems.osdec.claims import claims
from jaxsched.systems.osdec.config import OSDECConfig
from jaxsched.systems.osdec.evaluation import EVALUATION, OSDEC_METRICS
from jaxsched.systems.osdec.train import LEARNER

SYSTEM = System(
    kind="osdec",
    title="OSDEC: deferrable cloud jobs, Transformer + GRU auxiliary tasks, PPO",
    paper="An Advanced Reinforcement Learning Framework for Online Scheduling of Deferrable Workloads in "
    "Cloud Computing",
    config=OSDECConfig,
    baselines=HEURISTICS,
    metrics=OSDEC_METRICS,
    learner=LEARNER,
    evaluation=EVALUATION,
    commands={"table": table},
    calibration=CALIBRATION,
    claims=claims,
    preset="configs/osdec/paper_table1.yaml",
)
