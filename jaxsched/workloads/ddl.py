"""Distributed deep-learning (DDL) jobs for the GPU-cloud simulator: the `DDLWorkload` pytree, its
validation against a cluster, episode helpers, and an Alibaba-PAI-like generator in JAX.

Units (docs/gpu_cloud.md): GPU in 1/100 GPU, CPU in 1/100 core, memory in MiB (all int32); `submit` in
int32 seconds; `work` in float32 seconds of training at nominal speed. Every calibration constant below
is recomputed by `scripts/calibrate_gpu_cloud.py` from `shared/data/gpu/` (never needed at run time);
docs/gpu_cloud_defaults.md tabulates them with their sources.

The generator (`generate_pai_like`), per job, independently:
  * size: `(n_inst, GPUs per instance)` from `PAILikeConfig.size_table` (default `SIZE_TABLE`: half the
    jobs use 1 GPU, 74 % at most 4, 5 % use 64 GPUs, the Small cluster's total);
  * CPU per instance: GPUs x U(4, 12) cores, memory: GPUs x U(16, 48) GB, floored to integer units and
    capped at one machine (with the defaults an instance never needs more than its GPU share of a V100
    machine, so every job fits an empty 8-machine cluster);
  * work: log-normal fitted to Philly run times, clipped to [60 s, 7 days];
  * model type from `MODEL_WEIGHTS`;
  * submission: a non-homogeneous Poisson process whose rate follows the 24-hour `DIURNAL_PROFILE`,
    mean inter-arrival `mean_interarrival_s` (default: offered load 0.9 on 64 GPUs).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.workloads.base import _check_integral

__all__ = [
    "DIURNAL_PROFILE",
    "FLUCT_STD",
    "MODEL_COMM",
    "MODEL_NAMES",
    "MODEL_WEIGHTS",
    "PERF_CV",
    "SIZE_TABLE",
    "V100_MACHINE",
    "CLUSTER_SIZES",
    "WORK_LOG_MU",
    "WORK_LOG_SIGMA",
    "DDLWorkload",
    "PAILikeConfig",
    "drop_too_large",
    "episode_starts",
    "fits_empty_cluster",
    "generate_pai_like",
    "make_ddl_workload",
    "scale_load",
    "tilted_sizes",
    "train_test_split",
    "validate_ddl_workload",
]

# ---- calibration constants (values pasted from `python scripts/calibrate_gpu_cloud.py`) ----------------

#: The 8 model types of DL2's measured speeds (`dl2_config_speed.txt`), then "unknown" (index 8).
MODEL_NAMES: tuple[str, ...] = (
    "resnet-50",
    "vgg-16",
    "resnext-110",
    "inception-bn",
    "seq2seq",
    "cnn-text-classification",
    "dssm",
    "wlm",
    "unknown",
)
UNKNOWN_MODEL = len(MODEL_NAMES) - 1

#: Communication intensity per model in [0, 1]: 1 - scaling efficiency of DL2's dist_sync training from
#: 1 to 11 workers with as many parameter servers as workers (DL2's own "no PS" convention,
#: `speed_func(w, w)`), i.e. `1 - S(11, 11) / (11 * S(1, 1))`, S = summed per-worker speed.
#: 11 is the largest worker count measured with ps = workers for every model. "unknown" = the mean.
MODEL_COMM: tuple[float, ...] = (0.7975, 0.8940, 0.9394, 0.8880, 0.9127, 0.8734, 0.7980, 0.8853, 0.8735)

#: The generator's model mix: uniform over the 8 DL2 models (PAI's trace has no model column; the group
#: tag table's `workload` is too sparse to fit a mix), never "unknown".
MODEL_WEIGHTS: tuple[float, ...] = (0.125,) * 8 + (0.0,)

#: Machine heterogeneity: coefficient of variation, across the workers of one job, of each worker's mean
#: mini-batch time (PAI `mini-batch-time/job_{1..4}_norm.csv`; median over the 4 jobs: 0.041, 0.084,
#: 0.037, 0.658). Cross-check: the median per-job CV across workers of `coefficient_variation.csv`
#: (100 jobs) is 0.087, which also contains the over-time fluctuation (sqrt(0.0625^2 + 0.042^2) = 0.075).
PERF_CV: float = 0.0625

#: Fluctuation: the within-worker, over-time coefficient of variation of the mini-batch time (std / mean
#: of each worker's series; median over workers, then over the 4 jobs of `job_*_norm.csv`).
FLUCT_STD: float = 0.042

#: The most common V100 machine of `pai_machine_spec.csv`: 8 GPUs, 96 cores, 384 GB (135 V100M32 and 45
#: V100 machines; 59 V100 machines have 512 GB), in the env's units.
V100_MACHINE: dict = dict(gpu=800, cpu=9600, mem=384 * 1024)

#: Machines (of 8 V100 GPUs) per cluster size in the DAS paper (§5.1.3: Small / Medium / Large).
CLUSTER_SIZES: dict = {"small": 8, "medium": 16, "large": 32}

#: Log-normal of the work (s): mean and std of log run time over the Philly task run times in
#: [60 s, 7 days] (`philly_runtime.csv`, 75,226 of 83,154 tasks).
WORK_LOG_MU: float = 7.1478
WORK_LOG_SIGMA: float = 1.9664

#: Joint law of (instances, GPUs per instance, probability). Designed, not fitted (the PAI job tables are
#: not available): 1 GPU the most common (50 %), 74 % of jobs at most 4 GPUs (paper App. G: "most jobs ...
#: need no more than 4 GPUs"), 5 % above 32 GPUs (Fig. 4(a): "a certain proportion ... require more than
#: 32 GPUs"), at most 64 GPUs (the Small cluster). Totals: 1: .50, 2: .12, 4: .12, 8: .10, 16: .06,
#: 32: .05, 64: .05; mean 7.78 GPUs.
SIZE_TABLE: tuple[tuple[int, int, float], ...] = (
    (1, 1, 0.50),
    (1, 2, 0.07), (2, 1, 0.05),
    (1, 4, 0.06), (2, 2, 0.03), (4, 1, 0.03),
    (1, 8, 0.05), (2, 4, 0.02), (4, 2, 0.01), (8, 1, 0.02),
    (2, 8, 0.03), (4, 4, 0.01), (16, 1, 0.02),
    (4, 8, 0.03), (8, 4, 0.01), (16, 2, 0.01),
    (8, 8, 0.03), (16, 4, 0.02),
)  # fmt: skip

#: Relative submission rate per hour of day (mean 1). The paper's Fig. 4(b) plots submissions by hour but
#: gives no numbers: this profile is assumed -- quiet at night (2-7 h at 0.3-0.5), a morning ramp, busy
#: working hours (peaks 10-11 h and 14-16 h), a lunch dip and a busy evening.
DIURNAL_PROFILE: tuple[float, ...] = (
    0.80, 0.60, 0.45, 0.35, 0.30, 0.30, 0.35, 0.50,  # 0-7 h
    0.80, 1.15, 1.40, 1.45, 1.20, 1.25, 1.45, 1.50,  # 8-15 h
    1.50, 1.40, 1.20, 1.15, 1.25, 1.30, 1.20, 1.15,  # 16-23 h
)  # fmt: skip

#: Mean inter-arrival (s) giving offered load 0.9 on 64 GPUs: E[total GPUs x work] / (0.9 x 64), with
#: E[GPUs] = 7.78 (SIZE_TABLE) and E[work] = 8,244 s, the clipped log-normal's mean (independent).
MEAN_INTERARRIVAL_S: float = 1113.6

INT_FIELDS = ("job_id", "submit", "n_inst", "gpu", "cpu", "mem", "model")
FIELDS = (*INT_FIELDS, "work")
_INT32_MAX = int(np.iinfo(np.int32).max)


# ---- the pytree -----------------------------------------------------------------------------------------


@struct.dataclass
class DDLWorkload:
    """DDL jobs sorted by `submit`. Arrays `[J]`:
    job_id i32 (reporting only), submit i32 (s), n_inst i32 (instances C >= 1), gpu i32 (per instance,
    1/100 GPU, > 0), cpu i32 (per instance, 1/100 core), mem i32 (per instance, MiB), work f32 (s at
    nominal speed, > 0), model i32 (index into `MODEL_NAMES`). Static: `name`.
    """

    job_id: jnp.ndarray
    submit: jnp.ndarray
    n_inst: jnp.ndarray
    gpu: jnp.ndarray
    cpu: jnp.ndarray
    mem: jnp.ndarray
    work: jnp.ndarray
    model: jnp.ndarray
    name: str = struct.field(pytree_node=False, default="")

    @property
    def num_jobs(self) -> int:
        return int(self.submit.shape[-1])

    @property
    def total_gpus(self) -> jnp.ndarray:
        """`f32[J]` whole GPUs per job: `n_inst * gpu / 100`."""
        return (self.n_inst * self.gpu).astype(jnp.float32) / 100.0

    def slice(self, start: int, stop: int) -> DDLWorkload:
        """Jobs `[start, stop)` as a new workload (host-side helper, not for jitted code)."""
        return self.replace(**{f: getattr(self, f)[start:stop] for f in FIELDS})

    def select(self, mask) -> DDLWorkload:
        """The jobs where the host boolean `mask[J]` is true (order kept; host-side)."""
        mask = np.asarray(mask, dtype=bool)
        return self.replace(**{f: jnp.asarray(np.asarray(getattr(self, f))[mask]) for f in FIELDS})


def make_ddl_workload(
    *,
    submit,
    n_inst,
    gpu,
    cpu,
    mem,
    work,
    model=None,
    job_id=None,
    name: str = "",
    validate: bool = True,
) -> DDLWorkload:
    """Build a `DDLWorkload` from array-likes `[J]` (converted to i32/f32; integer fields must hold whole
    numbers). `model` defaults to "unknown", `job_id` to 0..J-1. Validated unless `validate=False`."""
    submit = np.asarray(submit)
    if submit.ndim != 1:
        raise ValueError(f"workload field 'submit' must be 1-D [J], got shape {submit.shape}")
    n = submit.shape[0]
    cols = {
        "job_id": np.arange(n) if job_id is None else np.asarray(job_id),
        "submit": submit,
        "n_inst": np.asarray(n_inst),
        "gpu": np.asarray(gpu),
        "cpu": np.asarray(cpu),
        "mem": np.asarray(mem),
        "model": np.full(n, UNKNOWN_MODEL) if model is None else np.asarray(model),
        "work": np.asarray(work),
    }
    for field, col in cols.items():
        if col.shape != (n,):
            raise ValueError(f"workload field '{field}' has shape {col.shape}, expected ({n},) like 'submit'")
        if field == "work":
            if col.dtype.kind not in "iuf":
                raise ValueError(f"workload field 'work' has non-numeric dtype {col.dtype}")
        else:
            _check_integral(field, col)
    w = DDLWorkload(
        **{f: jnp.asarray(cols[f], dtype=jnp.int32) for f in INT_FIELDS},
        work=jnp.asarray(cols["work"], dtype=jnp.float32),
        name=name,
    )
    if validate:
        validate_ddl_workload(w)
    return w


# ---- validation against a cluster ------------------------------------------------------------------------


def _job(w: DDLWorkload, i: int) -> str:
    return f"job {i} (job_id {int(np.asarray(w.job_id)[i])})"


def _caps(gpu_cap, cpu_cap, mem_cap) -> dict[str, np.ndarray | None]:
    """Capacities as int64 `[M]` arrays (ints = one machine); None leaves that resource unconstrained."""
    caps = {"gpu": gpu_cap, "cpu": cpu_cap, "mem": mem_cap}
    given = {k: np.atleast_1d(np.asarray(v)) for k, v in caps.items() if v is not None}
    if not given:
        raise ValueError("give at least one of gpu_cap, cpu_cap, mem_cap")
    m = max(v.shape[0] for v in given.values())
    out: dict[str, np.ndarray | None] = {k: None for k in caps}
    for k, v in given.items():
        if v.ndim != 1 or v.shape[0] not in (1, m):
            raise ValueError(
                f"{k}_cap must be an int or an [M] array like the other caps, got shape {v.shape}"
            )
        _check_integral(f"{k}_cap", v)
        if (v < 0).any():
            raise ValueError(f"{k}_cap must be >= 0, got {v}")
        out[k] = np.broadcast_to(v.astype(np.int64), (m,))
    return out


def _instances_fit(w: DDLWorkload, caps: dict[str, np.ndarray | None]) -> np.ndarray:
    """`i64[J]`: instances of each job an EMPTY cluster holds, Σ_m min_r ⌊cap[r, m] / demand_r⌋ (a zero
    demand does not constrain), capped at `n_inst` (no overflow). One pass per machine: memory O(J)."""
    n_inst = np.asarray(w.n_inst).astype(np.int64)
    demand = {r: np.asarray(getattr(w, r)).astype(np.int64) for r in caps}
    m = next(c.shape[0] for c in caps.values() if c is not None)
    total = np.zeros_like(n_inst)
    for k in range(m):
        fit = n_inst.copy()
        for r, cap in caps.items():
            if cap is None:
                continue
            d = demand[r]
            fit = np.minimum(fit, np.where(d > 0, cap[k] // np.maximum(d, 1), n_inst))
        total = np.minimum(total + np.maximum(fit, 0), n_inst)
    return total


def fits_empty_cluster(w: DDLWorkload, gpu_cap, cpu_cap, mem_cap) -> np.ndarray:
    """`bool[J]` (host): job j's `n_inst` instances fit on the EMPTY cluster (caps: `[M]` arrays or ints)."""
    caps = _caps(gpu_cap, cpu_cap, mem_cap)
    return _instances_fit(w, caps) >= np.asarray(w.n_inst)


def drop_too_large(w: DDLWorkload, gpu_cap, cpu_cap, mem_cap) -> tuple[DDLWorkload, int]:
    """The jobs that fit the empty cluster (the paper prunes the others, §5.1.2) and how many were dropped.
    Host-side; `job_id`s are kept."""
    ok = fits_empty_cluster(w, gpu_cap, cpu_cap, mem_cap)
    return w.select(ok), int((~ok).sum())


_UNIT = {"gpu": (100, "GPUs"), "cpu": (100, "cores"), "mem": (1024, "GiB")}


def validate_ddl_workload(w: DDLWorkload, gpu_cap=None, cpu_cap=None, mem_cap=None) -> None:
    """Raise `ValueError` naming the field, job index and job_id of the first problem.

    Checks: equal shapes `[J]`, dtypes, submit sorted, n_inst >= 1, gpu > 0, cpu >= 0, mem >= 0, work
    finite and > 0, model in `[0, len(MODEL_NAMES))`. With machine capacities (`[M]` arrays or ints; a
    missing one is unconstrained): every instance resource fits some machine, and the whole job fits the
    empty cluster (Σ_m min_r ⌊cap / demand⌋ >= n_inst).
    """
    arrs = {f: np.asarray(getattr(w, f)) for f in FIELDS}
    n = arrs["submit"].shape
    for f, a in arrs.items():
        if a.ndim != 1 or a.shape != n:
            raise ValueError(f"workload field '{f}' has shape {a.shape}, expected {n} like 'submit'")
        want = np.float32 if f == "work" else np.int32
        if a.dtype != want:
            raise ValueError(f"workload field '{f}' has dtype {a.dtype}, expected {np.dtype(want).name}")
    work = arrs["work"]
    checks = [
        ("n_inst", arrs["n_inst"] < 1, "must be >= 1 instance"),
        ("gpu", arrs["gpu"] <= 0, "must be > 0 (1/100 GPU per instance)"),
        ("cpu", arrs["cpu"] < 0, "must be >= 0 (1/100 core per instance)"),
        ("mem", arrs["mem"] < 0, "must be >= 0 (MiB per instance)"),
        ("work", ~np.isfinite(work), "is not finite"),
        ("work", np.isfinite(work) & (work < 0), "is a negative duration; must be > 0 seconds"),
        ("work", work == 0, "must be > 0 seconds"),
        ("model", (arrs["model"] < 0) | (arrs["model"] >= len(MODEL_NAMES)),
         f"must be a model index in [0, {len(MODEL_NAMES)})"),
    ]  # fmt: skip
    for field, bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"workload field '{field}' {what}: {_job(w, i)} has {arrs[field][i]}")
    submit = arrs["submit"]
    if submit.size > 1:
        back = np.diff(submit) < 0
        if back.any():
            i = int(np.argmax(back)) + 1
            raise ValueError(
                f"workload field 'submit' is not sorted: {_job(w, i)} submits at {int(submit[i])} after "
                f"{int(submit[i - 1])}; sort the jobs by submit time first"
            )
    if gpu_cap is None and cpu_cap is None and mem_cap is None:
        return
    caps = _caps(gpu_cap, cpu_cap, mem_cap)
    for r, cap in caps.items():
        if cap is None:
            continue
        biggest = int(cap.max()) if cap.size else 0
        over = arrs[r] > biggest
        if over.any():
            i = int(np.argmax(over))
            scale, unit = _UNIT[r]
            raise ValueError(
                f"workload field '{r}': {_job(w, i)}: {r} per instance {int(arrs[r][i])} "
                f"({arrs[r][i] / scale:g} {unit}) exceeds the largest machine's {biggest}"
            )
    fit = _instances_fit(w, caps)
    short = fit < arrs["n_inst"]
    if short.any():
        i = int(np.argmax(short))
        raise ValueError(
            f"workload field 'n_inst': {_job(w, i)} needs {int(arrs['n_inst'][i])} instances of (gpu "
            f"{int(arrs['gpu'][i])}, cpu {int(arrs['cpu'][i])}, mem {int(arrs['mem'][i])}) but the empty "
            f"cluster holds only {int(fit[i])}; drop it (drop_too_large) or use a larger cluster"
        )


# ---- host-side helpers ---------------------------------------------------------------------------------


def scale_load(w: DDLWorkload, factor: float) -> DDLWorkload:
    """Multiply the arrival rate by `factor`: inter-arrival times / factor, relative to the first submit
    (floored to whole seconds, so order is kept). Host-side; the env's `load_scale` does the same."""
    factor = float(factor)
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"scale_load factor must be a finite number > 0, got {factor}")
    s = np.asarray(w.submit).astype(np.int64)
    if s.size == 0:
        return w
    new = s[0] + np.floor((s - s[0]) / factor).astype(np.int64)
    if new.max() > _INT32_MAX:
        raise ValueError(f"scale_load: factor {factor} stretches submit times past int32 seconds")
    return w.replace(submit=jnp.asarray(new, dtype=jnp.int32))


def train_test_split(w: DDLWorkload, train_frac: float = 0.8) -> tuple[DDLWorkload, DDLWorkload]:
    """First `floor(J * train_frac)` jobs by submission = train, the rest = test (paper §5.1.2, 8 : 2)."""
    if not (0.0 < train_frac < 1.0):
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac}")
    n = w.num_jobs
    k = int(math.floor(n * train_frac))
    if k == 0 or k == n:
        raise ValueError(f"train_test_split: {n} jobs with train_frac {train_frac} leave an empty part")
    return w.slice(0, k), w.slice(k, n)


def episode_starts(n_jobs: int, episode_jobs: int, stride: int = 1) -> np.ndarray:
    """`i32[S]`: every start `s` with `s + episode_jobs <= n_jobs`, `stride` apart (stride = episode_jobs:
    non-overlapping episodes; 1: every admissible start, the env's default)."""
    for name, v in (("n_jobs", n_jobs), ("episode_jobs", episode_jobs), ("stride", stride)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"episode_starts: {name} must be an int >= 1, got {v!r}")
    if n_jobs < episode_jobs:
        raise ValueError(f"episode_starts: {n_jobs} jobs cannot hold an episode of {episode_jobs} jobs")
    return np.arange(0, n_jobs - episode_jobs + 1, stride, dtype=np.int32)


# ---- the PAI-like generator ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PAILikeConfig:
    """Static configuration of `generate_pai_like` (hashable; defaults documented in the module doc).

    size_table:          ((n_inst, GPUs per instance, probability), ...); probabilities sum to 1
    cpu_per_gpu:         (lo, hi) cores per GPU, uniform; mem_per_gpu_gb: (lo, hi) GB per GPU, uniform
    machine_gpu/cpu/mem: one machine's capacity (env units): caps per-instance demands
    work_log_mu/sigma:   log-normal of the work (s), clipped to [work_min_s, work_max_s]
    work_gpu_exponent:   β: a job's work × (its GPUs)^β / E[GPUs^β] before the clip (0: independent of
                         size; > 0: large jobs run longer, paper App. G), the mean work unchanged
    model_weights:       probabilities over `MODEL_NAMES`
    mean_interarrival_s: mean gap between submissions (over whole days)
    interarrival_shape:  Weibull shape k of the gaps in the day's time-warped clock (1: Poisson; < 1:
                         burstier, the same mean)
    hourly_weights:      24 relative rates per hour of day (> 0; normalised to mean 1)
    start_hour:          hour of day at which the clock (time 0) starts
    """

    size_table: tuple[tuple[int, int, float], ...] = SIZE_TABLE
    cpu_per_gpu: tuple[float, float] = (4.0, 12.0)
    mem_per_gpu_gb: tuple[float, float] = (16.0, 48.0)
    machine_gpu: int = V100_MACHINE["gpu"]
    machine_cpu: int = V100_MACHINE["cpu"]
    machine_mem: int = V100_MACHINE["mem"]
    work_log_mu: float = WORK_LOG_MU
    work_log_sigma: float = WORK_LOG_SIGMA
    work_min_s: float = 60.0
    work_max_s: float = 7 * 86400.0
    work_gpu_exponent: float = 0.0
    model_weights: tuple[float, ...] = MODEL_WEIGHTS
    mean_interarrival_s: float = MEAN_INTERARRIVAL_S
    interarrival_shape: float = 1.0
    hourly_weights: tuple[float, ...] = DIURNAL_PROFILE
    start_hour: int = 0

    def __post_init__(self) -> None:
        def err(field: str, what: str) -> ValueError:
            return ValueError(f"PAILikeConfig.{field} {what}, got {getattr(self, field)!r}")

        def is_int(v) -> bool:
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        def finite(v) -> bool:
            return isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v)

        tab = self.size_table
        if not (isinstance(tab, tuple) and tab and all(isinstance(r, tuple) and len(r) == 3 for r in tab)):
            raise err("size_table", "must be a non-empty tuple of (n_inst, gpus_per_inst, prob) tuples")
        for c, g, p in tab:
            if not (is_int(c) and c >= 1 and is_int(g) and g >= 1):
                raise err("size_table", f"needs ints n_inst >= 1 and gpus_per_inst >= 1 (row {(c, g, p)})")
            if g * 100 > self.machine_gpu:
                raise err("size_table", f"row {(c, g, p)} asks more GPUs per instance than machine_gpu")
            if not (finite(p) and p >= 0):
                raise err("size_table", f"needs probabilities >= 0 (row {(c, g, p)})")
        if abs(sum(p for _, _, p in tab) - 1.0) > 1e-6:
            raise err("size_table", "probabilities must sum to 1")
        for f in ("cpu_per_gpu", "mem_per_gpu_gb"):
            v = getattr(self, f)
            if not (isinstance(v, tuple) and len(v) == 2 and all(finite(x) for x in v) and 0 <= v[0] <= v[1]):
                raise err(f, "must be a (lo, hi) tuple with 0 <= lo <= hi")
        for f in ("machine_gpu", "machine_cpu", "machine_mem"):
            if not (is_int(getattr(self, f)) and getattr(self, f) >= 1):
                raise err(f, "must be an int >= 1")
        if not finite(self.work_log_mu):
            raise err("work_log_mu", "must be finite")
        if not finite(self.work_gpu_exponent):
            raise err("work_gpu_exponent", "must be finite")
        for f in ("work_log_sigma", "work_min_s", "work_max_s", "mean_interarrival_s", "interarrival_shape"):
            v = getattr(self, f)
            if not (finite(v) and v > 0):
                raise err(f, "must be a finite number > 0")
        if self.work_max_s < self.work_min_s:
            raise err("work_max_s", f"must be >= work_min_s ({self.work_min_s})")
        mw = self.model_weights
        if not (
            isinstance(mw, tuple) and len(mw) == len(MODEL_NAMES) and all(finite(x) and x >= 0 for x in mw)
        ):
            raise err("model_weights", f"must be a tuple of {len(MODEL_NAMES)} probabilities >= 0")
        if abs(sum(mw) - 1.0) > 1e-6:
            raise err("model_weights", "must sum to 1")
        hw = self.hourly_weights
        if not (isinstance(hw, tuple) and len(hw) == 24 and all(finite(x) and x > 0 for x in hw)):
            raise err("hourly_weights", "must be a tuple of 24 finite rates > 0")
        if not (is_int(self.start_hour) and 0 <= self.start_hour <= 23):
            raise err("start_hour", "must be an int in [0, 23]")

    def replace(self, **changes) -> PAILikeConfig:
        return dataclasses.replace(self, **changes)

    @property
    def hourly_rate(self) -> np.ndarray:
        """`f64[24]` hourly weights normalised to mean 1."""
        hw = np.asarray(self.hourly_weights, dtype=np.float64)
        return hw / hw.mean()


def _arrival_times(key: jax.Array, n: int, cfg: PAILikeConfig) -> jnp.ndarray:
    """`i32[n]` submission times (s since midnight of day 0) of a renewal process (Poisson at
    `interarrival_shape` 1, Weibull gaps otherwise) with the hourly rate `w[h] / mean_interarrival_s`,
    started at `start_hour`. Vectorised inversion: mean-`mean_interarrival_s` gaps
    -> cumulative "weighted seconds" x (a day holds 86,400 of them since the weights average 1) -> day and
    the hour whose cumulative weight brackets the remainder -> linear within the hour. float32 clock:
    resolution ~ n * mean_interarrival * 6e-8 s (2 s at 20,000 jobs)."""
    w = cfg.hourly_rate
    cum_np = np.concatenate([[0.0], np.cumsum(w) * 3600.0])
    cum_np[-1] = 86400.0
    cum = jnp.asarray(cum_np, dtype=jnp.float32)
    wj = jnp.asarray(w, dtype=jnp.float32)
    gaps = jax.random.exponential(key, (n,), dtype=jnp.float32)
    if cfg.interarrival_shape != 1.0:  # Weibull(k) by inversion, scaled to mean 1
        k = cfg.interarrival_shape
        gaps = gaps ** jnp.float32(1.0 / k) / jnp.float32(math.gamma(1.0 + 1.0 / k))
    gaps = gaps * jnp.float32(cfg.mean_interarrival_s)
    x = jnp.cumsum(gaps) + jnp.float32(cum_np[cfg.start_hour])
    day = jnp.floor(x / 86400.0)
    rem = jnp.clip(x - day * 86400.0, 0.0, 86400.0)
    h = jnp.clip(jnp.searchsorted(cum[1:], rem, side="right"), 0, 23)
    t = day * 86400.0 + h.astype(jnp.float32) * 3600.0 + (rem - cum[h]) / wj[h]
    # float wobble at hour edges could step back by a fraction of a second: keep the order
    return jax.lax.cummax(jnp.floor(t).astype(jnp.int32))


SizeTable = tuple[tuple[int, int, float], ...]  # ((n_inst, GPUs per instance, probability), ...)


def tilted_sizes(table: SizeTable, tilt: float) -> SizeTable:
    """`table` with each row's probability × (its GPUs)^`tilt`, renormalised: > 0 makes large jobs more
    common, < 0 rarer; 0 returns `table` unchanged."""
    if not math.isfinite(tilt):
        raise ValueError(f"size_tilt must be finite, got {tilt}")
    if tilt == 0.0:
        return table
    w = [p * (c * g) ** tilt for c, g, p in table]
    total = sum(w)
    return tuple((c, g, wi / total) for (c, g, _), wi in zip(table, w, strict=True))


def pai_like_config(
    mean_interarrival_s: float | None = None,
    interarrival_shape: float = 1.0,
    work_scale: float = 1.0,
    work_gpu_exponent: float = 0.0,
    size_tilt: float = 0.0,
) -> PAILikeConfig:
    """The generator's defaults with the knobs a config or the front door sets: the mean gap (None: the
    default), the gaps' Weibull shape, a factor on the work's log-normal median, the size–duration
    exponent β and a tilt of the job-size mix towards large jobs (`tilted_sizes`; `PAILikeConfig`)."""
    if not work_scale > 0:
        raise ValueError(f"work_scale must be > 0, got {work_scale}")
    knobs = {"interarrival_shape": interarrival_shape, "work_gpu_exponent": work_gpu_exponent,
             "work_log_mu": WORK_LOG_MU + math.log(work_scale),
             "size_table": tilted_sizes(SIZE_TABLE, size_tilt)}  # fmt: skip
    if mean_interarrival_s is not None:
        knobs["mean_interarrival_s"] = mean_interarrival_s
    return PAILikeConfig(**knobs)


@partial(jax.jit, static_argnums=(1, 2))
def _generate(key: jax.Array, n_jobs: int, cfg: PAILikeConfig) -> DDLWorkload:
    k_size, k_cpu, k_mem, k_work, k_model, k_arr = jax.random.split(key, 6)
    tab = np.asarray(cfg.size_table, dtype=np.float64)  # [K, 3]
    probs = jnp.asarray(tab[:, 2] / tab[:, 2].sum(), dtype=jnp.float32)
    row = jax.random.choice(k_size, tab.shape[0], (n_jobs,), p=probs)
    n_inst = jnp.asarray(tab[:, 0], dtype=jnp.int32)[row]
    gpus = jnp.asarray(tab[:, 1], dtype=jnp.float32)[row]  # whole GPUs per instance

    def per_gpu(k, lo_hi, unit, cap):  # GPUs x U(lo, hi) x unit, floored, capped at one machine
        u = jax.random.uniform(k, (n_jobs,), jnp.float32, lo_hi[0], lo_hi[1])
        return jnp.minimum(jnp.floor(gpus * u * unit), cap).astype(jnp.int32)

    cpu = per_gpu(k_cpu, cfg.cpu_per_gpu, 100.0, cfg.machine_cpu)
    mem = per_gpu(k_mem, cfg.mem_per_gpu_gb, 1024.0, cfg.machine_mem)
    z = jax.random.normal(k_work, (n_jobs,), jnp.float32)
    work = jnp.exp(cfg.work_log_mu + cfg.work_log_sigma * z)
    if cfg.work_gpu_exponent != 0.0:  # size–duration correlation, normalised so the mean work stays
        total = tab[:, 0] * tab[:, 1]
        norm = float((tab[:, 2] / tab[:, 2].sum() * total**cfg.work_gpu_exponent).sum())
        factor = jnp.asarray(total**cfg.work_gpu_exponent / norm, jnp.float32)[row]
        work = work * factor
    work = jnp.clip(work, cfg.work_min_s, cfg.work_max_s)
    mw = np.asarray(cfg.model_weights, dtype=np.float64)
    model = jax.random.choice(k_model, len(MODEL_NAMES), (n_jobs,), p=jnp.asarray(mw / mw.sum(), jnp.float32))
    return DDLWorkload(
        job_id=jnp.arange(n_jobs, dtype=jnp.int32),
        submit=_arrival_times(k_arr, n_jobs, cfg),
        n_inst=n_inst,
        gpu=(gpus * 100.0).astype(jnp.int32),
        cpu=cpu,
        mem=mem,
        work=work.astype(jnp.float32),
        model=model.astype(jnp.int32),
        name=f"pai-like-{n_jobs}",
    )


def generate_pai_like(key: jax.Array, n_jobs: int = 20_000, cfg: PAILikeConfig | None = None) -> DDLWorkload:
    """`n_jobs` Alibaba-PAI-like DDL jobs (arrays `[n_jobs]`, sorted by submit, job_id 0..n-1).

    Jittable and vmappable over `key` (`n_jobs` and `cfg` are static: each pair compiles once). Submit
    times are seconds since midnight of day 0 (hour of day = `submit % 86400 // 3600`)."""
    cfg = PAILikeConfig() if cfg is None else cfg
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"generate_pai_like: n_jobs must be an int >= 1, got {n_jobs!r}")
    # A day holds 86,400 rate-weighted seconds whatever its hourly profile, so the last submission is at
    # most the gaps' sum plus two days (the start hour's offset and the last day's warp). The sum of n
    # gaps has mean n·m and standard deviation cv·m·√n (cv = 1 for Poisson, larger for bursty Weibull
    # gaps): eight standard deviations past the mean is the margin.
    k = cfg.interarrival_shape
    cv = math.sqrt(math.gamma(1.0 + 2.0 / k) / math.gamma(1.0 + 1.0 / k) ** 2 - 1.0)
    m = cfg.mean_interarrival_s
    span = n_jobs * m + 8.0 * cv * m * math.sqrt(n_jobs) + 2 * 86400.0
    if span > _INT32_MAX:
        raise ValueError(
            f"generate_pai_like: {n_jobs} jobs at mean inter-arrival {cfg.mean_interarrival_s} s may "
            "overflow int32 seconds; generate fewer jobs"
        )
    return _generate(key, int(n_jobs), cfg)
