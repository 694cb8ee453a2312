"""The idle-slot DAG cluster (docs/dag.md): the env (`env.py`), its static config (`params.py`), its params,
state and observation with every field's shape (`types.py`), decima-sim's task waves (`waves.py`) and
episode traces (`trace.py`)."""

from jaxsched.envs.dag.env import DAGEnv
from jaxsched.envs.dag.params import DAGConfig
from jaxsched.envs.dag.types import DAGObs, DAGParams, DAGState

__all__ = ["DAGConfig", "DAGEnv", "DAGObs", "DAGParams", "DAGState"]
