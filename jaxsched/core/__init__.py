"""What every simulator shares: the environment contract, spaces, wrappers, queue and resource pools."""

from jaxsched.core import cluster, queue
from jaxsched.core.env import Environment
from jaxsched.core.spaces import Box, Discrete, MultiDiscrete
from jaxsched.core.wrappers import LogState, LogWrapper

__all__ = ["Environment", "Box", "Discrete", "MultiDiscrete", "LogWrapper", "LogState", "cluster", "queue"]
