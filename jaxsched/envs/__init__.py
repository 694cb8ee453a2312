"""One module per simulated system, and the registry of named environments (`make`, `registered`)."""

from jaxsched.envs.gpu_cloud import (
    GPUCloudAction,
    GPUCloudConfig,
    GPUCloudEnv,
    GPUCloudParams,
    GPUCloudState,
)
from jaxsched.envs.gpu_cloud_obs import GPUCloudObs
from jaxsched.envs.gpu_locality import GPULocalityEnv, GPULocalityObs, GPULocalityState
from jaxsched.envs.gpu_locality_params import GPULocalityConfig, GPULocalityParams
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
    "GPULocalityConfig",
    "GPULocalityEnv",
    "GPULocalityObs",
    "GPULocalityParams",
    "GPULocalityState",
    "HPCConfig",
    "HPCEnv",
    "HPCObs",
    "HPCParams",
    "HPCState",
    "make",
    "registered",
]
