"""One module per simulated system, and the registry of named environments (`make`, `registered`)."""

from jaxsched.envs.gpu_cloud import (
    GPUCloudAction,
    GPUCloudConfig,
    GPUCloudEnv,
    GPUCloudParams,
    GPUCloudState,
)
from jaxsched.envs.gpu_cloud_obs import GPUCloudObs
from jaxsched.envs.hpc import HPCConfig, HPCEnv, HPCObs, HPCParams, HPCState
from jaxsched.envs.registry import EnvSpec, make, registered

__all__ = [
    "EnvSpec",
    "GPUCloudAction",
    "GPUCloudConfig",
    "GPUCloudEnv",
    "GPUCloudObs",
    "GPUCloudParams",
    "GPUCloudState",
    "HPCConfig",
    "HPCEnv",
    "HPCObs",
    "HPCParams",
    "HPCState",
    "make",
    "registered",
]
