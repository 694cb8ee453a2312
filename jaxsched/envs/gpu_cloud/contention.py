"""The GPU-cloud contention model (docs/gpu_cloud.md, "Contention model"): per-machine fluctuation and
the speed of every running job from its placement and its co-located jobs' network and CPU demand.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core.hashing import lowbias32


def fluctuation(noise_seed: jax.Array, update: jax.Array, n_machines: int, std: jax.Array) -> jax.Array:
    """φ `f32[M]` of speed update number `update`: `clip(1 + std·z, 0.5, 1.5)`.

    z is approximately standard normal (Irwin–Hall: the centred, scaled sum of 4 uniforms, support ±3.46)
    from a counter-based hash of (episode seed, update, machine, draw): a speed update happens at every
    event of the forward loop, where a threefry draw per update cost a sixth of the step."""
    m = jnp.arange(n_machines, dtype=jnp.uint32)[:, None]
    draw = jnp.arange(4, dtype=jnp.uint32)[None, :]
    counter = (jnp.asarray(update, jnp.uint32) * jnp.uint32(n_machines) + m) * jnp.uint32(4) + draw
    h = lowbias32(counter ^ lowbias32(jnp.asarray(noise_seed, jnp.uint32)))
    u = (h >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)  # uniform [0, 1)
    z = (u.sum(axis=1) - 2.0) * jnp.float32(np.sqrt(3.0))
    return jnp.clip(1.0 + std * z, 0.5, 1.5)


def contention_shares(alloc, dem, comm, k_spread):
    """Per-job terms of the contention model (docs/gpu_cloud.md), fixed while a job runs:
    `(net_unit f32[R], cpu_unit f32[R], comm_dist f32[R], spread f32[R])` with
    `net[r, m] = n[r, m]·net_unit_r / (gpu_cap_m·bw_m)` and `cpu[r, m] = n[r, m]·cpu_unit_r / cpu_cap_m`.

    alloc `i32[R, M]`, dem `i32[R, 3]`, comm `f32[R]`."""
    k = (alloc > 0).sum(axis=1).astype(jnp.float32)
    comm_dist = jnp.where(k > 1, comm, 0.0)  # only jobs spread over machines use the NIC
    spread = 1.0 + k_spread * comm * jnp.maximum(k - 1.0, 0.0)
    return comm_dist * dem[:, 0].astype(jnp.float32), dem[:, 1].astype(jnp.float32), comm_dist, spread


def job_speeds(
    alloc, live, net_unit, cpu_unit, comm_dist, spread, perf, phi, gpu_cap, cpu_cap, bw_cap, k_net, k_cpu
):
    """Contention model (docs/gpu_cloud.md): `(speed f32[R], NET f32[M])` of the running jobs (`live`)
    from their allocation `i32[R, M]` and `contention_shares`: the slowest used machine's perf·φ over its
    slowdown, divided by the spreading slowdown. Multiplies only on `[R, M]` (this runs at every event;
    the per-job and per-machine factors are precomputed, and nothing `[R, M]` is carried in the state
    but the allocation)."""
    on = (alloc > 0) & live[:, None]
    n = jnp.where(on, alloc, 0).astype(jnp.float32)
    net = n * net_unit[:, None] * (1.0 / (gpu_cap * bw_cap))[None, :]
    cpu = n * cpu_unit[:, None] * (1.0 / cpu_cap.astype(jnp.float32))[None, :]
    net_total = net.sum(axis=0)
    cpu_total = cpu.sum(axis=0)
    slow = 1.0 + k_net * comm_dist[:, None] * (net_total - net) + k_cpu * (cpu_total - cpu)
    # min over used machines of perf·φ/slow = 1 / max over used machines of slow/(perf·φ)
    worst = jnp.where(on, slow * (1.0 / (perf * phi))[None, :], 0.0).max(axis=1)
    return jnp.where(live, 1.0 / (worst * spread), 1.0), net_total
