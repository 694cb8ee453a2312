"""HPC batch scheduling: the Deep Back-Filling env (`env`: a split window over the queue, schedule
cycling) and RLScheduler's own event loop (`rlscheduler`: the model its published heuristic tables were
measured on, job for job)."""

from jaxsched.envs.hpc.env import REWARDS, HPCConfig, HPCEnv, HPCObs, HPCParams, HPCState

__all__ = ["REWARDS", "HPCConfig", "HPCEnv", "HPCObs", "HPCParams", "HPCState"]
