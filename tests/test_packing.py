"""SCED²'s packing placement (`core.placement.packing_take`, `take_free_slots`) and its fragmentation
metric (`core.metrics.fragmentation`, Eq. 1): hand cases, properties, and the plain-Python reference of
`tests/reference/gpu_locality.py` on random clusters."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.gpu_locality import fragmentation as ref_fragmentation
from reference.gpu_locality import packing as ref_packing

from jaxsched.core.metrics import fragmentation
from jaxsched.core.placement import packing_servers, packing_take, take_free_slots

take = jax.jit(packing_take)


@pytest.mark.parametrize(
    "free,demand,want",
    [
        ([3, 8, 5, 2], 4, [0, 0, 4, 0]),  # fits in 8 or 5: the fewer free, 5
        ([3, 8, 5, 2], 2, [0, 0, 0, 2]),  # fits everywhere: the fullest server that still holds it
        ([3, 8, 5, 2], 10, [0, 8, 0, 2]),  # no server holds 10: the emptiest gives 8, then 2 fits in 2
        ([3, 8, 5, 2], 16, [3, 8, 5, 0]),  # 8, then 5, then 3 fits exactly in server 0
        ([4, 4], 4, [4, 0]),  # ties: the lower index
        ([2, 2, 2], 5, [2, 2, 1]),  # emptiest by index, then the best fit for the last GPU
        ([0, 8, 8], 8, [0, 8, 0]),
        ([1, 0, 7], 0, [0, 0, 0]),
    ],
)
def test_packing_by_hand(free, demand, want):
    got = np.asarray(take(jnp.array(free, jnp.int32), jnp.int32(demand)))
    np.testing.assert_array_equal(got, want)
    assert ref_packing(free, demand) == want


def test_packing_equals_the_reference_and_keeps_its_properties():
    """500 random 15 × 8 clusters and feasible demands (1–32 GPUs): the same take as the reference; it
    takes exactly the demand, never more than a server's free GPUs, and one server whenever one can hold
    the job; under `vmap` as one by one."""
    rng = np.random.default_rng(0)
    free = rng.integers(0, 9, size=(500, 15)).astype(np.int32)
    demand = np.minimum(rng.choice([1, 2, 4, 8, 16, 32], size=500), free.sum(axis=1)).astype(np.int32)
    got = np.asarray(jax.jit(jax.vmap(packing_take))(jnp.asarray(free), jnp.asarray(demand)))
    for f, d, g in zip(free, demand, got, strict=True):
        assert g.tolist() == ref_packing(f.tolist(), int(d)), (f, d)
        assert g.sum() == d and (g <= f).all() and (g >= 0).all()
        if (f >= d).any() and d > 0:
            assert (g > 0).sum() == 1
    np.testing.assert_array_equal(got[7], np.asarray(take(jnp.asarray(free[7]), jnp.asarray(demand[7]))))


def test_packing_servers_counts_the_servers_packing_uses():
    """The closed form (sorted free GPUs, prefix sums) equals the server count of the reference packing
    on 500 random clusters, for every demand from 0 to one past the free total (0 servers: infeasible)."""
    rng = np.random.default_rng(1)
    free = rng.integers(0, 9, size=(500, 15)).astype(np.int32)
    demands = jnp.arange(0, 122, dtype=jnp.int32)
    got = np.asarray(jax.jit(jax.vmap(packing_servers, in_axes=(0, None)))(jnp.asarray(free), demands))
    for f, row in zip(free, got, strict=True):
        for d in range(0, int(f.sum()) + 2):
            want = sum(x > 0 for x in ref_packing(f.tolist(), d)) if 0 < d <= f.sum() else 0
            assert row[d] == want, (f, d)


def test_take_free_slots_fills_the_lowest_idle_gpus():
    busy = jnp.array([[True, False, False, True], [False, False, False, False]])
    got = take_free_slots(busy, jnp.array([2, 1], jnp.int32))
    np.testing.assert_array_equal(np.asarray(got), [[False, True, True, False], [True, False, False, False]])
    assert not (np.asarray(got) & np.asarray(busy)).any()


def test_fragmentation_by_hand_and_against_the_reference():
    x = 100.0
    one_busy = jnp.array([x] + [0.0] * 7)
    np.testing.assert_allclose(float(fragmentation(one_busy)), 0.875, rtol=1e-6)  # 1 − 1/8
    assert float(fragmentation(jnp.full(8, 37.0))) == pytest.approx(0.0, abs=1e-6)  # all free together
    assert float(fragmentation(jnp.zeros(8))) == 0.0  # an idle server, not 0/0
    np.testing.assert_allclose(float(fragmentation(jnp.array([1.0, 3.0]))), 1 - 16 / 20, rtol=1e-6)
    rng = np.random.default_rng(1)
    servers = rng.exponential(1000.0, size=(50, 8)) * (rng.random((50, 8)) < 0.6)
    got = np.asarray(fragmentation(jnp.asarray(servers, jnp.float32)))  # [50]: one value per server
    want = [ref_fragmentation(s.tolist()) for s in servers]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert ((got >= 0) & (got < 1)).all()
