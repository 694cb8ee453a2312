"""Spreading the seed axis of training and evaluation over the local devices (`jax.sharding`).

Every trainer and evaluator here `vmap`s over seeds: the runner's leaves all have a leading `[S]` axis.
Placing them with `NamedSharding(Mesh(devices, ("seed",)), P("seed"))` makes `jit` partition the vmapped
program along that axis (XLA SPMD): each device runs `S / D` seeds, with no change to the per-seed math.
The env params (the workload bank) are replicated. `seed_sharding(S)` picks the largest device count
that divides `S` (or the `devices` asked for); on one device it is the single-device placement the
programs had before.

Several hosts: start each process with `jax.distributed.initialize()` (on a cluster with a scheduler
JAX reads the coordinator from the environment; otherwise pass `coordinator_address`, `num_processes`,
`process_id`), then `jax.devices()` lists every host's devices and the same code shards over them;
see docs/architecture.md ("Several devices and hosts").
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def seed_sharding(num_seeds: int, devices: int | None = None) -> jax.sharding.Sharding:
    """The placement of `[num_seeds, ...]` leaves: over `devices` devices (default: the most of the
    available ones that divide `num_seeds`), one device = `SingleDeviceSharding`."""
    available = jax.devices()
    if devices is None:
        devices = max(d for d in range(1, len(available) + 1) if num_seeds % d == 0)
    if not 1 <= devices <= len(available):
        raise ValueError(f"devices must be in 1..{len(available)} (the devices JAX sees), got {devices}")
    if num_seeds % devices:
        raise ValueError(f"num_seeds ({num_seeds}) must be a multiple of devices ({devices}) to shard seeds")
    if devices == 1:
        return jax.sharding.SingleDeviceSharding(available[0])
    return NamedSharding(Mesh(np.array(available[:devices]), ("seed",)), PartitionSpec("seed"))


def shard_seeds(tree, sharding: jax.sharding.Sharding):
    """`tree` (leaves `[S, ...]`) placed with `sharding`."""
    return jax.device_put(tree, sharding)
