"""Baselines for the idle-slot DAG env, with the learned-policy signature `policy(params, obs, key) ->
action` (`params` unused; `obs` a `DAGObs`; action `i32[3]` = (slot·S + stage, limit − 1, r)). None of
them inserts idle time (r = 0); all pick among the runnable stages (`obs.stage_mask`):

  fifo     the earliest-arrived job, its lowest runnable stage, limit k (Decima's `spark_fifo`: every
           executor to the first job that can use it)
  sjf      the job with the least total work (the paper's shortest-job-first), ties by arrival; limit k
  cp       the runnable stage with the longest bottom level (critical path to a sink, over every job),
           ties by arrival, then stage; limit k
  dynamic  Decima's dynamic partition: a fair share cap = ⌈k / jobs with unstarted tasks⌉; the earliest
           job holding fewer than cap executors gets its lowest runnable stage with limit cap. When every
           job is at its cap (rare: idle executors then sit with finished-dispatch jobs) the earliest job
           gets one executor more (Decima would leave it idle; our action space has no "idle" choice)
  random   uniform over runnable stages, then uniform over valid limits and valid idle slots

"Lowest runnable stage" is the smallest stage index: templates number stages in a topological order
(TPC-H's files do, as do our generators), like Decima's frontier order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.core.cluster import prefix_count
from jaxsched.envs.dag.env import DAGEnv
from jaxsched.envs.dag.types import DAGObs

HEURISTICS = ("fifo", "sjf", "cp", "dynamic")
BIG = 2**30


def _first(mask: jax.Array, key: jax.Array) -> jax.Array:
    """Index of the masked entry with the smallest integer `key` (ties: lowest index)."""
    return jnp.argmin(jnp.where(mask, key, BIG))


def _nth_set(mask: jax.Array, nth: jax.Array) -> jax.Array:
    """The flat index of the `nth` (0-based) True of `mask` (any shape, row-major), 0 if there is none:
    `argmax(cumsum(mask.ravel()) > nth)`, with the cumsum by population counts (`core.cluster.prefix_count`:
    the CPU lowers a cumsum over J·S to a reduce window that was 5 % of a batched env step)."""
    return jnp.argmax(prefix_count(mask.reshape(-1)) > nth)


def _uniform_below(u: jax.Array, n: jax.Array) -> jax.Array:
    """`i32` uniform over {0, .., n − 1} (0 when n <= 0) from `u` uniform in [0, 1): ⌊u·n⌋. A float32 `u`
    takes 2**23 equally likely values, so each outcome's probability is within 2**-23 of 1 / n."""
    return jnp.clip((u * n).astype(jnp.int32), 0, jnp.maximum(n - 1, 0))


def _job_stage(env: DAGEnv, obs: DAGObs, job_key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The job (slot) with the smallest `job_key` among jobs with a runnable stage, and its lowest runnable
    stage as a flat index."""
    s = env.config.max_stages
    runnable = obs.stage_mask.reshape(-1, s)
    has = runnable.any(axis=1)
    j = _first(has, job_key)
    stage = jnp.argmax(runnable[j])
    return j, j * s + stage


def _arrival_rank(obs: DAGObs) -> jax.Array:
    return jnp.where(obs.job_valid, obs.job_order, BIG)


def make_heuristic(env: DAGEnv, name: str):
    """The jittable baseline `name` (module docstring) for `env`."""
    cfg = env.config
    k, s = cfg.n_executors, cfg.max_stages

    def action(a_stage, limit, r=0):
        return jnp.stack([a_stage, limit - 1, r]).astype(jnp.int32)

    if name == "fifo":

        def fifo(params, obs: DAGObs, key):
            _, a = _job_stage(env, obs, _arrival_rank(obs))
            return action(a, k)

        return fifo
    if name == "sjf":

        def sjf(params, obs: DAGObs, key):
            # rank by work, ties by arrival: order the slots by (work, arrival) once
            order = jnp.lexsort((_arrival_rank(obs), jnp.where(obs.job_valid, obs.work, jnp.inf)))
            rank = jnp.zeros_like(order).at[order].set(jnp.arange(order.shape[0]))
            _, a = _job_stage(env, obs, rank)
            return action(a, k)

        return sjf
    if name == "cp":

        def cp(params, obs: DAGObs, key):
            bottom = obs.bottom.reshape(-1)
            arrival = jnp.repeat(_arrival_rank(obs), s)
            order = jnp.lexsort((jnp.arange(bottom.shape[0]), arrival, -bottom))
            rank = jnp.zeros_like(order).at[order].set(jnp.arange(order.shape[0]))
            a = _first(obs.stage_mask, rank)
            return action(a, k)

        return cp
    if name == "dynamic":

        def dynamic(params, obs: DAGObs, key):
            unstarted = obs.job_valid & (obs.remaining > 0).any(axis=1)
            cap = -(-k // jnp.maximum(unstarted.sum(), 1))
            runnable = obs.stage_mask.reshape(-1, s).any(axis=1)
            under = runnable & (obs.bound < cap)
            j_under, a_under = _job_stage(env, obs, jnp.where(under, _arrival_rank(obs), BIG))
            j_any, a_any = _job_stage(env, obs, _arrival_rank(obs))
            ok = under.any()
            a = jnp.where(ok, a_under, a_any)
            limit = jnp.where(ok, cap, obs.bound[j_any] + 1)
            return action(a, limit)

        return dynamic
    if name == "random":

        def random_policy(params, obs: DAGObs, key):
            # One hash for the three heads: three uniforms scaled to their ranges (`_uniform_below`), where
            # a `randint` each (a split, two bit draws) was ten threefry hashes, each a rolled loop on a CPU
            # (×1.04 env decisions/s under this policy at batch 1,024).
            u = jax.random.uniform(key, (3,))
            nth = _uniform_below(u[0], obs.stage_mask.sum())
            a = _nth_set(obs.stage_mask, nth)
            lo = obs.limit_min[a // s]
            limit = lo + _uniform_below(u[1], k + 1 - lo)
            r = _uniform_below(u[2], jnp.where(obs.idle_ok[a], cfg.idle_levels, 0) + 1)
            return action(a, limit, r)

        return random_policy
    raise ValueError(f"unknown DAG heuristic {name!r}; choose from {', '.join(HEURISTICS)}, random")
