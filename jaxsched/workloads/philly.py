"""A Philly-like DLT workload generator for SCED²'s GPU-locality cluster: banks of episodes of
`DLTWorkload` jobs (`generate_dlt_bank`).

SCED² (Luan et al., shared/papers/001_*.txt) trains on a production DLT trace it cannot publish: §II-B
and Fig. 3 give its GPU demands (68 % of the jobs use 1 GPU) and run times ("from several minutes to
hours"), §IV-A its categories (NLP 60 %, Speech 30 %, CV 10 %, replaced by the Table II models), its mean
arrival interval (172 s, not Poisson) and the data set: 30 episodes of 1000 jobs to train, another 30 to
test. Fig. 7 varies the 1-GPU share (60 %, 68 %, 75 %), Fig. 8 scales the arrival intervals.

Per job, independently (every draw from its own key):
  * GPUs: 1 with probability `single_gpu_share`, else a count drawn from `multi_gpu_mix`;
  * model: a category from `category_mix`, NLP -> transformer, Speech -> deepspeech, CV -> one of vgg16,
    inception3, resnet50, alexnet with equal weight (Table II; the paper gives no split inside CV);
  * run time (`duration`, T_ideal): inverse-CDF sampling of `RUNTIME_QUANTILES`, the Philly task run
    times, rounded to whole seconds and floored at `min_runtime`;
  * arrivals: a renewal process with Weibull gaps (below); job 0 of each episode submits at 0 and the
    clock is the exact arrival time floored to whole seconds (no drift from rounding each gap).

Open choices (none of them is in the paper):
  * `multi_gpu_mix` is designed, not fitted: Fig. 3a is not given in numbers. The default
    {2: .2, 4: .2, 8: .35, 16: .2, 32: .05} (mean 8.8 GPUs, 3.50 over all jobs) is a calibration choice to
    revisit, hence a parameter.
  * Run times: the paper's trace is not public; the Philly trace is the public production DLT trace
    nearest to it. Of its 83,154 task run times the 7,632 under 60 s (2 of them 0 s; mostly failed starts,
    and Fig. 3b starts at minutes) and the 296 over 7 days are left out: the window [60 s, 7 days] that
    `ddl.py`'s PAI-like generator clips its log-normal to. The table's quantiles are interpolated
    log-linearly (each of the 200 bins holds probability 1/200; a log scale suits run times spanning four
    decades). The kept run times: mean 11,416 s, median 1,478 s, p99 235,733 s. Run time is independent
    of GPU count and model.
  * Inter-arrival gaps are Weibull with shape `interarrival_shape` (k, default 0.5) and scale
    `mean * arrival_scale / Gamma(1 + 1/k)`, so the mean is exactly `mean_interarrival * arrival_scale` for
    every k. k < 1 gives a decreasing hazard: bursts of submissions separated by long lulls (coefficient
    of variation sqrt(Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1) = sqrt(5) = 2.24 at k = 0.5; median gap
    0.24 x the mean, against 0.69 for Poisson). Weibull rather than log-normal because k = 1 is exactly
    the Poisson process (a one-parameter ablation against DeepRM-style arrivals, which §V contrasts) and
    every moment stays finite, so sample means converge. k = 0.5 rounds the maximum-likelihood shape, 0.52,
    of the inter-arrival gaps of the GPU pods in `shared/data/gpu/alibaba_openb_v2023/` (the only GPU
    cluster arrival times we have; the paper's trace and Philly's arrival times are not available).
  * `arrival_scale` multiplies every gap (Fig. 8 "scales the arrival time intervals"): > 1 is a lighter
    load, < 1 a heavier one. (Lublin's `load_scale` divides instead.)
  * Offered load with the defaults: E[GPUs] x E[run time] / (120 GPUs x 172 s) = 3.50 x 11,416 / 20,640
    = 1.9, an overloaded cluster (the paper's baselines wait 19,075 s on average, §IV-C).

Episode e of a bank is jobs `[e * episode_jobs, (e + 1) * episode_jobs)`, its own timeline from 0 (sorted
inside; the env needs no more). Times are whole seconds held in float32 (`DLTWorkload`'s dtypes): an
episode must end before 2**24 s (194 days, e.g. 97,000 jobs at 172 s), past which float32 no longer holds
every whole second; `generate_dlt_bank` checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core.checks import at_least, in_unit_interval, positive
from jaxsched.workloads.dlt import DLT_MODELS, DLTWorkload

__all__ = [
    "CATEGORY_MODELS",
    "RUNTIME_QUANTILES",
    "PhillyConfig",
    "generate_dlt_bank",
    "runtime_from_uniform",
]

#: 201 quantiles (p = 0, 0.005, ..., 1) of the Philly task run times (s) in [60 s, 7 days]: 75,226 of the
#: 83,154 rows of `shared/data/gpu/alibaba_pai_v2020/philly_runtime.csv` (alibaba/clusterdata, CC BY 4.0),
#: numpy's default (linear) quantiles rounded to 0.1 s, pasted from `python scripts/philly_runtime_table.py`
#: (tests/test_philly_workloads.py recomputes them). The CSV is never read by the package.
RUNTIME_QUANTILES: tuple[float, ...] = (
    60.0, 60.0, 61.0, 62.0, 63.0, 63.0, 64.0, 64.0,
    65.0, 66.0, 66.0, 67.0, 67.0, 68.0, 69.0, 69.0,
    70.0, 70.0, 71.0, 72.0, 72.0, 73.0, 74.0, 75.0,
    76.0, 77.0, 79.0, 80.0, 83.0, 87.0, 92.0, 98.0,
    104.0, 112.0, 120.0, 131.0, 139.0, 148.0, 158.0, 167.0,
    175.0, 182.0, 189.0, 200.0, 208.0, 216.0, 228.0, 246.0,
    263.0, 277.0, 295.0, 309.0, 317.0, 328.0, 344.0, 359.0,
    388.0, 424.0, 455.0, 480.0, 504.0, 518.0, 536.0, 549.0,
    561.0, 575.0, 589.0, 606.0, 627.0, 646.0, 667.0, 689.0,
    712.0, 736.0, 761.0, 792.0, 821.0, 845.0, 869.0, 886.0,
    901.0, 920.0, 944.0, 969.0, 997.0, 1029.0, 1058.0, 1089.0,
    1120.0, 1151.1, 1180.0, 1204.0, 1236.0, 1273.0, 1304.0, 1342.0,
    1382.0, 1416.0, 1439.0, 1460.0, 1478.0, 1495.0, 1513.0, 1535.0,
    1557.0, 1583.0, 1615.0, 1651.0, 1703.0, 1749.0, 1794.0, 1832.0,
    1860.0, 1892.0, 1926.0, 1952.0, 1982.0, 2011.0, 2037.0, 2059.9,
    2088.0, 2120.0, 2160.0, 2212.0, 2281.0, 2325.0, 2369.8, 2405.0,
    2438.0, 2463.0, 2489.0, 2515.0, 2538.0, 2560.0, 2580.0, 2603.0,
    2630.0, 2655.0, 2683.0, 2714.0, 2746.0, 2780.0, 2828.8, 2912.0,
    3064.0, 3253.1, 3384.0, 3466.0, 3559.5, 3664.6, 3809.0, 3931.0,
    4009.0, 4072.0, 4187.2, 4385.4, 4548.0, 4843.6, 5045.0, 5192.0,
    5320.0, 5454.0, 5575.0, 5688.0, 5801.0, 5889.0, 5994.0, 6158.9,
    6426.0, 7051.0, 7888.5, 8349.8, 8798.5, 9106.0, 9511.2, 10313.8,
    10837.0, 11419.0, 12484.5, 13068.4, 13994.0, 15249.2, 16543.8, 18590.0,
    20572.0, 23162.9, 25652.8, 29484.4, 35556.5, 43875.8, 52183.2, 59638.4,
    69839.0, 84708.1, 98827.0, 122244.4, 153467.0, 184841.0, 235732.5, 349559.0,
    603739.0,
)  # fmt: skip

#: §IV-A's categories and the Table II models that stand in for them (CV's weight is split evenly).
CATEGORY_MODELS: dict[str, tuple[str, ...]] = {
    "nlp": ("transformer",),
    "speech": ("deepspeech",),
    "cv": ("vgg16", "inception3", "resnet50", "alexnet"),
}

_MAX_EXACT_F32 = 2**24  # float32 holds every whole number of seconds below this
_PREFIX = "PhillyConfig"
_NUMBER_FIELDS = (
    "single_gpu_share", "mean_interarrival", "interarrival_shape", "arrival_scale", "min_runtime",
    "runtime_scale",
)  # fmt: skip


def _is_real(v) -> bool:
    """A finite int or float (not a bool)."""
    real = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    return real and math.isfinite(v)


def _mix(value, field: str, key_ok, key_what: str) -> tuple:
    """A mapping or (key, weight) pairs -> a tuple of (key, float weight) pairs, checked: keys pass
    `key_ok` and do not repeat, weights are finite and >= 0 and sum to 1."""
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    try:
        pairs = [(k, w) for k, w in pairs]
    except (TypeError, ValueError):
        raise ValueError(f"{_PREFIX}.{field} must map {key_what} to weights, got {value!r}") from None
    if not pairs:
        raise ValueError(f"{_PREFIX}.{field} must not be empty")
    keys = [k for k, _ in pairs]
    for k, w in pairs:
        if not key_ok(k):
            raise ValueError(f"{_PREFIX}.{field}: keys must be {key_what}, got {k!r}")
        if not (_is_real(w) and w >= 0):
            raise ValueError(f"{_PREFIX}.{field}: weights must be finite and >= 0, got {w!r} for {k!r}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{_PREFIX}.{field}: a key repeats in {keys}")
    total = sum(float(w) for _, w in pairs)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{_PREFIX}.{field}: weights must sum to 1, got {total:g}")
    return tuple((k, float(w)) for k, w in pairs)


@dataclass(frozen=True)
class PhillyConfig:
    """Static configuration of `generate_dlt_bank` (hashable; choices documented in the module doc).

    single_gpu_share:    probability of a 1-GPU job (§II-B: 0.68; Fig. 7 also 0.60 and 0.75)
    multi_gpu_mix:       {GPU count >= 2: weight} among the multi-GPU jobs (a mapping or pairs; weights sum 1)
    mean_interarrival:   mean gap between submissions at `arrival_scale` 1, s (§IV-A: 172)
    interarrival_shape:  Weibull shape k of the gaps (0.5: bursty; 1: Poisson)
    arrival_scale:       factor on every gap (Fig. 8); the mean gap is `mean_interarrival * arrival_scale`
    category_mix:        {"nlp" | "speech" | "cv": weight} (§IV-A: .6, .3, .1; weights sum 1)
    min_runtime:         floor of the run times, whole seconds >= 1 (the table starts at 60 s)
    runtime_scale:       factor on every drawn run time (1: Philly's; SCED²'s "minutes to hours" jobs are
                         shorter: a calibration knob, `jaxsched calibrate`)
    max_runtime:         cap on the run times, s (None: Philly's tail, up to days)

    Mixes are stored as tuples of (key, weight) pairs, multi-GPU counts ascending and categories in
    `CATEGORY_MODELS` order (absent ones weigh 0), so equal mixes give equal, hashable configs.
    """

    single_gpu_share: float = 0.68
    multi_gpu_mix: tuple[tuple[int, float], ...] = ((2, 0.2), (4, 0.2), (8, 0.35), (16, 0.2), (32, 0.05))
    mean_interarrival: float = 172.0
    interarrival_shape: float = 0.5
    arrival_scale: float = 1.0
    category_mix: tuple[tuple[str, float], ...] = (("nlp", 0.6), ("speech", 0.3), ("cv", 0.1))
    min_runtime: float = 60.0
    runtime_scale: float = 1.0
    max_runtime: float | None = None

    def __post_init__(self) -> None:
        for f in _NUMBER_FIELDS:
            v = getattr(self, f)
            if not _is_real(v):
                raise ValueError(f"{_PREFIX}.{f} must be a finite number, got {v!r}")
        in_unit_interval(self, _PREFIX, ("single_gpu_share",))
        positive(self, _PREFIX, ("mean_interarrival", "interarrival_shape", "arrival_scale"))
        at_least(self, _PREFIX, ("min_runtime",), 1)
        positive(self, _PREFIX, ("runtime_scale",))
        if self.max_runtime is not None and not (
            _is_real(self.max_runtime) and self.max_runtime >= self.min_runtime
        ):
            raise ValueError(
                f"{_PREFIX}.max_runtime must be a number >= min_runtime or None, got {self.max_runtime!r}"
            )
        if self.min_runtime != int(self.min_runtime):
            raise ValueError(f"{_PREFIX}.min_runtime must be whole seconds, got {self.min_runtime}")

        def gpu_count(k) -> bool:
            return isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 2

        multi = _mix(self.multi_gpu_mix, "multi_gpu_mix", gpu_count, "GPU counts: ints >= 2")
        object.__setattr__(self, "multi_gpu_mix", tuple(sorted((int(k), w) for k, w in multi)))
        cats = dict(_mix(self.category_mix, "category_mix", lambda k: k in CATEGORY_MODELS,
                         f"categories, one of {', '.join(CATEGORY_MODELS)}"))  # fmt: skip
        object.__setattr__(self, "category_mix", tuple((c, cats.get(c, 0.0)) for c in CATEGORY_MODELS))

    def replace(self, **changes) -> PhillyConfig:
        return dataclasses.replace(self, **changes)

    @property
    def gpu_weights(self) -> tuple[tuple[int, float], ...]:
        """(GPU count, probability) over all jobs: 1-GPU first, then the multi-GPU mix."""
        s = self.single_gpu_share
        return ((1, s), *((g, (1.0 - s) * w) for g, w in self.multi_gpu_mix))

    @property
    def model_weights(self) -> tuple[float, ...]:
        """Probability of each of `DLT_MODELS`: a category's weight split evenly over its models."""
        w = [0.0] * len(DLT_MODELS)
        for cat, cw in self.category_mix:
            for m in CATEGORY_MODELS[cat]:
                w[DLT_MODELS.index(m)] += cw / len(CATEGORY_MODELS[cat])
        return tuple(w)

    @property
    def interarrival_scale(self) -> float:
        """The Weibull scale (s) whose mean is `mean_interarrival * arrival_scale`."""
        k = self.interarrival_shape
        return self.mean_interarrival * self.arrival_scale / math.gamma(1.0 + 1.0 / k)


def runtime_from_uniform(u: jnp.ndarray) -> jnp.ndarray:
    """Inverse CDF of `RUNTIME_QUANTILES` (f32 seconds, not rounded): `u` in [0, 1] falls in bin
    `i = floor(200 u)` and is interpolated log-linearly between quantiles i and i+1 (u = i / 200 gives
    quantile i exactly, up to float32)."""
    log_q = jnp.asarray(np.log(np.asarray(RUNTIME_QUANTILES)), jnp.float32)
    n_bins = len(RUNTIME_QUANTILES) - 1
    pos = jnp.clip(u, 0.0, 1.0) * n_bins
    i = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, n_bins - 1)
    frac = pos - i.astype(jnp.float32)
    return jnp.exp(log_q[i] + frac * (log_q[i + 1] - log_q[i]))


def _episode(key: jax.Array, config: PhillyConfig, n_jobs: int) -> dict[str, jnp.ndarray]:
    """One episode's arrays `[n_jobs]` (pure JAX; `config` and `n_jobs` static); submit i32 from 0."""
    k_gpu, k_model, k_run, k_gap = jax.random.split(key, 4)
    counts, probs = zip(*config.gpu_weights, strict=True)
    row = jax.random.choice(k_gpu, len(counts), (n_jobs,), p=jnp.asarray(probs, jnp.float32))
    gpus = jnp.asarray(counts, jnp.int32)[row]
    model = jax.random.choice(
        k_model, len(DLT_MODELS), (n_jobs,), p=jnp.asarray(config.model_weights, jnp.float32)
    ).astype(jnp.int32)
    run = runtime_from_uniform(jax.random.uniform(k_run, (n_jobs,), jnp.float32))
    if config.runtime_scale != 1.0:
        run = run * jnp.float32(config.runtime_scale)
    if config.max_runtime is not None:
        run = jnp.minimum(run, jnp.float32(config.max_runtime))
    duration = jnp.maximum(jnp.round(run), jnp.float32(config.min_runtime))
    # Weibull gaps by inversion: scale * E^(1/k), E ~ Exp(1); job 0 submits at 0, so n - 1 gaps
    expo = jax.random.exponential(k_gap, (n_jobs - 1,), jnp.float32)
    gaps = jnp.float32(config.interarrival_scale) * expo ** jnp.float32(1.0 / config.interarrival_shape)
    clock = jnp.concatenate([jnp.zeros(1, jnp.float32), jnp.cumsum(gaps)])
    submit = jax.lax.cummax(jnp.floor(clock).astype(jnp.int32))  # cumsum may wobble in float32
    return {"submit": submit, "gpus": gpus, "duration": duration, "model": model}


@partial(jax.jit, static_argnums=(1, 2, 3))
def _bank_arrays(key: jax.Array, config: PhillyConfig, episodes: int, episode_jobs: int):
    keys = jax.random.split(key, episodes)
    out = jax.vmap(lambda k: _episode(k, config, episode_jobs))(keys)  # each field [E, n]
    # Each episode is its own timeline from 0 (the GPU-locality env needs arrival order only inside an
    # episode), so a long bank never outgrows float32's whole seconds; one episode must stay under 2**24 s.
    too_long = jnp.any(out["submit"][:, -1].astype(jnp.float32) > _MAX_EXACT_F32)
    submit = out["submit"].reshape(-1)
    n = episodes * episode_jobs
    workload = DLTWorkload(
        job_id=jnp.arange(n, dtype=jnp.int32),
        submit=submit.astype(jnp.float32),
        gpus=out["gpus"].reshape(-1),
        duration=out["duration"].reshape(-1),
        model=out["model"].reshape(-1),
    )
    starts = jnp.arange(episodes, dtype=jnp.int32) * episode_jobs
    return workload, starts, starts + episode_jobs, too_long


def generate_dlt_bank(
    key: jax.Array, config: PhillyConfig | None, episodes: int, episode_jobs: int
) -> tuple[DLTWorkload, jnp.ndarray, jnp.ndarray]:
    """`episodes` independent Philly-like episodes of `episode_jobs` jobs in one `DLTWorkload`,
    plus `starts`, `ends` (`i32[E]`): episode e is jobs `[starts[e], ends[e])`.

    Episode e draws from `jax.random.split(key, episodes)[e]`; its submit times start at 0 (each
    episode is its own timeline, sorted; the bank as a whole is not). `job_id` is the bank index; submit
    and duration are float32 whole seconds, duration >= `min_runtime`. The arrays come from one jitted
    `vmap` (`config`, `episodes`, `episode_jobs` static: each triple compiles once). SCED²'s data sets:
    30 x 1000 to train, another key's 30 x 1000 to test.
    """
    config = PhillyConfig() if config is None else config
    if not isinstance(config, PhillyConfig):
        raise ValueError(f"generate_dlt_bank: config must be a PhillyConfig, got {type(config).__name__}")
    for name, v in (("episodes", episodes), ("episode_jobs", episode_jobs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"generate_dlt_bank: {name} must be an int >= 1, got {v!r}")
    if episodes * episode_jobs > np.iinfo(np.int32).max:
        raise ValueError(f"generate_dlt_bank: {episodes} x {episode_jobs} jobs overflow int32 indices")
    workload, starts, ends, too_long = _bank_arrays(key, config, int(episodes), int(episode_jobs))
    if bool(too_long):
        raise ValueError(
            "generate_dlt_bank: an episode's submit times pass 2**24 s (194 days), beyond which float32 "
            "does not hold every whole second; use fewer jobs per episode or a smaller arrival_scale"
        )
    return workload, starts, ends
