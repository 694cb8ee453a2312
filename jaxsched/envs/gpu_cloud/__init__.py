"""The GPU cloud of DAS (docs/gpu_cloud.md): the env (`env.py`), its types (`types.py`), params and
their builders (`params.py`), the observation's features (`obs.py`) and the co-location contention and
fluctuation model (`contention.py`)."""

from jaxsched.envs.gpu_cloud.env import GPUCloudEnv
from jaxsched.envs.gpu_cloud.obs import GPUCloudObs
from jaxsched.envs.gpu_cloud.params import heterogeneous_perf
from jaxsched.envs.gpu_cloud.types import GPUCloudAction, GPUCloudConfig, GPUCloudParams, GPUCloudState

__all__ = [
    "GPUCloudAction", "GPUCloudConfig", "GPUCloudEnv", "GPUCloudObs", "GPUCloudParams", "GPUCloudState",
    "heterogeneous_perf",
]  # fmt: skip
