"""The state and observation pytrees of SCED²'s GPU-locality env (`envs/gpu_locality/env.py`)."""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct


@struct.dataclass
class GPULocalityState:
    t: jnp.ndarray  # i32 current time
    t0: jnp.ndarray  # i32 episode start (first submit)
    gpu_end: jnp.ndarray  # i32[N, M] end of the job on each GPU (<= t: idle)
    gpu_multi: jnp.ndarray  # bool[N, M] the GPU's last job was a multi-GPU job
    win_job: jnp.ndarray  # i32[J] bank index per window slot, arrival order, -1 empty
    win_passed: jnp.ndarray  # i32[J] forwards each window job sat through while it fit
    win_len: jnp.ndarray  # i32 jobs in the window
    behind: jnp.ndarray  # i32 bank index of the first waiting job behind the window
    next_job: jnp.ndarray  # i32 bank index of the next arrival
    end_job: jnp.ndarray  # i32 the episode's jobs are [start, end_job)
    n_jobs: jnp.ndarray  # i32 jobs in the episode
    steps: jnp.ndarray  # i32 decisions
    forwards: jnp.ndarray  # i32 valid φ decisions
    invalid: jnp.ndarray  # i32 invalid picks and masked φ
    placed: jnp.ndarray  # i32
    max_end: jnp.ndarray  # i32 latest completion of a placed job
    sum_e: jnp.ndarray  # f32 Σ E
    sum_wait: jnp.ndarray  # f32
    sum_actual: jnp.ndarray  # f32
    area_frag: jnp.ndarray  # f32 ∫ mean-server fragmentation dt
    area_busy: jnp.ndarray  # f32 ∫ busy GPUs dt
    # Table III: [multi-GPU placed, of them relaxed] × (sensitive, insensitive); waits by sensitivity
    multi: jnp.ndarray  # i32[2]
    relaxed: jnp.ndarray  # i32[2]
    reused: jnp.ndarray  # i32 multi-GPU jobs on reused best locality
    n_by_sens: jnp.ndarray  # i32[2] placed jobs per sensitivity
    wait_by_sens: jnp.ndarray  # f32[2] their Σ wait


@struct.dataclass
class GPULocalityObs:
    """What a policy sees. Learned policies read the structured `gpu`/`jobs`/`stats` (the shared-weight
    Q-network needs the server axis) or the flat `vec`; heuristics read the raw integers.

    gpu:   f32[N, M]      log1p(remaining time / time_scale) per GPU
    jobs:  f32[J, k+2]    per slot: log1p(profile / ts) × k, GPUs / M, log1p(wait / ts); 0 when empty
    stats: f32[4]         behind the window: log1p(count), mean GPUs / M, log1p(mean T_ideal / ts),
                          log1p(mean wait / ts); 0 when none
    vec:   f32[N·M + (k+2)·J + 4]
    mask:  bool[J+1]      valid picks, then φ
    raw, 0 in empty slots: present, gpus, ideal, wait, model, passed `[J]`; profile i32[J, k];
    free i32[N] idle GPUs per server; t i32
    """

    gpu: jnp.ndarray
    jobs: jnp.ndarray
    stats: jnp.ndarray
    vec: jnp.ndarray
    mask: jnp.ndarray
    present: jnp.ndarray
    gpus: jnp.ndarray
    ideal: jnp.ndarray
    wait: jnp.ndarray
    model: jnp.ndarray
    passed: jnp.ndarray
    profile: jnp.ndarray
    free: jnp.ndarray
    t: jnp.ndarray
