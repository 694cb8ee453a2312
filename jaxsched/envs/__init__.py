"""One module per simulated system."""

from jaxsched.envs.hpc import HPCConfig, HPCEnv, HPCObs, HPCParams, HPCState

__all__ = ["HPCConfig", "HPCEnv", "HPCObs", "HPCParams", "HPCState"]
