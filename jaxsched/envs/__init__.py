"""One module per simulated system, and the registry of named environments (`make`, `registered`). Every
env is exported here with its config, params, state, observation and (where it is not an int) action
types."""

from jaxsched.envs.dag.env import DAGEnv
from jaxsched.envs.dag.params import DAGConfig
from jaxsched.envs.dag.types import DAGObs, DAGParams, DAGState
from jaxsched.envs.deferrable import (
    DeferrableConfig,
    DeferrableEnv,
    DeferrableObs,
    DeferrableParams,
    DeferrableState,
)
from jaxsched.envs.gpu_cloud.env import (
    GPUCloudAction,
    GPUCloudConfig,
    GPUCloudEnv,
    GPUCloudParams,
    GPUCloudState,
)
from jaxsched.envs.gpu_cloud.obs import GPUCloudObs
from jaxsched.envs.gpu_locality.env import GPULocalityEnv, GPULocalityObs, GPULocalityState
from jaxsched.envs.gpu_locality.params import GPULocalityConfig, GPULocalityParams
from jaxsched.envs.hpc import HPCConfig, HPCEnv, HPCObs, HPCParams, HPCState
from jaxsched.envs.registry import EnvSpec, make, registered

__all__ = [
    "DAGConfig",
    "DAGEnv",
    "DAGObs",
    "DAGParams",
    "DAGState",
    "DeferrableConfig",
    "DeferrableEnv",
    "DeferrableObs",
    "DeferrableParams",
    "DeferrableState",
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
