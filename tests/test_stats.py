"""The exact Wilcoxon signed-rank test against hand-computed cases."""

import itertools

import numpy as np
import pytest

from jaxsched.experiments.stats import wilcoxon_signed_rank


def brute_force_p(d):
    d = np.asarray(d, float)
    d = d[d != 0]
    a = np.abs(d)
    ranks = np.array([np.mean(np.flatnonzero(np.sort(a) == v) + 1) for v in a])
    w = ranks[d > 0].sum()
    sums = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s)
        for signs in itertools.product([0, 1], repeat=len(d))
    ]
    sums = np.array(sums)
    return min(1.0, 2 * min((sums <= w + 1e-9).mean(), (sums >= w - 1e-9).mean()))


def test_all_better_is_the_smallest_p():
    # 6 pairs, every difference of one sign: p = 2 / 2^6.
    r = wilcoxon_signed_rank([1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12])
    assert r["n"] == 6 and r["w_plus"] == 0 and r["w_minus"] == 21
    assert r["p"] == pytest.approx(2 / 64)


def test_hand_case_and_zero_differences():
    # differences 1, -2, 3, 0 (dropped), 4 → ranks 1, 2, 3, 4; W+ = 8, W- = 2; P(W+ <= 2) = 3/16 → p = 6/16.
    r = wilcoxon_signed_rank([1, 0, 3, 5, 4], [0, 2, 0, 5, 0])
    assert (r["n"], r["w_plus"], r["w_minus"]) == (4, 8.0, 2.0)
    assert r["p"] == pytest.approx(6 / 16)


@pytest.mark.parametrize("seed", range(5))
def test_matches_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 4, size=10).astype(float)  # many ties and zeros
    r = wilcoxon_signed_rank(d, np.zeros_like(d))
    assert r["p"] == pytest.approx(brute_force_p(d))


def test_no_difference_and_bad_shapes():
    assert wilcoxon_signed_rank([1, 2], [1, 2])["p"] == 1.0
    with pytest.raises(ValueError, match="same size"):
        wilcoxon_signed_rank([1, 2], [1])


def test_power_bounds_and_monotone():
    from jaxsched.experiments.stats import wilcoxon_power

    rng = np.random.default_rng(0)
    noise = rng.normal(0.0, 1.0, size=32)
    # A shift of 5 noise-sds is found every time; none only at the test's size; power grows with the shift.
    assert wilcoxon_power(noise, 5.0, n_sim=200) == 1.0
    assert wilcoxon_power(noise, -5.0, n_sim=200) == 1.0
    size = wilcoxon_power(noise, 0.0, n_sim=400)
    assert size <= 0.05  # sign(mean) must match the (zero) shift's: never, so 0 here
    mid = wilcoxon_power(noise, 0.4, n_sim=400)
    assert 0.2 < mid < 0.9 and mid < wilcoxon_power(noise, 0.8, n_sim=400)
    # Five pairs cannot reach p < 0.05 (the smallest p is 2/32): power 0 whatever the shift.
    assert wilcoxon_power(noise[:5], 100.0, n_sim=50) == 0.0
    with pytest.raises(ValueError, match="alpha"):
        wilcoxon_power(noise, 1.0, alpha=1.5)


def test_claim_verdicts():
    from jaxsched.experiments.stats import claim_verdict

    lo, hi = [1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12]
    c = claim_verdict(lo, hi)
    assert c["verdict"] == "reproduced" and c["p"] == pytest.approx(2 / 64) and c["diff"] == -3.5
    assert c["relative"] == pytest.approx(21 / 42 - 1) and c["pairs"] == 6
    assert claim_verdict(hi, lo)["verdict"] == "not reproduced"
    assert claim_verdict(lo[:4], hi[:4])["verdict"] == "undecided"  # 4 pairs: p ≥ 2/16


def test_power_sharpens_only_an_undecided_verdict():
    from jaxsched.experiments.stats import verdict_with_power

    sharp = verdict_with_power({"verdict": "undecided"}, 0.93)
    assert sharp == "not reproduced (no difference at power 0.93)"
    assert verdict_with_power({"verdict": "undecided"}, 0.5) == "undecided"
    assert verdict_with_power({"verdict": "undecided"}, None) == "undecided"
    assert verdict_with_power({"verdict": "reproduced"}, 0.99) == "reproduced"


def test_a_repeated_unit_is_refused_not_counted_twice():
    # 8 test episodes; the same evaluation tiled five times (one copy per training seed of another row)
    # would give 40 "pairs" and p ≈ 2e-12 where the 8 distinct episodes can reach 2/256 at best.
    from jaxsched.experiments.stats import claim_verdict, per_unit

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=8), rng.normal(size=8) + 3.0
    assert wilcoxon_signed_rank(x, y)["p"] == pytest.approx(2 / 256)
    with pytest.raises(ValueError, match="repeat one block"):
        wilcoxon_signed_rank(np.tile(x, 5), np.tile(y, 5))
    with pytest.raises(ValueError, match="repeat one block"):
        claim_verdict(np.tile(x, 5), np.tile(y, 5))
    learned = rng.normal(size=40)  # 5 training seeds × 8 episodes, flattened, against a tiled heuristic
    with pytest.raises(ValueError, match="second sample repeat"):
        wilcoxon_signed_rank(learned, np.tile(y, 5))
    with pytest.raises(ValueError, match="1-D"):  # [seeds, episodes] must be averaged per episode first
        wilcoxon_signed_rank(np.tile(x, (5, 1)), np.tile(y, (5, 1)))
    seeds = np.stack([x, x + 0.1, x - 0.1])  # [3 seeds, 8 episodes] → one mean per episode
    np.testing.assert_allclose(per_unit(seeds), x)
    assert wilcoxon_signed_rank(per_unit(seeds), y)["n"] == 8
    # A repeated pair with no difference is dropped anyway (ties at zero carry no rank): allowed.
    assert wilcoxon_signed_rank([1.0, 1.0, 2.0], [1.0, 1.0, 3.0])["n"] == 1


def test_a_count_left_short_by_ties_says_so():
    """4 episodes, 2 of them tied: the test counts 2, and what is printed says why it is not 4."""
    from jaxsched.experiments.stats import n_tested, units_tested

    t = wilcoxon_signed_rank(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.5, 3.0, 3.0]))
    assert (t["n"], t["pairs"]) == (2, 4)
    assert units_tested(t) == "over 2 of 4 episodes (2 tied: left out)"
    assert n_tested(t) == "n = 2 of 4, 2 tied"
    untied = wilcoxon_signed_rank(np.array([1.0, 2.0]), np.array([0.0, 0.0]))
    assert units_tested(untied) == "over 2 episodes" and n_tested(untied) == "n = 2"
