"""Idle-slot DAG scheduling (Duan & Wu, "Improving Learning-Based DAG Scheduling by Inserting Deliberate Idle
Slots", on Decima's task model; REINFORCE): the system declaration.

What the system defines, and where: its config (`config.DAGSystemConfig`: env / workload / agent / reinforce
/ eval sections and `build_dag`), its learners (the variants of `config.VARIANTS` — the paper's agent and
its Table 1 / Fig. 4 ablations — `nn.idle_dag.IdleDAGNetwork` trained by Decima's policy gradient,
`agents.reinforce`, through `experiments.learner.train_all` (`train.LEARNER`) on the shared chunked
trainer), its baselines (`policies.dag.HEURISTICS`), its metrics (`evaluation.DAG_METRICS`), its evaluation
(`evaluation.EVALUATION`, on the shared `experiments.evaluate.evaluate`, with the per-job JCTs of Fig. 4),
the paper's published numbers (`paper_numbers.csv`) and its tables and figures from trained runs (`table`:
`jaxsched table dag`, Table 1 and Figs. 4–6).
"""

from jaxsched.experiments.system import System
from jaxsched.policies.dag import HEURISTICS
from jaxsched.systems.dag import table
from jaxsched.systems.dag.calibration import CALIBRATION
from jaxsched.systems.dag.claims import claims
from jaxsched.systems.dag.config import DAGSystemConfig
from jaxsched.systems.dag.evaluation import DAG_METRICS, EVALUATION
from jaxsched.systems.dag.train import LEARNER

SYSTEM = System(
    kind="dag",
    title="Idle-slot DAG scheduling: Decima's graph network + critical-path features + idle slots, REINFORCE",
    paper="Improving Learning-Based DAG Scheduling by Inserting Deliberate Idle Slots",
    config=DAGSystemConfig,
    baselines=HEURISTICS,
    metrics=DAG_METRICS,
    learner=LEARNER,
    evaluation=EVALUATION,
    commands={"table": table},
    calibration=CALIBRATION,
    claims=claims,
    preset="configs/dag/paper_synthetic.yaml",
)
