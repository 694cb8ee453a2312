"""Deep Back-Filling (HPC batch scheduling with a split window, PPO): the system declaration.

What DBF defines, and where: its config (`config.DBFConfig`: env / workload / agent / ppo / eval sections
and `build_run`), its learner (PPO with the DBF network: `agents.dbf`, or the SchedInspector baseline's
accept/skip network, `nn.inspector`, by `agent.network`; trained by `experiments.learner.train_all`
(`train.LEARNER`) on the shared chunked trainer), its baselines (the priority scores of `policies.scores`,
`_easy` for EASY back-filling), its metrics (`metrics.HPC_METRICS`), its evaluation (`evaluation.EVALUATION`),
its paper table (the Fig. 5-style split sweep over trained runs, `report`: `jaxsched table dbf RUN ...`),
and the RLScheduler-compatible heuristic table (`rlscheduler_table`), which exists to match published
numbers exactly.
"""

from jaxsched.experiments.system import System
from jaxsched.policies.scores import SCORES
from jaxsched.systems.dbf import report, rlscheduler_table
from jaxsched.systems.dbf.claims import claims
from jaxsched.systems.dbf.config import DBFConfig
from jaxsched.systems.dbf.evaluation import EVALUATION
from jaxsched.systems.dbf.metrics import HPC_METRICS
from jaxsched.systems.dbf.train import LEARNER

SYSTEM = System(
    kind="dbf",
    title="Deep Back-Filling: HPC batch scheduling, split window + schedule cycling, PPO",
    paper="Deep Back-Filling: a Split Window Technique for Deep Online Cluster Job Scheduling (HPCC'22)",
    config=DBFConfig,
    baselines=(*SCORES, *(f"{s}_easy" for s in SCORES)),
    metrics=HPC_METRICS,
    learner=LEARNER,
    evaluation=EVALUATION,
    run_dirs=lambda cfg: {cfg.name: cfg.run_dir},
    commands={"table": report, "hpc-table": rlscheduler_table},
    claims=claims,
    preset="configs/dbf/m20.yaml",
)
