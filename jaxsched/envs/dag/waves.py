"""Per-task durations sampled as decima-sim samples them (`spark_env/node.py` `Node.schedule`), for the DAG
env's `task_waves` mode (the `decima` preset; docs/dag.md "Task waves").

decima-sim measured each TPC-H stage's task durations with e executors for a few values of e, in three
lists: the *first wave* (the first task an executor runs on a stage), the *rest wave* (later tasks of the
same stage) and the *fresh durations* (an executor's first task in the job, warm-up included). When a task
starts, with n executors bound to its job:
  1. the executor count is mapped to a measured key: n <= 5 → 5, n >= 100 → 100, n on a data point → it,
     else between data points (lo, hi) → lo with probability (n − lo) / (hi − lo), else hi (decima's
     `rand_pt = randint(1, hi − lo + 1) <= n − lo`; the direction is decima's);
  2. a key the stage's first wave lacks becomes the largest key it has;
  3. the list: an executor fresh to the job takes the fresh durations (or, when that list is empty, the
     first wave plus `warmup_delay`); one whose last task was this stage takes the rest wave (if it is not
     empty); any other takes the first wave (or, when empty, the fresh durations);
  4. a uniform element of that list.

Static shapes: the lists are padded to D values (`workloads.tpch.tpch_wave_table` keeps a uniform subset of
a longer list). Randomness is a counter-based hash, not a key threaded through the state: the draws of a
task are `hash(seed, job, stage, task index, i)` for i = 0 (step 1), 1 (step 4), with `seed` drawn at
reset, so the plain-Python reference (`tests/reference/dag.py`) reproduces every duration exactly and a
task's duration does not depend on the order events are processed in.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core.hashing import lowbias32

# decima-sim's `args.executor_data_point` (param.py): the executor counts its interval map is built on.
DECIMA_DATA_POINTS = (5, 10, 20, 40, 50, 60, 80, 100)
FIRST, REST, FRESH = 0, 1, 2


@struct.dataclass
class TaskWaves:
    """Padded wave samples of the bank's templates, in the bank's template order.

    values i32[T, S, K, 3, D] ms, count i32[T, S, K, 3] (valid values per list; 0 = empty), present
    bool[T, S, K] (the stage's first wave has key K), largest i32[T, S] (the largest present key's column),
    fallback i32[T, S] (a duration when a stage's chosen first wave and fresh list are both empty: the
    template's task duration). Per executor count n in [0, k]: lo_col, hi_col i32[k + 1] (the interval's
    key columns), lo_val, hi_val i32[k + 1] (their executor counts)."""

    values: jnp.ndarray
    count: jnp.ndarray
    present: jnp.ndarray
    largest: jnp.ndarray
    fallback: jnp.ndarray
    lo_col: jnp.ndarray
    hi_col: jnp.ndarray
    lo_val: jnp.ndarray
    hi_val: jnp.ndarray


def interval_map(n_max: int, data_points=DECIMA_DATA_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """decima-sim's `get_executor_interval_map` for n = 0..n_max: `(lo, hi)` i32[n_max + 1]."""
    dp = sorted(int(x) for x in data_points)
    lo, hi = np.empty(n_max + 1, np.int32), np.empty(n_max + 1, np.int32)
    for n in range(n_max + 1):
        if n <= dp[0]:
            lo[n] = hi[n] = dp[0]
        elif n >= dp[-1]:
            lo[n] = hi[n] = dp[-1]
        elif n in dp:
            lo[n] = hi[n] = n
        else:
            i = max(i for i, x in enumerate(dp) if x < n)
            lo[n], hi[n] = dp[i], dp[i + 1]
    return lo, hi


def make_task_waves(
    waves, n_stages, fallback, *, n_executors: int, max_stages: int, data_points=DECIMA_DATA_POINTS
) -> TaskWaves:
    """Check a wave table (`values`, `count`, `present`, `keys` as `workloads.tpch.WaveTable`) against the
    bank's templates (`n_stages` i32[T], `fallback` i32[T, S'] their task durations) and build `TaskWaves`.
    Errors name the field."""
    values, count = np.asarray(waves.values), np.asarray(waves.count)
    present, keys = np.asarray(waves.present, bool), np.asarray(waves.keys)
    n_stages, fallback = np.asarray(n_stages), np.asarray(fallback)
    t, s = n_stages.shape[0], values.shape[1] if values.ndim == 5 else -1
    if values.ndim != 5 or values.shape[3] != 3 or values.shape[:3] != present.shape:
        raise ValueError(f"waves.values: shape {values.shape}, need [T, S, K, 3, D] matching present")
    if count.shape != values.shape[:4]:
        raise ValueError(f"waves.count: shape {count.shape}, need {values.shape[:4]}")
    if values.shape[0] != t:
        raise ValueError(f"waves: {values.shape[0]} templates, the bank has {t} (same order needed)")
    if s > max_stages:
        raise ValueError(f"waves: {s} stages, wider than dag.max_stages = {max_stages}")
    if np.any(count < 0) or np.any(count > values.shape[4]) or np.any(values < 0):
        raise ValueError("waves.count / waves.values: negative, or a count beyond the padded width")
    col_of = {int(k): i for i, k in enumerate(keys)}
    missing = [p for p in data_points if int(p) not in col_of]
    if missing:
        raise ValueError(f"waves.keys: lacks the data point {missing[0]} (keys {keys.tolist()})")
    for i in range(t):
        for st in range(int(n_stages[i])):
            if st >= s or not present[i, st].any():
                raise ValueError(f"waves.present: template {i} stage {st} has no first-wave key")
    pad = ((0, 0), (0, max_stages - s))
    values = np.pad(values, pad + ((0, 0),) * 3)
    count, present = np.pad(count, pad + ((0, 0),) * 2), np.pad(present, pad + ((0, 0),))
    # the largest present key per stage (a stage without keys, padding, keeps column 0: never read)
    order = np.argsort(keys)
    by_key = present[..., order]
    last = by_key.shape[-1] - 1 - np.argmax(by_key[..., ::-1], axis=-1)
    largest = order[last].astype(np.int32)
    fb = np.zeros((t, max_stages), np.int32)
    fb[:, : fallback.shape[1]] = np.maximum(fallback, 1)
    lo, hi = interval_map(n_executors, data_points)
    return TaskWaves(
        values=jnp.asarray(values, jnp.int32),
        count=jnp.asarray(count, jnp.int32),
        present=jnp.asarray(present),
        largest=jnp.asarray(largest),
        fallback=jnp.asarray(fb),
        lo_col=jnp.asarray([col_of[int(x)] for x in lo], jnp.int32),
        hi_col=jnp.asarray([col_of[int(x)] for x in hi], jnp.int32),
        lo_val=jnp.asarray(lo),
        hi_val=jnp.asarray(hi),
    )


def task_hash(seed, job, stage, task, salt) -> jnp.ndarray:
    """`u32`: the counter-based draw of (seed, job, stage, task index, salt) (broadcasts)."""
    h = jnp.asarray(seed, jnp.uint32)
    for v in (job, stage, task, salt):
        h = lowbias32(h ^ jnp.asarray(v).astype(jnp.uint32))
    return h


def sample_durations(
    waves: TaskWaves, seed, tmpl, job, stage, task, n_bound, fresh, same_stage, warmup_delay
) -> jnp.ndarray:
    """`i32[...]`: the duration (ms, >= 1) of each task started: template `tmpl`, episode job `job`, stage
    `stage`, task index `task` (all i32[...]), with `n_bound` executors bound to the job, on an executor
    `fresh` to the job or whose last task was this stage (`same_stage`) (bool[...]); module docstring."""
    n = jnp.clip(n_bound, 0, waves.lo_col.shape[0] - 1)
    lo, hi = waves.lo_val[n], waves.hi_val[n]
    span = jnp.maximum(hi - lo, 1).astype(jnp.uint32)
    rand_pt = (task_hash(seed, job, stage, task, 0) % span).astype(jnp.int32) + 1
    col = jnp.where(rand_pt <= n - lo, waves.lo_col[n], waves.hi_col[n])
    col = jnp.where(waves.present[tmpl, stage, col], col, waves.largest[tmpl, stage])
    cnt = waves.count[tmpl, stage, col]  # [..., 3]
    c_first, c_rest, c_fresh = cnt[..., FIRST], cnt[..., REST], cnt[..., FRESH]
    kind = jnp.where(
        fresh,
        jnp.where(c_fresh > 0, FRESH, FIRST),
        jnp.where(same_stage & (c_rest > 0), REST, jnp.where(c_first > 0, FIRST, FRESH)),
    )
    size = jnp.take_along_axis(cnt, kind[..., None], axis=-1)[..., 0]
    idx = (task_hash(seed, job, stage, task, 1) % jnp.maximum(size, 1).astype(jnp.uint32)).astype(jnp.int32)
    value = waves.values[tmpl, stage, col, kind, idx]
    value = jnp.where(size > 0, value, waves.fallback[tmpl, stage])
    warm = fresh & (kind == FIRST)  # decima: a fresh executor without fresh samples adds the warm-up
    return jnp.maximum(value + jnp.where(warm, warmup_delay, 0), 1)
