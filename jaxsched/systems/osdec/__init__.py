"""OSDEC (online scheduling of deferrable jobs in a cloud; Transformer + auxiliary tasks, PPO): the system
declaration.

What the system defines, and where: its config (`config.OSDECConfig`: env / workload / agent / ppo / eval
sections and `build_osdec`), its learners (`config.LEARNERS`: the paper's agent and Table 1's PPO rows,
`nn.osdec.OSDECAgent` trained by the project's PPO, `agents.ppo`, through `train.train_osdec` on the shared
chunked trainer), its baselines (`policies.deferrable.HEURISTICS`), its metrics
(`evaluate.OSDEC_METRICS`), its evaluation (`evaluate.evaluate_osdec`) and the paper's Table 1
(`PAPER_TABLE1`).
"""

from jaxsched.experiments.system import PaperTable, System
from jaxsched.policies.deferrable import HEURISTICS
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec
from jaxsched.systems.osdec.evaluate import LEARNER_LABELS, OSDEC_METRICS, evaluate_osdec
from jaxsched.systems.osdec.train import run_dir_of, train_osdec

# Table 1 of the paper: (utilization, time delay, total reward); learned rows are means over its runs.
PAPER_TABLE1 = PaperTable(
    "Table 1 (utilization, time delay, total reward)",
    {
        "fifo": {"paper": (3602.45, -193.64, 3408.82)},
        "sjf": {"paper": (3386.66, -112.06, 3274.66)},
        "tetris": {"paper": (3689.65, -282.42, 3407.20)},
        "ppo_mlp": {"paper": (3596.25, -218.74, 3377.48)},
        "ppo_att": {"paper": (3495.20, -95.66, 3387.22)},
        "aux_h": {"paper": (3706.87, -101.28, 3444.00)},
        "aux_l": {"paper": (3737.47, -240.42, 3466.22)},
        "osdec": {"paper": (3761.24, -250.25, 3475.37)},
    },
)

SYSTEM = System(
    kind="osdec",
    title="OSDEC: deferrable cloud jobs, Transformer + GRU auxiliary tasks, PPO",
    paper="An Advanced Reinforcement Learning Framework for Online Scheduling of Deferrable Workloads in "
    "Cloud Computing",
    config=OSDECConfig,
    baselines=HEURISTICS,
    metrics=OSDEC_METRICS,
    train=train_osdec,
    evaluate=evaluate_osdec,
    build=lambda cfg: build_osdec(cfg)[:2],
    run_dirs=lambda cfg: {LEARNER_LABELS[n]: run_dir_of(cfg, n) for n in cfg.agent.learners},
    paper_tables={"table1": PAPER_TABLE1},
)
