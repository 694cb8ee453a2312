"""Job DAGs and episodes for the idle-slot DAG env (Duan & Wu, shared/papers/004_*.txt, on Decima's task
model): the paper's synthetic long/short jobs, TPC-H-like random DAGs, arrival processes and the banks
(`DAGBank`) the env reads. Everything runs on the host with `numpy.random.default_rng(seed)`: the same
arguments give the same bank. Every episode is its own timeline from 0 ms.

Synthetic jobs (`synthetic_templates`; the paper's EXPERIMENT section). A job is long with probability
`long_fraction` (the paper gives no mix; 0.5 is our default), else short. Its *length*, the paper's
processing time on one executor, is Σ_s n_tasks[s] · duration[s]: long 50 s and short 10 s fixed, or
(Fig. 6) a long length ~ N(μ, μ/6) (`long_std_frac=1/6`) clipped below at `min_len_s` (1 s; the paper
says nothing on negative draws, which are 6 σ away). The paper gives no DAG shape; our choice: stages
uniform on 1..`max_stages`, each earlier stage a parent with probability 1/2, tasks per stage uniform on
1..`max_tasks`, stage shares of the length Dirichlet(1, ..., 1), task duration = round(share · length /
n_tasks) ms, at least 1. Rounding moves the total by at most Σ n_tasks <= n_stages · max_tasks ms.

TPC-H-like jobs (`tpch_like_templates`), an embedded stand-in for Decima's TPC-H DAGs (`tpch.py` loads the
real ones from a path; none ship). The tables live in `tpch_tables.py`, regenerated from the data by
`python scripts/tpch_stats.py --write`. Template i has input size `sizes[i % len(sizes)]`. Matched:
  * shape: a level profile (stages per level, the level of a stage being the edges on the longest path
    from a root to it) drawn uniformly from the 22 queries' profiles, the same at every size in the data.
    So the distributions of stage count (2-18, mean 9.2), depth (1-8, mean 4.9) and max width (1-8) are
    the real ones exactly in law. Edges are random given the profile: every stage of level l >= 1 takes
    one parent on level l - 1 (preferring, in random order, parents still without a child), then every
    stage still without a child takes one uniformly among the deeper stages; stage ids are shuffled. All
    real DAGs have one sink, as every profile ends in 1; ours too. The real DAGs have n - 1 + 0.32 edges on
    average (in-trees plus 7 extra edges over the 22 queries); ours are in-trees too, with n - 1 edges
    plus one per stage by which a level is wider than the one before (only q22's profile, 1, 1, 2, ...,
    has one): n - 1 + 0.05 on average.
  * per stage, by role (root: no parent; sink: no child; inner: the rest) and size: tasks from the real
    (value, count) table (exact in law); task duration by log-linear interpolation inside the real
    deciles (so within the real range); the two tied by a Gaussian copula whose parameter (`COPULA_R`) is
    calibrated so that the generated pairs have the real normal-score correlation (`RANK_CORR`: roots
    0.34-0.80, more tasks and longer tasks; inner stages -0.21 to -0.38; sinks about -0.8). A plain
    copula at the real value would give weaker correlations, the task counts being mostly ties.
Not matched: the dependence between the stages of one job. Stages are drawn independently given role
and size, while a real query is big or small as a whole (its scans read the same tables), so the total
work per job (Σ tasks · duration) has the real median at every size (within 7 % over 2,000 jobs per
size) but a wider spread: the 10th percentile is a third to a half of the real one, the 90th 1.4-1.8
times it, and a 2-stage job can be tiny (1-2 s, against 36 s for the smallest real job). `WORK_Q` holds
the real deciles; the tests check the medians. The edge count is matched only roughly (above).

Episodes. `poisson_arrivals`: exponential gaps, the exact cumulative time floored to ms (no drift from
rounding each gap), first job at 0 unless told otherwise. `decima_arrivals`: Decima's
`generate_tpch_jobs`, `n_init` jobs at 0 then `t += int(exponential(25 s))` per streamed job.
`gap_for_load`: the mean gap for an offered load, mean work / (executors · load).

Banks. `synthetic_bank`: one synthetic template per job, Poisson arrivals at the asked load (mean work
from the length mix, not the sample). `tpch_like_bank` / `tpch_bank`: Decima's streaming setting, a pool
of 22 x 7 TPC-H-like (or the real) templates, jobs drawn uniformly from it, 1 job at 0 then gaps of 25 s
(or the gap for `load` if given). `mixed_bank`: each job synthetic with probability `alpha`, else from the
TPC-H-like pool (or the real one with `tpch_npz`); Poisson arrivals at the load of the mixture.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr  # a JAX dependency

from jaxsched.workloads import tpch_tables as tab
from jaxsched.workloads.dag_bank import MAX_TIME_MS, DAGBank, DAGTemplates, make_bank
from jaxsched.workloads.tpch import load_tpch

__all__ = [
    "copula_draw",
    "synthetic_templates",
    "tpch_like_templates",
    "poisson_arrivals",
    "decima_arrivals",
    "gap_for_load",
    "synthetic_bank",
    "tpch_like_bank",
    "mixed_bank",
    "tpch_bank",
]

ROLES = ("root", "inner", "sink")


def _check_pos(name: str, v, integer: bool = False) -> None:
    ok = np.isfinite(v) and v > 0 and (not integer or int(v) == v)
    if not ok:
        raise ValueError(f"{name}: {v!r} (need a {'whole number' if integer else 'finite number'} > 0)")


def synthetic_templates(
    n: int,
    *,
    seed: int,
    long_len_s: float = 50.0,
    short_len_s: float = 10.0,
    long_fraction: float = 0.5,
    long_std_frac: float = 0.0,
    min_len_s: float = 1.0,
    max_stages: int = 5,
    max_tasks: int = 10,
) -> tuple[DAGTemplates, np.ndarray]:
    """`n` synthetic jobs and `is_long` bool[n] (module doc). Templates padded to `max_stages`."""
    for name, v in (("n", n), ("max_stages", max_stages), ("max_tasks", max_tasks)):
        _check_pos(name, v, integer=True)
    for name, v in (("long_len_s", long_len_s), ("short_len_s", short_len_s), ("min_len_s", min_len_s)):
        _check_pos(name, v)
    if not 0.0 <= long_fraction <= 1.0 or not 0.0 <= long_std_frac:
        raise ValueError(
            f"long_fraction {long_fraction} must be in [0, 1], long_std_frac {long_std_frac} >= 0"
        )
    rng = np.random.default_rng(seed)
    is_long = rng.random(n) < long_fraction
    long_len = long_len_s + long_std_frac * long_len_s * rng.standard_normal(n)
    length_ms = 1000.0 * np.where(is_long, np.maximum(long_len, min_len_s), short_len_s)
    dags = []
    for i in range(n):
        k = int(rng.integers(1, max_stages + 1))
        adj = np.triu(rng.random((k, k)) < 0.5, 1)
        tasks = rng.integers(1, max_tasks + 1, k)
        share = rng.dirichlet(np.ones(k))
        dur = np.maximum(1, np.rint(share * length_ms[i] / tasks))
        kind = "long" if is_long[i] else "short"
        dags.append({"name": f"synthetic-{kind}-{i}", "adj": adj, "n_tasks": tasks, "duration": dur})
    return DAGTemplates.from_lists(dags, max_stages), is_long


def _random_dag(rng: np.random.Generator, profile: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A DAG with exactly `profile[l]` stages on level l (module doc) and its stages' roles (0 root,
    1 inner, 2 sink)."""
    n = sum(profile)
    ids = rng.permutation(n)
    levels, at = [], 0
    for w in profile:
        levels.append(ids[at : at + w])
        at += w
    adj = np.zeros((n, n), bool)
    for lv in range(1, len(profile)):
        prev = levels[lv - 1]
        for c in rng.permutation(levels[lv]):
            free = [p for p in prev if not adj[p].any()]
            adj[rng.choice(free if free else prev), c] = True
        deeper = np.concatenate(levels[lv:])
        for p in prev:
            if not adj[p].any():
                adj[p, rng.choice(deeper)] = True
    root, sink = ~adj.any(axis=0), ~adj.any(axis=1)
    return adj, np.where(root, 0, np.where(sink, 2, 1))


def copula_draw(rng: np.random.Generator, pmf, deciles, r: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`k` (tasks, duration ms) pairs: tasks from the (value, count) table `pmf`, duration by log-linear
    interpolation inside the 11 `deciles`, tied by a Gaussian copula of correlation `r`."""
    z1 = rng.standard_normal(k)
    z2 = r * z1 + np.sqrt(1.0 - r * r) * rng.standard_normal(k)
    values, counts = np.array(pmf).T
    cdf = np.cumsum(counts) / counts.sum()
    tasks = values[np.minimum(np.searchsorted(cdf, ndtr(z1), side="right"), values.size - 1)]
    logq = np.log(np.asarray(deciles, np.float64))
    x = ndtr(z2) * (logq.size - 1)
    j = np.minimum(np.floor(x).astype(int), logq.size - 2)
    dur = np.exp(logq[j] + (x - j) * (logq[j + 1] - logq[j]))
    return tasks.astype(np.int64), np.maximum(1, np.rint(dur)).astype(np.int64)


def _draw_stages(rng: np.random.Generator, size: str, role: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    return copula_draw(
        rng, tab.TASKS_PMF[size][role], tab.DURATION_Q[size][role], tab.COPULA_R[size][role], k
    )


def tpch_like_templates(
    n: int, *, seed: int, sizes: tuple[str, ...] = tab.SIZES, max_stages: int | None = None
) -> DAGTemplates:
    """`n` TPC-H-like templates (module doc), template i at size `sizes[i % len(sizes)]`, named
    "tpch_like-{size}-{i}". `max_stages` pads; profiles with more stages are left out (the stage-count law
    is then the real one given <= max_stages). Default: the widest profile (18)."""
    _check_pos("n", n, integer=True)
    for s in sizes:
        if s not in tab.SIZES:
            raise ValueError(f"sizes: {s!r} is not one of {tab.SIZES}")
    profiles = [p for p in tab.LEVEL_PROFILES if max_stages is None or sum(p) <= max_stages]
    if not profiles:
        raise ValueError(f"max_stages: {max_stages} is below every TPC-H profile (the smallest has 2 stages)")
    rng = np.random.default_rng(seed)
    dags = []
    for i in range(n):
        size = sizes[i % len(sizes)]
        adj, role = _random_dag(rng, profiles[rng.integers(len(profiles))])
        tasks, dur = np.zeros(adj.shape[0], np.int64), np.zeros(adj.shape[0], np.int64)
        for r, name in enumerate(ROLES):
            m = role == r
            if m.any():
                tasks[m], dur[m] = _draw_stages(rng, size, name, int(m.sum()))
        dags.append({"name": f"tpch_like-{size}-{i}", "adj": adj, "n_tasks": tasks, "duration": dur})
    widest = max(sum(p) for p in profiles)
    return DAGTemplates.from_lists(dags, widest if max_stages is None else max_stages)


def _to_ms(t: np.ndarray) -> np.ndarray:
    if t.size and t.max() >= MAX_TIME_MS:
        raise ValueError(f"arrivals: an episode runs to {int(t.max())} ms, beyond 2**31 - 1 (fewer jobs?)")
    return t.astype(np.int32)


def poisson_arrivals(
    rng: np.random.Generator, n_episodes: int, n_jobs: int, mean_gap_ms: float, *, first_at_zero: bool = True
) -> np.ndarray:
    """i32[E, N] arrival times (ms): exponential gaps of mean `mean_gap_ms`, the cumulative exact time
    floored to ms. The first job arrives at 0, or after one gap when `first_at_zero` is False."""
    _check_pos("n_episodes", n_episodes, integer=True)
    _check_pos("n_jobs", n_jobs, integer=True)
    _check_pos("mean_gap_ms", mean_gap_ms)
    gaps = rng.exponential(mean_gap_ms, (n_episodes, n_jobs))
    if first_at_zero:
        gaps[:, 0] = 0.0
    return _to_ms(np.floor(np.cumsum(gaps, axis=1)))


def decima_arrivals(
    rng: np.random.Generator, n_episodes: int, n_init: int, n_stream: int, mean_gap_ms: float = 25000.0
) -> np.ndarray:
    """i32[E, n_init + n_stream] as Decima: `n_init` jobs at 0, then each streamed job after a gap of
    `int(exponential(mean_gap_ms))` ms."""
    _check_pos("n_episodes", n_episodes, integer=True)
    _check_pos("mean_gap_ms", mean_gap_ms)
    if n_init < 0 or n_stream < 0 or n_init + n_stream < 1:
        raise ValueError(f"n_init {n_init}, n_stream {n_stream}: need >= 0 each and >= 1 job in all")
    gaps = rng.exponential(mean_gap_ms, (n_episodes, n_stream)).astype(np.int64)  # int(): toward 0
    stream = np.cumsum(gaps, axis=1)
    return _to_ms(np.concatenate([np.zeros((n_episodes, n_init), np.int64), stream], axis=1))


def gap_for_load(mean_work_ms: float, n_executors: int, load: float) -> float:
    """The mean inter-arrival gap (ms) at which jobs of mean work `mean_work_ms` (Σ tasks · duration)
    offer `load` to `n_executors` executors: mean_work / (n_executors · load)."""
    _check_pos("mean_work_ms", mean_work_ms)
    _check_pos("n_executors", n_executors, integer=True)
    _check_pos("load", load)
    return float(mean_work_ms) / (n_executors * load)


def _work(tm: DAGTemplates) -> np.ndarray:
    return (tm.n_tasks.astype(np.float64) * tm.duration).sum(axis=1)


def synthetic_bank(
    n_episodes: int,
    n_jobs: int,
    *,
    seed: int,
    n_executors: int,
    load: float,
    long_len_s: float = 50.0,
    short_len_s: float = 10.0,
    long_fraction: float = 0.5,
    long_std_frac: float = 0.0,
    max_stages: int = 5,
    max_tasks: int = 10,
) -> DAGBank:
    """E episodes of N synthetic jobs (one template each), Poisson arrivals at `load`."""
    tm, _ = synthetic_templates(
        n_episodes * n_jobs,
        seed=seed,
        long_len_s=long_len_s,
        short_len_s=short_len_s,
        long_fraction=long_fraction,
        long_std_frac=long_std_frac,
        max_stages=max_stages,
        max_tasks=max_tasks,
    )
    mean = 1000.0 * (long_fraction * long_len_s + (1.0 - long_fraction) * short_len_s)
    rng = np.random.default_rng([seed, 1])
    arrival = poisson_arrivals(rng, n_episodes, n_jobs, gap_for_load(mean, n_executors, load))
    return make_bank(tm, np.arange(n_episodes * n_jobs).reshape(n_episodes, n_jobs), arrival)


def _streaming(
    tm: DAGTemplates,
    n_episodes: int,
    n_jobs: int,
    seed: int,
    n_init: int,
    mean_gap_ms: float,
    n_executors: int | None,
    load: float | None,
) -> DAGBank:
    rng = np.random.default_rng([seed, 1])
    template = rng.integers(0, tm.n_templates, (n_episodes, n_jobs))
    if load is not None:
        if n_executors is None:
            raise ValueError("load: needs n_executors too")
        mean_gap_ms = gap_for_load(_work(tm).mean(), n_executors, load)
    arrival = decima_arrivals(rng, n_episodes, min(n_init, n_jobs), n_jobs - min(n_init, n_jobs), mean_gap_ms)
    return make_bank(tm, template, arrival)


def tpch_like_bank(
    n_episodes: int,
    n_jobs: int,
    *,
    seed: int,
    n_init: int = 1,
    mean_gap_ms: float = 25000.0,
    sizes: tuple[str, ...] = tab.SIZES,
    max_stages: int | None = None,
    n_executors: int | None = None,
    load: float | None = None,
) -> DAGBank:
    """Decima's streaming over a pool of 22 · len(sizes) TPC-H-like templates (module doc)."""
    tm = tpch_like_templates(22 * len(sizes), seed=seed, sizes=sizes, max_stages=max_stages)
    return _streaming(tm, n_episodes, n_jobs, seed, n_init, mean_gap_ms, n_executors, load)


def tpch_bank(
    npz_path,
    n_episodes: int,
    n_jobs: int,
    *,
    seed: int,
    sizes=None,
    queries=None,
    max_stages: int | None = None,
    n_init: int = 1,
    mean_gap_ms: float = 25000.0,
    n_executors: int | None = None,
    load: float | None = None,
) -> DAGBank:
    """Decima's streaming over the real templates of a `convert_tpch` file (uniform over size x query)."""
    tm = load_tpch(npz_path, sizes=sizes, queries=queries, max_stages=max_stages)
    return _streaming(tm, n_episodes, n_jobs, seed, n_init, mean_gap_ms, n_executors, load)


def mixed_bank(
    n_episodes: int,
    n_jobs: int,
    *,
    seed: int,
    alpha: float,
    n_executors: int,
    load: float,
    tpch_npz=None,
    long_len_s: float = 50.0,
    short_len_s: float = 10.0,
    long_fraction: float = 0.5,
    long_std_frac: float = 0.0,
    max_stages: int | None = None,
) -> DAGBank:
    """Each job synthetic with probability `alpha`, else drawn uniformly from the TPC-H-like pool (22 x 7)
    or, with `tpch_npz`, the real templates; Poisson arrivals at `load` of the mixture's mean work.
    Templates: the TPC-H pool first, then one synthetic template per synthetic job."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: {alpha} (need a share in [0, 1])")
    if tpch_npz is None:
        pool = tpch_like_templates(22 * len(tab.SIZES), seed=seed, max_stages=max_stages)
    else:
        pool = load_tpch(tpch_npz, max_stages=max_stages)
    rng = np.random.default_rng([seed, 2])
    synth = rng.random((n_episodes, n_jobs)) < alpha
    n_syn = max(int(synth.sum()), 1)
    syn, _ = synthetic_templates(
        n_syn,
        seed=seed,
        long_len_s=long_len_s,
        short_len_s=short_len_s,
        long_fraction=long_fraction,
        long_std_frac=long_std_frac,
    )
    tm = pool.concat(syn)
    template = rng.integers(0, pool.n_templates, (n_episodes, n_jobs))
    template[synth] = pool.n_templates + np.arange(int(synth.sum()))
    syn_mean = 1000.0 * (long_fraction * long_len_s + (1.0 - long_fraction) * short_len_s)
    mean = alpha * syn_mean + (1.0 - alpha) * _work(pool).mean()
    arrival = poisson_arrivals(rng, n_episodes, n_jobs, gap_for_load(mean, n_executors, load))
    return make_bank(tm, template, arrival)
