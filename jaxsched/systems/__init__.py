"""The registry of systems: `kind:` → the system's declaration (`experiments.system.System`).

Only the CLI (and tests) import this: the experiment layer never knows which systems exist. A new system
adds its subpackage and one line: its `SYSTEM` in `systems()` (or, from outside the package, a
`register(SYSTEM)` call before the CLI runs).
"""

from __future__ import annotations

from pathlib import Path

_REGISTERED: dict = {}  # systems defined outside the package (`register`)


def systems() -> dict:
    """`{kind: System}` of every system (imports each system module on first use)."""
    from jaxsched.systems import dag, das, dbf, osdec, sced2

    built_in = (dbf.SYSTEM, das.SYSTEM, sced2.SYSTEM, dag.SYSTEM, osdec.SYSTEM)
    return {s.kind: s for s in built_in} | _REGISTERED


def register(system) -> None:
    """Add a `System` defined outside the package (a plugin, a test's toy system); a kind that exists
    is a `ValueError`."""
    if system.kind in systems():
        raise ValueError(f"a system of kind {system.kind!r} exists already")
    _REGISTERED[system.kind] = system


def unregister(kind: str) -> None:
    """Remove a system `register` added (a no-op for a built-in or unknown kind)."""
    _REGISTERED.pop(kind, None)


def get_system(kind: str):
    """The `System` of `kind`, or a `ValueError` naming the kinds there are."""
    known = systems()
    if kind not in known:
        raise ValueError(f"unknown system {kind!r}; choose from {', '.join(known)}")
    return known[kind]


def load_run_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()):
    """`(system, config)` of the YAML config at `path`: its `kind:` picks the system (strict loading,
    `experiments.config.load_config`)."""
    from jaxsched.experiments.config import load_config

    known = systems()
    cfg = load_config(path, {k: s.config for k, s in known.items()}, overrides)
    return known[cfg.kind], cfg
