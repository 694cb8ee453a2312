"""OSDEC's deferrable-job cloud: the env (`env`) and its settings and builder (`setup`)."""

from jaxsched.envs.deferrable.env import (
    HISTORY_FIELDS,
    N_PENDING_FEATURES,
    DeferrableConfig,
    DeferrableEnv,
    DeferrableObs,
    DeferrableParams,
    DeferrableState,
    history_row,
)

__all__ = [
    "HISTORY_FIELDS",
    "N_PENDING_FEATURES",
    "DeferrableConfig",
    "DeferrableEnv",
    "DeferrableObs",
    "DeferrableParams",
    "DeferrableState",
    "history_row",
]
