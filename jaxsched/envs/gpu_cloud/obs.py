"""What the agents see of the GPU cloud (`envs.gpu_cloud`): the observation record and its features.

The paper's state (§4.1): per visible pending job its instances and per-instance demand, per machine its
free resources and GPU utilisation; the centralized critic sees both flattened, with a mask and four load
features. Every feature is a fraction of a capacity (or a normalised count or time), so the networks see
O(1) inputs on any cluster. The env computes the raw arrays (`GPUCloudEnv.observe`); this module turns
them into features.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

N_JOB_FEATURES = 5  # C/c_norm, cpu, gpu, mem (per instance, / machine capacity), wait/wait_norm
N_MACHINE_FEATURES = 5  # free cpu, gpu, mem, bandwidth (fractions of capacity), GPU utilisation
N_LOAD_FEATURES = 4  # global state: pending and running occupancy, jobs waiting outside, mean wait


@struct.dataclass
class GPUCloudObs:
    """What the agents see. Learned agents read `jobs`/`job_mask` (ordering), `machines` (placement) and
    `global_state` (centralized critic); heuristics read the raw integers."""

    jobs: jnp.ndarray  # f32[N, 5]
    job_mask: jnp.ndarray  # bool[N]
    machines: jnp.ndarray  # f32[M, 5]
    global_state: jnp.ndarray  # f32[G]
    n_inst: jnp.ndarray  # i32[N] instances C (0 in empty slots)
    demand: jnp.ndarray  # i32[N, 3] gpu, cpu, mem per instance
    arrival_rank: jnp.ndarray  # i32[N] index of the job within the episode (submission order)
    free: jnp.ndarray  # i32[M, 3]
    cap: jnp.ndarray  # i32[M, 3]
    t: jnp.ndarray  # f32
    decision: jnp.ndarray  # bool: the next call uses the action (False: it continues a forward)


def job_features(n_inst, demand, wait, mask, cap0, c_norm, wait_norm) -> jax.Array:
    """`f32[N, 5]` (zero rows where not `mask`): instances / `c_norm`; cpu, gpu, mem per instance as
    fractions of machine 0's capacity `cap0` (`[3]`: gpu, cpu, mem); wait (s) / `wait_norm`.
    `n_inst [N]`, `demand [N, 3]` (gpu, cpu, mem), `wait [N]`, `mask bool[N]`."""
    cap0 = cap0.astype(jnp.float32)
    jobs = jnp.concatenate(
        [
            (n_inst / c_norm)[:, None],
            demand[:, 1:2] / cap0[1],
            demand[:, 0:1] / cap0[0],
            demand[:, 2:3] / cap0[2],
            (wait / wait_norm)[:, None],
        ],
        axis=1,
    ).astype(jnp.float32)
    return jnp.where(mask[:, None], jobs, 0.0)


def machine_features(free, cap, net_load, bw_cap) -> jax.Array:
    """`f32[M, 5]`: free cpu, gpu, mem and NIC bandwidth as fractions of capacity, and GPU utilisation.
    `free`, `cap`: `i32[M, 3]` (gpu, cpu, mem); `net_load`, `bw_cap`: `[M]`."""
    frac_free = free.astype(jnp.float32) / cap.astype(jnp.float32)
    return jnp.stack(
        [
            frac_free[:, 1],
            frac_free[:, 0],
            frac_free[:, 2],
            jnp.maximum(0.0, bw_cap - net_load) / bw_cap,
            1.0 - frac_free[:, 0],
        ],
        axis=1,
    )


def load_features(q_len, running_frac, n_outside, age_waiting, queue_capacity: int, wait_norm) -> jax.Array:
    """`f32[4]`, the critic's load of the system (under the JCT reward the value depends on it): pending
    and running occupancy, jobs waiting outside the pending list (/ `queue_capacity`), and the mean wait
    of every waiting job (`age_waiting`: Σ wait (s) over them) in `wait_norm` units."""
    n_waiting = jnp.maximum(q_len + n_outside, 1).astype(jnp.float32)
    return jnp.stack(
        [
            q_len / queue_capacity,
            running_frac,
            n_outside / queue_capacity,
            age_waiting / n_waiting / wait_norm,
        ]
    ).astype(jnp.float32)


def global_state(jobs, mask, machines, load) -> jax.Array:
    """`f32[G]`, the centralized critic's input: `jobs [N, 5]`, `mask [N]`, `machines [M, 5]`, `load [4]`
    flattened (`global_state_size`)."""
    return jnp.concatenate([jobs.reshape(-1), mask.astype(jnp.float32), machines.reshape(-1), load])


def global_state_size(n_slots: int, n_machines: int) -> int:
    return n_slots * (N_JOB_FEATURES + 1) + n_machines * N_MACHINE_FEATURES + N_LOAD_FEATURES
