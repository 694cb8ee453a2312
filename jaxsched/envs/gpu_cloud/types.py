"""The GPU-cloud env's types: its static config, its params (the workload bank and every numeric knob a
sweep may vary), its state and its action (`envs.gpu_cloud` is the simulator; `docs/gpu_cloud.md` the
specification)."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
from flax import struct

from jaxsched.core.checks import at_least
from jaxsched.workloads.ddl import DDLWorkload


@dataclass(frozen=True)
class GPUCloudConfig:
    """Static shapes: machines M, visible pending jobs N, pending-list capacity Q, running set R."""

    n_machines: int = 8
    n_slots: int = 16
    queue_capacity: int = 64
    max_running: int | None = None  # default 4 per machine (a Small cluster runs ~10-20 jobs at once)
    # Forward-loop iterations per call. None: a call always forwards to the next decision point. A number:
    # a longer forward stops there and the next call continues it without a decision (the action is
    # ignored; `obs.decision` says which calls decide). The decisions are the same either way; a cap only
    # stops the slowest env of a vmapped batch from setting the cost of every step.
    max_forward_events: int | None = None

    def __post_init__(self):
        if self.max_running is None:
            object.__setattr__(self, "max_running", 4 * self.n_machines)
        if self.max_forward_events is not None and self.max_forward_events < 1:
            raise ValueError(
                f"GPUCloudConfig.max_forward_events must be >= 1 or None, got {self.max_forward_events}"
            )
        at_least(self, "GPUCloudConfig", ("n_machines", "n_slots", "queue_capacity", "max_running"))
        if self.n_slots > self.queue_capacity:
            raise ValueError(
                f"GPUCloudConfig.queue_capacity ({self.queue_capacity}) must be >= n_slots ({self.n_slots})"
            )


@struct.dataclass
class GPUCloudParams:
    """Workload bank, cluster and every numeric knob (vmappable). Defaults: `GPUCloudEnv.make_params`."""

    bank: DDLWorkload
    rows: jnp.ndarray  # i32[J + K, 5] the bank's (submit, n_inst, gpu, cpu, mem) packed, padded by K rows:
    #                    the forward loop reads K consecutive arrivals as one contiguous slice
    starts: jnp.ndarray  # i32[S] episode start indices into the bank
    episode_jobs: jnp.ndarray  # i32 E: jobs per episode (paper App. D: 1,000)
    max_steps: jnp.ndarray  # i32 truncation guard
    gpu_cap: jnp.ndarray  # i32[M] 1/100 GPU (V100 machine: 800)
    cpu_cap: jnp.ndarray  # i32[M] 1/100 core (9600)
    mem_cap: jnp.ndarray  # i32[M] MiB (384 GiB)
    bw_cap: jnp.ndarray  # f32[M] NIC bandwidth, 1.0 = one machine's NIC
    perf: jnp.ndarray  # f32[M] performance factor (heterogeneity)
    fluct_std: jnp.ndarray  # f32 std of the per-update fluctuation φ
    model_comm: jnp.ndarray  # f32[K] communication intensity per model type
    kappa_net: jnp.ndarray  # f32 slowdown per unit of co-located network demand
    kappa_cpu: jnp.ndarray  # f32 slowdown per unit of co-located CPU share
    kappa_spread: jnp.ndarray  # f32 slowdown per extra machine, per unit of comm intensity
    price: jnp.ndarray  # f32 $ per GPU-hour (paper §5.1.3: 2.84)
    alpha: jnp.ndarray  # f32 failed-scheduling weight of Eq. 3 (App. D: 0.1)
    jct_unit: jnp.ndarray  # f32 seconds per JCT unit in Eq. 3 (60: minutes, Table 1's unit)
    load_scale: jnp.ndarray  # f32 arrival-rate multiplier (App. E: 0.5 / 1 / 2)
    c_norm: jnp.ndarray  # f32 instance-count normaliser of the job features
    wait_norm: jnp.ndarray  # f32 waiting-time normaliser (s)
    reward_jct: jnp.ndarray  # f32 1: reward = −job-minutes accrued / E (sums to −avg JCT); 0: Eq. 3


@struct.dataclass
class GPUCloudState:
    t: jnp.ndarray  # f32 time (s) since the episode's first arrival
    first: jnp.ndarray  # i32 bank index of the episode's first job
    first_submit: jnp.ndarray  # i32 its submit time (arrival times are relative to it)
    next_job: jnp.ndarray  # i32 bank index of the next arrival
    end_job: jnp.ndarray  # i32 arrivals stop here (first + E)
    q_rows: jnp.ndarray  # i32[Q, 5] pending jobs in submission order: (bank index (-1 empty), n_inst, gpu,
    #                      cpu, mem) — one packed array, so admitting and removing jobs is one scatter each
    q_len: jnp.ndarray  # i32
    view: jnp.ndarray  # i32[N] queue position shown in each slot, -1 = empty slot
    run_job: jnp.ndarray  # i32[R] bank index of each running job, -1 = free slot
    run_dem: jnp.ndarray  # i32[R, 3] its per-instance demand
    run_comm_dist: jnp.ndarray  # f32[R] its communication intensity if spread over machines, else 0
    run_net_unit: jnp.ndarray  # f32[R] comm_dist · gpu: net[r, m] = n[r, m] · this / (gpu_cap_m · bw_m)
    run_cpu_unit: jnp.ndarray  # f32[R] cpu per instance: cpu[r, m] = n[r, m] · this / cpu_cap_m
    run_spread: jnp.ndarray  # f32[R] its spreading slowdown 1 + κ_spread·comm·(k − 1)
    run_gpus: jnp.ndarray  # f32[R] its GPUs (C · gpu / 100)
    run_arrival: jnp.ndarray  # f32[R] its arrival time
    run_start: jnp.ndarray  # f32[R] start time
    run_work: jnp.ndarray  # f32[R] work left (nominal seconds) at time t
    run_speed: jnp.ndarray  # f32[R] current speed
    run_alloc: jnp.ndarray  # i32[R, M] instances on each machine (stale in free slots: mask by run_job)
    free: jnp.ndarray  # i32[M, 3] free gpu, cpu, mem
    net_load: jnp.ndarray  # f32[M] NET_m: network demand on each NIC
    noise_seed: jnp.ndarray  # u32 seeds the fluctuation draws of this episode
    n_updates: jnp.ndarray  # i32 speed updates so far
    steps: jnp.ndarray  # i32 decisions this episode
    finished: jnp.ndarray  # i32 jobs finished
    failed: jnp.ndarray  # i32 failed schedulings
    sum_jct: jnp.ndarray  # f32 Σ JCT (s) of finished jobs
    sum_fee: jnp.ndarray  # f32 Σ fee ($)
    sum_wait: jnp.ndarray  # f32 Σ (start − arrival)
    sum_duration: jnp.ndarray  # f32 Σ (finish − start)
    gpu_seconds: jnp.ndarray  # f32 Σ GPUs · duration
    last_finish: jnp.ndarray  # f32 time of the latest completion
    forwarding: jnp.ndarray  # bool: the last call's forward stopped at `max_forward_events`; the next
    #                          call continues it instead of deciding
    acc_term: jnp.ndarray  # f32 Eq. 3's numerator so far of a forward split over calls
    acc_events: jnp.ndarray  # i32 its denominator so far


@struct.dataclass
class GPUCloudAction:
    priority: jnp.ndarray  # f32[N] ordering agent: higher goes first
    affinity: jnp.ndarray  # f32[N, M] placement agent: higher machine goes first
