"""DAS networks (jaxsched.nn.das): shapes, padding, permutation equivariance, the message switch, output
ranges, jit/vmap, gradients, masked Gaussian utilities against numpy, and the critic."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.nn.das import (
    STD_FLOOR,
    CentralCritic,
    GaussianPriorityHead,
    MLPPlacementHead,
    OrderingEncoder,
    masked_normal_entropy,
    masked_normal_log_prob,
    sinusoidal_embedding,
)

N, M, E = 6, 4, 16
MASK = jnp.array([True, True, True, True, False, False])  # valid slots first, as the env shows them


def _obs(seed=0, n=N, m=M):
    k1, k2 = jax.random.split(jax.random.key(seed))
    jobs = jax.random.uniform(k1, (n, 5))
    return jnp.where(MASK[:n, None], jobs, 0.0), jax.random.uniform(k2, (m, 5))


@functools.cache
def _encoder(message=True, position=True):
    """One initialisation per configuration and worker (eager: cheaper than compiling each init)."""
    enc = OrderingEncoder(hidden=E, heads=4, message=message, position=position)
    jobs, mach = _obs()
    return enc, enc.init(jax.random.key(1), jobs, MASK, mach)


def test_sinusoidal_embedding_matches_formula():
    pe = np.asarray(sinusoidal_embedding(jnp.arange(5), 7))
    want = np.zeros((5, 7))
    for i in range(5):
        for d in range(7):
            k2 = d - d % 2
            want[i, d] = (math.sin if d % 2 == 0 else math.cos)(i / 10000 ** (k2 / 7))
    np.testing.assert_allclose(pe, want, atol=1e-6)


@pytest.mark.parametrize("message", [True, False])
@pytest.mark.parametrize("position", [True, False])
def test_shapes_and_padded_rows_zero(message, position):
    enc, params = _encoder(message=message, position=position)
    jobs, mach = _obs()
    je, me = enc.apply(params, jobs, MASK, mach)
    assert je.shape == (N, E) and me.shape == (M, E)
    assert np.all(np.asarray(je[~MASK]) == 0.0)
    hp = GaussianPriorityHead()
    mu, std = hp.apply(hp.init(jax.random.key(2), je), je)
    assert mu.shape == (N,) and std.shape == (N,)
    pp = MLPPlacementHead(hidden=8)
    mu_c, std_c = pp.apply(pp.init(jax.random.key(3), je, me), je, me)
    assert mu_c.shape == (N, M) and std_c.shape == (N,)


def test_padded_slots_do_not_influence_valid_ones():
    enc, params = _encoder()
    jobs, mach = _obs()
    je, me = enc.apply(params, jobs, MASK, mach)
    garbage = jobs.at[~MASK].set(jnp.array([[1e3, -7.0, jnp.nan, jnp.inf, 3.0]] * 2))
    je2, me2 = enc.apply(params, garbage, MASK, mach)
    np.testing.assert_array_equal(np.asarray(je), np.asarray(je2))
    np.testing.assert_array_equal(np.asarray(me), np.asarray(me2))
    # The key-padding mask, not just the input zeroing: the valid prefix alone gives the same embeddings.
    je_short, _ = enc.apply(params, jobs[:4], MASK[:4], mach)
    np.testing.assert_allclose(np.asarray(je[:4]), np.asarray(je_short), atol=1e-5)


def test_all_padded_observation_is_finite():
    enc, params = _encoder()
    jobs, mach = _obs()
    none = jnp.zeros(N, bool)
    je, _ = enc.apply(params, jobs, none, mach)
    assert np.all(np.asarray(je) == 0.0)


def test_permutation_equivariance_without_position():
    enc, params = _encoder(position=False)
    jobs, mach = _obs()
    perm = jnp.array([3, 5, 0, 2, 4, 1])  # mixes valid and padded slots
    je, _ = enc.apply(params, jobs, MASK, mach)
    je_p, _ = enc.apply(params, jobs[perm], MASK[perm], mach)
    np.testing.assert_allclose(np.asarray(je_p), np.asarray(je[perm]), atol=1e-5)


def test_position_embedding_breaks_permutation_equivariance():
    enc, params = _encoder(position=True)
    jobs, mach = _obs()
    perm = jnp.array([3, 1, 0, 2, 4, 5])  # valid slots only
    je, _ = enc.apply(params, jobs, MASK, mach)
    je_p, _ = enc.apply(params, jobs[perm], MASK[perm], mach)
    assert np.abs(np.asarray(je_p) - np.asarray(je[perm])).max() > 1e-3


@pytest.mark.parametrize("message", [True, False])
def test_message_switch_controls_machine_dependence(message):
    enc, params = _encoder(message=message)
    jobs, mach = _obs()
    je, _ = enc.apply(params, jobs, MASK, mach)
    je2, _ = enc.apply(params, jobs, MASK, mach * 3.0 + 0.5)
    diff = np.abs(np.asarray(je) - np.asarray(je2)).max()
    if message:
        assert diff > 1e-4
        assert "gate" in params["params"]
    else:
        assert diff == 0.0
        assert "gate" not in params["params"]


def test_output_ranges():
    enc, params = _encoder()
    jobs, mach = _obs()
    je, me = enc.apply(params, jobs * 10.0, MASK, mach * 10.0)
    hp, pp = GaussianPriorityHead(), MLPPlacementHead(hidden=8)
    hpp, ppp = hp.init(jax.random.key(2), je), pp.init(jax.random.key(3), je, me)
    # Push the heads' weights up so the ranges are exercised away from the small-init regime.
    hpp, ppp = jax.tree.map(lambda w: 5.0 * w, (hpp, ppp))
    for mu, std in (hp.apply(hpp, je), pp.apply(ppp, je, me)):
        mu, std = np.asarray(mu), np.asarray(std)
        assert np.all((mu > -1.0) & (mu < 1.0))
        assert np.all((std > STD_FLOOR) & (std < 1.0 + STD_FLOOR))


def test_jit_vmap_matches_loop():
    enc, params = _encoder()
    batch = [_obs(seed) for seed in range(3)]
    jobs = jnp.stack([b[0] for b in batch])
    mach = jnp.stack([b[1] for b in batch])
    masks = jnp.stack([MASK, MASK.at[3].set(False), jnp.ones(N, bool)])
    fn = jax.jit(jax.vmap(enc.apply, in_axes=(None, 0, 0, 0)))
    je, me = fn(params, jobs, masks, mach)
    assert je.shape == (3, N, E) and me.shape == (3, M, E)
    for b in range(3):
        want, _ = enc.apply(params, jobs[b], masks[b], mach[b])
        np.testing.assert_allclose(np.asarray(je[b]), np.asarray(want), atol=1e-5)


def test_gradients_finite():
    enc, eparams = _encoder()
    hp, pp = GaussianPriorityHead(), MLPPlacementHead(hidden=8)
    jobs, mach = _obs()
    je, me = enc.apply(eparams, jobs, MASK, mach)
    params = (eparams, hp.init(jax.random.key(2), je), pp.init(jax.random.key(3), je, me))
    a_j = jax.random.normal(jax.random.key(4), (N,))
    a_c = jax.random.normal(jax.random.key(5), (N, M))

    def loss(params, mask):
        je, me = enc.apply(params[0], jobs, mask, mach)
        mu_j, std_j = hp.apply(params[1], je)
        mu_c, std_c = pp.apply(params[2], je, me)
        lp = masked_normal_log_prob(mu_j, std_j, a_j, mask) + masked_normal_log_prob(mu_c, std_c, a_c, mask)
        ent = masked_normal_entropy(mu_j, std_j, mask) + masked_normal_entropy(mu_c, std_c, mask)
        return lp + 0.03 * ent

    grad_fn = jax.jit(jax.grad(loss))
    for mask in (MASK, jnp.zeros(N, bool)):
        grads = grad_fn(params, mask)
        assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree.leaves(grads))
    grads = grad_fn(params, MASK)
    assert any(np.abs(np.asarray(g)).max() > 0 for g in jax.tree.leaves(grads[0]))


def _np_normal_logpdf(x, mu, std):
    return -0.5 * ((x - mu) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)


def test_masked_log_prob_and_entropy_match_numpy():
    rng = np.random.default_rng(0)
    mask = np.array([True, False, True, True, False])
    mu, std, x = rng.normal(size=5), rng.uniform(0.1, 1.0, 5), rng.normal(size=5)
    want_lp = _np_normal_logpdf(x, mu, std)[mask].sum()
    want_h = (0.5 * np.log(2 * np.pi * np.e * std**2))[mask].sum()
    np.testing.assert_allclose(float(masked_normal_log_prob(mu, std, x, mask)), want_lp, rtol=1e-5)
    np.testing.assert_allclose(float(masked_normal_entropy(mu, std, mask)), want_h, rtol=1e-5)

    # Per-job std broadcast over machines ([N, M] affinities, std [N]).
    mu2, x2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    want_lp2 = _np_normal_logpdf(x2, mu2, std[:, None])[mask].sum()
    want_h2 = 3 * (0.5 * np.log(2 * np.pi * np.e * std**2))[mask].sum()
    np.testing.assert_allclose(float(masked_normal_log_prob(mu2, std, x2, mask)), want_lp2, rtol=1e-5)
    np.testing.assert_allclose(float(masked_normal_entropy(mu2, std, mask)), want_h2, rtol=1e-5)

    # Leading axes of the mask are batch axes: one value per observation.
    bmask = np.stack([mask, ~mask])
    lp_b = masked_normal_log_prob(np.stack([mu2, mu2]), np.stack([std, std]), np.stack([x2, x2]), bmask)
    assert lp_b.shape == (2,)
    np.testing.assert_allclose(float(lp_b[0]), want_lp2, rtol=1e-5)


def test_masked_utilities_ignore_padded_entries():
    rng = np.random.default_rng(1)
    mask = jnp.array([True, False, True, False])
    mu, std, x = rng.normal(size=(4, 3)), rng.uniform(0.1, 1.0, 4), rng.normal(size=(4, 3))
    lp, h = masked_normal_log_prob(mu, std, x, mask), masked_normal_entropy(mu, std, mask)
    bad = ~np.asarray(mask)
    mu_b, std_b, x_b = mu.copy(), std.copy(), x.copy()
    mu_b[bad], std_b[bad], x_b[bad] = np.nan, 0.0, np.inf
    assert float(masked_normal_log_prob(mu_b, std_b, x_b, mask)) == float(lp)
    assert float(masked_normal_entropy(mu_b, std_b, mask)) == float(h)
    # No valid entry: exactly zero, and gradients through the padded garbage stay finite (zero).
    none = jnp.zeros(4, bool)
    assert float(masked_normal_log_prob(mu_b, std_b, x_b, none)) == 0.0
    g = jax.grad(lambda m, s: masked_normal_log_prob(m, s, x_b, mask), argnums=(0, 1))(mu_b, std_b)
    assert all(np.all(np.isfinite(np.asarray(t))) for t in g)
    assert np.all(np.asarray(g[0])[bad] == 0.0)


def test_central_critic_scalar_and_separate_params():
    g = jax.random.uniform(jax.random.key(0), (11,))
    critic = CentralCritic(hidden=(32, 32))
    cparams = critic.init(jax.random.key(1), g)
    v = critic.apply(cparams, g)
    assert v.shape == () and np.isfinite(float(v))
    vb = jax.jit(critic.apply)(cparams, jnp.stack([g, 2 * g, 0 * g]))
    assert vb.shape == (3,)
    np.testing.assert_allclose(float(vb[0]), float(v), rtol=1e-6)
    # Own parameter tree, disjoint from the actor's: a gradient step on the critic leaves the actor as is.
    _, eparams = _encoder()
    assert set(cparams["params"]) == {"MLP_0"}
    assert not set(cparams["params"]) & set(eparams["params"])
    grad = jax.grad(lambda p: critic.apply(p, g))(cparams)
    assert jax.tree.structure(grad) == jax.tree.structure(cparams)
    assert all(np.all(np.isfinite(np.asarray(t))) for t in jax.tree.leaves(grad))
