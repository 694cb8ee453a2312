"""What every simulator shares: the environment contract, spaces, wrappers, queue and resource pools.

The names below load on first use (PEP 562), so that importing a light submodule (`core.checks`,
`core.threads`: what `jaxsched --help` needs) does not import jax."""

import importlib

_WHERE = {
    "Environment": "env",
    "Box": "spaces",
    "Discrete": "spaces",
    "MultiDiscrete": "spaces",
    "LogWrapper": "wrappers",
    "LogState": "wrappers",
}
_SUBMODULES = ("cluster", "queue")

__all__ = ["Environment", "Box", "Discrete", "MultiDiscrete", "LogWrapper", "LogState", "cluster", "queue"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
