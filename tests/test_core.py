"""Unit tests of the shared primitives: queue, resource pool, exact wide sums, spaces, heuristic scores."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.core import cluster, queue, wideint
from jaxsched.core.spaces import Box, Discrete, MultiDiscrete
from jaxsched.core.wideint import MAX_FACTOR
from jaxsched.policies.scores import SCORES, best_index, score


def test_queue_push_remove_keeps_order_and_counts_overflow():
    q = (jnp.full((4,), -1, jnp.int32), jnp.zeros((4,), jnp.int32))
    length = jnp.int32(0)
    for job in range(4):
        q, length, over = queue.push(q, length, (job, 10 * job))
        assert not over
    q, length, over = queue.push(q, length, (99, 990))
    assert bool(over) and int(length) == 4  # full: refused and reported
    q, length = queue.remove_at(q, length, jnp.int32(1), (-1, 0))
    np.testing.assert_array_equal(q[0], [0, 2, 3, -1])
    np.testing.assert_array_equal(q[1], [0, 20, 30, 0])
    assert int(length) == 3
    q2, length2 = queue.remove_at(q, length, jnp.int32(0), (-1, 0), enabled=False)
    np.testing.assert_array_equal(q2[0], q[0])
    assert int(length2) == 3


@pytest.mark.parametrize(
    "length,head,tail,expected",
    [
        (0, 2, 2, [None, None, None, None]),
        (1, 2, 2, [0, None, None, None]),
        (3, 2, 2, [0, 1, 2, None]),  # tail never repeats what the head shows
        (10, 2, 2, [0, 1, 9, 8]),  # newest first in the tail
        (10, 0, 3, [9, 8, 7]),
        (2, 3, 0, [0, 1, None]),
    ],
)
def test_split_window_positions(length, head, tail, expected):
    pos, present = queue.split_window(jnp.int32(length), head, tail)
    got = [int(p) if bool(v) else None for p, v in zip(pos, present, strict=True)]
    assert got == expected


def test_cluster_allocate_release_and_shadow():
    end = jnp.array([0, 50, 0, 30, 0], jnp.int32)
    t = jnp.int32(10)
    assert int(cluster.num_free(end, t)) == 3
    end2, taken = cluster.allocate(end, t, jnp.int32(2), jnp.int32(100))
    np.testing.assert_array_equal(taken, [True, False, True, False, False])  # lowest free first
    np.testing.assert_array_equal(end2, [100, 50, 100, 30, 0])
    assert int(cluster.next_release(end2, t)) == 30
    assert int(cluster.next_release(jnp.zeros(3, jnp.int32), t)) == int(cluster.NEVER)
    np.testing.assert_array_equal(cluster.time_left(end2, end2, t), [90, 40, 90, 20, 0])
    # requested ends differ from actual ones: a unit freed early shows 0, an overrunning one 1 s
    np.testing.assert_array_equal(
        cluster.time_left(end2, jnp.array([5, 60, 200, 9, 50]), t), [1, 50, 190, 1, 0]
    )
    # 1 free now; 2 at t=30; 3 at t=50; 5 at t=100
    for n, want in [(1, 10), (2, 30), (3, 50), (4, 100), (5, 100)]:
        assert int(cluster.earliest_start(end2, t, jnp.int32(n))) == want
    end3, _, owner = cluster.allocate(end, t, jnp.int32(1), jnp.int32(7), True, (jnp.zeros(5, jnp.int32), 42))
    np.testing.assert_array_equal(owner, [42, 0, 0, 0, 0])


@pytest.mark.parametrize("n", [1, 31, 32, 33, 256, 300])
def test_prefix_count_is_the_cumsum(n):
    rng = np.random.default_rng(n)
    for p in (0.0, 0.3, 1.0):
        mask = rng.random(n) < p
        np.testing.assert_array_equal(cluster.prefix_count(jnp.asarray(mask)), np.cumsum(mask))


def test_spaces_sample_respects_mask_and_contains():
    d = Discrete(5)
    mask = jnp.array([False, True, False, False, True])
    draws = jax.vmap(lambda k: d.sample(k, mask))(jax.random.split(jax.random.key(0), 200))
    assert set(np.unique(draws).tolist()) == {1, 4}
    assert bool(d.contains(jnp.int32(4))) and not bool(d.contains(jnp.int32(5)))
    assert not bool(d.contains(jnp.int32(0), mask))
    md = MultiDiscrete((2, 3))
    x = md.sample(jax.random.key(1))
    assert bool(md.contains(x)) and not bool(md.contains(jnp.array([2, 0])))
    box = Box(0.0, 1.0, (3,))
    assert bool(box.contains(box.sample(jax.random.key(2))))
    assert not bool(box.contains(jnp.array([0.0, jnp.nan, 0.5])))
    assert not bool(box.contains(jnp.zeros(4)))


@pytest.mark.parametrize("name", SCORES)
def test_scores_float32_match_float64_reference_order(name):
    rng = np.random.default_rng(3)
    submit = rng.integers(0, 100_000, 64)
    cores = rng.integers(1, 256, 64)
    req = rng.integers(1, 50_000, 64)
    wait = rng.integers(0, 10_000, 64)
    ref = score(name, submit, cores, req, wait, xp=np)
    got = np.asarray(score(name, submit, cores, req, wait))
    assert ref.dtype == np.float64
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    valid = rng.random(64) < 0.7
    i = int(best_index(jnp.asarray(ref), jnp.asarray(submit), jnp.asarray(valid)))
    j = int(best_index(ref, submit, valid, xp=np))
    assert i == j and valid[i]


def test_best_index_ties_by_submit_then_position_and_none_valid():
    scores = jnp.array([1.0, 0.0, 0.0, 0.0])
    submit = jnp.array([0, 5, 3, 3])
    assert int(best_index(scores, submit, jnp.array([True, True, True, True]))) == 2
    assert int(best_index(scores, submit, jnp.zeros(4, bool))) == -1


def test_unknown_score_names_the_choices():
    with pytest.raises(ValueError, match="unknown heuristic score 'nope'"):
        score("nope", 0, 1, 1, 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**31 - 1), st.integers(0, MAX_FACTOR - 1), st.booleans()),
        max_size=40,
    )
)
def test_wideint_sums_are_python_integers(ops):
    """A running sum of `+ v·k` and `- v` (kept non-negative) equals Python's exact integer, limbs stay
    normalised, and the float32 view is within one unit in the last place."""
    value, exact = wideint.zeros(), 0
    for v, k, subtract in ops:
        if subtract and v <= exact:
            value, exact = wideint.sub(value, wideint.from_int(jnp.int32(v))), exact - v
        elif exact + v * k < 2 ** (wideint.BITS * wideint.LIMBS):
            value, exact = wideint.add(value, wideint.scale(jnp.int32(v), jnp.int32(k))), exact + v * k
        limbs = np.asarray(value).tolist()
        assert sum(x << (wideint.BITS * i) for i, x in enumerate(limbs)) == exact
        assert all(0 <= x <= wideint.MASK for x in limbs)
        f = float(wideint.to_float(value))
        assert abs(f - exact) <= np.spacing(np.float32(exact)), (f, exact)
