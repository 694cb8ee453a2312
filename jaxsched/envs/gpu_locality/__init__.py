"""SCED²'s GPU-locality cluster (docs/sced2.md): the env (`env.py`), its config, params and locality
model (`params.py`) and its state and observation (`types.py`)."""

from jaxsched.envs.gpu_locality.env import GPULocalityEnv
from jaxsched.envs.gpu_locality.params import GPULocalityConfig, GPULocalityParams
from jaxsched.envs.gpu_locality.types import GPULocalityObs, GPULocalityState

__all__ = ["GPULocalityConfig", "GPULocalityEnv", "GPULocalityObs", "GPULocalityParams", "GPULocalityState"]
