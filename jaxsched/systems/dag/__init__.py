"""Idle-slot DAG scheduling (Duan & Wu, "Improving Learning-Based DAG Scheduling by Inserting Deliberate
Idle Slots", on Decima's task model; REINFORCE): the system declaration.

What the system defines, and where: its config (`config.DAGSystemConfig`: env / workload / agent /
reinforce / eval sections and `build_dag`), its learners (the variants of `config.VARIANTS` — the paper's
agent and its Table 1 / Fig. 4 ablations — `nn.idle_dag.IdleDAGNetwork` trained by Decima's policy
gradient, `agents.reinforce`, through `train.train_dag` on the shared chunked trainer), its baselines
(`policies.dag.HEURISTICS`), its metrics (`evaluate.DAG_METRICS`), its evaluation (`evaluate.evaluate_dag`,
with the per-job JCTs of Fig. 4) and the paper's Table 1 (`PAPER_TABLE1`).
"""

from jaxsched.experiments.system import PaperTable, System
from jaxsched.policies.dag import HEURISTICS
from jaxsched.systems.dag.config import DAGSystemConfig, build_dag
from jaxsched.systems.dag.evaluate import DAG_METRICS, LEARNER_LABELS, evaluate_dag
from jaxsched.systems.dag.train import run_dir_of, train_dag

# Table 1: average JCT (the paper's unit, seconds) of the paper's agent, without the selected features
# (critical path, average width) and without idle time, on the synthetic set and the mixed set (α = 0.5).
PAPER_TABLE1 = PaperTable(
    "Table 1: average JCT (s), full agent / w/o selected features / w/o idle time",
    {
        "synthetic": {"full": 46.3, "no_features": 52.7, "no_idle": 53.5},
        "mixed": {"full": 69.4, "no_features": 75.2, "no_idle": 74.5},
    },
)

SYSTEM = System(
    kind="dag",
    title="Idle-slot DAG scheduling: Decima's graph network + critical-path features + idle slots, REINFORCE",
    paper="Improving Learning-Based DAG Scheduling by Inserting Deliberate Idle Slots",
    config=DAGSystemConfig,
    baselines=HEURISTICS,
    metrics=DAG_METRICS,
    train=train_dag,
    evaluate=evaluate_dag,
    build=lambda cfg: build_dag(cfg)[:2],
    run_dirs=lambda cfg: {LEARNER_LABELS[v]: run_dir_of(cfg, v) for v in cfg.agent.variants},
    paper_tables={"table1": PAPER_TABLE1},
)
