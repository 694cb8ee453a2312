"""Heuristic schedulers with the learned-policy signature `policy(params, obs, key) -> action`.

One factory for every env: `make_heuristic(env, name, **opts)`; `heuristic_names(env)` lists the names.
Each env class has one row in a table (`register_heuristics`; a new env adds its own): the HPC env's are
the priority scores of `scores.SCORES` (`name` or `name_easy` for EASY back-filling, or `backfill=True`)
and `random` (uniform over valid slots); the GPU cloud's are the DAS paper's five (`gpu_cloud.HEURISTICS`)
and `random`; the GPU-locality env's are SCED²'s six baselines (`gpu_locality.HEURISTICS`) and `random`;
the DAG cluster's are FIFO, SJF, critical path and Decima's dynamic partition (`dag.HEURISTICS`) and
`random`; the deferrable cloud's are OSDEC's FIFO, SJF and Tetris (`deferrable.HEURISTICS`) and `random`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

# env class → (names(env) -> tuple[str, ...], make(env, name, **opts) -> policy); the built-in rows are
# added on first use (`_builtin`), so importing this package imports no env.
_TABLE: dict[type, tuple[Callable, Callable]] = {}


def register_heuristics(env_class: type, names: Callable, make: Callable) -> None:
    """Give `env_class` (and its subclasses) heuristics: `names(env)` lists them, `make(env, name,
    **opts)` builds one (it may refuse options it does not take)."""
    _TABLE[env_class] = (names, make)


def _row(env) -> tuple[Callable, Callable]:
    _builtin()
    for cls in type(env).__mro__:
        if cls in _TABLE:
            return _TABLE[cls]
    raise ValueError(f"no heuristics for {type(env).__name__}")


def heuristic_names(env) -> tuple[str, ...]:
    """The names `make_heuristic(env, name)` accepts."""
    return tuple(_row(env)[0](env))


def make_heuristic(env, name: str, **opts):
    """The heuristic `name` of `env`'s system as a jittable `policy(params, obs, key) -> action`.
    Options: `backfill` (HPC: EASY back-filling, the same as the `_easy` suffix)."""
    names, make = _row(env)
    if name not in names(env):
        raise ValueError(
            f"unknown heuristic {name!r} for {type(env).__name__}; choose from {', '.join(names(env))}"
        )
    return make(env, name, **opts)


def _no_options(opts: dict, name: str) -> None:
    if opts:
        raise ValueError(f"heuristic {name!r} takes no option(s) {', '.join(sorted(opts))}")


@functools.cache
def _builtin() -> None:
    """The five envs' rows (once; a row registered before stays: `setdefault`)."""
    from jaxsched.envs import DAGEnv, DeferrableEnv, GPUCloudEnv, GPULocalityEnv, HPCEnv
    from jaxsched.policies import dag, deferrable, gpu_cloud, gpu_locality
    from jaxsched.policies.scores import SCORES

    def make_hpc(env, name, backfill=False, **opts):
        from jaxsched.policies.hpc import make_priority_policy, random_valid_policy

        _no_options(opts, name)
        if name == "random":
            return random_valid_policy(env)
        return make_priority_policy(env, name.removesuffix("_easy"), bool(backfill) or name.endswith("_easy"))

    def plain(make_one):
        """A factory that takes no options."""

        def make(env, name, **opts):
            _no_options(opts, name)
            return make_one(env, name)

        return make

    _default_row(HPCEnv, lambda env: (*SCORES, *(f"{s}_easy" for s in SCORES), "random"), make_hpc)
    _default_row(
        GPUCloudEnv,
        lambda env: (*gpu_cloud.HEURISTICS, "random"),
        plain(lambda env, n: gpu_cloud.make_heuristic(n)),
    )
    for env_class, module in ((GPULocalityEnv, gpu_locality), (DAGEnv, dag), (DeferrableEnv, deferrable)):
        _default_row(env_class, lambda env, m=module: (*m.HEURISTICS, "random"), plain(module.make_heuristic))


def _default_row(env_class: type, names: Callable, make: Callable) -> None:
    _TABLE.setdefault(env_class, (names, make))
