"""Building the GPU-cloud env's params: the workload bank checked against the cluster, every knob
validated (errors name the field), and the machines' calibrated heterogeneity (`heterogeneous_perf`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.envs.gpu_cloud.types import GPUCloudParams
from jaxsched.workloads.ddl import (
    FLUCT_STD,
    MODEL_COMM,
    MODEL_NAMES,
    V100_MACHINE,
    DDLWorkload,
    validate_ddl_workload,
)

ARRIVAL_BLOCK = 8  # arrivals one forward-loop iteration may admit (the bank is padded by as many rows)
REWARDS = ("eq3", "jct")  # the paper's Eq. 3, or minus the job-minutes accrued (docs/gpu_cloud.md)


def make_gpu_cloud_params(
    n_machines: int,
    bank: DDLWorkload,
    starts=None,
    *,
    episode_jobs: int = 1000,
    max_steps: int | None = None,
    machine: dict | None = None,
    perf=None,
    bw_cap=None,
    fluct_std: float | None = None,
    model_comm=None,
    kappa_net: float = 1.0,
    kappa_cpu: float = 0.5,
    kappa_spread: float = 0.1,
    price: float = 2.84,
    alpha: float = 0.1,
    jct_unit: float = 60.0,
    load_scale: float = 1.0,
    c_norm: float = 8.0,
    wait_norm: float = 3600.0,
    reward: str = "eq3",
) -> GPUCloudParams:
    """Validate `bank` against a cluster of `n_machines` identical machines (errors name the job and
    field) and build the env's params; `GPUCloudEnv.make_params` documents the arguments."""
    m = n_machines
    spec = dict(V100_MACHINE if machine is None else machine)
    gpu_cap = np.full(m, spec["gpu"], np.int32)
    cpu_cap = np.full(m, spec["cpu"], np.int32)
    mem_cap = np.full(m, spec["mem"], np.int32)
    validate_ddl_workload(bank, gpu_cap=gpu_cap, cpu_cap=cpu_cap, mem_cap=mem_cap)
    n_jobs = bank.num_jobs
    if not 1 <= episode_jobs <= n_jobs:
        raise ValueError(f"episode_jobs must be in [1, {n_jobs}] (the bank's jobs), got {episode_jobs}")
    if starts is None:
        starts = np.arange(n_jobs - episode_jobs + 1, dtype=np.int32)
    starts = np.asarray(starts, np.int32).reshape(-1)
    if starts.size == 0 or starts.min() < 0 or starts.max() + episode_jobs > n_jobs:
        raise ValueError(f"starts must lie in [0, {n_jobs - episode_jobs}] so episodes fit in the bank")
    perf = np.ones(m, np.float32) if perf is None else np.asarray(perf, np.float32)
    bw_cap = np.ones(m, np.float32) if bw_cap is None else np.asarray(bw_cap, np.float32)
    for name, arr in (("perf", perf), ("bw_cap", bw_cap)):
        if arr.shape != (m,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(f"{name} must be {m} finite positive values, got {arr}")
    comm = np.asarray(MODEL_COMM if model_comm is None else model_comm, np.float32)
    if comm.shape != (len(MODEL_NAMES),) or np.any(comm < 0) or not np.all(np.isfinite(comm)):
        raise ValueError(f"model_comm must be {len(MODEL_NAMES)} finite values >= 0, got {comm}")
    knobs = dict(
        kappa_net=kappa_net,
        kappa_cpu=kappa_cpu,
        kappa_spread=kappa_spread,
        price=price,
        alpha=alpha,
        jct_unit=jct_unit,
        load_scale=load_scale,
        c_norm=c_norm,
        wait_norm=wait_norm,
    )
    fluct_std = FLUCT_STD if fluct_std is None else fluct_std
    knobs["fluct_std"] = fluct_std
    for name, v in knobs.items():
        positive = name in ("jct_unit", "load_scale", "c_norm", "wait_norm", "price")
        if not np.isfinite(v) or v < 0 or (positive and v == 0):
            raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {v}")
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    knobs["reward_jct"] = float(reward == "jct")
    if max_steps is None:
        max_steps = 50 * episode_jobs
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    rows = np.stack([np.asarray(getattr(bank, f)) for f in ("submit", "n_inst", "gpu", "cpu", "mem")], 1)
    rows = np.concatenate([rows, np.repeat(rows[-1:], ARRIVAL_BLOCK, axis=0)]).astype(np.int32)
    return GPUCloudParams(
        bank=bank,
        rows=jnp.asarray(rows),
        starts=jnp.asarray(starts),
        episode_jobs=jnp.int32(episode_jobs),
        max_steps=jnp.int32(max_steps),
        gpu_cap=jnp.asarray(gpu_cap),
        cpu_cap=jnp.asarray(cpu_cap),
        mem_cap=jnp.asarray(mem_cap),
        bw_cap=jnp.asarray(bw_cap),
        perf=jnp.asarray(perf),
        model_comm=jnp.asarray(comm),
        **{k: f32(v) for k, v in knobs.items()},
    )


def heterogeneous_perf(key: jax.Array, n_machines: int, cv: float | None = None) -> np.ndarray:
    """Per-machine performance factors `f32[M]`: log-normal with mean 1 and coefficient of variation
    `cv` (default `PERF_CV`, calibrated from PAI's per-worker mini-batch times; see
    docs/gpu_cloud_defaults.md)."""
    from jaxsched.workloads.ddl import PERF_CV

    cv = PERF_CV if cv is None else cv
    sigma = np.sqrt(np.log1p(cv**2))
    z = np.asarray(jax.random.normal(key, (n_machines,)))
    return np.exp(sigma * z - 0.5 * sigma**2).astype(np.float32)
