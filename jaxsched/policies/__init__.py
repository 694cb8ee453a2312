"""Heuristic schedulers with the learned-policy signature `policy(params, obs, key) -> action`.

One factory for every env: `make_heuristic(env, name, **opts)`; `heuristic_names(env)` lists the names.
The HPC env's are the priority scores of `scores.SCORES` (`name` or `name_easy` for EASY back-filling,
or `backfill=True`) and `random` (uniform over valid slots); the GPU cloud's are the DAS paper's five
(`gpu_cloud.HEURISTICS`) and `random`; the GPU-locality env's are SCED²'s six baselines
(`gpu_locality.HEURISTICS`) and `random`; the DAG cluster's are FIFO, SJF, critical path and Decima's
dynamic partition (`dag.HEURISTICS`) and `random`; the deferrable cloud's are OSDEC's FIFO, SJF and Tetris
(`deferrable.HEURISTICS`) and `random`.
"""

from __future__ import annotations


def heuristic_names(env) -> tuple[str, ...]:
    """The names `make_heuristic(env, name)` accepts."""
    from jaxsched.envs.dag import DAGEnv
    from jaxsched.envs.deferrable import DeferrableEnv
    from jaxsched.envs.gpu_cloud import GPUCloudEnv
    from jaxsched.envs.gpu_locality import GPULocalityEnv
    from jaxsched.envs.hpc import HPCEnv
    from jaxsched.policies import dag, deferrable, gpu_cloud, gpu_locality
    from jaxsched.policies.scores import SCORES

    if isinstance(env, HPCEnv):
        return (*SCORES, *(f"{s}_easy" for s in SCORES), "random")
    if isinstance(env, GPUCloudEnv):
        return (*gpu_cloud.HEURISTICS, "random")
    if isinstance(env, GPULocalityEnv):
        return (*gpu_locality.HEURISTICS, "random")
    if isinstance(env, DAGEnv):
        return (*dag.HEURISTICS, "random")
    if isinstance(env, DeferrableEnv):
        return (*deferrable.HEURISTICS, "random")
    raise ValueError(f"no heuristics for {type(env).__name__}")


def make_heuristic(env, name: str, **opts):
    """The heuristic `name` of `env`'s system as a jittable `policy(params, obs, key) -> action`.
    Options: `backfill` (HPC: EASY back-filling, the same as the `_easy` suffix)."""
    from jaxsched.envs.hpc import HPCEnv

    names = heuristic_names(env)
    if name not in names:
        raise ValueError(
            f"unknown heuristic {name!r} for {type(env).__name__}; choose from {', '.join(names)}"
        )
    if isinstance(env, HPCEnv):
        from jaxsched.policies.hpc import make_priority_policy, random_valid_policy

        backfill = bool(opts.pop("backfill", False)) or name.endswith("_easy")
        _no_options(opts, name)
        if name == "random":
            return random_valid_policy(env)
        return make_priority_policy(env, name.removesuffix("_easy"), backfill)
    from jaxsched.envs.dag import DAGEnv
    from jaxsched.envs.deferrable import DeferrableEnv
    from jaxsched.envs.gpu_locality import GPULocalityEnv
    from jaxsched.policies import dag, deferrable, gpu_cloud, gpu_locality

    _no_options(opts, name)
    if isinstance(env, GPULocalityEnv):
        return gpu_locality.make_heuristic(env, name)
    if isinstance(env, DAGEnv):
        return dag.make_heuristic(env, name)
    if isinstance(env, DeferrableEnv):
        return deferrable.make_heuristic(env, name)
    return gpu_cloud.make_heuristic(name)


def _no_options(opts: dict, name: str) -> None:
    if opts:
        raise ValueError(f"heuristic {name!r} takes no option(s) {', '.join(sorted(opts))}")
