"""Config validation written once: each check raises a one-line `ValueError` naming `prefix.field` and
the value it got (`ppo.lr must be > 0, got 0.0`), as the strict loader's errors do."""

from __future__ import annotations


def at_least(cfg, prefix: str, names, low: int = 1) -> None:
    """Every field of `names` on `cfg` is >= `low`."""
    for name in names:
        value = getattr(cfg, name)
        if value < low:
            raise ValueError(f"{prefix}.{name} must be >= {low}, got {value}")


def positive(cfg, prefix: str, names) -> None:
    """Every field of `names` on `cfg` is > 0 (NaN is not)."""
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            raise ValueError(f"{prefix}.{name} must be > 0, got {value}")


def in_unit_interval(cfg, prefix: str, names) -> None:
    """Every field of `names` on `cfg` is in [0, 1] (NaN is not)."""
    for name in names:
        value = getattr(cfg, name)
        if not 0 <= value <= 1:
            raise ValueError(f"{prefix}.{name} must be in [0, 1], got {value}")


def one_of(value, key: str, known) -> None:
    """`value` (the config key `key`, e.g. "eval.select") is one of `known`."""
    if value not in known:
        raise ValueError(f"{key} must be one of {', '.join(map(str, known))}, got {value!r}")


def choices(values, key: str, known, what: str, nonempty: bool = False) -> None:
    """Every entry of the list `values` (the config key `key`, e.g. "eval.baselines") is one of `known`
    (`what` they are, for the message: "heuristic"), none twice, and with `nonempty` there is at least one."""
    for v in values:
        if v not in known:
            raise ValueError(f"{key}: unknown {what} {v!r}; choose from {', '.join(known)}")
    if nonempty and not values:
        raise ValueError(f"{key} must list at least one of {', '.join(known)}")
    if len(set(values)) != len(values):
        raise ValueError(f"{key} has duplicates: {list(values)}")


class EnvSections:
    """Base of an env's config-section mixin (`envs.<env>.setup`): a dataclass declaring the env's
    sections, from which an experiment config derives beside `ExperimentConfig`. Its `check()` (the
    sections' cross-checks) runs after the experiment config's own checks, or alone when the mixin is
    built by itself."""

    PATH_KEYS: tuple[str, ...] = ()  # dotted keys of file paths (resolved beside the config file)

    def __post_init__(self):
        getattr(super(), "__post_init__", lambda: None)()  # the experiment config's checks, if any
        self.check()

    def check(self) -> None:
        """The sections' cross-checks (a one-line `ValueError` naming the fields); none by default."""
