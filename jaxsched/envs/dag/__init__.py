"""The idle-slot DAG cluster (docs/dag.md): the env (`env.py`), its config, params, state and
observation (`params.py`), decima-sim's task waves (`waves.py`) and episode traces (`trace.py`)."""

from jaxsched.envs.dag.env import DAGEnv
from jaxsched.envs.dag.params import DAGConfig, DAGObs, DAGParams, DAGState

__all__ = ["DAGConfig", "DAGEnv", "DAGObs", "DAGParams", "DAGState"]
