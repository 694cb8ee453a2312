"""The Lublin–Feitelson '99 workload model of rigid parallel jobs, written in JAX.

Reference: U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", J. Parallel & Distributed Computing 63(11):1105–1122, 2003. The
algorithm and every constant follow the authors' C program `m_lublin99.c` (Parallel Workloads Archive),
and the constants agree with `shared/data/MANIFEST.md` ("Statistics a synthetic generator should match").

The model, per job class (batch, interactive, or the class-less "whole sample" fit):

* Size. One uniform `u` decides: `u <= serial_prob` -> 1 node; otherwise `par` is drawn from the
  two-stage uniform (with prob. `uprob` from U(ulow, umed), else U(umed, uhi)), and if
  `u <= serial_prob + pow2_prob` it is rounded, `par = round(par)`. Size = `round(2**par)`. Note the
  structure: `pow2_prob` is an *unconditional* probability, so among parallel jobs the share of explicitly
  rounded sizes is `pow2_prob / (1 - serial_prob)` (0.945 for batch), plus the unrounded sizes that happen to
  round to a power of two. `uhi = log2(n_nodes) - uhi_offset`, `umed = uhi - umed_offset`.
* Run time. `p = clip(pa * size + pb, 0, 1)`; `x` ~ Gamma(a1, b1) with prob. `p`, else Gamma(a2, b2)
  (shape, scale); the whole hyper-gamma draw is repeated while `x > 12` (`TOO_MUCH_TIME`, 2 days);
  run = `(unsigned long) exp(x)` (truncated to whole seconds, hence >= 1).
* Arrivals. A day is 48 half-hour buckets with weights `w[(i-1) % 48] = F(i+0.5) - F(i-0.5)` for
  `i = cyclic_day_start .. cyclic_day_start+47`, F the Gamma(anum, bnum) CDF, normalised to mean 1. Each
  job draws `g` ~ Gamma(aarr * arar, barr) (repeated while `g > 13`, `TOO_MUCH_ARRIVE_TIME`) and gets
  `exp(g) / 1800` "points"; time advances through the buckets, each bucket costing `w[b]` points for its
  1800 s, so a bucket with a large `w` absorbs many jobs' points and arrivals crowd there (in the long run a
  share `w[b] / 48` of the jobs arrive in bucket b). The long-run mean inter-arrival time is
  E[exp(g) | g <= 13] (a day costs exactly 48 points). The simulation clock starts at
  `start_hour` (C: `START` = 0, midnight).
* Classes. `interactive=False` (default): batch jobs only (queue 1). `interactive=True`: two independent
  arrival streams, batch and interactive; the next job is the one of the stream whose next arrival is earlier
  (ties go to interactive, as in C), labelled queue 1 (batch) / 0 (interactive) — the C program's
  `INCLUDE_JOBS_TYPE 1` and the SWF column-15 convention of `lublin_256_new2.swf`. `whole_sample=True`: the
  class-less parameter set (the C program's `INCLUDE_JOBS_TYPE 0`), all jobs labelled queue 0 as C does.
  **`shared/data/hpc/lublin_256.swf` was generated in this mode** (all column 15 = 0; serial share 0.249 vs
  the model's 0.244 whole-sample / 0.293 batch; mean log run time 5.68 vs 5.69 / 7.0 generated; median
  inter-arrival 116 s vs 116 s / ~150 s; mean inter-arrival 771 s vs the long-run 911 s / 3,517 s), with
  `uhi = 8`, `umed = 5.5` (256 nodes), not with the batch parameters.

Simplifications and deviations from `m_lublin99.c` (all deliberate, listed here):

1. Rejection loops ("draw again while too big") are unrolled to `rejection_tries` (default 4) candidate
   draws per job, keeping the first acceptable one; if all fail the value is clamped to the bound. The
   chance of a clamp is < 2e-9 per job with the default constants.
2. The bucket-by-bucket "pay points" loop is replaced by its closed form: the clock position is carried as
   (day, points since midnight) in one `lax.scan` over jobs, and mapped to seconds through the inverse of the
   cumulative bucket weights. In exact arithmetic this is the C algorithm (its `points`/`reminder` statics
   telescope); in float32 it keeps sub-second precision for any trace length. (The GridSim Java port resets
   `points`/`reminder` on every call; we follow C.)
3. Submit times are re-based so that job 0 submits at 0 (C's first job arrives one inter-arrival after
   `start_hour`). `generate_arrays` also returns `t0`, the seconds from midnight of day 0 to job 0, so the
   time of day of job i is `(t0 + submit[i]) % 86400`.
4. Random numbers come from `jax.random` (threefry) instead of `drand48` and Jain's sum-of-logs gamma
   generator: same distributions, different streams, so traces are not bit-identical to the C program's.
5. `load_scale` (not in the original) divides every inter-arrival time (multiplies the arrival rate) and
   keeps the daily cycle's shape. `daily_cycle=False` (not in the original) uses flat bucket weights; the
   mean inter-arrival is unchanged.
6. Sizes are clipped to `[1, n_nodes]` (as the GridSim port does; C needs no clip when `log2(n_nodes)` is
   an integer). `n_nodes` need not be a power of two.
7. Node-count constants follow the MANIFEST: batch `umed = uhi - 2.5` (the C file's batch default is
   `UMED 5` with `UHI 7`, i.e. offset 2.0 — set `umed_offset=2.0` for that). Interactive sizes keep C's
   shape relative to the machine: `uhi = log2(n_nodes) - 1.5`, `umed = uhi - 2.5`, which is C's (1, 3, 5.5)
   on its 128-node machine. (`lublin_256_new2.swf`'s interactive sizes look generated with `uhi_offset=0`.)
8. Whole seconds: C adds each inter-arrival to an `unsigned long` clock, truncating every gap, so its clock
   falls behind the bucket position by ~0.5 s per job and the daily cycle's phase drifts (by ~1.4 h over the
   10,000 jobs of lublin_256.swf, ~3 h over 20,000 batch jobs, flattening the time-of-day profile of long
   traces). We floor the exact arrival time instead (each gap still rounds by < 1 s, no drift);
   `truncate_gaps=True` reproduces C's clock.
9. Times are int32 seconds: a single trace or a bank must span < 68 years (`generate_bank` checks).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.workloads.base import Workload, make_workload

__all__ = [
    "BATCH",
    "BATCH_PARAMS",
    "INTERACTIVE",
    "INTERACTIVE_PARAMS",
    "WHOLE_SAMPLE_PARAMS",
    "LublinClassParams",
    "LublinConfig",
    "daily_cycle_weights",
    "generate",
    "generate_arrays",
    "generate_bank",
]

INTERACTIVE = 0  # SWF queue (column 15) label of interactive jobs, as m_lublin99.c prints it
BATCH = 1  # ... and of batch jobs

BUCKETS = 48  # half-hour buckets in a day
SECONDS_IN_BUCKET = 1800
SECONDS_IN_DAY = 86400


@dataclass(frozen=True)
class LublinClassParams:
    """One job class's model constants (names as in `m_lublin99.c`; gamma parameters are shape, scale).

    Node count: `serial_prob`, `pow2_prob` (unconditional, see module doc), `ulow`, `uprob`, and the machine
    relative `uhi_offset` (UHI = log2(n_nodes) - uhi_offset) and `umed_offset` (UMED = UHI - umed_offset).
    Run time: hyper-gamma `a1, b1, a2, b2` with first-gamma probability `pa * size + pb`.
    Arrivals: inter-arrival log-time Gamma(`aarr * arar`, `barr`); daily cycle Gamma(`anum`, `bnum`).
    """

    serial_prob: float
    pow2_prob: float
    ulow: float
    umed_offset: float
    uhi_offset: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float

    def validate(self, name: str) -> None:
        for f in ("serial_prob", "pow2_prob", "uprob"):
            v = getattr(self, f)
            if not (0.0 <= v <= 1.0):
                raise ValueError(f"LublinConfig.{name}.{f} must be a probability in [0, 1], got {v}")
        for f in ("a1", "b1", "a2", "b2", "aarr", "barr", "anum", "bnum", "arar"):
            v = getattr(self, f)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"LublinConfig.{name}.{f} must be a finite number > 0, got {v}")
        for f in ("ulow", "umed_offset", "uhi_offset", "pa", "pb"):
            v = getattr(self, f)
            if not math.isfinite(v):
                raise ValueError(f"LublinConfig.{name}.{f} must be finite, got {v}")
        if self.umed_offset < 0:
            raise ValueError(f"LublinConfig.{name}.umed_offset must be >= 0, got {self.umed_offset}")
        if self.uhi_offset < 0:
            raise ValueError(f"LublinConfig.{name}.uhi_offset must be >= 0, got {self.uhi_offset}")


#: Batch class (m_lublin99.c `*_BATCH`; MANIFEST): UMED = UHI - 2.5 per the MANIFEST / the C comments.
BATCH_PARAMS = LublinClassParams(
    serial_prob=0.2927, pow2_prob=0.6686, ulow=1.2, umed_offset=2.5, uhi_offset=0.0, uprob=0.875,
    a1=6.57, b1=0.823, a2=639.1, b2=0.0156, pa=-0.003, pb=0.6986,
    aarr=6.0415, barr=0.8531, anum=6.1271, bnum=5.2740, arar=1.0519,
)  # fmt: skip

#: Interactive class (m_lublin99.c `*_ACTIVE`; MANIFEST): (ULOW, UMED, UHI) = (1, 3, 5.5) on 128 nodes.
INTERACTIVE_PARAMS = LublinClassParams(
    serial_prob=0.1541, pow2_prob=0.625, ulow=1.0, umed_offset=2.5, uhi_offset=1.5, uprob=0.705,
    a1=3.8351, b1=0.6605, a2=7.073, b2=0.6856, pa=-0.0118, pb=0.9156,
    aarr=6.5510, barr=0.6621, anum=8.9186, bnum=3.6680, arar=0.9797,
)  # fmt: skip

#: Class-less "whole sample" fit (m_lublin99.c with INCLUDE_JOBS_TYPE 0): what lublin_256.swf was made with.
WHOLE_SAMPLE_PARAMS = LublinClassParams(
    serial_prob=0.244, pow2_prob=0.576, ulow=0.8, umed_offset=2.5, uhi_offset=0.0, uprob=0.86,
    a1=4.2, b1=0.94, a2=312.0, b2=0.03, pa=-0.0054, pb=0.78,
    aarr=10.2303, barr=0.4871, anum=8.1737, bnum=3.9631, arar=1.0225,
)  # fmt: skip


@dataclass(frozen=True)
class LublinConfig:
    """Static configuration of the generator (hashable: pass it as a static jit argument).

    n_nodes:          machine size; UHI = log2(n_nodes); sizes are clipped to [1, n_nodes]
    interactive:      include the interactive class (two merged arrival streams); batch only by default
    whole_sample:     use the class-less parameter set instead (all jobs queue 0) — lublin_256.swf's mode
    daily_cycle:      modulate arrivals by the 48-bucket daily cycle (False: flat weights)
    load_scale:       multiply the arrival rate (> 1: more load; an extension of the model)
    start_hour:       hour of day the clock starts at (C's START, 0)
    cyclic_day_start: C's CYCLIC_DAY_START (11)
    max_log_runtime / max_log_interarrival: C's TOO_MUCH_TIME (12) / TOO_MUCH_ARRIVE_TIME (13)
    rejection_tries:  candidate draws per job replacing C's unbounded rejection loops
    truncate_gaps:    truncate every gap on the integer clock as C does (drifting phase; see module doc, 8)
    batch / active / whole: the parameter sets (defaults: the C program's / the MANIFEST's constants)
    """

    n_nodes: int = 256
    interactive: bool = False
    whole_sample: bool = False
    daily_cycle: bool = True
    load_scale: float = 1.0
    start_hour: int = 0
    cyclic_day_start: int = 11
    max_log_runtime: float = 12.0
    max_log_interarrival: float = 13.0
    rejection_tries: int = 4
    truncate_gaps: bool = False
    batch: LublinClassParams = field(default=BATCH_PARAMS)
    active: LublinClassParams = field(default=INTERACTIVE_PARAMS)
    whole: LublinClassParams = field(default=WHOLE_SAMPLE_PARAMS)

    def __post_init__(self) -> None:
        if isinstance(self.n_nodes, bool) or not isinstance(self.n_nodes, (int, np.integer)):
            raise ValueError(f"LublinConfig.n_nodes must be an int, got {self.n_nodes!r}")
        if self.n_nodes < 2:
            raise ValueError(f"LublinConfig.n_nodes must be >= 2, got {self.n_nodes}")
        if self.interactive and self.whole_sample:
            raise ValueError(
                "LublinConfig.whole_sample is the class-less parameter set; it cannot be combined with "
                "interactive=True (which mixes the batch and interactive classes)"
            )
        if not (isinstance(self.load_scale, (int, float)) and math.isfinite(self.load_scale)):
            raise ValueError(f"LublinConfig.load_scale must be a finite number > 0, got {self.load_scale!r}")
        if self.load_scale <= 0:
            raise ValueError(f"LublinConfig.load_scale must be > 0, got {self.load_scale}")
        if not (isinstance(self.start_hour, (int, np.integer)) and 0 <= self.start_hour <= 23):
            raise ValueError(f"LublinConfig.start_hour must be an int in [0, 23], got {self.start_hour!r}")
        if not (isinstance(self.cyclic_day_start, (int, np.integer)) and self.cyclic_day_start >= 1):
            raise ValueError(
                f"LublinConfig.cyclic_day_start must be an int >= 1, got {self.cyclic_day_start!r}"
            )
        for f in ("max_log_runtime", "max_log_interarrival"):
            v = getattr(self, f)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"LublinConfig.{f} must be a finite number > 0, got {v}")
        if self.max_log_interarrival > 21.0:
            raise ValueError(
                f"LublinConfig.max_log_interarrival must be <= 21 (a gap of exp(21) s overflows int32), "
                f"got {self.max_log_interarrival}"
            )
        if not (isinstance(self.rejection_tries, (int, np.integer)) and self.rejection_tries >= 1):
            raise ValueError(
                f"LublinConfig.rejection_tries must be an int >= 1, got {self.rejection_tries!r}"
            )
        for name in ("batch", "active", "whole"):
            cp = getattr(self, name)
            if not isinstance(cp, LublinClassParams):
                raise ValueError(f"LublinConfig.{name} must be a LublinClassParams, got {type(cp).__name__}")
            cp.validate(name)
        used = ("whole",) if self.whole_sample else (("active", "batch") if self.interactive else ("batch",))
        for name in used:  # the node-count bounds only matter for the classes this config generates
            ulow, umed, uhi = self.uniform_bounds(getattr(self, name))
            if not ulow <= umed:
                raise ValueError(
                    f"LublinConfig.{name}.ulow ({ulow}) must be <= UMED = log2(n_nodes) - uhi_offset - "
                    f"umed_offset ({umed}); lower ulow or umed_offset, or use a larger n_nodes"
                )
            try:
                daily_cycle_weights(getattr(self, name), self)
            except ValueError as e:
                raise ValueError(f"LublinConfig.{name}.anum/bnum: {e}") from None

    @property
    def uhi(self) -> float:
        """log2(n_nodes): the machine's UHI."""
        return math.log2(self.n_nodes)

    def uniform_bounds(self, cp: LublinClassParams) -> tuple[float, float, float]:
        """(ULOW, UMED, UHI) of the two-stage uniform of class `cp` on this machine."""
        uhi = self.uhi - cp.uhi_offset
        return cp.ulow, uhi - cp.umed_offset, uhi

    def streams(self) -> tuple[tuple[LublinClassParams, int], ...]:
        """The arrival streams (parameter set, SWF queue label), ties going to the first (C: interactive)."""
        if self.whole_sample:
            return ((self.whole, INTERACTIVE),)
        if self.interactive:
            return ((self.active, INTERACTIVE), (self.batch, BATCH))
        return ((self.batch, BATCH),)

    def replace(self, **changes) -> LublinConfig:
        return dataclasses.replace(self, **changes)


@lru_cache(maxsize=64)
def _cycle_weights(anum: float, bnum: float, cyclic_day_start: int, daily_cycle: bool) -> np.ndarray:
    if not daily_cycle:
        w = np.ones(BUCKETS)
        w.flags.writeable = False
        return w
    from scipy.special import gammainc  # a JAX dependency; float64 here, at trace time

    i = np.arange(cyclic_day_start, cyclic_day_start + BUCKETS, dtype=np.float64)
    idx = (np.arange(cyclic_day_start, cyclic_day_start + BUCKETS) - 1) % BUCKETS
    w = np.empty(BUCKETS)
    w[idx] = gammainc(anum, (i + 0.5) / bnum) - gammainc(anum, (i - 0.5) / bnum)
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError(
            f"daily cycle Gamma(anum={anum}, bnum={bnum}) gives an empty half-hour bucket; adjust anum/bnum"
        )
    w = w / w.mean()
    w.flags.writeable = False  # cached: shared by every caller
    return w


def daily_cycle_weights(cp: LublinClassParams, config: LublinConfig) -> np.ndarray:
    """The 48 normalised bucket weights (mean 1) of class `cp`; bucket b covers [1800 b, 1800 (b+1)) s."""
    return _cycle_weights(
        float(cp.anum), float(cp.bnum), int(config.cyclic_day_start), bool(config.daily_cycle)
    )


def _truncated(cand: jnp.ndarray, limit: float) -> jnp.ndarray:
    """First candidate (axis 0) that is <= limit; the bound itself if none is (see simplification 1)."""
    ok = cand <= limit
    first = jnp.argmax(ok, axis=0)
    val = jnp.take_along_axis(cand, first[None], axis=0)[0]
    return jnp.where(ok.any(axis=0), val, jnp.float32(limit))


def _col(values) -> jnp.ndarray:
    """Per-stream constants as an f32[S, 1] column (broadcasts against [S, n] draws)."""
    return jnp.asarray(np.asarray(values, dtype=np.float32)[:, None])


def _arrival_clock(
    inc: jnp.ndarray, weights: np.ndarray, start_bucket: int, truncate_gaps: bool = False
) -> jnp.ndarray:
    """m_lublin99.c's `calc_next_arrive`, vectorised: the clock (int32 s since start) after each job.

    `inc` is `f32[S, n]` points per job (`exp(gam) / 1800`), `weights` the `[S, 48]` normalised bucket
    weights. The clock position is carried as (day, points since midnight) in one scan; the points are mapped
    to a time of day through the inverse of the cumulative weights (each bucket: `w[b]` points for 1800 s).
    The clock is the exact arrival time floored to whole seconds; with `truncate_gaps` each gap is truncated
    before it is added to an integer clock, as C's `unsigned long time_from_begin` does (that clock then lags
    the bucket position by ~0.5 s per job).
    """
    n_s = weights.shape[0]
    cum_np = np.concatenate([np.zeros((n_s, 1)), np.cumsum(weights, axis=1)], axis=1)
    cum_np = cum_np * (BUCKETS / cum_np[:, -1:])  # a day is exactly 48 points
    p0 = jnp.asarray(cum_np[:, start_bucket], dtype=jnp.float32)
    w = jnp.asarray(weights, dtype=jnp.float32)
    cum = jnp.asarray(cum_np, dtype=jnp.float32)
    day_pts = jnp.float32(BUCKETS)

    def step(carry, x):
        day, p = carry
        p = p + x
        d = jnp.floor(p / day_pts)
        p = jnp.clip(p - d * day_pts, 0.0, day_pts)
        day = day + d.astype(jnp.int32)
        return (day, p), (day, p)

    _, (days, pts) = jax.lax.scan(step, (jnp.zeros(n_s, jnp.int32), p0), inc.T)
    days = jnp.concatenate([jnp.zeros((1, n_s), jnp.int32), days], axis=0).T  # [S, n+1], column 0 = start
    pts = jnp.concatenate([p0[None], pts], axis=0).T

    def time_of_day(cum_s, w_s, p_s):  # seconds since midnight
        b = jnp.clip(jnp.searchsorted(cum_s[1:], p_s, side="left"), 0, BUCKETS - 1)
        return SECONDS_IN_BUCKET * (b.astype(jnp.float32) + (p_s - cum_s[b]) / w_s[b])

    tod = jax.vmap(time_of_day)(cum, w, pts)  # [S, n+1]
    if truncate_gaps:
        gap = jnp.diff(days, axis=1).astype(jnp.float32) * SECONDS_IN_DAY + jnp.diff(tod, axis=1)
        return jnp.cumsum(jnp.maximum(jnp.floor(gap), 0.0).astype(jnp.int32), axis=1)
    clock = (
        days[:, 1:] * SECONDS_IN_DAY
        + jnp.floor(tod[:, 1:]).astype(jnp.int32)
        - start_bucket * SECONDS_IN_BUCKET
    )
    return jax.lax.cummax(clock, axis=1)  # guard against float32 wobble at bucket edges


def _generate_arrays(key: jax.Array, config: LublinConfig, n_jobs: int) -> dict[str, jnp.ndarray]:
    """One trace as arrays (pure JAX; `config` and `n_jobs` static): see `generate_arrays`."""
    streams = config.streams()
    n_s = len(streams)
    cps = [cp for cp, _ in streams]
    tries = int(config.rejection_tries)
    shape = (n_s, n_jobs)
    k_u, k_stage, k_par, k_mix, k_gam = jax.random.split(key, 5)

    # ---- sizes: serial / power-of-two / two-stage uniform, per stream ----
    bounds = [config.uniform_bounds(cp) for cp in cps]
    u = jax.random.uniform(k_u, shape, dtype=jnp.float32)
    first = jax.random.uniform(k_stage, shape, dtype=jnp.float32) <= _col([cp.uprob for cp in cps])
    lo = jnp.where(first, _col([b[0] for b in bounds]), _col([b[1] for b in bounds]))
    hi = jnp.where(first, _col([b[1] for b in bounds]), _col([b[2] for b in bounds]))
    par = lo + jax.random.uniform(k_par, shape, dtype=jnp.float32) * (hi - lo)
    serial_p = _col([cp.serial_prob for cp in cps])
    par = jnp.where(u <= serial_p + _col([cp.pow2_prob for cp in cps]), jnp.floor(par + 0.5), par)
    size = jnp.floor(jnp.exp2(par) + 0.5)
    size = jnp.where(u <= serial_p, 1.0, jnp.clip(size, 1.0, float(config.n_nodes)))

    # ---- gamma draws, `tries` candidates each: log inter-arrival, and the size-dependent hyper-gamma of log
    # run time (the mixture component is redrawn with every candidate, as C redraws the whole hyper-gamma)
    p_first = jnp.clip(_col([cp.pa for cp in cps]) * size + _col([cp.pb for cp in cps]), 0.0, 1.0)
    use_first = jax.random.uniform(k_mix, (tries, *shape), dtype=jnp.float32) <= p_first
    alpha_run = jnp.where(use_first, _col([cp.a1 for cp in cps]), _col([cp.a2 for cp in cps]))
    beta_run = jnp.where(use_first, _col([cp.b1 for cp in cps]), _col([cp.b2 for cp in cps]))
    alpha_arr = jnp.broadcast_to(_col([cp.aarr * cp.arar for cp in cps]), (tries, *shape))
    gam = jax.random.gamma(k_gam, jnp.stack([alpha_arr, alpha_run]), dtype=jnp.float32)  # one sampler
    g_arr = _truncated(gam[0] * _col([cp.barr for cp in cps]), config.max_log_interarrival)  # [S, n]
    hg = _truncated(gam[1] * beta_run, config.max_log_runtime)
    run = jnp.maximum(jnp.floor(jnp.exp(hg)), 1.0).astype(jnp.int32)
    size = size.astype(jnp.int32)
    queue = jnp.broadcast_to(jnp.asarray([q for _, q in streams], jnp.int32)[:, None], shape)

    # ---- arrivals: points per job, one scan for the clock position (day, points since midnight) ----
    inc = jnp.exp(g_arr) / jnp.float32(SECONDS_IN_BUCKET * config.load_scale)
    w_np = np.stack([daily_cycle_weights(cp, config) for cp in cps])  # [S, 48], float64, mean 1
    clock = _arrival_clock(inc, w_np, config.start_hour * BUCKETS // 24, config.truncate_gaps)  # [S, n]

    # ---- merge the streams: the earlier next arrival goes first, ties to the earlier stream (C) ----
    if n_s == 1:
        t, run, size, queue = clock[0], run[0], size[0], queue[0]
    else:
        order = jnp.argsort(clock.reshape(-1), stable=True)[:n_jobs]
        t, run, size, queue = (a.reshape(-1)[order] for a in (clock, run, size, queue))
    t_first = t[0]
    t0 = (config.start_hour * 3600 + t_first).astype(jnp.int32)
    return {"submit": t - t_first, "run": run, "cores": size, "queue": queue, "t0": t0}


generate_arrays = jax.jit(_generate_arrays, static_argnums=(1, 2))
generate_arrays.__doc__ = """Jitted core: `generate_arrays(key, config, n_jobs)` -> dict of `i32[n]` arrays.

`submit` (seconds from job 0, non-decreasing), `run` (>= 1 s), `cores` (1..n_nodes), `queue` (1 batch, 0
interactive or whole sample), and the scalar `t0` (seconds from midnight of day 0 to job 0, so the time of day
of job i is `(t0 + submit[i]) % 86400`). `config` and `n_jobs` are static (each pair compiles once).
"""


def _check_n_jobs(n_jobs: int, what: str = "n_jobs") -> None:
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"{what} must be an int >= 1, got {n_jobs!r}")


def _workload(arrays: dict[str, jnp.ndarray], config: LublinConfig) -> Workload:
    kind = "whole" if config.whole_sample else ("mixed" if config.interactive else "batch")
    return make_workload(
        arrays["submit"],
        arrays["run"],
        arrays["cores"],
        queue=arrays["queue"],
        max_procs=config.n_nodes,
        max_nodes=config.n_nodes,
        name=f"lublin99-{kind}-{config.n_nodes}",
        validate=False,  # valid by construction (tests check it)
    )


def generate(key: jax.Array, config: LublinConfig | None = None, n_jobs: int = 10_000) -> Workload:
    """A Lublin–Feitelson '99 trace of `n_jobs` jobs as a `Workload` (req_time = run, user = -1)."""
    config = LublinConfig() if config is None else config
    _check_n_jobs(n_jobs)
    return _workload(generate_arrays(key, config, int(n_jobs)), config)


@partial(jax.jit, static_argnums=(1, 2, 3))
def _bank_arrays(key, config: LublinConfig, n_episodes: int, jobs_per_episode: int):
    keys = jax.random.split(key, n_episodes)
    out = jax.vmap(lambda k: _generate_arrays(k, config, jobs_per_episode))(keys)
    span = out["submit"][:, -1] + 1  # episode e starts 1 s after episode e-1's last submit
    offsets = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(span)[:-1]])
    overflow = jnp.any(offsets < 0) | jnp.any(span <= 0)
    if n_episodes > 1:
        overflow = overflow | (offsets[-1].astype(jnp.float32) + span[-1].astype(jnp.float32) > 2.0**31 - 1)
    flat = {f: out[f].reshape(-1) for f in ("run", "cores", "queue")}
    flat["submit"] = (out["submit"] + offsets[:, None]).reshape(-1)
    starts = jnp.arange(n_episodes, dtype=jnp.int32) * jobs_per_episode
    return flat, starts, starts + jobs_per_episode, overflow


def generate_bank(
    key: jax.Array, config: LublinConfig | None, n_episodes: int, jobs_per_episode: int
) -> tuple[Workload, jnp.ndarray, jnp.ndarray]:
    """`n_episodes` independent traces concatenated into one sorted `Workload`, plus `starts`, `ends`.

    Episode e is `generate(jax.random.split(key, n_episodes)[e], config, jobs_per_episode)` with its submit
    times shifted by a constant so that it starts 1 s after episode e-1's last submit; its jobs are
    `[starts[e], ends[e])` (both `i32[E]`). The arrays are made in one jitted `vmap`; the `Workload` is
    built on the host.
    """
    config = LublinConfig() if config is None else config
    _check_n_jobs(n_episodes, "n_episodes")
    _check_n_jobs(jobs_per_episode, "jobs_per_episode")
    if n_episodes * jobs_per_episode > np.iinfo(np.int32).max:
        raise ValueError(f"generate_bank: {n_episodes} x {jobs_per_episode} jobs overflow int32 indices")
    flat, starts, ends, overflow = _bank_arrays(key, config, int(n_episodes), int(jobs_per_episode))
    if bool(overflow):
        raise ValueError(
            "generate_bank: the concatenated submit times overflow int32 seconds (68 years); "
            "use fewer episodes, fewer jobs per episode or a higher load_scale"
        )
    return _workload(flat, config), starts, ends
