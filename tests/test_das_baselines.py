"""The learned baselines DL² (learned ordering, FirstFit placement) and RIFLING (FIFO ordering, grouped
learned placement): k-means grouping, the fixed halves, per-group sampling and log-probabilities."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_mappo import setup

from jaxsched.agents.das import DASAgentConfig
from jaxsched.nn.das import masked_normal_log_prob
from jaxsched.nn.grouping import kmeans_groups, rifling_k
from jaxsched.policies.gpu_cloud import fifo_priority, firstfit_affinity


def test_rifling_k():
    assert [rifling_k(n) for n in (1, 2, 8, 16, 32, 64)] == [1, 1, 2, 3, 4, 6]


def test_kmeans_separates_obvious_clusters_and_ignores_padding():
    x = jnp.array([[0.0, 0.0], [10.0, 10.0], [0.1, 0.0], [9.9, 10.0], [50.0, 50.0], [0.0, 0.2]])
    mask = jnp.array([True, True, True, True, False, True])  # row 4 is padding (far away)
    groups, first = kmeans_groups(x, mask, k=2)
    g = np.asarray(groups)
    assert g[0] == g[2] == g[5] and g[1] == g[3] and g[0] != g[1]
    np.testing.assert_array_equal(np.asarray(first), [True, True, False, False, False, False])


def test_kmeans_with_fewer_valid_rows_than_groups():
    x = jnp.arange(8.0).reshape(4, 2)
    groups, first = kmeans_groups(x, jnp.array([True, False, False, False]), k=3)
    assert np.asarray(first).tolist() == [True, False, False, False]
    assert int(groups[0]) in (0, 1, 2)


def one_obs(m):
    runner = jax.jit(m.init)(jax.random.key(0))
    return runner, jax.tree.map(lambda x: x[0], runner.obs), jax.tree.map(lambda x: x[0], runner.carry)


def test_presets():
    dl2, rif = DASAgentConfig.preset("dl2"), DASAgentConfig.preset("rifling")
    assert dl2.learns_ordering and not dl2.learns_placement
    assert rif.learns_placement and not rif.learns_ordering
    with pytest.raises(ValueError, match="nothing to learn"):
        DASAgentConfig(ordering="fifo", placement="firstfit")


def test_dl2_places_first_fit_and_its_log_prob_ignores_the_affinity():
    m = setup("dl2")
    runner, obs, hist = one_obs(m)
    actor = runner.params["actor"]
    action, lp = m.act(actor, obs, hist, jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(action.affinity), np.asarray(firstfit_affinity(obs)))
    pol = m.agent.distribution(actor, obs, hist)
    want = masked_normal_log_prob(pol.prio_mu, pol.prio_std, action.priority, obs.job_mask)
    np.testing.assert_allclose(np.asarray(lp), [float(want), 0.0], rtol=1e-6)  # [ordering, placement]
    lp2, _ = m.agent.log_prob_entropy(actor, obs, hist, action.replace(affinity=action.affinity + 5.0))
    np.testing.assert_allclose(np.asarray(lp2), np.asarray(lp), rtol=1e-6)


def test_rifling_orders_fifo_and_shares_affinity_within_a_group():
    m = setup("rifling")
    runner, obs, hist = one_obs(m)
    # A view with every slot filled, so several jobs can share a group.
    obs = obs.replace(
        job_mask=jnp.ones_like(obs.job_mask),
        jobs=jnp.array([[0.1, 0.1, 0.1, 0.1, 0.0], [0.1, 0.1, 0.1, 0.1, 0.5], [1.0, 0.9, 0.9, 0.9, 0.0],
                        [1.0, 0.9, 0.9, 0.9, 0.2]]),
        arrival_rank=jnp.array([3, 1, 0, 2]),
    )  # fmt: skip
    actor = runner.params["actor"]
    action, lp = m.act(actor, obs, hist, jax.random.key(2))
    np.testing.assert_array_equal(np.asarray(action.priority), np.asarray(fifo_priority(obs)))
    pol = m.agent.distribution(actor, obs, hist)
    # N = 4 slots → k = round(√2) = 1 group: every job gets the same sampled affinity row, and the
    # log-probability counts that row once.
    np.testing.assert_array_equal(np.asarray(pol.groups), [0, 0, 0, 0])
    aff = np.asarray(action.affinity)
    np.testing.assert_array_equal(aff, np.broadcast_to(aff[0], aff.shape))
    want = masked_normal_log_prob(pol.aff_mu[:1], pol.aff_std[:1], action.affinity[:1], jnp.array([True]))
    np.testing.assert_allclose(np.asarray(lp), [0.0, float(want)], rtol=1e-6)  # [ordering, placement]
