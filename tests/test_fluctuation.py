"""The GPU-cloud fluctuation φ (`gpu_contention.fluctuation`, docs/gpu_cloud.md "Contention model") checked
from outside: its distribution against the exact Irwin–Hall law (float64 numpy, piecewise polynomials, not
the same hash), independence across machines, updates and seeds, determinism, and agreement with the
reference simulator's own float64 draw (`tests/reference/gpu_cloud.py::fluctuation`).

One jitted call draws 2^20 values (256 consecutive seeds × 512 updates × 8 machines) per std. Every
statistical bound is 5 standard errors of its estimator under the exact law (the errors are computed from
the law's own moments), so a correct draw fails a given check with probability ~6e-7; the seeds are fixed,
so the outcome never changes between runs.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.gpu_cloud import fluctuation as ref_fluctuation

from jaxsched.envs.gpu_cloud.contention import fluctuation

SEEDS, UPDATES, M = 256, 512, 8
N = SEEDS * UPDATES * M  # 2^20 draws
N_SIGMA = 5.0
SQRT3 = math.sqrt(3.0)
Z_MAX = 2.0 * SQRT3  # the support of z: |Σ u − 2| ≤ 2
# 0.125 · 2√3 = 0.433 < 0.5: never clipped, so z = (φ − 1) / 0.125 (a power of 2: exact up to φ's rounding)
STD_SMALL = 0.125
STD_LARGE = 0.5  # clipped where |z| > 1, about a third of the draws


# ---- the exact law: S = Σ of 4 uniforms (Irwin–Hall, n = 4), z = (S − 2)·√3 ---------------------------
def ih_cdf(s):
    """P(S ≤ s) = (1/4!) Σ_k (−1)^k C(4, k) max(s − k, 0)^4."""
    s = np.asarray(s, np.float64)
    return sum((-1) ** k * math.comb(4, k) * np.maximum(s - k, 0.0) ** 4 for k in range(5)) / 24.0


def ih_pdf(s):
    """The density, (1/3!) Σ_k (−1)^k C(4, k) max(s − k, 0)^3 on [0, 4]: a cubic on each [k, k + 1]."""
    s = np.asarray(s, np.float64)
    return sum((-1) ** k * math.comb(4, k) * np.maximum(s - k, 0.0) ** 3 for k in range(5)) / 6.0


GL_X, GL_W = np.polynomial.legendre.leggauss(16)


def ih_integral(g, lo: float, hi: float) -> float:
    """∫_lo^hi g(s)·f(s) ds, exact (to rounding) for a polynomial g of degree ≤ 28: 16-point Gauss–Legendre
    on each piece where the density is one cubic."""
    lo, hi = max(lo, 0.0), min(hi, 4.0)
    if hi <= lo:
        return 0.0
    cuts = [lo, *[k for k in (1.0, 2.0, 3.0) if lo < k < hi], hi]
    total = 0.0
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        x = 0.5 * (a + b) + 0.5 * (b - a) * GL_X
        total += 0.5 * (b - a) * float(np.sum(GL_W * g(x) * ih_pdf(x)))
    return total


def z_moment(p: int) -> float:
    """E[z^p]."""
    return ih_integral(lambda s: ((s - 2.0) * SQRT3) ** p, 0.0, 4.0)


def phi_expect(h, std: float) -> float:
    """E[h(φ)] for φ = clip(1 + std·z, 0.5, 1.5) and a polynomial h: the two clipped masses plus the integral
    over the unclipped range S ∈ [2 − 0.5/(std√3), 2 + 0.5/(std√3)]."""
    half = 0.5 / (std * SQRT3)
    a, b = 2.0 - half, 2.0 + half
    p_low, p_high = float(ih_cdf(max(a, 0.0))), 1.0 - float(ih_cdf(min(b, 4.0)))
    inner = ih_integral(lambda s: h(1.0 + std * SQRT3 * (s - 2.0)), a, b)
    return h(0.5) * p_low + h(1.5) * p_high + inner


def mean_and_var_bounds(std: float):
    """Exact mean and variance of φ and 5-σ tolerances for the sample mean (√(Var/N)) and the sample
    variance (√((μ4 − Var²)/N), μ4 the 4th central moment)."""
    mean = phi_expect(lambda x: x, std)
    var = phi_expect(lambda x: (x - mean) ** 2, std)
    mu4 = phi_expect(lambda x: (x - mean) ** 4, std)
    return mean, var, N_SIGMA * math.sqrt(var / N), N_SIGMA * math.sqrt((mu4 - var**2) / N)


# ---- the draws --------------------------------------------------------------------------------------------
@jax.jit
def draw_grid(seeds, std):
    """φ `f32[S, K, M]` for every seed and update 0..K−1."""
    per_seed = lambda s: jax.vmap(lambda k: fluctuation(s, k, M, std))(jnp.arange(UPDATES))  # noqa: E731
    return jax.vmap(per_seed)(seeds)


SEED_VALUES = np.arange(SEEDS, dtype=np.uint32)  # consecutive seeds: the hardest inputs for a mixer


@pytest.fixture(scope="module")
def phi_small():
    return np.asarray(draw_grid(jnp.asarray(SEED_VALUES), jnp.float32(STD_SMALL)), np.float64)


@pytest.fixture(scope="module")
def z(phi_small):
    return (phi_small - 1.0) / STD_SMALL


@pytest.fixture(scope="module")
def phi_large():
    return np.asarray(draw_grid(jnp.asarray(SEED_VALUES), jnp.float32(STD_LARGE)), np.float64)


# ---- tests ------------------------------------------------------------------------------------------------
def test_exact_law_is_right():
    """The float64 law the other tests compare with: mass 1, mean 2, variance 4/12 of S; E z^4 = 3 − 6/(5·4)
    (Irwin–Hall's excess kurtosis −6/(5n)); the CDF is the density's integral; no clipping at std 0.125."""
    assert ih_integral(lambda s: 1.0 + 0 * s, 0, 4) == pytest.approx(1.0, abs=1e-13)
    assert ih_integral(lambda s: s, 0, 4) == pytest.approx(2.0, abs=1e-13)
    assert z_moment(2) == pytest.approx(1.0, abs=1e-13)
    assert z_moment(4) == pytest.approx(2.7, abs=1e-12)
    assert ih_cdf(2.0) == pytest.approx(0.5, abs=1e-15) and ih_cdf(4.0) == pytest.approx(1.0, abs=1e-15)
    for s in (0.3, 1.0, 1.7, 2.5, 3.9):
        assert ih_cdf(s) == pytest.approx(ih_integral(lambda x: 1.0 + 0 * x, 0, s), abs=1e-13)
    assert phi_expect(lambda x: x, STD_SMALL) == pytest.approx(1.0, abs=1e-13)
    assert phi_expect(lambda x: (x - 1) ** 2, STD_SMALL) == pytest.approx(STD_SMALL**2, abs=1e-13)


def test_unclipped_moments(phi_small, z):
    """std 0.125 (no clipping possible): φ's mean is 1 and its std is `std`; z has support |z| ≤ 2√3, zero
    skew and E z^4 = 2.7 (4 uniforms: 3 give 2.6, a normal 3), each within 5 standard errors; the extreme
    values come close to the support's ends."""
    assert np.abs(z).max() <= Z_MAX + 1e-5
    # the tails are reached: P(|z| > 3.2) = 2·F(2 − 3.2/√3) = 4.5e-5, so ~47 expected beyond 3.2
    assert np.abs(z).max() > 3.2
    mean, var, tol_mean, tol_var = mean_and_var_bounds(STD_SMALL)
    assert mean == pytest.approx(1.0) and var == pytest.approx(STD_SMALL**2)
    assert abs(phi_small.mean() - mean) <= tol_mean, phi_small.mean()
    assert abs(phi_small.var() - var) <= tol_var, math.sqrt(phi_small.var())
    # E z^3 = 0 with sd √(E z^6 / N); E z^4 with sd √((E z^8 − (E z^4)^2) / N)
    assert abs((z**3).mean()) <= N_SIGMA * math.sqrt(z_moment(6) / N), (z**3).mean()
    m4 = z_moment(4)
    assert abs((z**4).mean() - m4) <= N_SIGMA * math.sqrt((z_moment(8) - m4**2) / N), (z**4).mean()


def test_quantiles_match_irwin_hall(z):
    """Kolmogorov–Smirnov: sup |F_N − F| over the 2^20 z against the exact Irwin–Hall(4) CDF. Under the
    law P(√N·D > c) ≈ 2·exp(−2c²), 9e-7 at c = 2.7. A wrong number of uniforms or a wrong scale moves the
    CDF by ≥ 1e-2 somewhere."""
    zs = np.sort(z.ravel())
    f = ih_cdf(zs / SQRT3 + 2.0)
    i = np.arange(1, N + 1)
    d = max((i / N - f).max(), (f - (i - 1) / N).max())
    assert d <= 2.7 / math.sqrt(N), d


def test_clipped_law(phi_large):
    """std 0.5: φ is within [0.5, 1.5]; the fractions clipped at 0.5 and at 1.5 are P(|z| > 1) / 2 each
    (exact: F(2 − 1/√3), binomial standard error) and φ's mean and variance match the exact clipped law."""
    assert phi_large.min() == 0.5 and phi_large.max() == 1.5
    p = float(ih_cdf(2.0 - 1.0 / (2 * STD_LARGE * SQRT3)))
    tol_p = N_SIGMA * math.sqrt(p * (1 - p) / N)
    assert abs((phi_large == 0.5).mean() - p) <= tol_p, ((phi_large == 0.5).mean(), p)
    assert abs((phi_large == 1.5).mean() - p) <= tol_p, ((phi_large == 1.5).mean(), p)
    mean, var, tol_mean, tol_var = mean_and_var_bounds(STD_LARGE)
    assert abs(phi_large.mean() - mean) <= tol_mean, (phi_large.mean(), mean)
    assert abs(phi_large.var() - var) <= tol_var, (phi_large.var(), var)


def corr(a, b) -> float:
    a, b = a.ravel() - a.mean(), b.ravel() - b.mean()
    return float(a @ b / math.sqrt((a @ a) * (b @ b)))


def test_independent_across_machines_updates_and_seeds(z):
    """Correlations near 0: every pair of machines (n = S·K pairs each), consecutive updates and
    consecutive seeds (pooled). Under independence a correlation's standard error is 1/√n (the pooled
    lag-1 products are pairwise uncorrelated); the bound is 5/√n."""
    for m1 in range(M):
        for m2 in range(m1 + 1, M):
            r = corr(z[:, :, m1], z[:, :, m2])
            assert abs(r) <= N_SIGMA / math.sqrt(SEEDS * UPDATES), (m1, m2, r)
    r = corr(z[:, :-1], z[:, 1:])
    assert abs(r) <= N_SIGMA / math.sqrt(SEEDS * (UPDATES - 1) * M), ("updates", r)
    r = corr(z[:-1], z[1:])
    assert abs(r) <= N_SIGMA / math.sqrt((SEEDS - 1) * UPDATES * M), ("seeds", r)


def test_deterministic_and_distinct(phi_small):
    """Same (seed, update) ⇒ the same φ (a second batched call, and single unbatched calls); no two
    (seed, update) pairs of the grid share their φ vector."""
    again = np.asarray(draw_grid(jnp.asarray(SEED_VALUES), jnp.float32(STD_SMALL)), np.float64)
    np.testing.assert_array_equal(again, phi_small)
    for s, k in ((0, 0), (7, 1), (255, 511), (3, 100)):
        one = np.asarray(fluctuation(jnp.uint32(s), jnp.int32(k), M, jnp.float32(STD_SMALL)), np.float64)
        np.testing.assert_allclose(one, phi_small[s, k], rtol=0, atol=1e-6)
    rows = phi_small.reshape(-1, M)
    assert len(np.unique(rows, axis=0)) == len(rows)


def test_matches_the_reference_draw(phi_large):
    """The JAX draw equals the reference's float64 draw from the spec (the hash in uint64 arithmetic masked
    to 32 bits) to f32 rounding: on a sample of the grid at std 0.5 (clipped values included), and at
    seeds and updates where the uint32 counter wraps around."""
    rng = np.random.default_rng(0)
    for s, k in zip(rng.integers(0, SEEDS, 300), rng.integers(0, UPDATES, 300), strict=True):
        np.testing.assert_allclose(
            phi_large[s, k], ref_fluctuation(int(SEED_VALUES[s]), int(k), M, STD_LARGE), rtol=0, atol=1e-6
        )
    seeds = np.array([0, 1, 2**31, 2**32 - 1, 0xDEADBEEF], np.uint32)
    updates = np.array([2**27, 2**27 + 1, 2**30 + 12345, 2**31 - 1], np.int32)  # update·M·4 ≥ 2^32
    got = jax.vmap(lambda s: jax.vmap(lambda k: fluctuation(s, k, M, jnp.float32(STD_LARGE)))(updates))(seeds)
    want = [[ref_fluctuation(int(s), int(k), M, STD_LARGE) for k in updates] for s in seeds]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.array(want), rtol=0, atol=1e-6)
