"""Static config, params and the locality model of SCED²'s GPU-locality cluster (`envs/gpu_locality/env.py`).

The locality model (the paper measures it but does not write it down, §II-A and Fig. 1):
  * A placement of g GPUs over s servers has locality *level* `min(s − ⌈g/M⌉, k − 1)`: 0 is the most
    concentrated placement the job can have (its best locality), each extra server one level more
    scattered, the k-th level (paper: k = 4) holding everything beyond.
  * The job then runs `ceil(T_ideal · slowdown[model, level])` seconds, with `slowdown[:, 0] = 1`.
  * Level 1 reproduces Fig. 1 (4 GPUs on two servers vs one): VGG16 5.9×, Transformer 2.7×,
    DeepSpeech 1.6×, Inception3 1.4×. The paper does not measure AlexNet or ResNet-50; we assume
    AlexNet 4.0× (its large fully connected layers make it communication-bound like VGG16) and
    ResNet-50 1.3× (compute-bound like Inception3). Each further server adds a quarter of the level-1
    overhead: `slowdown[m, l] = 1 + (r_m − 1)(1 + (l − 1)/4)` for l ≥ 1 (our assumption: the cross-server
    link is the bottleneck from the second server on, so more servers cost less than the first split).
  * The table is a params leaf (`f32[6, k]`), so a sweep over sensitivities `vmap`s.
  * A model is *sensitive* (Table III) when its level-1 slowdown is at least `sensitive_ratio` (2.0):
    VGG16, Transformer and AlexNet by default.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core.checks import at_least
from jaxsched.workloads.dlt import DLT_MODELS, DLTWorkload

# Level-1 slowdowns per model (DLT_MODELS order): Fig. 1 for four of them, assumptions for two.
LEVEL1_SLOWDOWN = {
    "transformer": 2.7,
    "deepspeech": 1.6,
    "vgg16": 5.9,
    "inception3": 1.4,
    "resnet50": 1.3,  # assumed (not in Fig. 1)
    "alexnet": 4.0,  # assumed (not in Fig. 1)
}


def default_slowdown(n_levels: int = 4) -> np.ndarray:
    """`f32[6, n_levels]`: the locality model's slowdown per model and level (module docstring)."""
    r = np.array([LEVEL1_SLOWDOWN[m] for m in DLT_MODELS], np.float64)[:, None]
    level = np.arange(n_levels, dtype=np.float64)[None, :]
    table = np.where(level == 0, 1.0, 1.0 + (r - 1.0) * (1.0 + (level - 1.0) / 4.0))
    return table.astype(np.float32)


def cluster_levels(n_servers: int, gpus_per_server: int) -> int:
    """How many locality levels a cluster can realise: 1 + the largest `min(g, N) − ⌈g/M⌉` over job
    widths g ≤ N·M (a 15 × 8 cluster: 14; two servers: 2)."""
    g = np.arange(1, n_servers * gpus_per_server + 1)
    return int(1 + np.max(np.minimum(g, n_servers) - -(-g // gpus_per_server)))


@dataclass(frozen=True)
class GPULocalityConfig:
    """Static shapes: N servers × M GPUs (paper 15 × 8), a window of the first J waiting jobs (paper 10),
    k profile / locality levels (paper 4). `auto_forward`: a state with no valid pick forwards by itself
    (the only action there is φ), so every decision the agent sees is a real choice. `work_conserving`:
    φ is also masked while some job fits, so no GPU idles while a window job could use it (an ablation:
    the paper's agent may hold GPUs back)."""

    n_servers: int = 15
    gpus_per_server: int = 8
    window: int = 10
    n_levels: int = 4
    auto_forward: bool = True
    work_conserving: bool = False

    def __post_init__(self):
        at_least(self, "GPULocalityConfig", ("n_servers", "gpus_per_server", "window", "n_levels"))
        levels = cluster_levels(self.n_servers, self.gpus_per_server)
        if self.n_levels > levels:
            raise ValueError(
                f"GPULocalityConfig.n_levels ({self.n_levels}) exceeds the {levels} locality level(s) a "
                f"{self.n_servers} × {self.gpus_per_server} cluster can realise"
            )

    @property
    def n_gpus(self) -> int:
        return self.n_servers * self.gpus_per_server


@struct.dataclass
class GPULocalityParams:
    """The job bank in whole seconds and the numeric knobs (vmappable). Episode s is bank jobs
    `[starts[s], ends[s])`, submit times non-decreasing inside it.

    The `cum_*` arrays (`[B+1]`, exclusive prefix sums) give the statistics of the jobs behind the window
    in O(1): those jobs are a contiguous arrival range. They are int32 and may wrap around; a difference
    of two of them is exact (two's complement) while the true range sum is below 2³¹."""

    submit: jnp.ndarray  # i32[B]
    gpus: jnp.ndarray  # i32[B]
    ideal: jnp.ndarray  # i32[B] T_ideal, >= 1
    model: jnp.ndarray  # i32[B] index into DLT_MODELS
    cum_submit: jnp.ndarray  # i32[B+1]
    cum_gpus: jnp.ndarray  # i32[B+1]
    cum_ideal: jnp.ndarray  # i32[B+1]
    starts: jnp.ndarray  # i32[S]
    ends: jnp.ndarray  # i32[S]
    slowdown: jnp.ndarray  # f32[6, k] actual / ideal time per model and locality level
    sensitive_ratio: jnp.ndarray  # f32: level-1 slowdown from which a model counts as sensitive
    time_scale: jnp.ndarray  # f32: seconds; times enter the observation as log1p(x / time_scale)
    max_steps: jnp.ndarray  # i32: truncation guard


def _wrapping_cumsum(x: np.ndarray) -> np.ndarray:
    """Exclusive prefix sum `[B+1]` reduced mod 2³² into int32 (see `GPULocalityParams`)."""
    c = np.concatenate([[0], np.cumsum(x.astype(np.int64))])
    return (c & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def whole_seconds(bank: DLTWorkload) -> tuple[np.ndarray, np.ndarray]:
    """`(submit, ideal)` as int32 whole seconds: submit rounded, T_ideal rounded and at least 1 s."""
    submit = np.rint(np.asarray(bank.submit, np.float64))
    ideal = np.maximum(np.rint(np.asarray(bank.duration, np.float64)), 1)
    if submit.size and (submit.max() >= 2**31 or ideal.max() >= 2**31):
        raise ValueError("bank: submit and duration must be below 2^31 seconds (int32 time)")
    return submit.astype(np.int32), ideal.astype(np.int32)


def make_params(
    config: GPULocalityConfig,
    bank: DLTWorkload,
    starts=None,
    ends=None,
    slowdown=None,
    sensitive_ratio: float = 2.0,
    time_scale: float = 3600.0,
    max_steps: int | None = None,
) -> GPULocalityParams:
    """Validated params over `bank` (`DLTWorkload`); without `starts`/`ends`, the whole bank is one episode.
    Every error is a one-line `ValueError` naming the field."""
    submit, ideal = whole_seconds(bank)
    gpus = np.asarray(bank.gpus, np.int64)
    model = np.asarray(bank.model, np.int64)
    n = gpus.shape[0]
    if n == 0:
        raise ValueError("bank: no jobs")
    wide = np.flatnonzero(gpus > config.n_gpus)
    if wide.size:
        j = int(wide[0])
        raise ValueError(
            f"bank.gpus: job {int(np.asarray(bank.job_id)[j])} asks for {int(gpus[j])} GPUs, more than the "
            f"cluster's {config.n_gpus} ({config.n_servers} × {config.gpus_per_server}); "
            f"{wide.size} job(s) are too wide (load_dlt_csv(..., drop_too_wide=True) drops them)"
        )
    if (gpus < 1).any():
        raise ValueError(f"bank.gpus must be >= 1, got {int(gpus.min())}")
    if ((model < 0) | (model >= len(DLT_MODELS))).any():
        raise ValueError(f"bank.model must index DLT_MODELS (0..{len(DLT_MODELS) - 1})")
    starts = np.zeros(1, np.int64) if starts is None else np.asarray(starts, np.int64)
    ends = np.full_like(starts, n) if ends is None else np.asarray(ends, np.int64)
    if starts.ndim != 1 or starts.size == 0 or ends.shape != starts.shape:
        raise ValueError("starts must be a non-empty 1-d array and ends must match its shape")
    if (starts < 0).any() or (ends > n).any() or (ends <= starts).any():
        raise ValueError(f"starts/ends: episode windows must satisfy 0 <= start < end <= {n}")
    for s, e in zip(starts, ends, strict=True):
        if (np.diff(submit[s:e]) < 0).any():
            raise ValueError(f"bank.submit must be non-decreasing inside each episode (jobs {s}..{e - 1})")
    table = default_slowdown(config.n_levels) if slowdown is None else np.asarray(slowdown, np.float32)
    if table.shape != (len(DLT_MODELS), config.n_levels):
        raise ValueError(
            f"slowdown must be [{len(DLT_MODELS)} models, {config.n_levels} levels], got {list(table.shape)}"
        )
    if not (np.isfinite(table).all() and (table[:, 0] == 1).all() and (table >= 1).all()):
        raise ValueError("slowdown must be finite, >= 1, and 1 at level 0 (the best locality)")
    if not time_scale > 0:
        raise ValueError(f"time_scale must be > 0, got {time_scale}")
    if max_steps is None:
        max_steps = 4 * int((ends - starts).max()) + 1000
    i32 = lambda x: jnp.asarray(x, jnp.int32)
    return GPULocalityParams(
        submit=i32(submit),
        gpus=i32(gpus),
        ideal=i32(ideal),
        model=i32(model),
        cum_submit=i32(_wrapping_cumsum(submit)),
        cum_gpus=i32(_wrapping_cumsum(gpus)),
        cum_ideal=i32(_wrapping_cumsum(ideal)),
        starts=i32(starts),
        ends=i32(ends),
        slowdown=jnp.asarray(table, jnp.float32),
        sensitive_ratio=jnp.float32(sensitive_ratio),
        time_scale=jnp.float32(time_scale),
        max_steps=i32(max_steps),
    )


def min_servers(gpus: jax.Array, gpus_per_server: int) -> jax.Array:
    """`⌈g / M⌉`: the fewest servers a job of g GPUs can sit on."""
    return (gpus + gpus_per_server - 1) // gpus_per_server


def run_time(params: GPULocalityParams, ideal: jax.Array, model: jax.Array, level: jax.Array) -> jax.Array:
    """i32: `ceil(T_ideal · slowdown[model, level])`, the float32 product (exact for the reference)."""
    return jnp.ceil(ideal.astype(jnp.float32) * params.slowdown[model, level]).astype(jnp.int32)


def profile_times(config: GPULocalityConfig, params, ideal, gpus, model) -> jax.Array:
    """`i32[..., k]`: the job's run time at each profiled level (Table I's k profile values), the levels
    past the most scattered one a job of g GPUs can reach repeating it (a 1-GPU job: T_ideal k times)."""
    top = jnp.minimum(jnp.minimum(gpus, config.n_servers) - min_servers(gpus, config.gpus_per_server),
                      config.n_levels - 1)  # fmt: skip
    level = jnp.minimum(jnp.arange(config.n_levels), top[..., None])
    return run_time(params, ideal[..., None], model[..., None], level)
