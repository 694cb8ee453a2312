"""`systems.das.diagnostics`: a call's sampled-vs-greedy differences by hand, and one rollout's statistics
of an untrained actor (finite; a learned half samples other orders or placements than its means, a fixed
half never does)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from test_mappo import setup  # the tiny GPU cloud and MAPPO of the MAPPO tests

from jaxsched.agents.das import DASPolicy
from jaxsched.envs.gpu_cloud.types import GPUCloudAction
from jaxsched.systems.das.diagnostics import DIAGNOSTICS, call_differences, rollout_diagnostics


class _Obs:
    job_mask = jnp.array([True, True, True, False])


def _pol(prio, aff):
    n = len(prio)
    return DASPolicy(jnp.asarray(prio, jnp.float32), jnp.ones(n), jnp.asarray(aff, jnp.float32), jnp.ones(n),
                     jnp.arange(n), jnp.ones(n, bool))  # fmt: skip


def test_call_differences_by_hand():
    aff = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    pol = _pol([3.0, 2.0, 1.0, 0.0], aff)
    same = GPUCloudAction(jnp.array([9.0, 5.0, 1.0, 99.0]), jnp.array(aff))  # the hidden slot moves only
    assert [bool(x) for x in call_differences(pol, _Obs, same)] == [False, False]
    swapped = GPUCloudAction(jnp.array([3.0, 0.5, 1.0, 0.0]), jnp.array(aff))  # slots 1 and 2 swap
    assert [bool(x) for x in call_differences(pol, _Obs, swapped)] == [True, False]
    hidden = jnp.array(aff).at[3].set(jnp.array([1.0, 0.0]))  # the hidden job's machine: not counted
    assert not bool(call_differences(pol, _Obs, GPUCloudAction(pol.prio_mu, hidden))[1])
    moved = jnp.array(aff).at[1].set(jnp.array([1.0, 0.0]))
    assert bool(call_differences(pol, _Obs, GPUCloudAction(pol.prio_mu, moved))[1])


def test_rollout_diagnostics_of_an_untrained_actor():
    out = {}
    for variant in ("das", "rifling"):
        m = setup(variant)
        runner = jax.jit(m.init)(jax.random.key(0))
        stats = jax.jit(lambda r, k, m=m: rollout_diagnostics(m, r, k))(runner, jax.random.key(1))
        out[variant] = {k: float(v) for k, v in stats.items()}
        assert set(out[variant]) == set(DIAGNOSTICS) and all(np.isfinite(list(out[variant].values())))
        assert out[variant]["adv_abs"] > 0 and out[variant]["return_std"] > 0
    das, rifling = out["das"], out["rifling"]
    assert das["prio_std"] > 0 and 0 < das["order_differs"] <= 1 and 0 < das["place_differs"] <= 1
    assert rifling["prio_std"] == 0 and rifling["order_differs"] == 0  # RIFLING orders by FIFO, fixed
    assert rifling["aff_std"] > 0
