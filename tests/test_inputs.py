"""`envs.hpc.setup.trace_split`, the guard against train/test leakage on one trace: training windows before
a split in time, test windows after it, sizes from the fraction, and a clear error for impossible inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxsched.envs.hpc.setup import trace_split


def jobs_seen(starts, ends) -> set[int]:
    """Every job index some window `[start, end)` can deliver (a difference array: O(jobs))."""
    depth = np.zeros(int(ends.max()) + 1, dtype=np.int64)
    np.add.at(depth, starts, 1)
    np.add.at(depth, ends, -1)
    return set(np.flatnonzero(np.cumsum(depth) > 0).tolist())


def test_hand_computed_windows():
    # 100 jobs, 30% test: split at 70; an episode of 10 jobs needs ceil(1.2 x 10) = 12 arrivals
    (tr_s, tr_e), (te_s, te_e) = trace_split(100, 10, 0.3)
    assert tr_s.tolist() == list(range(0, 59)) and set(tr_e.tolist()) == {70}
    assert te_s.tolist() == list(range(70, 89)) and set(te_e.tolist()) == {100}


@pytest.mark.parametrize(
    "num_jobs,episode_jobs,test_fraction",
    [(100, 10, 0.3), (1000, 10, 0.9), (1000, 50, 0.1), (10_000, 1000, 0.3), (10_000, 100, 0.8), (37, 3, 0.5)],
)
def test_train_and_test_never_share_a_job_and_follow_the_fraction(num_jobs, episode_jobs, test_fraction):
    (tr_s, tr_e), (te_s, te_e) = trace_split(num_jobs, episode_jobs, test_fraction)
    train, test = jobs_seen(tr_s, tr_e), jobs_seen(te_s, te_e)
    assert not train & test
    assert max(train) < min(test)  # split in time: every training job arrives before every test job
    # the sizes: exactly the first floor(num_jobs x (1 - test_fraction)) jobs train, with decimal exactness
    n_train = (num_jobs * round((1 - test_fraction) * 100)) // 100
    assert train == set(range(n_train)) and test == set(range(n_train, num_jobs))
    need = math.ceil(1.2 * episode_jobs)
    for s, e in ((tr_s, tr_e), (te_s, te_e)):
        assert (e - s >= need).all()  # every window holds a whole episode's arrivals
        assert s.dtype.kind == "i" and s.size > 0


def test_random_inputs_keep_the_invariants():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, k, f = int(rng.integers(20, 3000)), int(rng.integers(1, 200)), float(rng.uniform(0.01, 0.99))
        try:
            (tr_s, tr_e), (te_s, te_e) = trace_split(n, k, f)
        except ValueError:
            assert min(math.floor(n * (1 - f)), n - math.floor(n * (1 - f))) <= math.ceil(1.2 * k) + 1
            continue
        assert tr_e.max() <= te_s.min() and te_e.max() == n and tr_s.min() == 0
        assert abs(int(tr_e[0]) - n * (1 - f)) < 1


@pytest.mark.parametrize(
    "args,expect",
    [
        ((100, 10, 0.0), r"^test_fraction must be in \(0, 1\), got 0.0$"),
        ((100, 10, 1.0), r"^test_fraction must be in \(0, 1\), got 1.0$"),
        ((100, 10, -0.2), r"^test_fraction must be in \(0, 1\), got -0.2$"),
        ((100, 10, float("nan")), r"^test_fraction must be in \(0, 1\), got nan$"),
        ((100, 0, 0.3), r"^episode_jobs must be >= 1, got 0$"),
        ((100, 10, 0.3, 0.5), r"^arrivals_factor must be >= 1 .*got 0.5$"),
        # 100 jobs at 90% test: 10 training jobs, an episode needs > 12
        (
            (100, 10, 0.9),
            r"num_jobs=100 is too few for episode_jobs=10 .*the training part has 10 jobs.*> 12",
        ),
        # 100 jobs at 10% test: 10 test jobs
        (
            (100, 10, 0.1),
            r"num_jobs=100 .*test_fraction=0.1: the test part has 10 jobs, an episode needs > 12",
        ),
        # exactly `need` jobs on one side is still too few (the boundary)
        ((24, 10, 0.5), r"the training part has 12 jobs, an episode needs > 12"),
    ],
)
def test_impossible_inputs_name_the_argument(args, expect):
    with pytest.raises(ValueError, match=expect):
        trace_split(*args)


def test_smallest_possible_split():
    # 13 jobs a side is one more than the 12 arrivals an episode needs: two windows each
    (tr_s, tr_e), (te_s, te_e) = trace_split(26, 10, 0.5)
    assert (tr_s.tolist(), tr_e.tolist(), te_s.tolist(), te_e.tolist()) == (
        [0, 1],
        [13, 13],
        [13, 14],
        [26, 26],
    )
